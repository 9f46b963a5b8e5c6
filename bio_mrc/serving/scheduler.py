"""The server's work, scheduled in bounded steps and shared fairly between requests.

A question goes through :class:`~.batching.DynamicBatcher` queues, the request served least so far first in each:

1. its windows: questions tokenized together, at most ``--max-batch-chars`` characters a step; a question longer
   than that is tokenized in a queue of its own, in the server's helper process (:mod:`.helper_process`), so that
   it never holds back a step, nor the interpreter lock the other steps need;
2. its forward passes: a question of at most one forward pass of windows (the extractor's batch, at most
   ``--max-batch-size``) is one item, and passes fill with as many such items as fit; a longer question's windows
   are split into chunks of about ``--long-pass-ms`` of forward pass each (measured on the passes run so far; at
   least one window), each chunk its own item, in a pass of its own, so a long question's chunks interleave with
   every other request's. The step that fills a question's last window decodes it where it fits one pass;
3. a longer question's decoding (seconds, for a context of millions of characters): on a thread of its own, one
   question at a time, so it holds back no other request's reading or passes.

A request of many questions is asked in consecutive slices of them (:meth:`AnswerScheduler.slices`), each under
``--max-request-windows`` windows estimated from the contexts' lengths, the next read once the one before is answered:
a question's windows and logits live from its reading to its answer, so a request of many long questions holds one
slice of them at a time; a request under the bound is one slice. One question over several documents is sliced by its
documents alike, each slice ranked into one ranking across them all.

Reading short questions and running forward passes take turns on one worker thread, each step chosen when the
thread is free. So a short request waits for about one long chunk's pass behind others' long questions (the one
running when it comes; then it is read, then run), whatever they ask; a request whose client left, or whose time
ran out, has its questions and chunks not yet run dropped unrun. Once the server begins to stop (:meth:`close`), what
waits fails at once, so a stop waits only for the steps running.
"""

from __future__ import annotations

import asyncio
import math
from functools import partial
from typing import Any, Iterator, Sequence

from ..inference.extract import AnswerExtractor, window_slices
from ..types import Example
from .answering import Question, decode, featurize, forward
from .batching import BatchStats, DynamicBatcher, SharedWorker
from .config import ServeConfig
from .helper_process import HelperProcess, read_apart, reading_state
from .windows import Chunk, QuestionWindows, window_runner


class AnswerScheduler:
    """Answers :class:`Question` s through the two queues above; ``await start()`` first, ``await stop()`` at the end."""

    def __init__(self, extractor: AnswerExtractor, config: ServeConfig) -> None:
        # A forward pass holds at most the extractor's batch of windows; a long question's chunk, about long_pass_s.
        self.chunk_windows = min(config.max_batch_size, extractor.batch_size)
        self.step_chars, self.long_pass_s = config.max_batch_chars, config.long_pass_ms / 1000
        self.features, self.request_windows = extractor.trained.features, config.max_request_windows
        wait, trained = config.max_wait_ms / 1000, extractor.trained
        # Reading short questions and running forward passes take turns on one thread: in parallel they would only
        # contend for the GIL; in turns, each step is chosen when the thread is free, from what waits then.
        self.worker = SharedWorker("bio-mrc-steps")
        self.windows = DynamicBatcher(partial(featurize, trained), config.max_batch_size, wait, config.max_batch_chars,
                                      worker=self.worker)
        # Long questions are read in the helper process (its own tokenizer), their thread here only waiting for it.
        self.helper = HelperProcess(reading_state(trained.tokenizer, trained.features))
        self.long_windows = DynamicBatcher(partial(featurize, trained, read=read_apart(self.helper)),
                                           config.max_batch_size, wait, config.max_batch_chars)
        # A pass not full waits for the questions being read (at most --max-wait-ms), never for questions not yet asked.
        # It decodes the questions it completes that fit one pass; a longer one is decoded on a thread of its own.
        self.passes = DynamicBatcher(partial(forward, extractor, window_runner(trained), longest=self.chunk_windows),
                                     self.chunk_windows, wait, worker=self.worker, fed_by=self.windows)
        # Decoding a context of millions of characters takes seconds: on the steps' thread, every other request's
        # reading and passes waited for it. One at a time, so its memory is that of one such question.
        self.long_decodes = DynamicBatcher(partial(decode, extractor), 1, 0)
        self.queues = (self.windows, self.long_windows, self.passes, self.long_decodes)

    def slices(self, examples: Sequence[Example]) -> Iterator[Sequence[Example]]:
        """A request's questions in consecutive slices, each the most whose windows, estimated from their contexts'
        lengths, number at most ``--max-request-windows`` (a question estimated past it is a slice alone)."""
        return window_slices(examples, self.features, self.request_windows)

    async def start(self) -> None:
        await self.worker.start()
        for queue in self.queues:
            await queue.start()

    def close(self) -> None:
        """The server begins to stop: questions not yet read or run, and any asked from now on, fail with
        :class:`~.batching.Stopping` at once; the steps running finish and their questions go on to the next."""
        for queue in self.queues:
            queue.close()

    async def stop(self) -> None:
        for queue in self.queues:
            await queue.stop()
        await self.worker.stop()
        await asyncio.to_thread(self.helper.stop)

    async def answer(self, question: Question, owner: Any) -> list:
        """``question``'s answers, its work counted to ``owner`` (one HTTP request) for fair shares."""
        cost = sum(len(example.question) + len(example.context) for example in question.examples)
        reader = self.windows if cost <= self.step_chars else self.long_windows
        windows = await reader.submit(question, len(question.examples), owner, cost)
        chunks = [self.passes.enqueue(chunk, len(chunk), owner, len(chunk), limit)
                  for chunk, limit in self.chunks_of(windows)]
        try:
            results = await asyncio.gather(*chunks)
        finally:
            for chunk in chunks:
                chunk.cancel()  # the client left or its time ran out: chunks not yet run are dropped
        if len(windows) > self.chunk_windows:
            return await self.long_decodes.submit(windows, 1, owner)
        return next(result for result in results if result is not None)

    def chunks_of(self, windows: QuestionWindows) -> list[tuple[Chunk, float]]:
        """A question's chunks, each with the largest pass it may join: one chunk, in any pass it fits, when its
        windows fit one pass; else chunks of about ``--long-pass-ms`` of forward pass (full passes until one has
        run), each in a pass of its own."""
        if len(windows) <= self.chunk_windows:
            return [(chunk, math.inf) for chunk in windows.chunks(self.chunk_windows)]
        ran, size = self.passes.stats, self.chunk_windows
        if ran.questions:  # the windows that run in long_pass_s at the seconds a window has taken so far
            size = max(1, min(size, int(self.long_pass_s * ran.questions / max(ran.busy_seconds, 1e-9))))
        return [(chunk, size) for chunk in windows.chunks(size)]

    @property
    def stats(self) -> BatchStats:
        """Forward passes (batches) and the windows they ran, requests and questions read, the workers' busy seconds."""
        read = [self.windows.stats, self.long_windows.stats]
        ran, decoded = self.passes.stats, self.long_decodes.stats
        return BatchStats(batches=ran.batches, requests=sum(r.requests for r in read), questions=sum(r.questions for r in read),
                          busy_seconds=sum(r.busy_seconds for r in read) + ran.busy_seconds + decoded.busy_seconds,
                          windows=ran.questions)
