"""Several answers to one question: the span-count rule every multi-span decoding shares, and the
n-best multi-span answers of a start/end decoding."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..answer_text import TakenCharacters, normalize_answer
from ..types import AnswerSpan, Prediction
from .shares import CONFIDENCE_SPANS, nbest_shares
from .ties import near_tie_order

#: The n-best multi-span rule's default: spans below 10% of the n-best probability mass are dropped.
MIN_SPAN_PROBABILITY = 0.1
#: A span of the tag sequence counts towards a joint multi-span answer when it is more likely than not.
TAGGED_SPAN_PROBABILITY = 0.5


def keep_probable_spans(predictions: Sequence[Prediction], min_probability: float, n_best: int | None = None) -> list[Prediction]:
    """The span-count rule: each answer keeps its first (best) span always, so an answered question is never
    left empty, and each further span only if its own ``probability`` is at least ``min_probability``
    (a span without one is kept), its text is one once normalised (:func:`is_answer_text`) and it shares no
    character with a span kept before it (:func:`apart`). The spans are a tag sequence's, chosen among the n-best
    as it was decoded, so ``n_best`` asks nothing more of them."""
    (kept,) = keep_probable_spans_at(predictions, (min_probability,), n_best)
    return kept


def keep_probable_spans_at(
    predictions: Sequence[Prediction], thresholds: Sequence[float], n_best: int | None = None
) -> Iterator[list[Prediction]]:
    """:func:`keep_probable_spans` at each of ``thresholds`` in turn, whether each span's text is an answer read once."""
    return _at_each(_answer_texts, _probable_spans, predictions, thresholds, n_best)


def _answer_texts(prediction: Prediction, n_best: int | None) -> list[bool]:
    """Per span, whether it may join the answer after the first whatever its probability (:func:`is_answer_text`)."""
    return [k == 0 or is_answer_text(span.text) for k, span in enumerate(prediction.spans)]


def _probable_spans(prediction: Prediction, answer_texts: list[bool], min_probability: float) -> Prediction:
    kept = [span for k, (span, text) in enumerate(zip(prediction.spans, answer_texts)) if k == 0 or (
        text and (span.probability is None or span.probability >= min_probability))]
    return replace(prediction, spans=apart(kept))


def _at_each(
    prepare: Callable[[Prediction, int | None], Any], keep: Callable[[Prediction, Any, float], Prediction],
    predictions: Sequence[Prediction], thresholds: Sequence[float], n_best: int | None,
) -> Iterator[list[Prediction]]:
    """A span-count rule's answers at each of ``thresholds`` in turn: ``prepare(prediction, n_best)``, what the rule
    reads of a prediction whatever the threshold, once per prediction; ``keep(prediction, prepared, threshold)``, its
    answer at a threshold. What is prepared lives while the answers are asked for (one chunk of questions' grid)."""
    prepared = [prepare(prediction, n_best) for prediction in predictions]
    for min_probability in thresholds:
        yield [keep(prediction, ready, min_probability) for prediction, ready in zip(predictions, prepared)]


def nbest_multi_span(
    predictions: Sequence[Prediction], min_probability: float = MIN_SPAN_PROBABILITY, n_best: int | None = None
) -> list[Prediction]:
    """Keep, per question, the answers of the first ``n_best`` n-best spans (all with None) whose probability is at
    least ``min_probability`` and whose span overlaps no better answer's kept span.

    A span's probability is its n-best share (:func:`~bio_mrc.decoding.shares.nbest_shares`: the softmax of the
    question's n-best span scores, as in Hugging Face's QA post-processing, always over the best
    :data:`~bio_mrc.decoding.shares.CONFIDENCE_SPANS`; answers decode at least that many, so ``n_best`` limits the
    candidates, never the shares); spans whose texts are one once normalised as the metrics normalise them (a name at
    several of its mentions) are one answer, of their summed probability, standing as its best-ranked span: the sum
    of its mentions among those best spans, or, for a text first met past them, its first mention's alone, so a
    longer n-best adds candidates, never probability to an answer.
    The best span's answer comes first and is always kept (the single answer, which the prediction's
    confidence describes); the others follow by probability. A further span whose text normalises to nothing
    (punctuation, an article) is no answer and joins none. Each returned span's ``score`` and
    ``probability`` are its answer's.
    """
    (kept,) = nbest_multi_span_at(predictions, (min_probability,), n_best)
    return kept


def nbest_multi_span_at(
    predictions: Sequence[Prediction], thresholds: Sequence[float], n_best: int | None = None
) -> Iterator[list[Prediction]]:
    """:func:`nbest_multi_span` at each of ``thresholds`` in turn, each question's spans grouped by text once."""
    return _at_each(_nbest_answers, _kept_answers, predictions, thresholds, n_best)


def _nbest_answers(prediction: Prediction, n_best: int | None) -> list[tuple[AnswerSpan, float]]:
    """The answers (:func:`_answers_by_text`) that overlap none taken before them, each as its span with the least
    probability of the answers from the second up to it (the first: infinity). At a threshold the rule stops at the
    first answer after the best below it, so it keeps these up to the first whose least is below the threshold."""
    answers = _answers_by_text(prediction.spans, n_best)
    taken = TakenCharacters([(span.start, span.end) for span, _ in answers])  # time linear in a long n-best
    kept, least = [], math.inf
    for k, (span, p) in enumerate(answers):
        least = least if k == 0 else min(least, p)
        if not taken.overlaps(span.start, span.end):
            taken.take(span.start, span.end)
            kept.append((replace(span, score=p, probability=p), least))
    return kept


def _kept_answers(prediction: Prediction, answers: list[tuple[AnswerSpan, float]], min_probability: float) -> Prediction:
    """``prediction`` with the ``answers`` (:func:`_nbest_answers`) ``min_probability`` keeps: the first always."""
    kept: list[AnswerSpan] = []
    for span, least in answers:
        if kept and least < min_probability:
            break  # an answer after the best below the threshold stops the rule, and the least only falls
        kept.append(span)
    return replace(prediction, spans=kept)


def _answers_by_text(spans: Sequence[AnswerSpan], n_best: int | None = None) -> list[tuple[AnswerSpan, float]]:
    """The n-best ``spans`` (best first, scores near-tied earliest first: :func:`_by_score`) as answers: each normalised
    text's best-ranked span and the summed n-best share of its spans among the best
    :data:`~bio_mrc.decoding.shares.CONFIDENCE_SPANS` (a text first met past them: its first span's); the best span's
    answer first (the single answer's text, whatever a near-tie reorders), then the others likeliest first (near-tied
    shares: earliest first); only the answers whose best-ranked span is among the first ``n_best`` (all with None)."""
    if not spans:
        return []
    lead_span = spans[0]
    lead = normalize_answer(lead_span.text)
    spans = _by_score(spans, [s.score for s in spans])
    probs = nbest_shares([s.score for s in spans])
    answers: dict[str, tuple[AnswerSpan, float]] = {}
    candidates = {lead}  # and the texts of the first n_best spans
    for k, (span, p) in enumerate(zip(spans, probs.tolist())):
        text = normalize_answer(span.text)
        if (not text and span is not lead_span) or (k >= CONFIDENCE_SPANS and text in answers):  # no answer; a mention past the shares' spans
            continue
        first, total = answers.get(text, (span, 0.0))
        answers[text] = (first, total + p)
        if n_best is None or k < n_best:
            candidates.add(text)
    others = [answers[text] for text in answers if text in candidates and text != lead]
    return [answers[lead], *_by_score(others, [p for _, p in others], [span for span, _ in others])]


def tagged_or_nbest_spans(
    predictions: Sequence[Prediction], min_probability: float = MIN_SPAN_PROBABILITY, n_best: int | None = None
) -> list[Prediction]:
    """The joint decoding's multi-span answers: where the BIO decoding's multi-span answer holds two or more spans
    each more likely than not (``tag_spans``, with their posteriors) of two or more texts once normalised (the mentions
    of one text are one answer), those spans, the single answer's text first at its likeliest mention (the
    span the prediction's confidence describes, where the tagger holds it), the others likeliest first; else the
    non-overlapping n-best spans kept by ``min_probability``, the first ``n_best`` the candidates (:func:`nbest_multi_span`).

    The tagger is the head that can represent several spans, so it decides whether an answer has several; n-best
    shares compete for one answer (two right spans split the probability), so they decide only where it does not."""
    (kept,) = tagged_or_nbest_spans_at(predictions, (min_probability,), n_best)
    return kept


def tagged_or_nbest_spans_at(
    predictions: Sequence[Prediction], thresholds: Sequence[float], n_best: int | None = None
) -> Iterator[list[Prediction]]:
    """:func:`tagged_or_nbest_spans` at each of ``thresholds`` in turn, each question's tagged spans (which no threshold
    moves) read once, and its n-best spans, where they decide, grouped by text once."""
    return _at_each(_tagged_or_nbest_answers, _kept_tagged_or_nbest, predictions, thresholds, n_best)


def _tagged_or_nbest_answers(prediction: Prediction, n_best: int | None) -> tuple[list[AnswerSpan] | None, list | None]:
    """``(tagged spans, None)`` where the tag sequence holds spans of several texts, else ``(None, n-best answers)``."""
    tagged = _several_tagged_spans(prediction)
    return (tagged, None) if tagged is not None else (None, _nbest_answers(prediction, n_best))


def _kept_tagged_or_nbest(prediction: Prediction, prepared: tuple[list[AnswerSpan] | None, list | None], min_probability: float) -> Prediction:
    tagged, answers = prepared
    return replace(prediction, spans=list(tagged)) if tagged is not None else _kept_answers(prediction, answers, min_probability)


def _several_tagged_spans(prediction: Prediction) -> list[AnswerSpan] | None:
    """The tag spans more likely than not, the single answer's likeliest mention first, where they hold two or more
    texts once normalised; else None (the n-best spans decide)."""
    tagged = [s for s in prediction.tag_spans or ()
              if s.probability is not None and s.probability >= TAGGED_SPAN_PROBABILITY and is_answer_text(s.text)]
    best = normalize_answer(prediction.spans[0].text) if prediction.spans else None
    tagged = _by_score(tagged, [span.probability for span in tagged])
    lead = next((k for k, span in enumerate(tagged) if normalize_answer(span.text) == best), None)
    if lead is not None:  # the single answer's likeliest mention first; its other mentions keep their places
        tagged.insert(0, tagged.pop(lead))
    tagged = apart(tagged)
    several = len({normalize_answer(span.text) for span in tagged}) >= 2  # one text at two mentions is one answer
    return tagged if several else None


def wider_nbest(predictions: Sequence[Prediction], wider: Callable[[], Sequence[Prediction]]) -> list[Prediction]:
    """Multi-span ``predictions`` of an n-best decoding with the n-best spans of ``wider()``, the same questions decoded
    with more n-best spans, which their shares are then of (each question's other findings, its tag spans, kept)."""
    return [replace(prediction, spans=list(more.spans)) for prediction, more in zip(predictions, wider())]


def as_decoded(predictions: Sequence[Prediction], other: Callable[[], Sequence[Prediction]]) -> list[Prediction]:
    """Multi-span ``predictions`` as they are, ``other`` not decoded: a tag sequence's spans, chosen by their
    posteriors, take no share of a wider n-best; an n-best decoding's spans are already its single answers' n-best."""
    return list(predictions)


def single_answers(predictions: Sequence[Prediction], single: Callable[[], Sequence[Prediction]]) -> list[Prediction]:
    """A tag sequence's multi-span ``predictions`` hold its chosen spans, no n-best: the single answers ``single()``."""
    return list(single())


def apart(spans: Sequence[AnswerSpan]) -> list[AnswerSpan]:
    """``spans`` (best first) without each that shares a character with one before it. Tokens that do not overlap
    may: a tokenizer that normalises text (NFKC: "ﬃ" becomes "ffi") gives each piece of one character that
    character's offsets, so two tagged spans of distinct tokens can both hold it ("Oﬃ" and "ﬃce"). Time linear in
    the spans' characters (:class:`~bio_mrc.answer_text.TakenCharacters`): a sure tagger's answer may hold every one
    of the hundreds of thousands of mentions of a name in a long context."""
    kept: list[AnswerSpan] = []
    taken = TakenCharacters([(span.start, span.end) for span in spans])
    for span in spans:
        if not taken.overlaps(span.start, span.end):
            taken.take(span.start, span.end)
            kept.append(span)
    return kept


def _by_score(items: Sequence, scores: Sequence[float], spans: Sequence[AnswerSpan] | None = None) -> list:
    """``items`` best score first, scores near-tied (:func:`~bio_mrc.decoding.ties.near_tie_order`) earliest first by
    their ``spans`` (the items themselves without): round-off never decides between mentions or answers."""
    spans = items if spans is None else spans
    order = near_tie_order(np.array(scores, dtype=np.float64), np.array([s.start for s in spans], dtype=np.int64),
                           np.array([s.end for s in spans], dtype=np.int64))
    return [items[k] for k in order.tolist()]


def is_answer_text(text: str) -> bool:
    """Whether a span's text is something once normalised as the metrics normalise it: punctuation or an article
    alone scores 0 against any gold, so it never joins a multi-span answer as a further span."""
    return bool(normalize_answer(text))
