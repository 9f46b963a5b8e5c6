"""Questions of a data file longer than the model reads (its ``max_query_length``): each is read as its first tokens
(:func:`~.windows.truncate_questions`), and said in one :class:`LongQuestionsNote` a file, counted from the windows'
own ``question_tokens`` column, whether the windows were cut now or read from the cache.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..errors import InputNote
from ..plurals import counted, number_form

if TYPE_CHECKING:  # types only: the answering doors import this module without datasets
    from datasets import Dataset

    from ..types import Example
    from .window_table import WindowTable

NAMED = 3  # long questions a line names; the rest are counted
WARNED_TEXTS = 1_000  # distinct warning texts remembered as said for each caller's file (a text said again is not shown)
_WARNED: dict[str, dict] = {}  # each caller's file: its registry of the texts said there, as warnings keeps one
_WARNING = threading.Lock()  # two threads answering at once trim and fill one registry in turn


class LongQuestionsNote(InputNote):
    """Questions of a data file of more tokens than the model's ``max_query_length``: each is read as its first tokens,
    as the windows cut it; counted in one note naming the file and the first few questions."""


def note_long_questions(windows: Dataset | WindowTable, examples: Sequence[Example], max_query_length: int,
                        data_name: str) -> None:
    """One :class:`LongQuestionsNote` for the questions of ``examples`` (cut into ``windows``) past ``max_query_length``,
    naming ``data_name`` and the first few questions by id; nothing where none is. It names the caller's line, the first
    outside the package."""
    if not len(windows) or "question_tokens" not in windows.column_names:
        return
    from .window_table import column_values

    index, tokens = (column_values(windows, name) for name in ("example_index", "question_tokens"))
    first = np.flatnonzero(np.concatenate([[True], index[1:] != index[:-1]]))  # an example's windows run together
    rows = first[tokens[first] > max_query_length]
    long = list(zip(index[rows].tolist(), tokens[rows].tolist()))
    if not long:
        return
    named = ", ".join(f"{examples[example].id!r} ({token_count(count)})" for example, count in long[:NAMED])
    more = f" and {len(long) - NAMED} more" if len(long) > NAMED else ""
    warn_at_caller(LongQuestionsNote(
        f"{counted(len(long), 'question')} of {data_name} {number_form(len(long), 'has', 'have')} more tokens than the "
        f"{max_query_length} the model reads (its max_query_length), each read as its first {max_query_length} tokens: "
        f"{named}{more}"))


def token_count(count: int) -> str:
    return f"{count:,} {number_form(count, 'token')}"


def warn_at_caller(warning: Warning) -> None:
    """Say ``warning`` at the caller's line, the first outside the package, as ``warnings.warn`` says it there (the
    filters, ``catch_warnings`` and a text said again at that line shown once, as Python's default filter shows it),
    remembering it in a registry of this module's that keeps the last :data:`WARNED_TEXTS` texts of each caller's file:
    Python's own, the calling module's ``__warningregistry__``, keeps every distinct text for the life of the process,
    and a long question's text names counts and positions, so a process answering for days held one entry a call."""
    frame = sys._getframe(1)
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame = frame.f_back
    globals_, filename, line = (sys.__dict__, "sys", 1) if frame is None else (
        frame.f_globals, frame.f_code.co_filename, frame.f_lineno)
    with _WARNING:
        registry = _WARNED.setdefault(filename, {})
        try:
            # no module_globals: a source line read through the caller's loader fails for python -c's __main__
            warnings.warn_explicit(warning, type(warning), filename, line, module=globals_.get("__name__", "<string>"),
                                   registry=registry)
        finally:  # the filter "error" raises it
            said = [key for key in registry if key != "version"]
            for key in said[: max(0, len(said) - WARNED_TEXTS)]:  # the oldest said go
                del registry[key]


def warned_at(filename: str) -> dict:
    """The registry of the warnings :func:`warn_at_caller` said at lines of ``filename`` (``warnings``' keys: the
    text, the category and the line), at most :data:`WARNED_TEXTS` of them and the filters' version."""
    return _WARNED.get(filename, {})
