"""A question's listed spans as the parts of one answer, rather than alternatives, each any one of them right."""

from __future__ import annotations

from dataclasses import replace

from ..types import Example


def as_one_answer(example: Example) -> Example:
    """``example`` with its listed spans (deduplicated, in context order) one alternative; none, or an unlabelled
    question, stays as it is."""
    if not example.answers:
        return example
    spans = sorted({span for alternative in example.answers for span in alternative})
    return replace(example, answers=(tuple(spans),))
