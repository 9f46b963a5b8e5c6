"""Multi-span answers of contexts longer than one window: the BIO decoding merges the windows token by token (each
token from the window where it has the most context) before it reads any span, so a tagged span across a window
boundary is one span, however small the overlap and however long the span, and with the same per-token tag
probabilities in every window the answer is the one a single window holding the whole context gives."""

from __future__ import annotations

import numpy as np
import pytest

from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.decoding.window_outputs import WindowOutputs
from bio_mrc.features.windows import FeatureConfig, build_features
from bio_mrc.inference.answers import decode_answers
from bio_mrc.inference.forward import window_outputs
from bio_mrc.tags import TAG_B, TAG_I, TAG_O
from bio_mrc.types import Example

# Sure tags: P(B), P(I), P(O) of a token tagged B, I or O.
SURE = {"B": (0.96, 0.02, 0.02), "I": (0.02, 0.96, 0.02), "O": (0.02, 0.02, 0.96)}


def word_context(n_tokens: int) -> str:
    """``w000 w001 …``: token ``t`` is the characters ``5t .. 5t+4``."""
    return " ".join(f"w{t:03d}" for t in range(n_tokens))


def char_span(first: int, last: int) -> tuple[int, int]:
    return 5 * first, 5 * last + 4


def stride_windows(tags: str, room: int, overlap: int) -> WindowOutputs:
    """The tokens of ``word_context(len(tags))`` in windows of ``room`` tokens after a [CLS], each window after the
    first beginning ``overlap`` tokens before the last one ended (as a tokenizer's stride lays them), every window
    giving a token the tag probabilities of its letter in ``tags`` (``SURE``)."""
    n, starts = len(tags), [0]
    while starts[-1] + room < n:
        starts.append(starts[-1] + room - overlap)
    width = room + 1
    offsets = np.full((len(starts), width, 2), -1, dtype=np.int64)
    bio = np.zeros((len(starts), width, 3))
    for row, first in enumerate(starts):
        for slot, token in enumerate(range(first, min(first + room, n)), start=1):
            offsets[row, slot] = char_span(token, token)
            bio[row, slot, [TAG_B, TAG_I, TAG_O]] = np.log(SURE[tags[token]])
    zeros = np.zeros((len(starts), width))
    return WindowOutputs(np.zeros(len(starts), dtype=np.int64), offsets, offsets[..., 0] >= 0, bio_logits=bio,
                         start_logits=zeros, end_logits=zeros)


def answer_of(outputs: WindowOutputs, example: Example, decoding: str = "bio", **config):
    (prediction,) = decode_answers(outputs, [example], decoding, DecodeConfig(**config), multi_span=True)
    return prediction


def as_key(prediction) -> list[tuple]:
    return [(s.text, s.start, s.end, round(s.score, 9), round(s.probability, 9)) for s in prediction.spans]


@pytest.mark.parametrize("room, overlap", [(4, 1), (5, 1), (5, 2), (6, 3), (7, 1)])
def test_a_tagged_span_across_windows_is_one_span_with_its_exact_offsets(room, overlap):
    """Tokens 3-11 are one tagged span of 9 tokens, longer than any window here and than every overlap (of one token
    too): it crosses two or more window boundaries and comes out whole, beside the spans before and after it."""
    tags = "BOO" + "B" + "I" * 8 + "OBIO"
    example = Example("q", "which?", word_context(len(tags)))
    windows = stride_windows(tags, room, overlap)
    assert len(windows.example_index) >= 3
    prediction = answer_of(windows, example)
    assert sorted((s.start, s.end) for s in prediction.spans) == [char_span(0, 0), char_span(3, 11), char_span(13, 14)]
    assert all(example.context[s.start:s.end] == s.text for s in prediction.spans)
    assert prediction.spans[0].text == "w003 w004 w005 w006 w007 w008 w009 w010 w011"  # the largest r first
    assert as_key(prediction) == as_key(answer_of(stride_windows(tags, len(tags), 0), example))


@pytest.mark.parametrize("room, overlap", [(8, 1), (11, 3), (16, 5)])
def test_every_one_of_fifty_tagged_list_items_is_answered_as_in_one_window(room, overlap):
    """Fifty items of 1-3 tokens over many windows: the BIO and joint answers hold all fifty, apart, each the
    context's text at its offsets, the BIO spans ranked by their r (longer items first: each I adds its gain), and
    the BIO answer (spans, scores, posteriors, no-answer score) is the one of a window holding the whole context."""
    rng = np.random.default_rng(7)
    items = [("B" + "I" * int(rng.integers(0, 3))) for _ in range(50)]
    tags = "O" + "O".join(items) + "O"
    example = Example("q", "which?", word_context(len(tags)))
    expected, token = [], 1
    for item in items:
        expected.append(char_span(token, token + len(item) - 1))
        token += len(item) + 1
    windows, whole = stride_windows(tags, room, overlap), stride_windows(tags, len(tags), 0)
    assert len(windows.example_index) > 10
    for decoding in ("bio", "joint"):
        prediction = answer_of(windows, example, decoding)
        assert sorted((s.start, s.end) for s in prediction.spans) == expected, decoding
        assert all(example.context[s.start:s.end] == s.text for s in prediction.spans)
    bio = answer_of(windows, example)
    assert [len(s.text) for s in bio.spans] == sorted((len(s.text) for s in bio.spans), reverse=True)
    one_window = answer_of(whole, example)
    assert as_key(bio) == as_key(one_window) and bio.no_answer_score == pytest.approx(one_window.no_answer_score)


def test_a_tagged_run_longer_than_the_maximum_answer_length_is_no_part_of_a_multi_span_answer():
    """A run of 40 sure tags (tokens 4-43) beside two short spans: with ``max_answer_length`` 30 its pieces of at
    most 30 tokens each have a posterior near 0 (the tags run on past them), so the answer is the two short spans;
    the single answer is its best piece within the limit (its first 30 tokens: even evidence); with 40 it is whole."""
    tags = "OBIO" + "B" + "I" * 39 + "OBIIO"
    example = Example("q", "which?", word_context(len(tags)))
    windows = stride_windows(tags, 12, 3)
    short = answer_of(windows, example, max_answer_length=30)
    assert [(s.start, s.end) for s in short.spans] == [char_span(45, 47), char_span(1, 2)]
    (single,) = decode_answers(windows, [example], "bio", DecodeConfig(max_answer_length=30))
    assert (single.spans[0].start, single.spans[0].end) == char_span(4, 33)
    whole = answer_of(windows, example, max_answer_length=40)
    assert [(s.start, s.end) for s in whole.spans] == [char_span(4, 43), char_span(45, 47), char_span(1, 2)]


@pytest.mark.parametrize("tag_level", ["word", "subword"])
def test_a_long_answer_across_real_windows_keeps_its_characters(tiny_tokenizer, tag_level):
    """The same through a WordPiece tokenizer: an item of many words and pieces, accents among them, crosses windows
    of 24 tokens whose overlap is 1 to 3 tokens; every item comes out whole, at its exact offsets, as in one window."""
    items = ["café", "the normans in normandy and france in the tenth century naïve café", "rollo", "isaac newton"]
    context, spans = "they are ", []
    for item in items:
        spans.append((len(context), len(context) + len(item)))
        context += item + (", " if item != items[-1] else ".")
    example = Example("q", "who?", context)

    def answer(max_seq_length: int, stride: int):
        config = FeatureConfig(max_seq_length, stride, 8, tag_level=tag_level)
        features = build_features([example], tiny_tokenizer, config, with_targets=False, desc="windows")
        bare = window_outputs(features, {"bio_logits": np.zeros((len(features), max_seq_length, 3))})
        bio = np.log(np.broadcast_to(SURE["O"], (*bare.mask.shape, 3))).copy()
        for (begin, end), (row, slot) in zip(bare.offsets[bare.mask], np.argwhere(bare.mask)):
            for first, last in spans:
                if begin < last and end > first:
                    bio[row, slot] = np.log(SURE["B" if begin <= first else "I"])
        long_first, long_last = spans[1]
        holders = [row for row in range(len(features)) if {long_first, long_last} <= {
            *bare.offsets[row][bare.mask[row]][:, 0].tolist(), *bare.offsets[row][bare.mask[row]][:, 1].tolist()}]
        return holders, answer_of(window_outputs(features, {"bio_logits": bio}), example, max_answer_length=200)

    holders, whole = answer(256, 0)
    assert holders == [0]
    assert sorted((s.start, s.end) for s in whole.spans) == spans
    for stride in (1, 2, 3):
        holders, prediction = answer(24, stride)
        assert holders == []  # no window holds the long item whole
        assert as_key(prediction) == as_key(whole)
        assert all(context[s.start:s.end] == s.text for s in prediction.spans)
