"""Selective QA: answer only the questions whose confidence clears a threshold, and measure what that buys.
Pure numpy, no loop over questions.

``confidence`` holds one number per question (higher: more sure), ``right`` 1 where the answer is
right (in this package official F1 > 0.5) and 0 where it is wrong. Lowering the threshold answers
more questions; the **risk–coverage curve** (Geifman & El-Yaniv, NeurIPS 2017; Kamath et al., ACL
2020) is the accuracy of the answered questions (risk = 1 − accuracy) against the share answered.

Ties: a threshold cannot separate questions of equal confidence, so the curve has one point per
distinct confidence (all the questions of a tie answered at once). AURC needs the risk of the k
most confident answers for every k = 1..n; inside a tie it takes the *expected* risk over the orders
of the tied questions (the tie's wrong answers counted in proportion), which is deterministic, does
not depend on the order of the questions, and equals the plain definition when there are no ties.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

#: The accuracies the report reads coverage at.
TARGET_ACCURACIES = (0.8, 0.9)
_TOLERANCE = 1e-12  # 4/5 must reach a target of 0.8 despite rounding


@dataclass(frozen=True)
class RiskCoverage:
    """One point per distinct confidence, highest first: answering every question with confidence
    ``>= threshold`` answers the share ``coverage`` with accuracy ``accuracy``."""

    threshold: np.ndarray
    coverage: np.ndarray
    accuracy: np.ndarray


def _checked(confidence: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    confidence = np.asarray(confidence, dtype=np.float64)
    right = np.asarray(right, dtype=np.float64)
    if confidence.ndim != 1 or confidence.shape != right.shape or confidence.size == 0:
        raise ValueError(f"confidence and right must be non-empty 1-D arrays of one length, got {confidence.shape} and {right.shape}")
    if np.isnan(confidence).any() or not np.isin(right, (0.0, 1.0)).all():
        raise ValueError("confidences must be numbers and right 0 or 1")
    return confidence, right


def tie_blocks(confidence: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(block of each question, confidence of each block): blocks are the distinct confidences,
    block 0 the highest."""
    distinct, inverse = np.unique(-np.asarray(confidence, dtype=np.float64), return_inverse=True)
    return inverse.reshape(-1), -distinct


def aurc_of_blocks(size: np.ndarray, wrong: np.ndarray) -> np.ndarray:
    """AURC from ``(..., blocks)`` counts of questions and of wrong answers per tie block (blocks in
    falling confidence; empty blocks allowed): ``(1/n) Σ_{k=1..n} wrong(k) / k`` with ``wrong(k)``
    the expected wrong answers among the k most confident.

    Inside a block of ``t`` questions, ``w`` wrong, entered after ``K`` questions with ``E`` wrong:
    ``Σ_{j=1..t} (E + j w/t) / (K + j) = w + (E − K w/t)(H(K+t) − H(K))``, H the harmonic numbers,
    so the sum over k needs no loop."""
    size = np.asarray(size, dtype=np.int64)
    wrong = np.asarray(wrong, dtype=np.float64)
    total = size.sum(axis=-1)
    harmonic = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, int(total.max()) + 1))])
    before = np.cumsum(size, axis=-1) - size
    wrong_before = np.cumsum(wrong, axis=-1) - wrong
    rate = wrong / np.maximum(size, 1)
    inside = wrong + (wrong_before - before * rate) * (harmonic[before + size] - harmonic[before])
    return inside.sum(axis=-1) / total


def aurc(confidence: np.ndarray, right: np.ndarray) -> float:
    """Area under the risk–coverage curve: the mean over k = 1..n of the risk (share wrong) of the
    k most confident answers, ties as the module says. 0 is perfect; a random order scores the error rate."""
    confidence, right = _checked(confidence, right)
    block, _ = tie_blocks(confidence)
    size = np.bincount(block)
    return float(aurc_of_blocks(size, np.bincount(block, weights=1.0 - right, minlength=size.size)))


def excess_aurc(confidence: np.ndarray, right: np.ndarray) -> float:
    """E-AURC (Geifman et al., ICLR 2019): AURC less that of a perfect ranking (every right answer
    first), so that what is left is the ranking's fault rather than the error rate's."""
    confidence, right = _checked(confidence, right)
    return aurc(confidence, right) - aurc(right, right)


@dataclass(frozen=True)
class RankedAnswers:
    """What AURC reads of a cell's answers: each question's tie block (``block``, 0 the most confident, of
    ``n_blocks``) and 1 where its answer is wrong (``wrong``). Read once, it serves every resample."""

    block: np.ndarray
    n_blocks: int
    wrong: np.ndarray

    @property
    def key(self) -> tuple[bytes, bytes]:
        """Equal for two confidences that rank the same answers alike (a calibrator keeping the order): their AURCs agree."""
        return self.block.tobytes(), self.wrong.tobytes()


def ranked_answers(confidence: np.ndarray, right: np.ndarray) -> RankedAnswers:
    """The answers' tie blocks and wrong answers (:class:`RankedAnswers`)."""
    confidence, right = _checked(confidence, right)
    block, distinct = tie_blocks(confidence)
    return RankedAnswers(block, int(distinct.size), 1.0 - right)


def aurc_of_drawn(ranked: RankedAnswers, idx: np.ndarray) -> np.ndarray:
    """AURC of each row of the ``(m, n)`` question indices ``idx`` (bootstrap resamples): a drawn
    question counts as often as it is drawn, in its tie block (repeats of a question tie with it)."""
    m, n_blocks = idx.shape[0], ranked.n_blocks
    flat = (ranked.block[idx] + n_blocks * np.arange(m)[:, None]).ravel()  # one block range per row: one bincount
    size = np.bincount(flat, minlength=m * n_blocks).reshape(m, n_blocks)
    wrong = np.bincount(flat, weights=ranked.wrong[idx].ravel(), minlength=m * n_blocks).reshape(m, n_blocks)
    return aurc_of_blocks(size, wrong)


def aurc_of_resamples(confidence: np.ndarray, right: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """:func:`aurc_of_drawn` of the answers' :func:`ranked_answers`."""
    return aurc_of_drawn(ranked_answers(confidence, right), idx)


def risk_coverage(confidence: np.ndarray, right: np.ndarray) -> RiskCoverage:
    """The risk–coverage curve, one point per distinct confidence (see :class:`RiskCoverage`)."""
    confidence, right = _checked(confidence, right)
    block, distinct = tie_blocks(confidence)
    answered = np.cumsum(np.bincount(block))
    right_answered = np.cumsum(np.bincount(block, weights=right, minlength=distinct.size))
    return RiskCoverage(distinct, answered / confidence.size, right_answered / answered)


def _reaching(curve: RiskCoverage, target: float) -> np.ndarray:
    if isinstance(target, bool) or not isinstance(target, numbers.Real) or not 0.0 <= target <= 1.0:  # True is no accuracy
        raise ValueError(f"target accuracy must be a number in [0, 1], got {target!r}")
    return np.flatnonzero(curve.accuracy >= target - _TOLERANCE)


def coverage_at_accuracy(confidence: np.ndarray, right: np.ndarray, target: float) -> float:
    """The largest share of questions a threshold can answer with accuracy ≥ ``target`` on the
    answered ones (the accuracy need not stay above target at smaller shares); 0 if none can."""
    curve = risk_coverage(confidence, right)
    reaching = _reaching(curve, target)
    return float(curve.coverage[reaching[-1]]) if reaching.size else 0.0


def threshold_for_accuracy(probabilities: np.ndarray, right: np.ndarray, target: float) -> float:
    """The threshold an application answers at (``probability >= threshold``) to reach accuracy
    ``target`` on held-out questions while answering as many as it can: the lowest confidence of
    :func:`coverage_at_accuracy`'s answered questions; ``inf`` (answer nothing) if no threshold reaches it."""
    curve = risk_coverage(probabilities, right)
    reaching = _reaching(curve, target)
    return float(curve.threshold[reaching[-1]]) if reaching.size else float("inf")


def subsample_curve(curve: RiskCoverage, max_points: int = 200) -> dict[str, list[float]]:
    """The curve as JSON lists of at most ``max_points`` points, evenly spaced in rank, ends kept."""
    keep = np.unique(np.linspace(0, curve.coverage.size - 1, min(max_points, curve.coverage.size)).round().astype(int))
    return {"threshold": curve.threshold[keep].tolist(), "coverage": curve.coverage[keep].tolist(),
            "accuracy": curve.accuracy[keep].tolist()}


def macro_calibration_error(confidence: np.ndarray, right: np.ndarray) -> dict[str, float]:
    """Instance-level calibration errors of Si et al. (Findings of EMNLP 2022): ``ice_right``, the
    mean of 1 − confidence over right answers; ``ice_wrong``, the mean confidence over wrong ones
    (which is also the binned ECE of the wrong answers alone: their accuracy is 0 in every bin);
    ``macro_ce``, their mean, which weighs right and wrong answers equally however rare either is.
    A missing class (no right or no wrong answer) gives nan for its term and for ``macro_ce``."""
    confidence, right = _checked(confidence, right)
    if (outside := np.flatnonzero(~((confidence >= 0.0) & (confidence <= 1.0)))).size:  # ICE is a gap between probabilities
        raise ValueError(f"confidence {confidence[outside[0]]} of question {outside[0] + 1} is not a probability in [0, 1]")
    is_right = right.astype(bool)
    ice_right = float(np.mean(1.0 - confidence[is_right])) if is_right.any() else float("nan")
    ice_wrong = float(np.mean(confidence[~is_right])) if (~is_right).any() else float("nan")
    return {"ice_right": ice_right, "ice_wrong": ice_wrong, "macro_ce": (ice_right + ice_wrong) / 2.0}
