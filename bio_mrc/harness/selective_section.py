"""The report's selective-QA section: for every SQuAD cell and each of its confidences (the decoding's
raw one, and the calibrated ``probability`` that ``AnswerExtractor`` and the pipeline return), what
answering only when confident buys: the risk–coverage curve, AURC, coverage at 80% and 90% accuracy,
ECE overall and on the wrong answers, MacroCE; and the contrasts' AURC differences with paired
bootstrap intervals. Definitions: :mod:`bio_mrc.metrics.selective`."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..metrics.calibration_error import expected_calibration_error
from ..metrics.selective import (
    TARGET_ACCURACIES, RankedAnswers, aurc, aurc_of_drawn, coverage_at_accuracy, excess_aurc, macro_calibration_error, ranked_answers,
    risk_coverage, subsample_curve,
)
from ..progress import resamples_planned
from .cell_key import CellKey
from .results import Cell
from .selective_records import AurcContrast, ConfidenceMeasures, RiskCoverageCurve, SelectiveSummary
from ..metrics.stats import (
    BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, format_p_value, format_present, paired_bootstrap_of_resamples, resampled_statistics,
)

KINDS = ("raw", "calibrated")
RISK_COVERAGE_PLOT = "risk–coverage curves"  # the key of the figure in the report's plots
CURVE_POINTS = 200  # report.json keeps each curve at most this long
BOOTSTRAP_CHUNK = 2_000_000  # resampled question indices held at once (memory, not results)


def _arrays(cell: Cell, kind: str) -> tuple[np.ndarray, np.ndarray]:
    selective = cell.selective
    return np.asarray(selective["confidence"][kind], dtype=np.float64), np.asarray(selective["right"], dtype=np.float64)


def _has(cells: list[Cell], kind: str) -> bool:
    """Whether every cell has this confidence (no calibrated one without a calibrator)."""
    return all(kind in cell.selective["confidence"] for cell in cells)


def _number(value: float) -> float | None:
    return None if np.isnan(value) else float(value)  # nan (no right or no wrong answer) is null in JSON


def measure(confidence: np.ndarray, right: np.ndarray) -> dict[str, float | None]:
    """One seed's numbers for one confidence."""
    macro = macro_calibration_error(confidence, right)
    coverage = {f"coverage_at_{round(100 * t)}": coverage_at_accuracy(confidence, right, t) for t in TARGET_ACCURACIES}
    return {"aurc": aurc(confidence, right), "excess_aurc": excess_aurc(confidence, right), **coverage,
            "ece": expected_calibration_error(confidence, right),
            **{key: _number(value) for key, value in macro.items()}}


def _cell_summary(cells: list[Cell]) -> dict[str, ConfidenceMeasures]:
    """Per confidence: each number per seed, and the first seed's curve (subsampled)."""
    summary = {}
    for kind in KINDS:
        if not _has(cells, kind):
            continue
        per_seed = [measure(*_arrays(cell, kind)) for cell in cells]
        curve = RiskCoverageCurve(**subsample_curve(risk_coverage(*_arrays(cells[0], kind)), CURVE_POINTS))
        summary[kind] = ConfidenceMeasures(**{key: [m[key] for m in per_seed] for key in per_seed[0]}, curve=curve)
    return summary


Drawn = dict[tuple[CellKey, int, str], tuple[float, np.ndarray]]  # (cell, seed, confidence): AURC, and on each resample


def _aurc_statistic(ranked: RankedAnswers, idx: np.ndarray) -> np.ndarray:
    return aurc_of_drawn(ranked, idx)


def _drawn_aurcs(grouped: dict[CellKey, list[Cell]], asked: Sequence[tuple[CellKey, CellKey, str]]) -> Drawn:
    """Each asked cell's AURC per seed and confidence, on every question and on each resample: drawn once for every
    contrast it is in, and once for the confidences that rank its answers alike (a calibrator keeping their order)."""
    ranked: dict[tuple[CellKey, int, str], RankedAnswers] = {}
    for a, b, kind in asked:
        seeds = {cell.seed for cell in grouped[a]} & {cell.seed for cell in grouped[b]}
        for key in (a, b):
            ranked.update({(key, cell.seed, kind): ranked_answers(*_arrays(cell, kind)) for cell in grouped[key] if cell.seed in seeds})
    distinct = {answers.key: answers for answers in ranked.values()}
    n = len(next(iter(ranked.values())).block)
    resampled = dict(zip(distinct, resampled_statistics(list(distinct.values()), _aurc_statistic, n, n_resamples=BOOTSTRAP_RESAMPLES,
                                                        seed=BOOTSTRAP_SEED, max_chunk_elements=BOOTSTRAP_CHUNK)))
    whole = {key: float(_aurc_statistic(answers, np.arange(n)[None, :])[0]) for key, answers in distinct.items()}
    return {item: (whole[answers.key], resampled[answers.key]) for item, answers in ranked.items()}


def _aurc_contrast(grouped: dict[CellKey, list[Cell]], a: CellKey, b: CellKey, kind: str, drawn: Drawn) -> AurcContrast | None:
    """AURC of cell ``a`` − cell ``b`` on the seeds both have, paired by seed and question (as the F1
    contrasts, ``BOOTSTRAP_RESAMPLES`` resamples, seed ``BOOTSTRAP_SEED``); None when they share no seed (AURC has no seed mean to pair)."""
    seeds_b = {cell.seed for cell in grouped[b]}
    shared = [cell.seed for cell in grouped[a] if cell.seed in seeds_b]
    if not shared:
        return None
    side_a, side_b = [drawn[a, seed, kind] for seed in shared], [drawn[b, seed, kind] for seed in shared]
    result = paired_bootstrap_of_resamples([v for v, _ in side_a], [v for v, _ in side_b], np.stack([r for _, r in side_a]),
                                           np.stack([r for _, r in side_b]), len(grouped[a][0].selective["right"]), seed=BOOTSTRAP_SEED)
    return AurcContrast(a=a, b=b, confidence=kind, seeds=shared, **result.to_dict())


def _shared(grouped: dict[CellKey, list[Cell]], a: CellKey, b: CellKey) -> bool:
    """Whether cells ``a`` and ``b`` share a seed: only then has their AURC a paired bootstrap."""
    return bool({cell.seed for cell in grouped[a]} & {cell.seed for cell in grouped[b]})


def selective_summary(grouped: dict[CellKey, list[Cell]], pairs: Sequence[tuple[CellKey, CellKey]]) -> SelectiveSummary | None:
    """Each cell's numbers and the AURC contrasts of ``pairs``; None without per-question confidences
    (MultiSpanQA, or cells cached before they were stored). The resamples join the open resample bar
    (:func:`bio_mrc.progress.resample_bar`)."""
    with_data = {key: cells for key, cells in grouped.items() if all(cell.selective is not None for cell in cells)}
    if not with_data:
        return None
    asked = [(a, b, kind) for a, b in pairs for kind in KINDS
             if a in with_data and b in with_data and _has(with_data[a] + with_data[b], kind) and _shared(with_data, a, b)]
    resamples_planned(BOOTSTRAP_RESAMPLES if asked else 0)  # one set of draws serves every contrast
    drawn = _drawn_aurcs(with_data, asked) if asked else {}
    contrasts = [contrast for a, b, kind in asked if (contrast := _aurc_contrast(with_data, a, b, kind, drawn))]
    return SelectiveSummary({key: _cell_summary(cells) for key, cells in with_data.items()}, contrasts)


def selective_section(selective: SelectiveSummary | None, plot: str | None) -> list[str]:
    """The report's Markdown: the per-cell table, the AURC contrasts, the figure."""
    if not selective:
        return []
    lines = ["", "## Selective QA: answering only when confident", "",
             "Answer a question only when the confidence clears a threshold: lowering the threshold answers more "
             "questions (coverage) at a lower accuracy (official F1 > 0.5) of the answered ones. **AURC** is the area "
             "under the risk–coverage curve, the mean over k = 1..n of the share wrong among the k most confident "
             "answers (Geifman & El-Yaniv 2017; tied confidences take the expected risk over their orders); lower is "
             "better; **E-AURC** subtracts the AURC of a perfect ranking (Geifman et al. 2019), leaving what the "
             "ranking loses. **Coverage at 80% / 90%** is the largest share answerable with that accuracy (0 if none). "
             "**ECE** is over 10 equal-width bins; **ECE wrong** is the ECE of the wrong answers alone, their mean "
             "confidence; **MacroCE** is the mean of that and of the right answers' mean 1 − confidence (Si et al., "
             "Findings of EMNLP 2022). *calibrated* is the `probability` that `AnswerExtractor` and the pipeline return; "
             "answers it gives probability p are right about a share p of the time, so a threshold on it sets the "
             "accuracy of the answers kept. With several seeds, mean ± sd.", "",
             "| cell | confidence | AURC | E-AURC | coverage at 80% | coverage at 90% | ECE | ECE wrong | MacroCE |",
             "|---|---|---|---|---|---|---|---|---|"]
    for key, kinds in selective.cells.items():
        for kind, m in kinds.items():
            lines.append(f"| {key} | {kind} | {format_present(m.aurc, 3)} | {format_present(m.excess_aurc, 3)} | "
                         f"{format_present(m.coverage_at_80, 1, 100)}% | {format_present(m.coverage_at_90, 1, 100)}% | "
                         f"{format_present(m.ece, 3)} | {format_present(m.ice_wrong, 3)} | "
                         f"{format_present(m.macro_ce, 3)} |")
    if selective.contrasts:
        lines += ["", "AURC of the contrasts, A − B (negative: A ranks its answers better), 95% paired bootstrap over the "
                  f"questions (and the seeds both cells share), {BOOTSTRAP_RESAMPLES} resamples, p unadjusted:", "",
                  "| A | B | confidence | AURC A − B | 95% CI | p |", "|---|---|---|---|---|---|"]
        for c in selective.contrasts:
            lines.append(f"| {c.a} | {c.b} | {c.confidence} | {c.diff:+.4f} | "
                         f"[{c.ci_low:+.4f}, {c.ci_high:+.4f}] | {format_p_value(c.p_value)} |")
    if plot:
        lines += ["", f"![{RISK_COVERAGE_PLOT}]({plot})"]
    return lines
