"""A question longer than the model reads (its ``max_query_length``): answered as its first tokens, as training cut its
questions, and said once a call at every answering door, naming the question and its length."""

import json
import warnings

import pytest

from bio_mrc.cli import main
from bio_mrc.inference import AnswerExtractor
from bio_mrc.inference.long_questions import LongQuestionWarning
from bio_mrc.types import Example

from .test_serve import operator_lines  # noqa: F401  (a fixture)

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


# --- the data files of training, tuning and comparing: one note a file ---------------------------------------------

LABELLED = [("short", "who formulated the laws?"), ("long", LONG), ("thirteen", TWELVE + " newton")]
FILE_NOTE = ("2 questions of {} have more tokens than the 12 the model reads (its max_query_length), each read as its "
             "first 12 tokens: 'long' (2,100 tokens), 'thirteen' (13 tokens)")


def labelled_file(folder) -> object:
    """A JSON Lines file of ``LABELLED``, each answered "Isaac Newton"."""
    data = folder / "questions.jsonl"
    data.write_text("".join(json.dumps({"id": qid, "question": q, "context": CONTEXT,
                                        "answers": {"text": ["Isaac Newton"], "answer_start": [0]}}) + "\n"
                            for qid, q in LABELLED), encoding="utf-8")
    return data


def notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("note:") and "max_query_length" in line]


def test_training_says_its_long_questions_in_one_note_from_the_windows_cut_or_cached(tiny_encoder_dir, tmp_path, capsys,
                                                                                      monkeypatch):
    from bio_mrc.features import windows as windows_module
    from bio_mrc.features.long_questions import LongQuestionsNote
    from bio_mrc.training.train import TrainConfig, train_model

    from .conftest import WINDOW_ARGS

    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "cache")  # a windows cache of its own, empty
    cut = []  # the questions the windows were cut for: none counted again past the cut
    pair_windows = windows_module.pair_windows
    monkeypatch.setattr(windows_module, "pair_windows", lambda tokenizer, questions, *rest: cut.append(len(questions))
                        or pair_windows(tokenizer, questions, *rest))
    monkeypatch.setattr("bio_mrc.features.windows.question_token_counts", lambda *a: pytest.fail("tokenized again"))
    data = labelled_file(tmp_path)
    assert main(["train", "--train", str(data), "--output-dir", str(tmp_path / "cli"), "--encoder", str(tiny_encoder_dir),
                 "--epochs", "1", "--device", "cpu", "--precision", "fp32", *WINDOW_ARGS]) == 0
    assert notes(capsys.readouterr().err) == ["note: " + FILE_NOTE.format(data)]
    assert sum(cut) == len(LABELLED)

    cut.clear()  # the same windows again, read from the cache: the note still said
    config = TrainConfig(encoder=str(tiny_encoder_dir), max_seq_length=48, doc_stride=16, max_query_length=12, epochs=1,
                         precision="fp32")
    examples = [Example(qid, q, CONTEXT, (((0, 12),),)) for qid, q in LABELLED]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train_model(examples, config, tmp_path / "library")
    said = [w for w in caught if issubclass(w.category, LongQuestionsNote)]
    assert [str(w.message) for w in said] == [FILE_NOTE.format("the training questions")]
    assert said[0].filename == __file__
    assert sum(cut) <= 1  # the cache's check of its last question alone


def test_a_model_reading_a_named_file_says_its_long_questions_once(extractor):
    from bio_mrc.features.long_questions import LongQuestionsNote

    examples = [Example(qid, q, CONTEXT, None) for qid, q in LABELLED]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        named = extractor.trained.windows(examples, data_name="dev.json")
        unnamed = extractor.trained.windows(examples)  # the answering doors say it their own way
    assert [str(w.message) for w in caught if issubclass(w.category, LongQuestionsNote)] == [FILE_NOTE.format("dev.json")]
    assert (named.start_logits == unnamed.start_logits).all()


def test_one_long_question_is_said_as_one(extractor):
    from bio_mrc.features.long_questions import LongQuestionsNote

    examples = [Example("short", "who?", CONTEXT, None)] + [Example(f"q{n}", LONG, CONTEXT, None) for n in range(5)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        extractor.trained.windows(examples[:2], data_name="one.json")
        extractor.trained.windows(examples, data_name="five.json")
    assert [str(w.message) for w in caught if issubclass(w.category, LongQuestionsNote)] == [
        "1 question of one.json has more tokens than the 12 the model reads (its max_query_length), each read as its "
        "first 12 tokens: 'q0' (2,100 tokens)",
        "5 questions of five.json have more tokens than the 12 the model reads (its max_query_length), each read as its "
        "first 12 tokens: 'q0' (2,100 tokens), 'q1' (2,100 tokens), 'q2' (2,100 tokens) and 2 more"]


def test_tune_says_the_long_questions_of_its_file(model_dir, tmp_path, capsys):
    import shutil

    model = tmp_path / "model"
    shutil.copytree(model_dir, model)
    data = labelled_file(tmp_path)
    assert main(["tune", "--model", str(model), "--data", str(data), "--no-calibration", "--device", "cpu"]) == 0
    assert notes(capsys.readouterr().err) == ["note: " + FILE_NOTE.format(data)]


def test_a_comparison_scores_a_split_saying_its_long_questions_by_its_description(extractor):
    from bio_mrc.features.long_questions import LongQuestionsNote
    from bio_mrc.harness.comparison_splits import Split
    from bio_mrc.harness.scoring import timed_windows

    split = Split([Example(qid, q, CONTEXT, (((0, 12),),)) for qid, q in LABELLED], "squad-v1.1", "dev.json (first 3)")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        timed_windows(extractor.trained, split, False)
    assert [str(w.message) for w in caught if issubclass(w.category, LongQuestionsNote)] == [
        FILE_NOTE.format("dev.json (first 3)")]


# --- serve: each answer says whether its question was cut; the operator's log, once a minute -----------------------

def test_serve_tells_the_client_which_questions_were_cut_and_logs_once_a_minute(extractor, operator_lines):
    from fastapi.testclient import TestClient

    from bio_mrc.serving.app import create_app

    long = ASKED * 3  # 21 tokens, within the server's characters a question
    with warnings.catch_warnings(record=True) as caught, TestClient(create_app(extractor)) as client:
        warnings.simplefilter("always")
        batch = client.post("/answer", json={"question": [long, "who?", TWELVE, TWELVE + " newton"], "context": CONTEXT})
        documents = client.post("/answer", json={"question": long, "context": [CONTEXT, CONTEXT]})
        short = client.post("/answer", json={"question": "who?", "context": [CONTEXT, CONTEXT]})
    assert [result["question_cut"] for result in batch.json()["results"]] == [True, False, False, True]
    assert [result["question_cut"] for result in documents.json()["results"]] == [True]
    assert [result["question_cut"] for result in short.json()["results"]] == [False]
    assert batch.json()["results"][0]["spans"] == client_free_answer(extractor, CUT)
    assert [w for w in caught if issubclass(w.category, LongQuestionWarning)] == []  # the client is told, not the log per question
    assert operator_lines == [
        "a request asked 2 questions of more tokens than the 12 the model reads (its max_query_length): each was "
        "answered as its first 12 tokens, its answer marked question_cut"]


def client_free_answer(extractor, question: str) -> list[dict]:
    """The spans the extractor answers ``question`` with, as the server writes them."""
    from bio_mrc.serving.app import answer_of

    return [span.model_dump() for span in answer_of(extractor(question, CONTEXT), None).spans]


# --- a long-lived process: what is remembered of the warnings said stays bounded ----------------------------------------

def test_a_long_lived_process_remembers_a_bounded_number_of_the_warnings_said(extractor, monkeypatch):
    """Python's default filter keeps every distinct text said at a line in the calling module's ``__warningregistry__``
    for the life of the process, and these texts name counts and positions: a process answering long questions for days
    held one entry a call. Each caller's file keeps the last ``WARNED_TEXTS`` texts said in it, and a text among them
    said again at its line is shown once, as Python's default filter shows it."""
    from bio_mrc.features import long_questions

    monkeypatch.setattr(long_questions, "WARNED_TEXTS", 3)
    questions = [TWELVE + " newton" * n for n in range(1, 11)]  # 13 to 22 tokens: ten distinct lines
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for question in [*questions, *questions[-2:]]:  # the last two again: among the last three said
            extractor(question, CONTEXT)
        module_said = [key for key in globals().get("__warningregistry__", {}) if key != "version"]
        remembered = [key for key in long_questions.warned_at(__file__) if key != "version"]
    assert [key for key in module_said if key[1] is LongQuestionWarning] == []
    assert [text for text, _, _ in remembered] == [str(w.message) for w in caught][-3:]
    assert [str(w.message) for w in caught if issubclass(w.category, LongQuestionWarning)] == [
        f"the question has {n} tokens, more than the 12 the model reads (its max_query_length): it is answered as its "
        "first 12 tokens, as the model's training questions were cut" for n in range(13, 23)]
    assert {w.filename for w in caught} == {__file__}


def test_a_warning_said_at_a_script_of_python_c_reads_no_source_of_it():
    """A caller whose module has no source a loader gives (``python -c``: ``__main__``, loaded by the built-in importer)
    is warned as ``warnings.warn`` warns it; reading its line's source through that loader raised ``ImportError``."""
    from importlib.machinery import BuiltinImporter

    from bio_mrc.features.long_questions import warn_at_caller

    script = {"__name__": "__main__", "__loader__": BuiltinImporter, "warn_at_caller": warn_at_caller}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile("warn_at_caller(UserWarning('said'))", "<string>", "exec"), script)
    assert [(str(w.message), w.filename, w.lineno) for w in caught] == [("said", "<string>", 1)]
