"""Several answers from a start/end head: the usual n-best baseline for multi-span questions."""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from ..types import Prediction

#: The n-best multi-span rule's default: spans below 10% of the n-best probability mass are dropped.
MIN_SPAN_PROBABILITY = 0.1


def nbest_multi_span(predictions: Sequence[Prediction], min_probability: float = MIN_SPAN_PROBABILITY) -> list[Prediction]:
    """Keep, per question, the n-best spans whose probability is at least ``min_probability``
    and that overlap no better-ranked kept span.

    Probabilities are the softmax of the n-best span scores of the question
    (as in Hugging Face's QA post-processing). The best span is always kept.
    Each returned span's ``score`` is that probability.
    """
    out = []
    for prediction in predictions:
        spans = prediction.spans
        if not spans:
            out.append(replace(prediction, spans=[]))
            continue
        scores = np.array([s.score for s in spans], dtype=np.float64)
        probs = np.exp(scores - scores.max())
        probs /= probs.sum()
        kept = []
        for span, p in zip(spans, probs.tolist()):
            if kept and p < min_probability:
                break  # spans are sorted best first, so no later one qualifies
            if all(span.end <= k.start or span.start >= k.end for k in kept):
                kept.append(type(span)(span.text, span.start, span.end, p))
        out.append(replace(prediction, spans=kept))
    return out
