"""``bio-mrc``: a thin command line over the library. Each command parses, calls, prints.

Building the parser loads only light modules (the config dataclasses and their option tables); torch,
transformers and datasets load inside the command that runs a model, numpy and jsonschema where a command computes or
validates, so ``--help`` answers at once (tests/test_cli_startup.py checks that ``--version`` and every ``--help``
import none of them). One module a job: ``parser`` (the options),
``options`` and ``command_data`` (what options and data files become), one module per command or pair of commands,
``console`` (what the process shows and how it ends), ``bar_variables`` (tqdm's own ``TQDM_*`` settings, checked
before any work).
"""

from __future__ import annotations

import sys
from typing import Sequence

from ..plugins import load_plugins
from ..errors import BioMrcError, command_line_text
from ..io import printable_line
from ..launcher import check_launcher_environment, close_process_group
from ..stop_signals import say_interrupted, stops_as_status
from .bar_variables import check_bar_variables
from .console import (bars_for_a_log, close_open_bars, escapes_what_stdout_cannot_hold, input_warnings_as_lines, path_error, reader_gone,
                      streams_closed_by_the_shell)
from .freed_blocks import keep_freed_blocks_for
from .leftovers import no_empty_torch_cache_folder
from .options import FLAGS, FlagsWhenRead, check_model_names, check_optional_files, decode_text_options, expand_home
from .parser import add_command_options, build_parser
from .torch_threads import threads_fitted, torch_imported

__all__ = ["build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``bio-mrc`` on ``argv`` (None: the process's arguments) and return its exit status; the installed plug-ins
    (:mod:`bio_mrc.plugins`) register their entries first where ``argv`` names a command. Ctrl-C ends it with one
    line, ``interrupted``, and 130 (SIGTERM: :class:`~bio_mrc.stop_signals.Terminated`, 143) wherever it lands, its
    clean-ups run first (a second Ctrl-C among them is set aside). A command that runs a model fits torch's threads to
    the CPUs the process may use (:mod:`bio_mrc.cli.torch_threads`), unless torch was imported before this call."""
    torch_before = torch_imported()  # a program's own torch: its threads are its own
    if (refusal := streams_closed_by_the_shell()) is not None:  # before any work: its result would go nowhere
        print(f"error: {refusal}", file=sys.stderr)
        return 2
    return stops_as_status(lambda: _command(argv, torch_before), _say_interrupted)


def _command(argv: Sequence[str] | None, torch_before: bool) -> int:
    with escapes_what_stdout_cannot_hold(), no_empty_torch_cache_folder():  # --help too: several commands' help holds β, Σ or ±
        try:
            return _run(argv, torch_before)
        finally:  # under torchrun, a refusal too: each rank ends with its one line and status, not gloo's abort
            close_process_group()


def _say_interrupted() -> None:
    """Ctrl-C's line, the last and on its own: the bars a stop left open are closed first."""
    close_open_bars()
    say_interrupted()


def _run(argv: Sequence[str] | None, torch_before: bool = False) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(commands=())  # the commands' options are added below, the one this run parses alone
    # A command (its --help too) offers the tables' names: installed plug-ins register theirs first. The top level's
    # --version and --help read no table, so a broken plug-in never stops them.
    if parser.command_of(argv) is not None:
        try:
            load_plugins()
        except BioMrcError as err:
            print(f"error: {printable_line(str(err))}", file=sys.stderr)
            return 2
    if (command := parser.command_named(argv)) is not None:  # after a top-level --help too: its options read as ever
        add_command_options(parser, command)
    args = parser.parse_args(argv)
    setattr(args, FLAGS, FlagsWhenRead(parser.every_command, args.command))  # another command's flag too, as a line names it
    expand_home(args)
    decode_text_options(args)
    try:
        check_launcher_environment()  # a WORLD_SIZE or RANK that is no number, before any work
        check_bar_variables()  # a TQDM_MININTERVAL that tqdm cannot read: its traceback where a library imports it
        check_model_names(args)
        check_optional_files(args)
        if getattr(args, "device", "auto") != "auto":  # an unavailable device, before any work
            args.check_device(args.device)
        keep_freed_blocks_for(args, torch_before)
        with bars_for_a_log(sys.stderr), input_warnings_as_lines(getattr(args, FLAGS)), threads_fitted(args, torch_before):
            code = args.func(args)
        sys.stdout.flush()  # a reader that stopped early (| head) is found here, not at exit
        return code
    except (BioMrcError, FileNotFoundError) as err:  # the arguments it names as this command's flags
        print(f"error: {printable_line(command_line_text(err, getattr(args, FLAGS)))}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return reader_gone()
    except OSError as err:
        if err.filename is None:  # not about a path the user gave
            raise
        print(f"error: {printable_line(path_error(err))}", file=sys.stderr)
        return 2
