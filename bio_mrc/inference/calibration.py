"""Calibrated confidence: the probability that an answer is right, fitted per decoding on held-out
questions (never the evaluation ones) and saved with the model.

"Right" is the official SQuAD F1 of the answer above 0.5 (``CORRECT_IF``), which credits a
nearly right span as right, as a reader would. The raw confidence each decoding starts from:

* span and joint: the softmax probability of the best span among the n-best (the number the
  old transformers QA pipeline returned as ``score``);
* bio: ``sigmoid(max r)``, the probability of the tag sequence with the best span against the
  all-O sequence (``r`` is the tag log-likelihood ratio).

Isotonic regression (scikit-learn) maps raw to calibrated confidence; the fitted step function
is saved as its knots and applied with ``np.interp`` (what ``IsotonicRegression.predict`` does),
so loading a model needs no pickle.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
from sklearn.isotonic import IsotonicRegression

from ..metrics.squad import per_question_scores
from ..types import Prediction

CORRECT_IF = "f1 > 0.5"


def raw_confidence(predictions: Sequence[Prediction], decoding: str) -> np.ndarray:
    """Each prediction's uncalibrated confidence in its best span (0 without a span)."""
    values = np.zeros(len(predictions))
    for k, prediction in enumerate(predictions):
        if not prediction.spans:
            continue
        if decoding == "bio":
            ratio = prediction.spans[0].score
            values[k] = 1.0 / (1.0 + math.exp(-ratio)) if ratio > -700 else 0.0
        else:
            scores = np.array([s.score for s in prediction.spans], dtype=np.float64)
            values[k] = 1.0 / np.exp(scores - scores[0]).sum()
    return values


def answer_is_right(predictions: Sequence[Prediction], gold: Mapping[str, Sequence[str]], version: str) -> np.ndarray:
    """1 where the best span's official F1 exceeds 0.5 (``CORRECT_IF``), else 0."""
    ids = [p.id for p in predictions]
    answers = {p.id: (p.spans[0].text if p.spans else "") for p in predictions}
    return (per_question_scores(gold, answers, ids, version)[1] > 50.0).astype(np.float64)


def fit_calibrator(raw: np.ndarray, right: np.ndarray) -> dict[str, Any]:
    """Isotonic map from raw confidence to P(right), as JSON-ready knots."""
    if len(raw) < 2:
        raise ValueError("calibrating needs at least two held-out questions")
    isotonic = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(raw, right)
    return {"x": isotonic.X_thresholds_.tolist(), "y": isotonic.y_thresholds_.tolist(), "correct_if": CORRECT_IF}


def calibrate(raw: np.ndarray, calibrator: Mapping[str, Any]) -> np.ndarray:
    """Calibrated confidence of raw confidences (the fitted step function, clipped at its ends)."""
    return np.interp(np.asarray(raw, dtype=np.float64), calibrator["x"], calibrator["y"])
