"""The one data model every dataset maps into, and every decoder maps out of.

An :class:`Example` holds a question, its context and the *alternative* gold
answers. Each alternative is a tuple of one or more character spans
``(start, end)`` (end exclusive) into ``context``:

* SQuAD: one alternative per annotator, each with one span;
* MultiSpanQA: one alternative with several spans;
* unanswerable: ``answers == ()``;
* unlabelled (a question asked for prediction, with no gold at all): ``answers is None``. It is neither
  answerable nor unanswerable, and only prediction takes it.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

CharSpan = tuple[int, int]
Alternative = tuple[CharSpan, ...]

# A text longer than this shows its start and its length in a repr: a context may be a book.
SHOWN_CHARACTERS = 200


def shown_text(text: Any) -> str:
    """``text`` as a repr shows it: whole up to :data:`SHOWN_CHARACTERS` characters, else its start and its length
    (``'The Normans came'… (1,280,000 characters)``)."""
    if not isinstance(text, str) or len(text) <= SHOWN_CHARACTERS:
        return repr(text)
    return f"{text[:SHOWN_CHARACTERS]!r}… ({len(text):,} characters)"


def finite_or_none(value: float | None) -> float | None:
    """``value`` as an answer's JSON holds a number: a float, or None where there is none or it is not finite (a
    question no span survives for has no finite no-answer score: ``null - best`` with no best), as JSON has no
    ``Infinity`` or ``NaN``."""
    return None if value is None or not math.isfinite(value) else float(value)


@dataclass(frozen=True, repr=False)
class Example:
    """One question: its id, text, context and gold answers, ``answers`` a tuple of alternatives, each a tuple of
    ``(start, end)`` character spans into ``context`` (end exclusive); ``()`` for an unanswerable question, None for
    an unlabelled one; ``title``: its article's, where the data gives one. Its ``repr`` shows a long text's start and
    length (:func:`shown_text`)."""

    id: str
    question: str
    context: str
    answers: tuple[Alternative, ...] | None = ()
    title: str = ""

    def __repr__(self) -> str:
        return (f"Example(id={self.id!r}, question={shown_text(self.question)}, context={shown_text(self.context)}, "
                f"answers={self.answers!r}, title={shown_text(self.title)})")

    @property
    def is_labelled(self) -> bool:
        """Whether the example has gold (answers, or none for an unanswerable question)."""
        return self.answers is not None

    @property
    def is_answerable(self) -> bool:
        """Whether the example has at least one gold answer."""
        return bool(self.answers)

    def answer_texts(self) -> list[list[str]]:
        """Texts of every span of every alternative (none for an unlabelled example)."""
        return [[self.context[s:e] for s, e in alt] for alt in self.answers or ()]


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
        """The span as JSON: text, offsets and score, and its probability where it has one."""
        own = {} if self.probability is None else {"probability": float(self.probability)}
        return {"text": self.text, "start": self.start, "end": self.end, "score": float(self.score), **own}


@dataclass
class Prediction:
    """What a decoder says about one example.

    ``spans`` are sorted best first. ``no_answer_score`` is ``None`` when the
    decoding has no notion of "no answer"; otherwise higher means more likely
    unanswerable (``inf`` where no span survives), and ``abstain`` says whether the tuned threshold fired.
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
    tag_spans: list[AnswerSpan] | None = None  # a multi-span joint decoding's: the BIO decoding's spans with their posteriors

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
        """The prediction as JSON: its answer, abstention, scores and spans (what the answers stream writes); a score
        of no finite value (``no_answer_score`` where no span survives) is None, as JSON has no infinity."""
        return {
            "id": self.id,
            "answer": self.answer,
            "abstain": self.abstain,
            "no_answer_score": finite_or_none(self.no_answer_score),
            "confidence": finite_or_none(self.confidence),
            "probability": finite_or_none(self.probability),
            "spans": [s.to_dict() for s in self.spans],
        }


def content_hash(examples: Sequence[Example]) -> str:
    """A fingerprint of the questions themselves (ids, texts and gold offsets, in order): equal
    hashes mean the same data, so cached models and results are reused only on the same data."""
    digest = hashlib.sha256()
    for ex in examples:
        digest.update(json.dumps([ex.id, ex.question, ex.context, ex.answers, ex.title]).encode())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class DocumentAnswer:
    """One answer of a question asked over several documents: a span of document ``document`` (its index in the
    list; ``name``, e.g. its file name, where one was given).

    ``score`` ranks answers across documents: the span's score above its own document's no-answer score (a
    log-odds of "this span" against "no answer in this document"), which needs nothing from the other documents
    and no softmax within one; ``span_score`` is the decoding's own score. ``abstain``: the no-answer threshold
    saved with the model fired for this document. ``probability``: the calibrated probability that the answer is
    right, for the best answer of a document that does not abstain, under a model with a calibrator (else None: an
    abstaining document's probability is that of the abstention being right); of a multi-span answer's span, its own
    probability, as its document's answer gives it (ranking nothing: a share within its document)."""

    text: str
    start: int
    end: int
    score: float
    document: int
    name: str | None = None
    span_score: float = 0.0
    abstain: bool = False
    probability: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The answer as JSON, with its document's index and name."""
        return {"text": self.text, "start": self.start, "end": self.end, "score": float(self.score), "document": self.document,
                "name": self.name, "span_score": float(self.span_score), "abstain": self.abstain, "probability": self.probability}


@dataclass
class RankedAnswers:
    """One question's answers over several documents, best first across them (``answers``), and each document's own
    :class:`Prediction` in document order (``documents``); ``names``: each document's name as the caller gave it
    (None where none was given)."""

    question: str
    answers: list[DocumentAnswer]
    documents: list[Prediction]
    names: list[str | None] = field(default_factory=list)

    @property
    def answer(self) -> str:
        """The best answer's text; "" when there is none or every document abstains (the best answer's document
        then abstains too: a span's score is its margin over its own document's no-answer score)."""
        return self.answers[0].text if self.answers and not self.answers[0].abstain else ""

    def to_dict(self) -> dict[str, Any]:
        """The question's answers as JSON, and each document's abstention and no-answer score (None where it has no
        finite one, as :meth:`Prediction.to_dict`)."""
        return {
            "question": self.question,
            "answer": self.answer,
            "answers": [answer.to_dict() for answer in self.answers],
            "documents": [{"document": index, "name": name, "abstain": p.abstain, "no_answer_score": finite_or_none(p.no_answer_score),
                           "confidence": finite_or_none(p.confidence), "probability": finite_or_none(p.probability)}
                          for index, (p, name) in enumerate(zip(self.documents, self.names or [None] * len(self.documents)))],
        }
