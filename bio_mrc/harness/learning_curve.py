"""A comparison's learning curve: the task's main statistic (SQuAD's F1, MultiSpanQA's EM F1) against training
questions, and the trend of the BIO − span gap.

Built from a report's summary when its runs trained on at least two numbers of questions (see
``benchmarks/ablations/learning_curve.json``). Pure functions of the summary's rows and paired
differences, and the report's Markdown section; :func:`bio_mrc.harness.plots.plot_learning_curve` draws it.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from ..plurals import counted
from .cell_key import CellKey
from .learning_curve_records import CurvePoint, Gap, GapTrend, LastStep, LearningCurve
from ..metrics.stats import Interval
from .statistics_records import Contrast
from .summary_records import Row

Z_95 = 1.959963984540054  # a 95% normal interval is ± Z_95 standard errors
GAP_DECODINGS = ("bio", "span")  # the gap the curve follows: the BIO decoding minus the span decoding of one model


def learning_curve(
    rows: Sequence[Row], intervals: Mapping[CellKey, Interval], comparisons: Sequence[Contrast], heads_by_run: Mapping[str, str],
    statistic: str = "f1", statistic_title: str = "F1",
) -> LearningCurve | None:
    """Each cell as a point (training questions, the task's main statistic with its interval), the curves of the runs
    that share their heads, the BIO − span gap of every run with both decodings, and the gap's trend. None when the
    runs trained on fewer than two numbers of questions."""
    if len({row.train_questions for row in rows} - {None}) < 2:
        return None
    points = [_point(row, intervals[row.cell], heads_by_run[row.run], statistic) for row in rows if row.train_questions]
    runs = list(dict.fromkeys(p.run for p in points))
    decodings = list(dict.fromkeys(p.decoding for p in points))  # the report's order (span, bio, joint)
    points.sort(key=lambda p: (p.train_questions, runs.index(p.run), decodings.index(p.decoding)))
    curves: dict[str, list[CurvePoint]] = {}
    for point in points:
        curves.setdefault(f"{point.heads} · {point.decoding}", []).append(point)
    gaps = [_gap(run, point.train_questions, comparisons) for run, point in _runs_with_both(points)]
    return LearningCurve(points=points, curves={name: curve for name, curve in curves.items() if len({p.train_questions for p in curve}) > 1},
                         gaps=gaps, gap_trend=gap_trend(gaps), statistic=statistic_title)


def _point(row: Row, interval: Interval, heads: str, statistic: str) -> CurvePoint:
    f1 = np.asarray(row.scores[statistic], dtype=np.float64)
    return CurvePoint(row.cell, heads, int(row.train_questions), list(row.seeds), float(f1.mean()),
                      float(f1.std(ddof=1)) if len(f1) > 1 else None, float(interval.ci_low), float(interval.ci_high))


def _runs_with_both(points: Sequence[CurvePoint]) -> list[tuple[str, CurvePoint]]:
    """The runs decoded both ways (a joint model), each with one of its points, in curve order."""
    decodings: dict[str, set[str]] = {}
    first: dict[str, CurvePoint] = {}
    for point in points:
        decodings.setdefault(point.run, set()).add(point.decoding)
        first.setdefault(point.run, point)
    return [(run, first[run]) for run in first if set(GAP_DECODINGS) <= decodings[run]]


def _gap(run: str, train_questions: int, comparisons: Sequence[Contrast]) -> Gap:
    """``run``'s BIO − span paired difference, from whichever order the comparison holds it in."""
    bio, span = (CellKey(run, decoding) for decoding in GAP_DECODINGS)
    for c in comparisons:
        if (c.a, c.b) in ((bio, span), (span, bio)):
            sign = 1.0 if c.a == bio else -1.0
            low, high = sorted((sign * c.ci_low, sign * c.ci_high))
            return Gap(run, train_questions, sign * c.diff, low, high, c.seeds, c.resampling)
    raise ValueError(f"no paired difference between {bio} and {span} among the comparisons")


def gap_trend(gaps: Sequence[Gap]) -> GapTrend | None:
    """Weighted least squares of the gap on log10(training questions), each gap weighted by 1/SE² (SE from
    its 95% interval), and where the fitted line crosses zero. None with fewer than two sizes."""
    if len({g.train_questions for g in gaps}) < 2:
        return None
    x = np.log10([g.train_questions for g in gaps])
    y = np.array([g.diff for g in gaps])
    se = np.array([max((g.ci_high - g.ci_low) / (2 * Z_95), 1e-6) for g in gaps])
    w = 1.0 / se**2
    x_mean = np.sum(w * x) / w.sum()
    sxx = np.sum(w * (x - x_mean) ** 2)
    slope = float(np.sum(w * (x - x_mean) * (y - np.sum(w * y) / w.sum())) / sxx)
    intercept = float(np.sum(w * y) / w.sum() - slope * x_mean)
    slope_se = float(np.sqrt(1.0 / sxx))  # the gaps' own errors; with 2 sizes the line fits them exactly
    largest = float(x.max())
    fitted_at_largest = intercept + slope * largest
    trend = dict(slope_per_decade=slope, slope_ci=[slope - Z_95 * slope_se, slope + Z_95 * slope_se], intercept=intercept,
                 sizes=int(len(set(x.tolist()))), fitted_gap_at_largest=float(fitted_at_largest),
                 **_residual_check(x, y, w, slope, intercept), last_step=_last_step(x, y, w))
    if fitted_at_largest >= 0:
        return GapTrend(**trend, closes="closed", closing_questions=None)
    if slope <= 0:
        return GapTrend(**trend, closes="never", closing_questions=None)
    return GapTrend(**trend, closes="extrapolated", closing_questions=_power_of_ten(-intercept / slope))


def _power_of_ten(exponent: float) -> float:
    """``10 ** exponent``, infinity beyond the largest float (a slope a hair above 0 closes the gap at 10^3000 questions)."""
    try:
        return float(10.0 ** exponent)
    except OverflowError:
        return math.inf


def _residual_check(x: np.ndarray, y: np.ndarray, w: np.ndarray, slope: float, intercept: float) -> dict[str, Any]:
    """Whether the gaps lie on one line within their errors: the weighted residuals' χ² on n − 2 degrees of
    freedom and its p-value (None with two gaps, which a line always fits)."""
    from scipy.stats import chi2  # scikit-learn's dependency

    dof = len(x) - 2
    chi_square = float(np.sum(w * (y - intercept - slope * x) ** 2))
    return {"residual_chi2": chi_square, "residual_dof": dof, "lack_of_fit_p": float(chi2.sf(chi_square, dof)) if dof > 0 else None}


def _last_step(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> LastStep | None:
    """The gap's change per 10× between the two largest sizes (gaps of one size pooled by their weights), the
    line through those two (its intercept at 1 question), and where it would reach zero: the extrapolation
    that assumes least."""
    sizes = np.unique(x)[-2:]
    if len(sizes) < 2:
        return None
    gaps = [float(np.sum(w[x == size] * y[x == size]) / np.sum(w[x == size])) for size in sizes]
    slope = (gaps[1] - gaps[0]) / float(sizes[1] - sizes[0])
    closing = _power_of_ten(float(sizes[1]) - gaps[1] / slope) if slope > 0 and gaps[1] < 0 else None
    return LastStep(float(10 ** sizes[0]), float(10 ** sizes[1]), slope, gaps[1] - slope * float(sizes[1]), closing)


def describe_trend(trend: GapTrend | None, statistic: str = "F1") -> str:
    """One paragraph for the report on what the gap's trend says (in ``statistic``, the task's main one), and how far to trust it."""
    if trend is None:
        return "The BIO − span gap was measured at one size only: no trend."
    slope_low, slope_high = trend.slope_ci
    text = (f"Weighted least squares of the gap on log10(training questions), each gap weighted by 1/SE² from its "
            f"interval, over {trend.sizes} sizes: the gap changes by {trend.slope_per_decade:+.2f} {statistic} per 10× "
            f"more questions (95% CI [{slope_low:+.2f}, {slope_high:+.2f}] from the gaps' own errors")
    text += "; two sizes fit a line exactly, so the slope has no residual check). " if trend.sizes == 2 else "). "
    # Each verdict comes from the line, so each is followed by the check of whether the gaps lie on one.
    if trend.closes == "closed":
        text += "At the largest size the fitted gap is already ≥ 0: BIO has caught up with span."
        return text + _describe_fit(trend, statistic, "this verdict")
    if trend.closes == "never":
        text += "The gap does not shrink with more questions: on this trend BIO never catches up."
        return text + _describe_fit(trend, statistic, "this verdict")
    flat = " The slope's interval includes 0, so a flat gap fits these points too." if slope_low <= 0 else ""
    text += (f"If the trend holds, the gap closes {_closing_size(trend.closing_questions)} training questions; "
             f"an extrapolation in log-questions beyond the measured sizes.{flat}")
    return text + _describe_fit(trend, statistic, "the closing size above")


def _describe_fit(trend: GapTrend, statistic: str, verdict: str) -> str:
    """The residual check, and when the line does not fit, that ``verdict`` (what the line said) is not to be trusted
    and the slope of the last step instead."""
    p = trend.lack_of_fit_p
    if p is None:
        return ""
    text = f" Residual check: χ² = {trend.residual_chi2:.1f} on {counted(trend.residual_dof, 'degree')} of freedom, p = {p:.3g}"
    if p >= 0.05:
        return text + ": the gaps are consistent with one line in log-questions."
    step = trend.last_step
    text += (f": **the gaps do not lie on one line** in log-questions, so {verdict} is not to be trusted. "
             f"Between the two largest sizes ({step.from_questions:,.0f} and {step.to_questions:,.0f} questions) "
             f"the gap changes by {step.slope_per_decade:+.2f} {statistic} per 10×")
    if step.closing_questions is None:
        reached = step.intercept + step.slope_per_decade * math.log10(step.to_questions)
        if reached >= 0:  # no closing size ahead, since the gap has closed at the largest size
            return text + f", to {reached:+.2f} {statistic} at the largest size: there BIO has caught up."
        return text + ", and at that rate it does not close."
    return text + f"; at that rate it would close {_closing_size(step.closing_questions)} training questions."


def _closing_size(questions: float) -> str:
    return f"at about {questions:,.0f}" if math.isfinite(questions) else "only beyond 10^308"


def learning_curve_section(curve: LearningCurve | None, plot: str | None) -> list[str]:
    """The report's section: the task's main statistic of every decoding against training questions, the BIO − span gap per size,
    its trend and the figure (``plot``, a file name beside the report)."""
    if not curve:
        return []
    decodings = list(dict.fromkeys(p.decoding for p in curve.points))
    gaps = {g.run: g for g in curve.gaps}
    lines = [f"## Learning curve: {curve.statistic} against training questions", "",
             "Mean ± sd over a run's seeds, [95% interval]; the gap is the paired BIO − span difference of the same "
             "model (seeds × questions with several seeds, questions with one).", "",
             "| training questions | run | seeds | " + " | ".join(decodings) + " | BIO − span [95% CI] |",
             "|---|---|---|" + "---|" * len(decodings) + "---|"]
    runs = list(dict.fromkeys((p.train_questions, p.run) for p in curve.points))
    for questions, run in runs:
        points = {p.decoding: p for p in curve.points if p.run == run}
        cells = [_curve_cell(points[d]) if d in points else "–" for d in decodings]
        gap = gaps.get(run)
        gap_text = f"{gap.diff:+.2f} [{gap.ci_low:+.2f}, {gap.ci_high:+.2f}]" if gap else "–"
        seeds = ", ".join(map(str, next(iter(points.values())).seeds))
        lines.append(f"| {questions:,} | {run} | {seeds} | " + " | ".join(cells) + f" | {gap_text} |")
    lines += ["", describe_trend(curve.gap_trend, curve.statistic)]
    if plot:
        lines += ["", f"![{curve.statistic} and the BIO − span gap against training questions]({plot})"]
    return lines + [""]


def _curve_cell(point: CurvePoint) -> str:
    spread = f" ± {point.f1_sd:.2f}" if point.f1_sd is not None else ""
    return f"{point.f1:.2f}{spread} [{point.ci_low:.1f}, {point.ci_high:.1f}]"
