"""Questions of a data file longer than the model reads (its ``max_query_length``): each is read as its first tokens
(:func:`~.windows.truncate_questions`), and said in one :class:`LongQuestionsNote` a file, counted from the windows'
own ``question_tokens`` column, whether the windows were cut now or read from the cache.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..errors import InputNote
from ..plurals import counted, number_form

if TYPE_CHECKING:  # types only: the answering doors import this module without datasets
    from datasets import Dataset

    from ..types import Example

NAMED = 3  # long questions a line names; the rest are counted


class LongQuestionsNote(InputNote):
    """Questions of a data file of more tokens than the model's ``max_query_length``: each is read as its first tokens,
    as the windows cut it; counted in one note naming the file and the first few questions."""


def note_long_questions(windows: Dataset, examples: Sequence[Example], max_query_length: int, data_name: str) -> None:
    """One :class:`LongQuestionsNote` for the questions of ``examples`` (cut into ``windows``) past ``max_query_length``,
    naming ``data_name`` and the first few questions by id; nothing where none is. It names the caller's line, the first
    outside the package."""
    if not len(windows) or "question_tokens" not in windows.column_names:
        return
    columns = windows.with_format("arrow")  # whole columns, as any selection of the windows reads them
    index, tokens = (columns[name].to_numpy() for name in ("example_index", "question_tokens"))
    first = np.flatnonzero(np.concatenate([[True], index[1:] != index[:-1]]))  # an example's windows run together
    rows = first[tokens[first] > max_query_length]
    long = list(zip(index[rows].tolist(), tokens[rows].tolist()))
    if not long:
        return
    named = ", ".join(f"{examples[example].id!r} ({token_count(count)})" for example, count in long[:NAMED])
    more = f" and {len(long) - NAMED} more" if len(long) > NAMED else ""
    warnings.warn(LongQuestionsNote(
        f"{counted(len(long), 'question')} of {data_name} {number_form(len(long), 'has', 'have')} more tokens than the "
        f"{max_query_length} the model reads (its max_query_length), each read as its first {max_query_length} tokens: "
        f"{named}{more}"), stacklevel=callers_level())


def token_count(count: int) -> str:
    return f"{count:,} {number_form(count, 'token')}"


def callers_level() -> int:
    """The ``stacklevel`` of the first frame outside the package, counted from the function that calls this one."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level
