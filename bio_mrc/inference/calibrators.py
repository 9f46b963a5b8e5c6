"""Calibrated confidence: the probability that an answer is right, fitted per decoding on held-out
questions (never the evaluation ones) and saved with the model.

"Right" is the official SQuAD F1 of the answer above 0.5 (``CORRECT_IF``), which credits a
nearly right span as right, as a reader would. Every decoding's raw confidence is the best span's
softmax share of the question's n-best spans (always of the best 20, ``CONFIDENCE_SPANS``, however many a caller
asks to see) under the decoding's own span score (span ``s_i + e_j``; joint ``log P_start + log P_end + r``; BIO ``r``, the tag log-likelihood ratio
against all-O, so the share of the best single-span tag sequence among the n-best ones). For BIO
this replaced ``sigmoid(r)``, the best sequence against the all-O one alone, which ignores every
rival span: on held-out dev articles the share ranks BIO answers far better (AURC 0.262 -> 0.200,
coverage at 80% accuracy 3% -> 45% with the 10,000-question model; ``benchmarks/RESULTS.md``).

On SQuAD 2.0 the answer given may be an abstention, right where the question has no answer, so the
confidence there is in the answer given, abstentions included (:func:`raw_confidence` with the
decoding's no-answer threshold, which the calibrator saves).

Beta calibration (Kull et al., AISTATS 2017) maps raw to calibrated confidence: a logistic regression
(scikit-learn) on ``ln p`` and ``-ln(1 - p)``, three numbers saved in the model's config. It is
monotone (a negative weight is dropped and the other refitted), so it keeps the raw score's ranking and
the coverage a threshold reaches, and its three parameters carry over to other articles (ECE on
held-out articles in ``benchmarks/RESULTS.md``).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from .. import registry
from ..decoding.shares import nbest_shares
from ..json_syntax import json_value
from ..metrics.task_scores import squad_right
from ..types import Prediction
from .defaults import FEWEST_CALIBRATION_QUESTIONS

CORRECT_IF = "f1 > 0.5"
_EDGE = 1e-6  # raw confidences are clipped into [_EDGE, 1 - _EDGE] before their logarithms


def raw_confidence(predictions: Sequence[Prediction], threshold: float | None = None) -> np.ndarray:
    """Each prediction's uncalibrated confidence in the answer it gives.

    Without a no-answer threshold (SQuAD v1.1) the answer is the first span, and its confidence the
    span's n-best share (:func:`~bio_mrc.decoding.shares.nbest_shares`: of the best
    :data:`~bio_mrc.decoding.shares.CONFIDENCE_SPANS` spans' scores, however many follow; 0 without a span). With one (SQuAD 2.0) the
    answer may be an abstention, which is right where the question has no answer: from the margin
    to the tuned threshold, ``P(answerable) = sigmoid(threshold - no_answer_score)`` (1/2 at the
    threshold), an answer's confidence is its share × P(answerable), an abstention's 1 − P(answerable).
    """
    shares = np.zeros(len(predictions))
    for k, prediction in enumerate(predictions):
        if prediction.spans:
            shares[k] = nbest_shares([s.score for s in prediction.spans])[0]
    if threshold is None:
        return shares
    no_answer = np.array([np.nan if p.no_answer_score is None else p.no_answer_score for p in predictions], dtype=np.float64)
    margin = np.where(no_answer == threshold, 0.0, threshold - no_answer)  # equal infinities: at the threshold
    with np.errstate(over="ignore", invalid="ignore"):
        answerable = 1.0 / (1.0 + np.exp(-margin))
    confidence = np.where(no_answer > threshold, 1.0 - answerable, shares * answerable)
    return np.where(np.isnan(no_answer), shares, confidence)  # a decoding without a no-answer score never abstains


def answer_is_right(predictions: Sequence[Prediction], gold: Mapping[str, Sequence[str]], version: str) -> np.ndarray:
    """1 where the answer given (the best span, or "" when abstaining) has official F1 above 0.5
    (``CORRECT_IF``), else 0: an abstention is right on an unanswerable SQuAD 2.0 question."""
    return squad_right(registry.squad_task(version), predictions, gold)


def _beta_features(raw: np.ndarray) -> np.ndarray:
    clipped = np.clip(np.asarray(raw, dtype=np.float64), _EDGE, 1.0 - _EDGE)
    return np.column_stack([np.log(clipped), -np.log1p(-clipped)])


def _checked_fit_inputs(raw: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``raw`` and ``right`` as float arrays, or a one-line refusal: a NaN, a confidence outside [0, 1] or a
    rightness other than 0/1 would otherwise be clipped or fitted into a plausible-looking calibrator."""
    raw, right = np.asarray(raw, dtype=np.float64), np.asarray(right, dtype=np.float64)
    if raw.ndim != 1 or raw.shape != right.shape:
        raise ValueError(f"raw confidences and rightness must be 1-D arrays of one length, got {raw.shape} and {right.shape}")
    if len(raw) < FEWEST_CALIBRATION_QUESTIONS:
        raise ValueError(f"calibrating needs at least {FEWEST_CALIBRATION_QUESTIONS} held-out questions")
    if (outside := np.flatnonzero(~((raw >= 0.0) & (raw <= 1.0)))).size:  # NaN fails both
        raise ValueError(f"raw confidence {raw[outside[0]]} of question {outside[0] + 1} is not a probability in [0, 1]")
    if (neither := np.flatnonzero(~np.isin(right, (0.0, 1.0)))).size:
        raise ValueError(f"rightness {right[neither[0]]} of question {neither[0] + 1} is not 0 or 1")
    return raw, right


def fit_calibrator(raw: np.ndarray, right: np.ndarray) -> dict[str, Any]:
    """Beta calibration of raw confidences against rightness, as JSON-ready numbers
    ``P(right) = sigmoid(a ln p - b ln(1 - p) + c)`` with ``a, b >= 0``."""
    from sklearn.linear_model import LogisticRegression  # fitting only: answering with a calibrator needs no sklearn (seconds to import)

    raw, right = _checked_fit_inputs(raw, right)
    order = np.lexsort((right, raw))  # the solver's sums in one order: the same questions in any order, the same numbers
    raw, right = raw[order], right[order]
    features, weights, intercept = _beta_features(raw), np.zeros(2), 0.0
    columns = [0, 1]
    while columns and len(np.unique(right)) == 2:
        # C: next to no penalty; tol: converged to the maximum likelihood (the default 1e-4 stops ~1e-2 short of it)
        fitted = LogisticRegression(C=1e6, max_iter=1000, tol=1e-10).fit(features[:, columns], right)
        weights[:] = 0.0
        weights[columns], intercept = fitted.coef_[0], float(fitted.intercept_[0])
        if (weights >= 0).all():
            break
        columns.remove(int(np.argmin(weights)))  # a negative weight would make the map non-monotone
    if not columns or len(np.unique(right)) < 2:  # no monotone fit: the tuning questions' rate
        rate = float(np.clip(right.mean(), _EDGE, 1.0 - _EDGE))
        weights[:], intercept = 0.0, math.log(rate / (1.0 - rate))
    return {"method": "beta", "a": float(weights[0]), "b": float(weights[1]), "c": intercept, "correct_if": CORRECT_IF}


# A calibrator whose probabilities on its own tuning questions are all within this of 0 or of 1 says nothing.
DEGENERATE_MARGIN = 1e-3


def degenerate_calibrator(calibrator: Mapping[str, Any], raw: np.ndarray) -> str | None:
    """Why ``calibrator`` would be useless, judged on the raw confidences it was fitted on, or None when it is not:
    constant output (it ignores the confidence: one class of answers only, or no monotone fit), or probabilities all
    near 0 or all near 1 (within :data:`DEGENERATE_MARGIN`)."""
    probabilities = calibrate(np.asarray(raw, dtype=np.float64), calibrator)
    low, high = float(probabilities.min()), float(probabilities.max())
    if (calibrator["a"] == 0.0 and calibrator["b"] == 0.0) or high - low < 1e-9:
        return f"constant output {low:.3g}: every answer would get the same probability"
    if high <= DEGENERATE_MARGIN or low >= 1.0 - DEGENERATE_MARGIN:
        return f"probabilities all within {DEGENERATE_MARGIN} of {0 if high <= DEGENERATE_MARGIN else 1} ({low:.3g} to {high:.3g})"
    return None


def calibrate(raw: np.ndarray, calibrator: Mapping[str, Any]) -> np.ndarray:
    """Calibrated confidence of raw confidences; a calibrator of another method is refused (tune the model again)."""
    if calibrator.get("method") != "beta":
        raise ValueError(f"a calibrator of method {json_value(calibrator.get('method'))} is not beta calibration: "
                         "tune the model again (bio-mrc tune) to fit its calibrators")
    logit = _beta_features(raw) @ np.array([calibrator["a"], calibrator["b"]]) + calibrator["c"]
    with np.errstate(over="ignore"):  # exp(-logit) past the float range is inf, whose probability 0 is exact
        return 1.0 / (1.0 + np.exp(-logit))


def calibrated_probability(predictions: Sequence[Prediction], decoding: str, calibrator: Mapping[str, Any]) -> np.ndarray:
    """Each prediction's probability that its answer is right, from the calibrator of its decoding
    (one fitted with a no-answer threshold scores abstentions with the threshold it was fitted at)."""
    return calibrate(raw_confidence(predictions, calibrator.get("no_answer_threshold")), calibrator)
