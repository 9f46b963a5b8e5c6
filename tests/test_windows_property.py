"""The windows of any question and context are those the tokenizer's own call cuts, and every answer of them is the
context's own characters: a property over drawn text, window sizes and strides, on every tokenizer family.

Contexts and questions are drawn from pieces that trouble tokenizers: runs of spaces, tabs and newlines, Unicode
spaces, zero-width and bidirectional characters, combining marks on letters and on nothing, composed and decomposed
accents, CJK, Thai and Devanagari, emoji with ZWJ, skin tones and flags, characters a normalizer changes in length,
controls, digits and punctuation, words longer than a window, and the text of the tokenizer's own special and added
tokens. The windows (ids, type ids, attention mask, offsets, which window belongs to which pair) must equal those of
``tokenizer(questions, contexts, truncation="only_second", max_length=..., stride=..., return_overflowing_tokens=True,
return_offsets_mapping=True, padding=False, split_special_tokens=True)``, for questions from none to nearly the whole
window and strides from 0 to one less than the room the question leaves. Random logits over windows built from the
same text then decode, at every decoding, to spans that are whole user-perceived characters of the context.

The fast tier draws a few examples a family; the slow tier many more, and the decodings.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from bio_mrc.data.text import carries_text
from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.features.pair_windows import pair_windows
from bio_mrc.features.windows import FeatureConfig, build_features
from bio_mrc.inference.answers import decode_answers
from bio_mrc.inference.forward import window_outputs
from bio_mrc.types import Example

from .conftest import TOKENIZER_FAMILIES
from .test_unicode_offsets import check_spans

PIECES = [
    " ", "  ", "   ", "\t", "\n", "\r\n", " \t\n ", "\u00a0", "\u2009", "\u3000", "\u202f", "\u2028", "\u2029", "\u0085",
    "\x0b", "\x0c", "\x1c", "\u180e", "\u200b", "\u200c", "\u200d", "\ufeff", "\u00ad", "\u202e", "\u2066", "\u200f",
    "\u0301", "\u0300\u0301", "\u0308", "é", "e\u0301", "cafe\u0301", "naïve", "ﬁ", "İ", "ß", "Ⅻ", "ＡＢＣ", "𝔘", "\ufffd",
    "東京", "首都。", "ภาษา", "नहीं", "👍🏽", "\U0001f3fb", " \U0001f3fb", "👨\u200d👩\u200d👧", "🇫🇷", "🇫🇷🇩🇪", "❤\ufe0f",
    ",", ".", "(", ")", "!", "'s", "—", "“", "”", "1066", "1,000", "U.S.", "\x01", "\x7f",
    "the", "a", "river", "Normandy", "ruled", "rollo", "Rollo", "911", "x" * 30, "y" * 150, "é" * 40, "ACGT" * 12,
    "[SEP]", "[CLS]", "[PAD]", "[MASK]", "</s>", "<s>", "<pad>", "<unk>", "<mask>", "▁", "Ġ", "##", "[SEP][SEP]", "</s></s>",
]
SEPARATORS = [" ", "", ""]

# Fixed seed and no example database: every run draws the same examples.
COMMON = dict(deadline=None, derandomize=True, database=None, print_blob=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
              phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink])
FAST, MANY = settings(max_examples=10, **COMMON), settings(max_examples=150, **COMMON)


def texts(tokenizer, max_pieces: int) -> st.SearchStrategy[str]:
    """Pieces of :data:`PIECES` and of the tokenizer's own special and added tokens, each followed by a space or not."""
    own = sorted({*tokenizer.all_special_tokens, *tokenizer.get_added_vocab()})
    piece = st.sampled_from(PIECES) | st.sampled_from(own)
    return st.lists(st.tuples(piece, st.sampled_from(SEPARATORS)), max_size=max_pieces).map(
        lambda pairs: "".join(p + s for p, s in pairs))


def frame_length(tokenizer, question: str) -> int:
    """The tokens of a window that are not the context's: its special tokens and the question's."""
    return len(tokenizer(question, "a", split_special_tokens=True)["input_ids"]) - len(
        tokenizer("a", add_special_tokens=False, split_special_tokens=True)["input_ids"])


def draw_windows(data, tokenizer) -> tuple[list[str], list[str], int, int]:
    """Questions and contexts (two pairs sometimes, a context shared sometimes), a max length leaving the longest
    question's window room for 1 to 60 context tokens, and a stride of 0 to one less than that room."""
    questions = data.draw(st.lists(texts(tokenizer, 12), min_size=1, max_size=2), label="questions")
    contexts = data.draw(st.lists(texts(tokenizer, 40), min_size=len(questions), max_size=len(questions)), label="contexts")
    if len(contexts) == 2 and data.draw(st.booleans(), label="one context"):
        contexts[1] = contexts[0]
    room = data.draw(st.integers(1, 60), label="room")
    stride = data.draw(st.integers(0, room - 1) | st.just(room - 1), label="stride")
    return questions, contexts, max(frame_length(tokenizer, q) for q in questions) + room, stride


def assert_windows_of_its_own_call(tokenizer, questions: list[str], contexts: list[str], max_length: int, stride: int) -> None:
    cut = pair_windows(tokenizer, questions, contexts, max_length, stride)
    own = tokenizer(questions, contexts, truncation="only_second", max_length=max_length, stride=stride,
                    return_overflowing_tokens=True, return_offsets_mapping=True, padding=False, split_special_tokens=True)
    assert cut.example_index == list(own["overflow_to_sample_mapping"])
    assert {key: [row.tolist() for row in rows] for key, rows in cut.inputs.items()} == {
        key: own[key] for key in own.keys() if key not in ("offset_mapping", "overflow_to_sample_mapping")}
    sequences = [own.sequence_ids(i) for i in range(len(own.encodings))]
    assert [m.tolist() for m in cut.in_context] == [[sid == 1 for sid in ids] for ids in sequences]
    assert [o.tolist() for o in cut.offsets] == [[list(pair) if sid == 1 else [-1, -1] for pair, sid in zip(offsets, ids)]
                                                 for offsets, ids in zip(own["offset_mapping"], sequences)]


@pytest.fixture(scope="module")
def t5_style_tokenizer(metaspace_tokenizer):
    """T5's tokenizer class on Unigram pieces: no first token, ``q </s> c </s>``."""
    from transformers import T5Tokenizer

    from .conftest import _unigram_pieces

    return T5Tokenizer(vocab=_unigram_pieces(metaspace_tokenizer, ["<pad>", "</s>", "<unk>"]), extra_ids=2)


@pytest.fixture(scope="module")
def gpt2_style_tokenizer(tiny_bpe_tokenizer):
    """GPT-2's tokenizer class on byte-level BPE: no special tokens at all, the context straight after the question."""
    from transformers import GPT2Tokenizer

    model = json.loads(tiny_bpe_tokenizer.backend_tokenizer.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return GPT2Tokenizer(vocab=model["vocab"], merges=merges, unk_token="<unk>", bos_token="<s>", eos_token="</s>")


@pytest.fixture(scope="module")
def llama_style_tokenizer(metaspace_tokenizer):
    """Llama's layout on Unigram pieces: no pre-tokenizer, a normalizer that puts "▁" before the text and for every
    space, ``[CLS] q [CLS] c`` with the context's type id 1."""
    from tokenizers import Tokenizer, normalizers, processors
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer.from_str(metaspace_tokenizer.backend_tokenizer.to_str())
    backend.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    backend.pre_tokenizer = None
    backend.post_processor = processors.TemplateProcessing(single="[CLS] $A", pair="[CLS] $A [CLS]:1 $B:1",
                                                           special_tokens=[("[CLS]", 2)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="[CLS]", pad_token="<pad>", unk_token="<unk>")


# The shared families and three layouts beside them.
FAMILIES = [*TOKENIZER_FAMILIES, "t5_style_tokenizer", "gpt2_style_tokenizer", "llama_style_tokenizer"]


@pytest.mark.parametrize("name", FAMILIES)
@FAST
@given(data=st.data())
def test_the_windows_of_drawn_text_are_those_of_the_tokenizers_own_call(request, name, data):
    tokenizer = request.getfixturevalue(name)
    assert_windows_of_its_own_call(tokenizer, *draw_windows(data, tokenizer))


@pytest.mark.slow
@pytest.mark.parametrize("name", FAMILIES)
@MANY
@given(data=st.data())
def test_the_windows_of_much_drawn_text_are_those_of_the_tokenizers_own_call(request, name, data):
    tokenizer = request.getfixturevalue(name)
    assert_windows_of_its_own_call(tokenizer, *draw_windows(data, tokenizer))


@pytest.mark.slow
@pytest.mark.parametrize("name", FAMILIES)
@settings(max_examples=100, **COMMON)
@given(data=st.data())
def test_every_decoding_of_drawn_text_answers_whole_characters_of_the_context(request, name, quiet_progress_bars, data):
    tokenizer = request.getfixturevalue(name)
    contexts = data.draw(st.lists(texts(tokenizer, 40).filter(carries_text), min_size=1, max_size=3), label="contexts")
    examples = [Example(f"q{k}", data.draw(texts(tokenizer, 4), label="question"), c) for k, c in enumerate(contexts)]
    query = data.draw(st.integers(1, 10), label="max_query_length")
    room = data.draw(st.integers(1, 40), label="room")
    config = FeatureConfig(max(3, tokenizer.num_special_tokens_to_add(pair=True)) + query + room,
                           data.draw(st.integers(0, room - 1), label="stride"), query,
                           tag_level=data.draw(st.sampled_from(["word", "subword"]), label="tag_level"))
    features = build_features(examples, tokenizer, config, with_targets=False, desc="drawn")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    n, width = len(features), max(len(ids) for ids in features["input_ids"])
    outputs = window_outputs(features, {"start_logits": 5 * rng.normal(size=(n, width)).astype(np.float32),
                                        "end_logits": 5 * rng.normal(size=(n, width)).astype(np.float32),
                                        "bio_logits": 5 * rng.normal(size=(n, width, 3)).astype(np.float32)})
    for decoding in ("span", "bio", "joint"):
        for several in (False, True):
            predictions = decode_answers(outputs, examples, decoding, DecodeConfig(n_best=10, max_answer_length=30),
                                         multi_span=several)
            for example, prediction in zip(examples, predictions):
                assert prediction.spans
                check_spans(example.context, [(s.text, s.start, s.end) for s in prediction.spans], several)
