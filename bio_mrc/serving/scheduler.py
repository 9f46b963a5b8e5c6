"""The server's work, scheduled in bounded steps and shared fairly between requests.

A question goes through two :class:`~.batching.DynamicBatcher` queues, each with its own worker thread:

1. its windows: questions tokenized together, at most ``--max-batch-chars`` characters a step, the request served
   least first; a question longer than that is tokenized in a queue of its own (its own thread and tokenizer), so
   that it never holds back a bounded step;
2. its forward passes: its windows split into chunks of at most ``--max-batch-size`` windows, each chunk its own
   item; a step takes at most ``--max-batch-size`` windows, the request served least (fewest windows) first, so a
   long question's chunks interleave with the chunks of every other request. The step that fills a question's last
   window decodes it.

So a short request waits at most about one forward pass behind others' long questions, whatever they ask;
a request whose client left, or whose time ran out, has its questions and chunks not yet run dropped unrun.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from functools import partial
from typing import Any

from ..inference.extract import AnswerExtractor
from .answering import Question, featurize, forward
from .batching import BatchStats, DynamicBatcher
from .config import ServeConfig
from .windows import window_runner


class AnswerScheduler:
    """Answers :class:`Question` s through the two queues above; ``await start()`` first, ``await stop()`` at the end."""

    def __init__(self, extractor: AnswerExtractor, config: ServeConfig) -> None:
        self.chunk_windows, self.step_chars = config.max_batch_size, config.max_batch_chars
        wait, trained = config.max_wait_ms / 1000, extractor.trained
        self.windows = DynamicBatcher(partial(featurize, trained), config.max_batch_size, wait, config.max_batch_chars)
        # A tokenizer is not safe to share between threads (each call sets its truncation): the long queue has its own.
        apart = dataclasses.replace(trained, tokenizer=copy.deepcopy(trained.tokenizer))
        self.long_windows = DynamicBatcher(partial(featurize, apart), config.max_batch_size, wait, config.max_batch_chars)
        # No waiting: the chunks of a step of questions are queued together, in the same turn of the event loop.
        self.passes = DynamicBatcher(partial(forward, extractor, window_runner(trained)), config.max_batch_size, 0.0)
        self.queues = (self.windows, self.long_windows, self.passes)

    async def start(self) -> None:
        for queue in self.queues:
            await queue.start()

    async def stop(self) -> None:
        for queue in self.queues:
            await queue.stop()

    async def answer(self, question: Question, owner: Any) -> list:
        """``question``'s answers, its work counted to ``owner`` (one HTTP request) for fair shares."""
        cost = sum(len(example.question) + len(example.context) for example in question.examples)
        reader = self.windows if cost <= self.step_chars else self.long_windows
        windows = await reader.submit(question, len(question.examples), owner, cost)
        chunks = [self.passes.enqueue(chunk, len(chunk), owner, len(chunk)) for chunk in windows.chunks(self.chunk_windows)]
        try:
            results = await asyncio.gather(*chunks)
        finally:
            for chunk in chunks:
                chunk.cancel()  # the client left or its time ran out: chunks not yet run are dropped
        return next(result for result in results if result is not None)

    @property
    def stats(self) -> BatchStats:
        """Forward passes (batches) and the windows they ran, requests and questions read, the workers' busy seconds."""
        read = [self.windows.stats, self.long_windows.stats]
        ran = self.passes.stats
        return BatchStats(batches=ran.batches, requests=sum(r.requests for r in read), questions=sum(r.questions for r in read),
                          busy_seconds=sum(r.busy_seconds for r in read) + ran.busy_seconds, windows=ran.questions)
