"""Official SQuAD v1.1 / v2.0 scores, pinned with hand-computed answers.

Every expected number below was worked out by hand (derivation in the
comments) and agrees exactly with ``evaluate-v1.1.py`` / ``evaluate-v2.0.py``
run on the same data.
"""

import random

import pytest

from bio_mrc.metrics.squad_official import (
    compute_exact_v2,
    compute_f1_v2,
    exact_match_score,
    f1_score,
    find_best_threshold,
    normalize_answer,
    per_question_scores,
    question_scores,
    squad_metrics,
    squad_v1_metrics,
    squad_v2_metrics,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("The Cat", "cat"),
        ("  a  quick\tbrown\n fox  ", "quick brown fox"),
        ("an apple, the pear & a plum!", "apple pear plum"),
        ("the a an", ""),
        ("...", ""),
        ("", ""),
        ("theatre another anthem", "theatre another anthem"),  # articles only as whole words
        ("the.end", "theend"),  # punctuation goes first, so no word boundary is left
        ("A-Team", "ateam"),
        ("ÉCOLE Über", "école über"),  # Unicode lower-casing
        ("thé éthe", "thé éthe"),  # é is a word character: no article boundary
        ("the’s «the» cat", "’s « » cat"),  # non-ASCII punctuation stays, but is a boundary
        ("über\u00a0alles\u2003x", "über alles x"),  # Unicode white space
    ],
)
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


@pytest.mark.parametrize(
    "prediction, gold, expected",
    [
        ("the cat sat", "a cat sat down", 0.8),  # [cat sat] vs [cat sat down]: P=1, R=2/3
        ("cat cat", "cat", 2 / 3),  # common counts are clipped: 1 shared, P=1/2, R=1
        ("the big red dog barks", "Red, big dog.", 6 / 7),  # 3 shared: P=3/4, R=1
        ("Denver Broncos", "the denver broncos!", 1.0),
        ("dog", "cat", 0.0),
    ],
)
def test_f1_partial_overlap(prediction, gold, expected):
    assert f1_score(prediction, gold) == pytest.approx(expected, rel=1e-15)
    assert compute_f1_v2(gold, prediction) == pytest.approx(expected, rel=1e-15)


def test_exact_match():
    assert exact_match_score("The Denver Broncos.", "denver broncos") is True
    assert exact_match_score("Denver", "denver broncos") is False
    assert compute_exact_v2("denver broncos", "The Denver Broncos.") == 1
    assert compute_exact_v2("denver broncos", "Denver") == 0


def test_empty_answers_differ_between_v1_and_v2():
    # v1.1: F1 needs a shared token, so two empty answers score 0 (their exact match is still 1)
    assert f1_score("", "") == 0.0 and exact_match_score("", "") is True
    assert f1_score("the", "") == 0.0
    # v2.0: an empty side scores 1 when the other is empty too, 0 otherwise
    assert compute_f1_v2("", "") == 1.0 and compute_f1_v2("", "the") == 1.0
    assert compute_f1_v2("cat", "") == 0.0 and compute_f1_v2("", "cat") == 0.0
    # whole datasets: v1.1 with an empty gold text, v2.0 with an unanswerable question
    assert squad_v1_metrics({"q": [""]}, {"q": ""}) == {"exact_match": 100.0, "f1": 0.0}
    v2 = squad_v2_metrics({"q": []}, {"q": ""})
    assert (v2["exact"], v2["f1"]) == (100.0, 100.0)


V1_GOLD = {
    "q1": ["Denver Broncos", "The Denver Broncos"],
    "q2": ["a cat sat down", "dog"],
    "q3": ["Paris"],
    "q4": ["red big dog"],
}
V1_PREDICTIONS = {"q1": "denver broncos", "q2": "the cat sat", "q4": "the big red dog barks", "not-in-gold": "x"}


def test_v1_dataset():
    # q1: EM 1, F1 1; q2: max(0.8, 0) = 0.8; q3: missing, 0 but counted; q4: 6/7; "not-in-gold" ignored
    result = squad_v1_metrics(V1_GOLD, V1_PREDICTIONS)
    assert list(result) == ["exact_match", "f1"]
    assert result["exact_match"] == 25.0
    assert result["f1"] == 66.42857142857143  # 100 * (1 + 0.8 + 0 + 6/7) / 4
    assert result["f1"] == pytest.approx(100 * (1 + 0.8 + 6 / 7) / 4, rel=1e-15)


def test_v1_max_over_alternatives_and_missing_predictions():
    gold = {"q": ["dog", "a cat sat down", "cat sat"]}  # the best alternative wins, whatever its position
    assert squad_v1_metrics(gold, {"q": "the cat sat"}) == {"exact_match": 100.0, "f1": 100.0}
    assert squad_v1_metrics({"q": ["x"], "r": ["y"]}, {}) == {"exact_match": 0.0, "f1": 0.0}
    assert squad_v1_metrics({"q": ["x"], "r": ["y"]}, {"r": "y"}) == {"exact_match": 50.0, "f1": 50.0}


def test_v1_order_of_predictions_and_gold_does_not_matter():
    gold = {"a": ["x y"], "b": ["x"], "c": ["z"], "d": ["x y z w"]}
    preds = {"a": "x", "b": "x", "c": "q", "d": "x y"}  # F1s 2/3, 1, 0, 2/3
    result = squad_v1_metrics(gold, preds)
    assert result == squad_v1_metrics(dict(reversed(gold.items())), dict(reversed(preds.items())))
    assert result["exact_match"] == 25.0
    assert result["f1"] == pytest.approx(100 * (2 / 3 + 1 + 2 / 3) / 4, rel=1e-15)


def test_v1_rejects_unscorable_gold():
    with pytest.raises(ValueError, match="'q'"):
        squad_v1_metrics({"q": []}, {"q": ""})
    with pytest.raises(ValueError, match="no gold questions"):
        squad_v1_metrics({}, {})


V2_GOLD = {
    "h1": ["Denver Broncos"],  # pred right: exact 1, f1 1
    "h2": ["a cat sat down"],  # pred "the cat sat": exact 0, f1 0.8
    "h3": ["Paris"],  # pred "" (abstained): 0, 0
    "n1": [],  # pred "": right abstention, 1, 1
    "n2": [],  # pred "London": 0, 0
}
V2_PREDICTIONS = {"h1": "Denver Broncos", "h2": "the cat sat", "h3": "", "n1": "", "n2": "London", "extra": "x"}
V2_BASE = {
    "exact": 40.0,  # (1 + 0 + 0 + 1 + 0) / 5
    "f1": 56.0,  # (1 + 0.8 + 0 + 1 + 0) / 5
    "total": 5,
    "HasAns_exact": 100 / 3,
    "HasAns_f1": 60.0,  # 1.8 / 3
    "HasAns_total": 3,
    "NoAns_exact": 50.0,
    "NoAns_f1": 50.0,
    "NoAns_total": 2,
}


def test_v2_dataset_without_na_probs():
    result = squad_v2_metrics(V2_GOLD, V2_PREDICTIONS)
    assert result == V2_BASE and list(result) == list(V2_BASE)


def test_v2_best_thresholds_and_tie_order():
    # Start at 2 (the unanswerable questions, all abstained) and answer by rising na_prob.
    # h1 and n2 tie at 0.3; in mapping order h1 first: exact 2 -> h1 3 (best, 0.3) -> n2 2 -> h2 2 -> h3 2 -> n1 2;
    # f1 2 -> 3 (best, 0.3) -> 2 -> h2 2.8 -> 2.8 -> 2.8.
    na_probs = {"h1": 0.3, "n2": 0.3, "h2": 0.6, "h3": 0.8, "n1": 0.9}
    result = squad_v2_metrics(V2_GOLD, V2_PREDICTIONS, na_probs)
    assert list(result) == [*V2_BASE, "best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh"]
    assert {k: result[k] for k in V2_BASE} == V2_BASE  # default threshold 1.0 leaves the raw scores
    assert (result["best_exact"], result["best_exact_thresh"]) == (60.0, 0.3)
    assert (result["best_f1"], result["best_f1_thresh"]) == (60.0, 0.3)
    # Same probabilities, n2 listed before h1: exact 2 -> n2 1 -> h1 2 (not better) -> ... stays 2 at 0.0;
    # f1 2 -> 1 -> 2 -> h2 2.8 (best, 0.6) -> 2.8 -> 2.8.
    swapped = {"n2": 0.3, "h1": 0.3, "h2": 0.6, "h3": 0.8, "n1": 0.9}
    result = squad_v2_metrics(V2_GOLD, V2_PREDICTIONS, swapped)
    assert (result["best_exact"], result["best_exact_thresh"]) == (40.0, 0.0)
    assert (result["best_f1"], result["best_f1_thresh"]) == (56.0, 0.6)


def test_v2_tie_order_is_the_na_probs_order_also_when_missing_predictions_count_as_wrong():
    # evaluate's path (missing_as_wrong): n2 listed before h1 at a tie of 0.3, as in the swapped case above:
    # best_exact stays 40.0 at 0.0 and best_f1 is 56.0 at 0.6, not the data order's 60.0 at 0.3.
    swapped = {"n2": 0.3, "h1": 0.3, "h2": 0.6, "h3": 0.8, "n1": 0.9}
    result = squad_v2_metrics(V2_GOLD, V2_PREDICTIONS, swapped, missing_as_wrong=True)
    assert (result["best_exact"], result["best_exact_thresh"]) == (40.0, 0.0)
    assert (result["best_f1"], result["best_f1_thresh"]) == (56.0, 0.6)
    # One pair: the official script walks b (unanswerable, answered: 1 -> 0), then a (0 -> 1): never above 1.
    result = squad_v2_metrics({"a": ["x"], "b": []}, {"a": "x", "b": "y"}, {"b": 0.5, "a": 0.5}, missing_as_wrong=True)
    assert (result["best_f1"], result["best_f1_thresh"]) == (50.0, 0.0)


def test_v2_na_prob_threshold_abstains_above_it():
    # above 0.5: h2, h3 abstain (answerable: 0) and n1 abstains (unanswerable: 1); h1 1, n2 0
    na_probs = {"h1": 0.3, "n2": 0.3, "h2": 0.6, "h3": 0.8, "n1": 0.9}
    result = squad_v2_metrics(V2_GOLD, V2_PREDICTIONS, na_probs, na_prob_thresh=0.5)
    assert (result["exact"], result["f1"]) == (40.0, 40.0)
    assert result["HasAns_f1"] == 100 / 3 and result["NoAns_f1"] == 50.0
    assert result["best_f1"] == 60.0  # the search always uses the raw scores
    result = squad_v2_metrics(V2_GOLD, V2_PREDICTIONS, na_prob_thresh=-1.0)  # na_prob 0.0 everywhere > -1
    assert (result["exact"], result["f1"], result["HasAns_exact"], result["NoAns_exact"]) == (40.0, 40.0, 0.0, 100.0)


def test_v2_only_unanswerable_and_abstaining_everywhere_is_best():
    result = squad_v2_metrics({"n1": [], "n2": []}, {"n1": "x", "n2": "y"}, {"n1": 0.2, "n2": 0.4})
    assert result == {
        "exact": 0.0, "f1": 0.0, "total": 2, "NoAns_exact": 0.0, "NoAns_f1": 0.0, "NoAns_total": 2,
        "best_exact": 100.0, "best_exact_thresh": 0.0, "best_f1": 100.0, "best_f1_thresh": 0.0,
    }  # fmt: skip


def test_v2_official_quirks():
    # Gold listed but normalising to nothing: still "HasAns", yet scored against "".
    result = squad_v2_metrics({"q": ["the", "An"]}, {"q": ""})
    assert result == {"exact": 100.0, "f1": 100.0, "total": 1, "HasAns_exact": 100.0, "HasAns_f1": 100.0, "HasAns_total": 1}
    assert squad_v1_metrics({"q": ["the", "An"]}, {"q": ""}) == {"exact_match": 100.0, "f1": 0.0}
    # The threshold search charges an answered unanswerable question by its raw text:
    # "the" normalises to "" (exact 1) but is non-empty, so it costs 1: 1 -> n 0 -> h 1 (not better).
    gold, na = {"n": [], "h": ["cat"]}, {"n": 0.1, "h": 0.5}
    result = squad_v2_metrics(gold, {"n": "the", "h": "cat"}, na)
    assert result["exact"] == 100.0 and (result["best_exact"], result["best_exact_thresh"]) == (50.0, 0.0)
    result = squad_v2_metrics(gold, {"n": "", "h": "cat"}, na)  # 1 -> n 1 -> h 2 (best, 0.5)
    assert (result["best_exact"], result["best_exact_thresh"]) == (100.0, 0.5)


def test_find_best_threshold_directly():
    predictions = {"a": "x", "b": "y", "c": ""}
    raw = {"a": 0.5, "b": 0.0, "c": 1.0}
    has_answer = {"a": True, "b": False, "c": False}
    # start 2; by na_prob: "zz" skipped (no score), b -1 -> 1, a +0.5 -> 1.5, c +0 -> 1.5: never above 2
    assert find_best_threshold(predictions, raw, {"zz": 0.0, "b": 0.1, "a": 0.2, "c": 0.3}, has_answer) == (100 * 2 / 3, 0.0)
    # a first: 2.5 (best, 0.1) -> b 1.5 -> c 1.5
    assert find_best_threshold(predictions, raw, {"a": 0.1, "b": 0.2, "c": 0.3}, has_answer) == (100 * 2.5 / 3, 0.1)


def test_v2_missing_prediction_is_a_value_error():
    gold = {f"q{i}": ["x"] for i in range(8)}
    with pytest.raises(ValueError, match=r"7 of 8 questions have no prediction: 'q1', 'q2', 'q3', 'q4', 'q5', \.\.\."):
        squad_v2_metrics(gold, {"q0": "x"})
    with pytest.raises(ValueError, match=r"1 of 2 questions has no no-answer probability: 'b'$"):
        squad_v2_metrics({"a": ["x"], "b": []}, {"a": "x", "b": ""}, {"a": 0.5})


def test_squad_metrics_dispatch():
    assert squad_metrics(V1_GOLD, V1_PREDICTIONS, "1.1") == squad_v1_metrics(V1_GOLD, V1_PREDICTIONS)
    assert squad_metrics(V2_GOLD, V2_PREDICTIONS, "v2.0") == V2_BASE
    na = {q: 0.5 for q in V2_GOLD}
    assert squad_metrics(V2_GOLD, V2_PREDICTIONS, "2.0", na) == squad_v2_metrics(V2_GOLD, V2_PREDICTIONS, na)
    with pytest.raises(ValueError, match="unknown SQuAD version"):
        squad_metrics(V1_GOLD, V1_PREDICTIONS, "3.0")
    with pytest.raises(ValueError, match="2.0"):
        squad_metrics(V1_GOLD, V1_PREDICTIONS, "1.1", na)



def test_question_scores_take_the_version_as_squad_metrics_does():
    # Gold "The" normalises to nothing: v2.0 scores "" against "" (EM 1, F1 1); v1.1 shares no token (F1 0).
    assert question_scores(["The"], "", "v2.0") == question_scores(["The"], "", "2.0") == (1.0, 1.0)
    assert question_scores(["The"], "", "1.1") == (1.0, 0.0)
    assert question_scores([], "", "v2.0") == (1.0, 1.0)  # unanswerable: abstaining is right
    em, f1 = per_question_scores({"q": ["The"]}, {"q": ""}, ["q"], "v2.0")
    assert em.tolist() == [100.0] and f1.tolist() == [100.0]
    for version in ("2", "V2.0", "3.0"):  # never scored by the other script's rules
        with pytest.raises(ValueError, match="unknown SQuAD version"):
            question_scores(["x"], "x", version)
        with pytest.raises(ValueError, match="unknown SQuAD version"):
            per_question_scores({}, {}, [], version)


WORDS = ["the", "a", "An", "cat", "Cat", "sat", "down", "dog", "x-ray", "thé", "Über", ".", "!", "'s", "", " ", "\u00a0"]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 5)))


@pytest.mark.parametrize("seed", range(40))
def test_v2_equals_v1_when_every_question_is_answerable_and_predicted(seed):
    """With non-empty gold lists, the two scripts score a question alike unless the prediction
    normalises to "" *and* some gold text does too (v1.1 then gives exact 1 / f1 0 for that text,
    v2.0 drops it). So they agree when every prediction normalises to something non-empty."""
    rng = random.Random(seed)
    gold = {f"q{i}": [_text(rng) for _ in range(rng.randint(1, 3))] for i in range(rng.randint(1, 25))}
    predictions = {}
    for qid in gold:
        while not normalize_answer(text := _text(rng)):
            pass
        predictions[qid] = text
    v1, v2 = squad_v1_metrics(gold, predictions), squad_v2_metrics(gold, predictions)
    assert (v1["exact_match"], v1["f1"]) == (v2["exact"], v2["f1"]) == (v2["HasAns_exact"], v2["HasAns_f1"])
    assert "NoAns_total" not in v2
