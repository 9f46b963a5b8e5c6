"""The questions a command reads: its data file loaded or streamed in the format asked, checked against the task."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import registry
from ..arguments import warn_limit_past
from ..errors import ConfigError, command_line_text
from ..io import file_sha256, printable_line
from ..plurals import counted
from .options import FLAGS


def _load_squad(args: argparse.Namespace, path: str, limit: int | None = None, data_format: str | None = None,
                needs_gold: str | None = None):
    """Questions in any form load_squad reads, under the command's data options,
    reporting every relocated offset and skipped question, then a limit past them; ``needs_gold`` refuses unlabelled ones."""
    from ..data.squad import read_squad

    data = read_squad(path, limit=limit, fix_offsets=args.fix_offsets, skip_invalid=args.skip_invalid, data_format=data_format,
                      needs_gold=needs_gold)
    _report_read(args, data, path, len(data.examples), limit)
    return data


def load_task_data(args: argparse.Namespace, path: str, limit: int | None, task, needs_gold: str | None):
    """The questions of ``task`` (None: of whatever task the data's form is): read by the task's own loader where it
    has one, else as _load_squad reads them, in the task's layout, and as the task means them (its format named)."""
    from ..data.squad import SquadFile

    if task is None or task.load is None:
        data = _load_squad(args, path, limit, data_format=task.layout if task else None, needs_gold=needs_gold)
        if task is None:  # no --format or --metric: how several listed answers were read is said where they mean either
            from ..data.answer_parts import note_alternatives_read

            note_alternatives_read(data)
        else:
            _check_read_as_named(task, data.format, path, args)
            data.examples, data.format = task.task_examples(data.examples, data.source), task.format_of_read(data.format)
        return data
    examples = task.load_questions(Path(path))[:limit]
    if not examples:
        raise ConfigError(f"no questions to use in {path}")
    warn_limit_past(limit, len(examples), path)
    return SquadFile(examples, "2.0" if any(not ex.is_answerable for ex in examples) else "1.1", str(path), task.format)


def _check_read_as_named(task, read_format: str, path: str, args: argparse.Namespace) -> None:
    """``--format`` (else ``--metric``) named a task whose data keep their format, yet the file is in another task's
    own layout (``--format squad`` on MultiSpanQA JSON): refused, as the other way round is, not scored as that other
    task. The error names the option the command line gave."""
    if task.examples_as is None and read_format != task.format and read_format in registry.data_formats():
        option, given, own = (("--format", args.format, read_format) if args.format else
                              ("--metric", args.metric, registry.task_for(read_format, False).scorer))
        raise ConfigError(f"{option} {given}: {path} is in {read_format}'s layout, which is scored as {read_format}; "
                          f"drop {option} or give {option} {own}")


def check_data_found(path: str | None, task) -> None:
    """A data path that names no file, folder or hub dataset (or one in another layout than ``task``'s) refused before
    anything heavy loads, as the read that follows would refuse it."""
    from ..data.formats import detect_format

    if path is not None and (task is None or task.load is None):
        detect_format(path, None, task.layout if task else None)


def format_task(args: argparse.Namespace):
    """The task ``--format`` names (None: the data's own, detected)."""
    return registry.task_for(args.format, False) if args.format else None


def requested_task(args: argparse.Namespace):
    """The task ``--format`` names, else the one of ``--metric``'s scorer (None: the data's own); the two must agree."""
    named = format_task(args)
    if not args.metric:
        return named
    scored_by = registry.scorer(args.metric)
    if named is not None and named.scorer != scored_by.scorer:
        raise ConfigError(f"--metric {args.metric} does not score --format {args.format} ({named.title}); give one of them")
    return named or scored_by


def data_task(args: argparse.Namespace, data):
    """The task the read questions are scored as: ``--metric``'s scorer's unless ``--format`` named the task."""
    if args.metric and not args.format:
        return registry.scorer(args.metric, data.is_v2)
    return registry.task_of_data(data.format, data.is_v2)


def _stream_squad(args: argparse.Namespace, path: str, limit: int | None = None, quiet: bool = False,
                  data_format: str | None = None):
    """The questions as a stream (memory flat in their number), their count and how many of them are labelled as
    having no answer: every one is read and checked once here, before any work, as _load_squad checks them, in
    ``data_format``'s layout (None: any)."""
    from ..data.squad import stream_squad

    questions = stream_squad(path, limit=limit, fix_offsets=args.fix_offsets, skip_invalid=args.skip_invalid,
                             data_format=data_format)
    questions.limit_noted = True  # _report_read says it, after the questions skipped (on the rank that writes alone)
    count = unanswerable = 0
    for example in questions:
        count += 1
        unanswerable += example.is_labelled and not example.is_answerable
    if not quiet or not count:
        _report_read(args, questions, path, count, limit)
    return questions, count, unanswerable


def prediction_questions(args: argparse.Namespace, task, quiet: bool):
    """What ``predict`` answers: the questions, the format they are read as, their count and how many have no answer.
    Streamed as _stream_squad reads them, in ``task``'s layout, or read whole by the loader of a task ``--format``
    names that has one (a format the format table does not read)."""
    if task is None or task.load is None:
        questions, count, unanswerable = _stream_squad(args, args.data, args.limit, quiet=quiet,
                                                       data_format=task.layout if task else None)
        return questions, task.format_of_read(questions.format) if task else questions.format, count, unanswerable
    examples = load_task_data(args, args.data, args.limit, task, needs_gold=None).examples
    return examples, task.format, len(examples), sum(example.is_labelled and not example.is_answerable for example in examples)


def _report_read(args: argparse.Namespace, data, path: str, count: int, limit: int | None = None) -> None:
    """Print the relocated offsets and skipped questions of a read (the arguments they name as ``args.command``'s
    flags), and a ``limit`` past its questions; no question left is an error."""
    if data.fixed_offsets:
        found = len(data.found_offsets)
        print(printable_line(f"note: relocated answer_start of {counted(len(data.fixed_offsets), 'question')} in {path}"
                             f"{f' ({found} missing, found where its text occurs once)' if found else ''}: "
                             f"{', '.join(map(repr, data.fixed_offsets[:10]))}{', ...' if len(data.fixed_offsets) > 10 else ''}"),
              file=sys.stderr)
    for error in data.skipped:
        print(f"skipped: {printable_line(command_line_text(error, getattr(args, FLAGS, {})))}", file=sys.stderr)
    if data.skipped:
        print(printable_line(f"warning: skipped {counted(len(data.skipped), 'invalid question')} of {path}"), file=sys.stderr)
    if not count:
        raise ConfigError(f"no questions to use in {path}")
    warn_limit_past(limit, count, path, len(data.skipped))  # printed as one note (of the valid ones, as the line before says)


def data_source(data: str) -> str:
    """The data a predictions stream was made from, as its record names it: a file by its absolute path, size and
    SHA-256 (an edited file is other data, at any size), a folder by its path, a hub dataset by its id."""
    path = Path(data).expanduser()
    if not path.exists():
        return data
    if not path.is_file():
        return str(path.resolve())
    return f"{path.resolve()}, {path.stat().st_size} bytes, sha256 {file_sha256(path)[:16]}"


def check_span_count_option(args: argparse.Namespace, multi_span: bool) -> None:
    """--min-span-probability judges a multi-span answer's spans after the first: refused, not ignored, for single spans."""
    if args.min_span_probability is not None and not multi_span:
        raise ConfigError("--min-span-probability judges the spans after the first of a multi-span answer; "
                          "add --multi-span, or leave it out for single answers")
