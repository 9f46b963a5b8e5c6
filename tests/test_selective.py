"""Selective QA metrics: the risk–coverage curve, AURC, coverage at an accuracy, the threshold for
an accuracy, MacroCE, and the paired bootstrap of an AURC difference."""

import itertools
import math

import numpy as np
import pytest

from bio_mrc.metrics.stats import paired_bootstrap_recomputed
from bio_mrc.metrics.calibration_error import expected_calibration_error
from bio_mrc.metrics.selective import (
    aurc, aurc_of_resamples, coverage_at_accuracy, excess_aurc, macro_calibration_error, risk_coverage, subsample_curve,
    threshold_for_accuracy,
)

# Six questions, most confident first: right, right, wrong, right, wrong, wrong.
CONFIDENCE = np.array([0.6, 0.9, 0.4, 0.7, 0.8, 0.5])  # shuffled: order must not matter
RIGHT = np.array([1, 1, 0, 0, 1, 0])


def test_aurc_and_coverage_by_hand():
    # Answering the k most confident (0.9 r, 0.8 r, 0.7 w, 0.6 r, 0.5 w, 0.4 w) for k = 1..6:
    # risks 0, 0, 1/3, 1/4, 2/5, 1/2; AURC is their mean: (20 + 15 + 24 + 30) / 60 / 6 = 89/360.
    assert aurc(CONFIDENCE, RIGHT) == pytest.approx(89 / 360)
    # a perfect ranking (r r r w w w) has risks 0, 0, 0, 1/4, 2/5, 1/2: AURC (15 + 24 + 30) / 60 / 6 = 69/360
    assert excess_aurc(CONFIDENCE, RIGHT) == pytest.approx(20 / 360)
    curve = risk_coverage(CONFIDENCE, RIGHT)
    np.testing.assert_allclose(curve.accuracy, [1, 1, 2 / 3, 3 / 4, 3 / 5, 1 / 2])
    np.testing.assert_allclose(curve.coverage, np.arange(1, 7) / 6)
    np.testing.assert_allclose(curve.threshold, [0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
    assert coverage_at_accuracy(CONFIDENCE, RIGHT, 0.8) == pytest.approx(2 / 6)
    assert coverage_at_accuracy(CONFIDENCE, RIGHT, 0.9) == pytest.approx(2 / 6)
    # accuracy dips to 2/3 at three answers and recovers to 3/4 at four: the largest share counts
    assert coverage_at_accuracy(CONFIDENCE, RIGHT, 0.75) == pytest.approx(4 / 6)
    assert threshold_for_accuracy(CONFIDENCE, RIGHT, 0.75) == 0.6
    assert threshold_for_accuracy(CONFIDENCE, RIGHT, 0.8) == 0.8
    assert coverage_at_accuracy(CONFIDENCE, RIGHT, 0.5) == 1.0 and threshold_for_accuracy(CONFIDENCE, RIGHT, 0.5) == 0.4
    wrong = np.zeros(6)
    assert coverage_at_accuracy(CONFIDENCE, wrong, 0.8) == 0.0 and threshold_for_accuracy(CONFIDENCE, wrong, 0.8) == math.inf


@pytest.mark.parametrize("target", [True, "0.8", math.nan, -0.1, 1.1])
def test_a_target_accuracy_that_is_no_number_in_0_1_is_refused(target):
    """``True`` was read as a target of 1.0 (threshold 0.8 here: the two most confident answers are right), a string
    ended in a TypeError."""
    for measure in (coverage_at_accuracy, threshold_for_accuracy):
        with pytest.raises(ValueError, match=r"target accuracy must be a number in \[0, 1\], got "):
            measure(CONFIDENCE, RIGHT, target)
    assert threshold_for_accuracy(CONFIDENCE, RIGHT, 1) == 0.8 and threshold_for_accuracy(CONFIDENCE, RIGHT, np.float64(0.8)) == 0.8


def test_ties_take_the_expected_risk_over_their_orders():
    confidence = np.array([0.9, 0.5, 0.5, 0.5, 0.2])
    right = np.array([1, 1, 0, 0, 1])
    expected = []
    for order in itertools.permutations([1, 2, 3]):  # every order of the three tied questions
        wrong = 1 - right[[0, *order, 4]]
        expected.append(np.mean(np.cumsum(wrong) / np.arange(1, 6)))
    assert aurc(confidence, right) == pytest.approx(np.mean(expected))
    curve = risk_coverage(confidence, right)  # a threshold answers the tie all at once
    np.testing.assert_allclose(curve.coverage, [0.2, 0.8, 1.0])
    np.testing.assert_allclose(curve.accuracy, [1.0, 0.5, 0.6])


def brute_force_aurc(confidence, right):
    """The literal definition, ties as expected risks: a loop over k."""
    total, n = 0.0, len(confidence)
    for k in range(1, n + 1):
        threshold = np.sort(confidence)[::-1][k - 1]
        above = confidence > threshold
        tied = confidence == threshold
        wrong = (1 - right[above]).sum() + (k - above.sum()) * (1 - right[tied]).mean()
        total += wrong / k
    return total / n


@pytest.mark.parametrize("decimals", [None, 1])
def test_aurc_matches_a_brute_force_loop(decimals):
    rng = np.random.default_rng(3)
    for _ in range(5):
        confidence = rng.random(60)
        confidence = confidence if decimals is None else confidence.round(decimals)  # many ties
        right = (rng.random(60) < confidence).astype(float)
        assert aurc(confidence, right) == pytest.approx(brute_force_aurc(confidence, right))


def test_aurc_of_resamples_is_aurc_of_the_drawn_questions():
    rng = np.random.default_rng(4)
    confidence, right = rng.random(30).round(1), (rng.random(30) < 0.6).astype(float)
    idx = rng.integers(0, 30, (4, 30))
    expected = [aurc(confidence[row], right[row]) for row in idx]
    np.testing.assert_allclose(aurc_of_resamples(confidence, right, idx), expected)


def test_macro_ce_by_hand():
    confidence, right = np.array([0.9, 0.6, 0.8, 0.3]), np.array([1, 1, 0, 0])
    measured = macro_calibration_error(confidence, right)
    assert measured["ice_right"] == pytest.approx((0.1 + 0.4) / 2)  # mean of 1 − confidence over right answers
    assert measured["ice_wrong"] == pytest.approx((0.8 + 0.3) / 2)  # mean confidence over wrong answers
    assert measured["macro_ce"] == pytest.approx(0.4)
    wrong = ~right.astype(bool)  # the ECE of the wrong answers alone is their mean confidence
    assert expected_calibration_error(confidence[wrong], right[wrong]) == pytest.approx(measured["ice_wrong"])
    assert math.isnan(macro_calibration_error(confidence, np.ones(4))["macro_ce"])


@pytest.mark.parametrize("confidence", [[1.5, 0.2], [0.3, -0.1], [float("inf"), 0.2]])
def test_macro_ce_refuses_a_confidence_that_is_no_probability(confidence):
    with pytest.raises(ValueError, match="is not a probability in \\[0, 1\\]"):
        macro_calibration_error(np.array(confidence), np.array([1, 0]))


def test_the_curve_is_subsampled_with_its_ends():
    rng = np.random.default_rng(5)
    curve = risk_coverage(rng.random(1000), rng.integers(0, 2, 1000))
    small = subsample_curve(curve, 200)
    assert len(small["coverage"]) == 200 and small["coverage"][0] == 0.001 and small["coverage"][-1] == 1.0


def test_the_paired_bootstrap_of_an_aurc_difference():
    rng = np.random.default_rng(6)
    n = 300
    right = (rng.random(n) < 0.7).astype(float)
    good = np.clip(0.5 * right + 0.5 * rng.random(n), 0, 1)  # separates right from wrong
    useless = rng.random(n)
    statistic = lambda item, idx: aurc_of_resamples(item[0], item[1], idx)  # noqa: E731
    result = paired_bootstrap_recomputed([(good, right)], [(useless, right)], statistic, n, n_resamples=300, seed=0)
    assert result.diff == pytest.approx(aurc(good, right) - aurc(useless, right))
    assert result.ci_high < 0 and result.significant  # the better confidence has the smaller area
    same = paired_bootstrap_recomputed([(good, right)], [(good, right)], statistic, n, n_resamples=50)
    assert same.diff == 0 and same.ci_low == same.ci_high == 0
    # several seeds: the mean of the seeds' AURCs, seeds resampled too
    two = paired_bootstrap_recomputed([(good, right), (good, right)], [(useless, right), (useless, right)], statistic, n,
                                      n_resamples=100)
    assert two.n_seeds == 2 and two.diff == pytest.approx(result.diff) and two.ci_high < 0
