"""The batcher's waiting items, kept so that choosing a batch costs about its own size, not the queue's.

The rule (:meth:`FairQueue.take`): a batch's first item is the oldest of the owner served least so far (its cost
run so far); each next one the same among the items that still fit (in size, cost and every chosen item's limit).
To find it without looking at every item, each owner's items wait in arrival order and grouped by shape (size,
cost, limit: the items of one shape fit or not together), the owners wait in a heap by their oldest item, and the
least cost waiting is kept for each size and limit, so a batch ends as soon as nothing left can fit. A batch looks
at the owners ahead of each item it takes that have nothing that fits: few, unless many owners' items are all too
costly for what a batch has left while a later owner's fit (then each such batch looks at all of those owners).
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import math
from dataclasses import dataclass, field
from heapq import heapify, heappop, heappush
from typing import Any, Callable


class Ticket(asyncio.Future):
    """A waiting item's future that tells its queue the moment it is cancelled (a done callback runs only later,
    after the queue may have chosen a batch)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop=loop)
        self.on_cancel: Callable[[], None] | None = None

    def cancel(self, msg: Any = None) -> bool:
        cancelled = super().cancel(msg=msg)
        if cancelled and self.on_cancel is not None:
            self.on_cancel()
        return cancelled


@dataclass(eq=False)  # compared and hashed by identity: an item alone is its own owner
class Waiting:
    item: Any
    size: int
    arrived: float
    future: asyncio.Future = field(repr=False)
    owner: Any = None
    cost: float = 0.0
    limit: float = math.inf  # the largest batch (in sizes) this item may be part of
    seq: int = 0  # arrival order, which breaks ties in ``arrived``
    gone: bool = False  # taken into a batch or cancelled


class _Owner:
    """One owner's waiting items, oldest first, and the same grouped by shape; gone ones are dropped at the front."""

    __slots__ = ("owner", "items", "shapes", "live", "key")

    def __init__(self, owner: Any) -> None:
        self.owner, self.live, self.key = owner, 0, None  # key: of its one current entry in the owners' heap
        self.items: collections.deque[Waiting] = collections.deque()
        self.shapes: dict[tuple, collections.deque[Waiting]] = {}

    def add(self, waiting: Waiting) -> None:
        self.items.append(waiting)
        self.shapes.setdefault((waiting.size, waiting.cost, waiting.limit), collections.deque()).append(waiting)
        self.live += 1

    def head(self) -> Waiting:
        while self.items[0].gone:
            self.items.popleft()
        return self.items[0]

    def first_fitting(self, fits: Callable[[Waiting], bool]) -> Waiting | None:
        """The oldest item that fits: the oldest among the shapes that fit."""
        best = None
        for shape, queue in list(self.shapes.items()):
            while queue and queue[0].gone:
                queue.popleft()
            if not queue:
                del self.shapes[shape]
            elif (best is None or queue[0].seq < best.seq) and fits(queue[0]):
                best = queue[0]
        return best


class _Batch:
    """A batch being filled: its items, size, cost and limit, and what still fits it."""

    def __init__(self, max_size: int, max_cost: float) -> None:
        self.items: list[Waiting] = []
        self.size, self.cost, self.limit, self.max_cost = 0, 0.0, max_size, max_cost

    def add(self, waiting: Waiting) -> None:
        self.items.append(waiting)
        self.size, self.cost = self.size + waiting.size, self.cost + waiting.cost
        self.limit = min(self.limit, waiting.limit)

    def fits(self, waiting: Waiting) -> bool:
        return self.size + waiting.size <= min(self.limit, waiting.limit) and self.cost + waiting.cost <= self.max_cost

    def fits_class(self, size: int, limit: float, least_cost: float) -> bool:
        return self.size + size <= min(self.limit, limit) and self.cost + least_cost <= self.max_cost


class FairQueue:
    """Waiting items, each batch taken by the rule above; ``served``: cost run so far, per owner still waiting."""

    def __init__(self, max_size: int, max_cost: float) -> None:
        self.max_size, self.max_cost = max_size, max_cost
        self.served: dict[Any, float] = {}
        self._order: collections.OrderedDict[Waiting, None] = collections.OrderedDict()  # waiting, oldest first
        self._owners: dict[Any, _Owner] = {}
        self._heap: list[tuple] = []  # (served, arrived, seq, tie, owner): each waiting owner's oldest item
        self._classes: dict[tuple, list[tuple]] = {}  # (size, limit) -> heap of (cost, seq, item)
        self._class_live: collections.Counter = collections.Counter()  # (size, limit) -> items waiting
        self._stale = 0  # entries in the owners' heap left by owners emptied by cancellation
        self._emptied: set = set()  # owners left with nothing waiting since the last batch
        self._ties = itertools.count()
        self._arrivals = itertools.count()

    def __len__(self) -> int:
        return len(self._order)

    def __iter__(self):
        return iter(self._order)

    def waits_for(self, owner: Any) -> bool:
        return owner in self._owners

    def add(self, waiting: Waiting) -> None:
        waiting.seq = next(self._arrivals)
        self._order[waiting] = None
        record = self._owners.get(waiting.owner)
        if record is None:
            record = self._owners[waiting.owner] = _Owner(waiting.owner)
            record.add(waiting)
            self._push(record)
        else:
            record.add(waiting)
        key = (waiting.size, waiting.limit)
        heappush(self._classes.setdefault(key, []), (waiting.cost, waiting.seq, waiting))
        self._class_live[key] += 1

    def leave(self, waiting: Waiting) -> None:
        """``waiting`` was cancelled: it is dropped unrun (unless its batch has it already)."""
        if not waiting.gone:
            self._forget(waiting)

    def drop(self) -> list[Waiting]:
        """Every waiting item, now out of the queue."""
        dropped = list(self._order)
        for waiting in dropped:
            self._forget(waiting)
        return dropped

    def take(self) -> list[Waiting]:
        """The next batch, by the rule above; ``served`` then keeps only the owners still waiting."""
        batch, popped, candidates = _Batch(self.max_size, self.max_cost), [], []
        first = self._pop_owner(popped)  # the first item need not fit: one alone may exceed any bound
        chosen = None if first is None else (first, first.head())
        while chosen is not None:
            record, waiting = chosen
            self._forget(waiting)
            batch.add(waiting)
            self.served[record.owner] = self.served.get(record.owner, 0.0) + waiting.cost
            self._seek(record, batch, candidates)
            chosen = self._next(batch, candidates, popped)
        for record in popped:
            if record.key is None and self._owners.get(record.owner) is record:
                self._push(record)
        for owner in self._emptied:
            if owner not in self._owners:
                self.served.pop(owner, None)
        self._emptied.clear()
        return batch.items

    def _next(self, batch: _Batch, candidates: list, popped: list) -> tuple[_Owner, Waiting] | None:
        """The least fitting item: an owner's fitting item found earlier (checked again: the batch has grown), or
        the next owner in the heap, whose oldest item bounds what it can give."""
        if not self._anything_fits(batch):
            return None
        while True:
            top = self._top()
            if candidates and (top is None or candidates[0][:3] <= top[:3]):
                *_, record, waiting = heappop(candidates)
                if batch.fits(waiting):
                    return record, waiting
                self._seek(record, batch, candidates)
            elif top is not None:
                self._seek(self._pop_owner(popped), batch, candidates)
            else:
                return None

    def _seek(self, record: _Owner, batch: _Batch, candidates: list) -> None:
        if self._owners.get(record.owner) is not record:
            return
        waiting = record.first_fitting(batch.fits)
        if waiting is not None:
            key = (self.served.get(record.owner, 0.0), waiting.arrived, waiting.seq)
            heappush(candidates, (*key, next(self._ties), record, waiting))

    def _anything_fits(self, batch: _Batch) -> bool:
        if batch.size >= batch.limit:  # every size is at least 1
            return False
        for key, heap in self._classes.items():
            while heap[0][2].gone:  # a class is dropped with its last waiting item: one is in its heap
                heappop(heap)
            if batch.fits_class(*key, heap[0][0]):
                return True
        return False

    def _key(self, record: _Owner) -> tuple:
        head = record.head()
        return self.served.get(record.owner, 0.0), head.arrived, head.seq

    def _push(self, record: _Owner) -> None:
        record.key = self._key(record)
        heappush(self._heap, (*record.key, next(self._ties), record))

    def _top(self) -> tuple | None:
        """The heap's first current entry (an owner's entry goes stale when it empties or its oldest item leaves)."""
        heap = self._heap
        while heap:
            entry = heap[0]
            record = entry[-1]
            if self._owners.get(record.owner) is not record or record.key != entry[:3]:
                heappop(heap)
            elif self._key(record) != record.key:
                heappop(heap)
                self._push(record)
            else:
                return entry
        return None

    def _pop_owner(self, popped: list) -> _Owner | None:
        if self._top() is None:
            return None
        record = heappop(self._heap)[-1]
        record.key = None
        popped.append(record)
        return record

    def _forget(self, waiting: Waiting) -> None:
        waiting.gone = True
        del self._order[waiting]
        self._forget_class(waiting)
        record = self._owners[waiting.owner]
        record.live -= 1
        if not record.live:
            del self._owners[waiting.owner]
            self._emptied.add(waiting.owner)
            record.items.clear()  # what it held is not kept alive by an entry left in the heap
            record.shapes.clear()
            if record.key is not None:
                self._stale += 1
                if self._stale > len(self._owners) + 64:
                    self._heap = [entry for entry in self._heap
                                  if self._owners.get(entry[-1].owner) is entry[-1] and entry[-1].key == entry[:3]]
                    heapify(self._heap)
                    self._stale = 0

    def _forget_class(self, waiting: Waiting) -> None:
        """One item fewer in its class; gone items leave its heap at the top, or all at once past half of it."""
        key = (waiting.size, waiting.limit)
        self._class_live[key] -= 1
        if not self._class_live[key]:
            del self._classes[key], self._class_live[key]
        elif len(self._classes[key]) > 2 * self._class_live[key] + 64:
            heap = self._classes[key] = [entry for entry in self._classes[key] if not entry[2].gone]
            heapify(heap)
