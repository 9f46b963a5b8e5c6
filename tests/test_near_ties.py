"""Scores tied up to round-off never decide a multi-span answer: which mention of a repeated answer stands for it, and
so which overlapping answer survives, goes by position (the earliest) wherever candidates are within ``NEAR_TIE`` of
each other, so PyTorch and an ONNX export (float32 logits summed in another order) give one answer. Scores that
differ by more (a thousandth) keep their order."""

from __future__ import annotations

import numpy as np
import pytest

from bio_mrc.decoding.bio_spans import expected_f1_tag_spans
from bio_mrc.decoding.nbest_spans import nbest_multi_span, tagged_or_nbest_spans
from bio_mrc.decoding.postprocess import DecodeConfig, decode_span
from bio_mrc.decoding.ties import NEAR_TIE, near_tie_order
from bio_mrc.decoding.window_outputs import WindowOutputs
from bio_mrc.tags import TAG_I
from bio_mrc.types import AnswerSpan, Example, Prediction

ROUND_OFF = (1e-9, -1e-9)
CLEAR = 1e-3


def test_near_ties_go_by_position_and_clear_differences_by_score():
    starts, ends = np.array([7, 3, 5, 1]), np.array([8, 4, 6, 2])
    for eps in ROUND_OFF:
        scores = np.array([0.5, 0.5 * (1 + eps), 0.2, 0.5 * (1 - eps)])
        assert near_tie_order(scores, starts, ends).tolist() == [3, 1, 0, 2]
    assert near_tie_order(np.array([0.5, 0.5, 0.5]), np.array([4, 2, 2]), np.array([5, 6, 3])).tolist() == [2, 1, 0]
    scores = np.array([0.5, 0.5 * (1 + CLEAR), 0.2, 0.5 * (1 - CLEAR)])
    assert near_tie_order(scores, starts, ends).tolist() == [1, 0, 3, 2]
    # A run of ties chains, groups stay apart, and infinities tie only with themselves.
    chained = np.array([1.0, 1 - 0.9 * NEAR_TIE, 1 - 1.8 * NEAR_TIE])
    assert near_tie_order(chained, np.array([2, 1, 0]), np.array([2, 1, 0])).tolist() == [2, 1, 0]
    assert near_tie_order(np.array([1.0, 1.0, 2.0]), np.array([5, 0, 9]), np.array([5, 0, 9]), np.array([1, 0, 1])).tolist() == [1, 2, 0]
    assert near_tie_order(np.array([-np.inf, 3.0, -np.inf]), np.array([2, 5, 1]), np.array([2, 5, 1])).tolist() == [1, 2, 0]
    assert near_tie_order(np.zeros(0), np.zeros(0, int), np.zeros(0, int)).tolist() == []


def two_copies(delta: float) -> np.ndarray:
    """Tag log-probabilities of two copies of ``x A1 A2 g y``: "A1 A2" (tokens 1-2, 6-7) more likely than not, "A1 A2 g"
    (1-3, 6-8) a little less; ``delta`` added to the second copy's log P(I) of g moves its two mentions apart."""
    copy = [[0.01, 0.0, 0.99], [0.97, 0.0, 0.03], [0.01, 0.98, 0.01], [0.0, 0.42, 0.58], [0.01, 0.0, 0.99]]
    log_probs = np.log(np.array([copy * 2]) + 1e-12)
    log_probs[0, 8, TAG_I] += delta
    return log_probs


def by_length(rows, starts, ends):
    return ends - starts  # the copies' spans of one length are one text


def bio_answer(delta: float) -> list[tuple[int, int]]:
    spans, _ = expected_f1_tag_spans(two_copies(delta), np.ones((1, 10), dtype=bool), 30, 20, by_length)
    return list(zip(spans.start.tolist(), spans.end.tolist()))


def test_the_bio_answer_of_a_repeated_text_does_not_follow_round_off():
    """Each text stands at its earliest mention: "A1 A2 g" there overlaps "A1 A2", so the answer is "A1 A2" at both
    mentions, whichever copy round-off makes likelier (it was the first copy's "A1 A2" and the second's "A1 A2 g" for
    one sign, the reverse for the other)."""
    assert bio_answer(0.0) == [(1, 2), (6, 7)]
    for delta in ROUND_OFF:
        assert bio_answer(delta) == [(1, 2), (6, 7)]


def test_the_bio_answer_follows_a_clear_difference():
    """A thousandth apart, each text stands at its likelier mention: the two no longer overlap, and both are answers."""
    assert bio_answer(CLEAR) == [(1, 2), (6, 8)]
    assert bio_answer(-CLEAR) == [(1, 3), (6, 7)]


CONTEXT = "In the 10th and 11th centuries gave. In the 10th and 11th centuries gave."
SHORT, LONG = "10th and 11th centuries", "10th and 11th centuries gave"


def span(text: str, copy: int, score: float, probability: float | None = None) -> AnswerSpan:
    start = CONTEXT.index(text, 0 if copy == 0 else CONTEXT.index(". ") + 1)
    return AnswerSpan(text, start, start + len(text), score, probability)


def nbest_prediction(eps: float) -> Prediction:
    """The n-best of both copies, best first: each text's two mentions ``eps`` apart (the second copy's "…centuries"
    higher by it, its "…centuries gave" lower)."""
    spans = [span(SHORT, 0, 2.0), span(SHORT, 1, 2.0 * (1 + eps)), span(LONG, 0, 1.9), span(LONG, 1, 1.9 * (1 - eps))]
    return Prediction("q", sorted(spans, key=lambda s: -s.score))


def placed(prediction: Prediction) -> list[tuple[str, int]]:
    return [(s.text, s.start) for s in prediction.spans]


def test_the_nbest_answer_of_a_repeated_text_does_not_follow_round_off():
    """Each text stands at its earliest mention, where "…centuries gave" overlaps "…centuries": one span."""
    for eps in (0.0, *ROUND_OFF):
        assert placed(nbest_multi_span([nbest_prediction(eps)])[0]) == [(SHORT, 7)]


def test_the_nbest_answer_follows_a_clear_difference():
    assert placed(nbest_multi_span([nbest_prediction(CLEAR)])[0]) == [(SHORT, 44), (LONG, 7)]
    assert placed(nbest_multi_span([nbest_prediction(-CLEAR)])[0]) == [(SHORT, 7), (LONG, 44)]


def tagged_prediction(eps: float) -> Prediction:
    """A joint prediction whose tagger holds "…centuries" at both copies and "In" at the first, ``eps`` apart."""
    tags = [span("In", 0, 1.0, 0.8), span(SHORT, 0, 1.0, 0.9), span(SHORT, 1, 1.0, 0.9 * (1 + eps))]
    return Prediction("q", [span("In", 0, 3.0)], tag_spans=tags)


def test_the_joint_answers_mentions_go_by_position_when_tied():
    for eps in (0.0, *ROUND_OFF):
        assert placed(tagged_or_nbest_spans([tagged_prediction(eps)])[0]) == [("In", 0), (SHORT, 7), (SHORT, 44)]
    assert placed(tagged_or_nbest_spans([tagged_prediction(CLEAR)])[0]) == [("In", 0), (SHORT, 44), (SHORT, 7)]


def span_outputs(nudge: int) -> tuple[WindowOutputs, list[Example]]:
    """One window over "aa bb aa bb" (tokens 1-4): "aa" starts at tokens 1 and 3 with float32 start logits ``nudge``
    units of round-off apart, and every span ends at either "aa"."""
    context = "aa bb aa bb"
    offsets = np.array([[[-1, -1], [0, 2], [3, 5], [6, 8], [9, 11]]])
    mask = np.array([[False, True, True, True, True]])
    start = np.array([[0.0, 3.0, -5.0, 3.0, -5.0]], dtype=np.float32)
    start[0, 3] = np.float32(3.0) + nudge * np.spacing(np.float32(3.0))
    end = np.array([[0.0, 2.0, -5.0, 2.0, -5.0]], dtype=np.float32)
    outputs = WindowOutputs(np.array([0]), offsets, mask, start_logits=start, end_logits=end, bio_logits=None)
    return outputs, [Example(id="q", question="?", context=context)]


@pytest.mark.parametrize("nudge", [0, 1, -1, 2, -2])
def test_near_tied_span_scores_give_one_multi_span_answer(nudge):
    """A text's mentions scored within round-off of each other (float32 logits a few units apart) stand for its answer
    by position, earliest first, in the span n-best's multi-span answer. The n-best list itself keeps its exact order:
    it is the prefix the span search cut, so a question's list is the same whatever other questions or documents
    share the call."""
    outputs, examples = span_outputs(nudge)
    prediction = decode_span(outputs, examples, DecodeConfig(n_best=3, max_answer_length=1))[0]
    assert {(s.text, s.start) for s in prediction.spans[:2]} == {("aa", 0), ("aa", 6)}
    assert placed(nbest_multi_span([prediction])[0])[0] == ("aa", 0)


def nudged(outputs: WindowOutputs, seed: int) -> WindowOutputs:
    """``outputs`` with every finite logit moved by up to two units of float32 round-off, as another backend's may be."""
    rng = np.random.default_rng(seed)

    def nudge(values):
        units = rng.integers(-2, 3, values.shape) * np.spacing(np.abs(values))
        return np.where(np.isfinite(values), values + units, values).astype(values.dtype)

    logits = ("start_logits", "end_logits", "bio_logits")
    return WindowOutputs(outputs.example_index, **{name: nudge(array) if name in logits and array is not None else array
                                                   for name, array in outputs.per_window().items()})


def test_round_off_in_the_logits_leaves_the_answers_on_a_repeated_paragraph(trained_dir, sample_v1):
    """Five copies of one paragraph hold every answer five times, each copy's scores equal to the others' up to
    round-off: logits moved by a unit or two of float32 round-off give every decoding the same answers, single and
    multi-span (the spans at the same offsets, in the same order)."""
    from bio_mrc.inference import AnswerExtractor

    extractor = AnswerExtractor.from_pretrained(trained_dir, precision="fp32")
    context = " ".join([sample_v1.examples[0].context] * 5)
    examples = [Example(id=f"q{k}", question=e.question, context=context) for k, e in enumerate(sample_v1.examples[:3])]
    outputs = extractor.trained.windows(examples)
    for decoding in ("span", "bio", "joint"):
        for multi_span in (False, True):
            want = [placed(p) for p in extractor.predict(outputs, examples, multi_span, decoding)]
            for seed in range(4):
                assert [placed(p) for p in extractor.predict(nudged(outputs, seed), examples, multi_span, decoding)] == want


def test_the_multi_span_answer_begins_with_the_single_answers_text_whatever_a_near_tie_reorders():
    """Two texts near-tied: the single answer is the n-best list's first, and the multi-span answer's first span is
    that text (at its earliest near-tied mention), never the other text a near-tie puts before it by position."""
    for eps in ROUND_OFF:
        spans = sorted([span("In", 0, 2.0), span(SHORT, 1, 2.0 * (1 + eps)), span(SHORT, 0, 2.0 * (1 + eps))],
                       key=lambda s: (-s.score, s.start))
        lead = spans[0].text
        answer = placed(nbest_multi_span([Prediction("q", spans)], min_probability=0.0)[0])
        assert answer[0] == (lead, CONTEXT.index(lead)) and {text for text, _ in answer} == {"In", SHORT}
