"""A question's listed spans as the parts of one answer, rather than alternatives, each any one of them right.

Parts that share a character (a part listed twice, one inside another, two that overlap) are one part: the characters
they cover together. A tagging holds no span inside another, so this is what the tagger learns, and the metrics score
the same parts. Parts that share no character (that touch, or that a space or a comma parts) stay apart; so do parts
that share only blank characters at their edges ("Paris " and " Lyon"). One text at two places is two parts, which the
metrics, reading a set of normalised texts, count once.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Iterable, Iterator

from ..answer_text import trimmed_span
from ..errors import InputNote
from ..plurals import counted, number_form
from ..types import Alternative, CharSpan, Example

__all__ = ["JoinedPartsNote", "as_one_answer", "joined_parts", "read_as_parts"]


class JoinedPartsNote(InputNote):
    """Questions of a file list answer parts that repeat, nest or overlap, each group of them read as one part
    (:func:`joined_parts`): counted in one note naming the file and the first few questions."""


def joined_parts(context: str, spans: Iterable[CharSpan]) -> Alternative:
    """``spans`` in context order, those that share a readable character joined into one span from the first one's
    start to the last one's end; spans that share none stay as they are."""
    parts: list[list[int]] = []  # [start, end, trimmed end] of each part so far
    for start, end in sorted(set(spans), key=lambda span: (trimmed_span(context, *span)[0], span)):
        first, last = trimmed_span(context, start, end)
        if parts and first < parts[-1][2] and first < last:
            parts[-1] = [min(parts[-1][0], start), max(parts[-1][1], end), max(parts[-1][2], last)]
        else:
            parts.append([start, end, last])
    return tuple((start, end) for start, end, _ in parts)


def as_one_answer(example: Example) -> Example:
    """``example`` with its listed spans one alternative, its parts (:func:`joined_parts`); none, or an unlabelled
    question, stays as it is."""
    if not example.answers:
        return example
    return replace(example, answers=(joined_parts(example.context, (span for alt in example.answers for span in alt)),))


def read_as_parts(examples: Iterable[Example], source: str = "") -> Iterator[Example]:
    """Each question as :func:`as_one_answer` reads it, in order; once they are all read, one :class:`JoinedPartsNote`
    where some listed parts that repeat, nest or overlap (``source``: the file the note names)."""
    joined: list[str] = []
    for example in examples:
        one = as_one_answer(example)
        if one.answers and len(one.answers[0]) < sum(len(alternative) for alternative in example.answers):
            joined.append(example.id)
        yield one
    if joined:
        shown = ", ".join(repr(qid) for qid in joined[:5]) + (", ..." if len(joined) > 5 else "")
        warnings.warn(JoinedPartsNote(
            f"{counted(len(joined), 'question')} of {source or 'the input'} {number_form(len(joined), 'lists', 'list')} "
            f"answer parts that repeat, nest or overlap: each group of parts sharing a character is read as one part, "
            f"the text they cover together, in training and in scoring alike, e.g. {shown}"), stacklevel=2)
