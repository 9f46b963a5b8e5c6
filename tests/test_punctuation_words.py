"""Punctuation pieces as words of their own in sentencepiece's words, which split at spaces only ("Paris." is one):
hand-computed word spans, the training targets and the decoded answers; WordPiece's and byte-level BPE's words as
they were; a model config without ``word_units`` keeps the tokenizer's words it was trained on."""

import json

import numpy as np
import pytest

from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.decoding.window_outputs import WindowOutputs
from bio_mrc.errors import ModelFormatError
from bio_mrc.features.windows import FeatureConfig, build_features
from bio_mrc.features.words import context_words
from bio_mrc.inference.answers import decode_answers
from bio_mrc.tags import TAG_B, TAG_I, TAG_O
from bio_mrc.types import Example

from .test_word_tags import sentencepiece_of

TAG_OF = {TAG_B: "B", TAG_I: "I", TAG_O: "O"}
PIECES = ["▁The", "▁They", "▁It", "▁Vikings", "▁were", "▁Nor", "se", ",", "▁not", "▁Franks", ".", "▁settled", "▁in", "▁Paris", "▁He",
          "▁said", "▁\"", "Rol", "lo", "\"", "▁was", "▁king", "▁duchy", "▁(", "Normandy", ")", "▁An", "▁Anglo", "-",
          "Norman", "'", "s", "▁cost", "▁3", "5", "▁Visit", "▁https", "://", "example", "com", "/", "page", "▁U", "S",
          "▁1", "000", "▁911", "▁Rollo", "▁ruled", "▁Rouen", "s."]
# (context, its words with punctuation apart, the tokenizer's words): hand-computed from PIECES.
CASES = [
    ("The Vikings were Norse, not Franks.", ["The", "Vikings", "were", "Norse", ",", "not", "Franks", "."],
     ["The", "Vikings", "were", "Norse,", "not", "Franks."]),
    ('He said "Rollo" was king.', ["He", "said", '"', "Rollo", '"', "was", "king", "."],
     ["He", "said", '"Rollo"', "was", "king."]),
    ("The duchy (Normandy) settled.", ["The", "duchy", "(", "Normandy", ")", "settled", "."],
     ["The", "duchy", "(Normandy)", "settled."]),
    ("An Anglo-Norman king. The Norse's", ["An", "Anglo", "-", "Norman", "king", ".", "The", "Norse", "'", "s"],
     ["An", "Anglo-Norman", "king.", "The", "Norse's"]),
    ("It cost 3.5, 1,000 in the U.S.", ["It", "cost", "3.5", ",", "1,000", "in", "the", "U.S."],
     ["It", "cost", "3.5,", "1,000", "in", "the", "U.S."]),
    ("Visit https://example.com/page.", ["Visit", "https", "://", "example", ".", "com", "/", "page", "."],
     ["Visit", "https://example.com/page."]),
    ("In 911, Rouens.", ["In", "911", ",", "Rouens."], ["In", "911,", "Rouens."]),  # "s." is one piece: never cut
]


@pytest.fixture(scope="module")
def pieces_tokenizer():
    return sentencepiece_of(PIECES)


def word_texts(tokenizer, context: str, **units) -> list[str]:
    return [context[a:b] for a, b in context_words(tokenizer, [context], **units)[0]]


@pytest.mark.parametrize("context, apart, whole", CASES, ids=[c[0][:16] for c in CASES])
def test_sentencepiece_words_keep_punctuation_apart(pieces_tokenizer, context, apart, whole):
    """Commas, full stops, quotes, brackets, hyphens, apostrophes and a URL's separators are words of their own; a
    decimal, a thousands group and an abbreviation of single letters stay whole, and so does a piece of letters and
    punctuation. ``units="tokenizer"`` keeps the tokenizer's words."""
    assert word_texts(pieces_tokenizer, context) == apart
    assert word_texts(pieces_tokenizer, context, units="tokenizer") == whole


def answer(context: str, text: str) -> tuple:
    start = context.index(text)
    return (((start, start + len(text)),),)


def gold_outputs(tokenizer, example: Example, config: FeatureConfig) -> WindowOutputs:
    """One window's outputs whose heads say the gold answer: the BIO head its targets, the span head its tokens."""
    (row,) = build_features([example], tokenizer, config)
    offsets = np.asarray(row["offset_mapping"])
    (start, end), = example.answers[0]
    starts, ends = np.full(len(offsets), -20.0), np.full(len(offsets), -20.0)
    starts[np.flatnonzero((offsets[:, 0] <= start) & (start < offsets[:, 1]))[0]] = 20.0  # a piece holds its space
    ends[np.flatnonzero((offsets[:, 0] < end) & (end <= offsets[:, 1]))[0]] = 20.0
    return WindowOutputs(
        np.array([0]), offsets[None], np.asarray(row["paragraph_mask"], bool)[None],
        bio_logits=np.log(0.9 * np.asarray(row["bio_targets"], float) + 0.1 / 3)[None],
        start_logits=starts[None], end_logits=ends[None], word_offsets=np.asarray(row["word_offsets"])[None],
        tag_mask=np.asarray(row["tag_mask"], bool)[None])


ANSWERED = [  # (answer, context, each tagged word with its tag), by hand
    ("Norse", "The Vikings were Norse, not Franks.",
     [("The", "O"), ("Vikings", "O"), ("were", "O"), ("Norse", "B"), (",", "O"), ("not", "O"), ("Franks", "O"), (".", "O")]),
    ("Rollo", 'He said "Rollo" was king.',
     [("He", "O"), ("said", "O"), ('"', "O"), ("Rollo", "B"), ('"', "O"), ("was", "O"), ("king", "O"), (".", "O")]),
    ("Normandy", "The duchy (Normandy) settled.",
     [("The", "O"), ("duchy", "O"), ("(", "O"), ("Normandy", "B"), (")", "O"), ("settled", "O"), (".", "O")]),
    ("Norman", "An Anglo-Norman king.", [("An", "O"), ("Anglo", "O"), ("-", "O"), ("Norman", "B"), ("king", "O"), (".", "O")]),
    ("3.5", "It cost 3.5, in the U.S.", [("It", "O"), ("cost", "O"), ("3.5", "B"), (",", "O"), ("in", "O"), ("the", "O"),
                                        ("U.S.", "O")]),
]


@pytest.mark.parametrize("text, context, tagged", ANSWERED, ids=[a[0] for a in ANSWERED])
def test_an_answer_beside_punctuation_is_tagged_and_decoded_without_it(pieces_tokenizer, text, context, tagged):
    """The answer's word ends where the answer does, so its tag covers it alone, the punctuation beside it is O, and
    the BIO and joint decodings answer exactly it, not "Norse," or '"Rollo"'."""
    example = Example("p", "Who?", context, answer(context, text))
    config = FeatureConfig(64, 16, 16, "one-hot", "one-hot", "word")
    (row,) = build_features([example], pieces_tokenizer, config)
    assert [(context[a:b], TAG_OF[int(np.argmax(t))]) for (a, b), t, m in
            zip(row["word_offsets"], row["bio_targets"], row["tag_mask"]) if m] == tagged
    outputs = gold_outputs(pieces_tokenizer, example, config)
    for decoding in ("bio", "joint"):
        (prediction,) = decode_answers(outputs, [example], decoding, DecodeConfig())
        assert prediction.answer == text, decoding


def test_paris_full_stop_targets_by_hand(pieces_tokenizer):
    context = "They settled in Paris."
    example = Example("p", "Where?", context, answer(context, "Paris"))
    (row,) = build_features([example], pieces_tokenizer, FeatureConfig(64, 16, 16, "one-hot", "one-hot", "word"))
    tokens = pieces_tokenizer.convert_ids_to_tokens(row["input_ids"])
    table = [(token, TAG_OF[int(np.argmax(t))] if m else None)
             for token, p, m, t in zip(tokens, row["paragraph_mask"], row["tag_mask"], row["bio_targets"]) if p]
    assert table == [("▁They", "O"), ("▁settled", "O"), ("▁in", "O"), ("▁Paris", "B"), (".", "O")]


PINNED = "Norse's ships (Paris), \"Rollo\" 3.5 U.S. e-mail https://a.b/c."
PINNED_WORDS = {  # WordPiece's and byte-level BPE's pre-tokenizers split punctuation off: their words as they were
    "wordpiece": ["Norse", "'", "s", "ships", "(", "Paris", ")", ",", '"', "Rollo", '"', "3", ".", "5", "U", ".", "S", ".",
                  "e", "-", "mail", "https", ":", "/", "/", "a", ".", "b", "/", "c", "."],
    "bpe": ["Norse", "'s", "ships", "(", "Paris", "),", '"', "Rollo", '"', "3", ".", "5", "U", ".", "S", ".", "e", "-",
            "mail", "https", "://", "a", ".", "b", "/", "c", "."],
}


@pytest.mark.parametrize("which", ["wordpiece", "bpe", "default"])
def test_wordpiece_and_byte_level_bpe_words_are_unchanged(which, tiny_tokenizer, tiny_bpe_tokenizer):
    if which == "default":
        from transformers import AutoTokenizer

        from bio_mrc.encoders import resolve_encoder
        from bio_mrc.errors import BioMrcError

        try:
            tokenizer = AutoTokenizer.from_pretrained(resolve_encoder(None))
        except (BioMrcError, OSError, ValueError):
            pytest.skip("the default encoder is not installed")
        expected = PINNED_WORDS["wordpiece"]
    else:
        tokenizer = {"wordpiece": tiny_tokenizer, "bpe": tiny_bpe_tokenizer}[which]
        expected = PINNED_WORDS[which]
    contexts = [PINNED, "The Vikings were Norse, not Franks.", "首都。Emoji here"]
    apart, whole = context_words(tokenizer, contexts), context_words(tokenizer, contexts, units="tokenizer")
    assert [PINNED[a:b] for a, b in apart[0]] == expected
    assert all(np.array_equal(a, w) for a, w in zip(apart, whole))


def saved_model(encoder_dir, tokenizer, folder, **options):
    """An untrained model of the tiny encoder saved with ``tokenizer`` (a sentencepiece one: its words hold punctuation)."""
    from bio_mrc.model import BioMrcForQuestionAnswering

    BioMrcForQuestionAnswering.from_encoder(str(encoder_dir), heads="span+bio", max_seq_length=64, doc_stride=16,
                                            max_query_length=16, **options).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def paris_words(model) -> list[str]:
    context = "They settled in Paris."
    (row,) = build_features([Example("p", "Where?", context, None)], model.tokenizer, model.features, with_targets=False)
    return sorted({context[a:b] for (a, b), m in zip(row["word_offsets"], row["tag_mask"]) if m})


def test_a_saved_model_tags_the_words_its_config_names(tiny_encoder_dir, tmp_path):
    """A fresh model records ``word_units``; a config.json without it (saved before the setting) is read as the
    tokenizer's words, which the model was trained on; a value of another kind is refused in one line."""
    from bio_mrc.inference.loading import TrainedModel

    tokenizer = sentencepiece_of(PIECES)
    folder = saved_model(tiny_encoder_dir, tokenizer, tmp_path / "new")
    assert json.loads((folder / "config.json").read_text())["word_units"] == "punctuation"
    model = TrainedModel.load(folder)
    assert model.features.word_units == "punctuation"
    assert paris_words(model) == [".", "Paris", "They", "in", "settled"]

    config = json.loads((folder / "config.json").read_text())
    del config["word_units"]
    (folder / "config.json").write_text(json.dumps(config))
    model = TrainedModel.load(folder)
    assert model.model.config.word_units == model.features.word_units == "tokenizer"
    assert paris_words(model) == ["Paris.", "They", "in", "settled"]

    (folder / "config.json").write_text(json.dumps({**config, "word_units": "spaces"}))
    with pytest.raises(ModelFormatError) as refused:
        TrainedModel.load(folder)
    assert "word_units must be one of ('punctuation', 'tokenizer'), got \"spaces\"" in str(refused.value)
    assert "\n" not in str(refused.value)
