"""Questions to predict: no answers and no ids, in every form the package reads. An unlabelled question is
neither answerable nor unanswerable (``answers is None``), so such a file never turns into SQuAD 2.0; a
missing id is generated from the question's position and a hash of its text; gold is required only where
gold is needed, in one line naming the file and the record."""

import hashlib
import json

import pytest

from bio_mrc.data.squad import generated_id, load_squad, stream_squad
from bio_mrc.errors import DataFormatError

datasets = pytest.importorskip("datasets")
pd = pytest.importorskip("pandas")

PARIS = "Paris is the capital of France."
ROWS = [{"question": "Capital of?", "context": PARIS}, {"id": "mine", "question": "Which country?", "context": PARIS}]


def sha8(question, context):
    return hashlib.sha256(f"{question}\n{context}".encode()).hexdigest()[:8]


# The ids, computed by hand: position 1 has none (generated), position 2 keeps its own.
EXPECTED_IDS = [f"q1-{sha8('Capital of?', PARIS)}", "mine"]


def as_jsonl(tmp_path):
    path = tmp_path / "ask.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    return path


def as_squad_json(tmp_path):
    path = tmp_path / "ask.json"
    qas = [{k: v for k, v in row.items() if k != "context"} for row in ROWS]
    path.write_text(json.dumps({"data": [{"title": "Paris", "paragraphs": [{"context": PARIS, "qas": qas}]}]}), encoding="utf-8")
    return path


def as_table(suffix, separator):
    def write(tmp_path):
        path = tmp_path / f"ask{suffix}"
        frame = pd.DataFrame([{"id": row.get("id", ""), "question": row["question"], "context": row["context"]} for row in ROWS])
        frame.to_csv(path, sep=separator, index=False)
        return path
    return write


def as_parquet(tmp_path):
    path = tmp_path / "ask.parquet"
    pd.DataFrame([{"id": row.get("id"), **row} for row in ROWS]).to_parquet(path)
    return path


FORMS = {
    "squad-json": as_squad_json, "jsonl": as_jsonl, "csv": as_table(".csv", ","), "tsv": as_table(".tsv", "\t"),
    "parquet": as_parquet, "dataframe": lambda _: pd.DataFrame([{"id": row.get("id"), **row} for row in ROWS]),
    "datasets": lambda _: datasets.Dataset.from_list([{"id": row.get("id"), **row} for row in ROWS]),
    "records": lambda _: [dict(row) for row in ROWS],
}


def test_generated_id_is_position_and_a_hash_of_question_and_context():
    assert generated_id(3, "Who?", "Ada.") == "q3-" + hashlib.sha256(b"Who?\nAda.").hexdigest()[:8]
    assert generated_id(3, "Who?", "Ada.") == generated_id(3, "Who?", "Ada.")  # deterministic
    assert generated_id(4, "Who?", "Ada.") != generated_id(3, "Who?", "Ada.")  # the same question twice: two ids


@pytest.mark.parametrize("form", FORMS)
def test_every_form_reads_questions_without_answers_or_ids(tmp_path, form):
    data = load_squad(FORMS[form](tmp_path))
    assert [ex.id for ex in data.examples] == EXPECTED_IDS
    assert all(ex.answers is None and not ex.is_labelled and not ex.is_answerable for ex in data.examples)
    assert data.version == "1.1" and not data.is_v2  # never silently SQuAD 2.0 questions
    assert [ex.id for ex in stream_squad(FORMS[form](tmp_path))] == EXPECTED_IDS


@pytest.mark.parametrize("form", ["squad-json", "jsonl", "csv", "datasets"])
def test_gold_is_required_where_it_is_needed_naming_the_record(tmp_path, form):
    with pytest.raises(DataFormatError, match=r"question without answers: training needs labelled questions") as info:
        load_squad(FORMS[form](tmp_path), needs_gold="training")
    assert info.value.record == EXPECTED_IDS[0]
    with pytest.raises(DataFormatError, match="tuning needs labelled"):
        list(stream_squad(FORMS[form](tmp_path), needs_gold="tuning"))


def test_unanswerable_stays_distinct_from_unlabelled(tmp_path):
    rows = [{"id": "a", "question": "Q?", "context": PARIS, "answers": {"text": [], "answer_start": []}},
            {"id": "b", "question": "Q?", "context": PARIS, "answers": None},
            {"id": "c", "question": "Q?", "context": PARIS}]
    data = load_squad(rows)
    assert [ex.answers for ex in data.examples] == [(), None, None]
    assert data.is_v2  # the first one is an unanswerable question
    assert [ex.id for ex in load_squad(rows[1:]).examples] == ["b", "c"] and not load_squad(rows[1:]).is_v2


def test_an_empty_answers_cell_is_an_unlabelled_question(tmp_path):
    path = tmp_path / "mixed.csv"
    path.write_text('id,question,context,answers\nq1,Capital?,Paris is here.,"{""text"": [""Paris""], ""answer_start"": [0]}"\n'
                    "q2,Where?,Paris is here.,\n", encoding="utf-8")
    data = load_squad(path)
    assert [ex.answers for ex in data.examples] == [(((0, 5),),), None]
    with pytest.raises(DataFormatError, match=r"evaluation needs labelled questions.*row 1, record 'q2'"):
        load_squad(path, needs_gold="evaluation")


# Answers under a key the reader does not read: a refusal, or for questions to predict one note a file, names the key.
ANSWER_ELSEWHERE = {
    "answer": {"answer": {"text": "Paris", "answer_start": 0}},
    "answer spans": {"answer": {"spans": ["Paris"]}},
    "answer_text": {"answer_text": "Paris", "answer_start": 0},
    "answers_spans": {"answers_spans": {"spans": ["Paris"]}},
    "label": {"label": "Paris"},
}


def answers_elsewhere(tmp_path, extra, rows=1):
    path = tmp_path / "elsewhere.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{n}", "question": "Capital?", "context": PARIS, **extra}) + "\n"
                            for n in range(1, rows + 1)), encoding="utf-8")
    return path


@pytest.mark.parametrize("case", ANSWER_ELSEWHERE)
def test_gold_needed_names_the_key_its_answers_are_under_and_the_key_read(tmp_path, case):
    path = answers_elsewhere(tmp_path, ANSWER_ELSEWHERE[case])
    key = next(iter(ANSWER_ELSEWHERE[case]))
    with pytest.raises(DataFormatError, match=r"question without answers") as info:
        load_squad(path, needs_gold="training")
    assert f'the key "{key}" is not read' in str(info.value) and "read from 'answers'" in str(info.value)
    assert info.value.source == f"{path}, line 1" and info.value.record == "q1"
    with pytest.raises(DataFormatError, match=f'the key "{key}" is not read'):
        list(stream_squad(path, needs_gold="tuning"))


def test_a_table_column_of_answers_is_named_by_row(tmp_path):
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    path = tmp_path / "elsewhere.csv"
    path.write_text(f"id,question,context,answer_text,answer_start\nq1,Capital?,{PARIS},Paris,0\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"the key \"answer_text\" is not read.*row 0, record 'q1'"):
        load_squad(path, needs_gold="evaluation")
    rows = [{"question": "Capital?", "context": PARIS, "label": "Paris"}]
    with pytest.raises(DataFormatError, match=r'the key "label" is not read.*in list of dicts, row 0'):
        load_squad(rows, needs_gold="evaluation")
    table = pd.DataFrame({"question": ["Capital?"], "context": [PARIS], "answer_spans": [np.array(["Paris"])]})
    with pytest.raises(DataFormatError, match=r'the key "answer_spans" is not read'):  # a DataFrame cell of several spans
        load_squad(table, needs_gold="evaluation")


def test_questions_to_predict_with_answers_elsewhere_are_read_with_one_note_a_file(tmp_path):
    import warnings

    from bio_mrc.errors import InputNote

    path = answers_elsewhere(tmp_path, {"answer": {"text": "Paris", "answer_start": 0}}, rows=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = load_squad(path)
    assert [ex.answers for ex in data.examples] == [None, None, None]
    notes = [str(w.message) for w in caught if issubclass(w.category, InputNote)]
    assert len(notes) == 1 and f"{path}, line 1" in notes[0] and 'the key "answer" is not read' in notes[0]
    assert "'answers'" in notes[0]


def test_other_unknown_keys_stay_unnamed(tmp_path):
    import warnings

    path = answers_elsewhere(tmp_path, {"source": "wiki", "lang": "en", "label": None})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [ex.answers for ex in load_squad(path).examples] == [None]
    with pytest.raises(DataFormatError, match="question without answers") as info:
        load_squad(path, needs_gold="training")
    assert "is not read" not in str(info.value)


# The command line: predict and extract take them; train, tune, evaluate refuse them in one line.
from bio_mrc.cli import main  # noqa: E402

from .conftest import SAMPLE_V1  # noqa: E402


@pytest.fixture(scope="module")
def model_dir(trained_dir):
    """The session's joint model: the tests here only read it."""
    return trained_dir


def unlabelled_copy(tmp_path):
    """The sample's questions as JSON Lines with neither ids nor answers, and their ids as generated."""
    examples = load_squad(SAMPLE_V1).examples
    path = tmp_path / "ask.jsonl"
    path.write_text("".join(json.dumps({"question": ex.question, "context": ex.context}) + "\n" for ex in examples),
                    encoding="utf-8")
    return path, examples, [generated_id(n, ex.question, ex.context) for n, ex in enumerate(examples, 1)]


def test_predict_answers_unlabelled_questions_under_generated_ids(model_dir, tmp_path):
    path, examples, ids = unlabelled_copy(tmp_path)
    assert main(["predict", "--model", str(model_dir), "--data", str(path), "--output", str(tmp_path / "u.json"),
                 "--decoding", "joint", "--precision", "fp32"]) == 0
    assert main(["predict", "--model", str(model_dir), "--data", str(SAMPLE_V1), "--output", str(tmp_path / "l.json"),
                 "--decoding", "joint", "--precision", "fp32"]) == 0
    unlabelled = json.loads((tmp_path / "u.json").read_text())
    labelled = json.loads((tmp_path / "l.json").read_text())
    assert list(unlabelled) == ids  # written back with the answers, in order
    assert list(unlabelled.values()) == [labelled[ex.id] for ex in examples]  # the same answers as with gold
    lines = [json.loads(line) for line in (tmp_path / "u.answers.jsonl").read_text().splitlines()]
    assert [line["id"] for line in lines] == ids


@pytest.mark.parametrize("command", ["train", "tune", "evaluate"])
def test_commands_that_need_gold_refuse_unlabelled_questions_in_one_line(model_dir, tmp_path, capsys, command):
    path, _, ids = unlabelled_copy(tmp_path)
    argv = {"train": ["train", "--train", str(path), "--output-dir", str(tmp_path / "m")],
            "tune": ["tune", "--model", str(model_dir), "--data", str(path)],
            "evaluate": ["evaluate", "--data", str(path), "--predictions", str(tmp_path / "p.json")]}[command]
    (tmp_path / "p.json").write_text("{}")
    assert main(argv) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and f"bio-mrc {command} needs labelled questions" in error
    assert f"in {path}, line 1, record '{ids[0]}'" in error


def test_train_model_refuses_unlabelled_examples_before_any_work(tmp_path):
    from bio_mrc.training.train import TrainConfig, train_model
    from bio_mrc.types import Example

    with pytest.raises(DataFormatError, match=r"training needs labelled questions \(record 'x'\)"):
        train_model([Example("x", "Q?", "Some context.", None)], TrainConfig(), tmp_path / "m")
    assert not (tmp_path / "m").exists()
