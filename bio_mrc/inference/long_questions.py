"""Questions longer than a model reads: answered as their first ``max_query_length`` tokens, as training cut its own
questions (a window needs room for the context), and said in one :class:`LongQuestionWarning` a call, naming them.

Refusing them would stop a whole file of questions at one long one that the model, trained the same way, reads as
well as it can; cutting them unsaid would answer a question other than the one asked without a word.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import TYPE_CHECKING, Callable, Sequence

from ..errors import InputWarning
from ..plurals import number_form

if TYPE_CHECKING:
    from ..types import Example
    from .loading import TrainedModel

NAMED = 3  # long questions a warning names; the rest are counted


class LongQuestionWarning(InputWarning):
    """A question of more tokens than the model's ``max_query_length``: it is answered as its first tokens."""


def warn_long_questions(trained: TrainedModel, examples: Sequence[Example], name: Callable[[int], str]) -> None:
    """One :class:`LongQuestionWarning` for the questions of ``examples`` past ``trained``'s ``max_query_length``, each
    named by ``name(position)`` with its number of tokens; a question asked of several documents is said once. It names
    the caller's line, the first outside the package, however deep the door it came through."""
    from ..features.windows import question_token_counts  # here, so the warning's own module imports no tokenizer

    first = {}  # each question text at its first position
    for position, example in enumerate(examples):
        first.setdefault(example.question, position)
    if not first:
        return
    most = trained.features.max_query_length
    counts = question_token_counts(list(first), trained.tokenizer)
    long = [(position, count) for position, count in zip(first.values(), counts) if count > most]
    if not long:
        return
    cut = f"{_tokens(most)}, as the model's training questions were cut"
    if len(long) == 1:
        (position, count), = long
        line = (f"{name(position)} has {_tokens(count)}, more than the {most} the model reads (its "
                f"max_query_length): it is answered as its first {cut}")
    else:
        named = ", ".join(f"{name(position)} ({_tokens(count)})" for position, count in long[:NAMED])
        more = f" and {len(long) - NAMED} more" if len(long) > NAMED else ""
        line = (f"{len(long)} questions have more tokens than the {most} the model reads (its max_query_length): "
                f"{named}{more}; each is answered as its first {cut}")
    warnings.warn(LongQuestionWarning(line), stacklevel=_callers_level())


def _tokens(count: int) -> str:
    return f"{count:,} {number_form(count, 'token')}"


def _callers_level() -> int:
    """The ``stacklevel`` of the first frame outside the package, counted from the function that calls this one."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level
