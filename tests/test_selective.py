"""Selective QA metrics: the risk–coverage curve, AURC, coverage at an accuracy, the threshold for
an accuracy, MacroCE, and the paired bootstrap of an AURC difference."""

import itertools
import math

import numpy as np
import pytest

from bio_mrc.metrics import stats
from bio_mrc.metrics.stats import paired_bootstrap_of_resamples, paired_bootstrap_recomputed, resampled_statistics
from bio_mrc.metrics.calibration_error import expected_calibration_error
from bio_mrc.metrics.selective import (
    aurc, aurc_of_drawn, aurc_of_resamples, coverage_at_accuracy, excess_aurc, macro_calibration_error, ranked_answers, risk_coverage,
    subsample_curve, threshold_for_accuracy,
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


def recomputed_reference(values_a, values_b, statistic, n, n_resamples, seed=0, max_chunk_elements=stats.DEFAULT_MAX_CHUNK_ELEMENTS):
    """The recomputed paired bootstrap drawn contrast by contrast, each seed's statistic on each chunk of draws: what
    the shared draws must reproduce bit for bit."""
    everything = np.arange(n)[None, :]
    value_a = float(np.mean([statistic(item, everything)[0] for item in values_a]))
    value_b = float(np.mean([statistic(item, everything)[0] for item in values_b]))
    s = len(values_a)
    seed_rng = np.random.default_rng([seed, 1])
    resampled = np.empty(n_resamples, dtype=np.float64)
    for rows, idx in stats._resample_indices(n, n_resamples, seed, max_chunk_elements):
        per_seed = np.stack([statistic(a, idx) - statistic(b, idx) for a, b in zip(values_a, values_b)], axis=1)
        if s > 1:
            drawn = np.minimum((seed_rng.random((idx.shape[0], s)) * s).astype(np.intp), s - 1)
            per_seed = per_seed * stats._row_counts(drawn, s) / s
        resampled[rows] = per_seed.sum(axis=1)
    return stats._bootstrap_result(value_a, value_b, value_a - value_b, resampled, 0.95, n, n_seeds=s)


def test_aurc_of_drawn_questions_by_hand():
    ranked = ranked_answers(CONFIDENCE, RIGHT)
    assert ranked.n_blocks == 6 and ranked.wrong.tolist() == [0, 0, 1, 1, 0, 1]
    # every question once is the AURC of the whole set (89/360); question 1 (0.9, right) six times risks nothing
    np.testing.assert_allclose(aurc_of_drawn(ranked, np.array([np.arange(6), np.full(6, 1)])), [89 / 360, 0.0])
    # 0.8 r, 0.7 w, 0.7 w: risks 0, 1/2, 2/3, AURC 7/18
    assert aurc_of_drawn(ranked, np.array([[4, 3, 3]]))[0] == pytest.approx(7 / 18)


def test_aurc_of_drawn_questions_is_aurc_of_resamples_bit_for_bit():
    rng = np.random.default_rng(8)
    for n in (1, 7, 120):
        confidence, right = rng.random(n).round(1), (rng.random(n) < 0.6).astype(float)
        idx = rng.integers(0, n, (5, n))
        expected = [aurc(confidence[row], right[row]) for row in idx]
        np.testing.assert_allclose(aurc_of_drawn(ranked_answers(confidence, right), idx), expected)
        assert aurc_of_drawn(ranked_answers(confidence, right), idx).tolist() == aurc_of_resamples(confidence, right, idx).tolist()


def test_a_confidence_in_the_same_order_ranks_the_answers_alike():
    rng = np.random.default_rng(9)
    confidence, right = rng.random(50).round(2), (rng.random(50) < 0.5).astype(float)
    a, b = ranked_answers(confidence, right), ranked_answers(confidence ** 2 * 0.9, right)
    assert a.key == b.key and a.key != ranked_answers(1 - confidence, right).key
    assert a.key != ranked_answers(confidence, 1 - right).key


def test_resampled_statistics_are_the_paired_bootstraps_draws():
    rng = np.random.default_rng(10)
    scores = rng.random(40)
    mean_of_drawn = lambda item, idx: item[idx].mean(axis=1)  # noqa: E731
    resampled = resampled_statistics([scores, 2 * scores], mean_of_drawn, 40, n_resamples=300, seed=3)
    assert resampled.shape == (2, 300)
    # the bootstrap of a − 0 resamples the mean of a's drawn questions: its interval is these draws' percentiles
    plain = stats.paired_bootstrap(scores, np.zeros(40), n_resamples=300, seed=3)
    assert (plain.ci_low, plain.ci_high) == stats._percentiles(resampled[0], 0.95)
    np.testing.assert_allclose(resampled[1], 2 * resampled[0])
    # one question: every resample draws it
    assert resampled_statistics([np.array([5.0])], mean_of_drawn, 1, n_resamples=4).tolist() == [[5.0] * 4]


@pytest.mark.parametrize("seeds", [1, 2, 3])
@pytest.mark.parametrize("max_chunk_elements", [stats.DEFAULT_MAX_CHUNK_ELEMENTS, 700])
def test_the_shared_draws_give_the_contrast_by_contrast_bootstrap_bit_for_bit(seeds, max_chunk_elements):
    rng = np.random.default_rng(11 + seeds)
    n = 150
    right = [(rng.random(n) < 0.7).astype(float) for _ in range(seeds)]
    a = [(np.clip(0.4 * r + 0.6 * rng.random(n), 0, 1).round(2), r) for r in right]
    b = [(rng.random(n).round(1), r) for r in right]
    statistic = lambda item, idx: aurc_of_resamples(item[0], item[1], idx)  # noqa: E731
    expected = recomputed_reference(a, b, statistic, n, 250, seed=5, max_chunk_elements=max_chunk_elements)
    ranked = [ranked_answers(*item) for item in a + b]
    drawn = resampled_statistics(ranked, aurc_of_drawn, n, n_resamples=250, seed=5, max_chunk_elements=max_chunk_elements)
    whole = [float(aurc(*item)) for item in a + b]
    shared = paired_bootstrap_of_resamples(whole[:seeds], whole[seeds:], drawn[:seeds], drawn[seeds:], n, seed=5)
    assert shared.to_dict() == expected.to_dict()
    assert paired_bootstrap_recomputed(a, b, statistic, n, n_resamples=250, seed=5,
                                       max_chunk_elements=max_chunk_elements).to_dict() == expected.to_dict()
