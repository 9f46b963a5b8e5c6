"""Start/end span search: ``max_{j≥i} s_i + e_j`` with ``j - i < max_answer_length``.

Pure numpy. The search is a band of width ``max_answer_length`` over
``s_i + e_{i+k}`` (never a full L×L matrix, never a Python loop over pairs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

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


def band_scores(start_logits: np.ndarray, end_logits: np.ndarray, mask: np.ndarray, max_answer_length: int) -> np.ndarray:
    """``band[n, i, k] = s[n, i] + e[n, i + k]`` for ``0 ≤ k < max_answer_length``; ``-inf`` where invalid.

    A span is valid when both ends are masked-in (paragraph) tokens of the same window.
    """
    n, length = start_logits.shape
    width = max(1, min(max_answer_length, length))
    s = np.where(mask, start_logits, NEG_INF).astype(np.float64)
    e = np.where(mask, end_logits, NEG_INF).astype(np.float64)
    e_padded = np.concatenate([e, np.full((n, width - 1), NEG_INF)], axis=1)
    return s[:, :, None] + sliding_window_view(e_padded, width, axis=1)


def band_cumulative(values: np.ndarray, max_answer_length: int) -> np.ndarray:
    """``out[n, i, k] = Σ_{t=i}^{i+k} values[n, t]`` in the band layout of :func:`band_scores`.

    Used to add a per-token score (e.g. the BIO head's log-likelihood ratio) to every span.
    """
    n, length = values.shape
    width = max(1, min(max_answer_length, length))
    csum = np.concatenate([np.zeros((n, 1)), np.cumsum(values, axis=1, dtype=np.float64)], axis=1)
    csum_padded = np.concatenate([csum, np.repeat(csum[:, -1:], width - 1, axis=1)], axis=1)
    return sliding_window_view(csum_padded[:, 1:], width, axis=1) - csum[:, :-1, None]


def top_spans(band: np.ndarray, n_best: int) -> SpanCandidates:
    """The ``n_best`` highest band entries of each window, best first."""
    n, length, width = band.shape
    flat = band.reshape(n, -1)
    k = min(n_best, flat.shape[1])
    part = np.argpartition(-flat, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(flat, part, axis=1), axis=1, kind="stable")
    idx = np.take_along_axis(part, order, axis=1)
    score = np.take_along_axis(flat, idx, axis=1)
    start, offset = np.divmod(idx, width)
    valid = np.isfinite(score)
    return SpanCandidates(
        score=np.where(valid, score, NEG_INF),
        start=np.where(valid, start, -1),
        end=np.where(valid, start + offset, -1),
    )


def best_spans(
    start_logits: np.ndarray,
    end_logits: np.ndarray,
    mask: np.ndarray,
    max_answer_length: int = 30,
    n_best: int = 20,
    extra_token_scores: np.ndarray | None = None,
) -> SpanCandidates:
    """n-best spans of every window by ``s_i + e_j`` (plus ``Σ_{t=i..j} extra_t`` when given)."""
    band = band_scores(start_logits, end_logits, mask, max_answer_length)
    if extra_token_scores is not None:
        band = band + band_cumulative(np.where(mask, extra_token_scores, 0.0), max_answer_length)
    return top_spans(band, n_best)


def null_scores(start_logits: np.ndarray, end_logits: np.ndarray) -> np.ndarray:
    """The ``[CLS]`` (position 0) no-answer score ``s_0 + e_0`` of every window."""
    return start_logits[:, 0].astype(np.float64) + end_logits[:, 0]
