"""BIO tag log-probabilities -> spans by the one rule (log-likelihood ratio against all-O),
checked by hand and against brute force over every tag sequence."""

import itertools
import math

import numpy as np
import pytest

from bio_mrc.decoding.bio_spans import best_tag_spans, expected_f1_tag_spans, likeliest_tag_spans, span_posteriors, tag_gains
from bio_mrc.tags import TAG_B, TAG_I, TAG_O


def sequence_log_prob(log_probs: np.ndarray, tags: tuple[int, ...]) -> float:
    return float(sum(log_probs[t, tag] for t, tag in enumerate(tags)))


def spans_of(tags: tuple[int, ...]) -> list[tuple[int, int]]:
    """Spans of a legal tag sequence (every span starts with B)."""
    spans = []
    for t, tag in enumerate(tags):
        if tag == TAG_B:
            spans.append([t, t])
        elif tag == TAG_I:
            spans[-1][1] = t
    return [tuple(s) for s in spans]


def span_log_ratios(log_probs: np.ndarray, row: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """``r(start, end)`` of given spans of given rows, straight from the definition."""
    begin, inside = tag_gains(log_probs, np.ones(np.shape(log_probs)[:2], dtype=bool))
    cumulative = np.cumsum(inside, axis=1)
    return begin[row, start] + cumulative[row, end] - cumulative[row, start]


def spans_in_row(spans, row: int) -> list[tuple[int, int, float]]:
    """``(start, end, r)`` of one row's spans, by start."""
    pick = spans.row == row
    return list(zip(spans.start[pick].tolist(), spans.end[pick].tolist(), spans.score[pick].tolist()))


def legal_sequences(mask: np.ndarray, max_len: int):
    """Every tag sequence with no I after O or at the start, O on masked tokens, spans <= max_len."""
    for tags in itertools.product((TAG_B, TAG_I, TAG_O), repeat=len(mask)):
        if any(not m and tag != TAG_O for m, tag in zip(mask, tags)):
            continue
        if any(tag == TAG_I and (t == 0 or tags[t - 1] == TAG_O) for t, tag in enumerate(tags)):
            continue
        if all(e - s < max_len for s, e in spans_of(tags)):
            yield tags


def random_case(seed: int, n: int = 6, length: int = 7, holes: bool = True):
    rng = np.random.default_rng(seed)
    log_probs = np.log(rng.dirichlet(np.ones(3) * 0.7, size=(n, length)))
    mask = np.ones((n, length), dtype=bool)
    mask[0, :2] = False  # question-like prefix
    mask[1, 5:] = False  # padding
    mask[2, 3] = not holes  # a hole: spans may not cross it
    mask[3] = False  # nothing to tag
    return log_probs, mask


def test_ratio_by_hand():
    probs = np.array([[[0.6, 0.2, 0.2], [0.1, 0.5, 0.4], [0.1, 0.1, 0.8]]])
    # B on token 0, I on token 1: log(.6/.2) + log(.5/.4)
    assert span_log_ratios(np.log(probs), np.array([0]), np.array([0]), np.array([1]))[0] == pytest.approx(
        math.log(3) + math.log(1.25)
    )
    begin, inside = tag_gains(np.log(probs), np.array([[True, True, False]]))
    assert begin[0, 2] == inside[0, 2] == -np.inf


@pytest.mark.parametrize("max_len", [1, 2, 3, 7])
@pytest.mark.parametrize("seed", range(6))
def test_single_span_rule_matches_brute_force(seed, max_len):
    log_probs, mask = random_case(seed, holes=False)  # merged rows have no holes
    best = best_tag_spans(log_probs, mask, max_len, n_best=3)
    for row in range(len(mask)):
        # The most probable tag sequence holding exactly one span, by enumeration of (i, j).
        all_o = sum(log_probs[row, t, TAG_O] for t in range(mask.shape[1]))
        scored = []
        for i in range(mask.shape[1]):
            for j in range(i, min(i + max_len, mask.shape[1])):
                if mask[row, i : j + 1].all():
                    tags = tuple(TAG_B if t == i else TAG_I if i < t <= j else TAG_O for t in range(mask.shape[1]))
                    scored.append((sequence_log_prob(log_probs[row], tags) - all_o, i, j))
        scored.sort(reverse=True)
        if not scored:
            assert best.start[row, 0] == -1 and best.score[row, 0] == -np.inf
            continue
        expected = scored[:3]
        got = [(s, i, j) for s, i, j in zip(best.score[row], best.start[row], best.end[row]) if i >= 0]
        assert [(i, j) for _, i, j in got] == [(i, j) for _, i, j in expected]
        np.testing.assert_allclose([s for s, *_ in got], [s for s, *_ in expected])


@pytest.mark.parametrize("max_len", [1, 2, 3, 7])
@pytest.mark.parametrize("seed", range(6))
def test_likeliest_sequence_matches_brute_force(seed, max_len):
    log_probs, mask = random_case(seed)
    spans = likeliest_tag_spans(log_probs, mask, max_len)
    assert np.all(np.diff(spans.row * 100 + spans.start) > 0)  # sorted by (row, start)
    for row in range(len(mask)):
        best = max(legal_sequences(mask[row], max_len), key=lambda tags: sequence_log_prob(log_probs[row], tags))
        assert [(s, e) for s, e, _ in spans_in_row(spans, row)] == spans_of(best)
        ratios = [r for *_, r in spans_in_row(spans, row)]
        assert all(r >= 0 for r in ratios)  # tagging a span of the best sequence O never helps
        rows = np.full(len(ratios), row)
        np.testing.assert_allclose(ratios, span_log_ratios(log_probs, rows, spans.start[spans.row == row], spans.end[spans.row == row]))


def test_an_over_long_span_is_never_cut_to_its_first_tokens():
    # The tagger reads "B I I I I" with the strongest evidence at the end; with at most 3 tokens
    # the answer is the best 3-token span, not the first three tokens.
    probs = np.array([[[0.4, 0.3, 0.3], [0.1, 0.5, 0.4], [0.1, 0.6, 0.3], [0.1, 0.8, 0.1], [0.1, 0.8, 0.1]]])
    log_probs, mask = np.log(probs), np.ones((1, 5), bool)
    best = best_tag_spans(log_probs, mask, 3)
    assert (best.start[0, 0], best.end[0, 0]) == (2, 4)
    assert [(s, e) for s, e, _ in spans_in_row(likeliest_tag_spans(log_probs, mask, 5), 0)] == [(0, 4)]
    # within 3 tokens the likeliest tags are B I B I I: 0.4·0.5·0.1·0.8·0.8 = 0.0128, above B O B I I (0.01024)
    assert [(s, e) for s, e, _ in spans_in_row(likeliest_tag_spans(log_probs, mask, 3), 0)] == [(0, 1), (2, 4)]


def test_several_spans_and_none():
    certain = {"B": [0.9, 0.05, 0.05], "I": [0.05, 0.9, 0.05], "O": [0.05, 0.05, 0.9]}
    probs = np.array([[certain[c] for c in "OBIOBOBI"], [certain["O"]] * 8])
    spans = likeliest_tag_spans(np.log(probs), np.ones((2, 8), bool), 30)
    assert [(s, e) for s, e, _ in spans_in_row(spans, 0)] == [(1, 2), (4, 4), (6, 7)]
    assert spans_in_row(spans, 1) == []  # all O: no span, whatever the length limit


def test_holes_are_refused_by_the_single_span_search():
    with pytest.raises(ValueError, match="contiguous"):
        best_tag_spans(np.zeros((1, 3, 3)), np.array([[True, False, True]]), 2)


def test_invalid_length():
    with pytest.raises(ValueError, match="max_span_length"):
        best_tag_spans(np.zeros((1, 2, 3)), np.ones((1, 2), bool), 0)


def test_span_posteriors_by_hand():
    # valid sequences and their probabilities: BB .06, BI .30, BO .24, OB .02, OO .08 (OI is not valid), Z = .70
    probs = np.array([[[0.6, 0.2, 0.2], [0.1, 0.5, 0.4]]])
    posterior = span_posteriors(np.log(probs), np.ones((1, 2), dtype=bool), [0, 0, 0], [0, 0, 1], [0, 1, 1])
    np.testing.assert_allclose(posterior, [0.30 / 0.70, 0.30 / 0.70, 0.08 / 0.70])


def test_a_sure_span_posterior_is_never_above_one():
    """Tags B at token 1 and I at token 2 each sure to within e^-10 or less: the span's posterior is 1 to rounding, and
    forward-backward's rounding made it 1.0000000000000029, a probability above 1 in the multi-span answers."""
    logits = np.array([[[5.0, 20.0, 40.0], [30.0, 5.0, 20.0], [5.0, 40.0, 0.0]]])  # B, I, O
    log_probs = logits - np.logaddexp.reduce(logits, axis=-1, keepdims=True)
    (posterior,) = span_posteriors(log_probs, np.ones((1, 3), dtype=bool), [0], [1], [2])
    assert posterior <= 1.0
    assert posterior == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_span_posteriors_match_brute_force(seed):
    log_probs, mask = random_case(seed, length=6)
    rows, starts, ends = zip(*[(n, i, j) for n in range(len(mask)) for i in range(6) for j in range(i, 6)])
    posterior = span_posteriors(log_probs, mask, rows, starts, ends)
    assert len(posterior) == len(rows)  # one value a span asked
    for n in range(len(mask)):
        mass = {}
        total = 0.0
        for tags in legal_sequences(mask[n], max_len=6):
            p = math.exp(sequence_log_prob(log_probs[n], tags))
            total += p
            for span in spans_of(tags):
                mass[span] = mass.get(span, 0.0) + p
        for row, i, j, value in zip(rows, starts, ends, posterior):
            if row == n:
                assert value == pytest.approx(mass.get((i, j), 0.0) / total, abs=1e-12), (n, i, j)


def brute_force_distribution(log_probs: np.ndarray, mask: np.ndarray) -> tuple[dict, float]:
    """Every span's posterior and the expected number of spans of one row, by enumerating its valid sequences."""
    mass, spans_mass, total = {}, 0.0, 0.0
    for tags in legal_sequences(mask, max_len=len(mask)):
        p = math.exp(sequence_log_prob(log_probs, tags))
        total += p
        spans_mass += p * len(spans_of(tags))
        for span in spans_of(tags):
            mass[span] = mass.get(span, 0.0) + p
    return {span: value / total for span, value in mass.items()}, spans_mass / total


@pytest.mark.parametrize("seed", range(6))
def test_the_expected_f1_answer_matches_brute_force(seed):
    log_probs, mask = random_case(seed, length=6, holes=False)
    spans, posterior = expected_f1_tag_spans(log_probs, mask, max_span_length=6, n_candidates=21)  # 21: every span of 6 tokens
    for n in range(len(mask)):
        chosen = [(s, e, p) for r, s, e, p in zip(spans.row, spans.start, spans.end, posterior) if r == n]
        if not mask[n].any():
            assert chosen == []
            continue
        truth, expected_spans = brute_force_distribution(log_probs[n], mask[n])
        taken = []
        for span in sorted(truth, key=truth.get, reverse=True):
            if all(span[1] < t[0] or span[0] > t[1] for t in taken):
                taken.append(span)
        f1 = [2 * sum(truth[t] for t in taken[:k]) / (k + max(1.0, expected_spans)) for k in range(1, len(taken) + 1)]
        want = taken[: int(np.argmax(f1)) + 1]
        assert sorted((s, e) for s, e, _ in chosen) == sorted(want), n
        assert [p for _, _, p in chosen] == pytest.approx([truth[(s, e)] for s, e, _ in chosen], abs=1e-12)
        ratios = span_log_ratios(log_probs, np.full(len(chosen), n), *(np.array([s for s, _, _ in chosen]), np.array([e for _, e, _ in chosen])))
        np.testing.assert_allclose([r for _, _, r in spans_in_row(spans, n)], ratios[np.argsort([s for s, _, _ in chosen])])


@pytest.mark.parametrize("seed", range(4))
def test_the_expected_f1_answer_keeps_every_span_more_likely_than_not(seed):
    rng = np.random.default_rng(seed)
    log_probs = np.log(rng.dirichlet(np.ones(3) * 0.3, size=(20, 12)))
    mask = np.ones((20, 12), dtype=bool)
    spans, _ = expected_f1_tag_spans(log_probs, mask, max_span_length=12, n_candidates=78)  # 78: every span of 12 tokens
    every = [(n, i, j) for n in range(20) for i in range(12) for j in range(i, 12)]
    likely = {span for span, p in zip(every, span_posteriors(log_probs, mask, *np.array(every).T)) if p >= 0.5}
    answers = set(zip(spans.row.tolist(), spans.start.tolist(), spans.end.tolist()))
    assert likely <= answers and len(likely) < len(answers)
    for n in range(20):
        row = sorted((s, e) for r, s, e in answers if r == n)
        assert row, "an answer always has a span"
        assert all(a[1] < b[0] for a, b in zip(row, row[1:])), "its spans do not overlap"


@pytest.mark.parametrize("seed", range(6))
def test_spans_of_one_text_are_one_answer_of_their_summed_posterior(seed):
    log_probs, mask = random_case(seed, length=5, holes=False)
    every = [(i, j) for i in range(5) for j in range(i, 5)]
    text_of = {span: k % 4 for k, span in enumerate(every)}  # 15 spans, 4 texts: every mention among the best 20
    spans, posterior = expected_f1_tag_spans(log_probs, mask, 5, 15, lambda rows, starts, ends: np.array([text_of[s] for s in zip(starts, ends)]))
    for n in range(len(mask)):
        if not mask[n].any():
            continue
        truth, expected_spans = brute_force_distribution(log_probs[n], mask[n])
        answers = {}  # text -> (its likeliest span, summed posterior)
        for span in sorted(every, key=lambda s: -truth.get(s, 0.0)):
            best, total = answers.get(text_of[span], (span, 0.0))
            answers[text_of[span]] = (best, total + truth.get(span, 0.0))
        taken = []
        for span, p in sorted(answers.values(), key=lambda a: -a[1]):
            if all(span[1] < t[0][0] or span[0] > t[0][1] for t in taken):
                taken.append((span, min(p, 1.0)))
        # every span is a candidate here, so the expected number of answers is the answers' posteriors' sum
        expected_answers = sum(min(p, 1.0) for _, p in answers.values())
        assert expected_answers <= expected_spans + 1e-12
        f1 = [2 * sum(p for _, p in taken[:k]) / (k + max(1.0, expected_answers)) for k in range(1, len(taken) + 1)]
        want = taken[: int(np.argmax(f1)) + 1]
        for span in every:  # a chosen text's other mentions more likely than not stay, with their own posteriors
            if (text_of[span] in {text_of[t] for t, _ in want} and truth.get(span, 0.0) >= 0.5
                    and all(span[1] < t[0] or span[0] > t[1] for t, _ in want)):
                want.append((span, truth[span]))
        chosen = sorted((s, e, p) for r, s, e, p in zip(spans.row, spans.start, spans.end, posterior) if r == n)
        assert [(s, e) for s, e, _ in chosen] == sorted(span for span, _ in want), n
        assert [p for _, _, p in chosen] == pytest.approx([p for _, p in sorted(want)], abs=1e-12)


TOM_AND_MARY = ["tom", "and", "Tom", "met", "TOM.", "and", "mary"]


def tom_and_mary(b_probabilities):
    """Tag log-probabilities of TOM_AND_MARY, each word B with its given probability (else O), and answer keys
    that make the three mentions of Tom one text."""
    probs = np.array([[[p, 0.0, 1 - p] for p in b_probabilities]]) + 1e-12
    keys = lambda rows, starts, ends: np.array([hash(TOM_AND_MARY[s].lower().strip(".")) for s in starts])  # noqa: E731
    return np.log(probs), keys


def test_a_name_tagged_at_three_mentions_outweighs_a_likelier_single_span():
    # "Tom" at tokens 0, 2 and 4, B with probability 0.3, 0.28, 0.32; "Mary" at token 6 with 0.35: the answer is Tom alone
    log_probs, keys = tom_and_mary([0.3, 0.0, 0.28, 0.0, 0.32, 0.0, 0.35])
    spans, posterior = expected_f1_tag_spans(log_probs, np.ones((1, 7), bool), 30, 20, keys)
    assert [(s, e) for s, e, _ in spans_in_row(spans, 0)] == [(4, 4)]  # Tom's likeliest mention
    assert posterior == pytest.approx([0.9], abs=1e-6)  # 2 * .9 / (1 + 1.25) > 2 * 1.25 / (2 + 1.25)
    sure, _ = tom_and_mary([0.97, 0.0, 0.96, 0.0, 0.01, 0.0, 0.02])
    spans, posterior = expected_f1_tag_spans(sure, np.ones((1, 7), bool), 30, 20, keys)
    assert [(s, e) for s, e, _ in spans_in_row(spans, 0)] == [(0, 0), (2, 2)]  # a sure tagger's two mentions of Tom both stay
    assert posterior == pytest.approx([1.0, 0.96], abs=1e-6)
    each, _ = expected_f1_tag_spans(log_probs, np.ones((1, 7), bool), 30, 20)
    assert (6, 6) in [(s, e) for s, e, _ in spans_in_row(each, 0)]  # span by span, Mary's 0.4 comes first


def test_a_name_sure_at_three_mentions_counts_as_one_answer_of_the_gold():
    # "Tom" B with probability 0.97 at tokens 0, 2 and 4; "Mary" at token 6 with 0.3. Three spans are expected, but
    # one text: against a gold answer of about 1.3 answers, Mary's 0.3 costs more precision than it adds recall
    # (2 * 1 / (1 + 1.3) > 2 * 1.3 / (2 + 1.3)); against 3.2 expected spans she would join (2 * 1 / 4.2 < 2 * 1.3 / 5.2).
    log_probs, keys = tom_and_mary([0.97, 0.0, 0.97, 0.0, 0.97, 0.0, 0.3])
    spans, posterior = expected_f1_tag_spans(log_probs, np.ones((1, 7), bool), 30, 20, keys)
    assert [(s, e) for s, e, _ in spans_in_row(spans, 0)] == [(0, 0), (2, 2), (4, 4)]  # every sure mention of Tom, no Mary


def test_a_sure_tagger_answers_with_its_most_probable_sequence_and_an_unsure_one_with_its_likeliest_spans():
    sure = np.log(np.array([[[0.96, 0.02, 0.02], [0.02, 0.96, 0.02], [0.02, 0.02, 0.96], [0.96, 0.02, 0.02], [0.02, 0.02, 0.96]]]))
    mask = np.ones((1, 5), dtype=bool)
    spans, posterior = expected_f1_tag_spans(sure, mask, 30, 20)
    assert spans_in_row(spans, 0) == spans_in_row(likeliest_tag_spans(sure, mask, 30), 0)  # (0, 1) and (3, 3)
    # unsure: each of two one-word spans is B with probability 0.45, so "all O" is the most probable sequence
    unsure = np.log(np.array([[[0.45, 0.0, 0.55], [0.01, 0.01, 0.98], [0.45, 0.0, 0.55]]]) + 1e-12)
    assert len(likeliest_tag_spans(unsure, np.ones((1, 3), bool), 30)) == 0
    spans, posterior = expected_f1_tag_spans(unsure, np.ones((1, 3), bool), 30, 20)
    assert [(s, e) for s, e, _ in spans_in_row(spans, 0)] == [(0, 0), (2, 2)]
    assert posterior == pytest.approx([0.45, 0.45], abs=5e-3)  # 2 * 0.9 / (2 + 0.9) > 2 * 0.45 / (1 + 0.9)


def test_choosing_among_many_likely_spans_keeps_the_expected_f1_answer():
    """20,000 one-token spans of one row at even tokens, each of posterior 0.9, and 20,000 two-token spans of posterior
    0.6 starting there (each overlapping one of the first): the expected-F1 choice takes the first 20,000 in posterior
    order (``2·0.9k / (k + 18,000)`` grows with k) and none of the others; the likely ones overlap a chosen span and are
    not added (a size at which comparing each span with every one taken before took minutes)."""
    from bio_mrc.decoding.bio_spans import _expected_f1_choice, _with_likely_mentions

    n = 20_000
    starts = np.concatenate([2 * np.arange(n), 2 * np.arange(n)])
    ends = starts + np.repeat([0, 1], n)
    rows, posterior = np.zeros(2 * n, dtype=np.int64), np.repeat([0.9, 0.6], n)
    chosen = _expected_f1_choice(rows, starts, ends, posterior, np.array([0.9 * n]))
    np.testing.assert_array_equal(chosen, np.arange(n))
    kept = _with_likely_mentions(chosen, np.ones(2 * n, dtype=bool), rows, starts, ends)
    np.testing.assert_array_equal(kept, np.arange(n))
    # A span of another row overlaps nothing taken in this one: it joins.
    other = _with_likely_mentions(chosen[:2], np.r_[np.zeros(2 * n, dtype=bool), True], np.r_[rows, 1], np.r_[starts, 0], np.r_[ends, 5])
    np.testing.assert_array_equal(other, [0, 1, 2 * n])


def test_a_multi_span_bio_answer_is_never_only_whitespace_tokens():
    """Sub-word tags sure of the two whitespace tokens " " and "\\n" between "Ada" and "wrote", and unsure of the words:
    the spans chosen were those of whitespace alone, trimmed away, so the answer was empty. Only spans that keep some
    text are candidates: the answer is "wrote", the likelier word (B at -2 against "Ada"'s -4, O at 0)."""
    from bio_mrc.decoding.postprocess import DecodeConfig, decode
    from bio_mrc.decoding.window_outputs import WindowOutputs
    from bio_mrc.types import Example

    context = "Ada \n wrote"
    offsets = np.array([[(-1, -1), (0, 3), (3, 4), (4, 5), (5, 6), (6, 11)]])
    bio = np.array([[[0.0, 0.0, 0.0], [-4.0, -30.0, 0.0], [30.0, 0.0, 0.0], [0.0, 30.0, 0.0], [-30.0, -30.0, 30.0],
                     [-2.0, -30.0, 0.0]]])  # B, I, O
    outputs = WindowOutputs(np.array([0]), offsets, offsets[..., 0] >= 0, start_logits=np.zeros((1, 6)),
                            end_logits=np.zeros((1, 6)), bio_logits=bio)
    examples = [Example("q", "who wrote?", context, None)]
    for decoding in ("bio", "joint"):
        (prediction,) = decode(outputs, examples, decoding, DecodeConfig(multi_span=True))
        spans = prediction.tag_spans if decoding == "joint" else prediction.spans
        assert [(s.text, s.start, s.end) for s in spans] == [("wrote", 6, 11)]


def test_a_longer_candidate_list_adds_no_posterior_to_an_answer():
    # one-word spans only: "Tom" B with 0.6, "Mary" with 0.3, 19 fillers with 0.02 down to 0.011, "Tom" again with 0.01,
    # ranked 22nd: past the best 20 it is no candidate, so Tom's posterior stays 0.6 (it was 0.61 with 60 candidates)
    words = ["Tom", "Mary", *(f"w{k}" for k in range(19)), "Tom"]
    b_probabilities = [0.6, 0.3, *(0.02 - 0.0005 * k for k in range(19)), 0.01]
    log_probs = np.log(np.array([[[p, 0.0, 1 - p] for p in b_probabilities]]) + 1e-12)
    keys = lambda rows, starts, ends: np.array([hash(" ".join(words[s:e + 1])) for s, e in zip(starts, ends)])  # noqa: E731
    mask = np.ones((1, len(words)), bool)
    answers = {n: expected_f1_tag_spans(log_probs, mask, 30, n, keys) for n in (1, 20, 60)}
    # 2 * .9 / (2 + 1.2045) > 2 * .6 / (1 + 1.2045): Tom and Mary, against 1.2045 expected spans
    spans, posterior = answers[20]
    assert [(s, e) for s, e, _ in spans_in_row(spans, 0)] == [(0, 0), (1, 1)]
    assert posterior == pytest.approx([0.6, 0.3], abs=1e-9)
    spans, posterior = answers[60]
    assert [(s, e) for s, e, _ in spans_in_row(spans, 0)] == [(0, 0), (1, 1)]
    assert posterior == pytest.approx([0.6, 0.3], abs=1e-9)
    spans, posterior = answers[1]  # one candidate besides the most probable sequence's Tom: Tom alone, of the same posterior
    assert [(s, e) for s, e, _ in spans_in_row(spans, 0)] == [(0, 0)]
    assert posterior == pytest.approx([0.6], abs=1e-9)
