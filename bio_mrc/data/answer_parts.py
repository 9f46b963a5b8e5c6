"""SQuAD-shaped questions whose listed answers are the parts of one answer (Quoref, a user's own multi-span data).

In SQuAD a question's ``answers`` are annotators' alternatives, any one of them right. Here they are the spans
that together form the answer, so each question becomes an :class:`Example` with one alternative holding every
span, scored with MultiSpanQA's metrics. Any form :func:`bio_mrc.data.squad.load_squad` reads works, validated the
same way; the article title is kept, so cross-validation folds split by it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..types import Example
from .one_answer import JoinedPartsNote, as_one_answer, read_as_parts
from .squad import load_squad

__all__ = ["JoinedPartsNote", "as_answer_parts", "as_one_answer", "load_answer_parts"]


def load_answer_parts(data: Any, **options: Any) -> list[Example]:
    """The questions :func:`~bio_mrc.data.squad.load_squad` reads from ``data`` (with its ``options``), each one's
    listed spans one answer (Quoref's training file, one's own multi-span questions)."""
    read = load_squad(data, **options)
    return as_answer_parts(read.examples, read.source)


def as_answer_parts(examples: Iterable[Example], source: str = "") -> list[Example]:
    """Each question with its listed spans joined into one answer (:func:`as_one_answer`), in order; parts that
    repeat, nest or overlap are counted in one :class:`JoinedPartsNote` naming ``source``."""
    return list(read_as_parts(examples, source))

