"""Near-tied scores: the order in which multi-span answers pick between candidates, the same on every backend."""

from __future__ import annotations

import numpy as np

#: Scores within this relative distance of each other are tied. The logits are float32 (a unit of round-off is
#: 2**-23, about 1.2e-7 of the value), and two backends (PyTorch and an ONNX export) that add the same float32 numbers
#: in another order differ by a few such units; scores and probabilities read from them carry that difference. A
#: millionth is about eight units: above round-off, far below any difference a model means (a thousandth of a share).
NEAR_TIE = 1e-6


def near_tie_order(scores: np.ndarray, starts: np.ndarray, ends: np.ndarray, groups: np.ndarray | None = None) -> np.ndarray:
    """Indices ordering ``scores`` best (largest) first within each of ``groups`` (groups in increasing order; one
    group without), where scores tied within :data:`NEAR_TIE` go by position, earliest ``starts`` first, then
    earliest ``ends``. Ties chain: scores sorted by value, each within the tolerance of the next is one tied run, so
    two scores that are near-tied are always in one run and their order never follows which of them is larger."""
    scores, starts, ends = np.asarray(scores, dtype=np.float64), np.asarray(starts), np.asarray(ends)
    groups = np.zeros(len(scores), dtype=np.int64) if groups is None else np.asarray(groups)
    by_score = np.lexsort((ends, starts, -scores, groups))
    if len(by_score) < 2:
        return by_score
    value, group = scores[by_score], groups[by_score]
    previous, following = value[:-1], value[1:]
    both_finite = np.isfinite(previous) & np.isfinite(following)
    with np.errstate(invalid="ignore"):  # -inf against -inf: equal, tied
        close = both_finite & (previous - following <= NEAR_TIE * np.maximum(np.abs(previous), np.abs(following)))
    tied = (group[1:] == group[:-1]) & (close | (previous == following))
    run = np.r_[0, np.cumsum(~tied)]
    return by_score[np.lexsort((ends[by_score], starts[by_score], run))]
