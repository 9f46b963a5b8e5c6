"""A newcomer's first mistakes with their own files and models: each is one line saying what to do instead."""

from __future__ import annotations

import json
import shutil

import pytest

from bio_mrc.cli import main
from bio_mrc.data.squad import load_squad
from bio_mrc.data.text import questions_layout
from bio_mrc.errors import DataFormatError, ModelFormatError
from bio_mrc.inference import TrainedModel
from bio_mrc.inference.loading import check_folder_to_load

from .conftest import SAMPLE_V1

CONTEXT = "The lighthouse was built in 1872 by Marta Solberg."
QUESTIONS = {
    "squad.json": SAMPLE_V1.read_text(encoding="utf-8"),
    "ask.jsonl": json.dumps({"question": "Who built it?", "context": CONTEXT}) + "\n",
    "ask.csv": f'question,context\nWho built it?,"{CONTEXT}"\n',
}


@pytest.mark.parametrize("name", sorted(QUESTIONS))
def test_extract_refuses_a_file_of_questions_as_its_document_naming_predict(tmp_path, capsys, name):
    """A SQuAD file given to extract was answered as prose: its JSON's characters were the document."""
    path = tmp_path / name
    path.write_text(QUESTIONS[name], encoding="utf-8")
    code = main(["extract", "--model", str(tmp_path / "no-model"), "--question", "Who?", "--context-file", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"not a document's text: `bio-mrc predict --model MODEL --data {path} --output PREDS.json`" in err


@pytest.mark.parametrize("text", [CONTEXT, "Some questions, and some context.\n", '{"a": 1} opens the note.\n',
                                  "[1] Solberg, M. The lighthouse.\n"])
def test_prose_is_no_file_of_questions(text):
    assert questions_layout(text) is None


def unfinished_run(tmp_path):
    """An output folder as a run cut short leaves it: checkpoints, no model yet."""
    step = tmp_path / "my-model" / "checkpoints" / "checkpoint-4"
    step.mkdir(parents=True)
    (step.parent / "bio_mrc_train_config.json").write_text("{}", encoding="utf-8")
    shutil.copy(SAMPLE_V1, step / "trainer_state.json")  # any file: its presence marks a checkpoint
    (step / "config.json").write_text(json.dumps({"model_type": "bio_mrc"}), encoding="utf-8")
    return tmp_path / "my-model"


@pytest.mark.parametrize("inside, what", [("", "an unfinished training run: no model yet, only checkpoints in checkpoints/"),
                                          ("checkpoints", "the checkpoints of a training run, not a model"),
                                          ("checkpoints/checkpoint-4", "a checkpoint of a training run, not a model")])
def test_a_training_runs_folder_or_checkpoint_given_as_the_model_says_to_finish_the_run(tmp_path, inside, what):
    """It was "not a saved model: no config.json (train one ...)", or, for a checkpoint, a tokenizer.json to copy."""
    run = unfinished_run(tmp_path)
    folder = run / inside if inside else run
    said = (f"{what}; run its `bio-mrc train` command again with --resume to finish it, then give the folder the model "
            f"is saved in: {run}")
    for load in (TrainedModel.load, check_folder_to_load):  # the commands and AnswerExtractor; the pipeline
        with pytest.raises(ModelFormatError) as caught:
            load(folder)
        assert caught.value.problem == said


def test_a_column_spelt_in_capitals_says_to_rename_it(tmp_path):
    """'Question' was "lacks the SQuAD columns ['question']", which left the reader to spot the capital."""
    path = tmp_path / "ask.csv"
    path.write_text(f'Question,context\nWho built it?,"{CONTEXT}"\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match='names the column "Question", which is not "question" as spelt, .*'
                                              'rename it "question"'):
        load_squad(path)


@pytest.mark.parametrize("key, meant", [("Question", "question"), ("Context", "context"), ("ID", "id"), ("Answers", "answers")])
def test_a_record_key_spelt_otherwise_is_refused_naming_it(tmp_path, key, meant):
    """A JSON Lines key 'Question' was "empty or missing question"; 'ID' and 'Answers' were ignored: a generated id,
    an unlabelled question."""
    record = {"id": "q1", "question": "Who built it?", "context": CONTEXT,
              "answers": {"text": ["Marta Solberg"], "answer_start": [CONTEXT.index("Marta")]}}
    record[key] = record.pop(meant)
    path = tmp_path / "ask.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError) as caught:
        load_squad(path)
    assert caught.value.problem.startswith(f'the record has the key "{key}", which is not "{meant}" as spelt, so its value '
                                           f'would be ignored; rename it "{meant}"')
    assert caught.value.source == f"{path}, line 1"


def test_a_plain_text_file_given_as_questions_says_what_questions_are_read_from(tmp_path, capsys):
    """A list of questions, one a line, was "not valid JSON: lexical error: invalid char in json text"."""
    path = tmp_path / "questions.txt"
    path.write_text("Who built the lighthouse?\nWhen was it built?\n", encoding="utf-8")
    with pytest.raises(DataFormatError) as caught:
        load_squad(path)
    assert caught.value.problem.startswith(
        "not JSON, and its name has no suffix of another format: questions are read with their contexts, as JSON Lines "
        "(.jsonl, a {\"question\": ..., \"context\": ...} object a line), a table (.csv, .tsv, .parquet) with question and "
        "context columns, or SQuAD JSON; a question over a text file is asked with `bio-mrc extract --question Q --context-file FILE`")


@pytest.mark.parametrize("name, line", [("ask.csv", 'question,context\nWho?,"Built by Ren\xe9."\n'),
                                        ("ask.jsonl", '{"question": "Who?", "context": "Built by Ren\xe9."}\n')])
def test_a_latin1_data_file_says_how_to_convert_it(tmp_path, name, line):
    """extract's text file named iconv; a data file in Latin-1 said only where decoding failed."""
    path = tmp_path / name
    path.write_bytes(line.encode("latin-1"))
    with pytest.raises(DataFormatError, match=r"not UTF-8 text \(.*\); convert it first, e\.g\. iconv -f cp1252 -t utf-8"):
        load_squad(path)
