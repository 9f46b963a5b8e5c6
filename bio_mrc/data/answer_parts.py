"""SQuAD-shaped questions whose listed answers are the parts of one answer (Quoref, a user's own multi-span data).

In SQuAD a question's ``answers`` are annotators' alternatives, any one of them right. Here they are the spans
that together form the answer, so each question becomes an :class:`Example` with one alternative holding every
span, scored with MultiSpanQA's metrics. Any form :func:`bio_mrc.data.squad.load_squad` reads works, validated the
same way; the article title is kept, so cross-validation folds split by it.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

from ..errors import InputNote, argument
from ..plurals import counted, number_form
from ..types import Example
from .formats import FORMATS
from .one_answer import JoinedPartsNote, as_one_answer, read_as_parts
from .squad import SquadFile, load_squad

__all__ = ["AlternativesReadNote", "JoinedPartsNote", "as_answer_parts", "as_one_answer", "load_answer_parts",
           "note_alternatives_read"]


class AlternativesReadNote(InputNote):
    """Questions read from the Hugging Face SQuAD columns with no format named list several answers, which those
    columns hold as alternatives (SQuAD's release) or as the parts of one answer (Quoref's): read as alternatives,
    counted in one note naming the file, the first few questions and how to name either."""


def load_answer_parts(data: Any, **options: Any) -> list[Example]:
    """The questions :func:`~bio_mrc.data.squad.load_squad` reads from ``data`` (with its ``options``), each one's
    listed spans one answer (Quoref's training file, one's own multi-span questions)."""
    read = load_squad(data, **options)
    return as_answer_parts(read.examples, read.source)


def as_answer_parts(examples: Iterable[Example], source: str = "") -> list[Example]:
    """Each question with its listed spans joined into one answer (:func:`as_one_answer`), in order; parts that
    repeat, nest or overlap are counted in one :class:`JoinedPartsNote` naming ``source``."""
    return list(read_as_parts(examples, source))


def note_alternatives_read(data: SquadFile, key: str | None = None) -> None:
    """One :class:`AlternativesReadNote` where ``data``, read in a form whose listed answers mean either
    (``answers_either_way``), lists several answers shaped as one answer's parts for most of its questions that list
    several: a reader that names no format reads them as SQuAD's alternatives, which a file of one answer's parts
    would be scored and trained on without a word. Annotators' alternatives of one answer mostly overlap or repeat
    one text ("Denver Broncos", "Broncos"); parts never do, so a file whose several answers mostly overlap is read
    as alternatives without the note. Called only where no format was named: one named says how to read them.
    ``key``: the comparison config's entry that read ``data`` ("": one unnamed), which the note names with the
    ``format`` to give it."""
    several = [example for example in data.examples if example.answers and len(set(example.answers)) > 1]
    part_shaped = [example.id for example in several if _shaped_as_parts(example)]
    if not FORMATS[data.format].answers_either_way or 2 * len(part_shaped) <= len(several):
        return
    shown = ", ".join(repr(qid) for qid in part_shaped[:5]) + (", ..." if len(part_shaped) > 5 else "")
    # a config's entry names its format as a key, a command as an option
    parts, alternatives = ((argument("data_format", "answer-parts"), argument("data_format", "squad")) if key is None else
                           (f'"format": "answer-parts" in {key or "its config entry"}', '"format": "squad"'))
    remedy = f"give {parts} where they are the parts of one answer, or {alternatives} to read them as alternatives without this note"
    warnings.warn(AlternativesReadNote(
        f"{key + ': ' if key else ''}{counted(len(part_shaped), 'question')} of {data.source or 'the input'} "
        f"{number_form(len(part_shaped), 'lists', 'list')} several answers that share no text, as the parts of one "
        f"answer do, read as alternatives, any one of them right, as SQuAD's release of these columns means them "
        f"(Quoref's means the parts of one answer), e.g. {shown}; {remedy}"), stacklevel=2)


def _shaped_as_parts(example: Example) -> bool:
    """Whether ``example``'s listed answers share no character and no text, none inside another (case and edge
    blanks aside), as the parts of one answer do and annotators' alternatives of it mostly do not."""
    spans = sorted(set(span for alternative in example.answers or () for span in alternative))
    if any(later_start < end for (_, end), (later_start, _) in zip(spans, spans[1:])):
        return False
    texts = [example.context[start:end].strip().casefold() for start, end in spans]
    return len(set(texts)) == len(texts) and not any(a != b and a in b for a in texts for b in texts)
