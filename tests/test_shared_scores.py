"""Per-question scores kept in a block: computed once a key inside it, afresh outside, a failure never kept."""

import pytest

from bio_mrc.metrics.shared_scores import kept_score, shared_question_scores


def counter():
    calls = []

    def compute():
        calls.append(1)
        return len(calls)

    return calls, compute


def test_outside_a_block_each_score_is_computed_afresh():
    calls, compute = counter()
    assert [kept_score("k", compute) for _ in range(3)] == [1, 2, 3] and len(calls) == 3


def test_inside_a_block_each_key_is_computed_once_and_dropped_after():
    calls, compute = counter()
    with shared_question_scores():
        assert (kept_score("a", compute), kept_score("b", compute), kept_score("a", compute)) == (1, 2, 1)
        with shared_question_scores():  # an inner block shares the outer one's scores
            assert kept_score("b", compute) == 2
        assert kept_score("a", compute) == 1
    assert kept_score("a", compute) == 3 and len(calls) == 3


def test_a_failing_score_is_not_kept():
    def fail():
        raise ValueError("bad answer")

    with shared_question_scores():
        for _ in range(2):
            with pytest.raises(ValueError, match="bad answer"):
                kept_score("k", fail)
