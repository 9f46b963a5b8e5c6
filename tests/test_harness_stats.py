"""Statistics and plots of the comparison report."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from bio_mrc.harness.plots import paletted_png, plot_breakdown, plot_cell_scores, plot_threshold_curve
from bio_mrc.harness.summary_records import CellKey
from bio_mrc.harness.groups import QUESTION_WORDS, bin_labels, breakdown, group_order, length_bins, question_word
from bio_mrc.metrics.stats import (
    BootstrapResult,
    Interval,
    agreement,
    format_mean_sd,
    format_p_value,
    holm,
    mean_sd,
    paired_bootstrap,
    paired_bootstrap_ratio,
    resampling,
    score_interval,
    two_level_bootstrap,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def noisy_scores(n=500, seed=0):
    """Integer-valued F1-like scores in 0..100 with a wide spread."""
    return np.random.default_rng(seed).integers(0, 101, n).astype(float)


# ---------------------------------------------------------------- bootstrap


def test_identical_arrays_give_zero_diff_not_significant():
    a = noisy_scores()
    r = paired_bootstrap(a, a.copy(), n_resamples=300)
    assert (r.diff, r.ci_low, r.ci_high) == (0.0, 0.0, 0.0)
    assert r.p_value == 1.0
    assert not r.significant
    assert r.mean_a == r.mean_b == pytest.approx(a.mean())
    assert (r.n_questions, r.n_resamples) == (500, 300)


def test_constant_shift_gives_degenerate_ci_only_when_paired():
    # Scores spread over 0..100, so an UNPAIRED bootstrap would give a CI many points wide;
    # pairing makes every resampled diff exactly 5.
    a = noisy_scores()
    b = a - 5.0
    r = paired_bootstrap(a, b, n_resamples=500)
    assert r.diff == 5.0
    assert (r.ci_low, r.ci_high) == (5.0, 5.0)
    assert r.significant
    assert r.p_value == 0.0
    assert paired_bootstrap(b, a, n_resamples=500).diff == -5.0


def test_shuffling_b_breaks_pairing():
    rng = np.random.default_rng(1)
    a = rng.uniform(0, 100, 400)
    b = a - 1.0 + rng.normal(0, 1.0, 400)
    paired = paired_bootstrap(a, b, n_resamples=1000, seed=3)
    shuffled = paired_bootstrap(a, rng.permutation(b), n_resamples=1000, seed=3)
    assert shuffled.diff == pytest.approx(paired.diff)  # same means...
    assert paired.significant and paired.ci_low > 0
    # ...but the per-question differences are no longer matched: far wider CI, no significance.
    assert (shuffled.ci_high - shuffled.ci_low) > 10 * (paired.ci_high - paired.ci_low)
    assert not shuffled.significant
    assert shuffled.p_value > paired.p_value


def test_seed_reproducibility():
    a, b = noisy_scores(seed=1), noisy_scores(seed=2)
    assert paired_bootstrap(a, b, seed=7) == paired_bootstrap(a, b, seed=7)
    assert paired_bootstrap(a, b, seed=7) != paired_bootstrap(a, b, seed=8)


def test_ci_covers_true_diff_and_p_value_tracks_effect():
    rng = np.random.default_rng(42)
    n = 2000
    b = rng.uniform(0, 100, n)
    a = b + 3.0 + rng.normal(0, 20, n)  # true mean difference 3
    r = paired_bootstrap(a, b, n_resamples=2000, seed=0)
    assert r.ci_low < 3.0 < r.ci_high
    assert r.ci_low < r.diff < r.ci_high
    assert r.diff == pytest.approx(r.mean_a - r.mean_b)
    # analytic standard error of the mean paired difference is ~20/sqrt(2000) ~ 0.45
    assert (r.ci_high - r.ci_low) == pytest.approx(2 * 1.96 * 20 / np.sqrt(n), rel=0.15)
    assert r.significant and r.p_value < 0.01
    # no true effect (fixed seeds, so deterministic): not significant, large p
    null = paired_bootstrap(b + rng.normal(0, 20, n), b, n_resamples=2000, seed=0)
    assert null.ci_low < 0.0 < null.ci_high
    assert not null.significant and null.p_value > 0.05
    wider = paired_bootstrap(a, b, n_resamples=2000, confidence=0.99, seed=0)
    assert wider.ci_low < r.ci_low and wider.ci_high > r.ci_high


@pytest.mark.parametrize("max_chunk_elements", [1, 7 * 123, 7 * 123 + 5, 10**9])
def test_chunked_equals_unchunked(max_chunk_elements):
    a, b = noisy_scores(123, seed=4), noisy_scores(123, seed=5)
    whole = paired_bootstrap(a, b, n_resamples=250, seed=11)
    chunked = paired_bootstrap(a, b, n_resamples=250, seed=11, max_chunk_elements=max_chunk_elements)
    assert chunked == whole


def test_bootstrap_validation_and_to_dict():
    with pytest.raises(ValueError, match="score arrays differ in length: 3 vs 4"):
        paired_bootstrap(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="score arrays are empty"):
        paired_bootstrap(np.array([]), np.array([]))
    with pytest.raises(ValueError, match="confidence must lie strictly between 0 and 1"):
        paired_bootstrap(np.ones(3), np.ones(3), confidence=1.0)
    with pytest.raises(ValueError, match="scores_a contains non-finite values"):
        paired_bootstrap(np.array([1.0, np.nan]), np.ones(2))
    r = paired_bootstrap([1.0, 2.0, 3.0], [1.0, 1.0, 1.0], n_resamples=50)
    d = json.loads(json.dumps(r.to_dict()))
    assert set(d) == {f for f in BootstrapResult.__dataclass_fields__}
    assert d["diff"] == 1.0 and d["n_questions"] == 3 and isinstance(d["significant"], bool)


def test_one_question_is_never_significant():
    """Every resample of one question repeats it: the "interval" is the point (3, 3), no evidence of a difference,
    so p is 1 and the difference not significant (it read p 0, significant); two questions are resampled."""
    one = paired_bootstrap([4.0], [1.0], n_resamples=200)
    assert (one.diff, one.ci_low, one.ci_high, one.p_value, one.significant) == (3.0, 3.0, 3.0, 1.0, False)
    assert two_level_bootstrap(np.array([[4.0]]), np.array([[1.0]]), n_resamples=200).significant is False
    two = paired_bootstrap([4.0, 5.0], [1.0, 1.0], n_resamples=200)
    assert (two.ci_low, two.ci_high, two.p_value, two.significant) == (3.0, 4.0, 0.0, True)
    seeds = two_level_bootstrap(np.array([[4.0], [5.0]]), np.array([[1.0], [1.0]]), n_resamples=200)
    assert seeds.n_questions == 1 and seeds.significant is True  # one question, two seeds: the seeds are resampled


# ---------------------------------------------------------------- Holm


def test_holm_against_a_hand_computed_example():
    # sorted: 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04, raised to the running max 0.06)
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])
    # capped at 1 and monotone in the sorted order; ties keep equal values
    np.testing.assert_allclose(holm([0.5, 0.2, 0.2]), [0.6, 0.6, 0.6])
    np.testing.assert_allclose(holm([0.9, 0.001]), [0.9, 0.002])
    assert holm([0.03]).tolist() == [0.03]  # a family of one is not adjusted
    assert holm([]).tolist() == []
    with pytest.raises(ValueError, match=re.escape("numbers in [0, 1], got [0.1, 1.5]")):
        holm([0.1, 1.5])
    with pytest.raises(ValueError, match=re.escape("one-dimensional sequence of numbers in [0, 1], got [[0.1, 0.2]]")):
        holm([[0.1, 0.2]])


def test_holm_rejects_what_the_step_down_procedure_rejects():
    rng = np.random.default_rng(0)
    for _ in range(200):
        p = rng.uniform(0, 0.1, rng.integers(1, 8)) ** rng.uniform(0.5, 2)
        m, order = len(p), np.argsort(p)
        rejected = np.zeros(m, dtype=bool)
        for rank, i in enumerate(order):  # the textbook procedure: stop at the first p_(j) > alpha / (m - j + 1)
            if p[i] > 0.05 / (m - rank):
                break
            rejected[i] = True
        np.testing.assert_array_equal(holm(p) <= 0.05, rejected)


# ---------------------------------------------------------------- two-level bootstrap (seeds x questions)


def seeded_scores(seed_sd, n_seeds=4, n=600, effect=1.0, seed=0):
    """(seeds, questions) scores of two cells: a per-question difference ~ N(effect, 15) shared by every
    seed, plus a per-seed shift of the difference with standard deviation ``seed_sd``."""
    rng = np.random.default_rng(seed)
    b = rng.uniform(0, 100, (n_seeds, n))
    shift = rng.normal(0, seed_sd, (n_seeds, 1)) if seed_sd else np.zeros((n_seeds, 1))
    return b + effect + rng.normal(0, 15, n) + shift, b


def test_two_level_bootstrap_without_seed_variance_matches_the_question_bootstrap():
    a, b = seeded_scores(seed_sd=0.0)
    d = a - b
    assert np.allclose(d, d[0])  # the seeds agree on every question's difference
    two = two_level_bootstrap(a, b, n_resamples=1000, seed=5)
    one = paired_bootstrap(a.mean(axis=0), b.mean(axis=0), n_resamples=1000, seed=5)
    assert two.diff == pytest.approx(one.diff)
    assert (two.ci_high - two.ci_low) == pytest.approx(one.ci_high - one.ci_low, rel=0.02)
    assert (two.n_seeds, two.n_questions, one.n_seeds) == (4, 600, 1)


def test_two_level_bootstrap_with_seed_variance_is_wider():
    quiet, loud = seeded_scores(seed_sd=0.0), seeded_scores(seed_sd=4.0)
    width = lambda r: r.ci_high - r.ci_low  # noqa: E731
    two_quiet, two_loud = two_level_bootstrap(*quiet, seed=1), two_level_bootstrap(*loud, seed=1)
    questions_only = paired_bootstrap(loud[0].mean(axis=0), loud[1].mean(axis=0), seed=1)
    assert width(two_loud) > 2 * width(two_quiet)
    assert width(two_loud) > 2 * width(questions_only)  # averaging the seeds first hides their variance
    assert two_loud.p_value > questions_only.p_value


def test_two_level_bootstrap_with_one_seed_is_the_question_bootstrap():
    a, b = noisy_scores(300, seed=1), noisy_scores(300, seed=2)
    one, two = paired_bootstrap(a, b, seed=3), two_level_bootstrap(a[None], b[None], seed=3)
    assert two.diff == one.diff and two.n_seeds == 1
    assert (two.ci_low, two.ci_high, two.p_value) == pytest.approx((one.ci_low, one.ci_high, one.p_value), abs=1e-9)


def test_two_level_bootstrap_is_paired_and_chunk_invariant():
    a, b = seeded_scores(seed_sd=2.0, n_seeds=3, n=123)
    whole = two_level_bootstrap(a, b, n_resamples=250, seed=11)
    for chunk in (1, 4 * 123 * 7 + 3, 10**9):
        chunked = two_level_bootstrap(a, b, n_resamples=250, seed=11, max_chunk_elements=chunk)
        assert (chunked.ci_low, chunked.ci_high, chunked.p_value) == pytest.approx((whole.ci_low, whole.ci_high, whole.p_value))
    shifted = two_level_bootstrap(a, a - 5.0, seed=0)  # a constant difference in every seed and question
    assert (shifted.diff, shifted.ci_low, shifted.ci_high, shifted.p_value) == pytest.approx((5.0, 5.0, 5.0, 0.0))
    with pytest.raises(ValueError, match=re.escape("value arrays differ in shape: (3, 123, 1) vs (2, 123, 1)")):
        two_level_bootstrap(a, b[:2])
    with pytest.raises(ValueError, match=re.escape("values_a must be (seeds, questions) scores, got shape (123,)")):
        two_level_bootstrap(a[0], b[0])  # one-dimensional: use paired_bootstrap


def micro_f1(sums):
    """F1 of (correct, predicted, gold) column sums, as a MultiSpanQA micro F1."""
    sums = np.asarray(sums, dtype=np.float64)
    p, r = sums[..., 0] / sums[..., 1], sums[..., 0] / sums[..., 2]
    return 100 * 2 * p * r / (p + r)


def counts(n, hit_rate, seed):
    rng = np.random.default_rng(seed)
    predicted, gold = rng.integers(1, 4, n), rng.integers(1, 4, n)
    return np.stack([rng.binomial(np.minimum(predicted, gold), hit_rate), predicted, gold], axis=1).astype(float)


def test_two_level_bootstrap_of_a_ratio_of_summed_counts():
    a, b = counts(400, 0.7, 0), counts(400, 0.5, 1)
    one = paired_bootstrap_ratio(a, b, micro_f1, seed=2)
    two = two_level_bootstrap(a[None], b[None], micro_f1, seed=2)
    assert two.diff == pytest.approx(one.diff) and two.mean_a == pytest.approx(micro_f1(a.sum(axis=0)))
    assert (two.ci_low, two.ci_high) == pytest.approx((one.ci_low, one.ci_high))
    seeds_a, seeds_b = np.stack([a, a, a]), np.stack([b, b, b])  # identical seeds: the question bootstrap again
    assert (two_level_bootstrap(seeds_a, seeds_b, micro_f1, seed=2).ci_high - one.ci_high) == pytest.approx(0, abs=0.3)
    varied = two_level_bootstrap(np.stack([a, counts(400, 0.9, 3), counts(400, 0.4, 4)]), seeds_b, micro_f1, seed=2)
    assert varied.ci_high - varied.ci_low > 2 * (one.ci_high - one.ci_low)
    with pytest.raises(ValueError, match=re.escape("values_a must be (seeds, questions, k) counts, got shape (400, 3)")):
        two_level_bootstrap(a, b, micro_f1)  # counts need a seed axis


def test_score_interval_of_a_cell_mean():
    x = noisy_scores(800, seed=6)
    one = score_interval(x[None], seed=0)
    assert one.value == pytest.approx(x.mean()) and one.ci_low < x.mean() < one.ci_high
    assert (one.ci_high - one.ci_low) == pytest.approx(2 * 1.96 * x.std() / np.sqrt(800), rel=0.15)
    same = score_interval(np.stack([x, x, x]), seed=0)
    assert (same.ci_low, same.ci_high) == pytest.approx((one.ci_low, one.ci_high))
    spread = score_interval(np.stack([x - 6, x, x + 6]), seed=0)
    assert spread.value == pytest.approx(x.mean()) and spread.ci_high - spread.ci_low > 2 * (one.ci_high - one.ci_low)
    assert one.to_dict()["resampling"] == "questions" and spread.to_dict()["resampling"] == "seeds × questions"
    assert resampling(1) == "questions" and resampling(3) == "seeds × questions"
    c = counts(300, 0.6, 0)
    ratio = score_interval(c[None], micro_f1, seed=0)
    assert ratio.value == pytest.approx(micro_f1(c.sum(axis=0))) and ratio.ci_low < ratio.value < ratio.ci_high


# ---------------------------------------------------------------- agreement / question words


def test_agreement_uses_normaliser():
    norm = lambda s: " ".join(s.lower().replace("the ", "").split())  # noqa: E731
    a = ["The Beatles", "1969", "Paris", ""]
    b = ["beatles", "1970", "paris ", ""]
    assert agreement(a, b, norm) == 0.75
    assert agreement(a, b, lambda s: s) == 0.25
    with pytest.raises(ValueError, match="answer lists differ in length: 4 vs 2"):
        agreement(a, b[:2], norm)


@pytest.mark.parametrize(
    "question, word",
    [
        ("In what year did the war end?", "what"),
        ("How many moons does Mars have?", "how"),
        ("How much did it cost?", "how"),
        ("Name the capital of France.", "other"),
        ("Name the other city.", "other"),
        ("WHO wrote Hamlet?", "who"),
        ("To whom was it addressed?", "whom"),
        ("Whose idea was it?", "whose"),
        ("Which of these came first, and what followed?", "which"),
        ("Somewhat whimsical wherever however", "other"),  # substrings are not whole words
        ("The city where he was born?", "where"),
        ("Why?", "why"),
        ("When's the deadline?", "when"),
    ],
)
def test_question_word(question, word):
    assert question_word(question) == word
    assert word in QUESTION_WORDS


# ---------------------------------------------------------------- bins / breakdown


def test_length_bins_labels():
    edges = (1, 2, 3, 5, 9)
    assert bin_labels(edges) == ["<1", "1", "2", "3-4", "5-8", "9+"]
    values = np.array([0, 1, 2, 3, 4, 5, 8, 9, 40])
    assert length_bins(values, edges).tolist() == ["<1", "1", "2", "3-4", "3-4", "5-8", "5-8", "9+", "9+"]
    assert length_bins(np.array([0, 99, 100, 250, 256, 1000]), (0, 100, 256)).tolist() == [
        "0-99", "0-99", "100-255", "100-255", "256+", "256+"]
    with pytest.raises(ValueError, match=re.escape("edges must be strictly increasing: [3, 2]")):
        bin_labels((3, 2))


def test_group_order():
    assert group_order(["9+", "3-4", "1", "<1", "5-8", "2", "1"]) == ["<1", "1", "2", "3-4", "5-8", "9+"]
    assert group_order(["other", "who", "how", "what", "how"]) == ["how", "what", "who", "other"]


def test_answer_length_groups_ask_the_task_which_questions_stand_apart():
    from dataclasses import replace

    from bio_mrc import registry
    from bio_mrc.harness.summary import question_groups
    from bio_mrc.types import Example

    context = "Ann came in 1843."
    examples = [Example("a", "Who came?", context, (((0, 3),),)), Example("b", "Why?", context, ()),
                Example("c", "When?", context, (((8, 8),),)), Example("d", "What year?", context, (((12, 16),),))]
    answer_tokens, context_tokens = np.array([1, 0, 0, 12]), np.array([5, 5, 5, 150])

    def groups(task):
        return {name: labels.tolist() for name, labels in question_groups(examples, answer_tokens, context_tokens, task).items()}

    v1 = groups(registry.task("squad-v1.1"))
    assert v1 == {"answer length (tokens)": ["1", "<1", "<1", "9-16"], "question word": ["who", "why", "when", "what"],
                  "context length (tokens)": ["1-99", "1-99", "1-99", "150-199"]}
    # SQuAD 2.0 scores questions without an answer apart (HasAns/NoAns): they are a group of their own, and an answer
    # of no token counts one, so no "<1" bin stands beside "no answer"
    v2 = groups(registry.task("squad-v2.0"))
    assert v2 == {**v1, "answer length (tokens)": ["1", "no answer", "1", "9-16"]}
    assert groups(replace(registry.task("squad-v1.1"), no_answer=True)) == v2  # the entry's subsets decide, not its name


def test_group_order_keeps_the_bins_in_order_beside_no_answer():
    # SQuAD 2.0's answer-length groups: the bins by their lower bound, then "no answer" (not "1, 17+, 2, ...")
    labels = ["17+", "2", "no answer", "1", "9-16", "3-4", "5-8", "no answer"]
    assert group_order(labels) == ["1", "2", "3-4", "5-8", "9-16", "17+", "no answer"]


def test_breakdown_counts_and_means():
    groups = np.array(["1", "3-4", "1", "9+", "3-4", "3-4"])
    scores = {
        "greedy": np.array([100.0, 50.0, 0.0, 20.0, 40.0, 60.0]),
        "viterbi": np.array([80.0, 0.0, 40.0, 10.0, 0.0, 30.0]),
    }
    out = breakdown(scores, groups)
    assert list(out) == ["greedy", "viterbi"]
    assert list(out["greedy"]) == ["1", "3-4", "9+"]
    means = {name: {g: (c["n"], c["mean"]) for g, c in cells.items()} for name, cells in out.items()}
    assert means == {"greedy": {"1": (2, 50.0), "3-4": (3, 50.0), "9+": (1, 20.0)},
                     "viterbi": {"1": (2, 60.0), "3-4": (3, 10.0), "9+": (1, 10.0)}}
    assert out["greedy"]["9+"]["ci_low"] == out["greedy"]["9+"]["ci_high"] == 20.0  # one question: no spread
    # Two questions scored 100 and 0: a resample's mean is 0, 50 or 100, each end with probability 1/4.
    assert (out["greedy"]["1"]["ci_low"], out["greedy"]["1"]["ci_high"]) == (0.0, 100.0)
    words = np.array(["what", "other", "how", "what"])
    by_word = breakdown({"x": np.array([10.0, 20.0, 30.0, 50.0])}, words)
    assert list(by_word["x"]) == ["how", "what", "other"]
    assert (by_word["x"]["what"]["n"], by_word["x"]["what"]["mean"]) == (2, 30.0)
    explicit = breakdown({"x": np.array([10.0, 20.0, 30.0, 50.0])}, words, order=["other", "what", "how", "who"])
    assert list(explicit["x"]) == ["other", "what", "how"]
    with pytest.raises(ValueError, match=re.escape("scores['x'] has 3 values for 4 groups")):
        breakdown({"x": np.ones(3)}, words)


def test_breakdown_intervals_match_the_normal_approximation_on_a_large_group():
    rng = np.random.default_rng(3)
    scores = rng.choice([0.0, 100.0], size=4000, p=[0.3, 0.7])
    cell = breakdown({"x": scores}, np.array(["all"] * scores.size))["x"]["all"]
    half = 1.96 * scores.std(ddof=1) / np.sqrt(scores.size)
    assert cell["ci_low"] == pytest.approx(cell["mean"] - half, abs=0.25 * half)
    assert cell["ci_high"] == pytest.approx(cell["mean"] + half, abs=0.25 * half)
    again = breakdown({"x": scores, "y": scores}, np.array(["all"] * scores.size))
    assert again["x"] == again["y"] == {"all": cell}  # the same draws for every decoding, reproducible


def test_mean_sd_and_format():
    assert mean_sd([46.51]) == (46.51, 0.0)
    m, sd = mean_sd([1.0, 2.0, 3.0, 4.0])
    assert m == 2.5 and sd == pytest.approx(np.sqrt(5 / 3))  # ddof=1, not sqrt(5/4)
    assert format_mean_sd([46.51]) == "46.51"
    assert format_mean_sd([46.0, 47.0, 46.5]) == "46.50 ± 0.50"
    assert format_mean_sd([1.0, 2.0], digits=1) == "1.5 ± 0.7"
    with pytest.raises(ValueError, match="mean_sd of no values"):
        mean_sd([])


@pytest.mark.parametrize("values", [[float("nan")], [1.0, float("nan")], [1.0, float("inf")], [float("-inf"), 2.0]])
def test_mean_sd_refuses_non_finite_values_as_the_other_statistics_do(values):
    """It printed "nan ± nan" where the bootstrap functions refuse non-finite scores."""
    with pytest.raises(ValueError, match="mean_sd of non-finite values"):
        mean_sd(values)
    with pytest.raises(ValueError, match="mean_sd of non-finite values"):
        format_mean_sd(values)


def test_a_p_value_of_zero_is_printed_as_the_bound_the_resamples_allow():
    assert format_p_value(0.0412) == "0.041"
    assert format_p_value(1.0) == "1.000"
    assert format_p_value(0.0) == "< 0.002"  # 2 / 1000 resamples
    assert format_p_value(0.0, tests=4) == "< 0.008"  # Holm over 4 tests
    assert format_p_value(0.0, tests=3, n_resamples=100) == "< 0.060"
    assert format_p_value(0.0, tests=800) == "< 1.000"


# ---------------------------------------------------------------- plots


def test_plot_breakdown_writes_png(tmp_path):
    bd = breakdown(
        {CellKey("joint", "greedy"): np.array([100.0, 50.0, 0.0, 20.0]), CellKey("joint", "viterbi"): np.array([80.0, 0.0, 40.0, 10.0])},
        length_bins(np.array([1, 3, 1, 12]), (1, 2, 3, 5, 9)),
    )
    out = plot_breakdown(bd, "F1 against answer length", "answer length (words)", tmp_path / "sub" / "ans.png")
    assert out == tmp_path / "sub" / "ans.png"
    data = out.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 1000
    with pytest.raises(ValueError, match="nothing to plot"):
        plot_breakdown({}, "t", "x", tmp_path / "empty.png")


def _png_size(path):
    from PIL import Image

    with Image.open(path) as image:
        return image.size


@pytest.mark.slow
def test_many_cells_are_laid_out_as_a_grid_of_facets_not_one_row(tmp_path):
    from bio_mrc.harness.plots import plot_reliability, plot_risk_coverage
    from bio_mrc.harness.selective_records import RiskCoverageCurve

    runs = ["joint-3k", "joint-10k", "joint-30k", "joint-all"]
    labels = [CellKey(run, decoding) for run in runs for decoding in ("span", "bio", "joint")]
    labels += [CellKey("span-only", "span"), CellKey("bio-only", "bio")]
    bins = {"bin_count": [0, 5, 10], "bin_confidence": [None, 0.4, 0.8], "bin_accuracy": [None, 0.5, 0.7], "ece": 0.1}
    reliability = plot_reliability({label: {"raw": bins, "calibrated": bins} for label in labels}, tmp_path / "cal.png")
    width, height = _png_size(reliability)
    assert 0.6 < width / height < 1.6  # 14 panels in rows of four, not 14 in a row
    curve = RiskCoverageCurve([0.9, 0.5, 0.1], [0.1, 0.5, 1.0], [1.0, 0.8, 0.6])
    one = plot_risk_coverage({label: {"raw": curve, "calibrated": curve} for label in labels[:2]}, [0.8], tmp_path / "rc2.png")
    many = plot_risk_coverage({label: {"raw": curve, "calibrated": curve} for label in labels}, [0.8], tmp_path / "rc14.png")
    assert _png_size(one)[0] < 700  # one panel: the calibrated curve repeats the raw one and is not drawn
    assert _png_size(many)[1] > 1.8 * _png_size(one)[1]  # six runs: two rows of facets
    rng = np.random.default_rng(0)
    scores = {label: rng.choice([0.0, 100.0], size=120) for label in labels}
    groups = np.array(["short"] * 100 + ["long"] * 20)
    few, faceted = (plot_breakdown(breakdown({label: scores[label] for label in subset}, groups), "F1", "length", tmp_path / f"{len(subset)}.png")
                    for subset in (labels[:3], labels))
    assert _png_size(faceted)[1] > 1.8 * _png_size(few)[1]


def _one_figure_of_each_kind():
    """A builder per figure of the report, each with what reaches past its axes: a legend beside them, facets
    under a title, the breakdown's footnote on small groups, a second panel."""
    from bio_mrc.harness import plots
    from bio_mrc.harness.learning_curve import gap_trend
    from bio_mrc.harness.learning_curve_records import CurvePoint, Gap, LearningCurve
    from bio_mrc.harness.selective_records import RiskCoverageCurve

    cells = [CellKey(run, decoding) for run in ("joint-1k", "joint-10k") for decoding in ("span", "bio", "joint")]
    scores = {cell: np.arange(12.0) * k for k, cell in enumerate(cells)}
    bins = {"bin_count": [0, 5, 10], "bin_confidence": [None, 0.4, 0.8], "bin_accuracy": [None, 0.5, 0.7], "ece": 0.1}
    curve = RiskCoverageCurve([0.9, 0.5, 0.1], [0.1, 0.5, 1.0], [1.0, 0.8, 0.6])
    points = [CurvePoint(cell, "span+bio", int(cell.run[6:-1]) * 1000, [1], 50.0, None, 45.0, 55.0) for cell in cells]
    gaps = [Gap(run, n, -3.0 + n / 5000, -5.0, 0.0, None, None) for run, n in (("joint-1k", 1000), ("joint-10k", 10000))]
    line = {"steps": [1, 2, 3], "loss": [3.0, 2.0, 1.5], "seed": 1}
    return {
        "breakdown": lambda path: plots.plot_breakdown(breakdown(scores, np.array(["short"] * 10 + ["long"] * 2)), "F1", "length", path),
        "cell scores": lambda path: plots.plot_cell_scores({cell: Interval(50.0, 45.0, 55.0, 1, 12, 100) for cell in cells}, "F1 per cell",
                                                           "F1", path),
        "threshold": lambda path: plots.plot_threshold_curve(np.linspace(-2, 2, 5), np.arange(5.0), 0.0, "no-answer threshold", path),
        "reliability": lambda path: plots.plot_reliability({cell: {"raw": bins, "calibrated": bins} for cell in cells[:2]}, path),
        "risk-coverage": lambda path: plots.plot_risk_coverage({cell: {"raw": curve} for cell in cells}, [0.8], path),
        "learning curve": lambda path: plots.plot_learning_curve(LearningCurve(points, {}, gaps, gap_trend(gaps)), path),
        "training loss": lambda path: plots.plot_training_loss({cell.run: [line] for cell in cells}, path),
    }


@pytest.mark.parametrize("kind", ["breakdown", "cell scores", "threshold", "reliability", "risk-coverage", "learning curve", "training loss"])
def test_a_figure_is_laid_out_and_drawn_once_on_a_page_that_holds_all_of_it(kind, tmp_path, monkeypatch):
    """savefig with a layout engine or bbox_inches="tight" draws a figure twice; the report's figures are drawn once,
    laid out so that every artist (legends, titles, footnotes) lies inside the picture, which is the figure's size."""
    from matplotlib.figure import Figure

    from bio_mrc.harness import plots

    draws, saved, draw, save = [], [], Figure.draw, plots._save
    monkeypatch.setattr(Figure, "draw", lambda figure, renderer: draws.append(figure) or draw(figure, renderer))
    monkeypatch.setattr(plots, "_save", lambda figure, path: saved.append(figure) or save(figure, path))
    path = _one_figure_of_each_kind()[kind](tmp_path / "figure.png")
    [figure] = saved
    assert draws == [figure]
    width, height = figure.get_size_inches()
    drawn = figure.get_tightbbox(figure.canvas.get_renderer())  # inches
    assert drawn.x0 >= 0.0 and drawn.y0 >= 0.0 and drawn.x1 <= width and drawn.y1 <= height, (drawn.bounds, width, height)
    assert _png_size(path) == (round(width * plots._DPI), round(height * plots._DPI))


@pytest.mark.parametrize("kind", ["breakdown", "threshold", "risk-coverage", "learning curve"])
def test_every_pixel_of_a_saved_figure_keeps_the_colour_it_was_drawn_in(kind, tmp_path, monkeypatch):
    """The palette of 256 colours holds each anti-aliased edge near its own colour: a palette by median cut gave a rare
    edge colour's pixels another hue (up to 76 levels off in a channel)."""
    from PIL import Image

    from bio_mrc.harness import plots

    saved, save = [], plots._save
    monkeypatch.setattr(plots, "_save", lambda figure, path: saved.append(figure) or save(figure, path))
    path = _one_figure_of_each_kind()[kind](tmp_path / "figure.png")
    drawn = np.asarray(saved[0].canvas.buffer_rgba())[..., :3].astype(int)
    with Image.open(path) as image:
        difference = np.abs(np.asarray(image.convert("RGB"), dtype=int) - drawn)
    assert difference.max() <= 12 and difference.mean() < 0.5, (difference.max(), difference.mean())


def test_plot_threshold_curve_writes_png(tmp_path):
    t = np.linspace(-5, 5, 41)
    f1 = 60 - (t - 1.0) ** 2
    out = plot_threshold_curve(t, f1, best=1.0, title="no-answer threshold", path=str(tmp_path / "thr.png"))
    data = out.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 1000
    with pytest.raises(ValueError, match=re.escape("thresholds and f1 must be non-empty and equal in length: (41,) vs (40,)")):
        plot_threshold_curve(t, f1[:-1], 1.0, "t", tmp_path / "bad.png")


def test_plot_cell_scores_writes_png(tmp_path):
    intervals = {CellKey("joint", "span"): Interval(57.3, 54.6, 59.9, 1, 200, 1000),
                 CellKey("joint", "bio"): Interval(50.8, 48.0, 53.6, 1, 200, 1000),
                 CellKey("bio-only", "bio"): Interval(51.1, 48.2, 54.0, 1, 200, 1000)}
    out = plot_cell_scores(intervals, "F1 per cell", "F1", tmp_path / "cells.png")
    data = out.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 1000
    with pytest.raises(ValueError, match="nothing to plot"):
        plot_cell_scores({}, "t", "F1", tmp_path / "empty.png")


def test_figures_are_saved_with_a_palette_that_keeps_their_look(tmp_path):
    import io

    from matplotlib.figure import Figure
    from PIL import Image

    fig = Figure(figsize=(4, 3))
    axes = fig.add_subplot()
    for k in range(6):  # anti-aliased lines, markers and text in several colours
        axes.plot(np.linspace(0, 1, 50), np.sin(np.linspace(0, 6, 50) + k), marker="o", label=f"line {k}")
    axes.legend()
    full = io.BytesIO()
    fig.savefig(full, format="png", dpi=100)
    original = Image.open(io.BytesIO(full.getvalue())).convert("RGB")
    saved = paletted_png(original)
    paletted = Image.open(io.BytesIO(saved))
    assert paletted.mode == "P" and paletted.size == original.size
    assert len(saved) < len(full.getvalue())
    difference = np.abs(np.asarray(paletted.convert("RGB"), dtype=int) - np.asarray(original, dtype=int))
    assert difference.mean() < 1.0 and np.mean(difference.max(axis=2) > 24) < 0.01  # at most 1% of pixels visibly off


def test_importing_plots_does_not_import_matplotlib():
    code = "import sys, bio_mrc.harness.plots, bio_mrc.metrics.stats; print('matplotlib' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "False"


def test_a_resampled_difference_that_is_exactly_zero_is_a_tie_whatever_float_summation_leaves():
    # the same three scores permuted between the systems: d = a - b = (-0.5, -0.1, +0.6), so a resample drawing each
    # question once differs by exactly 0, which float summation leaves as about +9e-18
    a, b = np.array([0.2, 0.1, 0.7]), np.array([0.7, 0.2, 0.1])
    rows = np.minimum((np.random.default_rng(0).random((10, 3)) * 3).astype(np.intp), 2)  # the documented draws
    assert rows.tolist() == [[1, 0, 0], [0, 2, 2], [1, 2, 1], [2, 2, 0], [2, 0, 2], [0, 2, 1], [0, 1, 0], [0, 2, 1],
                             [1, 1, 2], [2, 2, 1]]
    # exact d* = (-5 c0 - c1 + 6 c2) / 30 for question counts c: -11, +7, +4, +7, +7, 0, -11, 0, +4, +11 (over 30):
    # 2 below 0, 6 above, 2 ties counted on both sides, so p = 2 * min(4, 8) / 10
    ties = (a - b)[rows[[5, 7]]].mean(axis=1)
    assert np.all(ties != 0.0) and np.all(np.abs(ties) < 1e-16)  # the floats miss 0
    assert paired_bootstrap(a, b, n_resamples=10).p_value == pytest.approx(0.8)  # 0.4 when the ties counted on one side
    assert paired_bootstrap(b, a, n_resamples=10).p_value == pytest.approx(0.8)


def test_a_ratio_bootstrap_refuses_non_finite_counts():
    """NaN counts gave a NaN difference with p 0, which Holm then called significant."""
    good = np.ones((5, 3))
    for bad in (np.full((5, 3), np.nan), np.where(np.eye(5, 3) > 0, np.inf, 1.0)):
        with pytest.raises(ValueError, match="non-finite"):
            paired_bootstrap_ratio(bad, good, lambda t: t[..., 0] / t[..., 1])
        with pytest.raises(ValueError, match="non-finite"):
            paired_bootstrap_ratio(good, bad, lambda t: t[..., 0] / t[..., 1])


@pytest.mark.parametrize("seeds", [1, 3])
def test_swapping_the_two_cells_negates_the_difference_and_its_interval_and_keeps_p(seeds):
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 101, (seeds, 300)).astype(float), rng.integers(0, 101, (seeds, 300)).astype(float)
    ab, ba = two_level_bootstrap(a, b), two_level_bootstrap(b, a)
    assert ab.diff == -ba.diff and ab.p_value == ba.p_value
    assert ab.ci_low == pytest.approx(-ba.ci_high, abs=1e-9) and ab.ci_high == pytest.approx(-ba.ci_low, abs=1e-9)
    assert ab.ci_low <= ab.diff <= ab.ci_high  # the interval holds the point estimate of a symmetric spread


def test_more_resamples_converge_on_the_normal_interval_of_a_large_sample():
    # 500 questions are a large sample: at 20,000 resamples the lower end is within 1% of the normal half-width, at 50 about 5% off
    a, b = noisy_scores(500, seed=1), noisy_scores(500, seed=2)
    d = a - b
    half = 1.959964 * d.std(ddof=1) / np.sqrt(d.size)
    errors = [abs(paired_bootstrap(a, b, n_resamples=r, seed=4).ci_low - (d.mean() - half)) for r in (50, 20_000)]
    assert errors[1] < 0.1 * half and errors[1] < errors[0]


def test_a_small_group_is_drawn_with_a_hollow_marker_over_its_error_bar(tmp_path, monkeypatch):
    """The footnote says hollow; the error bar's own filled marker was drawn over the hollow one (errorbar puts its
    line at a higher z-order), so a small group's marker showed filled."""
    from PIL import Image

    from bio_mrc.harness import plots

    saved, save = [], plots._save
    monkeypatch.setattr(plots, "_save", lambda figure, path: saved.append(figure) or save(figure, path))
    scores = np.concatenate([np.full(60, 80.0), np.linspace(0.0, 90.0, 9)])  # means 80 and 45, off the grid lines
    groups = breakdown({CellKey("joint", "span"): scores}, np.array(["many"] * 60 + ["few"] * 9))
    path = plot_breakdown(groups, "F1", "x", tmp_path / "groups.png")
    [figure] = saved
    [ax] = figure.axes
    with Image.open(path) as image:
        pixels = image.convert("RGB")
        for x, (name, group) in enumerate(groups[CellKey("joint", "span")].items()):
            px, py = ax.transData.transform((x, group["mean"]))
            centre = pixels.getpixel((int(round(px)), int(round(pixels.size[1] - py))))
            assert (min(centre) > 240) == (group["n"] < 50), (name, centre)
