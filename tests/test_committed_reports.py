"""The committed reports (``benchmarks/reports/**/report.json[.xz]``) re-read and re-tested: each reads as typed
records that write back the JSON it stores, each cell's score is the mean of its per-question scores, the Markdown
report shows the same scores, and the learning curve's trend follows from its gaps. Each report is read once for
every test of it (a large one takes a second)."""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import numpy as np
import pytest

from bio_mrc import registry
from bio_mrc.harness.data_set_records import DataSetSummary
from bio_mrc.harness.earlier_report import read_report
from bio_mrc.harness.learning_curve import gap_trend, learning_curve_section
from bio_mrc.harness.learning_curve_records import LearningCurve
from bio_mrc.harness.report import _score_table
from bio_mrc.harness.results import Cell, ComparisonResults, upgrade_report
from bio_mrc.harness.selective_records import SelectiveSummary
from bio_mrc.harness.summary_records import AgainstAbstaining, CellKey, Contrast, Row
from bio_mrc.metrics.multispan_official import metrics_from_counts
from bio_mrc.metrics.stats import paired_bootstrap, two_level_bootstrap

REPORTS = Path(__file__).parents[1] / "benchmarks" / "reports"
REPORT_FILES = sorted(REPORTS.glob("**/report.json*"))


def test_the_main_reports_are_committed_with_their_data():
    names = {path.parent.name for path in REPORT_FILES}
    assert {"learning-curve", "precision", "quick", "v2-from-reader", "multispanqa-cv-from-full"} <= names


@pytest.fixture(scope="module", params=REPORT_FILES, ids=lambda path: path.parent.name)
def committed(request):
    """A committed report as ``read_report`` types it and its ``report.md``, read once for every test of it: read only."""
    return read_report(request.param), (request.param.parent / "report.md").read_text(encoding="utf-8")


def _stored_json(path: Path) -> dict:
    """The report's JSON as stored, read by ``json`` alone (not by the package's reader)."""
    with (lzma.open if path.suffix == ".xz" else open)(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def _set(mapping: dict) -> dict:
    return {key: value for key, value in mapping.items() if value is not None}


def test_every_committed_report_reads_as_typed_records_that_write_back_the_same(committed, request):
    report, _ = committed
    path = request.node.callspec.params["committed"]
    assert isinstance(report.results, ComparisonResults) and all(isinstance(cell, Cell) for cell in report.results.cells)
    assert report.results.eval["task"] in ("squad-v1.1", "squad-v2.0", "multispanqa")
    assert all(isinstance(score, np.ndarray) for cell in report.results.cells for score in (cell.f1, cell.counts) if score is not None)
    stored = upgrade_report(_stored_json(path), str(path))
    assert report.to_json() == {**_set(stored), "cells": [_set(cell) for cell in stored["cells"]]}
    summary = report.summary
    assert all(isinstance(row, Row) and isinstance(row.cell, CellKey) for row in summary.rows)
    assert all(isinstance(c, Contrast) for c in [*summary.contrasts, *summary.comparisons])
    assert all(isinstance(key, CellKey) for key in summary.intervals) and isinstance(summary.baseline, CellKey)
    for name, record in (("selective", SelectiveSummary), ("always_abstain", AgainstAbstaining), ("learning_curve", LearningCurve)):
        assert getattr(summary, name) is None or isinstance(getattr(summary, name), record), name
    assert all(isinstance(part, DataSetSummary) and all(isinstance(row.cell, CellKey) for row in part.rows) for part in summary.data_sets or [])
    assert all(
        isinstance(key, CellKey)
        for key in [*(summary.selective.cells if summary.selective else ()), *(summary.always_abstain.cells if summary.always_abstain else ())]
    )
    # the summary's records write its JSON back key for key, in order: the same numbers, the same text
    assert json.dumps(summary.to_json()) == json.dumps(stored["summary"])


def _cell_scores(cell):
    """A cell's scores from its per-question records: SQuAD's mean EM and F1, or the multi-span metrics
    of its summed counts."""
    if cell.counts is not None:
        return metrics_from_counts(np.asarray(cell.counts, dtype=np.float64).sum(axis=0))
    return {"em": np.mean(cell.em), "f1": np.mean(cell.f1)}


def test_every_cell_scores_its_questions(committed):
    report, _ = committed
    rows = {row.cell: row for row in report.summary.rows}
    assert rows and {cell.key for cell in report.results.cells} == set(rows)  # every row has its cells
    for cell in report.results.cells:
        row = rows[cell.key]
        at = row.seeds.index(cell.seed)
        assert len(cell.counts if cell.counts is not None else cell.f1) == len(report.eval_ids)
        for metric, value in _cell_scores(cell).items():
            assert value == pytest.approx(row.scores[metric][at], abs=1e-9), (cell.label, metric)


def test_the_task_entry_scores_each_cell_as_the_report_did(committed):
    """The evaluation task's own metrics (its registry entry's ``aggregate`` of the cell's per-question columns) are
    every committed row's numbers, to float rounding (a report written on another machine summed its counts there)."""
    report, _ = committed
    task = registry.task(report.results.eval["task"])
    rows = {row.cell: row for row in report.summary.rows}
    assert rows and {cell.key for cell in report.results.cells} == set(rows)
    for cell in report.results.cells:
        row, metrics = rows[cell.key], task.metrics_of(cell.columns())
        assert set(task.metrics) <= set(metrics)
        for metric in task.metrics:
            assert metrics[metric] == pytest.approx(row.scores[metric][row.seeds.index(cell.seed)], rel=1e-12), (cell.label, metric)


def test_the_markdown_report_shows_the_json_scores(committed):
    report, markdown = committed
    lines = _score_table(report.results, report.summary)
    assert report.summary.rows and len(lines) == 2 + len(report.summary.rows)  # a head, its rule and a line a row
    for line in lines:
        assert line in markdown


@pytest.mark.slow  # a bootstrap of every contrast of every report: 25 s
def test_every_contrast_follows_from_its_cells_per_question_scores(committed):
    """Each contrast's difference, interval and p re-derived from the cells' per-question F1 on the seeds it paired on
    (the bootstrap over questions with one, seeds × questions with several), and "significant after Holm" only where
    the interval excludes 0."""
    report, _ = committed
    if any(cell.counts is not None for cell in report.results.cells):
        pytest.skip("span counts: the contrasts compare a ratio of sums")
    f1 = {(cell.key, cell.seed): np.asarray(cell.f1, dtype=np.float64) for cell in report.results.cells}
    assert report.summary.contrasts or len(report.summary.rows) == 1
    for c in report.summary.contrasts:
        assert c.seeds, (c.a, c.b)  # every committed contrast paired on shared seeds
        a, b = (np.stack([f1[key, seed] for seed in c.seeds]) for key in (c.a, c.b))
        again = paired_bootstrap(a[0], b[0]) if len(c.seeds) == 1 else two_level_bootstrap(a, b)
        assert c.diff == pytest.approx((a - b).mean(), abs=1e-9)
        for field in ("diff", "ci_low", "ci_high", "p_value", "n_questions", "n_resamples", "n_seeds"):
            assert getattr(again, field) == pytest.approx(getattr(c, field), abs=1e-9), (c.a, c.b, field)
        assert not c.significant_holm or c.ci_low > 0 or c.ci_high < 0, (c.a, c.b)


def test_the_learning_curve_follows_from_its_gaps(committed):
    report, markdown = committed
    curve = report.summary.learning_curve
    if curve is None:
        pytest.skip("no learning curve in this report")
    _assert_same(gap_trend(curve.gaps).to_json(), curve.gap_trend.to_json())
    lines = learning_curve_section(curve, "learning_curve.png")
    assert lines
    for line in lines:
        assert line in markdown


def _assert_same(recomputed, stored, where="gap_trend"):
    """Recomputed equals stored, numbers to rounding (the JSON round trip), nested dicts and lists alike."""
    if isinstance(stored, dict):
        assert recomputed.keys() == stored.keys(), where
        for key in stored:
            _assert_same(recomputed[key], stored[key], f"{where}.{key}")
    elif isinstance(stored, (int, float, list)) and not isinstance(stored, bool):
        assert np.allclose(recomputed, stored, rtol=1e-12), where
    else:
        assert recomputed == stored, where
