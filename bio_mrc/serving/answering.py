"""The server's three steps of a question -> its answers, exactly as :class:`~bio_mrc.inference.AnswerExtractor` gives
them one request at a time: its windows (:func:`featurize`, several questions tokenized together), forward passes
over chunks of windows (:func:`forward`, chunks of several questions together), and the decoding of each question
whose windows are all filled (by :meth:`AnswerExtractor.predict`, one call per kind of request).

A question's answers never depend on which other questions shared its steps, nor on how its windows were split
into chunks (up to the last bits of a float: a window padded beside a longer one sums its attention over more zeros).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..decoding.window_outputs import WindowOutputs
from ..inference.documents import DocumentRanking, rank_chunk
from ..inference.extract import AnswerExtractor
from ..inference.forward import WindowRunner
from ..inference.loading import TrainedModel
from ..types import Example, Prediction, RankedAnswers
from .windows import Chunk, ColumnReader, QuestionWindows, question_windows, run_chunks, window_runner


@dataclass(frozen=True)
class Question:
    """What one request asks: its examples and how to answer them (``decoding`` already resolved); with
    ``documents``, one question asked of each example's context, answered by spans ranked across them: in
    ``ranking``, where given, after the documents its earlier slices added (None: a ranking of these alone)."""

    examples: list[Example]
    decoding: str
    multi_span: bool = False
    top_k: int | None = 1  # None: every span (multi_span over documents)
    documents: bool = False
    ranking: DocumentRanking | None = None


def featurize(trained: TrainedModel, questions: Sequence[Question], read: ColumnReader | None = None) -> list[QuestionWindows]:
    """Each question's windows (its logits still empty), all tokenized in one call (by ``read``; default: here)."""
    return question_windows(trained, [question.examples for question in questions], questions, read)


def forward(extractor: AnswerExtractor, runner: WindowRunner, chunks: Sequence[Chunk], longest: float = math.inf) -> list[list | None]:
    """Run the chunks' windows; each chunk's result is its question's answers once all its windows are filled
    (decoded here, once per question, where it has at most ``longest`` windows), else None."""
    run_chunks(runner, chunks, extractor.trained.tokenizer.pad_token_id or 0, extractor.batch_size)
    complete = list({id(chunk.windows): chunk.windows for chunk in chunks
                     if chunk.windows.complete and len(chunk.windows) <= longest}.values())
    answers = dict(zip(map(id, complete), decode(extractor, complete)))
    return [answers.get(id(chunk.windows)) for chunk in chunks]


def decode(extractor: AnswerExtractor, questions: Sequence[QuestionWindows]) -> list[list[Prediction] | list[RankedAnswers]]:
    """Each question's answers from its filled windows: one :meth:`AnswerExtractor.predict` call per kind of request;
    a request over several documents gets one :class:`RankedAnswers` (its ``top_k`` spans across the documents)."""
    if not questions:
        return []
    outputs = joined_outputs(questions)
    examples = [example for question in questions for example in question.examples]
    bounds = np.cumsum([0] + [len(question.examples) for question in questions]).tolist()
    groups: dict[tuple[str, bool, int], list[int]] = defaultdict(list)
    for question, begin, end in zip(questions, bounds, bounds[1:]):
        request = question.request
        if not request.documents:  # those are decoded a document at a time, below
            groups[request.decoding, request.multi_span, n_best(extractor, request)].extend(range(begin, end))
    predictions: list[Prediction] = [None] * len(examples)  # type: ignore[list-item]  (each filled by its group)
    for (decoding, multi_span, kept), indices in groups.items():
        decoded = extractor.predict(select_examples(outputs, indices), [examples[i] for i in indices], multi_span, decoding,
                                    n_best=kept)
        for index, prediction in zip(indices, decoded):
            predictions[index] = prediction
    answers: list = []
    for question, begin, end in zip(questions, bounds, bounds[1:]):
        request = question.request
        if request.documents:
            answers.append([ranked_documents(extractor, outputs, examples, begin, end, request)])
            continue
        if not request.multi_span:  # as AnswerExtractor: the best spans of the n-best they were scored among
            for prediction in predictions[begin:end]:
                prediction.spans = prediction.spans[: request.top_k]
        answers.append(predictions[begin:end])
    return answers


def n_best(extractor: AnswerExtractor, request: Question) -> int:
    """The spans a question's answers are decoded among, as :class:`AnswerExtractor` decodes them: its ``top_k``,
    or more where the extractor's decoding keeps more (every confidence is a share of the best 20 of them, however many);
    with ``multi_span``, the extractor's alone (``top_k`` cuts the spans ranked across documents, not a document's n-best)."""
    return max(1 if request.multi_span else request.top_k or 1, extractor.decode_config.n_best)


def ranked_documents(extractor: AnswerExtractor, outputs: WindowOutputs, examples: Sequence[Example], begin: int, end: int,
                     request: Question) -> RankedAnswers:
    """One question's answers over its documents (``examples[begin:end]``), ranked across them as
    :meth:`AnswerExtractor.answer_documents` ranks them: window by window where the decoding's null is a window's;
    with ``multi_span``, the documents' multi-span answers, scored by their single n-best. Decoded a document at a
    time, as the extractor decodes a slice at a time: all at once, a few documents of millions of characters took
    gigabytes. Added to ``request.ranking`` where given (a request's slices share one): the answers over every
    document it holds so far."""
    def decoded(multi_span: bool) -> Callable[[WindowOutputs, list[Example]], list[Prediction]]:
        return lambda windows, asked: extractor.predict(windows, asked, multi_span, request.decoding,
                                                        n_best=n_best(extractor, request))

    ranking = DocumentRanking(request.top_k, request.multi_span) if request.ranking is None else request.ranking
    for index in range(begin, end):
        rank_chunk(ranking, select_examples(outputs, [index]), [examples[index]], request.decoding, decoded(False),
                   decoded(True))
    return ranking.ranked(request.examples[0].question)


def answer_batch(extractor: AnswerExtractor, requests: Sequence[Question], runner: WindowRunner | None = None,
                 chunk_windows: int | None = None) -> list[list[Prediction] | list[RankedAnswers]]:
    """Each request's predictions, in order, through the server's three steps: one featurisation, forward passes
    of one chunk of ``chunk_windows`` windows each (default: one pass over every window), one decoding."""
    runner = runner or window_runner(extractor.trained)
    questions = featurize(extractor.trained, requests)
    chunks = [chunk for question in questions for chunk in question.chunks(chunk_windows or len(question))]
    for step in ([chunk] for chunk in chunks) if chunk_windows else [chunks]:
        run_chunks(runner, step, extractor.trained.tokenizer.pad_token_id or 0, extractor.batch_size)
    return decode(extractor, questions)


def joined_outputs(questions: Sequence[QuestionWindows]) -> WindowOutputs:
    """The windows of several questions as one :class:`WindowOutputs`, their examples numbered one after another."""
    width = max(question.width for question in questions)
    parts = [question.outputs(width) for question in questions]
    offsets = np.cumsum([0] + [len(question.examples) for question in questions])
    example_index = np.concatenate([part.example_index + offset for part, offset in zip(parts, offsets)])
    return WindowOutputs.concatenate(parts, example_index)


def select_examples(outputs: WindowOutputs, indices: Sequence[int]) -> WindowOutputs:
    """The windows of the examples at ``indices`` (ascending), renumbered 0, 1, … in that order."""
    wanted = np.asarray(indices, dtype=np.int64)
    rows = np.flatnonzero(np.isin(outputs.example_index, wanted))
    return outputs.take(rows, np.searchsorted(wanted, outputs.example_index[rows]))
