"""A predictions file scored against its questions with the task's official metrics: what ``bio-mrc evaluate`` does."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .. import registry
from ..arguments import checked_limit, limit_past_data, path_argument, task_argument
from ..data.prediction_layouts import NO_ANSWER_KEY, PredictionFile, read_prediction_file
from ..data.predictions import ScoredQuestions, load_na_probs, load_predictions
from ..data.squad import SquadFile, load_squad
from ..errors import ConfigError, argument
from ..plurals import counted, number_form
from ..progress import progress_note
from .files import check_no_answers_stream


@dataclass(frozen=True)
class Evaluation:
    """What :func:`evaluate_predictions` found: ``metrics``, the official scores (with a ``scored`` entry for a subset
    of the questions), the questions chosen (``scored``), the task and the number of questions it scored
    (``questions``), and the ids of those that the predictions (``missing``) or the no-answer probabilities
    (``missing_probs``, read from ``probs_source``) leave out; ``gold`` and ``answers``, each scored question's gold
    texts and the file's answers to them, as the scorer read them; ``na_probs``, the no-answer probabilities scored
    with them (None: none given)."""

    metrics: dict[str, Any]
    scored: ScoredQuestions
    task: registry.TaskEntry
    questions: int
    missing: list[str] = field(default_factory=list)
    missing_probs: list[str] = field(default_factory=list)
    probs_source: str | None = None
    gold: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    answers: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    na_probs: dict[str, float] | None = field(default=None, repr=False, compare=False)


def check_prediction_files(predictions: str | Path, na_probs: str | Path | None = None) -> None:
    """Neither file is ``predict``'s answers stream, which holds every decoding's lines: refused before the data is read."""
    check_no_answers_stream(predictions)
    if na_probs:
        check_no_answers_stream(na_probs, "na_probs")


def evaluate_predictions(
    data: str | Path | SquadFile, predictions: str | Path, na_probs: str | Path | None = None, *, task: Any = None,
    limit: int | None = None, only_predicted: bool = False, strict: bool = False, name: str | None = None,
    progress: bool = False,
) -> Evaluation:
    """Score the predictions file ``predictions`` (any layout ``bio-mrc evaluate`` reads) on the labelled questions
    ``data`` (a file, read whole, or what :func:`~bio_mrc.data.squad.load_squad` returned), as ``bio-mrc evaluate``
    does. ``task``: a :mod:`bio_mrc.registry` task entry or the name of an official scorer (``"squad"``,
    ``"multispan"``; None: the data's own). ``limit``: the first questions alone; ``only_predicted``: those the file
    answers; ``strict``: unknown or missing ids are errors. ``name`` names the data in messages; ``progress`` prints
    the note of a subset scored. Unknown ids are an :class:`~bio_mrc.data.predictions.UnknownIdsWarning` each."""
    def note(scored: ScoredQuestions) -> None:
        progress_note(progress, f"note: scoring {scored.described()}")

    return scored_evaluation(data, predictions, na_probs, task=task, limit=limit, only_predicted=only_predicted,
                             strict=strict, name=name, note=note)


def scored_evaluation(
    data: str | Path | SquadFile, predictions: str | Path, na_probs: str | Path | None = None, *, task: Any = None,
    limit: int | None = None, only_predicted: bool = False, strict: bool = False, name: str | None = None,
    note: Callable[[ScoredQuestions], None],
) -> Evaluation:
    """:func:`evaluate_predictions`, which ``note`` says a subset of (before it is scored) as its caller words it."""
    _check_arguments(data, predictions, na_probs, task, limit)
    check_prediction_files(predictions, na_probs)
    if not isinstance(data, SquadFile):
        data = load_squad(data, needs_gold="evaluate_predictions")
    name = name or data.source
    # scores of them all would read as the first limit's; of the valid ones where some were skipped, as the note says
    if past := limit_past_data(limit, len(data.examples), name, len(data.skipped)):
        raise ConfigError(f"{past}; scores of fewer questions than asked would not say so (give at most that many)")
    if isinstance(task, str):
        task = registry.scorer(task, data.is_v2)
    task = task or registry.task_of_data(data.format, data.is_v2)
    read = read_prediction_file(predictions)  # in its layout, told from its content
    if na_probs and read.na_probs is not None:
        raise ConfigError(f"{argument('na_probs')}: {predictions} gives a {NO_ANSWER_KEY} with its answers (Hugging Face's "
                          f"squad_v2 layout), so the probabilities would be given twice; drop {argument('na_probs', str(na_probs))}, "
                          f"or the {NO_ANSWER_KEY} of {predictions}")
    scored = scored_questions(data.examples, read.answers, name, predictions, limit, only_predicted)
    probs_given, probs_source = _no_answer_probabilities(read, na_probs, predictions, task)
    if scored.subset:
        note(scored)
    gold = registry.resolve(task.gold)(scored.examples)
    unscored = [ex.id for ex in data.examples if ex.id not in gold]
    # A task whose official script scores only complete files (MultiSpanQA): a missing question is an error here too.
    answers, missing = load_predictions(read, list(gold), multi_span=task.multi_span_answers,
                                        strict=task.strict_predictions(strict), unscored=unscored, data=name)
    probs, missing_probs = (load_na_probs(probs_given, list(gold), strict=strict, unscored=unscored, data=name)
                            if probs_given is not None else (None, []))
    metrics = {**registry.resolve(task.official)(task, gold, answers, probs), **scored.record}
    return Evaluation(metrics, scored, task, len(gold), missing, missing_probs, probs_source, dict(gold), answers, probs)


def _check_arguments(data: Any, predictions: Any, na_probs: Any, task: Any, limit: Any) -> None:
    """Before any file is read: each argument of :func:`evaluate_predictions` of a type it takes."""
    call = "evaluate_predictions"
    if not isinstance(data, SquadFile):
        path_argument(data, "data", call)
    path_argument(predictions, "predictions", call)
    path_argument(na_probs, "na_probs", call, optional=True)
    task_argument(task, call)
    checked_limit(limit)


def _no_answer_probabilities(read: PredictionFile, na_probs: str | Path | None, predictions: str | Path, task):
    """``(what to read no-answer probabilities from, its name)``: ``na_probs``, else the predictions file ``read``
    where its records give them, else ``(None, None)``. Probabilities the task's scorer takes none of are refused, as
    read and then ignored they would look used."""
    given = na_probs or (read if read.na_probs is not None else None)
    if given is None:
        return None, None
    source = str(na_probs) if na_probs else f"the {NO_ANSWER_KEY} of {predictions}"
    if problem := task.no_answer_probabilities_problem():
        raise ConfigError(f"{argument('na_probs')}: {problem} (in {na_probs})" if na_probs else f"{source}: {problem}")
    return given, source


def scored_questions(examples, answered, data: str, predictions: str | Path, limit: int | None = None,
                     only_predicted: bool = False) -> ScoredQuestions:
    """The questions an evaluation scores: all of ``examples`` (the first ``limit`` of them), or with ``only_predicted``
    those ``answered`` (the predictions file's ``{id: answer}``) answers. A subset is described for the metrics'
    ``scored`` entry."""
    examples = examples[:limit] if limit else examples
    chosen = {"limit": limit} if limit else {}
    if not only_predicted:
        subset = f"the first {counted(len(examples), 'question')} of {data}" if limit else None
        return ScoredQuestions(list(examples), len(examples), subset, chosen)
    kept = [ex for ex in examples if ex.id in answered]
    if not kept:
        raise ConfigError(f"{argument('only_predicted', True)}: no question of {data} has an answer in {predictions}")
    among = f"the first {len(examples)}" if limit else str(len(examples))
    subset = f"the {len(kept)} of {among} {number_form(len(examples), 'question')} of {data} that {predictions} answers"
    return ScoredQuestions(kept, len(examples), subset, {**chosen, "only_predicted": True})


__all__ = ["Evaluation", "check_prediction_files", "evaluate_predictions", "scored_questions"]
