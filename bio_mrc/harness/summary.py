"""A comparison's numbers, before any rendering: each cell's scores over its seeds, the baseline and the
named contrasts with Holm-adjusted p-values, every pair of cells, each cell's interval, the breakdowns by
question group, and (where they apply) selective QA, the learning curve and "always abstain" on SQuAD 2.0.
:mod:`bio_mrc.harness.report` renders them."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any, Sequence

import numpy as np

from .. import registry
from ..metrics.multispan_official import METRIC_NAMES, f1_from_count_sums, metrics_from_counts
from ..progress import resamples_planned
from ..types import Example
from .config import resolve_contrasts
from .learning_curve import learning_curve
from .data_sets import data_set_summaries, per_question_data_sets
from .results import Cell, ComparisonResults
from .summary_records import AgainstAbstaining, CellKey, Contrast, Row, Statistics, Summary
from .selective_section import selective_summary
from .groups import breakdown, length_bins, question_word
from ..metrics.stats import (
    BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, agreement, holm, mean_sd, paired_bootstrap, paired_bootstrap_ratio, resampling, score_interval,
    two_level_bootstrap,
)

ANSWER_LENGTH_EDGES = (1, 2, 3, 5, 9, 17)
CONTEXT_LENGTH_EDGES = (1, 100, 150, 200, 300)
# The family-wise error rate of the contrasts (Holm). Significant is an adjusted p below it: a bootstrap p of exactly
# 0.05 can leave 0 inside the 95% percentile interval, one below it never does.
FAMILY_ALPHA = 0.05
MIXED_RESAMPLING = "per contrast"  # cells were trained with different seeds: each contrast says how it paired
SEED_MEANS = "questions (seed means)"  # two cells with no seed in common: each cell's mean over its own seeds


def summarise(results: ComparisonResults, answer_tokens: np.ndarray | None, context_tokens: np.ndarray | None) -> Summary:
    """Aggregate seeds per (run, decoding); the contrasts the config names, every pair of cells, each
    cell's interval, and the breakdowns where the task has question groups: the evaluation task's ``summary``."""
    grouped: dict[CellKey, list[Cell]] = {}
    for cell in results.cells:
        grouped.setdefault(cell.key, []).append(cell)
    task = registry.task(results.eval["task"])
    return SUMMARIES[task.summary](results, grouped, task, answer_tokens, context_tokens)


def span_count_summary(
    results: ComparisonResults, grouped: dict[CellKey, list[Cell]], task: registry.TaskEntry, answer_tokens: Any, context_tokens: Any,
) -> Summary:
    """A task scored by summed span counts (MultiSpanQA): rows of its metrics, the contrasts of the ratio of the
    summed counts (its main statistic), each data set of the evaluation alone, the learning curve."""
    answers = {label: [[task.answer_key(a) for a in c.answers] for c in cells] for label, cells in grouped.items()}
    rows = [_multispan_row(label, cells) for label, cells in grouped.items()]
    counts = {label: np.array([c.counts for c in cells], dtype=np.float64) for label, cells in grouped.items()}
    seeds = {label: [c.seed for c in cells] for label, cells in grouped.items()}
    data_sets = data_set_summaries(results, grouped, statistics)  # an evaluation of several data sets: each alone
    stats = statistics(results.config, counts, answers, f1_from_count_sums, seeds)
    curve = learning_curve(rows, stats.intervals, stats.comparisons, _heads_by_run(results), task.statistic, task.statistic_title)
    return Summary(rows=rows, **stats.as_kwargs(), data_sets=data_sets or None, learning_curve=curve)


def per_question_summary(
    results: ComparisonResults, grouped: dict[CellKey, list[Cell]], task: registry.TaskEntry,
    answer_tokens: np.ndarray | None, context_tokens: np.ndarray | None,
) -> Summary:
    """A task whose main statistic is a mean over questions (SQuAD's F1): rows of its metrics (on SQuAD 2.0 also the
    HasAns/NoAns subsets), the contrasts of the per-question statistic, the breakdowns by the task's question groups,
    selective QA where cells have confidences, "always abstain" where questions may have no answer, the learning curve."""
    answers = {label: [[task.answer_key(a) for a in c.answers] for c in cells] for label, cells in grouped.items()}
    examples = results.eval_examples
    has_answer = np.array([ex.is_answerable for ex in examples])
    rows = [_per_question_row(label, cells, task, has_answer) for label, cells in grouped.items()]
    f1_by_seed = {label: np.array([c.column(task.statistic) for c in cells], dtype=np.float64) for label, cells in grouped.items()}
    seeds = {label: [c.seed for c in cells] for label, cells in grouped.items()}
    per_question_f1 = {label: f1.mean(axis=0) for label, f1 in f1_by_seed.items()}
    groups = task_question_groups(task, examples, answer_tokens, context_tokens)
    breakdowns = {name: breakdown(per_question_f1, labels) for name, labels in groups.items()}
    stats = statistics(results.config, f1_by_seed, answers, seeds=seeds)
    selective = selective_summary(grouped, [(c.a, c.b) for c in stats.contrasts])
    abstain = task.abstaining_scores(examples)
    always_abstain = None if abstain is None else against_abstaining(f1_by_seed, abstain)
    curve = learning_curve(rows, stats.intervals, stats.comparisons, _heads_by_run(results))
    data_sets = per_question_data_sets(results, grouped, task, statistics)  # an evaluation of several data sets: each alone
    return Summary(rows=rows, **stats.as_kwargs(), breakdowns=breakdowns, selective=selective, always_abstain=always_abstain,
                   data_sets=data_sets or None, learning_curve=curve)


def question_groups(
    examples: Sequence[Example], answer_tokens: np.ndarray, context_tokens: np.ndarray, task: registry.TaskEntry
) -> dict[str, np.ndarray]:
    """Each question's group in the breakdowns (and the question browser's filters): by the length of
    its first gold answer (:func:`answer_length_groups`) and of its context in tokens, and by its question word."""
    return {
        "answer length (tokens)": answer_length_groups(examples, answer_tokens, task),
        "question word": np.array([question_word(ex.question) for ex in examples]),
        "context length (tokens)": length_bins(context_tokens, CONTEXT_LENGTH_EDGES),
    }


def answer_length_groups(examples: Sequence[Example], answer_tokens: np.ndarray, task: registry.TaskEntry) -> np.ndarray:
    """Each question's bin of the tokens of its first gold answer; where the task scores questions with and without an
    answer apart (its :meth:`~bio_mrc.registry.TaskEntry.question_subsets`, SQuAD 2.0's HasAns and NoAns), each
    subset's questions are grouped as :data:`SUBSET_ANSWER_LENGTHS` says."""
    has_answer = np.array([ex.is_answerable for ex in examples])
    labels = length_bins(answer_tokens, ANSWER_LENGTH_EDGES)
    for answered in task.question_subsets().values():
        labels = np.where(has_answer == answered, SUBSET_ANSWER_LENGTHS[answered](answer_tokens), labels)
    return labels


def task_question_groups(task: registry.TaskEntry, examples: Sequence[Example], answer_tokens: Any, context_tokens: Any) -> dict[str, np.ndarray]:
    """The question groups of the task's breakdowns (none for a task without)."""
    if task.groups is None:
        return {}
    return QUESTION_GROUPS[task.groups](examples, answer_tokens, context_tokens, task)


def against_abstaining(f1_by_seed: dict[CellKey, np.ndarray], abstain: np.ndarray) -> AgainstAbstaining:
    """SQuAD 2.0's trivial reader, "always abstain" (``abstain``: its F1 on each question, :func:`bio_mrc.metrics.task_scores.abstain_f1`), on
    the same questions, and each cell's paired difference from it (over seeds × questions with several seeds)."""
    cells = {}
    resamples_planned(len(f1_by_seed) * BOOTSTRAP_RESAMPLES)
    for key, f1 in f1_by_seed.items():
        baseline = np.broadcast_to(abstain, f1.shape)
        result = (two_level_bootstrap(f1, baseline, n_resamples=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED) if len(f1) > 1
                  else paired_bootstrap(f1[0], abstain, n_resamples=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED))
        cells[key] = result
    return AgainstAbstaining(float(abstain.mean()), cells)


def _heads_by_run(results: ComparisonResults) -> dict[str, str]:
    return {run["name"]: run["heads"] for run in results.config["runs"]}


def _common_row(key: CellKey, cells: list[Cell], scores: dict[str, list[float | None]]) -> Row:
    first = cells[0]
    per_seed = {name: [getattr(c, name) for c in cells]
                for name in ("threshold", "bio_length_prior", "train_seconds", "train_seconds_partial", "inference_seconds", "decode_seconds")}
    tag_scores = None if first.tag_scores is None else {k: mean_sd([c.tag_scores[k] for c in cells])[0] for k in first.tag_scores}
    ece = None if first.calibration is None else {  # ECE of the raw and the calibrated confidence, per seed
        kind: [c.calibration[kind]["ece"] for c in cells if kind in c.calibration] for kind in ("raw", "calibrated")}
    return Row(key, [c.seed for c in cells], first.train_questions, scores=scores, tag_scores=tag_scores, ece=ece, **per_seed)


def _per_question_row(key: CellKey, cells: list[Cell], task: registry.TaskEntry, has_answer: np.ndarray) -> Row:
    """The task's metrics per seed, each followed by its question subsets' (SQuAD 2.0's HasAns/NoAns); ``has_answer``:
    whether each question has an answer."""
    scores: dict[str, list[float | None]] = {}
    per_seed = [task.metrics_of(c.columns()) for c in cells]
    for metric in task.metrics:
        per_question = [c.column(metric) for c in cells]
        scores[metric] = [m[metric] for m in per_seed]
        for subset, answered in task.question_subsets().items():
            chosen = has_answer == answered
            scores[task.subset_metric(subset, metric)] = [float(s[chosen].mean()) if chosen.any() else None for s in per_question]
    return _common_row(key, cells, scores)


def _multispan_row(key: CellKey, cells: list[Cell]) -> Row:
    """MultiSpanQA's six official metrics per seed, from count sums taken in question order (as its script)."""
    per_seed = [metrics_from_counts([sum(column) for column in c.counts.T.tolist()]) for c in cells]
    return _common_row(key, cells, {metric: [m[metric] for m in per_seed] for metric in METRIC_NAMES})


def statistics(
    config: dict[str, Any], per_question: dict[CellKey, np.ndarray], answers: dict[CellKey, list[str]], ratio=None,
    seeds: dict[CellKey, list[int]] | None = None,
) -> Statistics:
    """The baseline, the contrasts (A − B, with Holm-adjusted p-values), every pair of cells (unadjusted)
    and each cell's interval. ``per_question`` maps each cell to its ``(seeds, questions)`` F1 (or, given
    ``ratio``, ``(seeds, questions, k)`` counts whose summed ``ratio`` is compared); ``seeds`` names each
    row's training seed (default: row index); ``answers`` each cell's answers per seed (rows as ``per_question``) as the
    task compares them (:meth:`~bio_mrc.registry.TaskEntry.answer_key`), equal where two cells agree. Two cells pair by the seeds they share (the same model for
    decodings of one run) and by question; cells with no seed in common compare their seed means. The resamples join
    the open resample bar (:func:`bio_mrc.progress.resample_bar`)."""
    seeds = seeds or {key: list(range(len(values))) for key, values in per_question.items()}
    by_label = {str(key): key for key in per_question}  # the configuration names cells by label
    baseline, pairs = resolve_contrasts(list(by_label), config.get("baseline"), config.get("contrasts", []))
    keys = [(by_label[a], by_label[b]) for a, b in pairs]
    every_pair = list(itertools.combinations(per_question, 2))
    drawn = list(dict.fromkeys([*keys, *every_pair]))  # each ordered pair once: the bar plans what the loop draws
    resamples_planned((len(drawn) + len(per_question)) * BOOTSTRAP_RESAMPLES)
    compared = {(a, b): _compare(per_question, answers, seeds, a, b, ratio) for a, b in drawn}
    contrasts = [compared[pair] for pair in keys]
    adjusted = holm([c.p_value for c in contrasts])
    contrasts = [replace(c, p_holm=float(p), significant_holm=bool(p < FAMILY_ALPHA)) for c, p in zip(contrasts, adjusted)]
    seed_sets = {tuple(s) for s in seeds.values()}
    return Statistics(
        baseline=by_label[baseline], baseline_named_in_config=config.get("baseline") is not None,
        resampling=resampling(len(next(iter(seed_sets)))) if len(seed_sets) == 1 else MIXED_RESAMPLING,
        contrasts=contrasts, comparisons=[compared[pair] for pair in every_pair],
        intervals={key: score_interval(values, ratio) for key, values in per_question.items()},
    )


def _compare(per_question: dict[CellKey, np.ndarray], answers: dict[CellKey, list[str]], seeds: dict[CellKey, list[int]],
             a: CellKey, b: CellKey, ratio=None) -> Contrast:
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
    # Agreement describes the pair's models of one training seed: the first both cells have (each cell's first where none).
    row_a, row_b = (seeds[a].index(shared[0]), seeds[b].index(shared[0])) if shared else (0, 0)
    return Contrast(a=a, b=b, **result.to_dict(), seeds=shared, resampling=resampling(len(x)) if shared else SEED_MEANS,
                    agreement=agreement(answers[a][row_a], answers[b][row_b], str))


# Each way a task's cells are summarised and its questions grouped, by the names task entries give (bio_mrc.registry).
SUMMARIES = {registry.MEAN_OVER_QUESTIONS: per_question_summary, registry.SUMMED_SPAN_COUNTS: span_count_summary}
QUESTION_GROUPS = {registry.LENGTHS_AND_QUESTION_WORDS: question_groups}
# The answer-length groups of a question subset a task scores apart, by whether its questions have an answer: an answer
# counts at least one token (so no "<1" bin stands beside "no answer"), and questions without one are a group of their own.
SUBSET_ANSWER_LENGTHS = {True: lambda tokens: length_bins(np.maximum(tokens, 1), ANSWER_LENGTH_EDGES),
                         False: lambda tokens: np.full(len(tokens), "no answer")}
