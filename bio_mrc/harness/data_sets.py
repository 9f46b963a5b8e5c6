"""An evaluation of several data sets (``eval`` with ``eval_also``): each data set scored on its own, with the
contrasts' paired intervals, how often each cell leaves a question without a span, how many spans it gives, and
(where the evaluation's questions are at hand) the SQuAD F1 of its single-span questions, which a multi-span
reader must not start splitting."""

from __future__ import annotations

import numpy as np

from .. import registry
from ..data.squad import gold_texts
from ..metrics.multispan_official import f1_from_count_sums, metrics_from_counts
from ..metrics.squad_official import per_question_scores
from ..plurals import counted
from .cell_key import CellKey
from .data_set_records import DataSetRow, DataSetSummary, SingleSpanScores
from .markdown_html import literal_text
from .results import Cell, ComparisonResults
from ..metrics.stats import format_p_value


def data_set_summaries(results: ComparisonResults, grouped: dict[CellKey, list[Cell]], statistics) -> list[DataSetSummary]:
    """One summary per data set of a multi-span evaluation (none for one data set): each cell's six official
    metrics, empty share, spans per question and single-span SQuAD F1, and ``statistics`` (summary.statistics)
    of the data set's questions alone."""
    answer_key = registry.task(results.eval["task"]).answer_key
    summaries = []
    for part, rows in _part_rows(results):
        counts = {label: np.array([c.counts[rows] for c in cells], dtype=np.float64) for label, cells in grouped.items()}
        answers = {label: [[answer_key(a) for a in c.answers[rows]] for c in cells] for label, cells in grouped.items()}
        seeds = {label: [c.seed for c in cells] for label, cells in grouped.items()}
        single = _single_span_f1(results, grouped, rows)
        cell_rows = [_part_row(key, cells, rows, single.get(key)) for key, cells in grouped.items()]
        stats = statistics(results.config, counts, answers, f1_from_count_sums, seeds)
        summaries.append(DataSetSummary(description=part["description"], task=part["task"], questions=part["questions"],
                                        rows=cell_rows, **stats.as_kwargs()))
    return summaries


def per_question_data_sets(results: ComparisonResults, grouped: dict[CellKey, list[Cell]], task: registry.TaskEntry,
                           statistics) -> list[DataSetSummary]:
    """One summary per data set of an evaluation scored by a mean over questions (SQuAD; none for one data set): each
    cell's metrics on the data set's questions per seed, its share left without an answer, and ``statistics``
    (summary.statistics) of the task's statistic on those questions alone."""
    summaries = []
    for part, rows in _part_rows(results):
        by_seed = {key: np.array([c.column(task.statistic)[rows] for c in cells], dtype=np.float64) for key, cells in grouped.items()}
        answers = {key: [[task.answer_key(a) for a in c.answers[rows]] for c in cells] for key, cells in grouped.items()}
        seeds = {key: [c.seed for c in cells] for key, cells in grouped.items()}
        cell_rows = [DataSetRow(key, {name: [float(np.mean(c.column(name)[rows])) for c in cells] for name in task.metrics},
                                float(np.mean([not text for text in cells[0].answers[rows]])),
                                float(np.mean([bool(text) for text in cells[0].answers[rows]])))
                     for key, cells in grouped.items()]
        stats = statistics(results.config, by_seed, answers, seeds=seeds)
        summaries.append(DataSetSummary(description=part["description"], task=part["task"], questions=part["questions"],
                                        rows=cell_rows, **stats.as_kwargs()))
    return summaries


def _part_rows(results: ComparisonResults) -> list[tuple[dict, slice]]:
    """Each data set the evaluation joins (none for one) and its questions' rows, in the evaluation's order."""
    parts, begin = [], 0
    for part in results.eval.get("parts") or []:
        parts.append((part, slice(begin, begin + part["questions"])))
        begin += part["questions"]
    return parts


def _part_row(key: CellKey, cells: list[Cell], rows: slice, single_f1: SingleSpanScores | None) -> DataSetRow:
    """A cell on one data set: its metrics per seed, and its first seed's empty share and spans per question."""
    metrics = [metrics_from_counts(np.asarray(c.counts[rows], dtype=np.float64).sum(axis=0).tolist()) for c in cells]
    answers = list(cells[0].answers[rows])
    spans = [0 if not text else len(text.split("\n")) for text in answers]
    return DataSetRow(key, {name: [m[name] for m in metrics] for name in metrics[0]}, float(np.mean([n == 0 for n in spans])),
                      float(np.mean(spans)), single_f1)


def _single_span_f1(results: ComparisonResults, grouped: dict[CellKey, list[Cell]], rows: slice) -> dict[CellKey, SingleSpanScores]:
    """Per cell, SQuAD v1.1's F1 (and EM) of the spans given, joined, on the data set's questions whose gold is one span
    (empty when the evaluation's questions are not at hand, as in a report read back from ``report.json``)."""
    examples = results.eval_examples[rows]
    chosen = [ex for ex in examples if len(ex.answers) == 1 and len(ex.answers[0]) == 1]
    if not chosen:
        return {}
    gold, ids = gold_texts(chosen), [ex.id for ex in chosen]
    positions = {ex.id: k for k, ex in enumerate(examples)}
    out = {}
    for key, cells in grouped.items():
        answers = list(cells[0].answers[rows])
        predicted = {qid: " ".join(answers[positions[qid]].split("\n")) for qid in ids}
        em, f1 = per_question_scores(gold, predicted, ids, "1.1")
        out[key] = SingleSpanScores(len(ids), float(em.mean()), float(f1.mean()))
    return out


def data_set_lines(summaries: list[DataSetSummary], resampling: str) -> list[str]:
    """``report.md``'s section: per data set, each cell's scores, then the contrasts on its questions alone."""
    if not summaries:
        return []
    lines = ["", "## Per data set", "",
             "Each data set of the evaluation on its own: its official metrics (MultiSpanQA's EM and PM F1 are "
             "micro-averaged over its questions' spans), the share of questions left without a span, the spans given per "
             "question, and on the questions whose gold answer is one span, SQuAD v1.1's F1 of the spans given (joined)."]
    for part in summaries:
        task = registry.task(part.task)
        shown = task.data_set_metrics
        lines += ["", f"### {literal_text(part.description)} ({counted(part.questions, 'question')})", "",
                  f"| cell | {' | '.join(task.metric_title(name) for name in shown)} | empty | spans per question | "
                  "single-span questions: SQuAD F1 |", "|---|" + "---|" * (len(shown) + 3)]
        for row in part.rows:
            single = row.single_span
            single_text = f"{single.f1:.2f} ({single.questions})" if single else "–"
            lines.append(f"| {row.cell} | {' | '.join(f'{np.mean(row.scores[name]):.2f}' for name in shown)} | {100 * row.empty_share:.1f}% | "
                         f"{row.spans_per_question:.2f} | {single_text} |")
        lines += ["", f"{task.statistic_title} A − B on these questions alone (95% paired bootstrap {resampling}):", "",
                  f"| A | B | {task.statistic_title} A − B | 95% CI | Holm p |", "|---|---|---|---|---|"]
        lines += [f"| {c.a} | {c.b} | {c.diff:+.2f} | [{c.ci_low:+.2f}, {c.ci_high:+.2f}] | {format_p_value(c.p_holm, len(part.contrasts))} |"
                  for c in part.contrasts]
    return lines
