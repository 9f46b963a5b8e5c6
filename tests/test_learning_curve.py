"""The learning-curve section of a comparison report: points, the BIO − span gap per size, its trend."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from bio_mrc.harness.learning_curve import describe_trend, gap_trend, learning_curve
from bio_mrc.harness.learning_curve_records import Gap, LearningCurve
from bio_mrc.harness.report import write_report
from bio_mrc.harness.summary import summarise
from bio_mrc.harness.summary_records import CellKey, Row

from .test_harness_report import synthetic_results


def gap(n, diff, half_width=2.0, run="r"):
    return Gap(run, n, diff, diff - half_width, diff + half_width, None, None)


def test_two_sizes_fit_a_line_exactly_and_say_where_it_crosses_zero():
    trend = gap_trend([gap(1_000, -6.0), gap(10_000, -4.0)])  # +2 per decade from -6 at 10^3: zero at 10^6
    assert trend.slope_per_decade == pytest.approx(2.0) and trend.intercept == pytest.approx(-12.0)
    assert trend.closes == "extrapolated" and trend.closing_questions == pytest.approx(1e6)
    assert trend.sizes == 2 and trend.fitted_gap_at_largest == pytest.approx(-4.0)
    assert "1,000,000 training questions" in describe_trend(trend)


def test_a_gap_that_barely_shrinks_closes_beyond_any_float_instead_of_failing():
    # +0.001 per decade from -3 at 10^3: zero at 10^3003 questions, past the largest float
    trend = gap_trend([gap(1_000, -3.0), gap(10_000, -2.999)])
    assert trend.closes == "extrapolated" and trend.closing_questions == math.inf
    assert trend.last_step.closing_questions == math.inf
    assert "closes only beyond 10^308 training questions" in describe_trend(trend)


def test_the_fit_weights_each_gap_by_its_inverse_variance_as_numpy_does():
    gaps = [gap(3_000, -5.0, 3.0), gap(10_000, -2.5, 1.0), gap(30_000, -2.0, 2.0), gap(87_599, -0.5, 0.5)]
    trend = gap_trend(gaps)
    x = np.log10([g.train_questions for g in gaps])
    se = np.array([g.ci_high - g.ci_low for g in gaps]) / (2 * 1.959963984540054)
    slope, intercept = np.polyfit(x, [g.diff for g in gaps], 1, w=1 / se)  # polyfit weights residuals, not squares
    assert trend.slope_per_decade == pytest.approx(slope) and trend.intercept == pytest.approx(intercept)
    assert trend.slope_ci[0] < slope < trend.slope_ci[1]


def test_gaps_on_one_line_pass_the_residual_check():
    trend = gap_trend([gap(1_000, -6.0), gap(10_000, -4.0), gap(100_000, -2.0)])
    assert trend.residual_chi2 == pytest.approx(0.0, abs=1e-9) and trend.residual_dof == 1
    assert trend.lack_of_fit_p == pytest.approx(1.0)
    assert "consistent with one line" in describe_trend(trend)
    assert gap_trend([gap(1_000, -6.0), gap(10_000, -4.0)]).lack_of_fit_p is None  # two points: no check


def test_a_bending_gap_fails_the_residual_check_and_gets_the_last_steps_slope():
    gaps = [gap(1_000, -6.0, 0.2), gap(10_000, -2.0, 0.2), gap(100_000, -1.0, 0.2)]  # fast, then slow
    trend = gap_trend(gaps)
    x, y = np.log10([1_000, 10_000, 100_000]), np.array([-6.0, -2.0, -1.0])
    se = 0.2 / 1.959963984540054
    fitted = np.polyval(np.polyfit(x, y, 1), x)  # equal weights: the ordinary fit
    assert trend.residual_chi2 == pytest.approx(np.sum(((y - fitted) / se) ** 2))
    assert trend.lack_of_fit_p < 1e-6
    step = trend.last_step  # +1 F1 per 10x from -1 at 10^5: zero at 10^6
    assert step.slope_per_decade == pytest.approx(1.0) and step.closing_questions == pytest.approx(1e6)
    text = describe_trend(trend)
    assert "do not lie on one line" in text and "would close at about 1,000,000 training questions" in text


@pytest.mark.parametrize("diffs, closes", [((-4.0, 1.0), "closed"), ((-2.0, -3.0), "never"), ((-2.0, -2.0), "never")])
def test_a_gap_that_has_closed_or_does_not_shrink_has_no_closing_size(diffs, closes):
    trend = gap_trend([gap(1_000, diffs[0]), gap(10_000, diffs[1])])
    assert trend.closes == closes and trend.closing_questions is None
    assert ("caught up" if closes == "closed" else "never catches up") in describe_trend(trend)


@pytest.mark.parametrize("diffs, verdict", [((-1.0, -0.2, -4.0), "never catches up"), ((3.0, -1.0, 4.0), "caught up")])
def test_a_verdict_without_a_closing_size_still_gets_the_residual_check(diffs, verdict):
    # Gaps of ±0.2 that zigzag: the line's verdict rests on points far off it (χ² in the hundreds), so the check warns
    trend = gap_trend([gap(n, diff, 0.2) for n, diff in zip((1_000, 10_000, 100_000), diffs)])
    assert trend.lack_of_fit_p < 0.05
    text = describe_trend(trend)
    assert verdict in text and "**the gaps do not lie on one line** in log-questions, so this verdict is not to be trusted" in text
    step = ("-3.80 F1 per 10×, and at that rate it does not close." if diffs[-1] < 0
            else "+5.00 F1 per 10×, to +4.00 F1 at the largest size: there BIO has caught up.")
    assert f"Between the two largest sizes (10,000 and 100,000 questions) the gap changes by {step}" in text


def test_one_size_has_no_trend():
    assert gap_trend([gap(1_000, -3.0), gap(1_000, -2.0, run="s")]) is None
    assert "one size only" in describe_trend(None)


def curve_results():
    """Joint runs at 3,000 and 10,000 questions (three seeds at 10,000) and a span-only run at 10,000."""
    small = synthetic_results(runs=("joint",), seeds=(42,))
    large = synthetic_results(runs=("joint", "span-only"), seeds=(42, 43, 44), seed_sd=2.0)
    cells = [replace(cell, run="joint-3k", train_questions=3_000) for cell in small.cells]
    cells += [replace(cell, run=f"{cell.run}-10k", train_questions=10_000) for cell in large.cells]
    runs = [{"name": "joint-3k", "encoder": "tiny", "heads": "span+bio"}, {"name": "joint-10k", "encoder": "tiny", "heads": "span+bio"},
            {"name": "span-only-10k", "encoder": "tiny", "heads": "span"}]
    run_train = {name: {"description": f"first {n} questions", "questions": n, "question_hash": f"h{n}"}
                 for name, n in (("joint-3k", 3_000), ("joint-10k", 10_000))}
    return replace(large, cells=cells, config={**large.config, "runs": runs, "seeds": [42]}, run_train=run_train)


@pytest.mark.slow  # over 3 s alone on 2 cores
def test_the_report_holds_each_size_the_gap_with_its_paired_interval_and_the_figure(tmp_path):
    results = curve_results()
    summary = write_report(results, tmp_path, np.arange(200) % 7, 50 + np.arange(200))
    curve = summary.learning_curve
    assert set(curve.curves) == {"span+bio · span", "span+bio · bio", "span+bio · joint"}  # span-only: one size
    assert [p.train_questions for p in curve.curves["span+bio · bio"]] == [3_000, 10_000]
    f1 = {}
    for c in results.cells:
        f1.setdefault((c.run, c.decoding), []).append(c.f1)
    point = next(p for p in curve.points if p.cell == CellKey("joint-10k", "bio"))
    per_seed = [f.mean() for f in f1["joint-10k", "bio"]]
    assert point.f1 == pytest.approx(np.mean(per_seed)) and point.f1_sd == pytest.approx(np.std(per_seed, ddof=1))
    assert point.seeds == [42, 43, 44] and point.ci_low < point.f1 < point.ci_high
    gaps = {g.run: g for g in curve.gaps}
    assert set(gaps) == {"joint-3k", "joint-10k"} and gaps["joint-10k"].seeds == [42, 43, 44]
    for run, g in gaps.items():  # oriented BIO − span whatever order the comparison was made in
        expected = np.mean(f1[run, "bio"]) - np.mean(f1[run, "span"])
        assert g.diff == pytest.approx(expected) and g.ci_low < g.diff < g.ci_high
    assert curve.gap_trend.sizes == 2
    assert LearningCurve.from_json(curve.to_json()) == curve  # report.json reads back to the same records
    report = (tmp_path / "report.md").read_text()
    assert "## Learning curve" in report and "| 10,000 | joint-10k | 42, 43, 44 |" in report
    assert "- Train, run joint-3k: first 3000 questions: 3000 questions" in report
    assert "- Train (runs without their own `train_data`): t: 9 questions" in report  # span-only-10k's
    assert "(learning_curve.png)" in report and (tmp_path / "learning_curve.png").stat().st_size > 0


def test_a_comparison_at_one_size_has_no_learning_curve():
    results = synthetic_results(runs=("joint",))
    for cell in results.cells:
        cell.train_questions = 3_000
    assert summarise(results, np.arange(200) % 7, 50 + np.arange(200)).learning_curve is None
    rows = [Row(CellKey("a", "span"), [1], None, [None], [None], [1.0], [1.0], [0.1], scores={"f1": [50.0]})]
    assert learning_curve(rows, {}, [], {"a": "span"}) is None


def test_the_gap_plot_marks_a_straight_line_that_does_not_fit_and_draws_the_last_step():
    from matplotlib.figure import Figure

    from bio_mrc.harness.plots import _plot_gap

    gaps = [gap(1_000, -6.0, 0.2), gap(10_000, -2.0, 0.2), gap(100_000, -1.0, 0.2)]
    axes = Figure().add_subplot()
    _plot_gap(axes, gaps, gap_trend(gaps))
    labels = axes.get_legend_handles_labels()[1]
    assert any(label.endswith("(does not fit)") for label in labels)
    assert "last step +1.00 F1 per 10×" in labels and "closes at ≈ 1,000,000 (extrapolated)" in labels
    axes = Figure().add_subplot()
    _plot_gap(axes, gaps[:2], gap_trend(gaps[:2]))  # two sizes: the line, no check
    assert [label for label in axes.get_legend_handles_labels()[1] if "does not fit" in label or "last step" in label] == []
