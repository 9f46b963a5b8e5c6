"""Hostile values of command-line options (0, NaN, 1e309, out of range) are refused before any work, torch not yet
loaded, in one line naming the option; the Python call refuses the same value in the same words."""

from __future__ import annotations

import pytest

from bio_mrc.cli import main
from bio_mrc.errors import ConfigError

from .conftest import SAMPLE_V1
from .test_early_refusals import refusals

# Each option past its bound, and the line it gets: the range of TrainConfig's own field.
TRAIN_OPTIONS = [
    (["--epochs", "0"], "error: TrainConfig: epochs: 0.0 is less than or equal to the minimum of 0"),
    (["--learning-rate", "nan"], "error: --learning-rate must be a finite number, got nan"),
    (["--warmup-ratio", "1e309"], "error: --warmup-ratio must be a finite number, got 1e309"),
    (["--doc-stride", "-1"], "error: TrainConfig: doc_stride: -1 is less than the minimum of 0"),
    (["--seed", "9223372036854775808"], "error: TrainConfig: seed: 9223372036854775808 is greater than the maximum of 4294967295"),
    (["--bio-prior", "2.5", "1", "1"], "error: TrainConfig: bio_prior[0]: 2.5 is greater than the maximum of 1"),
]


def _train_argv(tiny_encoder_dir, tmp_path, options: list[str]) -> list[str]:
    return ["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "out"), "--encoder", str(tiny_encoder_dir), *options]


def test_train_refuses_an_option_past_its_range_before_fitting_windows_to_a_shorter_encoder(refusals, tiny_encoder_dir, tmp_path):
    """An encoder of fewer positions than the default window (the tiny one holds 128) had its windows fitted first:
    torch loaded to count them, and a note said what training would run with before the option was refused."""
    argvs = [_train_argv(tiny_encoder_dir, tmp_path, options) for options, _ in TRAIN_OPTIONS]
    assert refusals(argvs, tmp_path) == {"lines": [[2, line] for _, line in TRAIN_OPTIONS], "heavy": []}
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("options, line", TRAIN_OPTIONS)
def test_train_says_the_refusal_alone(tiny_encoder_dir, tmp_path, capsys, options, line):
    assert main(_train_argv(tiny_encoder_dir, tmp_path, options)) == 2
    assert capsys.readouterr().err.strip() == line  # no note of fitted windows before it
    assert not (tmp_path / "out").exists()


EXPORT_OPTIONS = [
    (["--opset", "0"], "error: opset is an ONNX opset version from 7 to {newest} (the installed onnx's newest), got 0"),
    (["--opset", "-1"], "error: opset is an ONNX opset version from 7 to {newest} (the installed onnx's newest), got -1"),
    (["--atol", "0"], "error: atol is the largest logit difference from PyTorch an export may have, a number above 0, got 0.0"),
    (["--atol", "nan"], "error: --atol must be a finite number, got nan"),
    (["--atol", "1e309"], "error: --atol must be a finite number, got 1e309"),  # as typed, not as float() reads it
]


def test_export_refuses_its_opset_and_tolerance_before_torch_loads(refusals, model_dir, tmp_path):
    onnx = pytest.importorskip("onnx")
    argvs = [["export", "--model", str(model_dir), "--output", str(tmp_path / "out"), *options] for options, _ in EXPORT_OPTIONS]
    lines = [[2, line.format(newest=onnx.defs.onnx_opset_version())] for _, line in EXPORT_OPTIONS]
    assert refusals(argvs, tmp_path) == {"lines": lines, "heavy": []}
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("keyword, value, words", [
    ("opset", 0, "opset is an ONNX opset version from 7 to"), ("atol", float("inf"), "atol must be a finite number, got inf"),
    ("atol", -1.0, "a number above 0, got -1.0")])
def test_export_onnx_refuses_the_same_values(model_dir, tmp_path, keyword, value, words):
    from bio_mrc.inference.onnx import export_onnx

    with pytest.raises(ConfigError, match=words.replace("(", r"\(")):
        export_onnx(model_dir, tmp_path / "out", **{keyword: value})
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def model_dir(tiny_encoder_dir, tmp_path_factory):
    from .conftest import untrained_model_folder

    return untrained_model_folder(tiny_encoder_dir, tmp_path_factory.mktemp("hostile") / "model", heads="span+bio",
                                  max_seq_length=48, doc_stride=16, max_query_length=12)


@pytest.mark.parametrize("device", ["cuda:²", "cuda:", "cuda:-1", "tpu"])
def test_a_device_that_names_no_gpu_is_one_line(tmp_path, capsys, device):
    """``cuda:²`` passed str.isdigit and ended in int()'s traceback; ``cuda:`` was read as ``cuda``."""
    from bio_mrc.precision import resolve_device

    line = f"error: device {device!r}: one of cpu, cuda, cuda:N (the GPU numbered N), mps, auto"
    assert main(["predict", "--model", "m", "--data", "d", "--output", str(tmp_path / "o.json"), "--device", device]) == 2
    assert capsys.readouterr().err.strip() == line
    with pytest.raises(ConfigError, match="one of cpu, cuda, cuda:N"):
        resolve_device(device)


def test_a_device_of_no_such_form_is_refused_before_torch_loads(refusals, tmp_path):
    """``tpu``, ``0`` and ``cuda:-1`` were refused once torch had loaded to look for such a device (``train`` pins it)."""
    devices = ["tpu", "0", "cuda:-1", "cuda:²", "cuda:", "gpu:0", "cuda:0:1"]
    commands = [["predict", "--model", "m", "--data", "d", "--output", str(tmp_path / "o.json")],
                ["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "out")]]
    result = refusals([[*command, "--device", device] for device in devices for command in commands], tmp_path)
    assert result == {"lines": [[2, f"error: device {device!r}: one of cpu, cuda, cuda:N (the GPU numbered N), mps, auto"]
                                for device in devices for _ in commands], "heavy": []}
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv, flag", [
    (["extract", "--model", "m", "--question", "Who?", "--context", "The Normans.", "--html", ""], "--html"),
    (["train", "--train", str(SAMPLE_V1), "--output-dir", "{out}", "--eval", ""], "--eval"),
    (["evaluate", "--data", str(SAMPLE_V1), "--predictions", "p.json", "--na-probs", ""], "--na-probs"),
    (["evaluate", "--data", str(SAMPLE_V1), "--predictions", "p.json", "--baseline", ""], "--baseline"),
    (["compare", "--config", "quick", "--output-dir", "{out}", "--cells-from", ""], "--cells-from"),
])
def test_an_empty_optional_file_is_refused_not_read_as_left_out(tmp_path, capsys, argv, flag):
    """An empty --html wrote no page and --eval evaluated nothing, each with status 0: an unset shell variable read as
    the option left out."""
    argv = [arg.replace("{out}", str(tmp_path / "out")) for arg in argv]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == f"error: {flag}: an empty path names no file; give one, or leave the option out"
    assert not (tmp_path / "out").exists()


BUDGET_LINE = "BIO_MRC_WINDOWS_CACHE_GB='abc': give the windows cache's size as a number of gigabytes, 0 or more"


def test_a_windows_cache_size_that_is_no_number_is_refused_before_any_work(refusals, tiny_encoder_dir, tmp_path):
    """It was read once the windows were built: after the data was read and the model loaded, leaving OUTPUT_DIR/checkpoints."""
    argv = ["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "out"), "--encoder", str(tiny_encoder_dir),
            "--max-seq-length", "48", "--doc-stride", "16", "--max-query-length", "12"]
    assert refusals([argv], tmp_path, BIO_MRC_WINDOWS_CACHE_GB="abc") == {"lines": [[2, f"error: {BUDGET_LINE}"]], "heavy": []}
    assert not (tmp_path / "out").exists()


def test_train_model_refuses_the_same_windows_cache_size_before_making_its_folder(tiny_encoder_dir, tmp_path, monkeypatch):
    from bio_mrc.data.squad import load_squad
    from bio_mrc.training.config import TrainConfig
    from bio_mrc.training.train import train_model

    monkeypatch.setenv("BIO_MRC_WINDOWS_CACHE_GB", "abc")
    config = TrainConfig(encoder=str(tiny_encoder_dir), max_seq_length=48, doc_stride=16, max_query_length=12)
    with pytest.raises(ConfigError) as refusal:
        train_model(load_squad(str(SAMPLE_V1)), config, tmp_path / "out")
    assert str(refusal.value) == BUDGET_LINE
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("argv", "name", "expected"), [
    (["extract", "--model", "m", "--question", "q", "--context", "a", "b", "--context", "c"], "context", ["a", "b", "c"]),
    (["extract", "--model", "m", "--question", "q", "--context-file", "x", "--context-file", "y"], "context_file", ["x", "y"]),
    (["predict", "--model", "m", "--data", "d", "--output", "o", "--decoding", "span", "--decoding", "bio"], "decoding", ["span", "bio"]),
    (["predict", "--model", "m", "--data", "d", "--output", "o"], "decoding", ["auto"]),
    (["compare", "--config", "quick", "--seeds", "1", "--seeds", "2", "3"], "seeds", [1, 2, 3]),
    (["compare", "--config", "quick", "--runs", "a", "--runs", "b"], "runs", ["a", "b"]),
])
def test_a_list_option_given_twice_keeps_the_values_of_both_uses(argv, name, expected):
    """argparse kept a list option's last use alone: ``--context a --context b`` answered from "b", the first text
    dropped without a word. Every use adds its values; the first replaces the default."""
    from bio_mrc.cli.parser import build_parser

    assert getattr(build_parser().parse_args(argv), name) == expected


# --- numbers written in another script's digits --------------------------------------------------------------------

# Each command's required options, so that one more option can be parsed alone.
REQUIRED = {"train": ["--train", "t", "--output-dir", "o"], "predict": ["--model", "m", "--data", "d", "--output", "o"],
            "evaluate": ["--data", "d", "--predictions", "p"], "tune": ["--model", "m", "--data", "d"], "compare": [],
            "extract": ["--model", "m", "--question", "q"], "export": ["--model", "m", "--output", "o"],
            "convert": ["--model", "m", "--output", "o"], "serve": []}


def _is_number(value) -> bool:
    return any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (value if isinstance(value, list) else [value]))


def _number_options() -> list[tuple[str, str, int]]:
    """(command, option, values it takes) of every option of every command that reads ``3`` as a number."""
    import argparse
    import contextlib
    import io

    from bio_mrc.cli.parser import build_parser

    parser = build_parser()
    commands = next(action.choices for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    found = []
    for command, sub in commands.items():
        for action in sub._actions:
            if not action.option_strings or action.nargs == 0:
                continue
            count = action.nargs if isinstance(action.nargs, int) else 1
            option = max(action.option_strings, key=len)
            with contextlib.suppress(SystemExit), contextlib.redirect_stderr(io.StringIO()):  # a choice, JSON: no number
                if _is_number(getattr(parser.parse_args([command, *REQUIRED[command], option, *["3"] * count]), action.dest)):
                    found.append((command, option, count))
    return found


def test_the_number_options_are_found_in_every_command():
    names = {(command, option) for command, option, _ in _number_options()}
    assert {("train", "--epochs"), ("train", "--limit"), ("train", "--seed"), ("train", "--bio-prior"),
            ("train", "--attention-dropout"), ("predict", "--batch-size"), ("predict", "--max-answer-length"),
            ("evaluate", "--seed"), ("evaluate", "--resamples"), ("tune", "--min-calibration-questions"),
            ("compare", "--seeds"), ("extract", "--top-k"), ("export", "--opset"), ("export", "--atol"),
            ("convert", "--doc-stride"), ("serve", "--port"), ("serve", "--max-wait-ms")} <= names


@pytest.mark.parametrize("digits", ["٣", "３", "३", "3\u00a0", "٠"])  # Arabic-Indic, fullwidth, Devanagari; a no-break space
def test_no_number_option_reads_the_digits_of_another_script(capsys, digits):
    """int() and float() read any script's decimal digits: ``--epochs ٣`` trained 3 epochs and ``--limit ４`` read 4
    questions, as ``--device cuda:٣`` never did. Every option that reads a number refuses the text as typed, in one line
    (``٠`` too, which --limit read as 0 and refused as no positive number)."""
    from bio_mrc.cli.parser import build_parser

    parser, wrong = build_parser(), []  # one parser for every option: a refused parse leaves it as it was
    for command, option, count in _number_options():
        try:
            parser.parse_args([command, *REQUIRED[command], option, *["1"] * (count - 1), digits])
            code = 0
        except SystemExit as stopped:
            code = stopped.code
        err = capsys.readouterr().err
        if (code, err) != (2, f"error: {option} {digits!r}: write the number in ASCII digits (0-9)\n"):
            wrong.append((command, option, code, err[-200:]))
    assert not wrong


@pytest.mark.parametrize("argv, line", [
    (["train", "--train", "t", "--output-dir", "{out}", "--epochs", "٣"], "error: --epochs '٣': write the number in ASCII digits (0-9)"),
    (["train", "--train", "t", "--output-dir", "{out}", "--num_train_epochs=٣"], "error: --epochs '٣': write the number in ASCII digits (0-9)"),
    (["predict", "--model", "m", "--data", "d", "--output", "{out}", "--limit", "４"], "error: --limit '４': write the number in ASCII digits (0-9)"),
])
def test_a_number_in_another_scripts_digits_is_refused_in_one_line(tmp_path, capsys, argv, line):
    argv = [arg.replace("{out}", str(tmp_path / "out")) for arg in argv]
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2 and capsys.readouterr().err == line + "\n"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["٣", "１.５"])
def test_the_windows_cache_size_in_another_scripts_digits_is_refused(monkeypatch, value):
    """float() read ``BIO_MRC_WINDOWS_CACHE_GB=٣`` as 3 gigabytes."""
    from bio_mrc.features.windows_cache import cache_budget_bytes

    monkeypatch.setenv("BIO_MRC_WINDOWS_CACHE_GB", value)
    with pytest.raises(ConfigError) as refusal:
        cache_budget_bytes()
    assert str(refusal.value) == BUDGET_LINE.replace("'abc'", repr(value))


def test_a_comparison_configs_number_in_another_scripts_digits_is_no_json(tmp_path, capsys):
    """JSON's numbers are ASCII digits: a config's ``"epochs": ٣`` is refused as the file's JSON, naming the file."""
    config = tmp_path / "c.json"
    text = ('{"name": "q", "train": {"path": "t.json"}, "eval": {"path": "e.json"}, "defaults": {"epochs": ٣}, '
            '"runs": [{"name": "j", "heads": "span"}]}')
    config.write_text(text, encoding="utf-8")
    assert main(["compare", "--config", str(config), "--output-dir", str(tmp_path / "out")]) == 2
    column = text.index("٣") + 1
    assert capsys.readouterr().err == f"error: not valid JSON: Expecting value (line 1, column {column}) (in {config})\n"
    assert not (tmp_path / "out").exists()


# --- a device that needs no torch to be checked ----------------------------------------------------------------------

def test_a_cpu_device_is_checked_without_torch(refusals, tmp_path):
    """``--device cpu`` loaded torch to ask whether the machine has a CPU, before the command's own refusal (a missing
    model folder) that needs no torch; ``cpu`` is valid on any machine."""
    missing = str(tmp_path / "no-model")
    argvs = [["predict", "--model", missing, "--data", str(SAMPLE_V1), "--output", str(tmp_path / "o.json")],
             ["tune", "--model", missing, "--data", str(SAMPLE_V1)],
             ["extract", "--model", missing, "--question", "Who?", "--context", "The Normans."],
             ["train", "--train", str(tmp_path / "no-data.json"), "--output-dir", str(tmp_path / "out")]]
    result = refusals([[*argv, "--device", device] for argv in argvs for device in ("cpu", "CPU")], tmp_path)
    assert result["heavy"] == [] and [code for code, _ in result["lines"]] == [2] * 8, result
    assert not any(line.startswith("error: device") for _, line in result["lines"]), result
