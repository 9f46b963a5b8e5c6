"""Comparison configs are checked in full when they load: every key's type and range against the
published JSON Schema, errors naming the key path; random garbage gives the package's own errors."""

import dataclasses
import json
import math
import re
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bio_mrc.cli import main
from bio_mrc.data.json_reader import loads
from bio_mrc.data.multispanqa import parse_multispanqa
from bio_mrc.data.squad import load_squad, parse_squad
from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.errors import BioMrcError, ConfigError, DataFormatError
from bio_mrc.harness.config import PRESETS, comparison_schema, load_config, parse_config
from bio_mrc.training.train import TrainConfig

from .conftest import property_examples

ABLATIONS = Path(__file__).parents[1] / "benchmarks" / "ablations"
PUBLISHED = ABLATIONS / "compare-config.schema.json"
MINIMAL = {"train": {"path": "a.json"}, "eval": {"path": "b.json"}, "runs": [{"name": "joint"}]}


def test_the_published_schema_is_the_one_the_package_checks():
    assert json.loads(PUBLISHED.read_text()) == comparison_schema(), (
        "regenerate it: bio-mrc compare --print-schema > benchmarks/ablations/compare-config.schema.json")


def test_every_committed_config_passes_a_stock_validator_of_the_published_schema():
    """What an editor does with the file: no bio_mrc code involved."""
    validator = jsonschema.Draft202012Validator(json.loads(PUBLISHED.read_text()))
    configs = [p for p in ABLATIONS.glob("*.json") if p != PUBLISHED]
    presets = Path(__file__).parents[1] / "bio_mrc" / "harness" / "presets"
    for path in configs + [presets / f"{name}.json" for name in PRESETS]:
        assert not list(validator.iter_errors(json.loads(path.read_text()))), path
    assert len(configs) > 10


@pytest.mark.parametrize("change, message", [
    ({"eval": None}, 'top level: "eval" is a required property'),
    ({"train": {"path": "a", "split": {"fraction": [0.5, 0.5], "part": 0}}},
     'train.split: unknown key "fraction" (did you mean "fractions"?); the known keys are fractions, part, seed (and 1 more)'),
    ({"train": {"path": "a", "unanswerable_ratio": 1e308}}, "train.unanswerable_ratio: 1e+308 is greater than the maximum of 1"),
    ({"checkpoint_steps": 2**70}, "checkpoint_steps: 1180591620717411303424 is greater than the maximum of 1000000000"),
    ({"seeds": "42"}, 'seeds: "42" is not of type "array"'),
    ({"seeds": []}, "seeds: [] should be non-empty"),
    ({"seeds": [1.5]}, 'seeds[0]: 1.5 is not of type "integer"'),
    ({"seeds": [2**40]}, "seeds[0]: 1099511627776 is greater than the maximum of 4294967295"),
    ({"train": {"path": "a", "limit": "5"}}, 'train.limit: "5" is not of type "integer", "null"'),
    ({"train": {"path": "a", "split": {"fractions": [0.5, 0.5], "part": 2}}}, "train: split.part is 0 to 1"),
    ({"train": {"path": "a", "split": {"fractions": [0.5, 0.6], "part": 1}}}, "train: split.fractions sum to 1"),
    ({"runs": [{"name": "j", "heads": "crf"}]}, 'runs[0].heads: "crf" is not one of ["span", "bio", "span+bio"]'),
    ({"defaults": {"batch_size": 0}}, "defaults.batch_size: 0 is less than the minimum of 1"),
    ({"runs": [{"name": "j", "doc_stride": -1}]}, "runs[0].doc_stride: -1 is less than the minimum of 0"),
    ({"runs": [{"name": "a"}, {"name": "j", "epochs": math.nan}]}, "runs[1].epochs must be a finite number, got NaN"),
    ({"runs": [{"name": "j", "epochs": -math.inf}]}, "runs[0].epochs must be a finite number, got -Infinity"),
    ({"decode": {"min_span_probability": math.inf}}, "decode.min_span_probability must be a finite number, got Infinity"),
    ({"runs": [{"name": "j", "epochs": 0}]}, "runs[0].epochs: 0 is less than or equal to the minimum of 0"),
    ({"runs": [{"name": "j", "epochs": -1}]}, "runs[0].epochs: -1 is less than or equal to the minimum of 0"),
    ({"defaults": {"learning_rate": "1e-4"}}, 'defaults.learning_rate: "1e-4" is not of type "number"'),
    ({"decode": {"n_best": 2.5}}, 'decode.n_best: 2.5 is not of type "integer"'),
    ({"decode": {"n_best": -1}}, "decode.n_best: -1 is less than the minimum of 1"),
    ({"runs": [{"name": "j", "max_query_length": 0}]}, "runs[0].max_query_length: 0 is less than the minimum of 1"),
    ({"decode": {"max_answer_length": 0}}, "decode.max_answer_length: 0 is less than the minimum of 1"),
    ({"eval": {"path": "b", "limit": 0}}, "eval.limit: 0 is less than the minimum of 1"),
    ({"runs": [{"name": "j", "max_seq_length": 64}]}, "runs[0]: doc_stride (128) must leave room"),
    ({"runs": [{"name": "j"}, {"name": "j"}]}, 'runs: run names are unique; ["j"] appear more than once'),
    ({"runs": [{"name": "span"}, {"name": "Span", "heads": "span"}]},
     "runs: run names differ beyond letter case, since they name files and some systems do not tell case apart; "
     '["span", "Span"] differ only in case'),
    ({"defaults": {"training_args": {"nonsense_arg": 1}}}, 'defaults: training_args: "nonsense_arg" is not a TrainingArguments field'),
    ({"cross_validation": {"folds": 1}, "train": None}, "cross_validation.folds: 1 is less than the minimum of 2"),
    ({"runs": [{"name": "j", "batch_size": True}]}, 'runs[0].batch_size: true is not of type "integer"'),
    ({"runs": [{"name": "j", "bio_prior": [0.1, 0.2]}]}, "runs[0].bio_prior: [0.1, 0.2] is too short"),
    ({"runs": [{"name": "j", "attention_dropout": 1.0}]}, "runs[0].attention_dropout: 1.0 is greater than or equal to the maximum of 1"),
    ({"defaults": {"learning_rate": 1e308}}, "defaults.learning_rate: 1e+308 is greater than the maximum of 1"),
    ({"runs": [{"name": "j", "learning_rate": 10}]}, "runs[0].learning_rate: 10 is greater than the maximum of 1"),
    ({"defaults": {"learning_rate": 1e-30}}, "defaults.learning_rate: 1e-30 is less than the minimum of 1e-10"),
    ({"runs": [{"name": "j", "head_learning_rate": 2.0}]}, "runs[0].head_learning_rate: 2.0 is greater than the maximum of 1"),
    ({"seeds": list(range(10_000))}, "seeds: [0, 1, 2, 3, 4, ...] is too long (10,000 items; the maximum is 1,000)"),
    ({"runs": [{"name": "j", "seeds": list(range(1001))}]},
     "runs[0].seeds: [0, 1, 2, 3, 4, ...] is too long (1,001 items; the maximum is 1,000)"),
])
def test_a_bad_value_is_refused_naming_its_key_path(change, message):
    raw = {key: value for key, value in {**MINIMAL, **change}.items() if value is not None}
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_config(raw)


def test_learning_rates_and_seed_lists_at_their_bounds_load_and_just_past_them_are_refused():
    """A learning rate from 1e-10 to 1 (AdamW moves each weight by about the rate a step: past 1 it throws the encoder's
    weights, of median size 0.035, far from what it learned; below 1e-10 a step is under fp32's spacing for nearly every
    weight) and at most 1,000 seeds (a model each, for every run), in a config, from Python and on the command line alike."""
    bounds = {"learning_rate": 1.0, "head_learning_rate": 1e-10}
    config = parse_config({**MINIMAL, "seeds": list(range(1000)), "defaults": bounds})
    assert len(config.seeds) == 1000 and (config.runs[0].train.learning_rate, config.runs[0].train.head_learning_rate) == (1.0, 1e-10)
    assert TrainConfig(learning_rate=1.0, head_learning_rate=1e-10).learning_rate == 1.0
    for name, past in [("learning_rate", math.nextafter(1.0, 2.0)), ("head_learning_rate", math.nextafter(1e-10, 0.0))]:
        with pytest.raises(ConfigError, match=f"^TrainConfig: {name}: "):
            TrainConfig(**{name: past})
    assert len(config.with_overrides(seeds=list(range(5, 1005))).seeds) == 1000
    with pytest.raises(ConfigError) as refused:
        config.with_overrides(seeds=list(range(1001)))
    assert str(refused.value) == "seeds: 1,001 seeds are too many (the maximum is 1,000): each trains one model a run"


def test_a_combination_a_run_refuses_names_its_key_path_and_no_class():
    """A config's author writes keys, not Python classes: ``defaults: span_loss_weight is 0``, not ``TrainConfig: ...``."""
    with pytest.raises(ConfigError) as refused:
        parse_config({**MINIMAL, "defaults": {"span_loss_weight": 0}})
    assert str(refused.value).startswith("defaults: span_loss_weight is 0, so the span head (heads 'span+bio') would not train")


@pytest.mark.parametrize("text, kind", [("null", "JSON null"), ("[]", "a JSON array"), ('"quick"', "a JSON string"),
                                        ("3", "a JSON number"), ("true", "a JSON boolean")])
def test_a_config_file_of_no_object_names_what_it_holds_as_json_does(text, kind, tmp_path):
    path = tmp_path / "ablation.json"
    path.write_text(text)
    with pytest.raises(DataFormatError) as refused:
        load_config(path)
    assert str(refused.value) == f"expected a JSON object, got {kind} (in {path})"


@pytest.mark.parametrize("given", ["Quick", "quick.json", "v2quick"])
def test_a_missing_config_file_named_like_a_preset_names_the_preset(given, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    preset = given.lower().removesuffix(".json").replace("v2quick", "v2-quick")
    with pytest.raises(DataFormatError, match=re.escape(f"no such config file (did you mean the preset {preset}? presets: {', '.join(PRESETS)})")):
        load_config(given)


def test_a_config_file_error_names_the_file_and_the_key_and_the_cli_prints_one_line(tmp_path, capsys):
    path = tmp_path / "ablation.json"
    path.write_text(json.dumps({**MINIMAL, "runs": [{"name": "j", "epochs": 0}]}))
    with pytest.raises(DataFormatError, match=re.escape(f"runs[0].epochs: 0 is less than or equal to the minimum of 0 (in {path})")):
        load_config(path)
    assert main(["compare", "--config", str(path), "--output-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "runs[0].epochs" in err and "Traceback" not in err and not (tmp_path / "out").exists()


def test_a_non_finite_number_in_a_config_file_is_one_line_as_json_spells_it(tmp_path, capsys):
    """The reader refuses NaN and Infinity written out; 1e999 reads as an infinity. The line names the key path and
    the value as JSON spells it, and no bound the value also breaks (``Infinity is greater than the maximum``)."""
    path = tmp_path / "ablation.json"
    path.write_text('{"train": {"path": "a.json"}, "eval": {"path": "b.json"}, "runs": [{"name": "j", "epochs": 1e999}], '
                    '"defaults": {"learning_rate": -1e999}}')
    assert main(["compare", "--config", str(path), "--output-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err == f"error: defaults.learning_rate must be a finite number, got -Infinity (and 1 more) (in {path})\n"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("make, line", [
    (lambda: TrainConfig(epochs=math.inf), "TrainConfig: epochs must be a finite number, got Infinity"),
    (lambda: TrainConfig(learning_rate=math.nan), "TrainConfig: learning_rate must be a finite number, got NaN"),
    (lambda: TrainConfig(bio_prior=(0.2, -math.inf, 0.7)), "TrainConfig: bio_prior[1] must be a finite number, got -Infinity"),
    (lambda: DecodeConfig(min_span_probability=np.float32("nan")), "DecodeConfig: min_span_probability must be a finite number, got NaN"),
])
def test_a_non_finite_number_from_python_is_named_as_json_spells_it(make, line):
    with pytest.raises(ConfigError) as refused:
        make()
    assert str(refused.value) == line


# What the loader refuses beyond the schema: a combination of keys, each message naming its key (or the cells).
BEYOND_THE_SCHEMA = ("unknown cell(s)", "split.fractions sum to 1", "split.part is 0 to", "must be a finite number",
                     "run names are unique", "run names differ beyond letter case", "a comparison needs a 'train' split", "would not train")


def _mutations(raw, path=()):
    """Every key of ``raw`` (lists: their first two items) removed, and given each of a few wrong or edge values."""
    node = raw
    for key in path:
        node = node[key]
    children = node.items() if isinstance(node, dict) else enumerate(node[:2]) if isinstance(node, list) else []
    for key, value in list(children):
        for changed in [None, True, 0, -1, 1.5, 2**32, "", "x", [], {}, "remove"]:
            edited = json.loads(json.dumps(raw))
            target = edited
            for part in path:
                target = target[part]
            if changed == "remove":
                del target[key]
            else:
                target[key] = changed
            yield (*path, key), changed, edited
        if isinstance(value, (dict, list)):
            yield from _mutations(raw, (*path, key))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["quick", "learning_curve.json", "multispanqa_cv.json", "v2_from_v1.json"])
def test_the_loader_accepts_exactly_what_the_published_schema_accepts(name):
    """A table of mutations of shipped configs: the package's validator of the published schema and the loader agree,
    but for the combinations only the loader can judge; each refusal is one line that begins with a key path."""
    from bio_mrc.config_schema import schema_validator

    validator = schema_validator(json.loads(PUBLISHED.read_text()))
    raw = json.loads((ABLATIONS / name).read_text()) if name.endswith(".json") else json.loads(
        (Path(__file__).parents[1] / "bio_mrc" / "harness" / "presets" / f"{name}.json").read_text())
    for path, changed, edited in _mutations(raw):
        valid = not list(validator.iter_errors(edited))
        try:
            parse_config(edited)
            refusal = None
        except ConfigError as err:
            refusal = str(err)
        assert "\n" not in (refusal or ""), (path, changed, refusal)
        if valid:
            assert refusal is None or any(words in refusal for words in BEYOND_THE_SCHEMA), (path, changed, refusal)
        else:
            assert refusal is not None and re.match(r"^(top level|[\w$]+(\[\d+\])*(\.[\w$]+(\[\d+\])*)*)", refusal), (path, changed, refusal)


@pytest.mark.parametrize("key", ["name", "runs"])
def test_a_name_ending_in_a_newline_is_refused_by_the_loader_and_the_published_schema(key):
    """Python's "$" matched before a final newline, so "span\\n" passed and named a model folder and report rows."""
    raw = {**MINIMAL, "name": "quick\n"} if key == "name" else {**MINIMAL, "runs": [{"name": "span\n", "heads": "span"}]}
    where = "name" if key == "name" else "runs[0].name"
    with pytest.raises(ConfigError, match=re.escape(where) + ': a name becomes a file name, .*; got "(quick|span)\\\\n"$'):
        parse_config(raw)
    assert list(jsonschema.Draft202012Validator(json.loads(PUBLISHED.read_text())).iter_errors(raw))
    assert parse_config({**MINIMAL, "name": "quick", "runs": [{"name": "span", "heads": "span"}]}).runs[0].name == "span"


@pytest.mark.parametrize("change, message", [
    ({"runs": [{"name": "j", "fold_training_share": 0.5}]}, 'runs ["j"]: \'fold_training_share\' is a share of each'),
    ({"runs": [{"name": "j", "training_args": {"eval_strategy": "steps", "eval_steps": 5}}]}, 'runs ["j"] evaluate during training'),
    ({"runs": [{"name": "j", "training_args": {"lr": 1}}]}, 'runs[0]: training_args: "lr" is not a TrainingArguments field'),
])
def test_the_runs_a_config_refuses_are_named_as_the_file_spells_them(change, message):
    with pytest.raises(ConfigError, match="^" + re.escape(message)):
        parse_config({**MINIMAL, **change})


def test_a_run_the_command_line_keeps_that_the_config_lacks_is_named_as_the_file_spells_it():
    with pytest.raises(ConfigError, match="^" + re.escape('unknown run(s) ["jiont"]; the runs of "comparison" are ["joint"]') + "$"):
        parse_config(MINIMAL).with_overrides(runs=["jiont"])


@pytest.mark.parametrize("change, message", [
    ({"baseline": "joint/spam"}, 'baseline: unknown cell(s) ["joint/spam"] (did you mean "joint/span" for "joint/spam"?)'),
    ({"contrasts": [["joint/span", "joint/bio"], ["joint/bio", "jiont/joint"]]},
     'contrasts[1][1]: unknown cell(s) ["jiont/joint"] (did you mean "joint/joint" for "jiont/joint"?); the cells (run/decoding) are '
     '["joint/span", "joint/bio", "joint/joint"]'),
    ({"contrasts": [["joint/span", "joint/bio"], ["joint/bio", "joint/bio"]]},
     'contrasts[1]: a contrast compares two different cells; got ["joint/bio", "joint/bio"]'),
    ({"baseline_left_out": "gone"}, 'baseline_left_out: "gone" is not a cell label of the form run/decoding'),
    ({"baseline_left_out": "gone/spam"}, 'baseline_left_out: "gone/spam" names no decoding; the decodings are span, bio, joint'),
])
def test_a_cell_the_config_names_wrong_is_refused_naming_its_key_path(change, message):
    with pytest.raises(ConfigError, match="^" + re.escape(message)):
        parse_config({**MINIMAL, **change})
    assert parse_config({**MINIMAL, "baseline_left_out": "gone/bio"}).baseline_left_out == "gone/bio"


@pytest.mark.parametrize("given", ["", "  "])
def test_an_empty_config_path_is_refused_not_read_as_the_current_folder(given, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["compare", "--config", given, "--output-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err == f"error: an empty path names no config file; give one, or a preset: {', '.join(PRESETS)} (in {given!r})\n"
    assert list(tmp_path.iterdir()) == []


def test_a_config_file_past_the_json_limit_is_refused_unread_and_one_beginning_with_a_tilde_is_found(tmp_path, monkeypatch):
    path = tmp_path / "ablation.json"
    path.write_text(json.dumps({**MINIMAL, "description": "x" * 500}))
    monkeypatch.setenv("BIO_MRC_MAX_JSON_BYTES", "100")
    with pytest.raises(DataFormatError, match=re.escape(f"the file is larger than 100 bytes (BIO_MRC_MAX_JSON_BYTES raises the limit) (in {path})")):
        load_config(path)
    monkeypatch.delenv("BIO_MRC_MAX_JSON_BYTES")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert load_config("~/ablation.json").runs[0].name == "joint"


def test_a_config_may_name_its_schema_for_editors():
    assert parse_config({"$schema": "compare-config.schema.json", **MINIMAL}).runs[0].name == "joint"


def test_the_dataclasses_refuse_out_of_range_values_from_python_too():
    with pytest.raises(ConfigError, match="TrainConfig: epochs: 0 is less than or equal to the minimum of 0"):
        TrainConfig(epochs=0)
    with pytest.raises(ConfigError, match='TrainConfig: batch_size: 2.0 is not of type "integer"'):
        TrainConfig(batch_size=2.0)
    with pytest.raises(ConfigError, match="DecodeConfig: n_best: 0 is less than the minimum of 1"):
        DecodeConfig(n_best=0)
    assert TrainConfig(epochs=2, bio_prior=(0.1, 0.1, 0.8)).epochs == 2


def test_the_dataclasses_take_numpy_integers_as_python_ints_and_still_refuse_floats_and_bools():
    from bio_mrc.serving.config import ServeConfig

    decode = DecodeConfig(n_best=np.int64(5), max_answer_length=np.int32(7))
    assert (decode.n_best, decode.max_answer_length) == (5, 7) and type(decode.n_best) is type(decode.max_answer_length) is int
    train = TrainConfig(epochs=np.int64(2), batch_size=np.int16(4))
    assert json.dumps(train.to_dict()) == json.dumps(TrainConfig(epochs=2, batch_size=4).to_dict())
    assert type(ServeConfig(port=np.uint16(8080)).port) is int
    for value in (5.0, np.float64(5), True, np.int64(0)):
        with pytest.raises(ConfigError, match="DecodeConfig: n_best: "):
            DecodeConfig(n_best=value)


def test_the_dataclasses_take_numpy_floats_as_python_floats_that_json_can_write():
    """``np.float32`` passed the schema as a number, then ``json`` could not write the run record or model card."""
    from bio_mrc.serving.config import ServeConfig

    train = TrainConfig(learning_rate=np.float32(0.25), bio_prior=(np.float32(0.25), np.float64(0.25), 0.5))
    assert type(train.learning_rate) is float and [type(p) for p in train.bio_prior] == [float, float, float]
    assert json.dumps(train.to_dict()) == json.dumps(TrainConfig(learning_rate=0.25, bio_prior=(0.25, 0.25, 0.5)).to_dict())
    decode = DecodeConfig(bio_length_prior=np.float32(1.5))
    assert type(decode.bio_length_prior) is float and decode.bio_length_prior == 1.5
    assert json.dumps(dataclasses.asdict(ServeConfig(max_wait_ms=np.float16(2.0))))
    with pytest.raises(ConfigError, match="DecodeConfig: bio_length_prior must be a finite number, got NaN"):
        DecodeConfig(bio_length_prior=np.float32(np.nan))


def test_a_length_prior_past_a_model_folders_bound_is_refused():
    """β = 1e308 overflowed the BIO decoding's sums to NaN: every question answered its first token, confidence 1.0."""
    with pytest.raises(ConfigError, match="DecodeConfig: bio_length_prior: 1e\\+308 is greater than the maximum of 1000000.0"):
        DecodeConfig(bio_length_prior=1e308)
    with pytest.raises(ConfigError, match="bio_length_prior: -10000000.0 is less than the minimum of -1000000.0"):
        DecodeConfig(bio_length_prior=-1e7)
    assert DecodeConfig(bio_length_prior=-1e6).bio_length_prior == -1e6


def test_the_json_reader_refuses_nan_and_lone_surrogates_and_allows_a_byte_order_mark(tmp_path):
    with pytest.raises(ValueError, match="NaN is not a JSON number"):
        loads('{"epochs": NaN}')
    with pytest.raises(ValueError, match=re.escape("\\ud800 is half of a UTF-16 surrogate pair, no character (line 2, column 14)")):
        loads('{"data": [\n {"title": "x\\ud800"}]}')
    assert loads('"\\ud83d\\ude00 \\\\ud800"') == "\U0001F600 \\ud800"  # a pair, and an escaped backslash
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(MINIMAL).encode())
    assert load_config(path).runs[0].name == "joint"


def test_a_config_description_with_a_lone_surrogate_is_refused_before_any_work(tmp_path):
    path = tmp_path / "ablation.json"
    path.write_text(json.dumps({**MINIMAL, "description": "caf\ud800"}))  # json.dumps escapes it as \ud800
    with pytest.raises(DataFormatError, match="surrogate"):
        load_config(path)


# Random JSON-like values: every loader returns its result or raises the package's own error.
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
CONFIG_KEYS = st.sampled_from(["name", "train", "eval", "tune", "defaults", "runs", "decode", "seeds", "cross_validation",
                               "baseline", "contrasts", "checkpoint_steps", "path", "limit", "split", "epochs", "heads"])
CONFIG_LIKE = st.dictionaries(CONFIG_KEYS, JSON_VALUES | st.just(MINIMAL["runs"]) | st.just({"path": "x"}), max_size=6)
GARBAGE = settings(max_examples=property_examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _one_line(error):
    """The package's refusal: one line that says something."""
    assert str(error).strip() and "\n" not in str(error), repr(str(error))


def _spans_inside(examples):
    """What a reader returns: every answer span a non-empty stretch of its own context."""
    for example in examples:
        for alternative in example.answers or ():
            assert all(0 <= start < end <= len(example.context) for start, end in alternative), example


@GARBAGE
@given(raw=CONFIG_LIKE)
def test_garbage_configs_parse_or_raise_a_config_error(raw):
    try:
        config = parse_config(raw)
    except ConfigError as error:
        _one_line(error)
    else:
        assert config.runs and all(run.name for run in config.runs)


@GARBAGE
@given(raw=JSON_VALUES | st.dictionaries(st.sampled_from(["data", "version"]), JSON_VALUES, max_size=2))
def test_garbage_squad_and_multispanqa_objects_parse_or_raise_a_data_format_error(raw):
    for parse, examples in ((parse_squad, lambda read: read.examples), (parse_multispanqa, lambda read: read)):
        try:
            read = parse(raw)
        except DataFormatError as error:
            _one_line(error)
        else:
            _spans_inside(examples(read))


@GARBAGE
@given(content=st.binary(max_size=200) | JSON_VALUES.map(lambda v: json.dumps(v).encode()))
def test_garbage_files_load_or_raise_a_bio_mrc_error(tmp_path_factory, content):
    folder = tmp_path_factory.mktemp("garbage")
    for name in ("data.json", "data.jsonl"):
        path = folder / name
        path.write_bytes(content)
        try:
            read = load_squad(path)
        except BioMrcError as error:
            _one_line(error)
            assert name in str(error)  # the file is named
        else:
            _spans_inside(read.examples)


def test_a_head_whose_loss_weighs_nothing_is_refused():
    """--span-loss-weight 0 trained nothing into the span head (final_loss 0.0) and saved its random initialisation."""
    with pytest.raises(ConfigError, match=r"TrainConfig: span_loss_weight is 0, so the span head \(heads 'span\+bio'\) would not train"):
        TrainConfig(span_loss_weight=0)
    with pytest.raises(ConfigError, match="bio_loss_weight is 0, so the bio head"):
        TrainConfig(heads="bio", bio_loss_weight=0.0)
    assert TrainConfig(heads="bio", span_loss_weight=0).span_loss_weight == 0  # a head the model lacks
