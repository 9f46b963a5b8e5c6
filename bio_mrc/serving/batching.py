"""Dynamic batching: concurrent requests wait a few milliseconds for each other, then run as one batch.

A request joins a queue; when the worker thread is free, the queue's batch goes once it is full (``max_batch_size``
questions), or its oldest request has waited ``max_wait`` seconds, or that request already waited through the
worker's last batch (more waiting only adds); the batch runs with one call in the worker thread (so the event loop
keeps accepting requests meanwhile) and each request's future then gets its own results. Several queues may take
turns on one worker (:class:`SharedWorker`): each batch is chosen when the worker is free, from what waits then.

Fairness: an item may name its ``owner`` (one HTTP request split into one item per question) and its
``cost`` (its characters). A batch holds at most ``max_batch_cost`` (one item alone may exceed it),
and it is filled owner by owner, the owner served least so far first (then the oldest): a request
of one short question is answered in the next batch even behind many long questions of others. An
item whose future is cancelled (its client left, its time ran out) is dropped unrun. A batcher closed (the server
stopping) takes no more items, and those waiting fail with :class:`Stopping`; the batch running finishes.
"""

from __future__ import annotations

import asyncio
import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Generic, Sequence, TypeVar

from .fair_queue import FairQueue, Ticket, Waiting

Item = TypeVar("Item")
Result = TypeVar("Result")


class Stopping(Exception):
    """The server is stopping: an item it had not begun to run when it began to stop is not run."""

    def __init__(self) -> None:
        super().__init__("the server is stopping")


class SharedWorker:
    """One worker thread that batchers take turns on. When it is free, it runs the batch of the next batcher in turn
    (after the one that ran last) whose batch is due, the batch chosen then, from what waits then; with nothing due
    it sleeps until something arrives or a batch falls due. A batch waiting for company (:meth:`DynamicBatcher.due`)
    is due as soon as another batcher's is (unless that one feeds it): it waits only while the worker would idle.
    A batcher made without one gets its own; a shared one is started and stopped by whoever made it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.batchers: list[DynamicBatcher] = []
        self.executor: ThreadPoolExecutor | None = None
        self.arrived = asyncio.Event()
        self._task: asyncio.Task | None = None

    @property
    def running(self) -> bool:
        """Whether the worker's loop is started and not yet stopped."""
        return self._task is not None and not self._task.done()

    async def start(self) -> None:
        """Start the worker thread and its loop on the running event loop."""
        # An event waited on is bound to its loop: each start (an app started again) has its own.
        self.arrived = asyncio.Event()
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self.name)
        self._task = asyncio.create_task(self._serve(), name=self.name)

    async def stop(self) -> None:
        """Stop taking batches; requests still waiting fail with :class:`Stopping`."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for batcher in self.batchers:
            batcher.drop_waiting()
        if self.executor is not None:
            self.executor.shutdown(wait=True)

    async def _serve(self) -> None:
        last = -1
        while True:
            turn = await self._next_turn(last)
            await self._run_turn(self.batchers[turn])
            await asyncio.sleep(0)  # the requests whose items just ran queue their next ones before the next turn
            last = turn

    @staticmethod
    async def _run_turn(batcher: DynamicBatcher) -> None:
        """``batcher``'s batch, run: held here alone, so the worker waiting for its next turn holds none of it."""
        batch = batcher.take_fairly()
        if batch:
            await batcher.run_batch(batch)

    async def _next_turn(self, last: int) -> int:
        """The batcher whose batch goes next: the first due, in turn after ``last``."""
        loop, count = asyncio.get_running_loop(), len(self.batchers)
        while True:
            self.arrived.clear()
            order = [(last + 1 + offset) % count for offset in range(count)]
            due = [self.batchers[index].due() for index in order]
            now = loop.time()
            ready = [self.batchers[index] for index, when in zip(order, due) if when <= now]
            for index, when in zip(order, due):
                batcher = self.batchers[index]
                if when <= now or (when < math.inf and any(other is not batcher.fed_by for other in ready)):
                    return index
            soonest = min(due)
            try:
                await asyncio.wait_for(self.arrived.wait(), None if soonest == math.inf else soonest - now)
            except asyncio.TimeoutError:
                pass


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

    A batch waits for company while it is not full, at most until its oldest item has waited ``max_wait``; with
    ``fed_by`` (the batcher whose batches make this one's items), only while ``fed_by`` has items waiting.
    A failing batch of several items is run again item by item, so that only the item at fault fails.
    Use it inside a running event loop: ``await start()`` before the first submit, ``await stop()`` at the end.
    """

    def __init__(self, run: Callable[[list[Item]], Sequence[Result]], max_batch_size: int, max_wait: float,
                 max_batch_cost: float = math.inf, worker: SharedWorker | None = None,
                 fed_by: DynamicBatcher | None = None) -> None:
        if max_batch_size < 1 or max_wait < 0:
            raise ValueError(f"max_batch_size must be at least 1 and max_wait at least 0, got {max_batch_size}, {max_wait}")
        self.run, self.max_batch_size, self.max_wait = run, max_batch_size, max_wait
        self.max_batch_cost, self.fed_by = max_batch_cost, fed_by
        self.stats = BatchStats()
        self._waiting = FairQueue(max_batch_size, max_batch_cost)
        self._own_worker = worker is None  # a shared worker is started and stopped by its maker
        self._worker = worker or SharedWorker("bio-mrc-batch")
        self._worker.batchers.append(self)
        self.closed = False

    async def start(self) -> None:
        self.closed = False
        if self._own_worker:
            await self._worker.start()

    async def stop(self) -> None:
        """Stop taking batches; requests still waiting fail with :class:`Stopping`."""
        self.close()
        if self._own_worker:
            await self._worker.stop()

    def close(self) -> None:
        """Take no more items, and fail those waiting with :class:`Stopping` (a stop need not wait for them); the
        batch running finishes and its items get their results."""
        self.closed = True
        self.drop_waiting()

    def drop_waiting(self) -> None:
        for waiting in self._waiting.drop():
            if not waiting.future.done():
                waiting.future.set_exception(Stopping())
                waiting.future.exception()  # an item nobody awaits any more is no error to log

    async def submit(self, item: Item, size: int = 1, owner: Any = None, cost: float = 0.0) -> Result:
        """``item``'s result, once its batch has run (its exception, if it alone failed); cancelling
        the call drops the item if its batch has not started."""
        return await self.enqueue(item, size, owner, cost)

    def enqueue(self, item: Item, size: int = 1, owner: Any = None, cost: float = 0.0,
                limit: float = math.inf) -> asyncio.Future:
        """:meth:`submit` without waiting: the future of ``item``'s result, the item queued before this returns
        (so items queued together in one step of the event loop can share a batch even with no ``max_wait``);
        cancelling the future drops the item if its batch has not started. ``limit``: the largest batch (in
        sizes) the item may be part of (a batch holding it takes no more than that; one item alone may exceed it)."""
        if not 1 <= size <= self.max_batch_size:
            raise ValueError(f"an item of size {size} cannot join batches of at most {self.max_batch_size}")
        if self.closed:
            raise Stopping()
        if not self._worker.running:
            raise RuntimeError("the batcher is not running: await start() first")
        loop = asyncio.get_running_loop()
        waiting = Waiting(item, size, loop.time(), Ticket(loop), owner, cost, limit)
        if owner is None:
            waiting.owner = waiting  # an item alone: owner of itself
        waiting.future.on_cancel = lambda: self._waiting.leave(waiting)
        self._waiting.add(waiting)
        self._worker.arrived.set()
        return waiting.future

    @property
    def has_waiting(self) -> bool:
        return bool(self._waiting)

    def due(self) -> float:
        """When the next batch may go, in the event loop's time (inf: nothing waits): at once when it is full or
        when nothing that would fill it is coming; else once its oldest item has waited ``max_wait``."""
        if not self._waiting:
            return math.inf
        oldest = next(iter(self._waiting)).arrived
        if self._full() or (self.fed_by is not None and not self.fed_by.has_waiting):
            return oldest
        return oldest + self.max_wait

    def _full(self) -> bool:
        """Whether what waits fills a batch, in size or in cost: it looks at fewer than ``max_batch_size`` items
        (each is at least 1 in size), and at all of them only when their sizes do not fill one."""
        size, cost = 0, 0
        for waiting in self._waiting:
            size += waiting.size
            if size >= self.max_batch_size:
                return True
            cost += waiting.cost
        return cost >= self.max_batch_cost

    def take_fairly(self) -> list[Waiting]:
        """The batch: items that fit (in size, cost and every chosen item's limit), each from the owner served least
        so far (then the oldest item); see :mod:`.fair_queue`."""
        return self._waiting.take()

    def _run_handed(self, handed: list[list]) -> Sequence:
        """``run`` of the items ``handed`` holds, taken out of it: the executor lets go of its arguments a moment after
        the result, when the next batch may be running already, and a question's windows are to go with its answer."""
        return self.run(handed.pop())

    async def run_batch(self, batch: list[Waiting]) -> None:
        loop = asyncio.get_running_loop()
        started = time.perf_counter()
        try:
            results = await loop.run_in_executor(self._worker.executor, self._run_handed, [[w.item for w in batch]])
            if len(results) != len(batch):
                raise RuntimeError(f"a batch of {len(batch)} items gave {len(results)} results")
        except Exception as error:  # noqa: BLE001  (handed to the request that caused it)
            if len(batch) > 1:
                for waiting in batch:
                    await self.run_batch([waiting])
            elif not batch[0].future.done():
                batch[0].future.set_exception(error)
            return
        self.stats.busy_seconds += time.perf_counter() - started
        self.stats.batches += 1
        owners = {w.owner for w in batch}
        self.stats.requests += sum(not self._waiting.waits_for(owner) for owner in owners)  # requests whose last item ran
        self.stats.questions += sum(w.size for w in batch)
        for waiting, result in zip(batch, results):
            if not waiting.future.done():
                waiting.future.set_result(result)
