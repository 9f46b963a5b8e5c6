"""Two sets of answers to the same questions, compared question by question: each metric's paired difference with
its bootstrap interval (:mod:`.stats`, as a comparison's contrasts), and how many answers changed, for better or worse.
What ``bio-mrc evaluate --baseline`` prints beside each file's official scores."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .. import registry
from ..errors import ConfigError
from ..progress import resamples_planned
from ..types import Prediction
from .multispan_official import f1_from_count_sums
from .squad_official import NO_ANSWER_THRESHOLD
from .stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, BootstrapResult, paired_bootstrap, paired_bootstrap_ratio


Columns = Mapping[str, np.ndarray]  # a task's per-question score columns
Paired = tuple[dict[str, BootstrapResult], np.ndarray]


@dataclass(frozen=True)
class PairedScores:
    """``differences``: each metric's bootstrap of new − baseline (percent points); ``changed``: the questions whose
    answer differs as the task compares answers (:meth:`~bio_mrc.registry.TaskEntry.answer_key`); ``better`` and
    ``worse``: those whose ``statistic`` (the task's main one) went up or down."""

    differences: dict[str, BootstrapResult]
    questions: int
    changed: int
    better: int
    worse: int
    statistic: str


def paired_scores(
    task: registry.TaskEntry, gold: Mapping[str, Sequence[str]], answers: Mapping[str, Any], baseline: Mapping[str, Any],
    n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED, *,
    na_probs: Mapping[str, float] | None = None, baseline_na_probs: Mapping[str, float] | None = None,
) -> PairedScores:
    """``answers`` against ``baseline`` (each ``{id: answer}`` as the task scores it; a question left out is answered
    with nothing) on every question of ``gold``: the resamples draw the same question indices for every metric.
    ``na_probs`` and ``baseline_na_probs``: each side's no-answer probabilities, if any; a question whose probability
    is above the official default threshold abstains, as in that side's official ``exact`` and ``f1``. The resamples
    join the open resample bar (:func:`bio_mrc.progress.resample_bar`; none open: nothing)."""
    ids = list(gold)
    answers, baseline = _abstaining(task, answers, na_probs), _abstaining(task, baseline, baseline_na_probs)
    new, old = _columns(task, gold, answers, ids, na_probs), _columns(task, gold, baseline, ids, baseline_na_probs)
    pair = PAIRED_DIFFERENCES.get(task.summary)
    if pair is None:
        raise ConfigError(f"task {task.name!r} is summarised by {task.summary!r}, which has no paired difference")
    differences, step = pair(task, new, old, n_resamples, seed)
    changed = sum(_key(task, _given(task, answers, qid)) != _key(task, _given(task, baseline, qid)) for qid in ids)
    return PairedScores(differences, len(ids), int(changed), int(np.sum(step > 0)), int(np.sum(step < 0)), task.statistic)


def _per_question_differences(task: registry.TaskEntry, new: Columns, old: Columns, n_resamples: int, seed: int) -> Paired:
    """A mean over questions (SQuAD's F1): each metric's paired bootstrap, and each question's step in the statistic."""
    metrics = [metric for metric in task.metrics if metric in new]
    resamples_planned(len(metrics) * n_resamples)
    differences = {metric: paired_bootstrap(new[metric], old[metric], n_resamples, seed=seed) for metric in metrics}
    return differences, np.asarray(new[task.statistic], dtype=np.float64) - np.asarray(old[task.statistic], dtype=np.float64)


def _span_count_differences(task: registry.TaskEntry, new: Columns, old: Columns, n_resamples: int, seed: int) -> Paired:
    """A ratio of summed span counts (MultiSpanQA's EM F1): each metric's bootstrap of the ratio, and each question's
    step in its own EM F1."""
    resamples_planned(len(task.data_set_metrics) * n_resamples)
    differences = {metric: paired_bootstrap_ratio(new["counts"], old["counts"], _count_f1(metric), n_resamples, seed=seed)
                   for metric in task.data_set_metrics}
    return differences, f1_from_count_sums(new["counts"]) - f1_from_count_sums(old["counts"])


# How each kind of task summary (a TaskEntry's ``summary``) pairs two answer sets' per-question columns:
# ``pair(task, new, old, n_resamples, seed) -> (differences by metric, each question's step in the main statistic)``.
PAIRED_DIFFERENCES: dict[str, Callable[[registry.TaskEntry, Columns, Columns, int, int], Paired]] = {
    registry.MEAN_OVER_QUESTIONS: _per_question_differences, registry.SUMMED_SPAN_COUNTS: _span_count_differences,
}


def _abstaining(task: registry.TaskEntry, answers: Mapping[str, Any], na_probs: Mapping[str, float] | None) -> Mapping[str, Any]:
    """``answers`` with the task's answer of nothing where ``na_probs`` abstains (above the official threshold)."""
    if na_probs is None:
        return answers
    return {qid: task.answer(Prediction(qid)) if na_probs.get(qid, -np.inf) > NO_ANSWER_THRESHOLD else answer
            for qid, answer in answers.items()}


def _given(task: registry.TaskEntry, answers: Mapping[str, Any], qid: str) -> Any:
    """A question's answer as given, or the task's answer of nothing where it has none."""
    return answers[qid] if qid in answers else task.answer(Prediction(qid))


def _key(task: registry.TaskEntry, answer: Any) -> str:
    """An answer as two answers agree by, as a comparison's cells agree: spans in another order, or a text that
    normalises alike ("Paris" and "paris"), is no change."""
    if isinstance(answer, (list, tuple)):
        answer = "\n".join(sorted(str(span).replace("\n", " ") for span in answer))
    return task.answer_key(str(answer))


def _columns(task: registry.TaskEntry, gold: Mapping[str, Sequence[str]], answers: Mapping[str, Any],
             ids: list[str], na_probs: Mapping[str, float] | None = None) -> dict[str, np.ndarray]:
    """The task's per-question columns; with ``na_probs`` (only SQuAD's scorer takes them) after its threshold."""
    given = {qid: _given(task, answers, qid) for qid in ids}
    extra = {} if na_probs is None else {"na_probs": na_probs}
    columns = registry.resolve(task.score)(task, gold, given, ids, **extra)
    return {name: np.asarray(values, dtype=np.float64) for name, values in columns.items()}


def _count_f1(metric: str):
    """The F1 of summed span counts that ``metric`` names (``em_f1``, ``pm_f1``)."""
    column = metric.removesuffix("_f1")
    return lambda sums: f1_from_count_sums(sums, column)


__all__ = ["PAIRED_DIFFERENCES", "PairedScores", "paired_scores"]
