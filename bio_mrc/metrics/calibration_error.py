"""How well confidences match accuracy: expected calibration error and reliability bins. Pure numpy."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

DEFAULT_BINS = 10


@dataclass(frozen=True)
class ReliabilityBins:
    """Equal-width confidence bins: per bin the number of predictions, their mean confidence and accuracy."""

    edges: np.ndarray  # (n_bins + 1,)
    count: np.ndarray
    confidence: np.ndarray  # nan for an empty bin
    accuracy: np.ndarray  # nan for an empty bin


def reliability_bins(confidence: np.ndarray, correct: np.ndarray, n_bins: int = DEFAULT_BINS) -> ReliabilityBins:
    """Bin ``confidence`` in [0, 1] into ``n_bins`` equal-width bins (the last one closed) and
    measure each bin's mean confidence and accuracy (``correct``: 0/1 per prediction)."""
    confidence = np.asarray(confidence, dtype=np.float64)
    correct = np.asarray(correct, dtype=np.float64)
    if confidence.shape != correct.shape or confidence.ndim != 1:
        raise ValueError(f"confidence and correct must be 1-D arrays of one length, got {confidence.shape} and {correct.shape}")
    if confidence.size and (np.nanmin(confidence) < 0 or np.nanmax(confidence) > 1 or np.isnan(confidence).any()):
        raise ValueError("confidences must be probabilities in [0, 1]")
    if (neither := np.flatnonzero(~np.isin(correct, (0.0, 1.0)))).size:  # a 2 or a NaN would be averaged as an accuracy
        raise ValueError(f"rightness {correct[neither[0]]} of question {neither[0] + 1} is not 0 or 1")
    if isinstance(n_bins, bool) or not isinstance(n_bins, numbers.Integral) or n_bins < 1:
        raise ValueError(f"the number of bins must be a whole number of 1 or more, got {n_bins!r}")
    edges = np.arange(n_bins + 1) / n_bins  # k / n_bins exactly as a literal 0.3 is (linspace makes 0.30000000000000004)
    index = np.clip(np.searchsorted(edges, confidence, side="right") - 1, 0, n_bins - 1)
    count = np.bincount(index, minlength=n_bins).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_confidence = np.bincount(index, weights=confidence, minlength=n_bins) / count
        accuracy = np.bincount(index, weights=correct, minlength=n_bins) / count
    return ReliabilityBins(edges, count.astype(np.int64), mean_confidence, accuracy)


def expected_calibration_error(confidence: np.ndarray, correct: np.ndarray, n_bins: int = DEFAULT_BINS) -> float:
    """``ECE = Σ_b (n_b / n) |accuracy_b − confidence_b|`` over equal-width bins (Guo et al., 2017)."""
    bins = reliability_bins(confidence, correct, n_bins)
    total = bins.count.sum()
    if total == 0:
        raise ValueError("no predictions to measure calibration on")
    filled = bins.count > 0
    gaps = np.abs(bins.accuracy[filled] - bins.confidence[filled])
    return float(np.sum(bins.count[filled] / total * gaps))
