"""Questions longer than a model reads: answered as their first ``max_query_length`` tokens, as training cut its own
questions (a window needs room for the context), and said in one :class:`LongQuestionWarning` a call, naming them.

Refusing them would stop a whole file of questions at one long one that the model, trained the same way, reads as
well as it can; cutting them unsaid would answer a question other than the one asked without a word.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

from ..errors import InputWarning
from ..features.long_questions import NAMED, token_count, warn_at_caller

if TYPE_CHECKING:
    from ..types import Example
    from .loading import TrainedModel


class LongQuestionWarning(InputWarning):
    """A question of more tokens than the model's ``max_query_length``: it is answered as its first tokens."""


def long_questions(trained: TrainedModel, examples: Sequence[Example]) -> dict[str, int]:
    """Each question text of ``examples`` past ``trained``'s ``max_query_length``, with its number of tokens, in the
    order first asked; a question asked of several documents is tokenized once."""
    from ..features.windows import question_token_counts  # here, so the warning's own module imports no tokenizer

    asked = list(dict.fromkeys(example.question for example in examples))
    if not asked:
        return {}
    most = trained.features.max_query_length
    return {question: count for question, count in zip(asked, question_token_counts(asked, trained.tokenizer))
            if count > most}


def warn_long_questions(trained: TrainedModel, examples: Sequence[Example], name: Callable[[int], str]) -> None:
    """One :class:`LongQuestionWarning` for the questions of ``examples`` past ``trained``'s ``max_query_length``, each
    named by ``name(position)`` with its number of tokens; a question asked of several documents is said once. It names
    the caller's line, the first outside the package, however deep the door it came through."""
    found = long_questions(trained, examples)
    if not found:
        return
    first: dict[str, int] = {}  # each question text at its first position
    for position, example in enumerate(examples):
        first.setdefault(example.question, position)
    long = [(first[question], count) for question, count in found.items()]
    most = trained.features.max_query_length
    cut = f"{token_count(most)}, as the model's training questions were cut"
    if len(long) == 1:
        (position, count), = long
        line = (f"{name(position)} has {token_count(count)}, more than the {most} the model reads (its "
                f"max_query_length): it is answered as its first {cut}")
    else:
        named = ", ".join(f"{name(position)} ({token_count(count)})" for position, count in long[:NAMED])
        more = f" and {len(long) - NAMED} more" if len(long) > NAMED else ""
        line = (f"{len(long)} questions have more tokens than the {most} the model reads (its max_query_length): "
                f"{named}{more}; each is answered as its first {cut}")
    warn_at_caller(LongQuestionWarning(line))
