"""A question longer than the model reads (its ``max_query_length``): answered as its first tokens, as training cut its
questions, and said once a call at every answering door, naming the question and its length."""

import json
import warnings

import pytest

from bio_mrc.cli import main
from bio_mrc.inference import AnswerExtractor
from bio_mrc.inference.long_questions import LongQuestionWarning

from .conftest import untrained_model_folder

CONTEXT = "Isaac Newton formulated the laws of motion."
ASKED = "who formulated the laws of motion ? "  # 7 tokens of the tiny vocabulary, one a word or mark
LONG = ASKED * 300  # 2,100 tokens
CUT = "who formulated the laws of motion ? who formulated the laws of"  # its first 12 tokens, counted by hand
TWELVE = " ".join(["newton"] * 12)
ONE_LINE = ("the question has 2,100 tokens, more than the 12 the model reads (its max_query_length): it is answered as "
            "its first 12 tokens, as the model's training questions were cut")


@pytest.fixture(scope="module")
def model_dir(tiny_encoder_dir, tmp_path_factory):
    return untrained_model_folder(tiny_encoder_dir, tmp_path_factory.mktemp("model"), max_seq_length=48, doc_stride=16,
                                  max_query_length=12)


@pytest.fixture(scope="module")
def extractor(model_dir):
    return AnswerExtractor.from_pretrained(model_dir, precision="fp32", device="cpu")


def said(call) -> tuple[object, list[str]]:
    """What ``call()`` returns and the long-question warnings it gives, each seen (none swallowed by a filter)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, [str(w.message) for w in caught if issubclass(w.category, LongQuestionWarning)]


def test_a_long_question_is_answered_as_its_first_tokens_and_said(extractor):
    answer, lines = said(lambda: extractor(LONG, CONTEXT))
    assert answer == extractor(CUT, CONTEXT)
    assert lines == [ONE_LINE]


def test_a_question_of_exactly_the_tokens_the_model_reads_is_not_said(extractor):
    assert said(lambda: extractor(TWELVE, CONTEXT))[1] == []
    assert said(lambda: extractor(TWELVE + " newton", CONTEXT))[1] == [
        "the question has 13 tokens, more than the 12 the model reads (its max_query_length): it is answered as its "
        "first 12 tokens, as the model's training questions were cut"]


def test_a_batch_names_each_long_question_by_its_input_in_one_line(extractor):
    answers, lines = said(lambda: extractor(["who?", LONG, "who?", TWELVE + " newton"], CONTEXT))
    assert answers[1].spans == extractor(CUT, CONTEXT).spans  # the ids are the inputs' places
    assert lines == ["2 questions have more tokens than the 12 the model reads (its max_query_length): input 1 (2,100 "
                     "tokens), input 3 (13 tokens); each is answered as its first 12 tokens, as the model's training "
                     "questions were cut"]


def test_one_long_question_over_many_documents_is_said_once(extractor, monkeypatch):
    monkeypatch.setattr(extractor, "chunk_size", 7)  # several chunks of documents
    documents = [CONTEXT, "Newton was English."] * 25
    ranked, lines = said(lambda: extractor(LONG, documents, top_k=3))
    assert ranked.answers == extractor(CUT, documents, top_k=3).answers
    assert lines == [ONE_LINE]


@pytest.mark.parametrize("contexts", [CONTEXT, [CONTEXT, CONTEXT]])
def test_the_warning_names_the_line_that_asked(extractor, contexts):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        extractor(LONG, contexts)
    assert [w.filename for w in caught if issubclass(w.category, LongQuestionWarning)] == [__file__]


def test_the_pipeline_says_it_as_the_extractor_does(model_dir, extractor):
    import bio_mrc  # noqa: F401  (registers the task)
    from transformers import pipeline

    qa = pipeline("bio-mrc-qa", model=str(model_dir), device="cpu")
    answer, lines = said(lambda: qa(question=LONG, context=CONTEXT))
    assert answer == qa(question=CUT, context=CONTEXT)
    assert lines == [ONE_LINE]


def test_extract_on_the_command_line_says_it_in_one_warning_line(model_dir, capsys):
    def extract(question: str) -> tuple[dict, str]:
        assert main(["extract", "--model", str(model_dir), "--question", question, "--context", CONTEXT,
                     "--device", "cpu"]) == 0
        out, err = capsys.readouterr()
        return json.loads(out), err

    answer, err = extract(LONG)
    cut, _ = extract(CUT)
    assert {k: v for k, v in answer.items() if k != "id"} == {k: v for k, v in cut.items() if k != "id"}
    assert [line for line in err.splitlines() if line.startswith("warning:")] == ["warning: " + ONE_LINE]


def test_predict_names_the_long_questions_by_their_ids(model_dir, tmp_path, capsys):
    data = tmp_path / "questions.jsonl"
    data.write_text("".join(json.dumps({"id": qid, "question": q, "context": CONTEXT}) + "\n"
                            for qid, q in (("short", "who?"), ("long", LONG), ("cut", CUT))), encoding="utf-8")
    assert main(["predict", "--model", str(model_dir), "--data", str(data), "--output", str(tmp_path / "preds.json"),
                 "--device", "cpu"]) == 0
    err = capsys.readouterr().err
    predictions = json.loads((tmp_path / "preds.json").read_text(encoding="utf-8"))
    assert predictions["long"] == predictions["cut"]
    assert [line for line in err.splitlines() if line.startswith("warning:")] == [
        "warning: question 'long' has 2,100 tokens, more than the 12 the model reads (its max_query_length): it is "
        "answered as its first 12 tokens, as the model's training questions were cut"]
