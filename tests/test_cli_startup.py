"""The command line's front: every command's help, light imports, run_qa.py's option names, did-you-mean,
the one default decoding, and transformers knowing bio_mrc models from ``import bio_mrc`` alone."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bio_mrc import registry
from bio_mrc.cli import build_parser, main

from .conftest import SAMPLE_V1

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ("train", "predict", "evaluate", "tune", "compare", "extract", "export", "convert", "serve")
HEAVY = ("torch", "transformers", "datasets", "sklearn")


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **env}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, cwd=ROOT, timeout=300)


def test_the_parser_knows_every_command():
    assert set(build_parser().command_parsers()) == set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_parser_given_one_commands_options_reads_that_command_as_the_whole_parser_does(command):
    """main gives only the command a run names its options: its help and defaults are the whole parser's, the top
    level's help lists every command alike, and the other commands have no option but -h."""
    whole, one = build_parser(), build_parser(commands=(command,))
    assert one.format_help() == whole.format_help()
    assert one.command_parsers()[command].format_help() == whole.command_parsers()[command].format_help()
    assert one.command_parsers()[command]._defaults == whole.command_parsers()[command]._defaults
    others = [name for name in COMMANDS if name != command]
    assert all(list(one.command_parsers()[name]._option_string_actions) == ["-h", "--help"] for name in others)


@pytest.mark.parametrize("argv", [
    ["--help", "train", "--train", "x"],  # the command's options after a top-level --help: its help, not a refusal
    ["--version", "predict", "--data", "q.json", "--decoding", "span"],
    ["--he", "tune", "--precision", "bf16"],
    ["-h", "serve", "--port=8000", "m"],
    ["--help", "extract", "--h"],  # --help or --html of extract: refused as ambiguous, not read as its only --help
    ["--help", "evaluate", "--data", "-q.json"],  # a value read as an option: refused before the help
    ["--version", "compare", "--max_seq_length", "3"],
])
def test_a_top_level_option_before_the_command_is_answered_as_the_whole_parser_answers(argv, capsys):
    with pytest.raises(SystemExit) as whole:
        build_parser().parse_args(argv)
    expected = (whole.value.code, capsys.readouterr())
    with pytest.raises(SystemExit) as run:
        main(argv)
    assert (run.value.code, capsys.readouterr()) == expected


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_answers_help(command, capsys):
    with pytest.raises(SystemExit) as exit:
        main([command, "--help"])
    assert exit.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: bio-mrc {command}")


def test_python_m_bio_mrc_is_the_command(monkeypatch, capsys):
    import runpy
    import warnings

    monkeypatch.setattr(sys, "argv", ["bio_mrc", "--version"])
    monkeypatch.delitem(sys.modules, "bio_mrc.__main__", raising=False)  # another test may have imported it
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        with pytest.raises(SystemExit) as exit, warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # runpy's: the module was imported before it ran as __main__
            runpy.run_module("bio_mrc", run_name="__main__", alter_sys=False)
        # the process's own end: a signal as the interpreter exits is set aside, not its death with no line
        assert {signal.getsignal(signum) for signum in handlers} == {signal.SIG_IGN}
    finally:  # this process goes on: its handlers are back
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    assert exit.value.code == 0
    assert capsys.readouterr().out.strip() == "bio-mrc 0.1.0"


# What a command's computing and checking needs, none of which its help or --version prints: numpy (arrays), jsonschema
# (config validation), and the model libraries.
NOT_FOR_HELP = (*HEAVY, "tokenizers", "numpy", "jsonschema")


@pytest.mark.parametrize("argv", [["--version"], ["--help"], *[[c, "--help"] for c in COMMANDS]], ids=" ".join)
def test_version_and_every_help_import_neither_numpy_jsonschema_nor_torch(argv):
    """Each in a fresh process, as the ``bio-mrc`` command runs it: the options, choices, defaults and help texts come
    from light modules; the validation and numeric code loads where a command validates or computes."""
    code = f"""
import sys
from bio_mrc.__main__ import command
sys.argv = ["bio-mrc", *{argv!r}]
try:
    command()
except SystemExit as exit:
    assert exit.code in (0, None), exit.code
print([m for m in {NOT_FOR_HELP!r} if m in sys.modules])
"""
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]", argv
    assert done.stdout.startswith("bio-mrc 0.1.0" if argv == ["--version"] else f"usage: bio-mrc {argv[0] if argv != ['--help'] else ''}")


def test_run_qa_names_are_read_as_the_package_options():
    args = build_parser().parse_args([
        "train", "--train_file", "t.json", "--output-dir", "o", "--model_name_or_path", "bert-base-uncased",
        "--max_seq_length", "256", "--doc_stride", "64", "--per_device_train_batch_size", "8",
        "--num_train_epochs", "2", "--learning_rate=3e-5"])
    assert (args.train, args.encoder, args.max_seq_length, args.doc_stride, args.batch_size, args.epochs, args.learning_rate) == (
        "t.json", "bert-base-uncased", 256, 64, 8, 2.0, 3e-5)
    args = build_parser().parse_args([
        "predict", "--model_name_or_path", "m", "--data", "d.json", "--output", "p.json", "--n_best_size", "5",
        "--max_answer_length", "12"])
    assert (args.model, args.n_best, args.max_answer_length) == ("m", 5, 12)
    assert build_parser().parse_args(["serve", "--model_name_or_path", "m"]).model_option == "m"


@pytest.mark.parametrize("argv, message", [
    (["train", "--max_seq_lenght", "3"], "error: bio-mrc train has no option --max_seq_lenght; did you mean --max-seq-length?"),
    (["predict", "--modle", "m"], "error: bio-mrc predict has no option --modle; did you mean --model?"),
    (["predict", "--max_seq_length", "256"],
     "error: bio-mrc predict has no option --max_seq_length: --max-seq-length is an option of train, convert only "
     "(bio-mrc predict --help lists its own)"),
    (["--verison"], "error: bio-mrc has no option --verison; did you mean --version?"),
    (["--hlep"], "error: bio-mrc has no option --hlep; did you mean --help?"),
    # spelt like no option: the dashes every option begins with make no likeness (was: did you mean --help?)
    (["train", "--lr", "1"], "error: bio-mrc train has no option --lr; bio-mrc train --help lists its options"),
    (["train", "--model", "m"],  # the other commands' --model: two options of train, not the one spelt alike
     "error: bio-mrc train has no option --model: the encoder to start from is --encoder, a trained bio_mrc model to "
     "continue --init-from"),
    (["predcit", "--model", "m"], "error: bio-mrc has no command 'predcit'; did you mean predict?"),
    # a space, but no option before it takes a value: no text, so still an option spelt wrong
    (["predict", "--model", "m", "--dat a", "x"], "error: bio-mrc predict has no option --dat a; did you mean --data?"),
    (["extract", "--model", "m", "--question", "q", "stray"],
     "error: bio-mrc extract: unexpected argument 'stray' (bio-mrc extract --help lists what it takes)"),
])
def test_an_unknown_option_or_command_is_one_line_with_a_guess(argv, message, capsys):
    with pytest.raises(SystemExit) as exit:
        main(argv)
    assert exit.value.code == 2
    assert capsys.readouterr().err == message + "\n"


@pytest.mark.parametrize("text", ["--Newton formulated the laws.", "-- The Normans came", "---\ntitle: notes", "--topic=the laws"])
def test_a_text_beginning_with_dashes_is_read_as_the_text_argparse_reads(text):
    # a token with a space that names no option is a value to argparse; it was refused as an unknown option
    args = build_parser().parse_args(["extract", "--model", "m", "--question", text, "--context", "a", text])
    assert (args.question, args.context) == (text, ["a", text])


def test_serve_takes_the_model_as_an_option_or_an_argument_once(capsys):
    assert build_parser().parse_args(["serve", "--model", "m"]).model_option == "m"
    assert build_parser().parse_args(["serve", "m"]).model == "m"
    for argv in (["serve"], ["serve", "--model", "a", "b"]):
        assert main(argv) == 2
        # the help's MODEL, which may be a hub id (was: --model DIR (or DIR alone))
        assert capsys.readouterr().err == "error: serve takes the model once: --model MODEL (or MODEL alone)\n"


def test_every_model_command_takes_a_device_checked_before_any_work(capsys):
    for command in ("train", "predict", "tune", "extract", "serve", "compare"):
        assert "--device" in build_parser().command_parsers()[command]._option_string_actions, command
    # no such data file either: the device is refused first
    assert main(["predict", "--model", "m", "--data", "missing.json", "--output", "p.json", "--device", "tpu"]) == 2
    assert capsys.readouterr().err == "error: device 'tpu': one of cpu, cuda, cuda:N (the GPU numbered N), mps, auto\n"


def test_one_default_decoding_the_best_the_heads_allow():
    assert registry.resolve_decoding(["span", "bio", "joint"], registry.AUTO_DECODING) == "joint"
    assert registry.resolve_decoding(["span"], registry.AUTO_DECODING) == "span"
    assert registry.resolve_decoding(["bio"], registry.AUTO_DECODING) == "bio"
    for command in ("predict", "extract"):
        argv = [command, "--model", "m", "--data", "d", "--output", "o"] if command == "predict" else [command, "--model", "m", "--question", "q"]
        default = build_parser().parse_args(argv).decoding
        assert default in (registry.AUTO_DECODING, [registry.AUTO_DECODING]), command


def test_the_registration_module_names_the_model_type_and_task():
    from bio_mrc import transformers_registration
    from bio_mrc.inference.pipeline import TASK
    from bio_mrc.model import BioMrcConfig

    assert transformers_registration.MODEL_TYPE == BioMrcConfig.model_type
    assert transformers_registration.TASK == TASK
    assert transformers_registration.MODEL_MODULE == BioMrcConfig.__module__


@pytest.fixture(scope="module")
def joint_model(trained_dir):
    """The session's joint model (span+bio heads): the tests here only read it."""
    return trained_dir


def test_predict_defaults_to_the_joint_decoding_on_a_joint_model(joint_model, tmp_path, capsys):
    capsys.readouterr()
    assert main(["predict", "--model", str(joint_model), "--data", str(SAMPLE_V1), "--output", str(tmp_path / "p.json")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"questions", "seconds", "joint"}


@pytest.mark.slow
def test_import_bio_mrc_alone_lets_transformers_load_its_models_and_pipeline(joint_model):
    """A fresh interpreter: no register call, and nothing heavy loads until transformers asks."""
    code = f"""
import sys
import bio_mrc
assert not [m for m in {HEAVY!r} if m in sys.modules]
from transformers import AutoConfig, AutoModel, AutoModelForQuestionAnswering, pipeline
print(type(AutoConfig.from_pretrained({str(joint_model)!r})).__name__)
print(type(AutoModelForQuestionAnswering.from_pretrained({str(joint_model)!r})).__name__)
qa = pipeline("bio-mrc-qa", model={str(joint_model)!r}, device="cpu")
answer = qa(question="Who wrote it?", context="Ada Lovelace wrote it.")
print(sorted(answer))
"""
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["BioMrcConfig", "BioMrcForQuestionAnswering", "['answer', 'end', 'score', 'start']"]


@pytest.mark.slow
def test_transformers_imported_first_then_bio_mrc_knows_the_pipeline(joint_model):
    code = f"""
import transformers.pipelines
from transformers import pipeline
import bio_mrc
qa = pipeline("bio-mrc-qa", model={str(joint_model)!r}, device="cpu")
print(type(qa).__name__)
"""
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "BioMrcQuestionAnsweringPipeline"


BARS_INTO_A_LOG = """
import io, time
from bio_mrc.cli.console import bars_for_a_log
with bars_for_a_log(io.StringIO()):  # standard error a file: no terminal
    from tqdm.auto import tqdm
    log = io.StringIO()
    for _ in tqdm(range(40), file=log):
        time.sleep(0.01)
print(log.getvalue().count("\\r"))
"""


BARS_OF_A_TQDM_IMPORTED_BEFORE = """
import io, time
from tqdm.auto import tqdm  # as the command line has it: bio_mrc imports transformers, which imports tqdm
from bio_mrc.cli.console import bars_for_a_log
log = io.StringIO()
with bars_for_a_log(io.StringIO()):
    for _ in tqdm(range(40), file=log):
        time.sleep(0.01)
after = io.StringIO()
for _ in tqdm(range(40), file=after, delay=0):  # the caller's default again afterwards
    time.sleep(0.01)
print(log.getvalue().count("\\r"), after.getvalue().count("\\r") > 2)
"""


def test_progress_bars_into_a_log_file_redraw_rarely_where_tqdm_was_imported_first():
    """The command's bars redrew ten times a second into a log: tqdm, imported with the package, had read its
    TQDM_MININTERVAL before the command set it."""
    environment = {key: value for key, value in os.environ.items() if key != "TQDM_MININTERVAL"}
    result = subprocess.run([sys.executable, "-c", BARS_OF_A_TQDM_IMPORTED_BEFORE], capture_output=True, text=True,
                            env=environment, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["2", "True"]


def test_progress_bars_into_a_log_file_redraw_rarely():
    environment = {key: value for key, value in os.environ.items() if key != "TQDM_MININTERVAL"}
    result = subprocess.run([sys.executable, "-c", BARS_INTO_A_LOG], capture_output=True, text=True, env=environment,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == 2  # the empty bar and the full one (were a redraw every 0.1 s: about four more for these 0.4 s)
    assert "TQDM_MININTERVAL" not in os.environ
