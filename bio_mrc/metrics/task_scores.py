"""The official scorers in the shape every task's registry entry names them (:class:`bio_mrc.registry.TaskEntry`):
per-question columns, the metrics of those columns, what ``bio-mrc evaluate`` prints, whether an answer is right.
``answers`` maps each question id to its answer as the task scores it (one text, or a list of span texts)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..registry import resolve
from ..types import Example, Prediction
from .multispan_official import METRIC_NAMES, kept_question_counts, metrics_from_counts, multispan_metrics
from .squad_official import per_question_scores, squad_metrics

CORRECT_F1 = 50.0  # an answer is right when its official F1 is above this (percent)
# An F1 of exactly one half can compute as 50.000000000000014 (P 4/5, R 4/11); a true F1 above it exceeds it by
# 100 / (2 * tokens) or more, so this margin tells the two apart for any answer shorter than 10^10 tokens.
_F1_ROUNDING = 1e-9


def squad_question_scores(task: Any, gold: Mapping[str, Sequence[str]], answers: Mapping[str, str], ids: Sequence[str],
                          na_probs: Mapping[str, float] | None = None) -> dict[str, np.ndarray]:
    """Official SQuAD exact match and F1 (0..100) of every question, by the task's SQuAD rules (``squad_rules``); with no-answer
    probabilities, v2.0's after its default threshold, whose means are :func:`squad_official`'s ``exact`` and ``f1``."""
    if na_probs is None:
        em, f1 = per_question_scores(gold, answers, ids, task.squad_rules)
    else:
        em, f1 = per_question_scores(gold, answers, ids, "2.0", na_probs)
    return {"em": em, "f1": f1}


def column_means(task: Any, columns: Mapping[str, np.ndarray]) -> dict[str, float]:
    """Each of the task's metrics as the mean of its per-question column."""
    return {metric: float(np.asarray(columns[metric]).mean()) for metric in task.metrics}


def span_count_scores(task: Any, gold: Mapping[str, Sequence[str]], answers: Mapping[str, Sequence[str]], ids: Sequence[str]) -> dict[str, np.ndarray]:
    """Each question's share of MultiSpanQA's micro-averaged sums (``counts``, one row per question)."""
    return {"counts": np.array([list(kept_question_counts(gold[qid], answers[qid], qid)) for qid in ids])}


def span_count_metrics(task: Any, columns: Mapping[str, np.ndarray]) -> dict[str, float]:
    """MultiSpanQA's six metrics from the count sums, taken in question order (as its script)."""
    counts = np.asarray(columns["counts"])
    sums = [sum(column) for column in counts.T.tolist()] if len(counts) else [0.0] * 5
    metrics = metrics_from_counts(sums)
    return {metric: metrics[metric] for metric in METRIC_NAMES}


def squad_official(task: Any, gold: Mapping[str, Sequence[str]], answers: Mapping[str, str], na_probs: Mapping[str, float] | None) -> dict[str, float]:
    """The official SQuAD script's numbers; with no-answer probabilities, v2.0's (``best_exact``, ``best_f1``)."""
    if na_probs is not None:
        return squad_metrics(gold, answers, "2.0", na_probs, missing_as_wrong=True)
    return squad_metrics(gold, answers, task.squad_rules, missing_as_wrong=True)


def multispan_official(task: Any, gold: Mapping[str, Sequence[str]], answers: Mapping[str, Sequence[str]], na_probs: Any = None) -> dict[str, float]:
    """The official MultiSpanQA script's six metrics (every question answered)."""
    return multispan_metrics(gold, answers)


def aggregated_official(task: Any, gold: Mapping[str, Sequence[str]], answers: Mapping[str, Any], na_probs: Any = None) -> dict[str, float]:
    """A task's metrics (``aggregate``) of its per-question columns (``score``) over every gold question; a question
    without an answer is scored as answered with nothing."""
    ids = list(gold)
    given = {qid: answers[qid] if qid in answers else task.answer(Prediction(qid)) for qid in ids}
    columns = {name: np.asarray(values) for name, values in resolve(task.score)(task, gold, given, ids).items()}
    return task.metrics_of(columns)


def abstain_f1(task: Any, examples: Sequence[Example]) -> np.ndarray:
    """Each question's official F1 (0..100) when the answer is ``""``: 100 on an unanswerable question, and on an
    answerable one whose every listed text normalises to nothing (``"."``, ``"the"``), which the official script
    scores against ``""``; 0 elsewhere."""
    ids = [ex.id for ex in examples]
    gold = {ex.id: [" ".join(texts) for texts in ex.answer_texts()] for ex in examples}  # as data.squad.gold_texts
    return per_question_scores(gold, dict.fromkeys(ids, ""), ids, task.squad_rules)[1]


def squad_right(task: Any, predictions: Sequence[Any], gold: Mapping[str, Sequence[str]]) -> np.ndarray:
    """1 where the answer given (the best span, or "" when abstaining) has official F1 above ``CORRECT_F1``, else 0:
    an abstention is right on an unanswerable SQuAD 2.0 question."""
    ids = [p.id for p in predictions]
    return (per_question_scores(gold, {p.id: p.answer for p in predictions}, ids, task.squad_rules)[1] > CORRECT_F1 + _F1_ROUNDING).astype(np.float64)
