"""Odd but valid text round-trips: gold answer -> targets -> perfect logits -> decoded text.

For every decoding (``span``, ``bio``, ``joint``, and BIO ``multi_span``), a gold
answer turned into window targets, then into "perfect" model outputs (start/end
logits peaked at the gold positions; BIO log-probabilities of the smoothed gold
tag distribution), must decode to exactly ``context[start:end]`` of the gold,
with the gold character offsets.

Contexts mix ASCII words, decomposed accents (``e\\u0301``), zero-width
characters (ZWSP, ZWJ, BOM), non-breaking spaces, emoji (skin tones, ZWJ
families, flags, variation selectors), Hebrew/Arabic (with vowel marks), Hindi,
CJK runs without spaces and punctuation; for the default uncased WordPiece
tokenizer (all-MiniLM-L6-v2's, from the local package) and a byte-level BPE
tokenizer trained locally (``tiny_bpe_tokenizer``).

Which golds are representable. A decoder names tokens, so it can only output
spans whose ends are ends of its units: word-level tags name whole words (as
the tokenizer's ``word_ids`` group tokens; a word's span is its tokens' span),
sub-word tags and the start/end head name tokens; a gold never starts or ends
with whitespace or a zero-width space (a blank grapheme cluster). An answer starting mid-word cannot be said with word tags, so the
property is stated for answers from the start of a unit to the end of a unit,
where both ends are also *grapheme* boundaries (a reader never selects half of
"e\\u0301" or of an emoji ZWJ sequence) that no token straddles. When a
tokenizer's normalizer drops characters that attach to the preceding one (the
uncased WordPiece strips combining marks, ZWJ and variation selectors: its
token for ``cafe\\u0301`` ends before the accent), the gold answer still ends
at the grapheme boundary: ``cafe\\u0301`` whole, as an annotator selects it.
Answers span at most ``doc_stride`` tokens, so one window holds each whole
(consecutive windows share ``doc_stride`` tokens); the start/end head can only
name an answer that one window holds.
"""

from __future__ import annotations

import string
import unicodedata

import numpy as np
import pytest
import regex
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from bio_mrc import registry
from bio_mrc.answer_text import trimmed_span
from bio_mrc.decoding.postprocess import DecodeConfig, decode
from bio_mrc.decoding.window_outputs import WindowOutputs
from bio_mrc.features.windows import FeatureConfig, build_features
from bio_mrc.tags import TAG_O
from bio_mrc.types import Example

from .conftest import family_params, property_examples, TOKENIZER_FAMILIES

# Fixed seed and no example database: CI runs exactly the same examples every time.
PROPERTY = settings(
    max_examples=property_examples(50), deadline=None, derandomize=True, database=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],  # no "explain": minutes per failure here
)
# The round trips read the marked span back from perfect outputs: its other mentions stay untagged.
SMALL = dict(max_seq_length=48, doc_stride=16, max_query_length=12, bio_targets="one-hot", span_targets="one-hot", tag_mentions="annotated")
DECODE = DecodeConfig(n_best=5, max_answer_length=64)
PEAK = 30.0  # start/end logit at the gold position; minus this everywhere else

ASCII_WORDS = ["the", "river", "city", "north", "king", "war", "year", "1066", "normandy", "was", "in", "of", "x"]
ODD_WORDS = [
    "cafe\u0301", "e\u0301te\u0301", "nai\u0308ve", "naïve", "über", "x\u0301\u0302",  # decomposed and precomposed accents
    "a\u200bb", "zero\u200dwidth", "\ufeffbom", "ab\u200d",  # zero-width space / joiner / BOM inside and at the end of words
    "كِتَابٌ", "مرحبا", "مَرْحَبًا", "שָׁלוֹם", "שלום", "עולם",  # right-to-left, with and without vowel marks
    "नहीं", "हिन्दी",  # combining vowel signs
    "👍", "👍🏽", "👨\u200d👩\u200d👧", "❤\ufe0f", "🇫🇷",  # emoji: skin tone, ZWJ family, variation selector, flag
]
CJK = "中文本没有空格日本語漢字東京大学北京한국어"
PUNCTUATION = [",", ".", "!", "?", "—", "«", "»", "(", ")", "'s", "“", "”", "…"]
SEPARATORS = [" ", " ", " ", " ", "\u00a0", "\u202f", "  ", "\n", " \u200b ", "\u200b", ""]

pieces = st.one_of(
    st.sampled_from(ASCII_WORDS),
    st.text(string.ascii_lowercase, min_size=1, max_size=9),
    st.sampled_from(ODD_WORDS),
    st.text(CJK, min_size=1, max_size=8),
    st.sampled_from(PUNCTUATION),
)


def context_texts(min_pieces: int) -> st.SearchStrategy[str]:
    """Pieces each followed by a separator (possibly none: pieces then run together)."""
    parts = st.lists(st.tuples(pieces, st.sampled_from(SEPARATORS)), min_size=min_pieces, max_size=40)
    return parts.map(lambda pairs: "".join(p + s for p, s in pairs))


contexts, long_contexts = context_texts(1), context_texts(4)
questions = st.lists(pieces, min_size=1, max_size=5).map(" ".join)


pytestmark = pytest.mark.usefixtures("quiet_progress_bars")  # hundreds of one-example build_features calls


@pytest.fixture(scope="session")
def default_tokenizer():
    """The default encoder's own tokenizer (uncased WordPiece), loaded offline from its package."""
    from transformers import AutoTokenizer

    from bio_mrc.encoders import resolve_encoder

    try:
        return AutoTokenizer.from_pretrained(resolve_encoder("default"), use_fast=True)
    except (ImportError, OSError) as error:  # pragma: no cover - the package is a dependency
        pytest.skip(f"default encoder tokenizer not available: {error}")


@pytest.fixture(scope="session", params=["wordpiece", "bpe"])
def tokenizer(request):
    return request.getfixturevalue("default_tokenizer" if request.param == "wordpiece" else "tiny_bpe_tokenizer")


# ---------------------------------------------------------------- gold answers on unit boundaries


class Units:
    """The units of one context a decoding can name, and which of their ends a gold answer may use."""

    def __init__(self, tokenizer, context: str, level: str):
        enc = tokenizer(context, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        offsets = np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)
        real = offsets[:, 1] > offsets[:, 0]  # byte-level BPE has empty (trimmed space) tokens
        self.tokens = offsets[real]
        if level == "word":
            ids = np.array([-1 if w is None else w for w in enc.word_ids()])[real]
            spans = [(self.tokens[ids == w, 0].min(), self.tokens[ids == w, 1].max()) for w in np.unique(ids)]
        else:
            spans = self.tokens.tolist()
        spans = [_unit_edges(context, int(a), int(b)) for a, b in spans]
        self.spans = np.array(sorted({s for s in spans if s[0] < s[1]}), dtype=np.int64).reshape(-1, 2)
        self.context = context
        graphemes = [m.start() for m in regex.finditer(r"\X", context)] + [len(context)]
        self.is_boundary = np.zeros(len(context) + 1, dtype=bool)
        self.is_boundary[graphemes] = True
        covered = np.zeros(len(context) + 1, dtype=bool)
        for a, b in self.tokens.tolist():
            covered[a:b] = True
        self.covered = covered

    def straddled(self, position: int) -> bool:
        return bool(((self.tokens[:, 0] < position) & (position < self.tokens[:, 1])).any())

    def start_ok(self, start: int) -> bool:
        return self.is_boundary[start] and not self.straddled(start)

    def end_of(self, end: int) -> int | None:
        """The gold end for a unit ending at ``end``: the next grapheme boundary, over characters
        no token covers (ones the normalizer dropped); ``None`` when a token covers them."""
        stop = end
        while not self.is_boundary[stop]:
            if self.covered[stop]:
                return None
            stop += 1
        return None if self.straddled(stop) else stop

    def n_tokens(self, start: int, end: int) -> int:
        return int(((self.tokens[:, 0] < end) & (self.tokens[:, 1] > start)).sum())

    def answers(self, max_tokens: int) -> list[tuple[int, int]]:
        """Every representable gold span of at most ``max_tokens`` tokens (consecutive units)."""
        ends = [self.end_of(int(e)) for e in self.spans[:, 1]]
        found = []
        for i, (start, _) in enumerate(self.spans.tolist()):
            if not self.start_ok(start):
                continue
            for end in ends[i:]:
                if end is None or end <= start:
                    continue
                if self.n_tokens(start, end) > max_tokens:
                    break
                found.append((start, end))
        return sorted(set(found))


def _unit_edges(text: str, start: int, end: int) -> tuple[int, int]:
    """A unit without its blank edges, as an answer's (golds never start or end with whitespace or a zero-width space);
    a unit of combining marks alone (a token that split them from their letter) is kept: an answer may end there."""
    trimmed = trimmed_span(text, start, end)
    if trimmed[0] < trimmed[1] or not any(unicodedata.category(c).startswith("M") for c in text[start:end]):
        return trimmed
    piece = text[start:end]
    return start + len(piece) - len(piece.lstrip()), end - len(piece) + len(piece.rstrip())


def draw_answer(data, units: Units, max_tokens: int) -> tuple[int, int]:
    answers = units.answers(max_tokens)
    assume(answers)
    return data.draw(st.sampled_from(answers), label="answer")


def draw_disjoint_answers(data, units: Units, max_tokens: int) -> tuple[tuple[int, int], ...]:
    """Two to four gold spans that do not overlap, in context order; each starts soon after the
    previous one ends (often right there: adjacent spans must come back as two)."""
    answers = units.answers(max_tokens)
    kept: list[tuple[int, int]] = []
    for _ in range(data.draw(st.integers(2, 4), label="n_spans")):
        after = [a for a in answers if not kept or a[0] >= kept[-1][1]]
        if not after:
            break
        kept.append(data.draw(st.sampled_from(after[:12]), label="answer"))
    assume(len(kept) >= 2)
    return tuple(kept)


# ---------------------------------------------------------------- perfect outputs and the check


def perfect_outputs(features) -> WindowOutputs:
    """What a perfect model says about these windows: the span head peaked at the gold start/end
    (``[CLS]`` where the window lacks the answer), the BIO head the smoothed gold tag distribution."""
    # The columns read whole at once: a column of the Dataset read a row at a time goes back to Arrow for each row.
    columns = features.select_columns(["input_ids", "offset_mapping", "paragraph_mask", "word_offsets", "tag_mask",
                                       "start_positions", "end_positions", "bio_targets"])[:]
    n, width = len(features), max(len(ids) for ids in columns["input_ids"])
    offsets, words = np.full((n, width, 2), -1, dtype=np.int64), np.full((n, width, 2), -1, dtype=np.int64)
    mask, tagged = np.zeros((n, width), dtype=bool), np.zeros((n, width), dtype=bool)
    start, end = np.full((n, width), -PEAK), np.full((n, width), -PEAK)
    bio = np.zeros((n, width, 3))
    for i in range(n):
        length = len(columns["input_ids"][i])
        offsets[i, :length], words[i, :length] = columns["offset_mapping"][i], columns["word_offsets"][i]
        mask[i, :length], tagged[i, :length] = columns["paragraph_mask"][i], columns["tag_mask"][i]
        start[i, columns["start_positions"][i]] = end[i, columns["end_positions"][i]] = PEAK
        bio[i, :length] = np.log(0.9 * np.asarray(columns["bio_targets"][i]) + 0.1 / 3)
    return WindowOutputs(np.asarray(features["example_index"]), offsets, mask, start_logits=start, end_logits=end,
                         bio_logits=bio, word_offsets=words, tag_mask=tagged)


def assert_round_trip(tokenizer, examples: list[Example], config: FeatureConfig, multi_span: bool = False) -> WindowOutputs:
    """Every decoding gives back each example's gold (its first alternative) exactly."""
    outputs = perfect_outputs(build_features(examples, tokenizer, config, desc="odd text"))
    if multi_span:
        predictions = decode(outputs, examples, "bio", DecodeConfig(multi_span=True, max_answer_length=64))
        for prediction, example in zip(predictions, examples):
            gold = [(s, e, example.context[s:e]) for s, e in example.answers[0]]
            got = sorted((s.start, s.end, s.text) for s in prediction.spans)
            assert got == gold, f"bio multi-span on {example.context!r}"
        return outputs
    for decoding in registry.decoding_names():
        for prediction, example in zip(decode(outputs, examples, decoding, DECODE), examples):
            ((start, end),) = example.answers[0]
            assert prediction.spans, f"{decoding}: no span for {example.context!r}"
            best = prediction.spans[0]
            assert (best.start, best.end, best.text) == (start, end, example.context[start:end]), (
                f"{decoding} on {example.context!r}"
            )
    return outputs


def level_config(tag_level: str, **overrides) -> FeatureConfig:
    return FeatureConfig(**{**SMALL, "tag_level": tag_level, **overrides})


def assert_drawn_round_trip(tokenizer, tag_level: str, data, batch, draw_spans, multi_span: bool = False) -> None:
    """Each (context, question) of ``batch`` with the gold spans ``draw_spans(data, units, max_tokens)`` draws in it:
    :func:`assert_round_trip` at ``tag_level``."""
    config = level_config(tag_level)
    examples = [Example(f"{'multi' if multi_span else 'odd'}-{k}", question, context,
                        (draw_spans(data, Units(tokenizer, context, tag_level), config.doc_stride),))
                for k, (context, question) in enumerate(batch)]
    assert_round_trip(tokenizer, examples, config, multi_span=multi_span)


# ---------------------------------------------------------------- properties


@pytest.mark.slow
@pytest.mark.parametrize("tag_level", ["word", "subword"])
@PROPERTY
@given(data=st.data(), batch=st.lists(st.tuples(contexts, questions), min_size=1, max_size=3))
def test_single_answers_round_trip_for_every_decoding(tokenizer, tag_level, data, batch):
    assert_drawn_round_trip(tokenizer, tag_level, data, batch, lambda *drawing: (draw_answer(*drawing),))


@pytest.mark.slow
@pytest.mark.parametrize("tag_level", ["word", "subword"])
@PROPERTY
@given(data=st.data(), batch=st.lists(st.tuples(long_contexts, questions), min_size=1, max_size=3))
def test_several_answer_spans_round_trip_with_multi_span_bio(tokenizer, tag_level, data, batch):
    assert_drawn_round_trip(tokenizer, tag_level, data, batch, draw_disjoint_answers, multi_span=True)


# ---------------------------------------------------------------- explicit cases


def unit_answer(tokenizer, context: str, text: str, level: str, occurrence: int = -1, max_tokens: int = 16) -> tuple[int, int]:
    """The span of ``text`` in ``context`` (its last occurrence by default), checked to be representable."""
    starts = [m.start() for m in regex.finditer(regex.escape(text), context)]
    span = (starts[occurrence], starts[occurrence] + len(text))
    units = Units(tokenizer, context, level)
    assert units.start_ok(span[0]) and span[0] in units.spans[:, 0], f"{text!r} does not start a unit"
    assert span[1] in {units.end_of(int(e)) for e in units.spans[:, 1]}, f"{text!r} does not end a unit"
    assert units.n_tokens(*span) <= max_tokens, f"{text!r} is longer than one window is sure to hold"
    return span


FILLER = "the river 東京大学 cafe\u0301 a\u200bb 👍🏽 שלום\u00a0עולם , كِتَابٌ x\u202fy 1066 «normandy» 👨\u200d👩\u200d👧 नहीं "


@pytest.mark.parametrize("tag_level", ["word", "subword"])
def test_a_context_of_twenty_thousand_tokens_with_the_answer_in_a_late_window(tokenizer, tag_level):
    answer = "北京 zebra cafe\u0301"
    tail = " the end of ❤\ufe0f the story ."
    filler = FILLER * (20_000 // len(tokenizer(FILLER, add_special_tokens=False)["input_ids"]) + 2)
    context = filler + answer + tail
    n_tokens = len(tokenizer(context, add_special_tokens=False, verbose=False)["input_ids"])
    assert n_tokens >= 20_000
    config = level_config(tag_level, max_seq_length=64, doc_stride=24)
    start = context.index(answer)  # the answer's neighbourhood is enough to check it
    span = unit_answer(tokenizer, context[start - 40 :], answer, tag_level, max_tokens=24)
    span = (span[0] + start - 40, span[1] + start - 40)
    outputs = assert_round_trip(tokenizer, [Example("long", "which café?", context, ((span,),))], config)
    n_windows = len(outputs.example_index)
    assert n_windows > n_tokens // 40  # (64 - 12 - 4) - 24 new tokens a window at most
    holding = np.flatnonzero((outputs.offsets[..., 0] <= span[0]).any(1) & (outputs.offsets[..., 1] >= span[1]).any(1))
    assert holding.min() > 0.9 * n_windows


@pytest.mark.parametrize("tag_level", ["word", "subword"])
def test_a_question_longer_than_the_window_is_cut_to_max_query_length(tokenizer, tag_level):
    question = " ".join(["who 👨\u200d👩\u200d👧 中文本 كِتَابٌ cafe\u0301 ❤\ufe0f 🇫🇷 ruled?"] * 20)
    context = "In 911 , Rollo ruled Normandy 北京 . " * 6 + "The end ."
    special = tokenizer.num_special_tokens_to_add(pair=True)
    # The widest stride allowed: any question token past max_query_length would leave no room.
    config = level_config(tag_level, max_seq_length=48, max_query_length=12, doc_stride=48 - 12 - special - 1)
    assert len(tokenizer(question, add_special_tokens=False)["input_ids"]) > config.max_seq_length
    span = unit_answer(tokenizer, context, "Normandy 北京", tag_level, occurrence=2)
    outputs = assert_round_trip(tokenizer, [Example("q", question, context, ((span,),))], config)
    features = build_features([Example("q", question, context, ((span,),))], tokenizer, config)
    for para in features["paragraph_mask"]:
        question_tokens = int(np.argmax(para)) - (special - 1)  # between [CLS] and the separator(s)
        # Cut at a character: byte-level BPE may drop the partly fitting character's tokens too.
        assert config.max_query_length - 4 <= question_tokens <= config.max_query_length
    assert len(outputs.example_index) > 1


ENDS = [
    ("cafe\u0301 and the river 中文", "cafe\u0301", "中文"),
    ("👍🏽 was seen in שלום , then كِتَابٌ", "👍🏽", "كِتَابٌ"),
    ("שלום עולם . Rollo ruled ❤\ufe0f", "שלום", "❤\ufe0f"),
    ("北京 is far from नहीं", "北京", "नहीं"),
    ("1066 Normandy 👨\u200d👩\u200d👧", "1066", "👨\u200d👩\u200d👧"),
]


@pytest.mark.parametrize("tag_level", ["word", "subword"])
def test_answers_at_the_first_and_the_last_character(tokenizer, tag_level):
    config = level_config(tag_level)
    examples, both = [], []
    for k, (body, first, last) in enumerate(ENDS):
        context = body + " filler words here" * 12 + " then " + last  # several windows
        head, tail = (0, len(first)), (len(context) - len(last), len(context))
        assert unit_answer(tokenizer, context, first, tag_level, occurrence=0) == head
        assert unit_answer(tokenizer, context, last, tag_level) == tail
        examples += [Example(f"first-{k}", "what?", context, ((head,),)), Example(f"last-{k}", "what?", context, ((tail,),))]
        both.append(Example(f"both-{k}", "what?", context, ((head, tail),)))
    assert_round_trip(tokenizer, examples, config)
    assert_round_trip(tokenizer, both, config, multi_span=True)


@pytest.mark.parametrize("tag_level", ["word", "subword"])
def test_answers_straddling_a_window_boundary_are_found_in_the_next_window(tokenizer, tag_level):
    context = FILLER * 3
    config = level_config(tag_level)
    windows = build_features([Example("s", "what?", context)], tokenizer, config, with_targets=False)
    offsets = [np.asarray(o)[np.asarray(p, bool)] for o, p in zip(windows["offset_mapping"], windows["paragraph_mask"])]
    first_end, second_start = offsets[0][-1, 1], offsets[1][0, 0]
    units = Units(tokenizer, context, tag_level)
    spans = [(s, e) for s, e in units.answers(config.doc_stride) if second_start <= s < first_end < e]
    assert spans
    examples = [Example(f"straddle-{k}", "what?", context, ((span,),)) for k, span in enumerate(spans)]
    outputs = assert_round_trip(tokenizer, examples, config)
    features = build_features(examples, tokenizer, config)
    # Window 0 lacks each answer's end (span target [CLS]); window 1 holds it whole.
    for k in range(len(examples)):
        rows = np.flatnonzero(outputs.example_index == k)
        assert features[int(rows[0])]["start_positions"] == 0 and features[int(rows[1])]["start_positions"] > 0


# Golds every tokenizer family can name at either tag level: at the first and the last character, after several
# spaces, with punctuation, CJK, combining marks, emoji, compatibility characters, added and special tokens' texts.
FAMILY_GOLDS = [
    ("Rollo ruled Normandy in 911.", ["Rollo", "911.", "in 911."]),
    ("The river  Seine   flows north.", ["Seine", "flows", "north"]),
    ("He met the U.S. envoy with 1,000 ships!", ["U.S.", "1,000", "ships!"]),
    ("the capital 首都 is a cafe\u0301 , naïve", ["首都", "cafe\u0301", "naïve"]),
    ("I like 👍🏽 and 👨\u200d👩\u200d👧 ok", ["👍🏽", "👨\u200d👩\u200d👧"]),
    ("   Rollo  ruled normandy, (911). It is <s> here  ", ["Rollo", "normandy", "ruled normandy", "911", "<s>", "here"]),
    ("line one \n\n ﬁnal Ⅻ ＡＢＣ straße", ["ﬁnal", "ＡＢＣ", "straße"]),
]
LATER = "The Normans were famed for their martial spirit and their castles . " * 4  # the golds in later windows


def family_examples(several: bool) -> list[Example]:
    """:data:`FAMILY_GOLDS` each alone (``several``: each context's golds as the parts of one answer), in the first
    window and in later ones."""
    examples = []
    for before in ("", LATER):
        for k, (body, texts) in enumerate(FAMILY_GOLDS):
            context = before + body
            spans = [(context.index(text, len(before)), context.index(text, len(before)) + len(text)) for text in texts]
            parts = [span for n, span in enumerate(spans) if all(span[0] > end for _, end in spans[:n])]  # apart
            alternatives = [(tuple(parts),)] if several else [((span,),) for span in spans]
            examples += [Example(f"{len(before)}-{k}-{j}", "who ruled?", context, answer)
                         for j, answer in enumerate(alternatives)]
    return examples


@pytest.mark.parametrize("tag_level", ["word", "subword"])
@pytest.mark.parametrize("family", family_params(TOKENIZER_FAMILIES))
def test_golds_round_trip_on_every_tokenizer_family(family, tag_level, request):
    """Every decoding reads each gold back from its targets exactly, whatever the tokenizer's offsets hold (the space
    before a word, after an added token, a special token's text). An added token that keeps the spaces after it
    ("Rollo  ") ended no word to the joint decoding, which answered "Rollo  ruled" for "Rollo"."""
    tokenizer = request.getfixturevalue(family)
    assert_round_trip(tokenizer, family_examples(several=False), level_config(tag_level))
    assert_round_trip(tokenizer, family_examples(several=True), level_config(tag_level), multi_span=True)


# ---------------------------------------------------------------- regressions


def test_token_ends_take_in_the_marks_an_uncased_normalizer_drops(default_tokenizer, tiny_bpe_tokenizer):
    """Uncased WordPiece strips combining marks, ZWJ and variation selectors, so its token for
    ``cafe\\u0301`` ended before the accent and decoding said "cafe" (and "नही" for "नहीं")."""
    context = "cafe\u0301 كِتَابٌ नहीं ❤\ufe0f ab\u200d x"
    words = ["cafe\u0301", "كِتَابٌ", "नहीं", "❤\ufe0f", "ab\u200d", "x"]
    for tokenizer in (default_tokenizer, tiny_bpe_tokenizer):
        for level in ("word", "subword"):
            rows = build_features([Example("m", "q", context)], tokenizer, level_config(level), with_targets=False)
            spans = {tuple(s) for row in rows for s, p in zip(row["word_offsets"], row["paragraph_mask"]) if p}
            if level == "word" and tokenizer is default_tokenizer:  # BPE words split letters from marks
                assert {context[s:e] for s, e in spans} == set(words)
            assert {context.index(w) + len(w) for w in words} <= {e for _, e in spans}


def test_tokens_of_one_character_share_its_tag(tiny_bpe_tokenizer):
    """Byte-level BPE gives "語" three tokens with the same offsets. Only the last was B; windows
    merge the three into one and kept an I, so the answer "語" decoded with the word before it."""
    context = "字文 大中 語한 日本"
    start = context.index("語")
    example = Example("b", "q", context, (((start, start + 2),),))
    for level in ("word", "subword"):
        row = build_features([example], tiny_bpe_tokenizer, level_config(level))[0]
        offsets, tagged = np.asarray(row["offset_mapping"]), np.asarray(row["tag_mask"], bool)
        tags = np.asarray(row["bio_targets"]).argmax(-1)
        of_char = tagged & (offsets[:, 0] == start) & (offsets[:, 1] == start + 1)
        assert of_char.sum() == (1 if level == "word" else 3)  # word level: one tag a word
        assert (tags[of_char] == 0).all()  # all B


@pytest.mark.parametrize("level", ["word", "subword"])
def test_a_text_inside_a_user_perceived_character_is_no_other_mention(tiny_bpe_tokenizer, level):
    """Training tags the other mentions of an answer's text too (``tag_mentions="every"``): "👍" inside "👍🏽" and "👨"
    inside a family joined by U+200D are parts of one character, not mentions, and their tokens were tagged."""
    context = "👍 or 👍🏽 and 👨\u200d👩 met 👨"
    examples = [Example("thumb", "q", context, (((0, 1),),)), Example("man", "q", context, (((len(context) - 1, len(context)),),))]
    features = build_features(examples, tiny_bpe_tokenizer, level_config(level, tag_mentions="every"))
    tagged = [set(), set()]
    for row in features:
        offsets, mask = np.asarray(row["offset_mapping"]), np.asarray(row["tag_mask"], bool)
        for a, b in offsets[mask & (np.asarray(row["bio_targets"]).argmax(-1) != TAG_O)].tolist():
            tagged[row["example_index"]].update(range(a, b))
    assert tagged == [{0}, {len(context) - 1}]


def test_truncated_questions_never_keep_more_than_max_query_length_tokens(tiny_bpe_tokenizer):
    """Cutting after the last kept token kept the rest of its character: byte-level BPE then had up to
    two tokens too many, and a window with the widest stride had no room (the tokenizer panicked)."""
    from bio_mrc.features.windows import truncate_questions

    question = "who 👨\u200d👩\u200d👧 中文本 كِتَابٌ ruled? " * 5
    for limit in range(1, 40):
        (cut,) = truncate_questions([question], tiny_bpe_tokenizer, limit)
        assert question.startswith(cut)
        assert len(tiny_bpe_tokenizer(cut, add_special_tokens=False)["input_ids"]) <= limit


def test_a_stride_without_room_for_a_roberta_style_pair_is_refused(tiny_bpe_tokenizer):
    """FeatureConfig counts BERT's 3 special tokens; RoBERTa's pairs have 4, and the tokenizer panicked."""
    config = FeatureConfig(max_seq_length=48, doc_stride=32, max_query_length=12)
    with pytest.raises(ValueError, match="doc_stride"):
        build_features([Example("r", "who?", "Rollo ruled Normandy .")], tiny_bpe_tokenizer, config)


def test_multi_span_parts_share_no_character_where_a_normalised_character_is_several_tokens(metaspace_tokenizer):
    """An NFKC tokenizer (SentencePiece's kind) reads "ﬃ" as "f", "f" and a piece "ic" holding the next letter, each
    with offsets into the one character: a tagger's "B I I" on "Oﬃ" and "B I" on "ﬃce" named distinct tokens, and the
    BIO and joint multi-span answers were both spans, overlapping on "ﬃ" (characters 5-6)."""
    from bio_mrc.inference.answers import decode_answers
    from bio_mrc.tags import TAG_B, TAG_I, TAG_O

    examples = [Example("q", "what is it?", "the Oﬃce river", None)]
    features = build_features(examples, metaspace_tokenizer, FeatureConfig(48, 16, 8, tag_level="subword"),
                              with_targets=False, desc="ligature")
    offsets = [tuple(pair) for pair in features["offset_mapping"][0]]
    office = [k for k, (start, end) in enumerate(offsets) if 4 <= start and end <= 8]
    assert [offsets[k] for k in office] == [(4, 5), (5, 6), (5, 6), (5, 7), (7, 8)]  # "O", "f", "f", "ic", "e"
    width = len(offsets)
    bio = np.zeros((1, width, 3), np.float32)
    bio[0, :, TAG_O] = 20.0
    for k, tag in zip(office, [TAG_B, TAG_I, TAG_I, TAG_B, TAG_I]):
        bio[0, k] = -20.0
        bio[0, k, tag] = 20.0
    zeros, tagged = np.zeros((1, width), np.float32), np.array([features["tag_mask"][0]], dtype=bool)
    outputs = WindowOutputs(np.zeros(1, np.int64), np.array([offsets]), np.array([features["paragraph_mask"][0]], dtype=bool),
                            start_logits=zeros, end_logits=zeros, bio_logits=bio, tag_mask=tagged,
                            word_offsets=np.array([features["word_offsets"][0]], dtype=np.int64))
    answers = {decoding: [(s.text, s.start, s.end) for s in decode_answers(outputs, examples, decoding, DECODE, multi_span=True)[0].spans]
               for decoding in ("bio", "joint")}
    assert answers["bio"] == [("Oﬃ", 4, 6)]  # the likelier of the two; "ﬃce" shares its "ﬃ"
    assert answers["joint"] == [("Oﬃce", 4, 8)]  # one tagged text left: the n-best rule answers


def test_answers_keep_the_marks_an_nfkc_normalizer_composes_away(metaspace_tokenizer):
    """An NFKC normalizer (SentencePiece's) composes "e\\u0301" into "é" with the offsets of the "e" alone, and
    decomposed Hangul into syllables whose offsets end before the last jamo: every decoding answered "cafe" for
    "cafe\\u0301" (characters 0-4 of 0-5) and cut "한" short of its final consonant."""
    context = "cafe\u0301 \u1112\u1161\u11ab river"
    for level in ("word", "subword"):
        for start, end in ((0, 5), (6, 9)):
            example = Example("n", "what is it?", context, (((start, end),),))
            assert_round_trip(metaspace_tokenizer, [example], level_config(level))


def test_no_token_starts_or_ends_inside_a_user_perceived_character(default_tokenizer, tiny_bpe_tokenizer):
    """The uncased WordPiece reads decomposed Hangul one jamo a token, byte-level BPE an accent apart from its letter:
    every decoding could answer "하" of "한" (characters 0-2 of 0-3) or "e" without its accent. Each token holds its
    user-perceived characters whole, as BPE's several tokens of one character all hold that character."""
    context = "\u1112\u1161\u11ab e\u0301x river \U0001F468\u200d\U0001F469 end"
    inside = {1, 2, 5, 15, 16}  # within 한 (0-3), é (4-6) and the ZWJ pair (14-17)
    for tokenizer in (default_tokenizer, tiny_bpe_tokenizer):
        for level in ("word", "subword"):
            (row,) = build_features([Example("g", "q", context)], tokenizer, level_config(level), with_targets=False)
            for key in ("offset_mapping", "word_offsets"):
                ends = {int(x) for pair, p in zip(row[key], row["paragraph_mask"]) if p for x in pair}
                assert not ends & inside, (key, level, sorted(ends))


@pytest.mark.parametrize("tag_level", ["word", "subword"])
def test_an_empty_token_inside_a_user_perceived_character_stands_at_its_start(tiny_bpe_tokenizer, tag_level):
    """A skin tone after a space is one user-perceived character with it: " 🏻" of "a 🏻 b" (1-3). Byte-level BPE with
    trimmed offsets gives the space a token of no characters at 2, inside it, and the tone's four byte tokens 2-3 (1-3
    once whole): an answer from the empty token to the tone's was "🏻" (2-3), half of the character. The empty token
    stands at the character's start, so every answer holds it whole."""
    context = "a \U0001F3FB b"
    (row,) = build_features([Example("g", "q", context)], tiny_bpe_tokenizer, level_config(tag_level), with_targets=False)
    in_context = np.asarray(row["paragraph_mask"], dtype=bool)
    assert np.asarray(row["offset_mapping"])[in_context].tolist() == [[0, 1], [1, 1], *[[1, 3]] * 4, [4, 4], [4, 5]]
    first = int(np.flatnonzero(in_context)[0])
    start, end = np.full((1, len(in_context)), -PEAK), np.full((1, len(in_context)), -PEAK)
    start[0, first + 1] = end[0, first + 5] = PEAK  # the empty token to the tone's last byte
    tagged = [k for k in range(first + 1, first + 6) if row["tag_mask"][k]]  # the character's tokens that carry a tag
    bio = np.log(np.full((1, len(in_context), 3), [0.05, 0.05, 0.9]))
    bio[0, tagged] = np.log([[0.9, 0.05, 0.05], *[[0.05, 0.9, 0.05]] * (len(tagged) - 1)])
    outputs = WindowOutputs(np.zeros(1, dtype=np.int64), np.asarray(row["offset_mapping"])[None], in_context[None],
                            start_logits=start, end_logits=end, bio_logits=bio,
                            word_offsets=np.asarray(row["word_offsets"])[None], tag_mask=np.asarray(row["tag_mask"], bool)[None])
    for decoding in registry.decoding_names():
        best = decode(outputs, [Example("g", "q", context)], decoding, DECODE)[0].spans[0]
        assert (best.start, best.end, best.text) == (1, 3, " \U0001F3FB"), decoding


@pytest.mark.parametrize("tag_level", ["word", "subword"])
def test_the_text_of_a_special_token_is_read_as_written(default_tokenizer, tiny_bpe_tokenizer, tag_level):
    """A document about tokenizers holds "[SEP]" or "</s>": the window read it as the separator itself, so the
    model saw a question and context cut in other places than the window's own (and "[PAD]" as padding)."""
    from bio_mrc.features.windows import tokenize_windows

    for tokenizer, words in ((default_tokenizer, "[CLS] [SEP] [PAD] [MASK]"), (tiny_bpe_tokenizer, "<s> </s> <pad>")):
        question, context = f"What do {words} mean?", f"The tokens {words} frame a window."
        config = level_config(tag_level, max_seq_length=96, max_query_length=32)  # one window holds both whole
        features = tokenize_windows([Example("s", question, context)], tokenizer, config)
        (ids,) = features["input_ids"]
        specials = [i for i in ids if i in set(tokenizer.all_special_ids)]
        assert len(specials) == tokenizer.num_special_tokens_to_add(pair=True)  # the window's frame, no more
        offsets, in_context = np.asarray(features["offset_mapping"][0]), np.asarray(features["paragraph_mask"][0], bool)
        start = context.index(words)
        read = {c for s, e in offsets[in_context] for c in range(s, e)}
        assert set(range(start, start + len(words))) - read <= {i for i, c in enumerate(context) if c == " "}
