"""One long context: its windows are cut without the tokenizer's Python lists of every window, written to Arrow from
one buffer a column, and its spans scored a block of windows at a time, each the same as before to the last bit."""

import copy
import dataclasses

import numpy as np
import pytest
from datasets import Dataset

from bio_mrc.decoding import spans
from bio_mrc.features import targets, windows, words
from bio_mrc.features.pair_windows import pair_windows
from bio_mrc.features.words import context_words
from bio_mrc.features.windows import FeatureConfig, build_features, tokenize_windows, windows_table
from bio_mrc.inference import AnswerExtractor
from bio_mrc.types import Example

# A context of 70 windows of 48 tokens (the tiny model's) for the first question, 73 for the second.
LONG_CONTEXT = " ".join(["The Normans were famed for their martial spirit.", "Rollo ruled Normandy in 911.",
                         "Their language was Norman French, a dialect of Old French."] * 24)
ODD_CONTEXT = ("Rollo [SEP] ruled <s> Normandy, café cafe\u0301 首都。Emoji👍🏽 \u200b नहीं 🇫🇷🇩🇪 U.S. 1,000 "
               "the cat sat on the mat. ") * 6


# Tokenizers whose windows are slices of the context alone in each question's frame.
SLICED = ["tiny_tokenizer", "tiny_bpe_tokenizer", "metaspace_tokenizer", "xlmr_style_tokenizer", "deberta_v2_style_tokenizer",
          "bpe_untrimmed_tokenizer", "extra_tokens_tokenizer", "added_tokens_tokenizer"]
# Tokenizers whose backend cuts windows otherwise than as slices in one frame.
CUT_BY_THE_BACKEND = ["bpe_prefix_space_tokenizer", "context_type_zero_tokenizer"]


def answers(extractor: AnswerExtractor, multi_span: bool) -> list[dict]:
    return [dataclasses.asdict(p) for p in extractor(["What were the Normans famed for?", "Who ruled Normandy?"],
                                                     LONG_CONTEXT, multi_span=multi_span)]


@pytest.mark.parametrize("decoding", ["span", "bio", "joint"])
def test_a_long_contexts_spans_scored_a_few_windows_at_a_time_are_those_scored_at_once(trained_dir, monkeypatch,
                                                                                        decoding):
    extractor = AnswerExtractor.from_pretrained(trained_dir, precision="fp32", device="cpu", decoding=decoding)
    monkeypatch.setattr(spans, "BLOCK_WINDOWS", 1 << 30)
    at_once = {multi_span: answers(extractor, multi_span) for multi_span in (False, True)}
    scored, block = [], spans.window_best_spans
    monkeypatch.setattr(spans, "window_best_spans", lambda start, *rest: scored.append(len(start)) or block(start, *rest))
    monkeypatch.setattr(spans, "BLOCK_WINDOWS", 3)
    for multi_span in (False, True):
        assert answers(extractor, multi_span) == at_once[multi_span]  # texts, offsets, scores, every field
    assert scored and max(scored) <= 3  # three windows at a time (BIO: its merged rows, one a question)
    assert decoding == "bio" or sum(scored) >= 70 + 73  # every window of both questions


@pytest.mark.parametrize("name", SLICED + CUT_BY_THE_BACKEND)
def test_the_windows_are_those_the_tokenizers_own_call_cuts_without_its_lists_of_every_window(request, monkeypatch, name):
    tokenizer = request.getfixturevalue(name)
    questions, contexts = ["who ruled [SEP] Normandy?", "where?"], [ODD_CONTEXT, "Rollo ruled."]
    own = tokenizer(questions, contexts, truncation="only_second", max_length=32, stride=8, return_overflowing_tokens=True,
                    return_offsets_mapping=True, padding=False, split_special_tokens=True)
    monkeypatch.setattr(tokenizer, "_convert_encoding", lambda *args, **kwargs: pytest.fail("Python lists of every window"))
    cut = pair_windows(tokenizer, questions, contexts, 32, 8)
    assert cut.example_index == list(own["overflow_to_sample_mapping"]) and len(cut.example_index) > 10
    assert set(cut.inputs) == set(own.keys()) - {"offset_mapping", "overflow_to_sample_mapping"}
    for key, rows in cut.inputs.items():
        assert [row.tolist() for row in rows] == own[key]
    for i, (offsets, in_context) in enumerate(zip(cut.offsets, cut.in_context)):
        assert in_context.tolist() == [sid == 1 for sid in own.sequence_ids(i)]
        expected = np.asarray(own["offset_mapping"][i], dtype=np.int64).reshape(-1, 2)
        expected[~in_context] = -1
        assert offsets.tolist() == expected.tolist()


@pytest.mark.parametrize("name", SLICED + CUT_BY_THE_BACKEND)
def test_a_contexts_words_are_those_of_the_tokenizers_own_call_without_its_lists_of_every_token(request, monkeypatch, name):
    tokenizer = request.getfixturevalue(name)
    contexts = [ODD_CONTEXT, "Rollo ruled  Normandy.", ODD_CONTEXT]
    pair_windows(tokenizer, ["who?"] * 3, contexts, 32, 8)  # windows first, as tokenize_windows cuts them: no truncation left
    calls = []

    class OwnWay(type(tokenizer)):  # the same backend, read through the tokenizer's own call
        def _encode_plus(self, *args, **kwargs):
            calls.append(kwargs.get("text", args[0] if args else None))
            return super()._encode_plus(*args, **kwargs)

    own_way = copy.copy(tokenizer)
    own_way.__class__ = OwnWay
    expected = context_words(own_way, contexts)
    assert any(isinstance(texts, list) and ODD_CONTEXT in texts for texts in calls)  # the contexts by its own call
    convert = tokenizer._convert_encoding
    monkeypatch.setattr(tokenizer, "_convert_encoding", lambda encoding, **kwargs: pytest.fail("Python lists of every token")
                        if len(encoding.ids) > 20 else convert(encoding, **kwargs))  # the words' probe: a few tokens
    got = context_words(tokenizer, contexts)
    assert [words.tolist() for words in got] == [words.tolist() for words in expected]
    assert len(got[0]) > 100 and got[0].tolist() == got[2].tolist()
    assert [contexts[1][a:b] for a, b in got[1]] == ["Rollo", "ruled", "Normandy", "."]


@pytest.mark.parametrize("name", ["tiny_tokenizer", "tiny_bpe_tokenizer", "metaspace_tokenizer"])
def test_an_examples_windows_are_tagged_at_once_as_each_window_alone(request, monkeypatch, name):
    tokenizer = request.getfixturevalue(name)
    config = FeatureConfig(max_seq_length=24, doc_stride=8, max_query_length=8, tag_level="word")
    examples = [Example("0", "Who?", ODD_CONTEXT, (((0, 5),),)), Example("1", "When?", "Rollo ruled in 911.", (((15, 18),),)),
                Example("2", "Who ruled?", ODD_CONTEXT, (((0, 5),),))]
    calls, order = [], []
    monkeypatch.setattr(windows, "word_of_tokens", lambda *args: calls.append(len(args[0])) or words.word_of_tokens(*args))
    alone, cut = windows.tokens_alone, windows.pair_windows  # the contexts alone first, while no window is held
    monkeypatch.setattr(windows, "tokens_alone", lambda *args: order.append("alone") or alone(*args))
    monkeypatch.setattr(windows, "pair_windows", lambda *args: order.append("windows") or cut(*args))
    features = tokenize_windows(examples, tokenizer, config)
    assert len(calls) == 3 and len(features["example_index"]) > 60  # one call an example, not one a window
    assert order == ["alone", "windows"]
    words_of = context_words(tokenizer, [example.context for example in examples])
    for k, example in enumerate(features["example_index"]):  # each window alone
        spans, tagged = words.word_of_tokens(features["offset_mapping"][k], features["paragraph_mask"][k] == 1, words_of[example])
        assert features["word_offsets"][k].tolist() == spans.tolist()
        assert features["tag_mask"][k].tolist() == tagged.astype(np.int8).tolist()


def test_windows_tagged_at_once_each_tag_their_own_first_token_of_a_word():
    # Two tokens of one character (byte-level BPE), each the last of one window and the first of the next.
    offsets, in_context, spans = np.array([[0, 1], [0, 1], [2, 5]]), np.array([True, True, True]), np.array([[0, 1], [2, 5]])
    assert words.word_of_tokens(offsets, in_context, spans)[1].tolist() == [True, False, True]  # one window
    assert words.word_of_tokens(offsets, in_context, spans, np.array([1]))[1].tolist() == [True, True, True]  # two


def test_a_tokenizer_that_encodes_its_own_way_cuts_the_windows_with_its_own_call(tiny_tokenizer, monkeypatch):
    calls = []

    class OwnWay(type(tiny_tokenizer)):  # as LUKE's and LayoutLM's tokenizers add columns of their own
        def _encode_plus(self, *args, **kwargs):
            calls.append(kwargs.get("return_overflowing_tokens"))
            return super()._encode_plus(*args, **kwargs)

    questions, contexts = ["who ruled Normandy?"], [ODD_CONTEXT]
    expected = pair_windows(tiny_tokenizer, questions, contexts, 32, 8)
    monkeypatch.setattr(tiny_tokenizer, "__class__", OwnWay)
    got = pair_windows(tiny_tokenizer, questions, contexts, 32, 8)
    assert calls == [True]  # the windows of its own call, not the backend's alone
    assert got.example_index == expected.example_index and set(got.inputs) == set(expected.inputs)
    for key in expected.inputs:
        assert [list(row) for row in got.inputs[key]] == [row.tolist() for row in expected.inputs[key]]
    assert [o.tolist() for o in got.offsets] == [o.tolist() for o in expected.offsets]
    assert [m.tolist() for m in got.in_context] == [m.tolist() for m in expected.in_context]


@pytest.mark.parametrize("tag_level", ["word", "subword"])
def test_the_windows_table_is_the_one_datasets_builds_from_the_rows(tiny_tokenizer, tag_level):
    config = FeatureConfig(max_seq_length=32, doc_stride=8, max_query_length=8, tag_level=tag_level)
    examples = [Example("0", "Who ruled Normandy?", ODD_CONTEXT, (((0, 5),),)),  # Rollo
                Example("1", "When?", "Rollo ruled Normandy in 911.", (((24, 27),),))]  # 911
    features = targets.add_targets(tokenize_windows(examples, tiny_tokenizer, config), examples, config, ["span", "bio"])
    rows = Dataset.from_dict(features)  # datasets' own conversion, a row at a time
    table = windows_table(features)
    assert table.schema.names == ["example_index", *(n for n in features if n != "example_index")]
    assert table.select(rows.column_names).equals(rows.data.table)  # the same types, datasets' small integers included
    built = build_features(examples, tiny_tokenizer, config, heads=["span", "bio"])
    assert built.data.table.equals(table)


def assert_windows_of_its_own_call(tokenizer, questions, contexts, max_length=32, stride=8):
    cut = pair_windows(tokenizer, questions, contexts, max_length, stride)  # first: the call may change the tokenizer's state
    own = tokenizer(questions, contexts, truncation="only_second", max_length=max_length, stride=stride,
                    return_overflowing_tokens=True, return_offsets_mapping=True, padding=False, split_special_tokens=True)
    assert cut.example_index == list(own["overflow_to_sample_mapping"])
    assert {key: [list(map(int, row)) for row in rows] for key, rows in cut.inputs.items()} == {
        key: own[key] for key in own.keys() if key not in ("offset_mapping", "overflow_to_sample_mapping")}
    assert [m.tolist() for m in cut.in_context] == [[sid == 1 for sid in own.sequence_ids(i)] for i in range(len(own.encodings))]
    expected = [[list(offsets) if sid == 1 else [-1, -1] for offsets, sid in zip(own["offset_mapping"][i], own.sequence_ids(i))]
                for i in range(len(own.encodings))]
    assert [o.tolist() for o in cut.offsets] == expected
    return cut


class TypeIdsOfItsOwn:
    """A class of its own reading the backend's encodings: its windows' type ids all 0."""

    def _convert_encoding(self, *args, **kwargs):
        columns, encodings = super()._convert_encoding(*args, **kwargs)
        columns["token_type_ids"] = [[0] * len(row) for row in columns["token_type_ids"]]
        return columns, encodings


class ShorterWindows:
    """A class of its own choosing the truncation: windows 4 tokens shorter than asked."""

    def _get_padding_truncation_strategies(self, *args, **kwargs):
        padding, truncation, max_length, rest = super()._get_padding_truncation_strategies(*args, **kwargs)
        return padding, truncation, max_length - 4, rest


@pytest.mark.parametrize("mixin", [TypeIdsOfItsOwn, ShorterWindows])
def test_a_class_reading_the_encodings_or_the_truncation_its_own_way_cuts_the_windows_of_its_own_call(
        tiny_tokenizer, monkeypatch, mixin):
    monkeypatch.setattr(tiny_tokenizer, "__class__", type("OwnWay", (mixin, type(tiny_tokenizer)), {}))
    assert_windows_of_its_own_call(tiny_tokenizer, ["who ruled Normandy?"], [ODD_CONTEXT])


def test_a_seq2seq_tokenizer_left_in_target_mode_cuts_the_windows_in_input_mode_as_its_call_does(tiny_tokenizer):
    from tokenizers import processors

    class Seq2Seq(type(tiny_tokenizer)):  # as MBart's and NLLB's tokenizers swap their language tokens
        def _switch_to_input_mode(self):
            self.backend_tokenizer.post_processor = processors.TemplateProcessing(
                single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])

        def _switch_to_target_mode(self):
            self.backend_tokenizer.post_processor = processors.TemplateProcessing(
                single="$A [SEP]", pair="$A [SEP] $B:1 [SEP]:1", special_tokens=[("[SEP]", 3)])

    tokenizer = copy.deepcopy(tiny_tokenizer)  # its post-processor changes
    tokenizer.__class__ = Seq2Seq
    assert tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]"]) == [2, 3]
    tokenizer._switch_to_target_mode()  # as a call with text_target that raised leaves it
    assert_windows_of_its_own_call(tokenizer, ["who ruled Normandy?"], [ODD_CONTEXT])


@pytest.mark.parametrize("tag_level", ["word", "subword"])
@pytest.mark.parametrize("batch_size", [1, 2, None])
def test_windows_kept_in_memory_are_those_build_features_writes(tiny_tokenizer, tag_level, batch_size):
    config = FeatureConfig(max_seq_length=32, doc_stride=8, max_query_length=8, tag_level=tag_level)
    examples = [Example("0", "Who ruled Normandy?", ODD_CONTEXT), Example("1", "When?", "Rollo ruled Normandy in 911."),
                Example("2", "Who?", LONG_CONTEXT)]
    built = build_features(examples, tiny_tokenizer, config, with_targets=False, batch_size=batch_size)
    kept = windows.windows_in_memory(examples, tiny_tokenizer, config, batch_size=batch_size)
    assert len(kept) == len(built) > 100 and kept.features == built.features
    assert kept.data.table.combine_chunks().equals(built.data.table.combine_chunks())
    none = windows.windows_in_memory([], tiny_tokenizer, config)
    assert len(none) == len(build_features([], tiny_tokenizer, config, with_targets=False)) == 0


@pytest.mark.parametrize("tag_level", ["word", "subword"])
@pytest.mark.parametrize("batch_size", [1, None])
def test_windows_held_in_a_table_are_those_kept_in_a_dataset_and_run_alike(trained_dir, tiny_tokenizer, tag_level,
                                                                          batch_size):
    """The answering doors hold a call's windows in a WindowTable, not a datasets.Dataset: every column the values
    the Dataset's Arrow table reads as, of the same type, and the same outputs of every head from the forward pass."""
    from bio_mrc.features.ragged import RaggedColumn
    from bio_mrc.features.window_table import column_values, window_columns
    from bio_mrc.inference import TrainedModel
    from bio_mrc.inference.forward import run_windows

    config = FeatureConfig(max_seq_length=48, doc_stride=16, max_query_length=12, tag_level=tag_level)
    examples = [Example("0", "Who ruled Normandy?", ODD_CONTEXT), Example("1", "When?", "Rollo ruled Normandy in 911."),
                Example("2", "Who?", LONG_CONTEXT)]
    held = windows.windows_in_table(examples, tiny_tokenizer, config, batch_size=batch_size)
    kept = windows.windows_in_memory(examples, tiny_tokenizer, config, batch_size=batch_size)
    assert len(held) == len(kept) > 50 and held.column_names == kept.column_names
    listed = [name for name in kept.column_names if name in windows.WINDOW_COLUMNS]
    assert set(kept.column_names) - set(listed) == {"example_index", "question_tokens"}
    for name, column in RaggedColumn.columns_of(kept, listed).items():
        ours = window_columns(held, [name])[name]
        assert ours.values.dtype == column.values.dtype and ours.values.shape == column.values.shape, name
        assert [ours.row(r).tolist() for r in range(len(ours))] == [column.row(r).tolist() for r in range(len(column))], name
    for name in ("example_index", "question_tokens"):
        assert column_values(held, name).dtype == column_values(kept, name).dtype == np.int64
        assert held[name].tolist() == column_values(kept, name).tolist() == list(kept[name])
    model = TrainedModel.load(trained_dir, precision="fp32", device="cpu").model
    ran = [run_windows(model, features, tiny_tokenizer.pad_token_id, 16, progress=False, precision="fp32")
           for features in (held, kept)]
    for name in ("example_index", "offsets", "mask", "word_offsets", "tag_mask"):
        np.testing.assert_array_equal(getattr(ran[0], name), getattr(ran[1], name), err_msg=name)
    assert sorted(ran[0].logits) == sorted(ran[1].logits) != []
    for name, logits in ran[1].logits.items():
        np.testing.assert_array_equal(ran[0].logits[name], logits, err_msg=name)


def test_a_long_contexts_windows_are_not_written_through_a_stream_before_they_are_run(trained_dir, monkeypatch):
    extractor = AnswerExtractor.from_pretrained(trained_dir, precision="fp32", device="cpu", decoding="joint")
    expected = answers(extractor, True)
    # Dataset.map writes every window into one growing in-memory stream and reads the dataset back from it: two to
    # three copies of a long context's windows at once.
    monkeypatch.setattr(Dataset, "map", lambda *args, **kwargs: pytest.fail("the windows written through Dataset.map"))
    assert answers(extractor, True) == expected


def contexts_cut_by_the_backend(monkeypatch) -> list[str]:
    """The contexts the backend is asked to cut into windows by its overflow, as ``pair_windows`` asks it."""
    from transformers.tokenization_utils_base import TruncationStrategy

    from bio_mrc.features import pair_windows as module

    cut, encode = [], module.backend_encodings

    def recording(tokenizer, texts, *args, **kwargs):
        if (args[1] if len(args) > 1 else kwargs.get("truncation")) == TruncationStrategy.ONLY_SECOND:
            cut.extend(context for _, context in texts)
        return encode(tokenizer, texts, *args, **kwargs)

    monkeypatch.setattr(module, "backend_encodings", recording)
    return cut


@pytest.mark.parametrize("name", SLICED)
def test_the_windows_are_sliced_from_the_context_alone_not_cut_by_the_backends_overflow(request, monkeypatch, name):
    """The backend holds every overflowing window of a pair at once and its binding copies them all again: the windows
    are slices of the context tokenized alone in each question's frame, the same windows as its own call cuts."""
    tokenizer = request.getfixturevalue(name)
    cut_by_the_backend = contexts_cut_by_the_backend(monkeypatch)
    questions = ["who ruled [SEP] Normandy?", "where?", "", "when?"]
    contexts = [ODD_CONTEXT, "Rollo ruled.", LONG_CONTEXT, " \t\n "]
    assert len(assert_windows_of_its_own_call(tokenizer, questions, contexts).example_index) > 10
    assert not set(cut_by_the_backend) & set(contexts)  # a probe pair at most


@pytest.mark.parametrize("name", CUT_BY_THE_BACKEND)
def test_where_the_backend_cuts_windows_otherwise_than_slices_its_own_windows_are_cut(request, monkeypatch, name):
    # A window's first token keeps its leading space in its offsets; the windows after the first have type id 1.
    tokenizer = request.getfixturevalue(name)
    cut_by_the_backend = contexts_cut_by_the_backend(monkeypatch)
    assert_windows_of_its_own_call(tokenizer, ["who ruled [SEP] Normandy?", "where?"], [ODD_CONTEXT, "Rollo ruled."])
    assert ODD_CONTEXT in cut_by_the_backend


def context_of(tokenizer, n: int) -> str:
    """A context of ``n`` tokens, each one word."""
    context = "the"
    while len(tokenizer(context, add_special_tokens=False)["input_ids"]) < n:
        context += " the"
    assert len(tokenizer(context, add_special_tokens=False)["input_ids"]) == n
    return context


@pytest.mark.parametrize("name", ["tiny_tokenizer", "tiny_bpe_tokenizer", "xlmr_style_tokenizer", "bpe_prefix_space_tokenizer"])
@pytest.mark.parametrize("shape", ["stride room - 1", "empty question", "blank context", "one token", "room tokens",
                                   "room + 1 tokens"])
def test_windows_at_the_edges_of_the_room_are_those_of_its_own_call(request, monkeypatch, name, shape):
    tokenizer = request.getfixturevalue(name)
    question = "" if shape == "empty question" else "who ruled Normandy?"
    room = 24 - len(tokenizer(question, "a")["input_ids"]) + len(tokenizer("a", add_special_tokens=False)["input_ids"])
    stride = room - 1 if shape == "stride room - 1" else 4
    context = {"blank context": " \n\t ", "one token": "the", "room tokens": context_of(tokenizer, room),
               "room + 1 tokens": context_of(tokenizer, room + 1)}.get(shape, LONG_CONTEXT)
    cut_by_the_backend = contexts_cut_by_the_backend(monkeypatch)
    cut = assert_windows_of_its_own_call(tokenizer, [question], [context], 24, stride)
    assert len(cut.example_index) == {"one token": 1, "blank context": 1, "room tokens": 1, "room + 1 tokens": 2}.get(
        shape, len(cut.example_index))
    assert (context in cut_by_the_backend) == (name in CUT_BY_THE_BACKEND)


@pytest.mark.parametrize("over", [0, 1])
def test_a_stride_that_fills_the_room_is_refused_as_its_own_call_refuses_it(tiny_tokenizer, over):
    question = "who ruled Normandy?"
    room = 24 - len(tiny_tokenizer(question, "a")["input_ids"]) + 1
    with pytest.raises(BaseException) as own:  # the backend's panic, no Exception
        tiny_tokenizer([question], [LONG_CONTEXT], truncation="only_second", max_length=24, stride=room + over,
                       return_overflowing_tokens=True)
    with pytest.raises(own.type, match="stride"):
        pair_windows(tiny_tokenizer, [question], [LONG_CONTEXT], 24, room + over)


@pytest.mark.parametrize("tag_level", ["word", "subword"])
@pytest.mark.parametrize("name", SLICED[3:] + CUT_BY_THE_BACKEND)
def test_the_training_windows_are_those_the_backends_windows_give(request, monkeypatch, name, tag_level):
    from bio_mrc.features import pair_windows as module

    tokenizer = request.getfixturevalue(name)
    config = FeatureConfig(max_seq_length=32, doc_stride=8, max_query_length=8, tag_level=tag_level)
    normandy = ODD_CONTEXT.index("Normandy")
    examples = [Example("0", "Who ruled?", ODD_CONTEXT, (((normandy, normandy + 8),),)), Example("1", "", "Rollo ruled in 911.", (((15, 18),),)),
                Example("2", "When?", LONG_CONTEXT, ()), Example("3", "Who?", " \t ", ())]

    def features():
        built = targets.add_targets(tokenize_windows(examples, tokenizer, config), examples, config, ["span", "bio"])
        return {key: [np.asarray(row).tolist() for row in rows] for key, rows in built.items()}

    sliced = features()
    monkeypatch.setattr(module, "_sliced_windows", lambda *args: None)
    assert features() == sliced and len(sliced["example_index"]) > 50


@pytest.mark.parametrize("tag_level", ["word", "subword"])
def test_a_context_several_questions_ask_is_tokenized_alone_once_whatever_the_batches(tiny_tokenizer, monkeypatch, tag_level):
    """A long context fills a batch of its own (questions_per_batch), so each question over it was a batch, and each
    batch tokenized the context again, twice with word tags (its words, then its windows' slices)."""
    from bio_mrc.features import pair_windows as pairs

    config = FeatureConfig(max_seq_length=32, doc_stride=8, max_query_length=8, tag_level=tag_level)
    examples = [Example(str(k), question, ODD_CONTEXT, None)
                for k, question in enumerate(["Who ruled?", "Where?", "When was it?", "Who?"])]
    expected = windows.windows_in_memory(examples, tiny_tokenizer, config)
    encoded, encode = [], pairs.backend_encodings
    for module in (pairs, words):
        monkeypatch.setattr(module, "backend_encodings", lambda tokenizer, texts, *rest: encoded.extend(texts) or
                            encode(tokenizer, texts, *rest), raising=False)
    got = windows.windows_in_memory(examples, tiny_tokenizer, config, batch_size=1)
    assert encoded.count(ODD_CONTEXT) == 1
    assert got.to_dict() == expected.to_dict() and len(got) > 4 * 10
