"""Odd arguments and requests at the answering doors: refused before any work, or answered with exact offsets."""

import json
import math

import pytest

from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.errors import ConfigError
from bio_mrc.inference import AnswerExtractor, TrainedModel

QUESTION = "Who formulated the laws of motion?"
CONTEXT = "Isaac Newton formulated the laws of motion."
DOCUMENTS = ["Isaac Newton formulated the laws.", "Newton was English."]
LONG_WORDS = "zzzqqq xxxyyyww qqqzzz"  # every word several word pieces long


@pytest.fixture(scope="module")
def extractor(trained_dir):
    return AnswerExtractor.from_pretrained(trained_dir, precision="fp32", device="cpu")


@pytest.fixture(scope="module")
def qa(trained_dir):
    import bio_mrc  # noqa: F401  (registers the task)
    from transformers import pipeline

    return pipeline("bio-mrc-qa", model=str(trained_dir), device="cpu")


@pytest.fixture
def no_forward_pass(extractor, monkeypatch):
    """Any forward pass of ``extractor``'s model fails the test: what is refused must be refused before it."""
    def forbidden(*_args, **_kwargs):
        raise AssertionError("a forward pass ran")

    monkeypatch.setattr(extractor.trained, "windows", forbidden)


@pytest.mark.parametrize("top_k", [0, False])
def test_top_k_of_no_answers_over_several_documents_is_refused(extractor, no_forward_pass, top_k):
    with pytest.raises(ConfigError, match="top_k is a positive number of answers"):
        extractor(QUESTION, DOCUMENTS, top_k=top_k)


@pytest.mark.parametrize("batch_size", [-1, 0, 2.5, True, "8"])
def test_a_batch_size_that_is_no_positive_count_is_refused(extractor, batch_size):
    with pytest.raises(ConfigError, match="batch_size is a positive number of windows"):
        AnswerExtractor(extractor.trained, batch_size=batch_size)


@pytest.mark.parametrize("batch_size", [-1, 0, 2.5, True])
def test_a_batch_size_of_no_windows_is_refused_by_trained_model_windows(extractor, monkeypatch, batch_size):
    # -1 ran no window and blamed the model for the -inf padding left ("a damaged model"), 0 ran the default silently
    def forbidden(*_args, **_kwargs):
        raise AssertionError("a window was cut")

    monkeypatch.setattr("bio_mrc.inference.loading.predict_windows", forbidden)
    examples, _ = extractor.examples(QUESTION, CONTEXT)
    with pytest.raises(ConfigError, match=f"batch_size is a positive number of windows a forward pass, got {batch_size!r}"):
        extractor.trained.windows(examples, batch_size=batch_size)


@pytest.mark.parametrize("model, options, error, words", [
    # pathlib's "argument should be a str object or an os.PathLike object", naming no argument
    (b"model", {}, TypeError, r"TrainedModel.load takes a model folder or a hub id \(a str or a Path\), got a bytes"),
    (None, {}, TypeError, r"TrainedModel.load takes a model folder or a hub id .*got a NoneType"),
    # each character was read as a decoding: "decoding must be one of [...], got 's'"
    ("MODEL", dict(decodings="span"), ConfigError, r"decodings is a list of decoding names, got the string 'span': give \['span'\]"),
    ("MODEL", dict(backend="ONNX"), ConfigError, r"backend must be one of \('auto', 'torch', 'onnx'\), got 'ONNX'"),  # a ValueError
])
def test_trained_model_load_refuses_arguments_of_the_wrong_kind_before_reading_a_file(trained_dir, monkeypatch, model,
                                                                                       options, error, words):
    def forbidden(*_args, **_kwargs):
        raise AssertionError("a file was read")

    monkeypatch.setattr("bio_mrc.inference.loading.local_folder", forbidden)
    with pytest.raises(error, match=words):
        TrainedModel.load(trained_dir if model == "MODEL" else model, **options)


@pytest.mark.parametrize("options, words", [
    (dict(min_span_probability=-1.0), "min_span_probability"),
    (dict(min_span_probability=math.nan), "min_span_probability"),
    (dict(min_span_probability="0.5"), "min_span_probability"),
    (dict(multi_span="yes"), "multi_span is true or false"),
    (dict(progress="yes"), "progress is true or false, got 'yes'"),
])
def test_extractor_options_out_of_range_are_refused_when_it_is_made(extractor, options, words):
    with pytest.raises(ConfigError, match=words):
        AnswerExtractor(extractor.trained, **options)
    with pytest.raises(TypeError, match="decode_config is a DecodeConfig, got a dict"):
        AnswerExtractor(extractor.trained, decode_config={"n_best": 3})


@pytest.mark.parametrize("options, words", [
    (dict(multi_span="no"), "multi_span is true or false, got 'no'"),
    (dict(require_answer=1), "require_answer is true or false, got 1"),
])
def test_per_call_flags_that_are_no_booleans_are_refused_before_the_forward_pass(extractor, no_forward_pass, options, words):
    with pytest.raises(ConfigError, match=words):
        extractor(QUESTION, CONTEXT, **options)
    with pytest.raises(ConfigError, match=words):
        extractor(QUESTION, DOCUMENTS, **options)  # over documents too, before any work


def test_numpy_bools_are_taken_as_the_flags_they_hold(extractor, qa):
    import numpy as np

    assert AnswerExtractor(extractor.trained, multi_span=np.True_).multi_span is True
    assert extractor(QUESTION, CONTEXT, multi_span=np.True_, require_answer=np.False_) == \
        extractor(QUESTION, CONTEXT, multi_span=True, require_answer=False)
    assert qa(question=QUESTION, context=CONTEXT, multi_span=np.True_, handle_impossible_answer=np.False_) == \
        qa(question=QUESTION, context=CONTEXT, multi_span=True, handle_impossible_answer=False)

@pytest.mark.parametrize("options, words", [
    (dict(top_k=True), "top_k is a positive number of answers, got True"),
    (dict(max_answer_len=True), "max_answer_len must be a positive integer, got True"),
    (dict(multi_span="yes"), "multi_span is true or false"),
    (dict(multi_span=0), "multi_span is true or false"),
    (dict(handle_impossible_answer="no"), "handle_impossible_answer is true or false"),
    (dict(batch_size=-1), "batch_size is a positive number of windows"),
    (dict(batch_size=0), "batch_size is a positive number of windows"),
])
def test_pipeline_options_of_the_wrong_kind_are_refused_before_the_forward_pass(qa, monkeypatch, options, words):
    monkeypatch.setattr(qa.extractor.trained, "windows", lambda *a, **k: pytest.fail("a forward pass ran"))
    with pytest.raises(ValueError, match=words):
        qa(question=QUESTION, context=CONTEXT, **options)


def test_a_pipeline_made_with_a_batch_size_of_no_windows_is_refused(trained_dir):
    from transformers import pipeline

    with pytest.raises(ValueError, match="batch_size is a positive number of windows a forward pass, got -1"):
        pipeline("bio-mrc-qa", model=str(trained_dir), device="cpu", batch_size=-1)


@pytest.mark.parametrize("decoding", ["joint", "auto"])
@pytest.mark.parametrize("multi_span", [False, True])
def test_words_longer_than_max_answer_length_are_still_answered(extractor, qa, decoding, multi_span):
    # Joint spans are whole words; none of these fits in 2 tokens, so the longest allowed would be none at all.
    config = DecodeConfig(max_answer_length=2)
    answer = AnswerExtractor(extractor.trained, decoding=decoding, multi_span=multi_span, decode_config=config)
    prediction = answer(QUESTION, LONG_WORDS)
    assert prediction.spans and math.isfinite(prediction.no_answer_score)
    assert all(LONG_WORDS[s.start:s.end] == s.text and s.text in LONG_WORDS.split() for s in prediction.spans)
    result = qa(question=QUESTION, context=LONG_WORDS, decoding=decoding, multi_span=multi_span, max_answer_len=2)
    spans = result["spans"] if multi_span else [result]
    assert [(r["answer"], r["start"], r["end"]) for r in spans] == [(s.text, s.start, s.end) for s in prediction.spans]


def test_spans_within_max_answer_length_are_unchanged_where_some_word_fits(extractor):
    context = "zzzqqq xxxyyyww qqqzzz was Newton"  # "was" and "Newton" fit in 2 tokens
    prediction = AnswerExtractor(extractor.trained, decoding="joint", decode_config=DecodeConfig(max_answer_length=2))(
        QUESTION, context, top_k=5)
    assert prediction.spans and all(s.text in ("was", "Newton") for s in prediction.spans)


# --- the server's strict JSON read, whatever the body's encoding -----------------------------------------------

DUPLICATE = '{"question": "Who?", "context": "Newton.", "question": "What?"}'


@pytest.mark.parametrize("encoding, status, words", [
    ("utf-8-sig", 400, 'the key "question" appears twice'),
    ("utf-16", 400, "not UTF-8 JSON"),
    ("utf-32", 400, "not UTF-8 JSON"),
    ("utf-16-le", 422, "not valid JSON"),
])
def test_a_body_in_another_encoding_is_not_read_past_the_strict_checks(extractor, encoding, status, words):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from bio_mrc.serving.app import create_app

    with TestClient(create_app(extractor), raise_server_exceptions=False) as client:
        response = client.post("/answer", content=DUPLICATE.encode(encoding), headers={"content-type": "application/json"})
        with_bom = client.post("/answer", content=json.dumps({"question": QUESTION, "context": CONTEXT}).encode("utf-8-sig"),
                               headers={"content-type": "application/json"})
    assert response.status_code == status and words in response.json()["detail"], response.text
    assert with_bom.status_code == 200  # a byte-order mark alone is no reason to refuse


def test_a_json_body_under_two_content_types_is_read_strictly(extractor):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from bio_mrc.serving.app import create_app

    headers = [("content-type", "application/json"), ("content-type", "text/plain")]
    with TestClient(create_app(extractor), raise_server_exceptions=False) as client:
        response = client.post("/answer", content=DUPLICATE.encode(), headers=headers)
    assert response.status_code == 400 and "appears twice" in response.json()["detail"], response.text


@pytest.mark.parametrize("names, words", [("ab", "names is a list of document names"), (["one"], "got 1 document name for 2 documents")])
def test_document_names_that_do_not_name_each_document_are_refused_before_the_forward_pass(extractor, no_forward_pass, names, words):
    with pytest.raises(ConfigError, match=words):
        extractor(QUESTION, DOCUMENTS, names=names)


@pytest.mark.parametrize("decoding", [5, "spans", ""])
def test_a_decoding_that_is_no_registered_name_is_refused_as_such(extractor, no_forward_pass, decoding):
    with pytest.raises(ConfigError, match=r"decoding must be one of \['auto', 'span', 'bio', 'joint'"):
        extractor(QUESTION, CONTEXT, decoding=decoding)


@pytest.mark.parametrize("body, status", [
    ({"question": ["Who?", "What?", "When?"], "context": ["Newton.", "Newton."]}, 422),  # no one field's problem
    ('{"question": "Who?", "context": "Newton.", "question": "What?"}', 400),  # refused by the strict reader
])
def test_every_refusal_lists_its_problem(extractor, body, status):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from bio_mrc.serving.app import create_app

    content = body if isinstance(body, str) else json.dumps(body)
    with TestClient(create_app(extractor), raise_server_exceptions=False) as client:
        response = client.post("/answer", content=content.encode(), headers={"content-type": "application/json"})
    refusal = response.json()
    assert response.status_code == status and refusal["problems"] == [{"location": "body", "message": refusal["detail"]}]


@pytest.mark.parametrize("names, words", [
    ({"a.txt", "b.txt"}, "names is a list of document names, one a document, got a set"),  # no order: names mixed up
    ({"a.txt": 0, "b.txt": 1}, "got a dict"),
    (5, "got an int"),
    ((name for name in ["a.txt", "b.txt"]), "got a generator"),  # read twice: empty the second time
    ([1, "b.txt"], r"names\[0\] is an int, not a string"),
    ([b"a.txt", "b.txt"], r"names\[0\] is a bytes"),
    (["a.txt", "\ud800.txt"], r"names\[1\] holds U\+D800"),
])
def test_document_names_of_no_order_or_no_text_are_refused_before_the_forward_pass(extractor, no_forward_pass, names, words):
    with pytest.raises(ConfigError, match=words):
        extractor(QUESTION, DOCUMENTS, names=names)


def test_document_names_given_as_a_tuple_name_their_documents(extractor):
    ranked = extractor(QUESTION, DOCUMENTS, top_k=2, names=("a.txt", None))
    assert ranked.names == ["a.txt", None]
    assert len(ranked.answers) == 2 and all(answer.name == ranked.names[answer.document] for answer in ranked.answers)


def test_names_without_a_list_of_documents_are_refused_not_dropped(extractor, no_forward_pass):
    with pytest.raises(ConfigError, match="names name the documents of one question asked of a list of them"):
        extractor(QUESTION, CONTEXT, names=["a.txt"])


@pytest.mark.parametrize("call", [
    lambda e: e(QUESTION, DOCUMENTS, require_answer=False),
    lambda e: e.answer_documents(QUESTION, DOCUMENTS, require_answer=False),
    lambda e: e(QUESTION, CONTEXT, require_answer=False),  # one document, one span: nothing for it to change
])
def test_require_answer_off_where_single_spans_answer_is_refused_not_ignored(extractor, no_forward_pass, call):
    # it leaves a multi-span BIO answer without spans where the tags are all O; a single span never read it
    with pytest.raises(ConfigError, match=r"^require_answer=False changes only multi_span answers"):
        call(extractor)


@pytest.mark.parametrize("multi_span", [False, True])
@pytest.mark.parametrize("call", [
    lambda e: e(QUESTION, CONTEXT, multi_span=False),
    lambda e: e(QUESTION, DOCUMENTS, multi_span=False),
    lambda e: e.answer_documents(QUESTION, DOCUMENTS, multi_span=False),
])
def test_require_answer_off_in_the_extractors_decode_config_is_refused_where_single_spans_answer(
    extractor, no_forward_pass, call, multi_span,
):
    """Held by the extractor's DecodeConfig rather than asked by the call, it was dropped unread by single spans."""
    configured = AnswerExtractor(extractor.trained, multi_span=multi_span, decode_config=DecodeConfig(require_answer=False))
    with pytest.raises(ConfigError, match=r"^require_answer=False changes only multi_span answers"):
        call(configured)


def test_require_answer_asked_by_the_call_overrides_the_extractors_for_single_spans(extractor):
    configured = AnswerExtractor(extractor.trained, decode_config=DecodeConfig(require_answer=False))
    assert configured(QUESTION, CONTEXT, require_answer=True).spans
    assert configured(QUESTION, DOCUMENTS, require_answer=True).answers


def test_require_answer_on_over_several_documents_still_answers(extractor):
    assert extractor(QUESTION, DOCUMENTS, require_answer=True).answers


def test_answer_documents_refuses_a_text_as_its_documents(extractor, no_forward_pass):
    from bio_mrc.errors import DataFormatError

    with pytest.raises(DataFormatError, match="one question \\(a string\\) of a list of documents, got a str and a str"):
        extractor.answer_documents(QUESTION, CONTEXT)  # not one document a character


def test_answer_documents_takes_top_k_none_as_the_call_does(extractor):
    # None was compared with n_best after the forward pass: a TypeError naming no argument
    ranked = extractor.answer_documents(QUESTION, DOCUMENTS, top_k=None)
    assert len(ranked.answers) == 1 and ranked.answers == extractor(QUESTION, DOCUMENTS, top_k=None).answers


def test_align_to_words_keeps_each_spans_own_probability():
    from bio_mrc.inference.pipeline import span_probabilities, word_aligned
    from bio_mrc.types import AnswerSpan, Prediction

    context = "Norse raiders from Denmark"
    prediction = Prediction("0", [AnswerSpan("orse", 1, 5, 2.0, 0.3), AnswerSpan("Denmark", 19, 26, 0.3, 0.4)], -1.0)
    aligned = word_aligned(prediction, context)
    assert [(s.text, s.score, s.probability) for s in aligned.spans] == [("Norse", 2.0, 0.3), ("Denmark", 0.3, 0.4)]
    assert span_probabilities(aligned, "bio", True) == [0.3, 0.4]  # the pipeline's multi-span scores: probabilities
