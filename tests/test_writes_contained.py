"""A command writes nothing but its outputs: no stray temporary files when it is stopped (SIGTERM as Ctrl-C), no
folder of its own making left empty by a failure, and nothing of a dependency's telemetry in the user's folders."""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading

import pytest

from bio_mrc.cli import main
from bio_mrc.errors import BioMrcError, ConfigError

from .conftest import SAMPLE_V1, StoppedReplace


def _table_questions(folder):
    """The sample's questions as a CSV table (read through a temporary ``datasets`` cache) and empty predictions."""
    import csv

    rows = [[q["id"], article["title"], paragraph["context"], q["question"],
             json.dumps({"text": [a["text"] for a in q["answers"]], "answer_start": [a["answer_start"] for a in q["answers"]]})]
            for article in json.loads(SAMPLE_V1.read_text(encoding="utf-8"))["data"]
            for paragraph in article["paragraphs"] for q in paragraph["qas"]]
    with open(folder / "questions.csv", "w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows([["id", "title", "context", "question", "answers"], *rows])
    (folder / "preds.json").write_text(json.dumps({row[0]: "" for row in rows}))
    return folder / "questions.csv", folder / "preds.json"


def _terminated_while_reading(monkeypatch, temporary):
    """``datasets.load_dataset`` that has the process sent SIGTERM once it has read the table into its temporary cache."""
    import datasets

    real = datasets.load_dataset

    def load_then_terminate(*args, **kwargs):
        dataset = real(*args, **kwargs)
        assert any(temporary.iterdir())  # the cache is there to be left behind
        os.kill(os.getpid(), signal.SIGTERM)
        return dataset

    monkeypatch.setattr(datasets, "load_dataset", load_then_terminate)


class Terminated(Exception):
    """What SIGTERM raises in this test process outside ``main``."""


def _raise_terminated(signum, frame):
    raise Terminated


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signal handlers need the main thread")
def test_sigterm_ends_a_command_with_its_cleanups_and_restores_the_handler(tmp_path, monkeypatch):
    import tempfile

    data, predictions = _table_questions(tmp_path)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    _terminated_while_reading(monkeypatch, temporary)
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        with pytest.raises(SystemExit) as stopped:
            main(["evaluate", "--data", str(data), "--predictions", str(predictions)])
        assert signal.getsignal(signal.SIGTERM) is _raise_terminated
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert stopped.value.code == 128 + signal.SIGTERM
    assert list(temporary.iterdir()) == []


class _SignalledWhileCollected:
    """An object whose finalizer runs while SIGTERM arrives, as a dataset's ``__del__`` did at the end of a training run."""

    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(100_000):  # the handler runs here, inside the finalizer
            pass


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signal handlers need the main thread")
def test_sigterm_inside_a_finalizer_still_ends_the_command(capfd):
    """Raised inside ``__del__``, SystemExit was printed as "Exception ignored" and the command went on to exit 0."""
    from bio_mrc.stop_signals import terminate_as_exit

    with pytest.raises(SystemExit) as stopped, terminate_as_exit():
        _SignalledWhileCollected()  # collected at once: its finalizer runs here
        _a_while()
    assert stopped.value.code == 128 + signal.SIGTERM
    assert "Exception ignored" not in capfd.readouterr().err


class _InterruptedWhileCollected:
    """An object whose finalizer runs while a signal arrives (Ctrl-C's SIGINT, a scheduler's SIGTERM)."""

    def __init__(self, signum):
        self.signum = signum

    def __del__(self):
        os.kill(os.getpid(), self.signum)
        for _ in range(100_000):  # the handler runs here, inside the finalizer
            pass


def _command_collecting(monkeypatch, signum, then):
    """``evaluate`` replaced by a command that frees such an object, then runs ``then`` and returns 0."""
    import bio_mrc.cli as cli

    went_on = []

    def command(_args):
        _InterruptedWhileCollected(signum)  # collected at once: its finalizer runs here
        then()
        went_on.append(True)
        return 0

    monkeypatch.setattr(cli.parser, "cmd_evaluate", command)
    return went_on


def _a_while():
    """Short sleeps until a signal ends them (a minute at most, a hang guard): a signal sent again from the timer's
    thread wakes no sleep of this one, so its handler runs when the sleep under way ends. However loaded the machine,
    a signal the timer sends again lands here, not after."""
    import time

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread() or
                    signal.getsignal(signal.SIGINT) is not signal.default_int_handler,
                    reason="needs the main thread and Python's own Ctrl-C handler")
@pytest.mark.parametrize("then", [_a_while, lambda: None], ids=["midway", "at-the-end"])
def test_ctrl_c_inside_a_finalizer_still_ends_the_command(monkeypatch, capfd, then):
    """Python's own handler raised KeyboardInterrupt inside ``__del__``: printed as "Exception ignored", and the command
    went on to exit 0."""
    went_on = _command_collecting(monkeypatch, signal.SIGINT, then)
    assert main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(SAMPLE_V1)]) == 130
    assert capfd.readouterr().err == "interrupted\n"
    assert went_on == ([True] if then is not _a_while else [])
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


class _TimerFiredLate:
    """A timer whose thread has passed its own "cancelled?" check: ``fire`` runs its function whatever came between."""

    made: list = []

    def __init__(self, interval, function, args=None, kwargs=None):
        self.function, self.args = function, args or ()
        self.daemon = False
        _TimerFiredLate.made.append(self)

    def start(self):
        pass

    def cancel(self):
        pass

    def fire(self):
        self.function(*self.args)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread() or
                    signal.getsignal(signal.SIGINT) is not signal.default_int_handler,
                    reason="needs the main thread and Python's own Ctrl-C handler")
def test_a_held_ctrl_c_is_raised_once_when_its_timer_fires_as_the_command_ends(monkeypatch):
    """Ctrl-C landed in a finalizer in a command's last moments: the command's end raised it, and the timer that sends
    it again had fired as it ended and sent a second one after ``interrupted``: the process died of it (status -2)."""
    from bio_mrc import stop_signals

    monkeypatch.setattr(_TimerFiredLate, "made", [])
    monkeypatch.setattr(stop_signals.threading, "Timer", _TimerFiredLate)
    with pytest.raises(KeyboardInterrupt), stop_signals.terminate_as_exit():
        stop_signals._DEFERRED.defer(signal.SIGINT)
    timer = _TimerFiredLate.made[-1]
    monkeypatch.setattr(stop_signals.threading, "current_thread", lambda: timer)  # as its own thread sees itself
    timer.fire()  # sends nothing: the command's end took the signal
    for _ in range(1000):  # any signal sent would be handled here, in the main thread
        pass


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread() or
                    signal.getsignal(signal.SIGINT) is not signal.default_int_handler,
                    reason="needs the main thread and Python's own Ctrl-C handler")
def test_a_signal_handled_as_the_command_ends_still_gives_the_handlers_back(monkeypatch):
    """A signal sent as the command ended was raised inside its clean-up, which then skipped giving back the handlers
    before: a longer process calling ``main`` went on with the command's own."""
    from bio_mrc import stop_signals

    def stopped_here():
        raise KeyboardInterrupt

    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(stop_signals._DEFERRED, "cancel", stopped_here)
    with pytest.raises(KeyboardInterrupt), stop_signals.terminate_as_exit():
        pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler and signal.getsignal(signal.SIGTERM) == before


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signal handlers need the main thread")
def test_sigterm_ends_a_command_with_the_line_ctrl_c_prints(monkeypatch, capfd):
    """A SIGTERM stopped the command with status 143 and printed nothing."""
    _command_collecting(monkeypatch, signal.SIGTERM, _a_while)
    with pytest.raises(SystemExit) as stopped:
        main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(SAMPLE_V1)])
    assert stopped.value.code == 143
    assert capfd.readouterr().err == "interrupted\n"


def _with_checkpoints(folder, step):
    """A model folder beside the checkpoints of a run (the last at ``step``, holding the model's weights) and their options."""
    (folder / "checkpoints" / f"checkpoint-{step}").mkdir(parents=True)
    shutil.copy(folder / "model.safetensors", folder / "checkpoints" / f"checkpoint-{step}")
    (folder / "checkpoints" / "bio_mrc_train_config.json").write_text("{}")
    return folder


def _final_step(folder):
    return json.loads((folder / "training_log.json").read_text(encoding="utf-8"))[-1]["step"]


def test_train_resume_finishes_a_run_stopped_after_its_run_record(trained_dir, tmp_path, capsys):
    """train --resume refused it as a finished model, leaving its checkpoints and no card."""
    folder = tmp_path / "model"
    shutil.copytree(trained_dir, folder)
    (folder / "README.md").unlink()
    _with_checkpoints(folder, _final_step(folder))  # a stop once the run record was written
    weights = (folder / "model.safetensors").read_bytes()
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(folder), "--resume"]) == 0
    assert not (folder / "checkpoints").exists()
    assert (folder / "README.md").is_file()
    assert (folder / "model.safetensors").read_bytes() == weights  # nothing trained again
    assert json.loads(capsys.readouterr().out)["questions"] == 8


def test_train_resume_keeps_the_checkpoints_of_another_run_over_a_model(trained_dir, tmp_path, capsys):
    """train --overwrite over a finished model, stopped midway: its checkpoints are not the model's to finish."""
    folder = tmp_path / "model"
    shutil.copytree(trained_dir, folder)
    _with_checkpoints(folder, _final_step(folder) - 1)
    (folder / "checkpoints" / f"checkpoint-{_final_step(folder) - 1}" / "model.safetensors").write_bytes(b"the new run's weights")
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(folder), "--resume"]) == 2
    assert "holds a finished model" in capsys.readouterr().err
    assert (folder / "checkpoints" / f"checkpoint-{_final_step(folder) - 1}").is_dir()


DRIVER = """
import os, signal, sys
import datasets
from bio_mrc.cli import main
real = datasets.load_dataset
def load_then_terminate(*args, **kwargs):
    dataset = real(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGTERM)
    return dataset
datasets.load_dataset = load_then_terminate
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_a_command_killed_with_sigterm_leaves_nothing_in_the_temporary_folder(tmp_path):
    data, predictions = _table_questions(tmp_path)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    done = subprocess.run([sys.executable, "-c", DRIVER, "evaluate", "--data", str(data), "--predictions", str(predictions)],
                          env={**os.environ, "TMPDIR": str(temporary)}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 128 + signal.SIGTERM, done.stderr
    assert list(temporary.iterdir()) == []


def test_onnxruntime_is_imported_with_its_telemetry_off_unless_the_caller_chose(monkeypatch):
    from bio_mrc.inference import onnx_runner

    seen = []
    monkeypatch.setattr(onnx_runner.importlib, "import_module", lambda name: seen.append(os.environ.get("ORT_DISABLE_TELEMETRY")))
    monkeypatch.delenv("ORT_DISABLE_TELEMETRY", raising=False)
    onnx_runner.require("onnxruntime", "a test")
    monkeypatch.setenv("ORT_DISABLE_TELEMETRY", "0")
    onnx_runner.require("onnxruntime", "a test")
    assert seen == ["1", "0"]


@pytest.mark.slow
def test_loading_onnxruntime_writes_nothing_in_the_users_folders(tmp_path):
    pytest.importorskip("onnxruntime")
    folders = {name: tmp_path / name for name in ("HOME", "XDG_CACHE_HOME", "TMPDIR")}
    for folder in folders.values():
        folder.mkdir()
    env = {key: value for key, value in os.environ.items() if key != "ORT_DISABLE_TELEMETRY"}
    code = "from bio_mrc.inference.onnx_runner import require; require('onnxruntime', 'a test')"
    subprocess.run([sys.executable, "-c", code], env={**env, **{k: str(v) for k, v in folders.items()}}, check=True, timeout=300)
    assert [p for folder in folders.values() for p in folder.rglob("*")] == []


def test_a_comparison_refused_before_any_work_leaves_no_output_folder(tiny_encoder_dir, tmp_path):
    from bio_mrc.harness.compare import compare
    from bio_mrc.harness.config import parse_config

    raw = {"name": "overlap", "train": {"path": str(SAMPLE_V1)}, "eval": {"path": str(SAMPLE_V1)},
           "defaults": {"encoder": str(tiny_encoder_dir), "epochs": 1, "max_seq_length": 48, "doc_stride": 16, "max_query_length": 12},
           "runs": [{"name": "joint", "heads": "span+bio"}]}  # windows the encoder fits: the overlap is the one mistake
    with pytest.raises(ConfigError, match="overlap"):
        compare(parse_config(raw), SAMPLE_V1.parent, tmp_path / "new" / "out")
    assert not (tmp_path / "new" / "out").exists()


def test_a_failed_export_leaves_no_folder_of_its_own_making(trained_dir, tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from bio_mrc.inference import onnx

    def failing_export(trained, staging, opset, atol):
        (staging / onnx.ONNX_FILE).write_bytes(b"half a graph")
        raise BioMrcError("the exported graph's logits differ")

    monkeypatch.setattr(onnx, "write_export", failing_export)
    with pytest.raises(BioMrcError, match="differ"):
        onnx.export_onnx(trained_dir, tmp_path / "exported")
    assert not (tmp_path / "exported").exists()
    used = tmp_path / "used"
    used.mkdir()
    (used / "notes.txt").write_text("the user's")
    with pytest.raises(BioMrcError, match="differ"):
        onnx.export_onnx(trained_dir, used, overwrite=True)
    assert [p.name for p in used.iterdir()] == ["notes.txt"]


def test_ctrl_c_ends_a_command_with_one_line_and_status_130(monkeypatch, capsys):
    import bio_mrc.cli as cli

    def interrupted(_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli.parser, "cmd_evaluate", interrupted)
    assert main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(SAMPLE_V1)]) == 130
    assert capsys.readouterr().err == "interrupted\n"


@pytest.mark.parametrize("option", ["--output-dir", "--data-dir", "--encoder"])
def test_compare_refuses_an_empty_folder_option_instead_of_its_default(tmp_path, monkeypatch, capsys, option):
    """``--output-dir ""`` (an unset shell variable) wrote the comparison into runs/NAME of the current folder, and
    ``--data-dir ""`` read the default data folder, ``--encoder ""`` the config's encoder: each is refused, as every other
    command refuses an empty path."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.json").write_text(json.dumps({
        "name": "c", "train": {"path": SAMPLE_V1.name}, "eval": {"path": SAMPLE_V1.name}, "runs": [{"name": "span"}]}))
    given = {"--output-dir": str(tmp_path / "out"), "--data-dir": str(SAMPLE_V1.parent), option: ""}
    assert main(["compare", "--config", "c.json", *[part for pair in given.items() for part in pair], "--train-only"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("error: ") and "empty path" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]


# The marker's fields (but its source) of a stand-in for the export's graph and its check.
_FAKE_MARKER = {"format": "onnx", "export_format": 1, "file": "model.onnx", "inputs": ("input_ids", "attention_mask"),
                "outputs": ("span_start_logits", "span_end_logits"), "dynamic_axes": {"batch": 0, "sequence": 1}, "opset": 18,
                "exporter": "a stand-in", "checked_shapes": (), "max_abs_logit_difference": {}, "tolerance": 1e-4,
                "versions": {}, "created": "2026-01-01T00:00:00Z"}


def test_an_onnx_export_over_a_trained_model_leaves_none_of_its_weights(trained_dir, tmp_path, monkeypatch):
    """Weights left beside a new export were run by loading in its place (PyTorch comes first): the old model answered."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from bio_mrc.inference import onnx
    from bio_mrc.inference.loading import model_backend

    def export(trained, staging, opset, atol):
        (staging / onnx.ONNX_FILE).write_bytes(b"a graph")
        for name in ("config.json", "tokenizer.json"):
            shutil.copyfile(trained_dir / name, staging / name)
        return _FAKE_MARKER

    used = tmp_path / "used"
    shutil.copytree(trained_dir, used)
    (used / "notes.txt").write_text("the user's")
    monkeypatch.setattr(onnx, "write_export", export)
    onnx.export_onnx(trained_dir, used, overwrite=True)
    assert not (used / "model.safetensors").exists() and not (used / "training_log.json").exists()
    assert (used / "notes.txt").read_text() == "the user's" and model_backend(used) == "onnx"


def _stopped_once_moved(monkeypatch):
    """Ctrl-C landing the moment a staged model's files have moved into its output folder."""
    from bio_mrc import io

    real = io.atomic_move_files

    def move_then_stop(source, target):
        real(source, target)
        raise KeyboardInterrupt

    monkeypatch.setattr(io.output_folders, "atomic_move_files", move_then_stop)


def _fake_onnx_export(trained_dir):
    from bio_mrc.inference import onnx

    def export(trained, staging, opset, atol):
        (staging / onnx.ONNX_FILE).write_bytes(b"a graph")
        for name in ("config.json", "tokenizer.json", "bio_mrc_run.json"):
            shutil.copyfile(trained_dir / name, staging / name)
        return _FAKE_MARKER

    return export


def test_an_onnx_export_stopped_after_its_files_moved_in_has_its_card(trained_dir, tmp_path, monkeypatch):
    """The card was written after the marker, so an export stopped between them looked finished and had no card."""
    from bio_mrc.inference import onnx
    from bio_mrc.model_card import CARD_MARKER

    monkeypatch.setattr(onnx, "require", lambda *_: None)
    monkeypatch.setattr(onnx, "write_export", _fake_onnx_export(trained_dir))
    whole = tmp_path / "whole"
    onnx.export_onnx(trained_dir, whole)
    _stopped_once_moved(monkeypatch)
    stopped = tmp_path / "whole-stopped"
    with pytest.raises(KeyboardInterrupt):
        onnx.export_onnx(trained_dir, stopped)
    card = (stopped / "README.md").read_text(encoding="utf-8")
    assert CARD_MARKER in card and card == (whole / "README.md").read_text(encoding="utf-8").replace("whole", "whole-stopped")
    assert not (stopped / onnx.EXPORT_FILE).exists()  # no marker: an unfinished export, as loading says


def test_a_transformers_export_stopped_after_its_files_moved_in_has_its_card(trained_dir, tmp_path, monkeypatch):
    from bio_mrc.inference.conversion import export_qa_checkpoint
    from bio_mrc.model_card import CARD_MARKER

    _stopped_once_moved(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        export_qa_checkpoint(trained_dir, tmp_path / "exported")
    assert CARD_MARKER in (tmp_path / "exported" / "README.md").read_text(encoding="utf-8")
    assert (tmp_path / "exported" / "model.safetensors").is_file()


def test_an_export_keeps_a_card_written_by_hand_in_its_folder(trained_dir, tmp_path):
    from bio_mrc.inference.conversion import export_qa_checkpoint
    from bio_mrc.model_card import ForeignCardWarning

    used = tmp_path / "used"
    used.mkdir()
    (used / "README.md").write_text("my notes")
    with pytest.warns(ForeignCardWarning, match="not written by bio_mrc"):
        export_qa_checkpoint(trained_dir, used, overwrite=True)
    assert (used / "README.md").read_text() == "my notes"


def test_ctrl_c_closes_the_open_bars_before_its_line(monkeypatch, capsys):
    """Trainer's bar, left open by the stop, had ``interrupted`` written on its own line and drew itself again below it
    as the process ended: the line was neither one of its own nor the last."""
    import tqdm

    import bio_mrc.cli as cli

    left_open = []

    def interrupted_midway(_args):
        bar = tqdm.tqdm(total=10, file=sys.stderr, ascii=True)
        bar.update(3)
        left_open.append(bar)
        raise KeyboardInterrupt

    monkeypatch.setattr(cli.parser, "cmd_evaluate", interrupted_midway)
    assert main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(SAMPLE_V1)]) == 130
    bar, line, end = capsys.readouterr().err.split("\r")[-1].split("\n")
    assert "3/10" in bar and (line, end) == ("interrupted", "")
    assert left_open[0].disable  # closed


def test_answers_past_ascii_print_as_json_escapes_where_stdout_cannot_hold_them(monkeypatch):
    """``PYTHONIOENCODING=ascii`` (or the C locale without UTF-8): an answer's "ë" ended the command in a
    ``UnicodeEncodeError`` traceback once the work was done, and so did compare's table (its ``BIO β`` column)."""
    import io

    import bio_mrc.cli as cli
    from bio_mrc.io import printable_json

    def prints_answers(_args):
        print(printable_json({"answer": "Zoë 😀"}))
        print("| run | BIO β |")
        return 0

    for errors in ("strict", "surrogateescape"):
        stdout = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors=errors)
        monkeypatch.setattr(sys, "stdout", stdout)
        monkeypatch.setattr(cli.parser, "cmd_evaluate", prints_answers)
        assert main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(SAMPLE_V1)]) == 0
        stdout.flush()
        first, table = stdout.buffer.getvalue().decode("ascii").splitlines()
        assert first == '{"answer": "Zo\\u00eb \\ud83d\\ude00"}' and json.loads(first) == {"answer": "Zoë 😀"}
        assert table == "| run | BIO \\u03b2 |"
        assert stdout.errors == errors  # the stream's own handler is back


def test_an_error_handler_the_caller_chose_for_stdout_stays(monkeypatch):
    import io

    import bio_mrc.cli as cli

    stdout = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="replace")
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(cli.parser, "cmd_evaluate", lambda _args: print("Zoë") or 0)
    assert main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(SAMPLE_V1)]) == 0
    stdout.flush()
    assert stdout.buffer.getvalue() == b"Zo?\n"


def test_help_prints_where_stdout_cannot_hold_its_letters(monkeypatch):
    """``PYTHONIOENCODING=ascii bio-mrc compare --help`` ended in a ``UnicodeEncodeError`` traceback on "mean ± sd"
    (train's on "log Σ_k", predict's, extract's and tune's on "β")."""
    import io

    stdout = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="strict")
    monkeypatch.setattr(sys, "stdout", stdout)
    with pytest.raises(SystemExit) as ended:
        main(["compare", "--help"])
    assert ended.value.code == 0
    stdout.flush()
    assert "mean \\u00b1 sd" in stdout.buffer.getvalue().decode("ascii")


@pytest.mark.slow
@pytest.mark.parametrize("stop", ["ctrl-c", "full disk"])
def test_an_export_over_another_stopped_at_any_rename_is_all_old_all_new_or_says_it_is_mixed(trained_dir, tmp_path,
                                                                                              monkeypatch, stop,
                                                                                              sigint_as_in_a_terminal):
    """A Ctrl-C between two of the renames that move an export in left the new weights beside the old config.json and
    tokenizer, a folder that loaded as a model."""
    from bio_mrc import io
    from bio_mrc.errors import OutputError
    from bio_mrc.inference.conversion import export_qa_checkpoint

    def export(out, k=0):
        with monkeypatch.context() as patch:
            patch.setattr(io.atomic.os, "replace", replace := StoppedReplace(stop, k))
            export_qa_checkpoint(trained_dir, out, overwrite=True)
        return replace.calls

    renames = len(export(tmp_path / "new" / "out"))
    new = {path.name: path.read_bytes() for path in (tmp_path / "new" / "out").iterdir()}
    assert renames >= 3
    for k in range(1, renames + 1):
        out = tmp_path / f"at-{k}" / "out"
        out.mkdir(parents=True)
        old = {name: content + b" old" for name, content in new.items()}  # the card keeps its marker: one bio_mrc wrote
        for name, content in old.items():
            (out / name).write_bytes(content)
        with pytest.raises(KeyboardInterrupt if stop == "ctrl-c" else (OSError, OutputError)) as raised:
            export(out, k)
        now = {path.name: path.read_bytes() for path in out.iterdir()}
        bare = {name: content for name, content in old.items() if name != "README.md"}  # the old card goes first
        if now not in (old, bare, new):  # a rename refused after others: said in one line
            assert stop == "full disk" and isinstance(raised.value, OutputError), k
            assert "do not agree (new beside old)" in str(raised.value)


@pytest.mark.parametrize("export_format", ["onnx", "transformers"])
def test_an_export_into_a_folder_another_process_writes_is_refused_before_it_loads_the_model(trained_dir, tmp_path,
                                                                                            capsys, monkeypatch,
                                                                                            export_format):
    """Two exports into one folder at once shared its staging folder: one emptied it under the other, which ended in a
    safetensors or FileNotFoundError traceback; the folder kept whichever files were moved in last."""
    pytest.importorskip("fcntl")
    from bio_mrc.inference import TrainedModel
    from bio_mrc.io import sole_process_in

    out = tmp_path / "exported"
    (out / ".export-staging").mkdir(parents=True)
    (out / ".export-staging" / "config.json").write_text("the first export's")
    monkeypatch.setattr(TrainedModel, "load", classmethod(lambda cls, *args, **kwargs: pytest.fail("the model was loaded")))
    with sole_process_in(os.path.realpath(out), "held"):  # the first export, writing there now
        assert main(["export", "--model", str(trained_dir), "--output", str(out), "--format", export_format,
                     "--overwrite"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == f"error: another process is writing into this folder now; wait for it to end, or choose another output folder (in {out})"
    assert [p.name for p in out.rglob("*")] == [".export-staging", "config.json"]
    assert (out / ".export-staging" / "config.json").read_text() == "the first export's"


@pytest.mark.parametrize("export_format", ["onnx", "transformers"])
def test_an_export_into_a_folder_that_is_not_empty_is_refused_before_it_loads_the_model(trained_dir, tmp_path, capsys,
                                                                                       monkeypatch, export_format):
    """Without --overwrite, a folder holding other files (the data's folder, the model's parent) was refused only once
    the model had loaded, which takes minutes for a large one."""
    from bio_mrc.inference import TrainedModel

    if export_format == "onnx":
        pytest.importorskip("onnx")
        pytest.importorskip("onnxruntime")
    out = tmp_path / "data"
    out.mkdir()
    (out / "dev.json").write_text("{}")
    monkeypatch.setattr(TrainedModel, "load", classmethod(lambda cls, *args, **kwargs: pytest.fail("the model was loaded")))
    assert main(["export", "--model", str(trained_dir), "--output", str(out), "--format", export_format]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: the folder is not empty (dev.json); choose another folder or pass --overwrite (in {out})"]
    assert [p.name for p in out.iterdir()] == ["dev.json"]


def test_train_resume_keeps_the_checkpoints_of_another_run_at_the_models_step(trained_dir, tmp_path, capsys):
    """train --overwrite over a finished model of as many steps, stopped while saving: resume called the old model
    finished and removed the new run's checkpoints, its trained weights with them."""
    folder = tmp_path / "model"
    shutil.copytree(trained_dir, folder)
    checkpoint = _with_checkpoints(folder, _final_step(folder)) / "checkpoints" / f"checkpoint-{_final_step(folder)}"
    (checkpoint / "model.safetensors").write_bytes(b"another run's weights")
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(folder), "--resume"]) == 2
    assert "holds a finished model" in capsys.readouterr().err
    assert (checkpoint / "model.safetensors").read_bytes() == b"another run's weights"


def test_train_resume_finishes_a_run_stopped_after_its_record_whose_model_is_its_best_checkpoint(trained_dir, tmp_path, capsys):
    """A run that loads its best model at the end keeps the best checkpoint, before its last step: resume refused the
    finished model, and --resume --overwrite trained its last steps again."""
    folder = tmp_path / "model"
    shutil.copytree(trained_dir, folder)
    (folder / "README.md").unlink()
    _with_checkpoints(folder, _final_step(folder) - 2)  # the best checkpoint: the model's weights
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(folder), "--resume"]) == 0
    assert "held a finished model whose run was stopped while it finished" in capsys.readouterr().err
    assert (folder / "README.md").is_file() and not (folder / "checkpoints").exists()


# What a kill while bio_mrc wrote a finished model's run record or card leaves beside the model (bio_mrc.io)
KILLED_WRITES = (".bio_mrc_run.json.4242.0a1b2c3d.tmp", ".README.md.4242.0a1b2c3d.tmp")


def test_train_resume_removes_the_temporary_files_a_kill_left_beside_the_finished_model(trained_dir, tmp_path):
    """A kill while the card was written left its temporary file, which stayed beside the model once resumed."""
    folder = tmp_path / "model"
    shutil.copytree(trained_dir, folder)
    (folder / "README.md").unlink()
    for name in KILLED_WRITES:
        (folder / name).write_text('{"trai')
    (folder / ".README.md.x.tmp").write_text("the user's")  # no temporary name bio_mrc makes: left alone
    _with_checkpoints(folder, _final_step(folder))
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(folder), "--resume"]) == 0
    assert not any((folder / name).exists() for name in KILLED_WRITES)
    assert (folder / ".README.md.x.tmp").read_text() == "the user's" and (folder / "README.md").is_file()


def test_train_overwrite_removes_the_temporary_files_a_kill_left_beside_the_finished_model(trained_dir, tiny_encoder_dir,
                                                                                          tmp_path):
    from .conftest import WINDOW_ARGS

    folder = tmp_path / "model"
    shutil.copytree(trained_dir, folder)
    for name in KILLED_WRITES:
        (folder / name).write_text('{"trai')
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(folder), "--encoder", str(tiny_encoder_dir),
                 "--epochs", "1", "--overwrite", *WINDOW_ARGS]) == 0
    assert not any((folder / name).exists() for name in KILLED_WRITES)


def test_a_copy_of_a_model_leaves_the_temporary_files_a_kill_left_beside_it(trained_dir, tmp_path):
    """tune --output-dir copies the model's folder: a kill's temporary file went with it."""
    from bio_mrc.inference.model_tuning import copy_model

    folder, copy = tmp_path / "model", tmp_path / "copy"
    shutil.copytree(trained_dir, folder)
    copy.mkdir()
    for name in KILLED_WRITES:
        (folder / name).write_text('{"trai')
    copy_model(folder, copy)
    assert sorted(p.name for p in copy.iterdir()) == sorted(p.name for p in trained_dir.iterdir())
