"""Pure statistics for the comparison report and ``bio-mrc evaluate --baseline`` (question groups and their
breakdowns: :mod:`bio_mrc.harness.groups`).

Every per-question score array handled here is aligned to one fixed list of
questions: index ``q`` is the same question in every array; with several seeds,
arrays are ``(seeds, questions)`` and row ``s`` is the same seed in every array.
All functions are pure and numpy-vectorised.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .bootstrap_settings import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED

__all__ = [
    "BootstrapResult",
    "DEFAULT_MAX_CHUNK_ELEMENTS",
    "Interval",
    "agreement",
    "format_mean_sd",
    "format_present",
    "holm",
    "mean_sd",
    "paired_bootstrap",
    "paired_bootstrap_ratio",
    "paired_bootstrap_of_resamples",
    "paired_bootstrap_recomputed",
    "resampled_statistics",
    "resampling",
    "score_interval",
    "two_level_bootstrap",
]

#: Resample index matrices larger than this many elements are drawn in row chunks.
DEFAULT_MAX_CHUNK_ELEMENTS = 20_000_000
# Resamples drawn at once, whatever the elements allow: a bar of the resamples moves a chunk at a time, and a chunk's
# arrays stay small (the draws are the same in any chunks).
RESAMPLES_A_CHUNK = 100

# A resampled difference that is 0 in exact arithmetic can come out of float summation as ±1e-17 (0.1 + 0.5 - 0.6):
# within this share of the scores' scale (at least 1) it is a tie, which counts on both sides of the p-value.
TIE_TOLERANCE = 1e-12


@dataclass(frozen=True)
class BootstrapResult:
    """Outcome of a paired bootstrap of ``mean(a) - mean(b)`` over questions (and seeds: ``n_seeds > 1``)."""

    mean_a: float
    mean_b: float
    diff: float
    ci_low: float
    ci_high: float
    p_value: float
    significant: bool
    n_questions: int
    n_resamples: int
    n_seeds: int = 1

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable dict of the fields."""
        return asdict(self)


def as_scores(x: Any, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains non-finite values")
    return arr


def paired_bootstrap(
    scores_a: np.ndarray,
    scores_b: np.ndarray,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    confidence: float = 0.95,
    seed: int = BOOTSTRAP_SEED,
    *,
    max_chunk_elements: int = DEFAULT_MAX_CHUNK_ELEMENTS,
) -> BootstrapResult:
    """Paired bootstrap over questions of ``mean(a) - mean(b)``.

    Each resample draws ``n`` question indices with replacement; the SAME
    indices are applied to both arrays (that is the pairing), so the resampled
    statistic is the mean of the per-question differences ``a[q] - b[q]``.

    * CI: percentile interval of the resampled diffs at ``confidence``.
    * p_value: two-sided bootstrap p,
      ``min(1, 2 * min(frac(d* <= 0), frac(d* >= 0)))`` over resampled diffs
      ``d*``; 0.0 means "below 1 / n_resamples". A tie, ``|d*| <= 1e-12 * max(1, scale)`` (``scale`` the
      largest absolute score), counts on both sides, as an exact 0 does: float summation may leave ±1e-17 where
      the exact difference is 0.
    * significant: the CI excludes 0 (``ci_low > 0 or ci_high < 0``) and there is more than one
      observation; one question (of one seed) has no spread to resample: p 1, never significant.

    Indices are ``floor(u * n)`` with ``u`` uniform doubles from
    ``np.random.default_rng(seed)``; each double consumes exactly one draw of the
    bit stream, so drawing the ``(n_resamples, n)`` matrix in row chunks (done
    when ``n_resamples * n > max_chunk_elements``, and at most ``RESAMPLES_A_CHUNK`` rows at a time) gives
    bit-identical results to drawing it at once.
    """
    a = as_scores(scores_a, "scores_a")
    b = as_scores(scores_b, "scores_b")
    n = _check_pair(a, b, n_resamples, confidence, max_chunk_elements)
    d = a - b
    resampled = np.empty(n_resamples, dtype=np.float64)
    for rows, idx in _resample_indices(n, n_resamples, seed, max_chunk_elements):
        resampled[rows] = d[idx].mean(axis=1)
    return _bootstrap_result(float(a.mean()), float(b.mean()), float(d.mean()), resampled, confidence, n,
                             scale=_largest(a, b))


def _largest(a: np.ndarray, b: np.ndarray) -> float:
    """The scores' scale: their largest absolute value."""
    return float(max(np.abs(a).max(), np.abs(b).max()))


def paired_bootstrap_ratio(
    counts_a: np.ndarray,
    counts_b: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    confidence: float = 0.95,
    seed: int = BOOTSTRAP_SEED,
    *,
    max_chunk_elements: int = DEFAULT_MAX_CHUNK_ELEMENTS,
) -> BootstrapResult:
    """:func:`paired_bootstrap` of a statistic of summed per-question counts (a micro-averaged F1,
    which is no mean of per-question values): ``statistic`` maps ``(..., k)`` column sums of the
    ``(n, k)`` count arrays to values; the same question indices resample both arrays."""
    a, b = np.asarray(counts_a, dtype=np.float64), np.asarray(counts_b, dtype=np.float64)
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"count arrays must be (questions, k) of one shape, got {a.shape} and {b.shape}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):  # a NaN difference would read p 0
        raise ValueError("count arrays contain non-finite values")
    n = _check_pair(a[:, 0], b[:, 0], n_resamples, confidence, max_chunk_elements)
    resampled = np.empty(n_resamples, dtype=np.float64)
    for rows, idx in _resample_indices(n, n_resamples, seed, max_chunk_elements):
        resampled[rows] = statistic(a[idx].sum(axis=1)) - statistic(b[idx].sum(axis=1))
    value_a, value_b = float(statistic(a.sum(axis=0))), float(statistic(b.sum(axis=0)))
    return _bootstrap_result(value_a, value_b, value_a - value_b, resampled, confidence, n)


def _check_pair(a: np.ndarray, b: np.ndarray, n_resamples: int, confidence: float, max_chunk_elements: int) -> int:
    if a.shape != b.shape:
        raise ValueError(f"score arrays differ in length: {a.shape[0]} vs {b.shape[0]}")
    if a.shape[0] == 0:
        raise ValueError("score arrays are empty")
    if n_resamples < 1:
        raise ValueError("n_resamples must be >= 1")
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must lie strictly between 0 and 1")
    if max_chunk_elements < 1:
        raise ValueError("max_chunk_elements must be >= 1")
    return int(a.shape[0])


def _resample_indices(n: int, n_resamples: int, seed: int, max_chunk_elements: int):
    """``(row slice, (k, n) question indices)`` chunks of the resample matrix, in order, at most
    :data:`RESAMPLES_A_CHUNK` rows each; each chunk the caller is done with advances the open resample bar
    (:func:`bio_mrc.progress.resample_bar`; none open: nothing)."""
    from ..progress import resamples_done  # tqdm loads with the first bootstrap, not with the statistics

    rng = np.random.default_rng(seed)
    rows = max(1, min(n_resamples, max_chunk_elements // n, RESAMPLES_A_CHUNK))
    for start in range(0, n_resamples, rows):  # loop over chunks only
        k = min(rows, n_resamples - start)
        idx = (rng.random((k, n)) * n).astype(np.intp)
        np.minimum(idx, n - 1, out=idx)  # guard against u * n rounding up to n
        yield slice(start, start + k), idx
        resamples_done(k)


def _percentiles(resampled: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = 1.0 - confidence
    low, high = np.percentile(resampled, [100.0 * alpha / 2.0, 100.0 * (1.0 - alpha / 2.0)])
    return float(low), float(high)


def _bootstrap_result(
    mean_a: float, mean_b: float, diff: float, resampled: np.ndarray, confidence: float, n: int, n_seeds: int = 1,
    scale: float | None = None,
) -> BootstrapResult:
    """``scale``: that of the compared values (default: the larger absolute of ``mean_a`` and ``mean_b``), which
    sets how near 0 a resampled difference is a tie (:data:`TIE_TOLERANCE`)."""
    ci_low, ci_high = _percentiles(resampled, confidence)
    scale = max(abs(mean_a), abs(mean_b)) if scale is None else scale
    tied = np.abs(resampled) <= TIE_TOLERANCE * max(1.0, scale)
    p = min(1.0, 2.0 * min(float(np.mean((resampled <= 0.0) | tied)), float(np.mean((resampled >= 0.0) | tied))))
    significant = ci_low > 0.0 or ci_high < 0.0
    if n * n_seeds < 2:  # one observation: every resample repeats it, a point "interval" that is no evidence
        p, significant = 1.0, False
    return BootstrapResult(
        mean_a=mean_a, mean_b=mean_b, diff=diff, ci_low=ci_low, ci_high=ci_high, p_value=float(p),
        significant=bool(significant), n_questions=int(n), n_resamples=int(len(resampled)),
        n_seeds=int(n_seeds),
    )


def resampling(n_seeds: int) -> str:
    """What a bootstrap over ``n_seeds`` seeds resamples: ``"questions"`` (one seed) or ``"seeds × questions"``."""
    return "questions" if n_seeds == 1 else "seeds × questions"


def _as_seed_values(x: Any, name: str, statistic: Callable | None) -> np.ndarray:
    """``(seeds, questions, k)`` float array: per-question scores (``k = 1``) or, given a statistic, counts."""
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != (3 if statistic else 2):
        shape = "(seeds, questions, k) counts" if statistic else "(seeds, questions) scores"
        raise ValueError(f"{name} must be {shape}, got shape {arr.shape}")
    if arr.shape[0] == 0 or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} needs at least one seed and finite values")
    return arr if statistic else arr[:, :, None]


def _row_counts(idx: np.ndarray, size: int) -> np.ndarray:
    """``(m, size)`` float counts of each index in each row of the ``(m, r)`` index matrix ``idx``."""
    m = idx.shape[0]
    flat = (idx + size * np.arange(m, dtype=np.intp)[:, None]).ravel()
    return np.bincount(flat, minlength=m * size).reshape(m, size).astype(np.float64)


def _two_level_totals(x: np.ndarray, n_resamples: int, seed: int, max_chunk_elements: int) -> np.ndarray:
    """Two-level bootstrap of ``(seeds, questions, k)`` values: each resample draws the seeds with
    replacement, then the questions (one draw shared by every drawn seed: the seeds see the same
    questions); returns ``(n_resamples, k)`` sums over the drawn questions of the drawn seeds' mean.

    The question draws are :func:`paired_bootstrap`'s for the same ``seed`` (the seeds come from a
    stream of their own), so with one seed, or seeds that agree, this is the bootstrap over questions.
    """
    s, n, k = x.shape
    by_question = x.transpose(1, 0, 2).reshape(n, s * k)
    seed_rng = np.random.default_rng([seed, 1])
    totals = np.empty((n_resamples, k), dtype=np.float64)
    chunk = max(1, max_chunk_elements // 4)  # a chunk holds four (rows, questions) arrays; chunks never change the draws
    for rows, idx in _resample_indices(n, n_resamples, seed, chunk):
        m = idx.shape[0]
        seeds = np.minimum((seed_rng.random((m, s)) * s).astype(np.intp), s - 1)
        per_seed = (_row_counts(idx, n) @ by_question).reshape(m, s, k)
        totals[rows] = np.einsum("ms,msk->mk", _row_counts(seeds, s) / s, per_seed)
    return totals


def two_level_bootstrap(
    values_a: np.ndarray,
    values_b: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray] | None = None,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    confidence: float = 0.95,
    seed: int = BOOTSTRAP_SEED,
    *,
    max_chunk_elements: int = DEFAULT_MAX_CHUNK_ELEMENTS,
) -> BootstrapResult:
    """Paired bootstrap over seeds and questions of ``mean(a) - mean(b)`` (the variance between seeds
    and between questions): ``(seeds, questions)`` score arrays, row ``s`` of both the same seed (the
    same model, or models trained with the same seed), column ``q`` the same question. Each resample
    draws seeds, then questions, with replacement; the same draws index both arrays.

    Given ``statistic`` (as :func:`paired_bootstrap_ratio`), the values are ``(seeds, questions, k)``
    counts and the compared value is ``statistic`` of their sums over seeds and questions.
    CI, p and significance as :func:`paired_bootstrap`.
    """
    a, b = _as_seed_values(values_a, "values_a", statistic), _as_seed_values(values_b, "values_b", statistic)
    if a.shape != b.shape:
        raise ValueError(f"value arrays differ in shape: {a.shape} vs {b.shape}")
    n = _check_pair(a[0, :, 0], b[0, :, 0], n_resamples, confidence, max_chunk_elements)
    if statistic is None:
        resampled = _two_level_totals(a - b, n_resamples, seed, max_chunk_elements)[:, 0] / n
        value_a, value_b, diff = float(a.mean()), float(b.mean()), float((a - b).mean())
        scale = _largest(a, b)
    else:
        k = a.shape[2]
        totals = _two_level_totals(np.concatenate([a, b], axis=2), n_resamples, seed, max_chunk_elements)
        resampled = statistic(totals[:, :k]) - statistic(totals[:, k:])
        value_a, value_b = float(statistic(a.sum(axis=(0, 1)))), float(statistic(b.sum(axis=(0, 1))))
        diff, scale = value_a - value_b, None
    return _bootstrap_result(value_a, value_b, diff, resampled, confidence, n, n_seeds=a.shape[0], scale=scale)


def paired_bootstrap_recomputed(
    values_a: Sequence[Any],
    values_b: Sequence[Any],
    statistic: Callable[[Any, np.ndarray], np.ndarray],
    n_questions: int,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    confidence: float = 0.95,
    seed: int = BOOTSTRAP_SEED,
    *,
    max_chunk_elements: int = DEFAULT_MAX_CHUNK_ELEMENTS,
) -> BootstrapResult:
    """Paired bootstrap of ``statistic(a) − statistic(b)`` for a statistic recomputed on each resample
    (AURC: neither a mean nor a sum of per-question values, so :func:`paired_bootstrap_ratio` cannot
    take it). ``values_a`` and ``values_b`` hold one item per seed, item ``s`` of both the same seed;
    ``statistic(item, idx)`` maps ``(m, n_questions)`` question indices to ``(m,)`` values. A cell's
    value is the mean of its seeds' statistics. The question draws are :func:`paired_bootstrap`'s for
    the same ``seed``; with several seeds each resample also draws the seeds with replacement (from a
    stream of their own, as :func:`two_level_bootstrap`) and averages the drawn seeds' differences.
    Contrasts sharing their cells draw once with :func:`resampled_statistics` and :func:`paired_bootstrap_of_resamples`."""
    if len(values_a) != len(values_b) or not values_a:
        raise ValueError(f"need one item per seed on both sides, got {len(values_a)} and {len(values_b)}")
    n = _check_pair(np.zeros(n_questions), np.zeros(n_questions), n_resamples, confidence, max_chunk_elements)
    items, s = [*values_a, *values_b], len(values_a)
    whole = [statistic(item, np.arange(n)[None, :])[0] for item in items]
    resampled = resampled_statistics(items, statistic, n, n_resamples, seed, max_chunk_elements=max_chunk_elements)
    return paired_bootstrap_of_resamples(whole[:s], whole[s:], resampled[:s], resampled[s:], n, confidence, seed)


def resampled_statistics(
    items: Sequence[Any],
    statistic: Callable[[Any, np.ndarray], np.ndarray],
    n_questions: int,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    *,
    max_chunk_elements: int = DEFAULT_MAX_CHUNK_ELEMENTS,
) -> np.ndarray:
    """``(len(items), n_resamples)``: ``statistic(item, idx)`` (as :func:`paired_bootstrap_recomputed`'s) of each item on
    each of :func:`paired_bootstrap`'s resamples of ``n_questions`` questions for the same ``seed``, drawn once for
    every item: a recomputed statistic that several contrasts share is computed once per cell."""
    n = _check_pair(np.zeros(n_questions), np.zeros(n_questions), n_resamples, 0.5, max_chunk_elements)
    resampled = np.empty((len(items), n_resamples), dtype=np.float64)
    for rows, idx in _resample_indices(n, n_resamples, seed, max_chunk_elements):
        for row, item in enumerate(items):
            resampled[row, rows] = statistic(item, idx)
    return resampled


def paired_bootstrap_of_resamples(
    values_a: Sequence[float],
    values_b: Sequence[float],
    resampled_a: np.ndarray,
    resampled_b: np.ndarray,
    n_questions: int,
    confidence: float = 0.95,
    seed: int = BOOTSTRAP_SEED,
) -> BootstrapResult:
    """:func:`paired_bootstrap_recomputed` from each seed's statistic on every question (``values_a``, ``values_b``) and on
    each resample (``(seeds, n_resamples)`` rows of :func:`resampled_statistics` drawn with the same ``seed``), row ``s``
    of both sides the same seed: the same result, bit for bit."""
    ra, rb = np.asarray(resampled_a, dtype=np.float64), np.asarray(resampled_b, dtype=np.float64)
    if ra.ndim != 2 or ra.shape != rb.shape or not len(values_a) == len(values_b) == ra.shape[0] > 0:
        raise ValueError(f"need one value and one row of resamples per seed on both sides, got {len(values_a)} and "
                         f"{len(values_b)} values, resamples of shape {ra.shape} and {rb.shape}")
    s, n_resamples = ra.shape
    _check_pair(np.zeros(n_questions), np.zeros(n_questions), n_resamples, confidence, 1)
    per_seed = np.ascontiguousarray((ra - rb).T)  # (resamples, seeds), as each resample's differences are summed
    if s > 1:  # the drawn seeds' mean: each seed weighted by how often it was drawn
        drawn = np.minimum((np.random.default_rng([seed, 1]).random((n_resamples, s)) * s).astype(np.intp), s - 1)
        per_seed = per_seed * _row_counts(drawn, s) / s
    value_a, value_b = float(np.mean(values_a)), float(np.mean(values_b))
    return _bootstrap_result(value_a, value_b, value_a - value_b, per_seed.sum(axis=1), confidence, n_questions, n_seeds=s)


@dataclass(frozen=True)
class Interval:
    """A bootstrap percentile interval of one cell's own score."""

    value: float
    ci_low: float
    ci_high: float
    n_seeds: int
    n_questions: int
    n_resamples: int

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "resampling": resampling(self.n_seeds)}


def score_interval(
    values: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray] | None = None,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    confidence: float = 0.95,
    seed: int = BOOTSTRAP_SEED,
    *,
    max_chunk_elements: int = DEFAULT_MAX_CHUNK_ELEMENTS,
) -> Interval:
    """Percentile interval of one cell's mean score from ``(seeds, questions)`` scores (or, given
    ``statistic``, of the statistic of its summed ``(seeds, questions, k)`` counts): the bootstrap
    over questions with one seed, over seeds × questions (:func:`two_level_bootstrap`) with several."""
    x = _as_seed_values(values, "values", statistic)
    n = _check_pair(x[0, :, 0], x[0, :, 0], n_resamples, confidence, max_chunk_elements)
    totals = _two_level_totals(x, n_resamples, seed, max_chunk_elements)
    if statistic is None:
        value, resampled = float(x.mean()), totals[:, 0] / n
    else:
        value, resampled = float(statistic(x.sum(axis=(0, 1)))), statistic(totals)
    low, high = _percentiles(resampled, confidence)
    return Interval(value, low, high, int(x.shape[0]), n, int(n_resamples))


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values of a family of tests, in the input order.

    With the ``m`` p-values sorted, ``p_(1) <= ... <= p_(m)``, the adjusted value of ``p_(i)`` is
    ``max_{j <= i} min(1, (m - j + 1) p_(j))``; rejecting the hypotheses whose adjusted p is at most
    ``alpha`` keeps the family-wise error rate at ``alpha`` (Holm 1979), whatever their dependence.
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1 or not np.all((p >= 0.0) & (p <= 1.0)):
        raise ValueError(f"p-values must be a one-dimensional sequence of numbers in [0, 1], got {p_values!r}")
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (p.size - np.arange(p.size)) * p[order])
    adjusted = np.empty_like(p)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def agreement(answers_a: Sequence[str], answers_b: Sequence[str], normalize: Callable[[str], str]) -> float:
    """Fraction of questions whose normalised answers are equal."""
    if len(answers_a) != len(answers_b):
        raise ValueError(f"answer lists differ in length: {len(answers_a)} vs {len(answers_b)}")
    if len(answers_a) == 0:
        raise ValueError("answer lists are empty")
    same = np.fromiter(
        (normalize(x) == normalize(y) for x, y in zip(answers_a, answers_b)), dtype=bool, count=len(answers_a)
    )
    return float(same.mean())


def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof=1; 0.0 for a single value); non-finite values are refused, as the
    bootstrap functions refuse them (a NaN would print as ``nan ± nan``)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size == 0:
        raise ValueError("mean_sd of no values")
    if not np.all(np.isfinite(v)):
        raise ValueError("mean_sd of non-finite values")
    sd = float(v.std(ddof=1)) if v.size > 1 else 0.0
    return float(v.mean()), sd


def format_present(values: Sequence[float | None], digits: int = 2, scale: float = 1.0) -> str:
    """:func:`format_mean_sd` of the values that are not None (times ``scale``), "–" when none is."""
    present = [scale * v for v in values if v is not None]
    return format_mean_sd(present, digits) if present else "–"


def format_p_value(p: float, tests: int = 1, n_resamples: int = BOOTSTRAP_RESAMPLES) -> str:
    """A bootstrap p-value to three places; 0 (no resampled difference on one side of 0) as the bound it stands for.

    ``2 / n_resamples`` is the smallest two-sided p the resamples can show; Holm's adjustment over ``tests`` p-values
    multiplies it by at most ``tests``. So a 0 prints ``"< 0.002"`` (1000 resamples), never ``"0.000"``.
    """
    if p > 0:
        return f"{p:.3f}"
    return f"< {min(1.0, 2 * tests / n_resamples):.3f}"


def format_mean_sd(values: Sequence[float], digits: int = 2) -> str:
    """``"46.51 ± 0.84"`` for several values, ``"46.51"`` for one."""
    m, sd = mean_sd(values)
    if len(np.asarray(values).ravel()) == 1:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ± {sd:.{digits}f}"
