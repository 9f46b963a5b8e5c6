"""The n-best share of a span: the softmax of a question's n-best span scores, always over the same number of them."""

from __future__ import annotations

from typing import Sequence

import numpy as np

#: The spans every n-best share is of, however many a caller asks to see: the default n-best, which ``bio-mrc tune``
#: fits each calibrator on. A share of more would fall as a caller asks for more alternatives, and the calibrator
#: would read a quantity it was not fitted on; a share of fewer makes the answer of a list of one certain.
CONFIDENCE_SPANS = 20


def nbest_shares(scores: Sequence[float] | np.ndarray) -> np.ndarray:
    """Each score's share ``exp(s) / Σ exp(t)``, the sum over the :data:`CONFIDENCE_SPANS` highest ``scores``
    (all of them where there are fewer), in any order: a span ranked past them takes its ``exp(s)`` over the same
    sum, so no span's share depends on how many follow it."""
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    if not len(scores):
        return scores
    top = np.sort(scores)[::-1][:CONFIDENCE_SPANS]
    return np.exp(scores - top[0]) / np.exp(top - top[0]).sum()
