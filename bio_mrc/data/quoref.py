"""Quoref in SQuAD's layout, read as multi-span answers: every listed span is part of one answer.

Unlike SQuAD, whose ``answers`` are annotators' alternatives, a Quoref question's ``answers`` are the
spans that together form its answer (about 9% of questions have several), so each question becomes an
:class:`Example` with one alternative holding every span, scored with MultiSpanQA's metrics. The
article title is kept: Quoref's questions of one article share its paragraphs, so folds split by it.
"""

from __future__ import annotations

from pathlib import Path

from ..types import Example
from .squad import load_squad


def load_quoref(path: str | Path) -> list[Example]:
    """One :class:`Example` per question, in file order, its spans (deduplicated, in context order) one answer.
    Bad records are refused as :func:`bio_mrc.data.squad.load_squad` refuses them."""
    return [as_one_answer(example) for example in load_squad(path).examples]


def as_one_answer(example: Example) -> Example:
    """``example`` with its listed spans joined into one alternative (none stays none)."""
    spans = sorted({span for alternative in example.answers for span in alternative})
    return Example(example.id, example.question, example.context, (tuple(spans),) if spans else (), example.title)
