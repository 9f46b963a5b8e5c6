"""Start/end span search: ``max_{j≥i} s_i + e_j`` with ``j - i < max_answer_length``.

Pure numpy. The search scores a band of width ``max_answer_length`` over
``s_i + e_{i+k}`` for the few starts that can hold an n-best span (never a
full L×L matrix, never a Python loop over pairs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NEG_INF = -np.inf


@dataclass(frozen=True)
class SpanCandidates:
    """Top spans of each window: arrays of shape (n_windows, n_best), best first.

    Missing candidates (fewer valid spans than ``n_best``) have score ``-inf``
    and positions ``-1``. Positions are token indices, ``end`` inclusive.
    """

    score: np.ndarray
    start: np.ndarray
    end: np.ndarray


def sliding_max(values: np.ndarray, width: int) -> np.ndarray:
    """``out[n, i] = max(values[n, i : i + width])`` (clipped at the end), in O(log width) array passes."""
    n, length = values.shape
    padded = np.concatenate([values, np.full((n, width), NEG_INF)], axis=1)
    span = 1
    while span * 2 <= width:  # padded[:, i] becomes the max of a run of 2*span values
        np.maximum(padded[:, :-span], padded[:, span:], out=padded[:, :-span])
        span *= 2
    return np.maximum(padded[:, :length], padded[:, width - span : width - span + length])


def range_max(values: np.ndarray, rows: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """``out[k] = max(values[rows[k], low[k] : high[k] + 1])``, ``-inf`` where ``low > high``: a sparse table built
    one level at a time, each query read at the level of its length from its two ends."""
    n, length = values.shape
    size = high - low + 1
    level = np.floor(np.log2(np.maximum(size, 1))).astype(np.int64)
    out = np.full(len(rows), NEG_INF)
    table, span, k = np.concatenate([values, np.full((n, length), NEG_INF)], axis=1), 1, 0
    while (size >= span).any():  # table[:, i] is the max of values[:, i : i + span]
        asked = (size > 0) & (level == k)
        r, a, b = rows[asked], low[asked], high[asked] - span + 1
        out[asked] = np.maximum(table[r, a], table[r, b])
        table[:, :-span] = np.maximum(table[:, :-span], table[:, span:])
        span, k = span * 2, k + 1
    return out


# Windows whose bands are scored at once: a band holds n_best × max_answer_length scores a window (several arrays
# of 4.8 KB at 20 × 30), which for every window of a long context at once outweighed the windows themselves. The
# joint decoding computes its per-token scores (float64, several arrays) a block of this many windows at a time too.
BLOCK_WINDOWS = 1024


def best_spans(
    start_logits: np.ndarray,
    end_logits: np.ndarray,
    mask: np.ndarray,
    max_answer_length: int = 30,
    n_best: int = 20,
    extra_token_scores: np.ndarray | None = None,
    first_end: np.ndarray | None = None,
) -> SpanCandidates:
    """:func:`window_best_spans` of :data:`BLOCK_WINDOWS` windows at a time: each window's spans are its own."""
    def block(begin: int) -> SpanCandidates:
        rows = slice(begin, begin + BLOCK_WINDOWS)
        s, e, m, extra, first = (None if a is None else a[rows]
                                 for a in (start_logits, end_logits, mask, extra_token_scores, first_end))
        return window_best_spans(s, e, m, max_answer_length, n_best, extra, first)

    if len(start_logits) <= BLOCK_WINDOWS:
        return block(0)
    blocks = [block(begin) for begin in range(0, len(start_logits), BLOCK_WINDOWS)]
    return SpanCandidates(*(np.concatenate([getattr(b, name) for b in blocks]) for name in ("score", "start", "end")))


def window_best_spans(
    start_logits: np.ndarray,
    end_logits: np.ndarray,
    mask: np.ndarray,
    max_answer_length: int = 30,
    n_best: int = 20,
    extra_token_scores: np.ndarray | None = None,
    first_end: np.ndarray | None = None,
) -> SpanCandidates:
    """n-best spans of every window by ``s_i + e_j`` (plus ``Σ_{t=i..j} extra_t`` when given).

    A span is valid when both ends are masked-in (paragraph) tokens and
    ``j - i < max_answer_length``. Exact and pruned: a span starting at ``i``
    scores at most ``best_i = s_i + max_{k<width} e_{i+k}``, so the n-best spans
    all start among the ``n_best`` starts with the highest ``best_i``; only
    their band of ``max_answer_length`` ends is scored. Extra token scores
    fold into the ends through cumulative sums:
    ``Σ_{t=i..j} x_t = C_j - C_{i-1}``, so ``s'_i = s_i - C_{i-1}``, ``e'_j = e_j + C_j``.
    Equal scores go to the earlier start, then the earlier end (bf16 logits tie often), so a window's spans
    never depend on the padding other windows of the call give its row. ``first_end`` (n, L), where given, is the
    first position a span starting at each token may end on; ``best_i`` is then the max over those ends alone.
    """
    s = np.where(mask, start_logits, NEG_INF).astype(np.float64)
    e = np.where(mask, end_logits, NEG_INF).astype(np.float64)
    if extra_token_scores is not None:
        extra = np.where(mask, extra_token_scores, 0.0).astype(np.float64)
        inclusive = np.cumsum(extra, axis=1)
        s, e = s - (inclusive - extra), e + inclusive
    n, length = s.shape
    width = max(1, min(max_answer_length, length))
    per_start = s + sliding_max(e, width)
    if first_end is not None:  # a start whose first end lies past it: the max over its ends from there
        rows, columns = np.nonzero((first_end > np.arange(length)) & np.isfinite(s))
        high = np.minimum(columns + width - 1, length - 1)
        per_start[rows, columns] = s[rows, columns] + range_max(e, rows, first_end[rows, columns], high)
    k = min(n_best, length)
    starts = np.sort(_best_first(per_start, k), axis=1)  # (n, k), in position order: the band's ties by position
    e_padded = np.concatenate([e, np.full((n, width - 1), NEG_INF)], axis=1)
    ends = starts[:, :, None] + np.arange(width)  # (n, k, width)
    rows = np.arange(n)[:, None, None]
    band = np.take_along_axis(s, starts, axis=1)[:, :, None] + e_padded[rows, ends]
    if first_end is not None:  # ends before a start's first end are not its spans
        band = np.where(ends >= np.take_along_axis(first_end, starts, axis=1)[:, :, None], band, NEG_INF)
    band = band.reshape(n, -1)
    part = _best_first(band, n_best)
    score = np.take_along_axis(band, part, axis=1)
    start = np.take_along_axis(starts, part // width, axis=1)
    valid = np.isfinite(score)
    return SpanCandidates(
        score=np.where(valid, score, NEG_INF),
        start=np.where(valid, start, -1),
        end=np.where(valid, start + part % width, -1),
    )


def _best_first(values: np.ndarray, k: int) -> np.ndarray:
    """The column indices of each row's ``k`` highest values (all, where a row has fewer), highest first, equal
    values in column order. ``argpartition`` alone picks among equal values by the row's length, which padding sets."""
    k = min(k, values.shape[1])
    if k == 0:
        return np.zeros((len(values), 0), dtype=np.int64)
    negated = np.where(np.isnan(values), np.inf, -values)  # a NaN last, as -inf: each row still gives k
    cut = np.partition(negated, k - 1, axis=1)[:, [k - 1]]  # each row's k-th highest value
    better, tied = negated < cut, negated == cut
    chosen = better | (tied & (np.cumsum(tied, axis=1) <= k - better.sum(axis=1, keepdims=True)))
    columns = np.nonzero(chosen)[1].reshape(len(values), k)  # exactly k a row, in column order
    return np.take_along_axis(columns, np.argsort(np.take_along_axis(negated, columns, axis=1), axis=1, kind="stable"), axis=1)


def null_scores(start_logits: np.ndarray, end_logits: np.ndarray) -> np.ndarray:
    """The ``[CLS]`` (position 0) no-answer score ``s_0 + e_0`` of every window."""
    return start_logits[:, 0].astype(np.float64) + end_logits[:, 0]
