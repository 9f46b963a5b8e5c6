"""The server's work, scheduled in bounded steps and shared fairly between requests.

A question goes through two :class:`~.batching.DynamicBatcher` queues, each with its own worker thread:

1. its windows: questions tokenized together, at most ``--max-batch-chars`` characters a step (a longer question
   alone), the request served least first;
2. its forward passes: its windows split into chunks of at most ``--max-batch-size`` windows, each chunk its own
   item; a step takes at most ``--max-batch-size`` windows, the request served least (fewest windows) first, so a
   long question's chunks interleave with the chunks of every other request. The step that fills a question's last
   window decodes it.

So a short request waits at most about one step of each queue behind others' long questions, whatever they ask;
a request whose client left, or whose time ran out, has its questions and chunks not yet run dropped unrun.
"""

from __future__ import annotations

import asyncio
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
        self.chunk_windows = config.max_batch_size
        self.windows = DynamicBatcher(partial(featurize, extractor), config.max_batch_size, config.max_wait_ms / 1000,
                                      config.max_batch_chars)
        # No waiting: the chunks of a step of questions are queued together, in the same turn of the event loop.
        self.passes = DynamicBatcher(partial(forward, extractor, window_runner(extractor.trained)),
                                     config.max_batch_size, 0.0)

    async def start(self) -> None:
        await self.windows.start()
        await self.passes.start()

    async def stop(self) -> None:
        await self.windows.stop()
        await self.passes.stop()

    async def answer(self, question: Question, owner: Any) -> list:
        """``question``'s answers, its work counted to ``owner`` (one HTTP request) for fair shares."""
        cost = sum(len(example.question) + len(example.context) for example in question.examples)
        windows = await self.windows.submit(question, len(question.examples), owner, cost)
        chunks = [self.passes.enqueue(chunk, len(chunk), owner, len(chunk)) for chunk in windows.chunks(self.chunk_windows)]
        try:
            results = await asyncio.gather(*chunks)
        finally:
            for chunk in chunks:
                chunk.cancel()  # the client left or its time ran out: chunks not yet run are dropped
        return next(result for result in results if result is not None)

    @property
    def stats(self) -> BatchStats:
        """Forward passes (batches) and the windows they ran, requests and questions read, both workers' busy seconds."""
        read, ran = self.windows.stats, self.passes.stats
        return BatchStats(batches=ran.batches, requests=read.requests, questions=read.questions,
                          busy_seconds=read.busy_seconds + ran.busy_seconds, windows=ran.questions)
