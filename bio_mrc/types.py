"""The one data model every dataset maps into, and every decoder maps out of.

An :class:`Example` holds a question, its context and the *alternative* gold
answers. Each alternative is a tuple of one or more character spans
``(start, end)`` (end exclusive) into ``context``:

* SQuAD: one alternative per annotator, each with one span;
* MultiSpanQA: one alternative with several spans;
* unanswerable: ``answers == ()``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Sequence

CharSpan = tuple[int, int]
Alternative = tuple[CharSpan, ...]

@dataclass(frozen=True)
class Example:
    id: str
    question: str
    context: str
    answers: tuple[Alternative, ...] = ()
    title: str = ""

    @property
    def is_answerable(self) -> bool:
        return len(self.answers) > 0

    def answer_texts(self) -> list[list[str]]:
        """Texts of every span of every alternative."""
        return [[self.context[s:e] for s, e in alt] for alt in self.answers]


@dataclass(frozen=True)
class AnswerSpan:
    """One predicted span: its text, character offsets into the context and a score; in a multi-span
    answer also its own ``probability`` of being one of the answer's spans (None elsewhere)."""

    text: str
    start: int
    end: int
    score: float
    probability: float | None = None

    def to_dict(self) -> dict[str, Any]:
        own = {} if self.probability is None else {"probability": float(self.probability)}
        return {"text": self.text, "start": self.start, "end": self.end, "score": float(self.score), **own}


@dataclass
class Prediction:
    """What a decoder says about one example.

    ``spans`` are sorted best first. ``no_answer_score`` is ``None`` when the
    decoding has no notion of "no answer"; otherwise higher means more likely
    unanswerable, and ``abstain`` says whether the tuned threshold fired.
    ``confidence`` is the decoding's raw confidence in the best span and
    ``probability`` the calibrated probability that it is right (official F1 > 0.5),
    where the model has a calibrator for the decoding.
    """

    id: str
    spans: list[AnswerSpan] = field(default_factory=list)
    no_answer_score: float | None = None
    abstain: bool = False
    confidence: float | None = None  # the decoding's raw confidence in the best span
    probability: float | None = None  # calibrated: the probability that the best span is right

    @property
    def answer(self) -> str:
        """The SQuAD answer: the best single span, or "" when abstaining or empty."""
        if self.abstain or not self.spans:
            return ""
        return self.spans[0].text

    @property
    def answers(self) -> list[str]:
        """The multi-span answer: the text of every span, or none when abstaining."""
        return [] if self.abstain else [s.text for s in self.spans]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "answer": self.answer,
            "abstain": self.abstain,
            "no_answer_score": None if self.no_answer_score is None else float(self.no_answer_score),
            "confidence": self.confidence,
            "probability": self.probability,
            "spans": [s.to_dict() for s in self.spans],
        }


def content_hash(examples: Sequence[Example]) -> str:
    """A fingerprint of the questions themselves (ids, texts and gold offsets, in order): equal
    hashes mean the same data, so cached models and results are reused only on the same data."""
    digest = hashlib.sha256()
    for ex in examples:
        digest.update(json.dumps([ex.id, ex.question, ex.context, ex.answers, ex.title]).encode())
    return digest.hexdigest()[:16]
