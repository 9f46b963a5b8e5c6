"""MultiSpanQA's official metrics on hand-computed cases (all numbers are percentages)."""

from __future__ import annotations

import itertools

import pytest

from bio_mrc.metrics import multispan_official
from bio_mrc.metrics.multispan_official import multispan_metrics, partial_match
from bio_mrc.metrics.shared_scores import shared_question_scores

KEYS = ("em_precision", "em_recall", "em_f1", "pm_precision", "pm_recall", "pm_f1")


def f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def expected(em_p, em_r, pm_p, pm_r) -> dict[str, float]:
    values = (em_p, em_r, f1(em_p, em_r), pm_p, pm_r, f1(pm_p, pm_r))
    return {k: pytest.approx(100 * v, abs=1e-12) for k, v in zip(KEYS, values)}


def test_exact_sets_after_normalisation_score_100():
    gold = {"q1": ["Dave Stewart", "Barbara Gaskin"], "q2": ["The Beatles"]}
    pred = {"q1": ["barbara gaskin", "Dave Stewart."], "q2": ["beatles!"]}
    assert multispan_metrics(gold, pred) == expected(1, 1, 1, 1)


def test_partial_overlap_uses_the_longest_common_substring():
    # "new york city" vs "york": LCS 4 characters; the prediction is all inside the gold span
    got = multispan_metrics({"q": ["New York City"]}, {"q": ["York"]})
    assert got == expected(0, 0, 4 / 4, 4 / 13)
    assert got["pm_f1"] == pytest.approx(100 * 8 / 17)


def test_partial_match_credits_by_hand():
    # LCS: abcd~abc 3, xyz~xy 2, every other pair 0
    p_credit, r_credit = partial_match({"abcd", "xyz"}, {"abc", "xy", "qq"})
    assert p_credit == pytest.approx(3 / 3 + 2 / 2 + 0)  # each prediction: best over gold, / len(pred)
    assert r_credit == pytest.approx(3 / 4 + 2 / 3)  # each gold span: best over predictions, / len(gold)


def test_a_gold_and_predicted_span_are_matched_once_while_a_block_shares_scores(monkeypatch):
    matched = []
    characters = multispan_official._matched_characters
    monkeypatch.setattr(multispan_official, "_matched_characters", lambda g, p: matched.append((g, p)) or characters(g, p))
    answers = ({"abc", "xy"}, {"abc", "qq"}, {"abc", "xy"})  # three answers sharing spans, as a tuning's grid gives
    afresh = [partial_match({"abcd", "xyz"}, answer) for answer in answers]
    assert len(matched) == 12  # no block: every pair of every answer
    matched.clear()
    with shared_question_scores():
        shared = [partial_match({"abcd", "xyz"}, answer) for answer in answers]
    assert shared == afresh and shared[0] == (3 / 3 + 2 / 2, 3 / 4 + 2 / 3)
    assert sorted(matched) == sorted(itertools.product(["abcd", "xyz"], ["abc", "qq", "xy"]))  # each pair once


def test_micro_average_over_questions_and_duplicates_count_once():
    gold = {"q1": ["abcd", "xyz"], "q2": ["red"]}
    pred = {"q1": ["abc", "xy", "qq"], "q2": ["Red", "red", "RED!"]}  # q2's three predictions are one span
    # n_pred = 3 + 1, n_gold = 2 + 1; EM: only "red" matches
    # PM credits: q1 p = 2, r = 3/4 + 2/3; q2 p = r = 1
    assert multispan_metrics(gold, pred) == expected(1 / 4, 1 / 3, (2 + 1) / 4, (3 / 4 + 2 / 3 + 1) / 3)


def test_gold_duplicates_after_normalisation_count_once():
    assert multispan_metrics({"q": ["The cat", "cat"]}, {"q": ["cat"]}) == expected(1, 1, 1, 1)


def test_empty_prediction_counts_as_one_predicted_span():
    gold = {"q1": ["abc", "def"], "q2": ["ghi"]}
    # q1 predicts nothing: n_pred = 1 + 1, n_gold = 2 + 1; q2 is exact
    assert multispan_metrics(gold, {"q1": [], "q2": ["ghi"]}) == expected(1 / 2, 1 / 3, 1 / 2, 1 / 3)
    assert multispan_metrics(gold, {"q1": [""], "q2": ["ghi"]}) == expected(1 / 2, 1 / 3, 1 / 2, 1 / 3)


def test_empty_string_next_to_real_spans_is_a_wrong_span():
    # {"", "abc"}: two predicted spans, "" earns nothing
    assert multispan_metrics({"q": ["abc", "def"]}, {"q": ["", "abc"]}) == expected(1 / 2, 1 / 2, 1 / 2, 1 / 2)


def test_questions_without_gold_spans():
    assert multispan_metrics({"q": []}, {"q": []}) == expected(1, 1, 1, 1)
    # the official script's asymmetry: [""] is a wrong span for EM but "no answer" for PM
    assert multispan_metrics({"q": []}, {"q": [""]}) == expected(0, 0, 1, 1)
    assert multispan_metrics({"q": []}, {"q": ["x"]}) == expected(0, 0, 0, 0)


def test_scale_is_percent():
    got = multispan_metrics({"q1": ["a b"], "q2": ["c"]}, {"q1": ["a b"], "q2": ["d"]})
    assert got["em_precision"] == pytest.approx(50.0)
    assert set(got) == set(KEYS)


def test_missing_and_extra_ids_are_errors():
    with pytest.raises(ValueError, match=r"1 missing \(e.g. \['q2'\]\)"):
        multispan_metrics({"q1": ["a"], "q2": ["b"]}, {"q1": ["a"]})
    with pytest.raises(ValueError, match=r"1 not in gold \(e.g. \['q3'\]\)"):
        multispan_metrics({"q1": ["a"]}, {"q1": ["a"], "q3": ["b"]})


def test_a_bare_string_prediction_is_an_error():
    with pytest.raises(ValueError, match="'q1'.*list of span texts"):
        multispan_metrics({"q1": ["abc"]}, {"q1": "abc"})


def test_nothing_to_score_is_zero():
    assert multispan_metrics({}, {}) == expected(0, 0, 0, 0)
