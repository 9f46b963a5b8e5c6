"""What the command line's process shows and how it ends: standard output that cannot hold a character, warnings as one line,
progress bars written to a log, the bars a stop left open, a reader that stopped early (Ctrl-C and SIGTERM themselves:
:mod:`bio_mrc.stop_signals`)."""

from __future__ import annotations

import codecs
import contextlib
import functools
import os
import sys
import warnings
from typing import Any, Iterator, Mapping

from ..io import printable_line

LOGGED_BAR_SECONDS = 30  # a progress bar's least interval between redraws when standard error is no terminal


def json_numbers(value):
    """``value`` with each non-finite number as the string JSON readers take for it (``"-Infinity"``: a no-answer
    threshold that always abstains), as ``serve`` writes them."""
    from ..model_folder import non_finite_as

    return non_finite_as(value, str)


def path_error(err: OSError) -> str:
    """A path the system would not open (no permission, a loop of links, a name too long) as one line naming it."""
    name = os.fsdecode(err.filename) if isinstance(err.filename, (str, bytes, os.PathLike)) else str(err.filename)
    shown = name if len(name) <= 300 else name[:300] + "..."
    hint = "; check its permissions" if isinstance(err, PermissionError) else ""
    return f"cannot open it: {err.strerror or err}{hint} (in {shown})"


JSON_ESCAPES = "bio_mrc-json-escapes"
PYTHON_STDOUT_ERRORS = ("strict", "surrogateescape")  # what Python gives standard output unless PYTHONIOENCODING names one


def _json_escapes(error: UnicodeError) -> tuple[str, int]:
    """The codec error handler of :func:`escapes_what_stdout_cannot_hold`: each character the encoding lacks as JSON's
    ``\\u00eb`` (a character past U+FFFF as its UTF-16 pair, as ``json.dumps`` writes it)."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    return "".join(_json_escape(char) for char in error.object[error.start:error.end]), error.end


def _json_escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


codecs.register_error(JSON_ESCAPES, _json_escapes)


@contextlib.contextmanager
def escapes_what_stdout_cannot_hold() -> Iterator[None]:
    """A standard output whose encoding lacks a character the command prints (``PYTHONIOENCODING=ascii``, a Latin-1
    locale) writes it as JSON's ``\\u00eb`` rather than ending the command in a ``UnicodeEncodeError`` traceback after
    the work is done: what the commands print there is JSON (an answer's letters stay the same JSON value) or
    ``compare``'s table. An error handler the caller chose (``PYTHONIOENCODING=ascii:replace``) stays; the stream's own
    is back afterwards. Python's own choices are replaced: ``strict``, and ``surrogateescape`` in the C locale."""
    stream = sys.stdout
    errors = getattr(stream, "errors", None)
    if errors not in PYTHON_STDOUT_ERRORS or not hasattr(stream, "reconfigure"):
        yield
        return
    stream.reconfigure(errors=JSON_ESCAPES)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError, OSError):  # a stream closed, or a reader gone (| head), by now
            stream.reconfigure(errors=errors)


@contextlib.contextmanager
def input_warnings_as_lines(flags: Mapping[str, str] | None = None) -> Iterator[None]:
    """A warning about the user's input (``InputWarning``: a model's unused tuned setting, training questions whose
    answer no window holds) as one ``warning:`` line on stderr, as the command's other warnings are, not Python's two
    lines naming the package's source; any other warning as Python shows it. The line is the command's own output, so
    the user's warning filters (``PYTHONWARNINGS=ignore`` or ``error``, ``python -W error``) neither hide it nor make it a
    traceback; each line is shown once, wherever and however often it is said. A package warning names the
    arguments it names as the command's ``flags`` (:func:`~bio_mrc.cli.options.argument_flags`), as its errors do."""
    from ..errors import InputNote, InputWarning, command_line_text

    with warnings.catch_warnings():
        warnings.simplefilter("default", InputWarning)  # before the user's filters; a command's own filter goes before it
        shown = warnings.showwarning
        printed: set[str] = set()  # a file read twice (predict counts its questions, then answers them) warns twice

        def show(message, category, filename, lineno, file=None, line=None):
            said = command_line_text(message, flags or {}) if getattr(message, "marked", None) else message
            if issubclass(category, InputWarning):
                from tqdm import tqdm  # its write clears a bar drawn on stderr and redraws it below the line

                text = printable_line(f"{'note' if issubclass(category, InputNote) else 'warning'}: {said}")
                if text not in printed:
                    printed.add(text)
                    tqdm.write(text, file=sys.stderr)
            else:
                shown(said, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield


@contextlib.contextmanager
def bars_for_a_log(stream) -> Iterator[None]:
    """Progress bars on a standard error that is no terminal (a log file, a pipe) redraw at most every
    ``LOGGED_BAR_SECONDS``, not ten times a second: each redraw is a carriage return and a line that a terminal
    overwrites and a file keeps, thousands of them over a long training run. tqdm reads ``TQDM_MININTERVAL`` when it
    is imported, and a value of the user's stays; a tqdm imported already (the package imports transformers, which imports
    it) takes the interval as its default keyword (:func:`_tqdm_defaults`)."""
    isatty = getattr(stream, "isatty", None)
    if (isatty is not None and isatty()) or "TQDM_MININTERVAL" in os.environ:
        yield
        return
    os.environ["TQDM_MININTERVAL"] = str(LOGGED_BAR_SECONDS)
    defaults = _tqdm_defaults()
    before = dict(defaults)
    defaults["mininterval"] = float(LOGGED_BAR_SECONDS)
    try:
        yield
    finally:
        os.environ.pop("TQDM_MININTERVAL", None)
        defaults.clear()
        defaults.update(before)


def _tqdm_defaults() -> dict[str, Any]:
    """The default keywords of every tqdm bar made from now on: the ``TQDM_*`` variables tqdm read when it was imported
    (its ``__init__`` is a ``functools.partialmethod`` of them); an empty dict to no purpose where tqdm is not imported
    yet (it reads the variables then) or keeps them otherwise."""
    module = sys.modules.get("tqdm.std")
    init = vars(getattr(module, "tqdm", object)).get("__init__")
    return init.keywords if isinstance(init, functools.partialmethod) else {}


def close_open_bars() -> None:
    """Close the progress bars a stopped command left open (Trainer's training bar is closed only when training ends),
    so that ``interrupted`` is a line of its own and the last one: written while a bar is open, it lands on the bar's
    line, and the bar, closed as the process ends, draws itself again below it."""
    module = sys.modules.get("tqdm.std")
    for bar in list(getattr(getattr(module, "tqdm", None), "_instances", ())):
        with contextlib.suppress(Exception):  # a bar whose stream is gone is no reason for a traceback now
            bar.close()


STDOUT_CLOSED = ("standard output is closed (>&-), and the command writes its result there: send it to a file, or to "
                 "/dev/null to discard it")


def streams_closed_by_the_shell() -> str | None:
    """Standard streams a shell closed (``>&-``, ``2>&-``): each closed descriptor 0 to 2 opened on /dev/null, so that
    no file the command opens takes its number (a file opened as descriptor 2 would get what torch's and tokenizers'
    native code write to standard error); a closed standard error is /dev/null for Python too, where ``print(...,
    file=sys.stderr)`` would write the command's notes and errors into standard output, its result. Returns the
    refusal of a closed standard output, whose result would go nowhere, the command ending 0 as if it had been seen."""
    for descriptor in (0, 1, 2):
        try:
            os.fstat(descriptor)
        except OSError:
            opened = os.open(os.devnull, os.O_RDWR)
            if opened != descriptor:
                os.dup2(opened, descriptor)
                os.close(opened)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (for the rest of the process)
    return STDOUT_CLOSED if sys.stdout is None else None


def reader_gone() -> int:
    """What a Unix tool does when the reader of its output goes away (``| head``): stop quietly, with the
    status of a process ended by SIGPIPE. Standard output is pointed at /dev/null so that Python's final
    flush finds no broken pipe to report."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 128 + 13
