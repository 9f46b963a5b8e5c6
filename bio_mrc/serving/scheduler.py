"""The server's work, scheduled in bounded steps and shared fairly between requests.

A question goes through :class:`~.batching.DynamicBatcher` queues, the request served least so far first in each:

1. its windows: questions tokenized together, at most ``--max-batch-chars`` characters a step; a question longer
   than that is tokenized in a queue of its own (its own thread and tokenizer), so that it never holds back a step;
2. its forward passes: its windows split into chunks of one forward pass each (the extractor's batch of windows,
   at most ``--max-batch-size``), each chunk its own item; a step runs at most one chunk's worth of windows, so a
   long question's chunks interleave with every other request's. The step that fills a question's last window
   decodes it.

Reading short questions and running forward passes take turns on one worker thread, each step chosen when the
thread is free. So a short request waits for about one forward pass behind others' long questions (the one running
when it comes; then it is read, then run), whatever they ask; a request whose client left, or whose time ran out,
has its questions and chunks not yet run dropped unrun.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from functools import partial
from typing import Any

from ..inference.extract import AnswerExtractor
from .answering import Question, featurize, forward
from .batching import BatchStats, DynamicBatcher, SharedWorker
from .config import ServeConfig
from .windows import window_runner


class AnswerScheduler:
    """Answers :class:`Question` s through the two queues above; ``await start()`` first, ``await stop()`` at the end."""

    def __init__(self, extractor: AnswerExtractor, config: ServeConfig) -> None:
        # A chunk is one forward pass of the model (the extractor's batch of windows): the longest a short question
        # waits behind another's windows.
        self.chunk_windows = min(config.max_batch_size, extractor.batch_size)
        self.step_chars = config.max_batch_chars
        wait, trained = config.max_wait_ms / 1000, extractor.trained
        # Reading short questions and running forward passes take turns on one thread: in parallel they would only
        # contend for the GIL; in turns, each step is chosen when the thread is free, from what waits then.
        self.worker = SharedWorker("bio-mrc-steps")
        self.windows = DynamicBatcher(partial(featurize, trained), config.max_batch_size, wait, config.max_batch_chars,
                                      worker=self.worker)
        # A tokenizer is not safe to share between threads (each call sets its truncation): the long queue has its own.
        apart = dataclasses.replace(trained, tokenizer=copy.deepcopy(trained.tokenizer))
        self.long_windows = DynamicBatcher(partial(featurize, apart), config.max_batch_size, wait, config.max_batch_chars)
        # A pass not full waits for the questions being read (at most --max-wait-ms), never for questions not yet asked.
        self.passes = DynamicBatcher(partial(forward, extractor, window_runner(trained)), self.chunk_windows, wait,
                                     worker=self.worker, fed_by=self.windows)
        self.queues = (self.windows, self.long_windows, self.passes)

    async def start(self) -> None:
        await self.worker.start()
        for queue in self.queues:
            await queue.start()

    async def stop(self) -> None:
        for queue in self.queues:
            await queue.stop()
        await self.worker.stop()

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
