"""JSON with comments or trailing commas (JSON5's, an editor's "JSON with comments") is refused in one line that says
what JSON lacks, at every reader: configs, data (read whole, streamed, JSON Lines), predictions, model folders'
files and ``--training-args``; the parser's own words (``Expecting value``) said neither."""

from __future__ import annotations

import argparse
import json
import re

import pytest

from bio_mrc.data.json_reader import read_json
from bio_mrc.data.prediction_layouts import read_prediction_file
from bio_mrc.data.squad import load_squad, stream_squad
from bio_mrc.errors import BioMrcError, DataFormatError, ModelFormatError
from bio_mrc.harness.config import load_config
from bio_mrc.json_syntax import syntax_hint
from bio_mrc.model_folder import checked_record, read_json_object
from bio_mrc.model_records import RUN_FILE
from bio_mrc.training.config import json_object_argument

LINE = "; JSON has no comments: remove the `//` comment"
BLOCK = "; JSON has no comments: remove the `/* */` comment"
OBJECT_COMMA = "; JSON has no trailing commas: remove the `,` before `}`"
ARRAY_COMMA = "; JSON has no trailing commas: remove the `,` before `]`"

SQUAD = {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": "Paris is in France.", "qas": [
    {"id": "q1", "question": "Where is Paris?", "answers": [{"text": "France", "answer_start": 12}]}]}]}]}
# Each text, and the hint it gets: a comment on its own line first, after a value, inside an object, at the end;
# a trailing comma in an object and in a list.
FLAWED = [
    ("// questions for the demo\n" + json.dumps(SQUAD), LINE),
    ("/* questions */ " + json.dumps(SQUAD), BLOCK),
    (json.dumps(SQUAD)[:-1] + ", // the version\n}", LINE),
    (json.dumps(SQUAD)[:-1] + " /* the end */}", BLOCK),
    (json.dumps(SQUAD) + "\n// nothing after\n", LINE),  # streamed: yajl's "trailing garbage", placed by ijson's parser
    (json.dumps(SQUAD)[:-1] + ",\n}", OBJECT_COMMA),
    (json.dumps(SQUAD).replace("}]}]}]", "},]}]}]"), ARRAY_COMMA),
]


@pytest.mark.parametrize("text, hint", [
    ('{"a": 1 // one\n}', LINE), ('{"a": 1, /* one */ "b": 2}', BLOCK), ('{"a": 1,  \n\t}', OBJECT_COMMA),
    ("[1, 2,\n]", ARRAY_COMMA)])
def test_the_hint_names_what_stands_where_the_parser_stopped(text, hint):
    with pytest.raises(json.JSONDecodeError) as refused:
        json.loads(text)
    assert syntax_hint(text, refused.value.pos) == hint


@pytest.mark.parametrize("text", ['{"a": 1 "b": 2}', "[1,,2]", '{"a": }', '{"a": "x"} y', '["//"'])
def test_other_faults_get_no_hint(text):
    with pytest.raises(json.JSONDecodeError) as refused:
        json.loads(text)
    assert syntax_hint(text, refused.value.pos) == ""


@pytest.mark.parametrize("text, hint", FLAWED)
def test_a_json_file_is_refused_saying_what_json_lacks(tmp_path, text, hint):
    path = tmp_path / "dev.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataFormatError, match="^not valid JSON: .*" + r"\(line \d+, column \d+\)" + re.escape(hint)):
        read_json(path)
    with pytest.raises(DataFormatError, match=r"\(line \d+, column \d+\)" + re.escape(hint) + "; read as squad"):
        load_squad(path)
    with pytest.raises(DataFormatError, match=r"\(line \d+, column \d+\)" + re.escape(hint) + "; read as squad"):
        list(stream_squad(path))  # yajl's words, and the place the Python parser names


def test_text_after_a_streamed_files_object_is_placed(tmp_path):
    """predict streams its data: a comment after the SQuAD object was yajl's "trailing garbage" alone, with no place and
    no hint, where the whole-file reader names both; a second object there still has no place to name."""
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(SQUAD) + "\n// nothing after\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=re.escape(f"not valid JSON: parse error: trailing garbage (line 2, column 1){LINE};")):
        list(stream_squad(path))
    path.write_text(json.dumps(SQUAD) + "\n" + json.dumps(SQUAD), encoding="utf-8")
    with pytest.raises(DataFormatError, match=re.escape("not valid JSON: parse error: trailing garbage; read as squad")):
        list(stream_squad(path))


def test_a_comparison_config_with_a_comment_is_refused_saying_so(tmp_path):
    path = tmp_path / "ablation.json"
    path.write_text('{\n  // the quick one\n  "preset": "quick"\n}\n', encoding="utf-8")
    with pytest.raises(DataFormatError) as refused:
        load_config(path)
    assert str(refused.value) == f"not valid JSON: Expecting property name enclosed in double quotes (line 2, column 3){LINE} (in {path})"
    path.write_text('{"name": "x", "runs": [{"name": "span"},],}', encoding="utf-8")
    with pytest.raises(DataFormatError, match=re.escape(f"(line 1, column 41){ARRAY_COMMA} (in {path})")):
        load_config(path)


def test_a_json_lines_line_is_refused_saying_so(tmp_path):
    path = tmp_path / "ask.jsonl"
    row = {"id": "q1", "question": "Where is Paris?", "context": "Paris is in France."}
    path.write_text(json.dumps(row) + "\n" + json.dumps(row | {"id": "q2"})[:-1] + ",}\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=re.escape(f"(line 2, column {len(json.dumps(row)) + 1}){OBJECT_COMMA}")):
        load_squad(path)
    path.write_text("// asked on Monday\n" + json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=re.escape(f"Expecting value (line 1, column 1){LINE}")):
        load_squad(path)


def test_a_predictions_file_is_refused_saying_so(tmp_path):
    path = tmp_path / "predictions.jsonl"
    path.write_text('{"id": "q1", "prediction_text": "France"}\n{"id": "q2", "prediction_text": "Rome",}\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match=re.escape(f"(line 2, column 40){OBJECT_COMMA}")):
        read_prediction_file(path)
    path.write_text('{\n  "q1": "France" // sure\n}\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match=re.escape(f"(line 2, column 18){LINE}")):
        read_prediction_file(path)


def test_a_model_folders_json_is_refused_saying_so(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "bio_mrc", /* edited */ "heads": "span"}', encoding="utf-8")
    with pytest.raises(ModelFormatError, match=re.escape(f"line 1 column 27 (char 26){BLOCK}")):
        read_json_object(tmp_path, "config.json")
    (tmp_path / RUN_FILE).write_text('{"seconds": 1.0,}', encoding="utf-8")
    with pytest.raises(ModelFormatError, match=re.escape(f"(char 16){OBJECT_COMMA}); delete it")):
        checked_record(tmp_path, RUN_FILE)


def test_training_args_are_refused_saying_so(tmp_path):
    with pytest.raises(argparse.ArgumentTypeError, match=re.escape(f"line 1 column 24 (char 23){OBJECT_COMMA}")):
        json_object_argument('{"weight_decay": 0.01, }')
    path = tmp_path / "args.json"
    path.write_text('{\n  // warm up\n  "warmup_ratio": 0.1\n}', encoding="utf-8")
    with pytest.raises(argparse.ArgumentTypeError, match=re.escape(f"line 2 column 3 (char 4){LINE}")):
        json_object_argument(str(path))


def test_every_hint_is_a_bio_mrc_error_of_one_line(tmp_path):
    path = tmp_path / "dev.json"
    path.write_text(FLAWED[0][0], encoding="utf-8")
    with pytest.raises(BioMrcError) as refused:
        load_squad(path)
    assert "\n" not in str(refused.value)
