"""Whether a model may abstain by the no-answer thresholds it holds: the one rule every answering door asks
(:class:`~bio_mrc.inference.extract.AnswerExtractor`, so ``extract``, ``serve`` and the pipeline, and ``predict``
before its first question).

A model trained on no question without an answer (its run record's ``unanswerable_questions`` is 0: SQuAD v1.1)
never learnt its no-answer score ([CLS] for span and joint, all O for BIO), so abstaining by it ranks "no answer"
by chance. Such a model abstains only by a threshold ``bio-mrc tune`` fitted for it on held-out questions, which
abstains only where that helped there; a threshold it holds from the model it continues (``train --init-from``) or
one written in by hand is refused before any work. A model whose training is unknown (no run record, one written
before the count, transformers' own QA model) keeps its thresholds as they are.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ..errors import InputWarning, ModelFormatError
from ..model_folder import checked_record
from ..model_records import RUN_FILE
from ..plurals import counted, number_form

if TYPE_CHECKING:
    from .loading import TrainedModel


class NeverAbstainsWarning(InputWarning):
    """Abstention asked of decodings with no tuned no-answer threshold: they answer every question."""


def unanswerable_questions(model_dir: str | Path) -> int | None:
    """The number of training questions without an answer, as the folder's run record gives it; None where it does not
    say (no record, an older one)."""
    record = checked_record(Path(model_dir), RUN_FILE) if str(model_dir) else None
    count = record.get("unanswerable_questions") if record is not None else None
    return count if isinstance(count, int) and not isinstance(count, bool) else None


def abstention_problem(trained: TrainedModel) -> str | None:
    """Why ``trained`` may not abstain by the no-answer thresholds it holds, in one line naming it; None when it may
    (no threshold that abstains, thresholds ``tune`` fitted for it, or training questions without an answer)."""
    abstaining = sorted(key for key, value in trained.thresholds.items() if value != math.inf)  # +inf never abstains
    tuned_on = trained.model.config.tuned_on or {}
    if not abstaining or (tuned_on and "for_model" not in tuned_on) or unanswerable_questions(trained.path) != 0:
        return None
    name = trained.name or trained.path
    held = (f"holds from the model it continues ({tuned_on['for_model']})" if "for_model" in tuned_on
            else "holds without a tuning by bio-mrc tune")
    return (f"{name} was trained on no question without an answer ({RUN_FILE}: unanswerable_questions 0), so its "
            f"no-answer score is untrained, and the no-answer threshold it {held} ({', '.join(abstaining)}) would "
            f"abstain by that score; fit one for it on held-out SQuAD 2.0 questions (bio-mrc tune --model {name} "
            "--data HELD_OUT), or remove no_answer_thresholds from its config.json to answer every question")


def check_abstention(trained: TrainedModel) -> None:
    """:func:`abstention_problem` raised as a :class:`ModelFormatError`."""
    if problem := abstention_problem(trained):
        raise ModelFormatError(problem)


def never_abstains_line(trained: TrainedModel, decodings: Sequence[str], asked: str) -> str | None:
    """Where abstention is ``asked`` of ``decodings`` (registered names) that hold no no-answer threshold, the line
    saying they answer every question (and why a threshold tuned on held-out questions is the way); else None."""
    from .answers import threshold_key

    untuned = [decoding for decoding in decodings if threshold_key(decoding) not in trained.thresholds]
    if not untuned:
        return None
    why = (" (its no-answer score is untrained: it was trained on no question without an answer)"
           if unanswerable_questions(trained.path) == 0 else "")
    return (f"{asked}, and the model has no tuned no-answer threshold for {', '.join(untuned)}, so it answers every "
            f"question{why} (bio-mrc tune fits one on held-out SQuAD 2.0 questions)")


def warn_untuned_abstention(trained: TrainedModel, decodings: Sequence[str], unanswerable: int | None, count: int | None = None,
                            name: str | None = None, limit: int | None = None) -> None:
    """Questions without an answer (``unanswerable`` of the ``count`` answered: the first ``limit`` of the data ``name``
    names, or all), answered by a decoding with no tuned no-answer threshold: every question gets an answer, which a
    :class:`NeverAbstainsWarning` says before the work, counting the questions answered alone."""
    if not unanswerable:
        return
    have = number_form(unanswerable, "has", "have")
    if limit is not None and count == limit:
        asked = f"{unanswerable} of the first {counted(count, 'question')}{f' of {name}' if name else ''} {have} no answer"
    elif name is not None:
        asked = f"{name} holds {counted(unanswerable, 'question')} without an answer"
    elif count:
        asked = f"{unanswerable} of the {counted(count, 'question')} {have} no answer"
    else:  # questions read once, not counted
        asked = f"{counted(unanswerable, 'question')} {have} no answer"
    if line := never_abstains_line(trained, decodings, asked):
        warnings.warn(line, NeverAbstainsWarning, stacklevel=3)
