"""Whether tuning questions are held out. A model's run record keeps a fingerprint of the questions it trained on
(``training_questions``, :mod:`bio_mrc.question_fingerprint`); ``bio-mrc tune`` reads it before the model loads. Settings
fitted on training questions follow the model's confidence where it learnt the answers: no-answer thresholds that abstain
too rarely, calibrators that say 0.99. A model whose record keeps no fingerprint (an older one, none, transformers' own
QA model) is tuned as it is.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Sequence

from ..errors import DataFormatError, InputWarning
from ..hub import local_folder
from ..model_folder import checked_record
from ..model_records import RUN_FILE
from ..question_fingerprint import is_readable, known_questions
from ..types import Example
from ..plurals import counted, number_form


class TrainingQuestionsError(DataFormatError):
    """At least half of the tuning questions are questions the model was trained on."""


class TrainingQuestionsWarning(InputWarning):
    """Some of the tuning questions are questions the model was trained on."""


def training_fingerprint(model: str | Path, revision: str | None = None) -> dict[str, Any] | None:
    """The fingerprint of the questions ``model`` (a folder, or a hub id at ``revision``) was trained on, its run record
    checked first; None where the record keeps none this version reads."""
    record = checked_record(local_folder(model, revision=revision), RUN_FILE)  # a crafted record: one line naming the folder
    fingerprint = record.get("training_questions") if record is not None else None
    return fingerprint if fingerprint and is_readable(fingerprint) else None


def check_held_out(model: str | Path, examples: Sequence[Example], data: str | Path,
                   revision: str | None = None) -> int | None:
    """How many of ``examples`` (the questions of ``data``) ``model`` was trained on, by its run record; None where the
    record does not say. At least half refused (:class:`TrainingQuestionsError`); fewer but some warned of once
    (:class:`TrainingQuestionsWarning`). What ``tune`` does before the model loads."""
    fingerprint = training_fingerprint(model, revision)
    if fingerprint is None:
        return None
    known, asked = known_questions(fingerprint, examples), len(examples)
    if known and 2 * known >= asked:
        raise TrainingQuestionsError(
            f"{known} of its {counted(asked, 'question')} {number_form(known, 'is a question', 'are questions')} {model} was trained "
            f"on (its {RUN_FILE} keeps their fingerprint): settings tuned on them follow the model's confidence where it learnt the answers, thresholds "
            "that abstain too rarely and calibrators near 1; tune on held-out questions, neither trained nor evaluated on",
            source=str(data))
    if known:
        warnings.warn(f"{data}: {known} of its {counted(asked, 'question')} {number_form(known, 'is a question', 'are questions')} "
                      f"{model} was trained on; the settings are tuned on {number_form(known, 'it', 'them')} too (tune on "
                      "held-out questions alone to rely on them)", TrainingQuestionsWarning, stacklevel=2)
    return known


__all__ = ["TrainingQuestionsError", "TrainingQuestionsWarning", "check_held_out", "training_fingerprint"]
