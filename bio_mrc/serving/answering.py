"""One batch of requests -> one forward pass -> each request's answers, exactly as
:class:`~bio_mrc.inference.AnswerExtractor` gives them one request at a time.

The questions of every request in the batch become one list of windows run together; the window
outputs are then split by request options and each group is decoded by :meth:`AnswerExtractor.predict`,
so a request's answers never depend on which other requests shared its batch (up to the last bits of
a float: a window padded beside a longer one sums its attention over more zeros).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..decoding.window_outputs import WindowOutputs
from ..inference.documents import rank_across_documents
from ..inference.extract import AnswerExtractor
from ..types import Example, Prediction, RankedAnswers


@dataclass(frozen=True)
class Question:
    """What one request asks: its examples and how to answer them (``decoding`` already resolved); with
    ``documents``, one question asked of each example's context, answered by spans ranked across them."""

    examples: list[Example]
    decoding: str
    multi_span: bool = False
    top_k: int = 1
    documents: bool = False


def answer_batch(extractor: AnswerExtractor, requests: Sequence[Question]) -> list[list[Prediction] | list[RankedAnswers]]:
    """Each request's predictions, in order: one forward pass for all, one decoding per kind of request; a
    request over several documents gets one :class:`RankedAnswers` (its ``top_k`` spans across the documents)."""
    examples = [example for request in requests for example in request.examples]
    outputs = extractor.trained.windows(examples, batch_size=extractor.batch_size, progress=False)
    bounds = np.cumsum([0] + [len(request.examples) for request in requests]).tolist()
    groups: dict[tuple[str, bool], list[int]] = defaultdict(list)
    for request, begin, end in zip(requests, bounds, bounds[1:]):
        groups[request.decoding, request.multi_span].extend(range(begin, end))
    predictions: list[Prediction] = [None] * len(examples)  # type: ignore[list-item]  (each filled by its group)
    for (decoding, multi_span), indices in groups.items():
        decoded = extractor.predict(select_examples(outputs, indices), [examples[i] for i in indices], multi_span, decoding)
        for index, prediction in zip(indices, decoded):
            predictions[index] = prediction
    answers: list = []
    for request, begin, end in zip(requests, bounds, bounds[1:]):
        if request.documents:
            answers.append([rank_across_documents(request.examples[0].question, predictions[begin:end], request.top_k)])
            continue
        if not request.multi_span:  # as AnswerExtractor: the best spans of the n-best they were scored among
            for prediction in predictions[begin:end]:
                prediction.spans = prediction.spans[: request.top_k]
        answers.append(predictions[begin:end])
    return answers


def select_examples(outputs: WindowOutputs, indices: Sequence[int]) -> WindowOutputs:
    """The windows of the examples at ``indices`` (ascending), renumbered 0, 1, … in that order."""
    wanted = np.asarray(indices, dtype=np.int64)
    rows = np.flatnonzero(np.isin(outputs.example_index, wanted))
    return outputs.take(rows, np.searchsorted(wanted, outputs.example_index[rows]))
