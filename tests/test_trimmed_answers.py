"""Answers never begin or end with whitespace or another blank user-perceived character (a zero-width space, a
bidirectional control, a byte-order mark, a soft hyphen), whatever the tokenizer's offsets hold."""

from __future__ import annotations

import numpy as np
import pytest

from bio_mrc import answer_text
from bio_mrc.answer_text import trimmed_span, trimmed_spans, without_blank_edges
from bio_mrc.decoding.postprocess import DecodeConfig, decode
from bio_mrc.features.ragged import RaggedColumn
from bio_mrc.features.windows import FeatureConfig, build_features
from bio_mrc.inference.forward import window_outputs
from bio_mrc.tags import TAG_O

from .conftest import SAMPLE_V1


def test_trimmed_span_by_hand():
    assert trimmed_span(" Ada\u00a0wrote it. \n", 0, 10) == (1, 10)
    assert trimmed_span("a  \t b", 1, 5) == (5, 5)  # only whitespace: empty, and dropped by the decoders
    assert trimmed_span("Ada", 0, 3) == (0, 3)


@pytest.mark.parametrize("context, start, end, kept", [
    ("\u200bAda\u200b", 0, 5, "Ada"),  # zero-width spaces
    ("\ufeffAda\u00ad", 0, 5, "Ada"),  # a byte-order mark inside text, a soft hyphen
    ("\u202bשלום\u202c", 0, 6, "שלום"),  # bidirectional embedding and its end
    ("x \u200d Ada", 1, 7, "Ada"),  # a joiner on a space: one blank cluster, never half of it
    ("x \u0301Ada\x07", 1, 7, "Ada"),  # a mark on a space, a control character
    ("cafe\u0301 \u2069", 0, 7, "cafe\u0301"),  # a letter keeps its mark
    ("zero\u200dwidth", 0, 5, "zero\u200d"),  # and the joiner after it (one cluster with it)
    ("\u200b\u2067\u00ad", 0, 3, ""),  # nothing readable: empty, and dropped by the decoders
])
def test_blank_clusters_at_the_edges_are_trimmed_whole(context, start, end, kept):
    begin, finish = trimmed_span(context, start, end)
    assert context[begin:finish] == kept and (kept or begin == finish)


def test_a_gold_span_loses_the_blank_clusters_a_decoder_trims_and_a_blank_one_stays_as_given():
    # Training, a report's gold tags and tune's window check read the gold as a decoder answers it: zero-width
    # spaces, a byte-order mark, a joiner on a space and a soft hyphen are blank as whitespace is (str.strip kept them).
    context = "\u200bParis\u200b, \ufeff Lyon \u200d\n and \u200b\u2060 cafe\u0301\u00ad"
    alternatives = (((0, 7), (9, 18)), ((18, 23),), ((22, 26),), ((25, 32),), ((4, 4),))
    assert [context[a:b] for alt in alternatives for a, b in alt] == [
        "\u200bParis\u200b", "\ufeff Lyon \u200d\n", " and ", " \u200b\u2060 ", " cafe\u0301\u00ad", ""]
    trimmed = without_blank_edges(context, alternatives)
    # Paris, Lyon, and, the blank span as given, the letter with its accent, the empty span as given
    assert trimmed == (((1, 6), (11, 15)), ((19, 22),), ((22, 26),), ((26, 31),), ((4, 4),))
    assert [context[a:b] for a, b in trimmed[3][0:1]] == ["cafe\u0301"]
    assert without_blank_edges(context, None) is None


def test_spans_trimmed_together_are_each_trimmed_alone_and_only_those_with_a_blank_edge_go_one_by_one(monkeypatch):
    calls = []
    monkeypatch.setattr(answer_text, "trimmed_span", lambda *span: calls.append(span[1:]) or trimmed_span(*span))
    begin, end = trimmed_spans(["Ada wrote it. "], [0, 0, 0, 0, 0], [0, 4, 0, 3, 2], [3, 9, 14, 4, 2])
    assert (begin.tolist(), end.tolist()) == ([0, 4, 0, 4, 2], [3, 9, 13, 4, 2])  # "Ada", "wrote", "Ada wrote it.", ""
    assert calls == [(0, 14), (3, 4)]  # the others' edges are letters: their own trim
    contexts = ["\u200bAda\u200b x \u0301y cafe\u0301 \u2069\n 首都。\ud800 👍🏽 \t", "a  \t b", "", "\u00a0 .z"]
    rng = np.random.default_rng(0)
    rows = rng.integers(0, len(contexts), 2000)
    lengths = np.array([len(c) for c in contexts])[rows]
    start, stop = rng.integers(0, lengths + 1), rng.integers(0, lengths + 1)
    expected = [trimmed_span(contexts[r], s, e) for r, s, e in zip(rows.tolist(), start.tolist(), stop.tolist())]
    assert list(zip(*(a.tolist() for a in trimmed_spans(contexts, rows, start, stop)))) == expected


def test_a_word_of_a_zero_width_space_alone_is_no_word(tiny_bpe_tokenizer):
    """Byte-level BPE makes a zero-width space a word of its own: a tagger would answer it (and a BIO answer whose
    candidates are all such words would be empty once trimmed)."""
    from bio_mrc.features.words import context_words

    context = "the \u200b river \u2067 city"
    (words,) = context_words(tiny_bpe_tokenizer, [context])
    assert [context[a:b] for a, b in words.tolist()] == ["the", "river", "city"]


@pytest.mark.parametrize("which", ["metaspace", "byte-level BPE"])
@pytest.mark.parametrize("decoding", ["span", "joint", "bio"])
def test_no_answer_starts_or_ends_with_whitespace(sample_v1, metaspace_tokenizer, tiny_bpe_tokenizer, which, decoding):
    tokenizer = metaspace_tokenizer if which == "metaspace" else tiny_bpe_tokenizer
    examples = sample_v1.examples
    features = build_features(examples, tokenizer, FeatureConfig(48, 16, 12, tag_level="subword"), with_targets=False)
    offsets = RaggedColumn.from_dataset(features, "offset_mapping").padded(fill=-1, dtype=np.int64)
    contexts = [examples[i].context for i in features["example_index"]]
    spaced = sum(s >= 0 and e > s and contexts[w][s].isspace() for w, row in enumerate(offsets) for s, e in row)
    if which == "metaspace":
        assert spaced > 0  # the case at hand: token offsets that begin at a space
    rng = np.random.default_rng(0)
    n, width = offsets.shape[:2]
    logits = {"start_logits": rng.normal(size=(n, width)).astype(np.float32),
              "end_logits": rng.normal(size=(n, width)).astype(np.float32),
              "bio_logits": rng.normal(size=(n, width, 3)).astype(np.float32)}
    predictions = decode(window_outputs(features, logits), examples, decoding, DecodeConfig(n_best=20))
    spans = [(example, span) for example, prediction in zip(examples, predictions) for span in prediction.spans]
    assert len(spans) > len(examples)
    for example, span in spans:
        assert span.text and span.text == span.text.strip() and example.context[span.start: span.end] == span.text
    for prediction in predictions:  # one entry per span after trimming
        assert len({(s.start, s.end) for s in prediction.spans}) == len(prediction.spans)


def test_the_no_answer_score_is_measured_against_the_best_span_shown_not_one_of_whitespace():
    """A span of whitespace alone (two newline tokens) scores best and is dropped: ``no_answer_score`` is
    ``null - best`` of the best span shown, so a document's answer reads back as ``span.score - null``."""
    from bio_mrc.decoding.window_outputs import WindowOutputs
    from bio_mrc.inference.documents import rank_across_documents
    from bio_mrc.types import Example

    context = "Ada\n\nwrote it"
    offsets = np.array([[[-1, -1], [0, 3], [3, 4], [4, 5], [5, 10], [11, 13]]])
    mask = offsets[..., 0] >= 0
    start, end = np.zeros((1, 6)), np.zeros((1, 6))
    start[0, 0], end[0, 0] = 5.0, 5.0  # null 10
    start[0, 2], end[0, 3] = 9.0, 9.0  # "\n\n": 18, dropped
    end[0, 4] = 6.0  # "\n\nwrote" trimmed to "wrote": 9 + 6 = 15, the best span shown
    bio = np.zeros((1, 6, 3))
    bio[..., TAG_O] = 10.0
    bio[0, 2] = [10.0, 0.0, 0.0]  # B at the first newline: r("\n\n") = 10 + 10 = 20, dropped
    bio[0, 3] = [0.0, 10.0, 0.0]
    bio[0, 4] = [4.0, -5.0, 0.0]  # r("\n\nwrote") = 20 - 5 = 15, shown as "wrote"; r("wrote") = 4
    outputs = WindowOutputs(np.zeros(1, dtype=np.int64), offsets, mask, start_logits=start, end_logits=end, bio_logits=bio)
    example = Example("q", "who wrote it?", context, None)
    span = decode(outputs, [example], "span", DecodeConfig())[0]
    assert (span.spans[0].text, span.spans[0].score) == ("wrote", 15.0)
    assert span.no_answer_score == pytest.approx(10.0 - 15.0)
    assert rank_across_documents("who wrote it?", [span]).answers[0].score == pytest.approx(15.0 - 10.0)
    bio_answer = decode(outputs, [example], "bio", DecodeConfig(bio_length_prior=0.0))[0]
    assert bio_answer.spans[0].text == "wrote"
    assert bio_answer.no_answer_score == pytest.approx(-bio_answer.spans[0].score) == pytest.approx(-15.0, abs=1e-3)


@pytest.mark.parametrize("blank", ["\n", "\u200b"])
@pytest.mark.parametrize("decoding", ["span", "joint"])
def test_spans_of_blank_tokens_alone_never_leave_a_question_without_an_answer(decoding, blank):
    """Newline or zero-width-space tokens (byte-level BPE makes one of each) score best as starts and ends: every span
    among the n-best of the window is blank, and trimming dropped them all, leaving no answer; the best spans with text
    stand in."""
    from bio_mrc.decoding.window_outputs import WindowOutputs
    from bio_mrc.types import Example

    context = f"Ada{blank * 3} wrote"
    offsets = np.array([[[-1, -1], [0, 3], [3, 4], [4, 5], [5, 6], [7, 12]]])
    start, end = np.zeros((1, 6)), np.zeros((1, 6))
    start[0, 2:5], end[0, 2:5] = 9.0, 9.0  # the blank tokens
    start[0, 1], end[0, 1] = 2.0, 3.0  # "Ada": 5, the best span with text
    bio = np.zeros((1, 6, 3))
    outputs = WindowOutputs(np.zeros(1, dtype=np.int64), offsets, offsets[..., 0] >= 0, start_logits=start, end_logits=end,
                            bio_logits=bio)
    (prediction,) = decode(outputs, [Example("q", "who wrote it?", context, None)], decoding, DecodeConfig(n_best=2))
    assert prediction.spans and prediction.spans[0].text == "Ada"
    assert all(context[s.start:s.end] == s.text and s.text.strip(" \n\u200b") == s.text for s in prediction.spans)
