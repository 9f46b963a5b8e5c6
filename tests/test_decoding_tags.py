"""BIO tags -> spans: hand-made cases per scheme, Viterbi against brute force, scores, seqeval."""

import itertools

import numpy as np
import pytest
from seqeval.metrics.sequence_labeling import get_entities
from seqeval.scheme import IOB2, Entities

from bio_mrc.decoding.tags import (
    TagSpans,
    best_span_per_row,
    decode_bio,
    group_by_row,
    score_spans,
    tags_to_spans,
    viterbi_tags,
)
from bio_mrc.types import TAG_B, TAG_I, TAG_NAMES, TAG_O

IDS = {"B": TAG_B, "I": TAG_I, "O": TAG_O}


def encode(text: str) -> np.ndarray:
    return np.array([[IDS[c] for c in text.split()]])


def pairs(spans: TagSpans, row: int = 0) -> list[tuple[int, int]]:
    return [(s, e) for s, e, _ in spans.for_row(row)]


def one_hot_probs(text: str, high: float = 0.8) -> np.ndarray:
    """Probabilities whose argmax is the given tag sequence."""
    tags = encode(text)[0]
    probs = np.full((1, len(tags), 3), (1 - high) / 2)
    probs[0, np.arange(len(tags)), tags] = high
    return probs


# --- tags -> spans -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, lenient, strict",
    [
        ("O I I O B I O B B", [(1, 2), (4, 5), (7, 7), (8, 8)], [(4, 5), (7, 7), (8, 8)]),
        ("I I B I", [(0, 1), (2, 3)], [(2, 3)]),
        ("I I O I", [(0, 1), (3, 3)], []),
        ("B I I I", [(0, 3)], [(0, 3)]),
        ("B B I O I B", [(0, 0), (1, 2), (4, 4), (5, 5)], [(0, 0), (1, 2), (5, 5)]),
        ("O O O", [], []),
        ("I", [(0, 0)], []),
        ("B", [(0, 0)], [(0, 0)]),
    ],
)
def test_hand_made_schemes(text, lenient, strict):
    tags = encode(text)
    mask = np.ones_like(tags, dtype=bool)
    assert pairs(tags_to_spans(tags, mask, "lenient")) == lenient
    assert pairs(tags_to_spans(tags, mask, "strict")) == strict
    assert pairs(tags_to_spans(tags, mask)) == lenient  # lenient is the default


@pytest.mark.parametrize(
    "text, mask, lenient, strict",
    [
        ("B I I I", [1, 1, 0, 1], [(0, 1), (3, 3)], [(0, 1)]),  # a masked token cuts the span; the I after it starts one
        ("B I I I", [0, 1, 1, 1], [(1, 3)], []),  # the B is masked: the I's are orphans
        ("B I B I", [1, 1, 1, 0], [(0, 1), (2, 2)], [(0, 1), (2, 2)]),
        ("B I I I", [0, 0, 0, 0], [], []),
    ],
)
def test_masks_cut_spans(text, mask, lenient, strict):
    tags, mask = encode(text), np.array([mask], dtype=bool)
    assert pairs(tags_to_spans(tags, mask, "lenient")) == lenient
    assert pairs(tags_to_spans(tags, mask, "strict")) == strict


def test_spans_are_flat_and_sorted_by_row_then_start():
    tags = np.concatenate([encode("B I O B"), encode("O O O O"), encode("I O B I")])
    spans = tags_to_spans(tags, np.ones_like(tags, dtype=bool))
    assert spans.row.tolist() == [0, 0, 2, 2]
    assert spans.start.tolist() == [0, 3, 0, 2]
    assert spans.end.tolist() == [1, 3, 0, 3]
    assert np.isnan(spans.score).all()
    grouped = group_by_row(spans, 4)
    assert [[(s, e) for s, e, _ in g] for g in grouped] == [[(0, 1), (3, 3)], [], [(0, 0), (2, 3)], []]


def test_bad_scheme_is_refused():
    tags = encode("B I")
    with pytest.raises(ValueError):
        tags_to_spans(tags, np.ones_like(tags, dtype=bool), "viterbi")
    with pytest.raises(ValueError):
        decode_bio(one_hot_probs("B I"), np.ones((1, 2), bool), scheme="bioes")
    with pytest.raises(ValueError):
        decode_bio(one_hot_probs("B I"), np.ones((1, 2), bool), score="max")


def _seqeval_tags(tags: np.ndarray, mask: np.ndarray) -> list[str]:
    return [TAG_NAMES[t] if m else "O" for t, m in zip(tags.tolist(), mask.tolist())]


def test_lenient_and_strict_match_seqeval_on_random_sequences():
    rng = np.random.default_rng(0)
    n, length = 300, 12
    tags = rng.integers(0, 3, size=(n, length))
    mask = rng.random((n, length)) < 0.85
    lenient, strict = tags_to_spans(tags, mask, "lenient"), tags_to_spans(tags, mask, "strict")
    seqs = [_seqeval_tags(t, m) for t, m in zip(tags, mask)]
    # Untyped "B"/"I"/"O" tags are accepted by seqeval 1.2 (the type is "_"), so no "B-X" mapping is needed.
    strict_chunks = Entities(seqs, IOB2, suffix=False).entities
    for row in range(n):
        assert pairs(lenient, row) == [(s, e) for _, s, e in get_entities(seqs[row])]
        assert pairs(strict, row) == [(e.start, e.end - 1) for e in strict_chunks[row]]  # seqeval's end is exclusive


# --- Viterbi -------------------------------------------------------------------------------------


def test_viterbi_fixes_an_illegal_greedy_path_by_moving_the_first_tag():
    # Greedy: O I (illegal). Legal paths: B I = .1*.7 = .07, O B = .6*.2 = .12, O O = .06, B B = .02 ...
    probs = np.array([[[0.1, 0.3, 0.6], [0.2, 0.7, 0.1]]])
    assert probs.argmax(-1).tolist() == [[TAG_O, TAG_I]]
    assert viterbi_tags(np.log(probs), np.ones((1, 2), bool)).tolist() == [[TAG_O, TAG_B]]


def test_viterbi_fixes_an_illegal_greedy_path_by_turning_o_into_b():
    # Greedy: O I. Legal paths: B I = .4*.9 = .36 beats O B = .5*.05 and O O = .5*.05.
    probs = np.array([[[0.4, 0.1, 0.5], [0.05, 0.9, 0.05]]])
    assert viterbi_tags(np.log(probs), np.ones((1, 2), bool)).tolist() == [[TAG_B, TAG_I]]


def test_viterbi_forbids_i_at_the_start_and_after_a_masked_token():
    probs = np.array([[[0.15, 0.8, 0.05], [0.8, 0.1, 0.1], [0.1, 0.1, 0.8], [0.06, 0.9, 0.04]]])
    mask = np.array([[True, True, False, True]])
    # 0: I forbidden at the start -> B (.15 > .05). 1: B (I after B is allowed but .1 < .8).
    # 2: masked -> O. 3: I after a masked token is forbidden -> B (.06 > .04).
    assert viterbi_tags(np.log(probs), mask).tolist() == [[TAG_B, TAG_B, TAG_O, TAG_B]]


def _legal(path: tuple[int, ...], mask: np.ndarray) -> bool:
    previous = TAG_O
    for tag, real in zip(path, mask):
        if (not real and tag != TAG_O) or (tag == TAG_I and previous == TAG_O):
            return False
        previous = tag
    return True


@pytest.mark.parametrize("seed", range(60))
def test_viterbi_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, length = 4, int(rng.integers(1, 7))
    log_probs = np.log(rng.dirichlet(np.ones(3) * 0.7, size=(n, length)))
    mask = rng.random((n, length)) < 0.8
    got = viterbi_tags(log_probs, mask)
    for row in range(n):
        legal = [p for p in itertools.product(range(3), repeat=length) if _legal(p, mask[row])]
        path_score = lambda p: log_probs[row, np.arange(length), list(p)].sum()  # noqa: E731
        best = max(legal, key=path_score)
        assert _legal(tuple(got[row]), mask[row])
        np.testing.assert_allclose(path_score(got[row]), path_score(best))
        assert tuple(got[row]) == best  # continuous random scores: no ties


def test_viterbi_equals_argmax_when_the_argmax_path_is_legal():
    rng = np.random.default_rng(1)
    probs = rng.dirichlet(np.ones(3), size=(200, 8))
    mask = np.ones((200, 8), bool)
    greedy = probs.argmax(-1)
    legal = np.array([_legal(tuple(g), m) for g, m in zip(greedy, mask)])
    assert legal.sum() > 10
    np.testing.assert_array_equal(viterbi_tags(np.log(probs), mask)[legal], greedy[legal])


# --- scores --------------------------------------------------------------------------------------


def test_score_methods_by_hand():
    probs = np.array([[[0.1, 0.1, 0.8], [0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.1, 0.5, 0.4], [0.3, 0.3, 0.4]]])
    spans = TagSpans(np.array([0, 0]), np.array([1, 4]), np.array([3, 4]), np.full(2, np.nan))
    # Span (1, 3): P(B) at 1 = .6, P(I) at 2, 3 = .7, .5. Span (4, 4): P(B) = .3.
    np.testing.assert_allclose(score_spans(probs, spans).score, [(0.6 + 0.7 + 0.5) / 3, 0.3])
    np.testing.assert_allclose(score_spans(probs, spans, "product").score, [0.6 * 0.7 * 0.5, 0.3])
    np.testing.assert_allclose(score_spans(probs, spans, "logsum").score, [np.log(0.6 * 0.7 * 0.5), np.log(0.3)])


def test_lenient_span_starting_with_i_is_scored_as_a_chunk():
    # Argmax I I: the lenient span (0, 1) is scored with P(B) on its first token, not P(I).
    probs = np.array([[[0.2, 0.7, 0.1], [0.1, 0.8, 0.1]]])
    spans = decode_bio(probs, np.ones((1, 2), bool), "lenient")
    assert spans.for_row(0) == [(0, 1, pytest.approx((0.2 + 0.8) / 2))]


def test_score_ignores_padding_values():
    probs = np.array([[[0.8, 0.1, 0.1], [np.nan, np.nan, np.nan], [0.1, 0.8, 0.1]]])
    spans = TagSpans(np.array([0]), np.array([2]), np.array([2]), np.array([np.nan]))
    np.testing.assert_allclose(score_spans(probs, spans).score, [0.1])
    empty = TagSpans(*(np.zeros(0, int),) * 3, np.zeros(0))
    assert len(score_spans(probs, empty)) == 0


def test_min_score_filters_spans():
    probs = np.array([[[0.9, 0.05, 0.05], [0.05, 0.9, 0.05], [0.1, 0.1, 0.8], [0.5, 0.3, 0.2]]])
    mask = np.ones((1, 4), bool)
    assert decode_bio(probs, mask).for_row(0) == [(0, 1, pytest.approx(0.9)), (3, 3, pytest.approx(0.5))]
    assert pairs(decode_bio(probs, mask, min_score=0.6)) == [(0, 1)]
    assert pairs(decode_bio(probs, mask, min_score=0.95)) == []
    # min_score is a probability for every method: logsum keeps a span when exp(score) >= min_score.
    assert pairs(decode_bio(probs, mask, score="logsum")) == [(0, 1), (3, 3)]
    assert pairs(decode_bio(probs, mask, score="logsum", min_score=0.6)) == [(0, 1)]
    assert pairs(decode_bio(probs, mask, score="product", min_score=0.6)) == [(0, 1)]  # .81 and .5


def test_max_span_length_truncates():
    probs = one_hot_probs("O B I I I I O B")
    mask = np.ones((1, 8), bool)
    assert pairs(decode_bio(probs, mask, max_span_length=3)) == [(1, 3), (7, 7)]
    assert pairs(decode_bio(probs, mask, max_span_length=1)) == [(1, 1), (7, 7)]
    with pytest.raises(ValueError):
        decode_bio(probs, mask, max_span_length=0)


# --- require_span fallback -----------------------------------------------------------------------


def fallback_probs() -> tuple[np.ndarray, np.ndarray]:
    """Row 0 reads O O O I I O (position 0 masked): no strict span, one weak lenient span (3, 4).

    Its best single span by log p_B(i) - log p_O(i) + Σ_{t=i+1..j} (log p_I(t) - log p_O(t)) is (2, 4):
    ln .5 + ln(.5/.4) + ln(.46/.44) = -0.425, ahead of (2, 3) = -0.470 and (2, 2) = -0.693 (position 0
    scores higher but is masked). Row 1 has the span (1, 1). Row 2 has no real token.
    """
    row0 = np.array([[0.5, 0.1, 0.4], [0.1, 0.1, 0.8], [0.3, 0.1, 0.6], [0.1, 0.5, 0.4], [0.1, 0.46, 0.44], [0.2, 0.1, 0.7]])
    row1 = np.array([[0.1, 0.1, 0.8]] * 6)
    row1[1] = [0.7, 0.2, 0.1]
    row2 = np.full((6, 3), 1 / 3)
    mask = np.array([[False, True, True, True, True, True], [True] * 6, [False] * 6])
    return np.stack([row0, row1, row2]), mask


def test_require_span_fallback():
    probs, mask = fallback_probs()
    assert pairs(decode_bio(probs, mask, "strict"), 0) == []
    spans = decode_bio(probs, mask, "strict", require_span=True)
    assert pairs(spans, 0) == [(2, 4)]
    assert pairs(spans, 1) == [(1, 1)]
    assert pairs(spans, 2) == []
    assert spans.for_row(0)[0][2] == pytest.approx((0.3 + 0.5 + 0.46) / 3)  # scored like any span
    assert pairs(decode_bio(probs, mask, "strict", require_span=True, max_span_length=2), 0) == [(2, 3)]
    logsum = decode_bio(probs, mask, "strict", score="logsum", require_span=True)
    assert logsum.for_row(0)[0][2] == pytest.approx(np.log(0.3 * 0.5 * 0.46))


def test_require_span_fills_rows_emptied_by_min_score():
    probs, mask = fallback_probs()
    assert decode_bio(probs, mask, "lenient").for_row(0) == [(3, 4, pytest.approx((0.1 + 0.46) / 2))]
    assert pairs(decode_bio(probs, mask, "lenient", min_score=0.5, require_span=True), 0) == [(2, 4)]
    # Only rows left with no span get one: row 0 keeps its lenient span (3, 4) when it passes min_score.
    assert pairs(decode_bio(probs, mask, "lenient", require_span=True), 0) == [(3, 4)]


def test_require_span_applies_after_min_score_and_ignores_it():
    probs, mask = fallback_probs()
    spans = decode_bio(probs, mask, min_score=0.99, require_span=True)
    assert pairs(spans, 1) == [(1, 1)]  # its argmax span scored .7 < .99: dropped, then the fallback finds it again
    assert pairs(spans, 0) == [(2, 4)]
    assert spans.row.tolist() == sorted(spans.row.tolist())


# --- batches -------------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["lenient", "strict", "viterbi"])
@pytest.mark.parametrize("score", ["mean", "product", "logsum"])
def test_batch_rows_are_independent(scheme, score):
    rng = np.random.default_rng(7)
    probs = rng.dirichlet(np.ones(3) * 0.5, size=(12, 15))
    mask = rng.random((12, 15)) < 0.8
    mask[3] = False
    kwargs = dict(scheme=scheme, score=score, min_score=0.3 if score != "logsum" else 0.05, require_span=True, max_span_length=4)
    batch = decode_bio(probs, mask, **kwargs)
    assert np.all(np.diff(batch.row * 100 + batch.start) > 0)  # sorted by (row, start), no duplicates
    assert np.all(batch.end - batch.start < 4)
    for row in range(12):
        alone = decode_bio(probs[row : row + 1], mask[row : row + 1], **kwargs)
        assert pairs(batch, row) == pairs(alone, 0)
        np.testing.assert_allclose([s for *_, s in batch.for_row(row)], [s for *_, s in alone.for_row(0)])
    assert pairs(batch, 3) == []


def test_best_span_per_row():
    spans = TagSpans(
        row=np.array([0, 0, 0, 2, 2, 3]),
        start=np.array([0, 3, 6, 1, 4, 0]),
        end=np.array([1, 4, 6, 2, 5, 0]),
        score=np.array([0.2, 0.9, 0.5, 0.7, 0.7, np.nan]),
    )
    # Row 1 has no span; row 2 ties -> the earlier span; row 3's only span has a nan score.
    assert best_span_per_row(spans, 5).tolist() == [1, -1, 3, 5, -1]
    assert best_span_per_row(TagSpans(*(np.zeros(0, int),) * 3, np.zeros(0)), 2).tolist() == [-1, -1]


def test_best_span_per_row_matches_a_loop():
    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.ones(3) * 0.5, size=(30, 20))
    spans = decode_bio(probs, np.ones((30, 20), bool))
    best = best_span_per_row(spans, 30)
    for row in range(30):
        scores = [s for *_, s in spans.for_row(row)]
        if scores:
            assert spans.row[best[row]] == row and spans.score[best[row]] == max(scores)
        else:
            assert best[row] == -1
