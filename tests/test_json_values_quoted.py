"""An error that quotes a value of a JSON file quotes it as the file spells it (``true``, ``null``, ``"text"``), not as
Python writes it (``True``, ``None``, ``'text'``): the user finds it in the file as quoted."""

import json
import re
import shutil

import pytest

from bio_mrc.data.json_reader import DataFormatError
from bio_mrc.data.squad import load_squad
from bio_mrc.errors import ConfigError, ModelFormatError
from bio_mrc.harness.models import resolve_init_from
from bio_mrc.harness.results import Cell
from bio_mrc.harness.summary_records import Row

CONTEXT = "France is a country."


def test_json_value_spells_values_as_json():
    from bio_mrc import json_syntax
    from bio_mrc.json_syntax import json_value

    assert [json_value(v) for v in (True, False, None, "it's", 3, 1.5, float("nan"))] == [
        "true", "false", "null", '"it\'s"', "3", "1.5", "NaN"]
    assert json_value({"a": [1, None, "b"]}) == '{"a": [1, null, "b"]}'
    assert json_value("\ufeffid\n") == '"\\ufeffid\\n"' and json_value("café") == '"café"'  # unseen escaped, letters kept
    assert json_value("x" * 1000) == '"' + "x" * 38 + "..." + "x" * 39 + '"'  # 80 characters: a value of megabytes is no line
    assert json_value("x" * 1000 + "\u200b", whole=True) == '"' + "x" * 1000 + '\\u200b"'  # a path or pattern whole, unseen escaped
    assert not hasattr(json_syntax, "json_string")  # one spelling of a whole value, for strings too


@pytest.mark.parametrize("value, spelt", [
    ('say "hi"\\', r'"say \"hi\"\\"'),
    ("tab\tline\n\x1b\x7f\x85\u200b\u202e\u2028\ufeff", r'"tab\tline\n\u001b\u007f\u0085\u200b\u202e\u2028\ufeff"'),  # unseen escaped
    ("café ∑ 日本 🙂", '"café ∑ 日本 🙂"'),  # letters and symbols as they are
    (["a", None, True, False, 3, 1.5], '["a", null, true, false, 3, 1.5]'),
    ((1, "b"), '[1, "b"]'),
    ({"b": 1, "a": [2, {"d": None, "c": "x"}]}, '{"a": [2, {"c": "x", "d": null}], "b": 1}'),  # keys sorted, nested too
    ({"b": 1, 2: "x"}, '{"b": 1, "2": "x"}'),  # keys of two types do not sort: in the given order
    ([float("nan"), float("inf"), -float("inf")], "[NaN, Infinity, -Infinity]"),
    ([["x" * 100]] * 7, "[" + ", ".join([f'["{"x" * 100}"]'] * 7) + "]"),  # never shortened
])
def test_a_value_whole_is_spelt_as_json_in_full(value, spelt):
    from bio_mrc.json_syntax import json_value

    assert json_value(value, whole=True) == spelt


@pytest.mark.parametrize("value", ["it's", "caf\u00e9\u200b", ["a", None, 1.5], {"b": [1, True], "a": {"y": 2, "x": None}},
                                   float("nan"), -3, [{"k": "v"}]])
def test_a_short_value_reads_the_same_whole_or_shortened(value):
    from bio_mrc.json_syntax import json_value

    whole = json_value(value, whole=True)
    assert json_value(value) == whole and json.loads(whole, parse_constant=str) == json.loads(json.dumps(value), parse_constant=str)


def test_a_long_value_whole_reads_back_as_the_value():
    from bio_mrc.json_syntax import json_value

    value = {"runs": [f"run-{k}\u2028" for k in range(50)], "name": "é" * 500}
    assert json.loads(json_value(value, whole=True)) == value and len(json_value(value)) < 200


def test_a_reports_differing_setting_is_quoted_with_its_letters():
    from bio_mrc.harness.earlier_report import _check_same

    with pytest.raises(ConfigError, match=re.escape('("café" there, "cafe" here)')):
        _check_same("r.json", "the evaluation's task and scorer", "café", "cafe")


def test_an_answers_lines_long_field_is_shortened_as_a_json_value():
    from bio_mrc.inference.files import ANSWER_FIELDS, answer_record_problem

    record = {name: types[0]() for name, types in ANSWER_FIELDS.items()} | {"no_answer_score": 0.0, "abstain": "n" * 100}
    assert answer_record_problem(record) == f'has abstain "{"n" * 38}...{"n" * 39}", which is no bool'


def _squad_file(tmp_path, qa: dict, title="t"):
    path = tmp_path / "data.json"
    path.write_text(json.dumps({"data": [{"title": title, "paragraphs": [{"context": CONTEXT, "qas": [qa]}]}]}), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("qa, said", [
    ({"id": "q", "question": "Where?", "answers": [], "is_impossible": "yes"}, "'is_impossible' must be true or false, got \"yes\""),
    ({"id": "q", "question": "Where?", "answers": [{"text": "Lyon", "answer_start": 0}]}, 'answer text "Lyon" is not in the context'),
    ({"id": True, "question": "Where?", "answers": []}, "'id' must be a string, got true"),
])
def test_squad_errors_quote_the_files_values_as_json(tmp_path, qa, said):
    with pytest.raises(DataFormatError) as refused:
        load_squad(_squad_file(tmp_path, qa))
    assert said in str(refused.value)


def test_a_title_of_false_is_quoted_as_false(tmp_path):
    with pytest.raises(DataFormatError, match="'title' must be a string, got false"):
        load_squad(_squad_file(tmp_path, {"id": "q", "question": "Where?", "answers": []}, title=False))


def test_a_repeated_key_is_quoted_as_json(tmp_path):
    path = tmp_path / "twice.json"
    path.write_text('{"data": [], "data": []}', encoding="utf-8")
    with pytest.raises(DataFormatError, match='the key "data" appears twice in one object'):
        load_squad(str(path))


@pytest.mark.parametrize("key, value, said", [
    ("max_answer_length", True, "max_answer_length must be a whole number of tokens in [1, 1,000,000,000], got true"),
    ("max_answer_length", "40", 'max_answer_length must be a whole number of tokens in [1, 1,000,000,000], got "40"'),
    ("tag_level", None, "tag_level must be one of ('word', 'subword'), got null"),
])
def test_a_model_folders_bad_setting_is_quoted_as_json(trained_dir, tmp_path, key, value, said):
    from bio_mrc.inference import TrainedModel

    folder = shutil.copytree(trained_dir, tmp_path / "bad")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    (folder / "config.json").write_text(json.dumps({**config, key: value}), encoding="utf-8")
    with pytest.raises(ModelFormatError) as refused:
        TrainedModel.load(folder, precision="fp32", device="cpu")
    assert said in str(refused.value)


def test_a_request_bodys_repeated_key_is_quoted_as_json():
    from bio_mrc.serving.guards import read_strict_json

    read = read_strict_json(b'{"question": "Who?", "context": "Ada.", "question": "When?"}')
    assert read.problem == 'body: the key "question" appears twice in one object (JSON leaves which to keep undefined)'


@pytest.mark.parametrize("record, said", [
    ({"id": True, "question": ["Who?"], "context": ["Ada"], "label": ["B"]}, "'id' must be a non-empty string, got true"),
    ({"id": "m1", "question": ["Who?"], "context": ["Ada", "wrote"], "label": ["B", None]}, "label null at word 1 is not"),
    ({"id": "m1", "question": ["Who?"], "context": ["Ada"], "label": ["b"]}, 'label "b" at word 0 is not'),
])
def test_a_multispanqa_record_is_quoted_as_json(record, said):
    from bio_mrc.data.multispanqa import parse_record

    with pytest.raises(DataFormatError) as refused:
        parse_record(record, "ms.json", 1)
    assert said in str(refused.value)


@pytest.mark.parametrize("answer, said", [
    ({"text": None, "char_spans": [[0, 5]]}, "a detected answer needs a 'text' string, got null"),
    ({"text": "France", "char_spans": [[0, True]]}, "char span #1 [0, true] of a detected answer is not [start, end] of integers"),
])
def test_an_mrqa_detected_answer_is_quoted_as_json(tmp_path, answer, said):
    line = {"context": CONTEXT, "qas": [{"qid": "q1", "question": "Where?", "detected_answers": [answer]}]}
    path = tmp_path / "mrqa.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError) as refused:
        load_squad(str(path))
    assert said in str(refused.value)


def test_a_model_folders_unregistered_heads_are_quoted_as_json():
    from bio_mrc import registry

    with pytest.raises(ValueError, match='got "span\\+pointer": no head named "pointer" is registered'):
        registry.head_names("span+pointer")


_ROW = {"cell": "a/span", "run": "a", "decoding": "span", "seeds": [1], "train_questions": 3, "threshold": None,
        "bio_length_prior": None, "train_seconds": [1.0], "inference_seconds": [1.0], "decode_seconds": [0.5]}
_CELL = {"run": "a", "decoding": "span", "seed": 1, "model_dir": "m", "answers": ["x"], "decode_seconds": 0.0, "f1": [50.0]}


def _refusal(call):
    with pytest.raises(ConfigError) as refused:
        call()
    return str(refused.value)


@pytest.mark.parametrize("call, said", [
    (lambda: Row.from_json({**_ROW, "cell": "a/bio"}, "row 0"), 'row 0: cell "a/bio" is not its run and decoding, "a/span"'),
    (lambda: Cell.from_json(_CELL).column("em"), 'cell a/span (seed 1) has no per-question "em" scores; it has ["f1"]'),
    (lambda: Cell.from_json({**_CELL, "seed": True}), "a cell: field 'seed' must be an integer, got true"),
    (lambda: Cell.from_json({**_CELL, "answers": ["x", None]}), 'a cell: field \'answers\' must be a list of answer strings, got ["x", null]'),
    (lambda: Cell.from_json({**_CELL, "f1": [None]}), "a cell: field 'f1' holds null at position 0, outside [0, 100]"),
    (lambda: resolve_init_from(f"/nowhere/{'x' * 90}-seed42-*"),  # a pattern quoted whole, however long
     f'init_from "/nowhere/{"x" * 90}-seed42-*" must match exactly one trained model; it matches no complete model. '),
])
def test_a_reports_values_and_a_comparisons_names_are_quoted_as_json(call, said):
    assert _refusal(call).startswith(said)
