"""PNG figures for the comparison report (matplotlib Agg, imported lazily)."""

from __future__ import annotations

import io
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..io import atomic_write_bytes
from .cell_key import CellKey
from .learning_curve_records import CurvePoint, Gap, GapTrend, LastStep, LearningCurve
from .selective_records import RiskCoverageCurve

__all__ = ["plot_breakdown", "plot_cell_scores", "plot_learning_curve", "plot_reliability", "plot_risk_coverage", "plot_threshold_curve",
           "plot_training_loss"]

_DPI = 120


def _new_figure(figsize: tuple[float, float]) -> Any:
    """A pyplot-free Figure on an Agg canvas (no global state, no display), laid out by matplotlib's constrained
    layout when drawn: legends beside the axes, titles and the footnote get room on the page."""
    _import_matplotlib_leaving_no_cache()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, dpi=_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _import_matplotlib_leaving_no_cache() -> None:
    """matplotlib lists the machine's fonts when it is first imported and caches the list in the user's folders
    (``~/.cache/matplotlib``, and an empty ``~/.config/matplotlib``); the figures use its bundled font alone, so the list
    is made in a temporary folder removed once it is read. A ``MPLCONFIGDIR`` of the user's is used as set."""
    if "matplotlib" in sys.modules or "MPLCONFIGDIR" in os.environ:
        return
    with tempfile.TemporaryDirectory(prefix="bio_mrc-matplotlib-") as folder:
        os.environ["MPLCONFIGDIR"] = folder
        try:
            import matplotlib.font_manager  # noqa: F401  (reads its config and lists the fonts now)
        finally:
            del os.environ["MPLCONFIGDIR"]


def _save(fig: Any, path: str | Path) -> Path:
    """The figure drawn once (its layout run inside the draw) and its pixels saved as a paletted PNG: savefig draws
    a figure twice where it has a layout engine or crops to ``bbox_inches="tight"``, and writes a PNG only to have
    it read back here."""
    from PIL import Image  # matplotlib's own dependency

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.canvas.draw()
    image = Image.fromarray(np.asarray(fig.canvas.buffer_rgba())).convert("RGB")
    return atomic_write_bytes(out, paletted_png(image))  # a crash never leaves a half-written PNG


def paletted_png(image: Any) -> bytes:
    """An RGB image as a PNG with a palette of 256 colours: a plot is a few flat colours and their anti-aliased
    edges, so it looks the same in a third of the bytes (reports are committed, and a repository stays small).

    The palette covers the colours by count (maximum coverage): every pixel stays within a few levels of its colour,
    where median cut gives a rare edge colour another hue. Its indices pack at zlib's default level about as small as
    median cut's at the highest level (``optimize``; benchmarks/bench_report_figures.py)."""
    from PIL import Image

    paletted = image.quantize(colors=256, method=Image.Quantize.MAXCOVERAGE, dither=Image.Dither.NONE)
    buffer = io.BytesIO()
    paletted.save(buffer, format="png", compress_level=6)  # zlib's default level
    return buffer.getvalue()


_SERIES_PER_PANEL = 4  # more series than this are faceted: one panel per run, its decodings in it
_MAX_COLUMNS = 3
_LINE_STYLES = ("-", "--", ":", "-.")
_MARKERS = ("o", "s", "^", "D", "v", "P")


def _grid(n_panels: int, panel_size: tuple[float, float], max_columns: int = _MAX_COLUMNS) -> tuple[Any, list[Any]]:
    """A figure of ``n_panels`` panels in rows of at most ``max_columns``, sharing the y axis."""
    columns = min(n_panels, max_columns)
    rows = -(-n_panels // columns)
    fig = _new_figure((panel_size[0] * columns + 0.6, panel_size[1] * rows + 0.4))
    axes = [fig.add_subplot(rows, columns, 1)]
    axes += [fig.add_subplot(rows, columns, k + 1, sharey=axes[0]) for k in range(1, n_panels)]
    return fig, axes


def _panels(keys: list[CellKey]) -> dict[str, list[CellKey]]:
    """Cells in panels: one panel when few, else one panel per run (titled by it)."""
    if len(keys) <= _SERIES_PER_PANEL:
        return {"": keys}
    by_run: dict[str, list[CellKey]] = {}
    for key in keys:
        by_run.setdefault(key.run, []).append(key)
    return by_run


def _series(key: CellKey, faceted: bool) -> str:
    """A cell's name in a panel's legend: its decoding in a run's panel, else ``run/decoding``."""
    return key.decoding if faceted else str(key)


def _style(key: CellKey, series: list[str], faceted: bool) -> dict[str, Any]:
    """One colour, line style and marker per decoding (per series in a single panel), so series stay
    apart beyond the palette's ten colours and in grey print."""
    k = series.index(_series(key, faceted))
    return {"color": f"C{k % 10}", "linestyle": _LINE_STYLES[k % len(_LINE_STYLES)], "marker": _MARKERS[k % len(_MARKERS)],
            "label": _series(key, faceted)}


def plot_breakdown(
    breakdown_for_one_axis: Mapping[CellKey, Mapping[str, Mapping[str, float]]],
    title: str,
    xlabel: str,
    path: str | Path,
) -> Path:
    """Mean F1 per group with its 95% interval, one styled line per cell; many cells are faceted by run.
    Each group's question count is under its tick; a group under ``SMALL_GROUP`` questions is marked †
    and drawn hollow.

    Input is ``{cell: {group: {"n", "mean", "ci_low", "ci_high"}}}`` (one axis of
    :func:`bio_mrc.harness.groups.breakdown`); groups are plotted in the order of first appearance.
    """
    from .groups import SMALL_GROUP

    counts: dict[str, int] = {}
    for cells in breakdown_for_one_axis.values():
        for label, cell in cells.items():
            counts.setdefault(label, int(cell["n"]))
    if not counts:
        raise ValueError("nothing to plot" if not breakdown_for_one_axis else "breakdown has no groups")
    groups, x = list(counts), np.arange(len(counts))
    small = np.array([counts[g] < SMALL_GROUP for g in groups])
    panels = _panels(list(breakdown_for_one_axis))
    faceted = len(panels) > 1
    decodings = list(dict.fromkeys(_series(key, faceted) for key in breakdown_for_one_axis))
    fig, axes = _grid(len(panels), (max(4.5, 0.8 * len(groups) + 1.5), 3.8))
    for ax, (run, keys) in zip(axes, panels.items()):
        for key in keys:
            cells, style = breakdown_for_one_axis[key], _style(key, decodings, faceted)
            mean, low, high = (np.array([float(cells[g][k]) if g in cells else np.nan for g in groups])
                               for k in ("mean", "ci_low", "ci_high"))
            ax.errorbar(x, mean, yerr=[mean - low, high - mean], capsize=3, linewidth=1.2, markersize=5, **style)
            # Above errorbar's own line (z-order 2.1), whose filled marker and bar would fill the hollow one.
            ax.plot(x[small], mean[small], linestyle="none", marker=style["marker"], markersize=7,
                    markerfacecolor="white", markeredgecolor=style["color"], zorder=3)
        ax.set_xticks(x)
        ax.set_xticklabels([f"{g}{' †' if s else ''}\nn={counts[g]}" for g, s in zip(groups, small)], fontsize="small")
        ax.set_xlabel(xlabel)
        ax.set_title(run or title, fontsize="medium")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(loc="best", fontsize="x-small")
    axes[0].set_ylabel("mean F1 (95% interval)")
    if faceted:
        fig.suptitle(title)
    if small.any():
        # A footnote under every panel: the figure's x label is the text the constrained layout makes room for there.
        fig.supxlabel(f"† under {SMALL_GROUP} questions: a wide interval (hollow markers)", x=0.01, ha="left", fontsize="small")
    return _save(fig, path)


def plot_cell_scores(intervals: Mapping[CellKey, Any], title: str, ylabel: str, path: str | Path) -> Path:
    """Each cell's score with its interval as error bars, one colour per decoding.

    Input is ``{cell: interval}`` (the ``intervals`` of the report's summary: :class:`~bio_mrc.metrics.stats.Interval`);
    cells are plotted in order, the value written above each bar. Returns the PNG path.
    """
    _import_matplotlib_leaving_no_cache()
    from matplotlib.patches import Patch

    if not intervals:
        raise ValueError("nothing to plot")
    keys = list(intervals)
    labels = [str(key) for key in keys]
    value = np.array([float(intervals[key].value) for key in keys])
    low = np.array([float(intervals[key].ci_low) for key in keys])
    high = np.array([float(intervals[key].ci_high) for key in keys])
    decodings = list(dict.fromkeys(key.decoding for key in keys))
    colours = [f"C{decodings.index(key.decoding) % 10}" for key in keys]
    x = np.arange(len(labels))

    fig = _new_figure((max(5.0, 0.8 * len(labels) + 2.5), 4.2))
    ax = fig.add_subplot(1, 1, 1)
    ax.bar(x, value, width=0.6, color=colours, alpha=0.8)
    ax.errorbar(x, value, yerr=[value - low, high - value], fmt="none", ecolor="black", capsize=4, linewidth=1.0)
    for xi, v, h in zip(x, value, high):
        ax.annotate(f"{v:.1f}", (xi, h), textcoords="offset points", xytext=(0, 3), ha="center", fontsize="small")
    ax.set_xticks(x)
    ax.set_xticklabels(labels, rotation=30 if len(labels) > 4 else 0, ha="right" if len(labels) > 4 else "center")
    ax.set_ylabel(ylabel)
    ax.set_ylim(min(0.0, float(low.min())), float(high.max()) * 1.08 + 1.0)  # room for the values
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(handles=[Patch(color=f"C{i % 10}", label=d) for i, d in enumerate(decodings)], title="decoding",
              loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    return _save(fig, path)


def plot_threshold_curve(
    thresholds: np.ndarray, f1: np.ndarray, best: float, title: str, path: str | Path
) -> Path:
    """F1 as a function of the no-answer threshold, the chosen ``best`` threshold marked."""
    t = np.asarray(thresholds, dtype=np.float64).ravel()
    y = np.asarray(f1, dtype=np.float64).ravel()
    if t.shape != y.shape or t.size == 0:
        raise ValueError(f"thresholds and f1 must be non-empty and equal in length: {t.shape} vs {y.shape}")
    order = np.argsort(t, kind="stable")
    t, y = t[order], y[order]
    best_f1 = float(np.interp(best, t, y))

    fig = _new_figure((6.0, 4.0))
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(t, y, color="C0", label="F1")
    ax.axvline(best, color="C3", linestyle="--", linewidth=1.0)
    ax.plot([best], [best_f1], marker="o", color="C3", label=f"chosen {best:.3g} (F1 {best_f1:.2f})")
    ax.set_xlabel("no-answer threshold")
    ax.set_ylabel("F1")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return _save(fig, path)


def plot_reliability(diagrams: Mapping[CellKey, Mapping[str, Mapping[str, Any]]], path: str | Path) -> Path:
    """Reliability diagrams, one panel per cell in rows of four: accuracy against mean confidence per bin,
    raw and calibrated, with the diagonal of perfect calibration; marker area grows with the bin's count.

    Input is ``{cell: {"raw": bins, "calibrated": bins}}`` with bins as the cells store them
    (``bin_count``, ``bin_confidence``, ``bin_accuracy``; ``None`` for an empty bin).
    """
    if not diagrams:
        raise ValueError("nothing to plot")
    fig, axes = _grid(len(diagrams), (3.4, 3.6), max_columns=4)
    for k, (ax, (key, kinds)) in enumerate(zip(axes, diagrams.items())):
        ax.plot([0, 1], [0, 1], color="grey", linewidth=0.8, linestyle="--")
        for colour, (kind, bins) in zip(("C3", "C0"), kinds.items()):
            filled = [i for i, n in enumerate(bins["bin_count"]) if n]
            x = [bins["bin_confidence"][i] for i in filled]
            y = [bins["bin_accuracy"][i] for i in filled]
            sizes = [12 + 120 * bins["bin_count"][i] / max(bins["bin_count"]) for i in filled]
            ax.plot(x, y, color=colour, linewidth=1.0, label=f"{kind} (ECE {bins['ece']:.3f})")
            ax.scatter(x, y, s=sizes, color=colour, alpha=0.7)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("confidence")
        if k % 4 == 0:
            ax.set_ylabel("accuracy (F1 > 0.5)")
        ax.set_title(str(key), fontsize="medium")
        ax.legend(loc="upper left", fontsize="x-small")
        ax.grid(True, alpha=0.3)
    return _save(fig, path)


def plot_risk_coverage(curves: Mapping[CellKey, Mapping[str, RiskCoverageCurve]], targets: Any, path: str | Path) -> Path:
    """Risk–coverage curves of the raw confidence, one styled line per cell (many cells faceted by run):
    accuracy of the answered questions against the share answered, dotted lines at the ``targets``
    accuracies. A calibrator is monotone, so it keeps the ranking (but for ties where it saturates) and the
    calibrated curve is the raw one.

    Input is ``{cell: {"raw": curve, ...}}``, each curve subsampled (:func:`bio_mrc.metrics.selective.subsample_curve`).
    """
    raw = {key: per_cell["raw"] for key, per_cell in curves.items() if "raw" in per_cell}
    if not raw:
        raise ValueError("nothing to plot")
    panels = _panels(list(raw))
    faceted = len(panels) > 1
    decodings = list(dict.fromkeys(_series(key, faceted) for key in raw))
    fig, axes = _grid(len(panels), (4.4, 3.8))
    for k, (ax, (run, keys)) in enumerate(zip(axes, panels.items())):
        for key in keys:
            style = {**_style(key, decodings, faceted), "marker": None}
            ax.plot(raw[key].coverage, raw[key].accuracy, linewidth=1.3, **style)
        for target in targets:
            ax.axhline(target, color="grey", linewidth=0.8, linestyle=":")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("coverage (share answered)")
        if k % _MAX_COLUMNS == 0:
            ax.set_ylabel("accuracy of the answered (F1 > 0.5)")
        ax.set_title(run or "raw confidence", fontsize="medium")
        ax.legend(loc="lower left", fontsize="x-small")
        ax.grid(True, alpha=0.3)
    if faceted:
        fig.suptitle("risk–coverage, raw confidence (dotted: the target accuracies)")
    return _save(fig, path)


def plot_learning_curve(curve: LearningCurve, path: str | Path) -> Path:
    """Left: the task's main statistic against training questions (log scale), one line per heads · decoding with
    ≥ 2 sizes and a marker for each other cell, error bars the 95% intervals. Right: the BIO − span gap with its paired
    95% interval per size and the fitted trend, extended to where it closes (the ``learning_curve`` of
    the report's summary)."""
    fig = _new_figure((11.0, 4.2))
    ax = fig.add_subplot(1, 2, 1)
    decodings = list(dict.fromkeys(p.decoding for p in curve.points))
    on_curves = set()
    for k, (name, points) in enumerate(curve.curves.items()):
        _errorbar(ax, points, f"C{decodings.index(points[0].decoding) % 10}", name, "-o" if k < 10 else "-s")
        on_curves.update(p.cell for p in points)
    for p in (p for p in curve.points if p.cell not in on_curves):
        _errorbar(ax, [p], f"C{decodings.index(p.decoding) % 10}", f"{p.run} · {p.decoding}", "D")
    _questions_axis(ax, [p.train_questions for p in curve.points])
    ax.set_ylabel(curve.statistic)
    ax.set_title(f"{curve.statistic} against training questions")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize="x-small")
    _plot_gap(fig.add_subplot(1, 2, 2), curve.gaps, curve.gap_trend, curve.statistic)
    return _save(fig, path)


def _questions_axis(ax: Any, sizes: Any) -> None:
    """A log axis of training questions, ticked at the measured sizes and written out in full."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(sorted(set(float(n) for n in sizes))))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("training questions (log scale)")


def _errorbar(ax: Any, points: list[CurvePoint], colour: str, label: str, style: str) -> None:
    x = [p.train_questions for p in points]
    y = np.array([p.f1 for p in points])
    low, high = np.array([p.ci_low for p in points]), np.array([p.ci_high for p in points])
    ax.errorbar(x, y, yerr=[y - low, high - y], fmt=style, color=colour, capsize=3, markersize=4, linewidth=1.0, label=label)


def _plot_trend(ax: Any, x: np.ndarray, line: GapTrend | LastStep, start: float, closing: float | None, label: str, style: str = "--") -> None:
    """A line in log-questions from ``start`` on, and where it reaches zero (``closing``, None: not drawn)."""
    end = x.max() if closing is None else max(x.max(), min(closing, 1e3 * x.max()))
    line_x = np.logspace(np.log10(start), np.log10(end), 50)
    ax.plot(line_x, line.intercept + line.slope_per_decade * np.log10(line_x), style, color="C1", linewidth=1.0, label=label)
    if closing is not None and closing <= end:
        ax.plot([closing], [0.0], "x", color="C3", label=f"closes at ≈ {closing:,.0f} (extrapolated)")


def _plot_gap(ax: Any, gaps: list[Gap], trend: GapTrend | None, statistic: str = "F1") -> None:
    x = np.array([g.train_questions for g in gaps], dtype=np.float64)
    y = np.array([g.diff for g in gaps])
    low, high = np.array([g.ci_low for g in gaps]), np.array([g.ci_high for g in gaps])
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.errorbar(x, y, yerr=[y - low, high - y], fmt="o", color="C1", capsize=3, label="BIO − span (paired 95% CI)")
    if trend is not None:
        misfit = trend.lack_of_fit_p is not None and trend.lack_of_fit_p < 0.05
        _plot_trend(ax, x, trend, x.min(), None if misfit else trend.closing_questions,
                    f"straight line {trend.slope_per_decade:+.2f} {statistic} per 10×" + (" (does not fit)" if misfit else ""))
        if misfit and trend.last_step is not None:  # the report then extrapolates the last step instead
            step = trend.last_step
            _plot_trend(ax, x, step, step.from_questions, step.closing_questions, f"last step {step.slope_per_decade:+.2f} {statistic} per 10×", style=":")
    _questions_axis(ax, x)
    ax.set_ylabel(f"{statistic} difference")
    ax.set_title("BIO − span gap (joint models)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize="x-small")


def plot_training_loss(curves: Mapping[str, list[Mapping[str, Any]]], path: str | Path, columns: int = 3) -> Path:
    """A grid of panels, one per run (``columns`` across), each with the loss against step of every seed or
    fold; the panels share their axes, so runs compare at a glance however many there are."""
    runs = list(curves)
    ncols = min(columns, len(runs))
    nrows = -(-len(runs) // ncols)
    fig = _new_figure((3.6 * ncols, 2.6 * nrows + 0.4))
    axes = fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False)
    for index, ax in enumerate(axes.flat):
        if index >= len(runs):
            ax.set_visible(False)
            continue
        for k, line in enumerate(curves[runs[index]]):
            fold = f", fold {line['fold'] + 1}" if line.get("fold") is not None else ""
            ax.plot(line["steps"], line["loss"], color=f"C{k % 10}", linestyle=("-", "--", ":")[k // 10 % 3], linewidth=1.2,
                    label=f"seed {line['seed']}{fold}")
        ax.set_title(runs[index], fontsize="small")
        ax.grid(True, alpha=0.3)
        if len(curves[runs[index]]) > 1:
            ax.legend(fontsize="x-small", loc="upper right")
        if index % ncols == 0:
            ax.set_ylabel("training loss")
        if index >= len(runs) - ncols:
            ax.set_xlabel("optimizer step")
            ax.xaxis.set_tick_params(labelbottom=True)
    return _save(fig, path)
