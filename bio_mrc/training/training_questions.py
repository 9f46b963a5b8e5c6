"""The training questions checked before any work: what a data file's reader checks of each question, for questions
built in Python too (which pass no reader), and that some question has an answer a model could learn to give.

A span outside its context failed with an ``IndexError`` once the windows were cut; a reversed or empty span trained
its question as unanswerable; a repeated, numeric or empty id, an empty question and a set of questions none of which
has an answer trained without a word (the last a model that answers nothing). Each is one :class:`DataFormatError`
naming the questions' source, the question and the problem.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any, Sequence

from ..data.text import check_context_length, check_text
from ..errors import DataFormatError, shown_value
from ..plurals import counted
from ..types import Example

# A model trained without any answer to learn: what every refusal of such questions says it would be.
ANSWERS_NOTHING = "a model trained on them learns to answer nothing"


def check_training_questions(examples: Sequence[Example], source: str | None = None) -> None:
    """Refuse ``examples`` (a list of :class:`Example`) that training cannot learn from as given, naming ``source`` (the
    file read; None: questions given from Python): no questions; an id that is no non-empty string, or one repeated; a
    question or context with nothing to read; a question without gold; an answer span that is no pair of whole
    character offsets ``0 <= start < end <= len(context)``; and questions none of which has an answer."""
    if not examples:
        raise DataFormatError("no training questions: training needs labelled questions", source=source)
    seen: set[str] = set()
    checked: Any = None  # the context last read whole: a paragraph's questions share its one string
    for place, example in enumerate(examples, 1):
        qid = _checked_id(example.id, place, source)
        if qid in seen:
            raise DataFormatError("duplicate question id", qid, source)
        seen.add(qid)
        check_text(example.question, "question", qid, source)
        if example.context is not checked:
            check_context_length(check_text(example.context, "context", qid, source), qid, source)
            checked = example.context
        if example.answers is None:
            raise DataFormatError("question without answers: training needs labelled questions", qid, source)
        _check_answers(example, qid, source)
    if not any(example.is_answerable for example in examples):
        raise DataFormatError(f"none of the {counted(len(examples), 'training question')} has an answer: {ANSWERS_NOTHING}; "
                              "train on questions with answers (unanswerable ones beside them teach it to abstain)", source=source)


def _checked_id(qid: Any, place: int, source: str | None) -> str:
    """``qid`` if it is a string with something to read; else refused naming the question by its place (from 1)."""
    if not isinstance(qid, str) or not qid.strip():
        raise DataFormatError(f"'id' must be a non-empty string, got {shown_value(qid)}", f"question #{place}", source)
    return check_text(qid, "id", f"question #{place}", source)


def _check_answers(example: Example, qid: str, source: str | None) -> None:
    """Each alternative of ``example`` holds spans, each a pair of whole offsets holding characters of its context."""
    length = len(example.context)
    for number, alternative in enumerate(example.answers or (), 1):
        if not alternative:
            raise DataFormatError(f"answer (alternative {number}) holds no span: an alternative is a tuple of (start, end) "
                                  "character spans, and an unanswerable question has no alternatives (answers=())", qid, source)
        for span in alternative:
            if not (isinstance(span, (tuple, list)) and len(span) == 2
                    and all(isinstance(offset, Integral) and not isinstance(offset, bool) for offset in span)):
                raise DataFormatError(f"answer span {shown_value(tuple(span) if isinstance(span, list) else span)} is no pair "
                                      "of whole character offsets (start, end)", qid, source)
            start, end = int(span[0]), int(span[1])
            if start < 0 or end > length:
                raise DataFormatError(f"answer span ({start}, {end}) lies outside the context's {length:,} characters", qid, source)
            if start >= end:
                raise DataFormatError(f"answer span ({start}, {end}) holds no character: a span is (start, end) with "
                                      "start < end, its end exclusive", qid, source)


__all__ = ["ANSWERS_NOTHING", "check_training_questions"]
