"""A chunk of questions over long contexts is run and decoded in consecutive slices whose windows, estimated from the
contexts' lengths, stay under a bound: one slice's windows and logits are held at a time, and the answers are those
of the whole chunk run at once."""

import json
import math
import weakref

import pytest

from bio_mrc.data.squad import load_squad
from bio_mrc.decoding.ties import NEAR_TIE
from bio_mrc.features.config import FeatureConfig, estimated_windows
from bio_mrc.inference import AnswerExtractor, StreamPlan, defaults
from bio_mrc.inference.extract import window_slices
from bio_mrc.features import pair_windows
from bio_mrc.inference.streaming import chunk_lines, predict_to_files
from bio_mrc.types import Example

from .conftest import SAMPLE_V1
from .test_extract import assert_same_answers, windows_asked

# A context of some 23 windows of the tiny model's 48 tokens a question (a third of test_long_contexts' 70): a slice
# holds a few questions' windows, each question many, as at any length.
LONG_CONTEXT = " ".join(["The Normans were famed for their martial spirit.", "Rollo ruled Normandy in 911.",
                         "Their language was Norman French, a dialect of Old French."] * 8)

QUESTIONS = ["What were the Normans famed for?", "Who ruled Normandy?", "What was Norman French?", "When did Rollo rule?",
             "Who were famed?"]
SHORT = "Rollo ruled Normandy in 911."
# A slice's windows are padded and batched otherwise than the chunk's, which moves a score in float32's last bits
# (up to about 7e-7 relative seen), never as far as the scores the decoders tell apart (NEAR_TIE).
LAST_BITS = NEAR_TIE


def windows_alive(monkeypatch, trained) -> list[int]:
    """For each forward pass of ``trained`` from now on: the windows whose logits are alive as it ends, its own
    included (a view of the logits keeps them alive)."""
    windows, alive, counts = trained.windows, {}, []

    def counted(examples, **options):
        outputs = windows(examples, **options)
        key = len(counts)
        alive[key] = len(outputs.example_index)
        counts.append(sum(alive.values()))
        weakref.finalize(outputs.logits["start_logits"], alive.pop, key)
        return outputs

    monkeypatch.setattr(trained, "windows", counted)
    return counts


def two_questions_a_slice(monkeypatch, trained) -> int:
    """The bound set to two long questions' estimated windows; returns it."""
    bound = 2 * estimated_windows(len(LONG_CONTEXT), trained.features)
    monkeypatch.setattr(defaults, "SLICE_WINDOWS", bound, raising=False)
    return bound


def assert_as_one_pass(got, expected) -> None:
    """The same answers, abstentions, offsets, documents and order as one pass; scores within :data:`LAST_BITS`."""
    assert_same_answers(got, expected, rel=LAST_BITS)


def read_lines(plans_lines: list[list[str]]) -> list[list[dict]]:
    """Each plan's answer lines read back, so that their scores compare to float32 rounding and the rest exactly."""
    return [list(map(json.loads, lines)) for lines in plans_lines]


def windows_of_one(trained) -> int:
    """The most windows any one of the questions has over the long context."""
    return max(len(trained.windows([Example("q", q, LONG_CONTEXT, None)]).example_index) for q in QUESTIONS)


@pytest.mark.parametrize(("characters", "expected"), [(0, 1), (33, 1), (34, 2), (50, 2), (51, 3), (33 + 17 * 10, 11)])
def test_a_contexts_windows_are_estimated_at_a_token_a_character(characters, expected):
    # 48 tokens a window, 12 of question and 3 special: 33 of context, each window 33 - 16 = 17 past the one before
    assert estimated_windows(characters, FeatureConfig(max_seq_length=48, doc_stride=16, max_query_length=12)) == expected


def test_slices_are_consecutive_and_each_the_most_questions_under_the_bound():
    config = FeatureConfig(max_seq_length=48, doc_stride=16, max_query_length=12)
    sizes = [0, 200, 34, 5000, 51, 51, 51, 0]  # estimated 1, 11, 2, 293, 3, 3, 3, 1 windows
    examples = [Example(str(k), "q", "x" * n, None) for k, n in enumerate(sizes)]
    slices = list(window_slices(examples, config, bound=12))
    assert [[e.id for e in s] for s in slices] == [["0", "1"], ["2"], ["3"], ["4", "5", "6", "7"]]
    assert list(window_slices(examples, config, bound=10_000)) == [examples]  # under the bound: the chunk itself
    assert list(window_slices([], config, bound=12)) == []


@pytest.mark.parametrize("decoding", ["span", "bio", "joint"])
def test_a_chunk_over_a_long_context_holds_one_slice_of_windows_with_the_answers_of_one_pass(trained_dir, monkeypatch,
                                                                                            decoding):
    extractor = AnswerExtractor.from_pretrained(trained_dir, precision="fp32", device="cpu", decoding=decoding)
    whole = {multi_span: extractor(QUESTIONS, LONG_CONTEXT, multi_span=multi_span) for multi_span in (False, True)}
    top = extractor(QUESTIONS, LONG_CONTEXT, top_k=3)
    one = windows_of_one(extractor.trained)
    bound = two_questions_a_slice(monkeypatch, extractor.trained)
    alive = windows_alive(monkeypatch, extractor.trained)
    for multi_span, expected in whole.items():
        assert_as_one_pass(extractor(QUESTIONS, LONG_CONTEXT, multi_span=multi_span), expected)
    assert_as_one_pass(extractor(QUESTIONS, LONG_CONTEXT, top_k=3), top)
    assert len(alive) == 3 * math.ceil(len(QUESTIONS) / 2)  # slices of two, two and one question, each call
    assert max(alive) <= min(2 * one, bound)  # one slice's windows alive at a time, never the chunk's


def test_predict_answers_a_chunk_a_slice_at_a_time_with_the_same_lines(trained_dir, monkeypatch):
    extractor = AnswerExtractor.from_pretrained(trained_dir, precision="fp32", device="cpu")
    trained = extractor.trained
    chunk = [Example(f"q{k}", q, LONG_CONTEXT if k % 4 else SHORT, None) for k, q in enumerate(QUESTIONS * 2)]
    plans = [StreamPlan(("span", "bio", "joint")), StreamPlan(("joint",), multi_span=True)]
    whole = [chunk_lines(trained, chunk, plan) for plan in plans]
    one = windows_of_one(trained)
    two_questions_a_slice(monkeypatch, trained)
    alive = windows_alive(monkeypatch, trained)
    sliced = [chunk_lines(trained, chunk, plan) for plan in plans]
    assert_as_one_pass(read_lines(sliced), read_lines(whole))
    assert len(alive) == 2 * 5 and max(alive) <= 2 * one  # short, long, long, long, short, ...: [s l] [l l] [s l] [l l] [s l]


@pytest.mark.parametrize("multi_span", [False, True])
def test_one_question_over_long_documents_is_ranked_a_slice_at_a_time_as_in_one_pass(trained_dir, monkeypatch, multi_span):
    extractor = AnswerExtractor.from_pretrained(trained_dir, precision="fp32", device="cpu", decoding="joint")
    documents = [LONG_CONTEXT, SHORT, LONG_CONTEXT[:900], LONG_CONTEXT, SHORT + " " + LONG_CONTEXT]
    whole = {top_k: extractor(QUESTIONS[1], documents, top_k=top_k, multi_span=multi_span) for top_k in (1, 3, None)}
    two_questions_a_slice(monkeypatch, extractor.trained)
    alive = windows_alive(monkeypatch, extractor.trained)
    for top_k, expected in whole.items():
        assert_as_one_pass(extractor(QUESTIONS[1], documents, top_k=top_k, multi_span=multi_span), expected)
    assert len(alive) == 3 * 3  # [long short short] [long] [long]: the last is longer than the bound's half


def test_the_pipeline_answers_a_chunk_a_slice_at_a_time_with_the_answers_of_one_pass(trained_dir, monkeypatch):
    from transformers import pipeline

    from bio_mrc.inference.pipeline import TASK

    qa = pipeline(TASK, model=str(trained_dir), device="cpu", precision="fp32")
    inputs = [{"question": q, "context": LONG_CONTEXT} for q in QUESTIONS]
    whole = [qa(inputs), qa(inputs, multi_span=True), qa(question=QUESTIONS[0], context=[LONG_CONTEXT] * 3, top_k=2)]
    one = windows_of_one(qa.extractor.trained)
    two_questions_a_slice(monkeypatch, qa.extractor.trained)
    alive, calls = windows_alive(monkeypatch, qa.extractor.trained), qa.call_count
    assert_as_one_pass([qa(inputs), qa(inputs, multi_span=True), qa(question=QUESTIONS[0], context=[LONG_CONTEXT] * 3, top_k=2)],
                        whole)
    assert len(alive) == 3 + 3 + 2 and max(alive) <= 2 * one
    assert qa.call_count == calls + 3  # a call counts once, whatever its slices


def test_squad_sized_chunks_run_whole_as_before(trained_dir, monkeypatch):
    extractor = AnswerExtractor.from_pretrained(trained_dir, precision="fp32", device="cpu")
    examples = load_squad(SAMPLE_V1).examples
    asked = []
    windows = extractor.trained.windows
    monkeypatch.setattr(extractor.trained, "windows", lambda chunk, **options: asked.append(len(chunk)) or windows(chunk, **options))
    extractor([e.question for e in examples], [e.context for e in examples])
    assert asked == [len(examples)]  # one chunk, one forward call over all its windows: today's batches


def contexts_tokenized(monkeypatch) -> list[str]:
    """Each long context tokenized alone from now on, once a time it is tokenized (a tokenizer's probes left out)."""
    tokenized, tokens_of = [], pair_windows._tokens_of

    def counted(tokenizer, texts):
        tokenized.extend(text for text in texts if text.startswith(LONG_CONTEXT))
        return tokens_of(tokenizer, texts)

    monkeypatch.setattr(pair_windows, "_tokens_of", counted)
    return tokenized


def test_a_context_shared_by_a_chunks_slices_is_tokenized_once(trained_dir, monkeypatch):
    extractor = AnswerExtractor.from_pretrained(trained_dir, precision="fp32", device="cpu", decoding="joint")
    trained, plan = extractor.trained, StreamPlan(("span", "joint"))
    chunk = [Example(f"q{k}", q, LONG_CONTEXT, None) for k, q in enumerate(QUESTIONS)]
    documents = [LONG_CONTEXT, LONG_CONTEXT + " Rollo.", LONG_CONTEXT, LONG_CONTEXT + " Rollo.", LONG_CONTEXT]
    whole = [chunk_lines(trained, chunk, plan), extractor(QUESTIONS, LONG_CONTEXT), extractor(QUESTIONS[1], documents, top_k=3)]
    # a long context and a longer one a slice, whatever their size: the chunk's slices [long long] [long long] [long]
    longer = estimated_windows(len(documents[1]), trained.features)
    monkeypatch.setattr(defaults, "SLICE_WINDOWS", estimated_windows(len(LONG_CONTEXT), trained.features) + longer, raising=False)
    asked, tokenized = windows_asked(monkeypatch, trained), contexts_tokenized(monkeypatch)
    assert_as_one_pass(read_lines([chunk_lines(trained, chunk, plan)]), read_lines(whole[:1]))
    assert tokenized == [LONG_CONTEXT]  # once for the chunk's three slices, not once a slice
    assert_as_one_pass(extractor(QUESTIONS, LONG_CONTEXT), whole[1])
    assert_as_one_pass(extractor(QUESTIONS[1], documents, top_k=3), whole[2])
    assert asked == [2, 2, 1] * 3
    # the documents' slices [long, long'] [long, long'] [long]: each context tokenized once, as its slice held it
    assert tokenized == [LONG_CONTEXT] * 3 + [LONG_CONTEXT + " Rollo."]


@pytest.fixture
def bar_updates(monkeypatch) -> list[tuple[str, int]]:
    """(description, count) of every step of a bar shown from now on."""
    import tqdm.std

    updates, update = [], tqdm.std.tqdm.update

    def recording_update(bar, n=1):
        if not bar.disable:
            updates.append((bar.desc.rstrip(": "), n))
        return update(bar, n)

    monkeypatch.setattr(tqdm.std.tqdm, "update", recording_update)
    return updates


def test_predicts_bars_move_a_slice_and_a_batch_of_windows_at_a_time(trained_dir, monkeypatch, tmp_path, bar_updates):
    extractor = AnswerExtractor.from_pretrained(trained_dir, precision="fp32", device="cpu")
    trained, plan = extractor.trained, StreamPlan(("joint",), batch_size=16)
    chunk = [Example(f"q{k}", q, LONG_CONTEXT, None) for k, q in enumerate(QUESTIONS)]
    windows = [len(trained.windows(chunk[k : k + 2]).example_index) for k in (0, 2, 4)]  # each slice's
    two_questions_a_slice(monkeypatch, trained)
    predict_to_files(trained, chunk, plan, tmp_path / "quiet.json")
    assert bar_updates == []  # library calls stay quiet
    predict_to_files(trained, chunk, plan, tmp_path / "shown.json", progress=True)
    assert [n for desc, n in bar_updates if desc == "questions"] == [2, 2, 1]  # a slice at a time, not the chunk at once
    inference = [n for desc, n in bar_updates if desc == "inference"]
    assert len(inference) == sum(math.ceil(n / 16) for n in windows) and sum(inference) == sum(windows)  # a forward pass each
    assert {desc for desc, _ in bar_updates} == {"questions", "inference"}
    assert (tmp_path / "shown.json").read_text() == (tmp_path / "quiet.json").read_text()


def test_a_resumed_predicts_question_bar_counts_the_answered_chunks_whole_and_the_rest_a_slice_at_a_time(
        trained_dir, monkeypatch, tmp_path, bar_updates):
    trained = AnswerExtractor.from_pretrained(trained_dir, precision="fp32", device="cpu").trained
    plan = StreamPlan(("joint",), chunk_size=2)
    chunk = [Example(f"q{k}", q, LONG_CONTEXT, None) for k, q in enumerate(QUESTIONS)]
    monkeypatch.setattr(defaults, "SLICE_WINDOWS", estimated_windows(len(LONG_CONTEXT), trained.features), raising=False)
    predict_to_files(trained, chunk, plan, tmp_path / "p.json")
    stream = tmp_path / "p.answers.jsonl"
    whole = stream.read_bytes()
    stream.write_bytes(b"".join(whole.splitlines(keepends=True)[:3]))  # the first chunk whole, a line of the second
    predict_to_files(trained, chunk, plan, tmp_path / "p.json", resume=True, progress=True)
    assert stream.read_bytes() == whole
    assert [n for desc, n in bar_updates if desc == "questions"] == [2, 1, 1, 1]  # the answered chunk, then each slice
