"""transformers' pipeline("bio-mrc-qa"): the old QA pipeline's call shape, AnswerExtractor's answers."""

import pytest

from bio_mrc.inference import AnswerExtractor, TrainedModel
from bio_mrc.inference.abstention import NeverAbstainsWarning
from bio_mrc.inference.pipeline import TASK
from .conftest import untrained_model_folder


CONTEXT = "Isaac Newton formulated the laws of motion and universal gravitation in 1687."
QUESTIONS = ["Who formulated the laws of motion?", "When were the laws published?"]
LONG = " ".join(["The Normans were famed for their martial spirit."] * 8)  # several 48-token windows


@pytest.fixture(scope="module")
def qa(trained_dir):  # noqa: F811
    from transformers import pipeline

    return pipeline(TASK, model=str(trained_dir), device="cpu")


@pytest.fixture(scope="module")
def extractor(qa):
    """AnswerExtractor on the very model and tokenizer the pipeline holds."""
    return AnswerExtractor(qa.extractor.trained)


def assert_substring(result, context):
    assert set(result) >= {"score", "start", "end", "answer"}
    assert context[result["start"]: result["end"]] == result["answer"]
    assert 0.0 <= result["score"] <= 1.0


@pytest.mark.slow
def test_importing_bio_mrc_stays_light_and_the_task_is_registered_by_the_inference_layer():
    import subprocess
    import sys

    code = ("import sys, bio_mrc; assert 'transformers' not in sys.modules; "
            "from transformers.pipelines import PIPELINE_REGISTRY; assert 'bio-mrc-qa' not in PIPELINE_REGISTRY.supported_tasks; "
            "assert bio_mrc.register_pipeline() == 'bio-mrc-qa'; assert 'bio-mrc-qa' in PIPELINE_REGISTRY.get_supported_tasks()")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_pipeline_runs_a_trained_model_with_its_saved_windows(qa, trained_dir):  # noqa: F811
    from bio_mrc.inference.pipeline import BioMrcQuestionAnsweringPipeline

    assert isinstance(qa, BioMrcQuestionAnsweringPipeline)
    assert qa.device.type == "cpu" and next(qa.model.parameters()).device.type == "cpu"
    assert qa.extractor.trained.features == TrainedModel.load(trained_dir).features
    assert qa.extractor.trained.model is qa.model


@pytest.mark.parametrize("decoding", ["span", "bio", "joint"])
def test_single_and_batched_calls_answer_as_the_extractor_does(qa, extractor, decoding):
    one = qa(question=QUESTIONS[0], context=CONTEXT, decoding=decoding)
    assert isinstance(one, dict)
    assert_substring(one, CONTEXT)
    expected = extractor(QUESTIONS[0], CONTEXT, decoding=decoding).spans[0]
    assert (one["answer"], one["start"], one["end"]) == (expected.text, expected.start, expected.end)

    many = qa(question=QUESTIONS, context=[CONTEXT, CONTEXT], decoding=decoding, batch_size=1)
    as_dicts = qa([{"question": q, "context": CONTEXT} for q in QUESTIONS], decoding=decoding)
    positional = qa(QUESTIONS[0], CONTEXT, decoding=decoding)
    assert many == as_dicts and len(many) == 2 and many[0] == one == positional
    assert qa([]) == qa(question=[], context=[]) == extractor([], []) == []
    for result, prediction in zip(many, extractor(QUESTIONS, CONTEXT, decoding=decoding)):
        assert_substring(result, CONTEXT)
        assert result["answer"] == prediction.answer


def test_without_batch_size_the_pipeline_takes_the_models_own_for_its_device(qa, monkeypatch):
    """A pipeline on a GPU ran 16 windows a forward pass (the CPU's), not the 128 of a model on a GPU: its extractor is
    made before transformers moves the model, so the batch size is asked of the model where it is when it runs."""
    from bio_mrc.inference.loading import TrainedModel

    monkeypatch.setattr(TrainedModel, "batch_size", property(lambda self: 7))  # as TrainedModel says for a model on a GPU
    sizes = []
    windows = TrainedModel.windows
    monkeypatch.setattr(TrainedModel, "windows", lambda self, examples, batch_size=None, progress=False, **options:
                        sizes.append(batch_size) or windows(self, examples, batch_size, progress, **options))
    qa(question="Who?", context="Bob went home.")
    qa(question="Who?", context="Bob went home.", batch_size=3)
    assert sizes == [7, 3]


@pytest.mark.parametrize("decoding", ["span", "bio", "joint"])
def test_a_list_of_questions_is_answered_a_chunk_at_a_time_as_in_one(trained_dir, monkeypatch, decoding):  # noqa: F811
    from transformers import pipeline

    from .test_extract import CHUNKED_QUESTIONS, assert_same_answers, windows_asked

    qa = pipeline(TASK, model=str(trained_dir), device="cpu", precision="fp32")
    inputs = [{"question": q, "context": c} for q, c in CHUNKED_QUESTIONS]
    whole = [qa(inputs, decoding=decoding, multi_span=multi_span) for multi_span in (False, True)]
    whole_top = qa(inputs, decoding=decoding, top_k=2)
    asked, calls = windows_asked(monkeypatch, qa.extractor.trained), qa.call_count
    monkeypatch.setattr(qa.extractor, "chunk_size", 2)
    assert_same_answers([qa(inputs, decoding=decoding, multi_span=multi_span) for multi_span in (False, True)], whole)
    assert_same_answers(qa(inputs, decoding=decoding, top_k=2), whole_top)
    assert asked == [2, 2, 2, 1] * 3 and qa.call_count == calls + 3  # 7 questions: three chunks of 2, then 1; a call counts once


class _CountedBackend:
    """A tokenizer's backend that records each text (or pair) of ``encode_batch`` holding ``text``, and passes every
    call and attribute on."""

    def __init__(self, backend, text: str, seen: list):
        object.__setattr__(self, "_backend", backend)
        object.__setattr__(self, "_seen", (text, seen))

    def encode_batch(self, inputs, *args, **kwargs):
        text, seen = self._seen
        seen.extend(item for item in inputs if text in (item if isinstance(item, str) else "".join(item)))
        return self._backend.encode_batch(inputs, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def __setattr__(self, name, value):
        setattr(self._backend, name, value)


def tokenized_with(monkeypatch, tokenizer, text: str) -> list:
    """Each text or pair holding ``text`` that ``tokenizer``'s backend encodes from now on."""
    seen, backend = [], tokenizer.backend_tokenizer
    monkeypatch.setattr(tokenizer, "_tokenizer", _CountedBackend(backend, text, seen))
    return seen


def test_a_context_the_slices_of_a_call_share_is_tokenized_once(trained_dir, monkeypatch):  # noqa: F811
    """Each slice of a call (a long context's questions, a few at a time) tokenized the shared context again: a call
    keeps it tokenized alone across its slices, as the extractor does, with the same answers."""
    from transformers import pipeline

    from bio_mrc.features.config import estimated_windows
    from bio_mrc.inference import defaults

    qa = pipeline(TASK, model=str(trained_dir), device="cpu", precision="fp32")
    extractor = AnswerExtractor(qa.extractor.trained)
    questions = [*QUESTIONS, "What were the Normans famed for?"]
    inputs = [{"question": q, "context": LONG} for q in questions]
    whole = [qa(question=questions, context=LONG, top_k=2), list(qa(iter(inputs), batch_size=1))]
    monkeypatch.setattr(defaults, "SLICE_WINDOWS", estimated_windows(len(LONG), qa.extractor.trained.features))
    assert len(list(qa.extractor.slices(extractor.asked(questions, LONG)[0]))) == 3  # a question a slice
    seen = tokenized_with(monkeypatch, qa.tokenizer, LONG)
    assert qa(question=questions, context=LONG, top_k=2) == whole[0]
    assert seen == [LONG]  # once for the call's three slices, not once a slice
    assert list(qa(iter(inputs), batch_size=1)) == whole[1]  # a stream's chunks of one question each
    assert seen == [LONG] * 2
    expected = extractor(questions, LONG, top_k=2)
    assert [[(a["answer"], a["start"], a["end"]) for a in r] for r in whole[0]] == [
        [(s.text, s.start, s.end) for s in p.spans] for p in expected]
    assert seen == [LONG] * 3
    documents = [LONG, LONG + " Rollo.", LONG]
    by_extractor = len(seen), extractor(questions[0], documents, top_k=3)
    by_pipeline = len(seen), qa(question=questions[0], context=documents, top_k=3)
    assert [(a["answer"], a["start"], a["end"], a["document"]) for a in by_pipeline[1]] == [
        (a.text, a.start, a.end, a.document) for a in by_extractor[1].answers]
    assert len(seen) - by_pipeline[0] == by_pipeline[0] - by_extractor[0]  # the documents tokenized as the extractor does


def test_top_k_gives_the_n_best_with_their_softmax_probabilities(qa, extractor):
    three = qa(question=QUESTIONS[0], context=CONTEXT, top_k=3, decoding="span")
    assert isinstance(three, list) and len(three) == 3
    for result in three:
        assert_substring(result, CONTEXT)
    scores = [r["score"] for r in three]
    assert scores == sorted(scores, reverse=True) and sum(scores) <= 1.0 + 1e-9
    assert three[0] == qa(question=QUESTIONS[0], context=CONTEXT, decoding="span")
    # the n-best softmax of the extractor's own span scores (s_i + e_j)
    examples, _ = extractor.examples(QUESTIONS[0], CONTEXT)
    (prediction,) = extractor.predict(extractor.trained.windows(examples), examples, decoding="span")
    import numpy as np

    raw = np.array([s.score for s in prediction.spans])
    assert scores == pytest.approx((np.exp(raw - raw.max()) / np.exp(raw - raw.max()).sum())[:3].tolist())
    batched = qa(question=QUESTIONS, context=CONTEXT, top_k=2)
    assert [len(r) for r in batched] == [2, 2]


@pytest.mark.parametrize("decoding", ["span", "bio", "joint"])
def test_the_best_answers_score_is_the_raw_confidence_calibration_starts_from(qa, extractor, decoding):
    from bio_mrc.inference.calibrators import raw_confidence

    examples, _ = extractor.examples(QUESTIONS, CONTEXT)
    predictions = extractor.predict(extractor.trained.windows(examples), examples, decoding=decoding)
    results = qa(question=QUESTIONS, context=CONTEXT, decoding=decoding)
    assert [r["score"] for r in results] == pytest.approx(raw_confidence(predictions).tolist())


def test_max_answer_len_bounds_the_answers(qa):
    results = qa(question=QUESTIONS[0], context=CONTEXT, top_k=5, max_answer_len=1, decoding="span")
    tokenizer = qa.tokenizer
    assert len(results) == 5  # the context has more than five one-token spans
    for result in results:
        assert_substring(result, CONTEXT)
        assert len(tokenizer(result["answer"], add_special_tokens=False)["input_ids"]) == 1


@pytest.mark.parametrize("decoding", ["bio", "span", "joint"])
def test_multi_span_on_a_long_context_equals_the_extractor(qa, extractor, decoding):
    result = qa(question="What were the Normans famed for?", context=LONG, multi_span=True, decoding=decoding)
    expected = extractor("What were the Normans famed for?", LONG, multi_span=True, decoding=decoding)
    assert [(s["answer"], s["start"], s["end"]) for s in result["spans"]] == [(s.text, s.start, s.end) for s in expected.spans]
    for span in result["spans"]:
        assert_substring(span, LONG)
    assert {k: result[k] for k in ("score", "start", "end", "answer")} == result["spans"][0]
    # each span's score is its own probability (bio: its posterior; span and joint: its n-best share)
    assert [s["score"] for s in result["spans"]] == pytest.approx([s.probability for s in expected.spans])
    assert all(0.0 <= s["score"] <= 1.0 for s in result["spans"])


def test_handle_impossible_answer_follows_the_saved_threshold(qa, extractor):
    config = qa.model.config
    saved = config.no_answer_thresholds
    try:
        config.no_answer_thresholds = {"joint": float("-inf")}  # "always abstain" for the joint decoding
        assert extractor(QUESTIONS[0], CONTEXT, decoding="joint").abstain
        empty = qa(question=QUESTIONS[0], context=CONTEXT, decoding="joint", handle_impossible_answer=True)
        assert (empty["answer"], empty["start"], empty["end"]) == ("", 0, 0) and 0.0 <= empty["score"] <= 1.0
        listed = qa(question=QUESTIONS[0], context=CONTEXT, decoding="joint", handle_impossible_answer=True, top_k=2)
        assert listed[0] == empty and listed[1]["answer"]  # "no answer" first, then the best span
        multi = qa(question=QUESTIONS[0], context=CONTEXT, decoding="joint", handle_impossible_answer=True, multi_span=True)
        assert multi["answer"] == "" and multi["spans"] == []
        assert qa(question=QUESTIONS[0], context=CONTEXT, decoding="joint")["answer"]  # without it: the best span
        with pytest.warns(NeverAbstainsWarning, match="no tuned no-answer threshold for span"):
            assert qa(question=QUESTIONS[0], context=CONTEXT, decoding="span", handle_impossible_answer=True)["answer"]
        config.no_answer_thresholds = {}  # no threshold saved: never abstains
        with pytest.warns(NeverAbstainsWarning, match="no tuned no-answer threshold for joint"):
            assert qa(question=QUESTIONS[0], context=CONTEXT, decoding="joint", handle_impossible_answer=True)["answer"]
    finally:
        config.no_answer_thresholds = saved


def test_handle_impossible_answer_without_a_threshold_warns_once_a_call_at_the_callers_line(qa, trained_dir):  # noqa: F811
    """The warning came twice a call (once more for each chunk of a stream), from the pipeline's own lines."""
    import warnings

    from transformers import pipeline

    from bio_mrc.inference.abstention import NeverAbstainsWarning

    assert not qa.model.config.no_answer_thresholds
    defaulted = pipeline(TASK, model=str(trained_dir), device="cpu", handle_impossible_answer=True)
    calls = [lambda: qa(question=QUESTIONS[0], context=CONTEXT, handle_impossible_answer=True),
             lambda: qa(question=QUESTIONS, context=CONTEXT, handle_impossible_answer=True),
             lambda: list(qa(({"question": q, "context": CONTEXT} for q in QUESTIONS * 2), handle_impossible_answer=True,
                             batch_size=1)),
             lambda: defaulted(question=QUESTIONS[0], context=CONTEXT)]
    for call in calls:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        never = [w for w in caught if issubclass(w.category, NeverAbstainsWarning)]
        assert len(never) == 1 and never[0].filename == __file__, [(w.filename, w.lineno) for w in never]


def test_handle_impossible_answer_given_to_the_constructor_warns_once(trained_dir):  # noqa: F811
    """A standing default warned at every call; a call that asks for it still warns each time."""
    import warnings

    from transformers import pipeline

    from bio_mrc.inference.abstention import NeverAbstainsWarning

    defaulted = pipeline(TASK, model=str(trained_dir), device="cpu", handle_impossible_answer=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        defaulted(question=QUESTIONS[0], context=CONTEXT)
        defaulted(question=QUESTIONS, context=CONTEXT)
        list(defaulted(({"question": q, "context": CONTEXT} for q in QUESTIONS), batch_size=1))
        defaulted(question=QUESTIONS[0], context=CONTEXT, handle_impossible_answer=True)
    never = [w for w in caught if issubclass(w.category, NeverAbstainsWarning)]
    assert [w.filename for w in never] == [__file__, __file__], [(w.filename, w.lineno) for w in never]


def test_an_abstention_carries_its_probability_and_a_span_given_in_its_place_none(qa, extractor):
    config = qa.model.config
    saved = config.no_answer_thresholds, config.calibration
    beta = {"method": "beta", "a": 1.0, "b": 0.0, "c": 0.0, "correct_if": "f1 > 0.5", "questions": 100}
    try:
        config.no_answer_thresholds = {"joint": float("-inf")}
        config.calibration = {"joint": {**beta, "no_answer_threshold": float("-inf")}}
        abstention = extractor(QUESTIONS[0], CONTEXT, decoding="joint")
        assert abstention.abstain and abstention.probability is not None
        empty = qa(question=QUESTIONS[0], context=CONTEXT, decoding="joint", handle_impossible_answer=True)
        assert empty["answer"] == "" and empty["probability"] == pytest.approx(abstention.probability)
        listed = qa(question=QUESTIONS[0], context=CONTEXT, decoding="joint", handle_impossible_answer=True, top_k=2)
        assert listed[0]["probability"] == pytest.approx(abstention.probability) and "probability" not in listed[1]
        # the abstention's probability is not the span's: a span given in its place has none
        forced = qa(question=QUESTIONS[0], context=CONTEXT, decoding="joint")
        assert forced["answer"] and "probability" not in forced
        multi = qa(question=QUESTIONS[0], context=CONTEXT, decoding="joint", multi_span=True)
        assert multi["answer"] and "probability" not in multi
    finally:
        config.no_answer_thresholds, config.calibration = saved


def test_options_given_to_the_constructor_are_defaults(trained_dir, extractor):  # noqa: F811
    from transformers import pipeline

    bio = pipeline(TASK, model=str(trained_dir), device="cpu", decoding="bio", multi_span=True, batch_size=2)
    result = bio(question="What were the Normans famed for?", context=LONG)
    expected = extractor("What were the Normans famed for?", LONG, multi_span=True, decoding="bio")
    assert [s["answer"] for s in result["spans"]] == expected.answers


def test_bad_calls_are_refused_before_the_forward_pass(qa):
    from bio_mrc.errors import DataFormatError

    with pytest.raises(DataFormatError, match=r"empty or missing context \(record 'input 0'\)"):
        qa(question="Who?", context="   ")
    with pytest.raises(DataFormatError, match="2 questions but 3 contexts"):
        qa(question=["a?", "b?"], context=["x", "y", "z"])
    with pytest.raises(DataFormatError, match=r"empty or missing question \(record 'input 1'\)"):
        qa([{"question": "a?", "context": "x"}, {"context": "y"}])
    with pytest.raises(DataFormatError, match="give question= and context="):
        qa(question="Who?")
    with pytest.raises(ValueError, match="decoding must be one of"):
        qa(question="Who?", context="Newton.", decoding="crf")
    with pytest.raises(ValueError, match="pick one"):
        qa(question="Who?", context="Newton.", top_k=2, multi_span=True)
    with pytest.raises(ValueError, match="top_k is a positive number of answers"):
        qa(question="Who?", context="Newton.", top_k=0)
    with pytest.raises(ValueError, match="windows it was trained with"):
        qa(question="Who?", context="Newton.", doc_stride=64)
    with pytest.raises(ValueError, match="topk is transformers 4's spelling of top_k"):
        qa(question="Who?", context="Newton.", topk=2)



@pytest.mark.parametrize("question, context, options", [
    ("", "Newton.", {}),
    ("Who?", "\x00\x01\u200b", {}),
    ("Who\ud800?", "Newton.", {}),
    ("Who?", "New\udc00ton.", {}),
    (b"Who?", "Newton.", {}),
    ("Who?", 5, {}),
    (["a?", "b?"], ["x", "y", "z"], {}),
    ("Who?", [], {}),
    ("Who?", "Newton.", dict(top_k=0)),
    ("Who?", "Newton.", dict(top_k=True)),
    ("Who?", "Newton.", dict(top_k=2, multi_span=True)),
    ("Who?", "Newton.", dict(multi_span="no")),
    ("Who?", ["Newton.", "Leibniz."], dict(multi_span=True, top_k=0)),
    ("Who?", "Newton.", dict(decoding="crf")),
])
def test_the_pipeline_refuses_a_bad_input_with_the_extractors_own_error_and_line(qa, extractor, question, context, options):
    """The pipeline said ``top_k must be a positive integer, got 0`` and ``multi_span must be true or false`` where
    AnswerExtractor says ``top_k is a positive number of answers`` and ``multi_span is true or false``."""
    from bio_mrc.errors import BioMrcError

    with pytest.raises(BioMrcError) as by_extractor:
        extractor(question, context, **options)
    with pytest.raises(BioMrcError) as by_pipeline:
        qa(question=question, context=context, **options)
    assert type(by_pipeline.value) is type(by_extractor.value)
    assert str(by_pipeline.value) == str(by_extractor.value) and "\n" not in str(by_pipeline.value)
    assert by_pipeline.value.__cause__ is None and by_pipeline.value.__context__ is None


def test_bad_options_are_the_packages_own_errors(qa):
    """Every error a user's input can cause is a BioMrcError (ConfigError is still a ValueError); these options
    of the pipeline raised a bare ValueError."""
    from bio_mrc.errors import ConfigError

    bad = [dict(top_k=2, multi_span=True), dict(top_k=0), dict(max_answer_len=2.5), dict(multi_span="no"),
           dict(doc_stride=64), dict(context=["Newton.", "Leibniz."], multi_span=True, top_k=0)]
    for options in bad:
        with pytest.raises(ConfigError):
            qa(**{"question": "Who?", "context": "Newton.", **options})

def test_a_model_that_answers_no_questions_is_refused(tiny_encoder_dir, tiny_tokenizer):
    from transformers import BertModel

    from bio_mrc.errors import ModelFormatError
    from bio_mrc.inference import BioMrcQuestionAnsweringPipeline

    with pytest.raises(ModelFormatError, match="runs bio_mrc models and transformers' extractive QA models, got a BertModel"):
        BioMrcQuestionAnsweringPipeline(BertModel.from_pretrained(str(tiny_encoder_dir)), tiny_tokenizer)


def test_a_saved_pipeline_loads_again_without_remote_code(qa, tmp_path):
    from transformers import pipeline

    qa.save_pretrained(tmp_path)
    again = pipeline(TASK, model=str(tmp_path), device="cpu")
    assert again(question=QUESTIONS[0], context=CONTEXT) == qa(question=QUESTIONS[0], context=CONTEXT)


def test_datasets_key_datasets_and_generators_stream_the_answers_a_list_gets(qa):
    from datasets import Dataset
    from transformers.pipelines.pt_utils import KeyDataset

    rows = [{"id": str(i), "question": q, "context": CONTEXT} for i, q in enumerate(QUESTIONS * 3)]
    expected = qa([{"question": r["question"], "context": r["context"]} for r in rows], decoding="span")
    dataset = Dataset.from_list(rows)
    nested = Dataset.from_list([{"qa": {"question": r["question"], "context": r["context"]}} for r in rows])
    for inputs in (dataset, KeyDataset(nested, "qa"), (row for row in rows)):
        results = qa(inputs, decoding="span", batch_size=4)
        assert not isinstance(results, list)  # an iterator, as transformers pipelines give for these inputs
        assert list(results) == expected
    with pytest.raises(TypeError, match="unknown"):
        qa(dataset, no_such_option=1)  # refused at the call, not at the first answer



def test_align_to_words_leaves_no_overlapping_parts_of_a_multi_span_answer():
    """Widened, "Ice" and "land and Norway" both start at "Iceland": two overlapping parts of one answer."""
    from bio_mrc.inference.pipeline import word_aligned
    from bio_mrc.types import AnswerSpan, Prediction

    context = "from Denmark, Iceland and Norway"
    parts = Prediction("q", [AnswerSpan("Ice", 14, 17, 0.5, 0.5), AnswerSpan("land and Norway", 17, 32, 0.3, 0.3),
                             AnswerSpan("Denmark", 5, 12, 0.2, 0.2)])
    widened = word_aligned(parts, context, multi_span=True)
    assert [(s.text, s.start, s.end) for s in widened.spans] == [("Iceland", 14, 21), ("Denmark", 5, 12)]
    alternatives = word_aligned(parts, context)  # alternative single answers may overlap, as before
    assert [s.text for s in alternatives.spans] == ["Iceland", "Iceland and Norway", "Denmark"]

def test_align_to_words_keeps_combining_marks_and_reads_each_han_character_as_a_word():
    """A vowel sign, a haraka or a decomposed accent belongs to its word; Han and kana are written without spaces,
    so widening "北京" over letters would take the whole clause, where the tokenizer reads a word a character."""
    import unicodedata

    from bio_mrc.inference.pipeline import word_aligned
    from bio_mrc.types import AnswerSpan, Prediction

    hindi, han = "भारत की राजधानी है।", "北京是中华人民共和国的首都，位于华北平原。"
    french, arabic = unicodedata.normalize("NFD", "du café Pâquerette"), "القَاهِرَة هِيَ"
    cases = [(hindi, 8, 14, "राजधानी"), (hindi, 9, 15, "राजधानी"), (han, 0, 2, "北京"), (han, 18, 20, "平原"),
             ("東京タワーは", 2, 4, "タワ"), (french, 3, 6, "cafe\u0301"), (arabic, 0, 3, "القَاهِرَة"), ("Voßkuhle", 1, 3, "Voßkuhle")]
    for context, start, end, expected in cases:
        widened = word_aligned(Prediction("q", [AnswerSpan(context[start:end], start, end, 1.0)]), context).spans[0]
        assert (widened.text, context[widened.start:widened.end]) == (expected, expected)


def reference_one_word(left, right):
    """Whether two neighbouring characters are of one word, as ``align_to_words`` reads them."""
    from bio_mrc.inference.pipeline import _own_word, _word_character

    return not (_own_word(left) or _own_word(right)) and _word_character(left) and _word_character(right)


def reference_word_aligned(prediction, context, multi_span):
    """``align_to_words`` as its rule reads: each part widened character by character and trimmed (an empty part
    stays empty), then checked against every part kept."""
    from dataclasses import replace

    from bio_mrc.answer_text import trimmed_span

    spans = []
    for span in prediction.spans:
        start, end = span.start, span.end
        while start < end and start > 0 and reference_one_word(context[start - 1], context[start]):
            start -= 1
        while start < end < len(context) and reference_one_word(context[end - 1], context[end]):
            end += 1
        start, end = trimmed_span(context, start, end)
        if multi_span and any(start < kept.end and kept.start < end for kept in spans):
            continue
        if all((start, end) != (kept.start, kept.end) for kept in spans):
            spans.append(replace(span, text=context[start:end], start=start, end=end))
    return replace(prediction, spans=spans)


@pytest.mark.parametrize("multi_span", [False, True])
def test_align_to_words_keeps_the_parts_a_check_against_every_kept_part_keeps(multi_span):
    """Random parts, empty ones and pieces of one word among them, over words, marks, Han and blanks: the same
    parts, texts, offsets, scores and probabilities as checking each against every part kept before it."""
    import random

    from bio_mrc.inference.pipeline import word_aligned
    from bio_mrc.types import AnswerSpan, Prediction

    rng = random.Random(7)
    pieces = ["Ada", "Lovelace", " ", "  ", ", ", "1843", "北京", "cafe\u0301", " \u0301", "\u200b", "-", "ok"]
    for _ in range(400):
        context = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        spans = []
        for _ in range(rng.randint(0, 12)):
            start = rng.randint(0, len(context) - 1)
            end = rng.randint(start, min(len(context), start + 6))
            spans.append(AnswerSpan(context[start:end], start, end, rng.random(), rng.choice([None, rng.random()])))
        prediction = Prediction("q", spans)
        assert word_aligned(prediction, context, multi_span) == reference_word_aligned(prediction, context, multi_span)


def test_align_to_words_reads_each_part_of_a_long_answer_a_few_times():
    """A long document's multi-span answer of thousands of parts: each part's offsets are read a bounded number of
    times, not once for every part kept before it."""
    from dataclasses import dataclass

    from bio_mrc.inference.pipeline import word_aligned
    from bio_mrc.types import AnswerSpan, Prediction

    reads = []

    @dataclass(frozen=True)
    class CountedSpan(AnswerSpan):
        def __getattribute__(self, name):
            if name in ("start", "end"):
                reads.append(name)
            return object.__getattribute__(self, name)

    parts = 600
    context = " ".join(f"w{i}" for i in range(parts))  # "w0 w1 w2 ...": a part a word, none overlapping
    starts = [i for i, character in enumerate(context) if character == "w"]
    spans = [CountedSpan(context[s:s + 2], s, s + 2, 1.0, 0.9) for s in reversed(starts)]  # the later words first
    for multi_span in (True, False):
        reads.clear()
        widened = word_aligned(Prediction("q", spans), context, multi_span)
        assert [(s.start, s.end) for s in widened.spans] == [(s, context.index(" ", s) if " " in context[s:] else len(context))
                                                             for s in reversed(starts)]
        assert len(reads) <= 4 * parts  # a check against every kept part read 2 × 600 × 599 / 2


@pytest.mark.parametrize("multi_span", [False, True])
def test_align_to_words_keeps_an_empty_span_empty(multi_span):
    """An empty span at the end of the context raised IndexError; one inside a word, or at its start (read against
    the context's last character), became the whole word."""
    from bio_mrc.inference.pipeline import word_aligned
    from bio_mrc.types import AnswerSpan, Prediction

    context = "Ada wrote it"
    for start in (12, 0, 1, 3, 6):
        widened = word_aligned(Prediction("q", [AnswerSpan("", start, start, 1.0)]), context, multi_span).spans
        assert [(s.text, s.start, s.end) for s in widened] == [("", start, start)]
    assert word_aligned(Prediction("q", [AnswerSpan("", 0, 0, 1.0)]), "", multi_span).spans[0].end == 0


def test_align_to_words_finds_each_position_s_word_edges_as_the_character_walk_does():
    """Random contexts of letters, scripts written without spaces, combining marks, digits, blanks and punctuation,
    asked in random order: every position's word is the one walking character by character finds."""
    import random

    from bio_mrc.inference.pipeline import _WordRuns

    rng = random.Random(11)
    characters = list("Aaz\u00e9\u00df09\u0663\u00b2 \u00a0\n\u200b,.-_'\u0301\u093e\u064e")
    characters += ["\u0915", "\u0628", "\u5317", "\u3042", "\u30ab", "\uff76", "\U0001f600", "\u200d", "\uf900"]
    for _ in range(300):
        context = "".join(rng.choice(characters) for _ in range(rng.randint(1, 40)))
        runs, positions = _WordRuns(context), list(range(len(context)))
        rng.shuffle(positions)
        for at in positions:
            start, end = at, at + 1
            while start > 0 and reference_one_word(context[start - 1], context[start]):
                start -= 1
            while end < len(context) and reference_one_word(context[end - 1], context[end]):
                end += 1
            assert runs.run(at) == (start, end), (context, at)


@pytest.mark.parametrize("multi_span", [False, True])
def test_align_to_words_reads_a_long_word_once_for_all_its_parts(multi_span):
    """100 parts inside one 10,000-letter word (a DNA sequence): the word's characters are read once, not once a part
    (100 × 2 × 10,000 reads)."""
    from bio_mrc.inference.pipeline import word_aligned
    from bio_mrc.types import AnswerSpan, Prediction

    reads = []

    class CountedText(str):
        def __getitem__(self, key):
            if isinstance(key, int):
                reads.append(key)
            return str.__getitem__(self, key)

    context = CountedText("see " + "ACGT" * 2500 + " end")
    spans = [AnswerSpan(context[s:s + 3], s, s + 3, 1.0 - k / 100) for k, s in enumerate(range(5, 10_005, 100))]
    widened = word_aligned(Prediction("q", spans), context, multi_span).spans
    assert [(s.start, s.end, s.score) for s in widened] == [(4, 10_004, 1.0)]
    assert len(reads) <= 2 * len(context)


@pytest.mark.parametrize("multi_span", [False, True])
def test_align_to_words_never_widens_a_span_over_a_mark_on_a_space(multi_span):
    """" \\u0301" is one blank user-perceived character (a mark on a space): widening "da" took its mark as a letter
    of "Ada", an answer beginning with half of a blank character."""
    from bio_mrc.inference.pipeline import word_aligned
    from bio_mrc.types import AnswerSpan, Prediction

    context = "x \u0301Ada wrote \u0301\u0301it"
    spans = [AnswerSpan("da", 4, 6, 1.0, 0.5), AnswerSpan("t", 16, 17, 0.5, 0.2)]
    widened = word_aligned(Prediction("q", spans), context, multi_span).spans
    assert [(s.text, s.start, s.end) for s in widened] == [("Ada", 3, 6), ("it", 15, 17)]


def test_align_to_words_widens_a_span_to_whole_words(qa):
    from bio_mrc.inference.pipeline import word_aligned
    from bio_mrc.types import AnswerSpan, Prediction

    context = "Ada Lovelace wrote, in 1843."
    widened = word_aligned(Prediction("q", [AnswerSpan("Lovel", 4, 9, 1.0), AnswerSpan("ace wro", 9, 16, 0.5),
                                            AnswerSpan("ovelace", 5, 12, 0.2), AnswerSpan(", in", 18, 22, 0.1)]), context)
    assert [(s.text, s.start, s.end) for s in widened.spans] == [("Lovelace", 4, 12), ("Lovelace wrote", 4, 18), (", in", 18, 22)]
    for align in (True, False):  # accepted, as transformers' question-answering pipeline accepts it
        answers = qa(question=QUESTIONS[0], context=CONTEXT, top_k=5, decoding="span", align_to_words=align)
        assert len(answers) == 5
        for answer in answers:
            assert_substring(answer, CONTEXT)
            if align:
                assert not (answer["start"] > 0 and CONTEXT[answer["start"] - 1].isalnum() and CONTEXT[answer["start"]].isalnum())
    with pytest.raises(ValueError, match="align_to_words"):
        qa(question=QUESTIONS[0], context=CONTEXT, align_to_words="yes")


def test_loading_the_pipeline_shows_no_bar_and_keeps_the_callers_setting(trained_dir, capfd):  # noqa: F811
    """transformers' "Loading weights" bar was printed by every ``pipeline("bio-mrc-qa", ...)``; library calls are
    quiet, and the caller's own setting for later calls is left as it was (on, then off)."""
    import transformers.utils.logging as transformers_logging
    from transformers import pipeline

    before = transformers_logging.is_progress_bar_enabled()
    try:
        for enabled in (True, False):
            transformers_logging.enable_progress_bar() if enabled else transformers_logging.disable_progress_bar()
            capfd.readouterr()
            pipeline(TASK, model=str(trained_dir), device="cpu")
            assert "Loading weights" not in capfd.readouterr().err
            assert transformers_logging.is_progress_bar_enabled() is enabled
    finally:
        transformers_logging.enable_progress_bar() if before else transformers_logging.disable_progress_bar()


def test_dtype_is_the_precision_and_a_half_precision_folder_answers(trained_dir, tmp_path):  # noqa: F811
    """A folder saved in float16 loaded in float16 (transformers' dtype "auto") and every call failed with torch's
    ``mixed dtype (CPU)``; ``dtype=torch.bfloat16`` put bf16 weights under any precision. The weights are fp32 as
    every loader keeps them, ``dtype`` names the precision, and float16, which bio_mrc does not compute in, is refused."""
    import shutil

    import torch
    from transformers import pipeline

    from bio_mrc.errors import ConfigError
    from bio_mrc.model import BioMrcForQuestionAnswering

    halved = tmp_path / "fp16"
    shutil.copytree(trained_dir, halved)
    BioMrcForQuestionAnswering.from_pretrained(str(trained_dir)).to(torch.float16).save_pretrained(str(halved))
    qa = pipeline(TASK, model=str(halved), device="cpu", precision="fp32")
    assert {p.dtype for p in qa.model.parameters()} == {torch.float32}
    expected = AnswerExtractor(TrainedModel.load(halved, precision="fp32", device="cpu"))(QUESTIONS[0], CONTEXT).spans[0]
    answer = qa(question=QUESTIONS[0], context=CONTEXT)
    assert (answer["answer"], answer["start"], answer["end"]) == (expected.text, expected.start, expected.end)
    assert pipeline(TASK, model=str(trained_dir), device="cpu", dtype=torch.bfloat16).extractor.trained.precision == "bf16"
    assert pipeline(TASK, model=str(trained_dir), device="cpu", dtype="float32").extractor.trained.precision == "fp32"
    with pytest.raises(ConfigError, match="torch.float16"):
        pipeline(TASK, model=str(trained_dir), device="cpu", dtype=torch.float16)
    with pytest.raises(ConfigError, match="give one of them"):
        pipeline(TASK, model=str(trained_dir), device="cpu", dtype=torch.bfloat16, precision="fp32")


def test_a_dtype_that_names_no_torch_dtype_is_refused_in_one_line(tiny_encoder_dir, tmp_path):
    """A list or a dict as ``dtype`` was looked up as a key of the precisions: TypeError: unhashable type: 'list'."""
    from transformers import pipeline

    from bio_mrc.errors import ConfigError

    folder = untrained_model_folder(tiny_encoder_dir, tmp_path / "model", max_seq_length=48, doc_stride=16, max_query_length=12)
    for dtype, shown in ((["float32"], r"\['float32'\]"), ({"dtype": "float32"}, r"\{'dtype': 'float32'\}")):
        with pytest.raises(ConfigError, match=rf"^dtype {shown}: a bio_mrc model answers in torch.float32 or torch.bfloat16 "):
            pipeline(TASK, model=str(folder), device="cpu", dtype=dtype)


def test_a_streamed_input_is_named_by_its_place_in_the_stream(qa):
    """A stream is answered ``batch_size`` questions at a time, and a bad record was named by its place in its
    chunk: the fifth of a generator (input 4) read ``input 0`` with ``batch_size=2``."""
    from bio_mrc.errors import DataFormatError

    items = [{"question": QUESTIONS[0], "context": CONTEXT} for _ in range(6)]
    for bad, message in (({"question": QUESTIONS[0], "context": "  "}, "record 'input 4'"), ("text", "input 4 is not")):
        items[4] = bad
        with pytest.raises(DataFormatError, match=message):
            list(qa(iter(items), batch_size=2))
    assert list(qa(iter(items[:3]), batch_size=2)) == [qa(question=QUESTIONS[0], context=CONTEXT)] * 3


def test_a_count_held_as_a_numpy_integer_is_a_count(qa, extractor):
    """``top_k=np.int64(2)`` (a count read from an array) was refused as ``top_k must be a positive integer, got
    np.int64(2)`` by the pipeline and the extractor alike; it is the count 2, as transformers' pipelines take it."""
    import numpy as np

    from bio_mrc.errors import ConfigError

    options = dict(question=QUESTIONS[0], context=CONTEXT, decoding="span")
    assert qa(**options, top_k=np.int64(2), max_answer_len=np.int32(30), batch_size=np.int64(4)) == qa(**options, top_k=2)
    assert len(extractor(QUESTIONS[0], CONTEXT, top_k=np.int64(2), decoding="span").spans) == 2
    assert len(extractor(QUESTIONS[0], [CONTEXT, CONTEXT], top_k=np.int16(3)).answers) == 3
    sized = AnswerExtractor(extractor.trained, batch_size=np.int64(2)).batch_size
    assert sized == 2 and type(sized) is int
    for wrong in (np.float64(2.0), True, np.bool_(True)):
        with pytest.raises(ConfigError, match="top_k"):
            extractor(QUESTIONS[0], CONTEXT, top_k=wrong)


def test_an_option_inside_an_input_dict_is_refused_not_ignored(qa):
    """``{"question", "context", "top_k": 3}`` answered with one span: the dict is read for its question and
    context alone, so an option there was dropped unread. A data set's other columns (id, title, answers) pass."""
    from bio_mrc.errors import DataFormatError

    asked = {"question": QUESTIONS[0], "context": CONTEXT}
    with pytest.raises(DataFormatError, match=r"^input 0 holds 'top_k', an option of the call, not of one input: pass it "
                                              r"as a keyword argument, qa\(\.\.\., top_k=\.\.\.\) \(record 'input 0'\)$"):
        qa({**asked, "top_k": 3})
    for option, value in (("multi_span", True), ("decoding", "span"), ("max_answer_len", 3), ("handle_impossible_answer", True),
                          ("align_to_words", True), ("doc_stride", 16), ("batch_size", 2)):
        with pytest.raises(DataFormatError, match=f"input 1 holds '{option}'.*keyword argument"):
            qa([asked, {**asked, option: value}])
        with pytest.raises(DataFormatError, match=f"input 4 holds '{option}'"):
            list(qa(iter([asked] * 4 + [{**asked, option: value}]), batch_size=2))
    columns = {"id": "q1", "title": "Newton", "answers": {"text": ["Isaac Newton"], "answer_start": [0]}}
    assert qa({**asked, **columns}) == qa(**asked)


@pytest.mark.parametrize("key", ["question", "context"])
def test_an_input_dict_without_its_question_or_context_gets_the_line_of_a_list_without_one(qa, key):
    """``{"question": ...}`` alone, or its context under a misspelt key, said ``the context is a string or a list of
    strings; got a NoneType``, where the same dict in a list says the text is missing and names the input."""
    from bio_mrc.errors import DataFormatError

    asked = {"question": QUESTIONS[0], "context": CONTEXT}
    missing = {name: value for name, value in asked.items() if name != key}
    line = rf"^empty or missing {key} \(record 'input 0'\)$"
    with pytest.raises(DataFormatError, match=line):
        qa([missing])
    for given in (missing, {**missing, key[:3] + key[4:]: asked[key]}, {**asked, key: None}):
        with pytest.raises(DataFormatError, match=line):
            qa(given)
    with pytest.raises(DataFormatError, match=r"^empty or missing context \(record 'input 2'\)$"):
        list(qa(iter([asked, asked, {"question": QUESTIONS[0]}]), batch_size=2))


def _not_a_model(kind: str, tmp_path, trained_dir, encoder_dir) -> str:  # noqa: F811
    """A path a user may give as a model that holds none: ``kind`` says which."""
    import shutil

    if kind == "missing":
        return "./no/such-model"
    if kind == "file":
        (tmp_path / "questions.csv").write_text("question,context\n", encoding="utf-8")
        return str(tmp_path / "questions.csv")
    folder = tmp_path / kind
    folder.mkdir()
    if kind == "no weights":
        shutil.copy(trained_dir / "config.json", folder)
    if kind == "bare encoder":
        shutil.copytree(encoder_dir, folder, dirs_exist_ok=True)
    return str(folder)


@pytest.mark.parametrize("kind", ["missing", "file", "empty folder", "no weights", "bare encoder"])
def test_a_path_that_holds_no_model_is_the_line_every_door_gives(kind, tmp_path, trained_dir, tiny_encoder_dir, capfd):  # noqa: F811
    """The pipeline handed such a path to transformers, which raised its own OSError or ValueError (a repository id
    that is not one, a config that is not JSON, a list of classes that could not load it) or, for an encoder, read its
    weights, printed its load report and named tensors the config implies; every other door refuses it in one line."""
    from transformers import pipeline

    from bio_mrc.errors import ModelFormatError

    model = _not_a_model(kind, tmp_path, trained_dir, tiny_encoder_dir)
    with pytest.raises(ModelFormatError) as expected:
        TrainedModel.load(model)
    capfd.readouterr()
    with pytest.raises(ModelFormatError) as got:
        pipeline(TASK, model=model, device="cpu")
    assert str(got.value) == str(expected.value)
    assert capfd.readouterr().err == ""  # nothing read: no load report


def test_num_workers_is_taken_as_every_transformers_pipeline_takes_it(qa):
    """``qa(dataset, batch_size=8, num_workers=2)``, as transformers' guides stream a data set, was refused:
    ``unknown bio-mrc-qa options: ['num_workers']``."""
    from bio_mrc.errors import ConfigError, DataFormatError

    rows = [{"question": q, "context": CONTEXT} for q in QUESTIONS]
    assert qa(question=QUESTIONS[0], context=CONTEXT, num_workers=0) == qa(question=QUESTIONS[0], context=CONTEXT)
    assert list(qa((row for row in rows), batch_size=1, num_workers=2)) == qa(rows)
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(ConfigError, match=f"num_workers is a number of processes, 0 or more, got {bad!r}"):
            qa(question=QUESTIONS[0], context=CONTEXT, num_workers=bad)
    with pytest.raises(DataFormatError, match="input 0 holds 'num_workers', an option of the call"):
        qa({"question": QUESTIONS[0], "context": CONTEXT, "num_workers": 2})


def test_local_files_only_given_to_a_call_is_refused_naming_the_constructor(qa):
    """``qa(..., local_files_only=True)`` answered as without it (the option reads the hub where the model loads), and
    a dict holding it was told to pass it as a keyword of the call, where it did nothing."""
    from bio_mrc.errors import ConfigError

    asked = {"question": QUESTIONS[0], "context": CONTEXT}
    line = (r"^local_files_only reads the Hugging Face cache alone where the model loads: give it to pipeline\(\"bio-mrc-qa\", "
            r"model=\.\.\., local_files_only=True\); a call reads no model files$")
    for given in ((), ([asked],), (iter([asked]),)):
        with pytest.raises(ConfigError, match=line):
            qa(*given, **({} if given else asked), local_files_only=True)
    assert qa({**asked, "local_files_only": True}) == qa(**asked)  # a data set's column of that name is no option


def test_input_dicts_given_one_after_another_are_answered_as_their_list(qa):
    """``qa(dict1, dict2)``, which the old pipeline answered as ``qa([dict1, dict2])``, was refused: ``the question is
    a string or a list of strings; got a dict``."""
    rows = [{"question": q, "context": CONTEXT} for q in QUESTIONS]
    assert qa(*rows) == qa(rows)
    assert qa(*rows, top_k=2) == qa(rows, top_k=2)


@pytest.mark.parametrize("options, line", [
    (dict(X={"question": "Who?", "context": "Newton."}), "X= is transformers 4's spelling of the inputs"),
    (dict(data=[{"question": "Who?", "context": "Newton."}]), "data= is transformers 4's spelling of the inputs"),
    (dict(question="Who?", context="Newton.", topk=2), r"topk is transformers 4's spelling of top_k, .*: give top_k=2"),
    (dict(question="Who?", context="Newton.", padding="longest"), "padding changes no answer"),
])
def test_the_old_pipelines_dropped_spellings_are_refused_naming_what_to_give(qa, options, line):
    """They were ``TypeError: unknown bio-mrc-qa options: ['X']``, which named nothing to give instead."""
    from bio_mrc.errors import ConfigError

    with pytest.raises(ConfigError, match=line) as refused:
        qa(**options)
    assert "\n" not in str(refused.value)


def _loader_never_called(monkeypatch):
    from bio_mrc.inference.pipeline import QuietModelLoader

    def refused(*args, **kwargs):
        raise AssertionError("the model was loaded before the keywords were checked")

    monkeypatch.setattr(QuietModelLoader, "from_pretrained", refused)


@pytest.mark.parametrize("keywords, error, line", [
    (dict(model_kwargs={"no_such_key": 1}), TypeError,
     r"^model_kwargs\['no_such_key'\]: the bio-mrc-qa pipeline loads a model with model_kwargs attn_implementation, "
     r"cache_dir, dtype and torch_dtype alone"),
    (dict(model_kwargs={"max_seq_length": 64}), TypeError, r"^model_kwargs\['max_seq_length'\]: .* its config.json"),
    (dict(model_kwargs={"revision": 5}), ValueError,
     r"^model_kwargs\['revision'\] is an option of pipeline\(\) itself: give pipeline\(\"bio-mrc-qa\", model=\.\.\., revision=\.\.\.\)"),
    (dict(model_kwargs={"trust_remote_code": True}), ValueError, r"^model_kwargs\['trust_remote_code'\] is an option of pipeline"),
    (dict(model_kwargs=["cache_dir"]), TypeError, r"^model_kwargs is a dict of the model's loading options, got a list"),
    (dict(model_kwargs={"torch_dtype": "float99"}), ValueError, r"^model_kwargs\['torch_dtype'\] float99: a bio_mrc model answers in"),
    (dict(model_kwargs={"dtype": "float99"}), ValueError, r"^model_kwargs\['dtype'\] float99: a bio_mrc model answers in"),
    (dict(model_kwargs={"dtype": ["float32"]}), ValueError, r"^model_kwargs\['dtype'\] \['float32'\]: a bio_mrc model"),
    (dict(model_kwargs={"torch_dtype": "float16"}), ValueError, r"^model_kwargs\['torch_dtype'\] float16: .*torch.bfloat16"),
    (dict(model_kwargs={"dtype": "float32", "torch_dtype": "bfloat16"}), ValueError,
     r"^model_kwargs\['dtype'\] and model_kwargs\['torch_dtype'\] both name the precision: give one of them$"),
    (dict(dtype="float32", model_kwargs={"dtype": "float32"}), ValueError,
     r"^dtype and model_kwargs\['dtype'\] both name the precision: give one of them$"),
    (dict(model_kwargs={"cache_dir": 5}), ValueError, r"^model_kwargs\['cache_dir'\] is a folder \(a str or a Path\), got 5$"),
    (dict(model_kwargs={"attn_implementation": 3}), ValueError,
     r"^model_kwargs\['attn_implementation'\] is the name of an attention kernel \(.*'sdpa'.*\), got 3$"),
    (dict(model_kwargs={"attn_implementation": "nope"}), ValueError, r"^model_kwargs\['attn_implementation'\] is the name of"),
    (dict(torch_dtype="float99"), ValueError, r"^torch_dtype float99: a bio_mrc model answers in torch.float32 or torch.bfloat16"),
    (dict(dtype="float99"), ValueError, r"^dtype float99: a bio_mrc model answers in"),
])
def test_bad_keywords_of_pipeline_are_refused_in_one_line_before_the_model_loads(trained_dir, monkeypatch, keywords, error,
                                                                                   line):  # noqa: F811
    """An unknown model_kwargs key (a config field or a loading option no bio_mrc model reads) was a ValueError of
    transformers' with a traceback for each loader, the ONNX one's misleading; pipeline()'s own keyword given in
    model_kwargs was ``got multiple values for keyword argument``; a dtype there was dropped unread (float99 too) or
    failed deep in torch (AttributeError) or transformers (IndexError)."""
    from transformers import pipeline

    _loader_never_called(monkeypatch)
    with pytest.raises(error, match=line) as refused:
        pipeline(TASK, model=str(trained_dir), device="cpu", **keywords)
    assert "\n" not in str(refused.value)


def test_the_model_kwargs_a_bio_mrc_model_reads_are_taken(trained_dir, tmp_path):  # noqa: F811
    """A dtype in model_kwargs names the precision, as ``dtype=`` does; the encoder's attention kernel and a cache
    folder pass on to the loader; a dict given stays as it was."""
    import torch
    from transformers import pipeline

    given = {"torch_dtype": torch.bfloat16, "attn_implementation": "eager", "cache_dir": tmp_path}
    qa = pipeline(TASK, model=str(trained_dir), device="cpu", model_kwargs=given)
    assert qa.extractor.trained.precision == "bf16" and qa.model.encoder.config._attn_implementation == "eager"
    assert {p.dtype for p in qa.model.parameters()} == {torch.float32}  # the weights stay fp32, as every loader keeps them
    assert given == {"torch_dtype": torch.bfloat16, "attn_implementation": "eager", "cache_dir": tmp_path}
    assert pipeline(TASK, model=str(trained_dir), device="cpu", model_kwargs={"dtype": "float32"}).extractor.trained.precision == "fp32"
