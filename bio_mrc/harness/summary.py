"""A comparison's numbers, before any rendering: each cell's scores over its seeds, the baseline and the
named contrasts with Holm-adjusted p-values, every pair of cells, each cell's interval, the breakdowns by
question group, and (where they apply) selective QA, the learning curve and "always abstain" on SQuAD 2.0.
:mod:`bio_mrc.harness.report` renders them."""

from __future__ import annotations

import itertools
from typing import Any, Sequence

import numpy as np

from .. import registry
from ..metrics.multispan_official import METRIC_NAMES, f1_from_count_sums, metrics_from_counts
from ..metrics.squad_official import normalize_answer
from ..types import Example
from .config import resolve_contrasts
from .learning_curve import learning_curve
from .data_sets import data_set_summaries
from .results import Cell, ComparisonResults
from .selective_section import selective_summary
from .groups import breakdown, length_bins, question_word
from .stats import (
    BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, agreement, holm, mean_sd, paired_bootstrap, paired_bootstrap_ratio, resampling, score_interval,
    two_level_bootstrap,
)

ANSWER_LENGTH_EDGES = (1, 2, 3, 5, 9, 17)
CONTEXT_LENGTH_EDGES = (1, 100, 150, 200, 300)
FAMILY_ALPHA = 0.05  # the family-wise error rate of the contrasts (Holm)
MIXED_RESAMPLING = "per contrast"  # cells were trained with different seeds: each contrast says how it paired
SEED_MEANS = "questions (seed means)"  # two cells with no seed in common: each cell's mean over its own seeds


def summarise(results: ComparisonResults, answer_tokens: np.ndarray | None, context_tokens: np.ndarray | None) -> dict[str, Any]:
    """Aggregate seeds per (run, decoding); the contrasts the config names, every pair of cells, each
    cell's interval, and the breakdowns where the task has question groups: the evaluation task's ``summary``."""
    grouped: dict[str, list[Cell]] = {}
    for cell in results.cells:
        grouped.setdefault(cell.label, []).append(cell)
    task = registry.task(results.eval["task"])
    return SUMMARIES[task.summary](results, grouped, task, answer_tokens, context_tokens)


def span_count_summary(
    results: ComparisonResults, grouped: dict[str, list[Cell]], task: registry.TaskEntry, answer_tokens: Any, context_tokens: Any,
) -> dict[str, Any]:
    """A task scored by summed span counts (MultiSpanQA): rows of its metrics, the contrasts of the ratio of the
    summed counts (its main statistic), and each data set of the evaluation alone."""
    answers = {label: cells[0].answers for label, cells in grouped.items()}
    rows = [_multispan_row(label, cells) for label, cells in grouped.items()]
    counts = {label: np.array([c.counts for c in cells], dtype=np.float64) for label, cells in grouped.items()}
    seeds = {label: [c.seed for c in cells] for label, cells in grouped.items()}
    summary = {"rows": rows, **statistics(results.config, counts, answers, f1_from_count_sums, seeds), "breakdowns": {}}
    data_sets = data_set_summaries(results, grouped, statistics)  # an evaluation of several data sets: each alone
    return {**summary, "data_sets": data_sets} if data_sets else summary


def per_question_summary(
    results: ComparisonResults, grouped: dict[str, list[Cell]], task: registry.TaskEntry,
    answer_tokens: np.ndarray | None, context_tokens: np.ndarray | None,
) -> dict[str, Any]:
    """A task whose main statistic is a mean over questions (SQuAD's F1): rows of its metrics (on SQuAD 2.0 also the
    HasAns/NoAns subsets), the contrasts of the per-question statistic, the breakdowns by the task's question groups,
    selective QA where cells have confidences, "always abstain" where questions may have no answer, the learning curve."""
    answers = {label: cells[0].answers for label, cells in grouped.items()}
    examples = results.eval_examples
    has_answer = np.array([ex.is_answerable for ex in examples])
    v2 = task.no_answer
    rows = [_per_question_row(label, cells, task, has_answer if v2 else None) for label, cells in grouped.items()]
    f1_by_seed = {label: np.array([c.column(task.statistic) for c in cells], dtype=np.float64) for label, cells in grouped.items()}
    seeds = {label: [c.seed for c in cells] for label, cells in grouped.items()}
    per_question_f1 = {label: f1.mean(axis=0) for label, f1 in f1_by_seed.items()}
    groups = task_question_groups(task, examples, answer_tokens, context_tokens)
    breakdowns = {name: breakdown(per_question_f1, labels) for name, labels in groups.items()}
    summary = {"rows": rows, **statistics(results.config, f1_by_seed, answers, seeds=seeds), "breakdowns": breakdowns}
    selective = selective_summary(grouped, [(c["a"], c["b"]) for c in summary["contrasts"]])
    summary = {**summary, "selective": selective} if selective else summary
    if v2:
        summary["always_abstain"] = against_abstaining(f1_by_seed, has_answer)
    heads = {run["name"]: run["heads"] for run in results.config["runs"]}
    curve = learning_curve(rows, summary["intervals"], summary["comparisons"], heads)
    return {**summary, "learning_curve": curve} if curve else summary


def question_groups(
    examples: Sequence[Example], answer_tokens: np.ndarray, context_tokens: np.ndarray, v2: bool
) -> dict[str, np.ndarray]:
    """Each question's group in the breakdowns (and the question browser's filters): by the length of
    its first gold answer and of its context in tokens, and by its question word."""
    has_answer = np.array([ex.is_answerable for ex in examples])
    return {
        "answer length (tokens)": length_bins(answer_tokens, ANSWER_LENGTH_EDGES) if not v2 else
        np.where(has_answer, length_bins(np.maximum(answer_tokens, 1), ANSWER_LENGTH_EDGES), "no answer"),
        "question word": np.array([question_word(ex.question) for ex in examples]),
        "context length (tokens)": length_bins(context_tokens, CONTEXT_LENGTH_EDGES),
    }


def task_question_groups(task: registry.TaskEntry, examples: Sequence[Example], answer_tokens: Any, context_tokens: Any) -> dict[str, np.ndarray]:
    """The question groups of the task's breakdowns (none for a task without)."""
    if task.groups is None:
        return {}
    return QUESTION_GROUPS[task.groups](examples, answer_tokens, context_tokens, task.no_answer)


def against_abstaining(f1_by_seed: dict[str, np.ndarray], has_answer: np.ndarray) -> dict[str, Any]:
    """SQuAD 2.0's trivial reader, "always abstain" (F1 100 on an unanswerable question, 0 elsewhere), on
    the same questions, and each cell's paired difference from it (over seeds × questions with several seeds)."""
    abstain = np.where(has_answer, 0.0, 100.0)
    cells = {}
    for label, f1 in f1_by_seed.items():
        baseline = np.broadcast_to(abstain, f1.shape)
        result = (two_level_bootstrap(f1, baseline, n_resamples=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED) if len(f1) > 1
                  else paired_bootstrap(f1[0], abstain, n_resamples=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED))
        cells[label] = result.to_dict()
    return {"f1": float(abstain.mean()), "cells": cells}


def _common_row(label: str, cells: list[Cell]) -> dict[str, Any]:
    first = cells[0]
    row: dict[str, Any] = {"cell": label, "run": first.run, "decoding": first.decoding, "seeds": [c.seed for c in cells],
                           "train_questions": first.train_questions}
    for key in ("threshold", "bio_length_prior", "train_seconds", "train_seconds_partial", "inference_seconds", "decode_seconds"):
        row[key] = [getattr(c, key) for c in cells]
    if first.tag_scores is not None:
        row["tag_scores"] = {k: mean_sd([c.tag_scores[k] for c in cells])[0] for k in first.tag_scores}
    if first.calibration is not None:  # ECE of the raw and the calibrated confidence, per seed
        row["ece"] = {kind: [c.calibration[kind]["ece"] for c in cells if kind in c.calibration]
                      for kind in ("raw", "calibrated")}
    return row


def _per_question_row(label: str, cells: list[Cell], task: registry.TaskEntry, has_answer: np.ndarray | None) -> dict[str, Any]:
    """The task's metrics per seed (and the HasAns/NoAns subsets on SQuAD 2.0)."""
    row = _common_row(label, cells)
    per_seed = [task.metrics_of(c.columns()) for c in cells]
    for metric in task.metrics:
        scores = [c.column(metric) for c in cells]
        row[metric] = [m[metric] for m in per_seed]
        if has_answer is not None:
            row[f"HasAns_{metric}"] = [float(s[has_answer].mean()) if has_answer.any() else None for s in scores]
            row[f"NoAns_{metric}"] = [float(s[~has_answer].mean()) if (~has_answer).any() else None for s in scores]
    return row


def _multispan_row(label: str, cells: list[Cell]) -> dict[str, Any]:
    """MultiSpanQA's six official metrics per seed, from count sums taken in question order (as its script)."""
    row = _common_row(label, cells)
    per_seed = [metrics_from_counts([sum(column) for column in c.counts.T.tolist()]) for c in cells]
    for metric in METRIC_NAMES:
        row[metric] = [m[metric] for m in per_seed]
    return row


def statistics(
    config: dict[str, Any], per_question: dict[str, np.ndarray], answers: dict[str, list[str]], ratio=None,
    seeds: dict[str, list[int]] | None = None,
) -> dict[str, Any]:
    """The baseline, the contrasts (A − B, with Holm-adjusted p-values), every pair of cells (unadjusted)
    and each cell's interval. ``per_question`` maps each cell to its ``(seeds, questions)`` F1 (or, given
    ``ratio``, ``(seeds, questions, k)`` counts whose summed ``ratio`` is compared); ``seeds`` names each
    row's training seed (default: row index). Two cells pair by the seeds they share (the same model for
    decodings of one run) and by question; cells with no seed in common compare their seed means."""
    seeds = seeds or {label: list(range(len(values))) for label, values in per_question.items()}
    baseline, pairs = resolve_contrasts(list(per_question), config.get("baseline"), config.get("contrasts", []))
    cache: dict[tuple[str, str], dict[str, Any]] = {}

    def compared(a: str, b: str) -> dict[str, Any]:
        if (a, b) not in cache:
            cache[a, b] = _compare(per_question, answers, seeds, a, b, ratio)
        return cache[a, b]

    contrasts = [dict(compared(a, b)) for a, b in pairs]
    for contrast, adjusted in zip(contrasts, holm([c["p_value"] for c in contrasts])):
        contrast.update(p_holm=float(adjusted), significant_holm=bool(adjusted <= FAMILY_ALPHA))
    seed_sets = {tuple(s) for s in seeds.values()}
    return {
        "baseline": {"cell": baseline, "named_in_config": config.get("baseline") is not None},
        "resampling": resampling(len(next(iter(seed_sets)))) if len(seed_sets) == 1 else MIXED_RESAMPLING,
        "contrasts": contrasts,
        "comparisons": [compared(a, b) for a, b in itertools.combinations(per_question, 2)],
        "intervals": {label: score_interval(values, ratio).to_dict() for label, values in per_question.items()},
    }


def _compare(per_question: dict[str, np.ndarray], answers: dict[str, list[str]], seeds: dict[str, list[int]],
             a: str, b: str, ratio=None) -> dict[str, Any]:
    """Paired bootstrap of cell ``a`` − cell ``b`` (``BOOTSTRAP_RESAMPLES``, seed ``BOOTSTRAP_SEED``) on the seeds both have: over
    questions with one (exactly :func:`paired_bootstrap`, or its ratio form), over seeds × questions with
    several; over questions of each cell's mean over its own seeds when they share none."""
    shared = [s for s in seeds[a] if s in seeds[b]]
    if shared:
        x = per_question[a][[seeds[a].index(s) for s in shared]]
        y = per_question[b][[seeds[b].index(s) for s in shared]]
    else:
        x, y = per_question[a].mean(axis=0, keepdims=True), per_question[b].mean(axis=0, keepdims=True)
    if len(x) > 1:
        result = two_level_bootstrap(x, y, ratio, n_resamples=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED)
    elif ratio is None:
        result = paired_bootstrap(x[0], y[0], n_resamples=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED)
    else:
        result = paired_bootstrap_ratio(x[0], y[0], ratio, n_resamples=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED)
    paired_by = {"seeds": shared, "resampling": resampling(len(x)) if shared else SEED_MEANS}
    return {"a": a, "b": b, **result.to_dict(), **paired_by, "agreement": agreement(answers[a], answers[b], normalize_answer)}


# Each way a task's cells are summarised and its questions grouped, by the names task entries give (bio_mrc.registry).
SUMMARIES = {registry.MEAN_OVER_QUESTIONS: per_question_summary, registry.SUMMED_SPAN_COUNTS: span_count_summary}
QUESTION_GROUPS = {registry.LENGTHS_AND_QUESTION_WORDS: question_groups}
