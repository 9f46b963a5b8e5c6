"""Ctrl-C or SIGTERM at any moment of a command: one ``interrupted`` line and status 130 or 143, its clean-ups all run,
from the process's first moment (the command line's modules loading) to its last (the interpreter exiting)."""

import os
import signal
import subprocess
import sys
import threading
import time
import tomllib
import weakref
from pathlib import Path

import pytest

import bio_mrc.cli as cli
from bio_mrc.cli import main

from .conftest import SAMPLE_V1

ROOT = Path(__file__).resolve().parents[1]
EVALUATE = ["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(SAMPLE_V1)]
needs_ctrl_c = pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is not signal.default_int_handler,
    reason="needs the main thread and Python's own Ctrl-C handler",
)


def _status(argv):
    """``main``'s status; a KeyboardInterrupt escaping it fails the test rather than stop the test run."""
    try:
        return main(argv)
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C escaped main as a KeyboardInterrupt")


def _stopped_with_one_line(signum, capfd):
    """``evaluate`` (its command replaced) ends as the signal's stop: 130 returned for Ctrl-C, SystemExit(143) for
    SIGTERM, and one line."""
    if signum == signal.SIGINT:
        assert _status(EVALUATE) == 130
    else:
        with pytest.raises(SystemExit) as stopped:
            main(EVALUATE)
        assert stopped.value.code == 143
    assert capfd.readouterr().err == "interrupted\n"


def _ctrl_c():
    """A Ctrl-C that lands here: the handler runs before the next line."""
    signal.raise_signal(signal.SIGINT)


@needs_ctrl_c
@pytest.mark.parametrize("moment", ["parsing", "closing"])
def test_ctrl_c_before_the_command_runs_or_after_it_returned_is_one_line(monkeypatch, capfd, moment):
    """A Ctrl-C while the parser was built, or while the command's last clean-ups ran after it had returned, escaped
    ``main`` as a KeyboardInterrupt traceback."""
    target = {"parsing": "build_parser", "closing": "close_process_group"}[moment]
    real = getattr(cli, target)

    def stopped(*args, **options):
        _ctrl_c()
        return real(*args, **options)

    monkeypatch.setattr(cli, target, stopped)
    monkeypatch.setattr(cli.parser, "cmd_evaluate", lambda _args: 0)
    assert _status(EVALUATE) == 130
    assert capfd.readouterr().err == "interrupted\n"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@needs_ctrl_c
@pytest.mark.parametrize("moment", ["clean-up", "line"])
def test_a_second_ctrl_c_cuts_no_clean_up_short_and_prints_no_second_line(monkeypatch, capfd, moment):
    """A user pressing Ctrl-C twice: the second, landing in a clean-up of the first, cut it short (a temporary file
    left behind); landing as ``interrupted`` was printed, it escaped ``main`` as a traceback."""
    cleaned = []

    def command(_args):
        try:
            _ctrl_c()
        finally:
            if moment == "clean-up":
                _ctrl_c()
            cleaned.append(True)

    real_close = cli.close_open_bars

    def close_then_pressed_again():
        real_close()
        if moment == "line":
            _ctrl_c()

    monkeypatch.setattr(cli.parser, "cmd_evaluate", command)
    monkeypatch.setattr(cli, "close_open_bars", close_then_pressed_again)
    assert _status(EVALUATE) == 130
    assert capfd.readouterr().err == "interrupted\n"
    assert cleaned == [True]
    went_on = []
    monkeypatch.setattr(cli.parser, "cmd_evaluate", lambda _args: _ctrl_c() or went_on.append(True) or 0)
    assert _status(EVALUATE) == 130  # the next command's Ctrl-C is its own again
    assert went_on == []


class _Watched:
    """An object watched by a weakref whose callback runs as it is freed, as ``weakref.finalize`` runs a clean-up."""


def _signalled(signum):
    os.kill(os.getpid(), signum)
    for _ in range(100_000):  # the handler runs here, inside the callback
        pass


def _a_while():
    for _ in range(200):  # two seconds in short sleeps: a signal sent again from a timer's thread lands between them
        time.sleep(0.01)


@needs_ctrl_c
@pytest.mark.parametrize(
    ("signum", "then"),
    [(signal.SIGINT, _a_while), (signal.SIGINT, lambda: None), (signal.SIGTERM, _a_while)],
    ids=["ctrl-c-midway", "ctrl-c-at-the-end", "sigterm-midway"],
)
def test_a_stop_in_a_callback_whose_error_python_reports_still_ends_the_command(monkeypatch, capfd, signum, then):
    """A signal that landed in a weakref's callback, or in Python code that C code runs and whose error it reports (an
    ``isinstance`` check inside a C extension's map), was printed as "Exception ignored" and lost: the command went on
    to exit 0."""
    went_on = []

    def command(_args):
        watched = _Watched()
        watch = weakref.ref(watched, lambda _ref: _signalled(signum))  # noqa: F841 (kept until the object goes)
        del watched  # the callback runs here
        then()
        went_on.append(True)
        return 0

    monkeypatch.setattr(cli.parser, "cmd_evaluate", command)
    _stopped_with_one_line(signum, capfd)
    assert went_on == ([True] if then is not _a_while else [])


def _module_initialized(signum):
    """A C extension's module loading as the signal lands: pybind11 raises its own error from the exception."""
    try:
        _signalled(signum)
    except (KeyboardInterrupt, SystemExit) as stop:
        raise ImportError("initialization failed") from stop


@needs_ctrl_c
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stop_a_library_raised_its_own_error_from_is_one_line_and_its_status(monkeypatch, capfd, signum):
    """A Ctrl-C while transformers imported scipy's pybind11 module became ``ImportError: initialization failed``: a
    traceback and status 1."""
    went_on = []
    monkeypatch.setattr(cli.parser, "cmd_evaluate", lambda _args: _module_initialized(signum) or went_on.append(True) or 0)
    _stopped_with_one_line(signum, capfd)
    assert went_on == []


def _entry_point() -> str:
    """The ``bio-mrc`` script's ``module:function``, as pip writes the script from pyproject.toml."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]["bio-mrc"]


SCRIPT = """
import atexit, importlib.abc, os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, whatever the test runner's parent does
signal.signal(signal.SIGTERM, signal.SIG_DFL)
signum, moment, entry = int(sys.argv[1]), sys.argv[2], sys.argv[3]

def stop():
    os.kill(os.getpid(), signum)
    for _ in range(1_000_000):  # the handler runs here
        pass

class StopWhileLoading(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "bio_mrc.cli.options":  # one of the command line's modules, loading in its first half second
            sys.meta_path.remove(self)
            stop()
        return None

if moment == "loading":
    sys.meta_path.insert(0, StopWhileLoading())
else:
    atexit.register(stop)  # as the interpreter exits, once the command has ended
module, function = entry.split(":")
command = getattr(__import__(module, fromlist=[function]), function)
sys.argv[1:] = ["--version"]
sys.exit(command())
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stop_while_the_command_line_loads_is_one_line_and_its_status(signum):
    """Ctrl-C in a command's first half second, while its modules loaded, was a KeyboardInterrupt traceback; SIGTERM
    ended the process by the signal with no line."""
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(int(signum)), "loading", _entry_point()], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert (done.returncode, done.stderr, done.stdout) == (128 + signum, "interrupted\n", "")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stop_as_the_interpreter_exits_leaves_the_commands_end_as_it_was(signum):
    """Ctrl-C after the command had printed its result and returned, as Python exited, was a traceback ("Exception
    ignored"), or the process died of the signal (status -2), with no line; SIGTERM ended it by the signal (-15)."""
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(int(signum)), "exiting", _entry_point()], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert (done.returncode, done.stderr) == (0, "")
    assert "0.1.0" in done.stdout
