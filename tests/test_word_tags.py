"""Word-level BIO tags (first piece of each word) for WordPiece and byte-level BPE tokenizers,
and the round trip: gold targets fed back as probabilities decode to exactly the gold text."""

import numpy as np
import pytest

from bio_mrc.decoding.postprocess import DecodeConfig, decode_bio_predictions
from bio_mrc.decoding.window_outputs import WindowOutputs
from bio_mrc.features.windows import FeatureConfig, build_features
from bio_mrc.tags import TAG_B, TAG_I, TAG_O
from bio_mrc.types import Example

from .conftest import TOKENIZER_FAMILIES

TAG_OF = {TAG_B: "B", TAG_I: "I", TAG_O: "O"}


def window_table(tokenizer, example: Example, config: FeatureConfig):
    """(token text, tag or None for an untagged token) for the paragraph tokens of the first window."""
    row = build_features([example], tokenizer, config)[0]
    tokens = tokenizer.convert_ids_to_tokens(row["input_ids"])
    table = []
    for token, para, tagged, target in zip(tokens, row["paragraph_mask"], row["tag_mask"], row["bio_targets"]):
        if para:
            table.append((token, TAG_OF[int(np.argmax(target))] if tagged else None))
            if not tagged:
                assert target == [0.0, 0.0, 0.0]  # no tag, no loss
    return table


def answer(context: str, text: str) -> tuple:
    start = context.index(text)
    return (((start, start + len(text)),),)


def test_wordpiece_word_tags_by_hand(tiny_tokenizer):
    context = "The Normans qzz from Normandy, in 911."  # "qzz" and "911" are not in the vocabulary
    example = Example("w", "Who ruled?", context, answer(context, "qzz from Normandy"))
    table = window_table(tiny_tokenizer, example, FeatureConfig(64, 16, 16, "one-hot", "one-hot", "word"))
    assert table == [
        ("the", "O"), ("normans", "O"), ("q", "B"), ("##z", None), ("##z", None), ("from", "I"),
        ("normandy", "I"), (",", "O"), ("in", "O"), ("9", "O"), ("##1", None), ("##1", None), (".", "O"),
    ]
    subword = window_table(tiny_tokenizer, example, FeatureConfig(64, 16, 16, "one-hot", "one-hot", "subword"))
    assert [tag for _, tag in subword] == ["O", "O", "B", "I", "I", "I", "I", "O", "O", "O", "O", "O", "O"]


def test_byte_level_bpe_word_tags_by_hand(tiny_bpe_tokenizer):
    context = "The Normans ruled Normandy, in 911."
    example = Example("b", "Who ruled?", context, answer(context, "ruled Normandy"))
    table = window_table(tiny_bpe_tokenizer, example, FeatureConfig(64, 16, 16, "one-hot", "one-hot", "word"))
    # " ruled" is 'Ġ' (an empty piece once offsets are trimmed) + 'r' 'ul' 'ed': its first real piece is tagged.
    assert table == [
        ("The", "O"), ("ĠNormans", "O"), ("Ġ", None), ("r", "B"), ("ul", None), ("ed", None), ("ĠNormandy", "I"),
        (",", "O"), ("Ġin", "O"), ("Ġ", None), ("9", "O"), ("1", None), ("1", None), (".", "O"),
    ]


def test_an_answer_starting_inside_a_word_tags_the_whole_word(tiny_tokenizer):
    context = "They came in the 1990s to stay."
    example = Example("m", "When?", context, answer(context, "1990"))
    tags = [tag for _, tag in window_table(tiny_tokenizer, example, FeatureConfig(64, 16, 16, "one-hot", "one-hot", "word")) if tag]
    assert tags.count("B") == 1 and "I" not in tags


def gold_outputs(tokenizer, examples, config: FeatureConfig) -> WindowOutputs:
    """Window outputs whose BIO head says exactly the gold targets (smoothed), like ``run_windows``."""
    features = build_features(examples, tokenizer, config)
    n, width = len(features), max(len(ids) for ids in features["input_ids"])
    arrays = {k: np.full((n, width, 2), -1) for k in ("offsets", "words")}
    masks = {k: np.zeros((n, width), bool) for k in ("mask", "tagged")}
    logits = np.zeros((n, width, 3))
    for i, row in enumerate(features):
        length = len(row["input_ids"])
        arrays["offsets"][i, :length], arrays["words"][i, :length] = row["offset_mapping"], row["word_offsets"]
        masks["mask"][i, :length], masks["tagged"][i, :length] = row["paragraph_mask"], row["tag_mask"]
        targets = np.asarray(row["bio_targets"], dtype=float)
        logits[i, :length] = np.log(0.9 * targets + 0.1 / 3)
    return WindowOutputs(
        np.asarray(features["example_index"]), arrays["offsets"], masks["mask"], bio_logits=logits,
        word_offsets=arrays["words"], tag_mask=masks["tagged"],
    )


@pytest.mark.parametrize("tag_level", ["word", "subword"])
@pytest.mark.parametrize("family", TOKENIZER_FAMILIES)
def test_gold_targets_round_trip_through_merged_windows(sample_v1, family, tag_level, request):
    tokenizer = request.getfixturevalue(family)
    config = FeatureConfig(40, 12, 10, "one-hot", "one-hot", tag_level)  # several windows per context
    examples = [ex for ex in sample_v1.examples if ex.answers]
    outputs = gold_outputs(tokenizer, examples, config)
    assert np.bincount(outputs.example_index).max() > 1
    predictions = decode_bio_predictions(outputs, examples, DecodeConfig(max_answer_length=64))
    assert len(predictions) == len(examples)
    for prediction, example in zip(predictions, examples):
        (start, end), = example.answers[0]
        assert (prediction.spans[0].start, prediction.spans[0].end) == (start, end)
        assert prediction.answer == example.context[start:end]


@pytest.mark.parametrize("family", TOKENIZER_FAMILIES)
def test_several_gold_spans_round_trip(family, request):
    tokenizer = request.getfixturevalue(family)
    context = "The Normans came from Denmark, Iceland and Norway, and they ruled Normandy for a long time in the north."
    spans = tuple((context.index(w), context.index(w) + len(w)) for w in ("Denmark", "Iceland", "Norway"))
    example = Example("s", "Where did the Normans come from?", context, (spans,))
    outputs = gold_outputs(tokenizer, [example], FeatureConfig(32, 8, 10, "one-hot", "one-hot", "word"))
    assert len(outputs.example_index) > 1
    (prediction,) = decode_bio_predictions(outputs, [example], DecodeConfig(multi_span=True))
    assert sorted((s.start, s.end) for s in prediction.spans) == list(spans)
    assert [s.text for s in prediction.spans if s.text not in context] == []


def test_a_sentencepiece_word_of_chinese_is_split_into_its_pieces():
    """Sentencepiece splits words at spaces only, so "东京是首都" is one word; a tagger on words then answers the whole
    clause for "东京". Each piece of a word written in such a script is a word of its own, as BERT's tokenizer makes
    each ideograph one; a spaced word stays whole."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from bio_mrc.features.words import context_words

    pieces = ["<unk>", "▁", "东京", "是", "首都", "▁Rollo", "ru", "led"]
    backend = Tokenizer(models.Unigram([(piece, -1.0) for piece in pieces], unk_id=0))
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")
    context = "东京是首都 Rollo ruled"
    assert tokenizer.tokenize(context) == ["▁", "东京", "是", "首都", "▁Rollo", "▁", "ru", "led"]
    words = context_words(tokenizer, [context])[0]
    assert [context[a:b] for a, b in words] == ["东京", "是", "首都", "Rollo", "ruled"]


def test_a_latin_run_in_a_sentencepiece_word_of_chinese_stays_whole():
    """A Latin word written straight after Chinese ("首都。Emoji", no space) is in the same sentencepiece word; the
    Chinese pieces are words of their own, the Latin pieces one word, never a letter alone: the full stop before them a
    word apart, or, on the tokenizer's words, with them."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from bio_mrc.features.words import context_words

    pieces = ["<unk>", "▁", "首都", "。", "E", "m", "o", "j", "i", "▁here"]
    backend = Tokenizer(models.Unigram([(piece, -1.0) for piece in pieces], unk_id=0))
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")
    context = "首都。Emoji here"
    assert tokenizer.tokenize(context) == ["▁", "首都", "。", "E", "m", "o", "j", "i", "▁here"]
    words = context_words(tokenizer, [context])[0]
    assert [context[a:b] for a, b in words] == ["首都", "。", "Emoji", "here"]
    words = context_words(tokenizer, [context], units="tokenizer")[0]
    assert [context[a:b] for a, b in words] == ["首都", "。Emoji", "here"]


def wordpiece_of(vocabulary: list[str]):
    """A cased WordPiece fast tokenizer with BERT's normalizer and pre-tokenizer (each CJK ideograph a word of its
    own, a Thai clause one word), as multilingual BERT reads text."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    backend = Tokenizer(models.WordPiece({w: i for i, w in enumerate(specials + vocabulary)}, unk_token="[UNK]"))
    backend.normalizer = normalizers.BertNormalizer(lowercase=False)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]")


def sentencepiece_of(pieces: list[str]):
    """A Unigram fast tokenizer with a Metaspace pre-tokenizer (words split at spaces only), as XLM-R reads text."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "<unk>", "[CLS]", "[SEP]"]
    backend = Tokenizer(models.Unigram([(piece, -1.0) for piece in specials + pieces], unk_id=1))
    backend.pre_tokenizer = pre_tokenizers.Metaspace()
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", pad_token="<pad>", cls_token="[CLS]",
                                   sep_token="[SEP]")


CHINESE, THAI = "北京是中国的首都。", "กรุงเทพเป็นเมืองหลวงของประเทศไทย"
ENGLISH = "The Normans qzz ruled Normandy."
UNSPACED_CASES = [  # (context, answer, WordPiece's table, sentencepiece's table) at word level
    (CHINESE, "中国",
     [("北", "O"), ("京", "O"), ("是", "O"), ("中", "B"), ("国", "I"), ("的", "O"), ("首", "O"), ("都", "O"), ("。", "O")],
     [("▁北京", "O"), ("是", "O"), ("中国", "B"), ("的", "O"), ("首都", "O"), ("。", "O")]),
    (THAI, "เมืองหลวง",
     [("กรุงเทพ", "O"), ("##เป็น", "O"), ("##เมือง", "B"), ("##หลวง", "I"), ("##ของ", "O"), ("##ประเทศ", "O"), ("##ไทย", "O")],
     [("▁กรุงเทพ", "O"), ("เป็น", "O"), ("เมือง", "B"), ("หลวง", "I"), ("ของ", "O"), ("ประเทศ", "O"), ("ไทย", "O")]),
    (THAI, "ประเทศไทย",
     [("กรุงเทพ", "O"), ("##เป็น", "O"), ("##เมือง", "O"), ("##หลวง", "O"), ("##ของ", "O"), ("##ประเทศ", "B"), ("##ไทย", "I")],
     [("▁กรุงเทพ", "O"), ("เป็น", "O"), ("เมือง", "O"), ("หลวง", "O"), ("ของ", "O"), ("ประเทศ", "B"), ("ไทย", "I")]),
    (ENGLISH, "qzz ruled",  # a spaced word of several pieces keeps its tag on its first piece; the full stop is a word
     [("The", "O"), ("Normans", "O"), ("q", "B"), ("##z", None), ("##z", None), ("ruled", "I"), ("Normandy", "O"), (".", "O")],
     [("▁The", "O"), ("▁Normans", "O"), ("▁q", "B"), ("z", None), ("z", None), ("▁ruled", "I"), ("▁Normandy", "O"), (".", "O")]),
]


@pytest.fixture(scope="module")
def unspaced_tokenizers():
    thai = ["เป็น", "เมือง", "หลวง", "ของ", "ประเทศ", "ไทย"]
    english = ["The", "Normans", "q", "ruled", "Normandy", "Who", "."]
    wordpiece = wordpiece_of([*CHINESE, "กรุงเทพ", *("##" + w for w in thai), *english, "##z"])
    sentencepiece = sentencepiece_of(["▁北京", "是", "中国", "的", "首都", "。", "▁กรุงเทพ", *thai,
                                      *("▁" + w for w in english[:-1]), "z", "."])
    return wordpiece, sentencepiece


@pytest.mark.parametrize("context, text, wordpiece_table, sentencepiece_table", UNSPACED_CASES,
                         ids=["chinese", "thai-inside", "thai-at-end", "english"])
def test_an_answer_inside_a_run_without_spaces_is_tagged_exactly(
    unspaced_tokenizers, context, text, wordpiece_table, sentencepiece_table,
):
    """BERT's pre-tokenizer makes a Thai clause one word and sentencepiece's a Chinese one too: each piece of a word
    written in a script without spaces is a word of its own, so the answer inside the run gets its own B and I, and the
    gold tags decode back to it exactly (one span, and several); a spaced word keeps one tag on its first piece."""
    example = Example("u", "Who?", context, answer(context, text))
    config = FeatureConfig(64, 16, 16, "one-hot", "one-hot", "word")
    for tokenizer, table in zip(unspaced_tokenizers, (wordpiece_table, sentencepiece_table)):
        assert window_table(tokenizer, example, config) == table
        outputs = gold_outputs(tokenizer, [example], config)
        for multi_span in (False, True):
            (prediction,) = decode_bio_predictions(outputs, [example], DecodeConfig(multi_span=multi_span))
            assert [s.text for s in prediction.spans][:1] == [text]
            assert [context[s.start:s.end] for s in prediction.spans][:1] == [text]


def test_every_character_of_the_scripts_written_without_spaces_splits_its_word():
    """Whole scripts, not their main blocks: 々 and 〇 are Han, hentaigana kana, Myanmar's and Khmer's extensions
    theirs; a Hangul, Latin or Arabic word, spaced, and the interpuncts of SQuAD's English stay whole."""
    from bio_mrc.features.words import _unspaced_pieces_apart

    unspaced = "東々〇𠀋ひカｶ𛀁ไລក᧠မꩠ"
    spaced = "a1éßल한ب·ʼ"
    offsets = np.array([[0, 1], [1, 2]])
    for character in unspaced:
        assert _unspaced_pieces_apart(character * 2, offsets, np.array([0, 0])).tolist() == [0, 1], hex(ord(character))
    for character in spaced:
        assert _unspaced_pieces_apart(character * 2, offsets, np.array([0, 0])).tolist() == [0, 0], hex(ord(character))


class _ScannedCharacters:
    """A compiled pattern that counts the characters its searches are given to look through."""

    def __init__(self, pattern) -> None:
        self.pattern, self.scanned = pattern, 0

    def search(self, text, pos=0, endpos=None):
        self.scanned += min(len(text), len(text) if endpos is None else endpos) - pos
        return self.pattern.search(text, pos, len(text) if endpos is None else endpos)

    def finditer(self, text, *rest):
        self.scanned += len(text)
        return self.pattern.finditer(text, *rest)


def test_pieces_of_one_long_grapheme_are_looked_through_once(monkeypatch):
    # Byte-level BPE makes a letter with 5,000 combining marks 2,500 pieces, each snapped to the whole grapheme; each
    # piece's span was searched for a character of a script without spaces, time of the pieces times the grapheme
    # (a context of 40,000 such characters took 146 s). The places of such characters are found once instead.
    from bio_mrc.features import words

    scanned = _ScannedCharacters(words._UNSPACED)
    monkeypatch.setattr(words, "_UNSPACED", scanned)
    context = "中 a" + "\u0301" * 5_000 + " 国"
    offsets = np.array([[0, 1], *[[2, 5_003]] * 2_500, [5_004, 5_005]])
    ids = np.array([0, *[1] * 2_500, 2])
    assert words._unspaced_pieces_apart(context, offsets, ids).tolist() == [0, *[1] * 2_500, 2]
    assert scanned.scanned <= 2 * len(context)


FLAG_FR, FLAG_DE = "\U0001f1eb\U0001f1f7", "\U0001f1e9\U0001f1ea"  # each flag two regional indicators


@pytest.mark.parametrize("context, bounds", [
    (FLAG_FR * 3, [0, 2, 4, 6]),
    (FLAG_FR + FLAG_DE + "\U0001f1eb", [0, 2, 4, 5]),  # a lone indicator after two flags is a character of its own
    ("a" + FLAG_FR * 2 + "\u0301x", [0, 1, 3, 6, 7]),  # the accent belongs to the last flag
    ("\u0600" + FLAG_FR * 2, [0, 3, 5]),  # a prepended mark joins the first flag
    ("\U0001f1eb" + FLAG_FR * 2, [0, 2, 4, 5]),  # pairs counted from the run's start
])
def test_flags_are_user_perceived_characters_as_unicode_pairs_them(context, bounds):
    from bio_mrc.answer_text import grapheme_bounds

    assert grapheme_bounds([context])[0].tolist() == bounds


def test_a_run_of_flags_is_paired_without_looking_back_over_it():
    # \X looked back over the whole run of regional indicators before each flag: a context of 100,000 characters of
    # flags took 25 s, one of 5,000,000 (the limit) hours. Each flag followed by another is matched as a pair now;
    # \X reads only the run's last.
    import regex

    from bio_mrc import answer_text

    context = "x " + FLAG_FR * 1_000 + " y " + FLAG_DE * 500 + "\U0001f1eb"
    matches = list(answer_text._GRAPHEME.finditer(context))
    in_runs = [m for m in matches if m.group().startswith(("\U0001f1eb", "\U0001f1e9"))]
    assert [m.lastgroup for m in in_runs].count(None) == 2  # one a run: the first's last flag, the second's lone indicator
    assert [m.end() for m in matches] == [m.end() for m in regex.finditer(r"\X", context)]


def test_overlapping_answer_parts_train_and_score_as_one_part():
    """Quoref's parts "Bob and" (0) and "and Carl" (4) of "Bob and Carl": no tagging holds both, so they are one part,
    their union, whichever order they are listed in: the BIO targets tag it once (B I I) and the gold holds it alone."""
    from bio_mrc.data.multispanqa import multispan_gold_texts
    from bio_mrc.data.one_answer import as_one_answer
    from bio_mrc.features.targets import bio_targets

    words = np.array([[0, 3], [4, 7], [8, 12]])
    tagged = np.ones(3, dtype=bool)
    example = as_one_answer(Example("q", "Who?", "Bob and Carl", (((4, 12),), ((0, 7),), ((0, 7),))))
    assert example.answers == (((0, 12),),)
    targets = bio_targets(words, tagged, example.answers, "marginal")
    assert targets[:, 0].tolist() == [TAG_B, TAG_I, TAG_I]
    assert multispan_gold_texts([example]) == {"q": ["Bob and Carl"]}


# Unicode whitespace a normalizer may leave in place: tab, newline, ideographic space, no-break space, line separator.
SPACED = "The river flows\tnorth to the\nsea and\u3000beyond\u00a0here\u2028now."


@pytest.mark.parametrize("family", TOKENIZER_FAMILIES)
def test_any_unicode_whitespace_ends_a_word(family, request):
    """Metaspace splits at " " alone, so without a normalizer that maps them to spaces, a tab or newline sits inside
    its words; every family's words end at each of them."""
    from bio_mrc.features.words import context_words

    tokenizer = request.getfixturevalue(family)
    words = context_words(tokenizer, [SPACED])[0]
    assert [SPACED[a:b] for a, b in words] == ["The", "river", "flows", "north", "to", "the", "sea", "and", "beyond", "here",
                                               "now", "."]


@pytest.mark.parametrize("family", ["metaspace_tokenizer", "metaspace_unnormalized_tokenizer", "deberta_v2_style_tokenizer"])
@pytest.mark.parametrize("gold", ["flows", "sea", "and", "here"])
def test_a_word_level_gold_stops_at_whitespace(family, gold, request):
    """A gold that ends at a tab, a newline or another Unicode space decodes to itself, not to the run after it."""
    tokenizer = request.getfixturevalue(family)
    example = Example("t", "Where does it flow?", SPACED, answer(SPACED, gold))
    outputs = gold_outputs(tokenizer, [example], FeatureConfig(64, 16, 16, "one-hot", "one-hot", "word"))
    (prediction,) = decode_bio_predictions(outputs, [example], DecodeConfig())
    assert prediction.answer == gold
