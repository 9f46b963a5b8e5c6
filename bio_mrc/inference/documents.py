"""One question over several documents: each document decoded on its own, its spans ranked across all of them.

A span's cross-document score is its decoding score above its own document's no-answer score,
``span.score - (no_answer_score + best.score)`` (the decoders define ``no_answer_score = null - best``, so this is
``span.score - null``): for the span decoding ``s_i + e_j - (s_0 + e_0)`` with the [CLS] null, for joint
``log P(span) - log P(null)``, for BIO the tag log-likelihood ratio ``r`` against all-O (whose null is 0). It is a
log-odds of "this span" against "no answer in this document", computed inside one document with no softmax over its
rivals, so a document with many plausible spans does not dilute its best one and the documents compare directly.
A decoding without a no-answer score ranks by its own span score.

Where a decoding's null is a window's own (the [CLS] rule, ``rank_windows`` in its registry entry), a document of
several windows is ranked window by window (:func:`window_predictions`): each span against the null of the window it
was read in, its best such margin. The document's own ``no_answer_score`` takes the lowest null of any window and the
best span of any window, which may be two windows apart: across documents that margin grows with a document's length
alone, so a long document that answers nothing outranked a short one that holds the answer.

The ranking reads each document's own scores alone, with no sum or softmax across documents, so documents may be
ranked a chunk at a time (:class:`DocumentRanking`): each chunk's windows are decoded, their candidates cut to the
``top_k`` best so far, and the windows let go; the answers are those of one pass over every document, bit for bit,
given the same window outputs.

With ``multi_span`` each document gives its own multi-span answer (the decoding's span-count rule, as asked of that
document alone; a document that abstains gives none), and every document's spans are listed, ranked across the
documents by each span's cross-document score above: the score the single-span ranking gives the same characters of
the same document (decoded alongside, its n-best spans). A span's own probability (its posterior, or its n-best share)
is a share within its document, against that document's other spans and not against its no-answer score, so it does
not compare across documents; it stays the span's ``probability``. A span the single decoding does not rank among its
n-best (a joint answer's tag span) takes its document's lowest n-best margin, the most it can score.
"""

from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from .. import registry
from ..data.text import unwritable_character
from ..decoding.window_outputs import WindowOutputs
from ..errors import ConfigError, a_type
from ..plurals import counted
from ..types import AnswerSpan, DocumentAnswer, Example, Prediction, RankedAnswers


@dataclass(frozen=True)
class WindowPredictions:
    """Each window of several documents decoded as a question of its own, and the document each window is of."""

    predictions: list[Prediction]
    documents: list[int]


def window_predictions(
    outputs: WindowOutputs, examples: Sequence[Example], decoding: str,
    decode: Callable[[WindowOutputs, list[Example]], list[Prediction]],
) -> WindowPredictions | None:
    """The documents' windows each decoded alone by ``decode`` (so each span's no-answer score is its own window's),
    for a decoding whose null is a window's (its registry entry's ``rank_windows``); else None."""
    windows = registry.decoding(decoding).ranking_windows(outputs)
    if windows is None:
        return None
    documents = outputs.example_index.tolist()
    return WindowPredictions(decode(windows, [examples[d] for d in documents]), documents)


def cross_document_scores(prediction: Prediction) -> list[float]:
    """Each of ``prediction``'s spans' score above its document's no-answer score (see the module docstring)."""
    if not prediction.spans or prediction.no_answer_score is None:
        return [span.score for span in prediction.spans]
    null = prediction.no_answer_score + prediction.spans[0].score
    return [span.score - null for span in prediction.spans]


def document_names(names: Sequence[str | None] | None, documents: int) -> list[str | None]:
    """``names`` as a list of one name (or None) a document; no names: None for each. Only a list or tuple of
    strings (or None) is read: a text would be one name a character, a set or a dict has no order of the documents,
    and an iterator is used up by the first reading. A name that is no string, or one no UTF-8 file can hold (a
    lone surrogate), is refused naming its place, and so is a count other than ``documents``."""
    if isinstance(names, (str, bytes)):
        raise ConfigError(f"names is a list of document names, one a document, got the text {names!r}")
    if names is not None and not isinstance(names, (list, tuple)):
        raise ConfigError(f"names is a list of document names, one a document, got {a_type(names)}")
    names = list(names) if names is not None else [None] * documents
    if len(names) != documents:
        raise ConfigError(f"got {counted(len(names), 'document name')} for {counted(documents, 'document')}")
    for index, name in enumerate(names):
        _check_name(name, index)
    return names


def _check_name(name: Any, index: int) -> None:
    """A document's name: None, or a string a UTF-8 file can hold (the answers are written as JSON)."""
    if name is not None and not isinstance(name, str):
        raise ConfigError(f"names[{index}] is {a_type(name)}, not a string (or None)")
    if name is not None and (character := unwritable_character(name)):
        raise ConfigError(f"names[{index}] holds {character}, half of a UTF-16 surrogate pair or an undecodable byte, "
                          "which no UTF-8 file can hold (check the text's encoding)")


def rank_across_documents(
    question: str, predictions: Sequence[Prediction], top_k: int | None = 1, names: Sequence[str | None] | None = None,
    windows: WindowPredictions | None = None, answers: Sequence[Prediction] | None = None,
) -> RankedAnswers:
    """The ``top_k`` best spans (None: all) over every document's n-best (``predictions``, one per document, in
    order), best first by :func:`cross_document_scores` (with ``windows``, each span's best over the windows it was
    read in), those of a document that abstains after every other; ties go to the earlier document, then the earlier
    span. With ``answers`` (each document's multi-span answer), their spans instead, scored as ``predictions`` score them."""
    ranking = DocumentRanking(top_k, multi_span=answers is not None)
    names = document_names(names, len(predictions))
    ranking.add(predictions, windows, answers)
    return ranking.ranked(question, names)


Decoder = Callable[[WindowOutputs, list[Example]], list[Prediction]]


def rank_chunk(ranking: DocumentRanking, outputs: WindowOutputs, documents: list[Example], decoding: str, single: Decoder,
               several: Decoder, predictions: Sequence[Prediction] | None = None) -> None:
    """Add one chunk of documents (``outputs``: their windows) to ``ranking``: each document's single n-best
    (``predictions`` where already decoded, else ``single``'s), window by window where ``decoding``'s null is a window's;
    with the ranking's ``multi_span``, each document's multi-span answer (``several``'s), scored by its single n-best."""
    answers = several(outputs, documents) if ranking.multi_span else None
    singles = single(outputs, documents) if predictions is None else predictions
    ranking.add(singles, window_predictions(outputs, documents, decoding, single), answers)


# A candidate: its sort key (abstains, -score, document, start, end), its document, its span and its score.
Candidate = tuple[tuple[bool, float, int, int, int], int, AnswerSpan, float]


class DocumentRanking:
    """:func:`rank_across_documents` over documents given a chunk at a time, in order: every document's prediction
    (the answer's ``documents``) and the ``top_k`` best candidates so far, nothing of a chunk's windows. A cut is
    ``sorted(...)[:top_k]`` (``heapq.nsmallest``, stable) and the best so far come before a chunk's, so the cuts
    keep the one pass's answers in its order, equal keys included. ``top_k`` None keeps every candidate; with
    ``multi_span`` the candidates are the spans of each document's multi-span answer (``add``'s ``answers``)."""

    def __init__(self, top_k: int | None = 1, multi_span: bool = False) -> None:
        if top_k is not None and top_k < 1:
            raise ValueError(f"top_k is a positive number of answers, got {top_k!r}")
        self.top_k, self.multi_span = top_k, multi_span
        self.predictions: list[Prediction] = []
        self.best: list[Candidate] = []

    def add(self, predictions: Sequence[Prediction], windows: WindowPredictions | None = None,
            answers: Sequence[Prediction] | None = None) -> None:
        """The next documents' predictions (one each, in order), with ``windows`` their windows' (numbered from 0);
        with ``multi_span``, ``answers`` are the same documents' multi-span answers, ranked by ``predictions``' scores."""
        if self.multi_span != (answers is not None):
            raise ValueError("a multi-span ranking takes each document's multi-span answer, a single-span one none")
        first = len(self.predictions)
        scored = _window_candidates(windows) if windows is not None else _document_candidates(predictions)
        if answers is not None:
            scored, predictions = _answer_candidates(answers, scored), answers
        self.predictions += predictions
        candidates = (((self.predictions[first + d].abstain, -score, first + d, span.start, span.end), first + d, span, score)
                      for d, span, score in scored)
        every = itertools.chain(self.best, candidates)
        self.best = (sorted(every, key=lambda item: item[0]) if self.top_k is None
                     else heapq.nsmallest(self.top_k, every, key=lambda item: item[0]))

    def ranked(self, question: str, names: Sequence[str | None] | None = None) -> RankedAnswers:
        """The answers of every document added, best first (``names``: one a document, or None)."""
        names = document_names(names, len(self.predictions))
        answers = [DocumentAnswer(span.text, span.start, span.end, score, document, names[document], span.score,
                                  self.predictions[document].abstain, self._probability(self.predictions[document], span))
                   for _, document, span, score in self.best]
        return RankedAnswers(question, answers, list(self.predictions), names)

    def _probability(self, prediction: Prediction, span: AnswerSpan) -> float | None:
        """A multi-span answer's span: its own probability, as its document's answer gives it; else the best span's."""
        return span.probability if self.multi_span else best_span_probability(prediction, span)


def best_span_probability(prediction: Prediction, span: AnswerSpan) -> float | None:
    """The calibrated probability that ``span`` is right: the document's own, where ``span`` is the answer it gives
    (its best span, the document not abstaining); else None. An abstaining document's probability is that of its
    abstention being right, no span's."""
    best = prediction.spans[0] if prediction.spans else None
    if prediction.abstain or best is None or (best.start, best.end) != (span.start, span.end):
        return None
    return prediction.probability


def _document_candidates(predictions: Sequence[Prediction]) -> Iterable[tuple[int, AnswerSpan, float]]:
    """(document, span, cross-document score) of every document's n-best."""
    for document, prediction in enumerate(predictions):
        for span, score in zip(prediction.spans, cross_document_scores(prediction)):
            yield document, span, score


def _window_candidates(windows: WindowPredictions) -> Iterable[tuple[int, AnswerSpan, float]]:
    """(document, span, score) of every window's n-best, a span read in several windows once, at its best margin."""
    best: dict[tuple[int, int, int], tuple[int, AnswerSpan, float]] = {}
    for prediction, document in zip(windows.predictions, windows.documents):
        for span, score in zip(prediction.spans, cross_document_scores(prediction)):
            key = (document, span.start, span.end)
            if key not in best or score > best[key][2]:
                best[key] = (document, span, score)
    return best.values()


def _answer_candidates(answers: Sequence[Prediction], scored: Iterable[tuple[int, AnswerSpan, float]]
                       ) -> Iterable[tuple[int, AnswerSpan, float]]:
    """(document, span, score) of every span of each document's multi-span answer, none of one that abstains, each
    scored as ``scored`` (the same documents' single n-best) scores those characters; one it lacks, at its document's
    lowest n-best score (no span outside the n-best scores more)."""
    margins: dict[tuple[int, int, int], float] = {}
    floors: dict[int, float] = {}
    for document, span, score in scored:
        margins[document, span.start, span.end] = score
        floors[document] = min(score, floors.get(document, score))
    for document, answer in enumerate(answers):
        for span in [] if answer.abstain else answer.spans:
            yield document, span, margins.get((document, span.start, span.end), floors.get(document, -math.inf))
