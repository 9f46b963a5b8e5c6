"""Dynamic batching: concurrent requests wait a few milliseconds for each other, then run as one batch.

A request joins a queue; one background task takes the queue's oldest requests, waits until the
oldest has waited ``max_wait`` seconds or the batch holds ``max_batch_size`` questions, and runs
them with one call in one worker thread (so the event loop keeps accepting requests meanwhile);
each request's future then gets its own results. Requests that arrive during a run wait for the
next one, which starts at once if they have waited long enough already.

Fairness: an item may name its ``owner`` (one HTTP request split into one item per question) and its
``cost`` (its characters). A batch holds at most ``max_batch_cost`` (one item alone may exceed it),
and it is filled owner by owner, the owner served least so far first (then the oldest): a request
of one short question is answered in the next batch even behind many long questions of others. An
item whose future is cancelled (its client left, its time ran out) is dropped unrun.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Sequence, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass(eq=False)  # compared and hashed by identity: an item alone is its own owner
class _Waiting:
    item: Any
    size: int
    arrived: float
    future: asyncio.Future = field(repr=False)
    owner: Any = None
    cost: float = 0.0


class SharedWorker:
    """One worker thread that several batchers take turns on (in the order they asked); each chooses its batch when
    its turn comes, from the requests waiting then. Make it where the batchers are made; ``shutdown()`` at the end."""

    def __init__(self, name: str) -> None:
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self.turn = asyncio.Lock()

    def shutdown(self) -> None:
        self.executor.shutdown(wait=True)


@dataclass
class BatchStats:
    """What the worker has run: batches, requests and questions (questions / batches: the batch size
    reached), and the seconds it spent running them (against the wall clock: how busy it was); the server's
    also counts the ``windows`` of its forward passes."""

    batches: int = 0
    requests: int = 0
    questions: int = 0
    busy_seconds: float = 0.0
    windows: int = 0  # of the forward passes (the server's; a plain batcher leaves it 0)


class DynamicBatcher(Generic[Item, Result]):
    """Gathers concurrent :meth:`submit` calls into batches for ``run(items) -> results`` (one result
    per item, in order). ``size`` is what an item counts towards ``max_batch_size`` (its questions).

    A failing batch of several items is run again item by item, so that only the item at fault fails.
    Use it inside a running event loop: ``await start()`` before the first submit, ``await stop()`` at the end.
    """

    def __init__(self, run: Callable[[list[Item]], Sequence[Result]], max_batch_size: int, max_wait: float,
                 max_batch_cost: float = math.inf, worker: SharedWorker | None = None) -> None:
        if max_batch_size < 1 or max_wait < 0:
            raise ValueError(f"max_batch_size must be at least 1 and max_wait at least 0, got {max_batch_size}, {max_wait}")
        self.run, self.max_batch_size, self.max_wait = run, max_batch_size, max_wait
        self.max_batch_cost = max_batch_cost
        self._served: dict[Any, float] = {}  # cost run so far, per owner with items still waiting
        self.stats = BatchStats()
        self._waiting: collections.deque[_Waiting] = collections.deque()
        self._arrived: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self._worker = worker  # shared with other batchers: its owner shuts it down
        self._executor: ThreadPoolExecutor | None = worker.executor if worker else None

    async def start(self) -> None:
        self._arrived = asyncio.Event()
        if self._worker is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bio-mrc-batch")
        self._task = asyncio.create_task(self._serve(), name="bio-mrc-batcher")

    async def stop(self) -> None:
        """Stop taking batches; requests still waiting fail with :class:`asyncio.CancelledError`."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        while self._waiting:
            self._waiting.popleft().future.cancel()
        if self._executor is not None and self._worker is None:
            self._executor.shutdown(wait=True)

    async def submit(self, item: Item, size: int = 1, owner: Any = None, cost: float = 0.0) -> Result:
        """``item``'s result, once its batch has run (its exception, if it alone failed); cancelling
        the call drops the item if its batch has not started."""
        return await self.enqueue(item, size, owner, cost)

    def enqueue(self, item: Item, size: int = 1, owner: Any = None, cost: float = 0.0) -> asyncio.Future:
        """:meth:`submit` without waiting: the future of ``item``'s result, the item queued before this returns
        (so items queued together in one step of the event loop can share a batch even with no ``max_wait``);
        cancelling the future drops the item if its batch has not started."""
        if not 1 <= size <= self.max_batch_size:
            raise ValueError(f"an item of size {size} cannot join batches of at most {self.max_batch_size}")
        if self._task is None or self._task.done():
            raise RuntimeError("the batcher is not running: await start() first")
        loop = asyncio.get_running_loop()
        waiting = _Waiting(item, size, loop.time(), loop.create_future(), owner, cost)
        if owner is None:
            waiting.owner = waiting  # an item alone: owner of itself
        self._waiting.append(waiting)
        self._arrived.set()
        return waiting.future

    async def _serve(self) -> None:
        while True:
            await self._ready()
            async with self._worker.turn if self._worker else contextlib.nullcontext():
                batch = self._take_fairly()  # chosen when the worker is ours: from what waits now
                if batch:
                    await self._run(batch)

    async def _ready(self) -> None:
        """Until a batch can go: the oldest request has waited long enough, or the batch is full."""
        loop = asyncio.get_running_loop()
        while not self._waiting:
            self._arrived.clear()
            await self._arrived.wait()
        deadline = self._waiting[0].arrived + self.max_wait
        while sum(w.size for w in self._waiting) < self.max_batch_size and loop.time() < deadline:
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), deadline - loop.time())
            except asyncio.TimeoutError:
                break

    def _take_fairly(self) -> list[_Waiting]:
        """The batch: items that fit, each from the owner served least so far (then the oldest item)."""
        waiting = [w for w in self._waiting if not w.future.done()]  # a client that went away is not run
        batch, size, cost = [], 0, 0.0
        while True:
            fits = [w for w in waiting if size + w.size <= self.max_batch_size
                    and (not batch or cost + w.cost <= self.max_batch_cost)]
            if not fits:
                break
            chosen = min(fits, key=lambda w: (self._served.get(w.owner, 0.0), w.arrived))
            waiting.remove(chosen)
            batch.append(chosen)
            size, cost = size + chosen.size, cost + chosen.cost
            self._served[chosen.owner] = self._served.get(chosen.owner, 0.0) + chosen.cost
        self._waiting = collections.deque(waiting)
        still_waiting = {w.owner for w in waiting}
        self._served = {owner: served for owner, served in self._served.items() if owner in still_waiting}
        return batch

    async def _run(self, batch: list[_Waiting]) -> None:
        loop = asyncio.get_running_loop()
        started = time.perf_counter()
        try:
            results = await loop.run_in_executor(self._executor, self.run, [w.item for w in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"a batch of {len(batch)} items gave {len(results)} results")
        except Exception as error:  # noqa: BLE001  (handed to the request that caused it)
            if len(batch) > 1:
                for waiting in batch:
                    await self._run([waiting])
            elif not batch[0].future.done():
                batch[0].future.set_exception(error)
            return
        self.stats.busy_seconds += time.perf_counter() - started
        self.stats.batches += 1
        still_waiting = {w.owner for w in self._waiting if not w.future.done()}
        self.stats.requests += len({w.owner for w in batch} - still_waiting)  # requests whose last item ran
        self.stats.questions += sum(w.size for w in batch)
        for waiting, result in zip(batch, results):
            if not waiting.future.done():
                waiting.future.set_result(result)
