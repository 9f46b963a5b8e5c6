"""The batcher's waiting items, kept so that choosing a batch costs about its own size, not the queue's.

The rule (:meth:`FairQueue.take`): a batch's first item is the oldest of the owner served least so far (its cost
run so far); each next one the same among the items that still fit (in size, cost and every chosen item's limit).
To find it without looking at every item, each owner's items wait in arrival order and grouped by shape (size,
cost, limit: the items of one shape fit or not together), the owners wait in order of their oldest item
(:class:`_OwnerIndex`), and the least cost waiting is kept for each size and limit, so a batch ends as soon as nothing
left can fit. The owners' order is kept in blocks, each with bounds on what its owners' items need (least cost, least
size, largest limit): a batch steps over a block none of whose owners can fit what it has left, so many owners whose
items are all too costly for it, waiting ahead of owners whose items fit, cost a look at each block, not each owner.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import math
from dataclasses import dataclass, field
from bisect import bisect_left, insort
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
    """One owner's waiting items, oldest first, and the same grouped by shape; gone ones are dropped at the front.
    ``need``: bounds on what its items need (least cost, least size, largest limit), exact when it was last sought,
    lower since (an item gone leaves them as they were: still bounds)."""

    __slots__ = ("owner", "items", "shapes", "live", "key", "need")

    def __init__(self, owner: Any) -> None:
        self.owner, self.live, self.key = owner, 0, None  # key: of its entry in the owners' index
        self.items: collections.deque[Waiting] = collections.deque()
        self.shapes: dict[tuple, collections.deque[Waiting]] = {}
        self.need = (math.inf, math.inf, -math.inf)

    def add(self, waiting: Waiting) -> None:
        self.items.append(waiting)
        self.shapes.setdefault((waiting.size, waiting.cost, waiting.limit), collections.deque()).append(waiting)
        self.live += 1
        self.need = _widened(self.need, (waiting.cost, waiting.size, waiting.limit))

    def head(self) -> Waiting:
        while self.items[0].gone:
            self.items.popleft()
        return self.items[0]

    def first_fitting(self, fits: Callable[[Waiting], bool]) -> Waiting | None:
        """The oldest item that fits: the oldest among the shapes that fit (``need`` made exact on the way)."""
        best, need = None, (math.inf, math.inf, -math.inf)
        for shape, queue in list(self.shapes.items()):
            while queue and queue[0].gone:
                queue.popleft()
            if not queue:
                del self.shapes[shape]
                continue
            need = _widened(need, (shape[1], shape[0], shape[2]))
            if (best is None or queue[0].seq < best.seq) and fits(queue[0]):
                best = queue[0]
        self.need = need
        return best


def _widened(need: tuple, other: tuple) -> tuple:
    """Bounds holding for both: the least cost, the least size, the largest limit."""
    return min(need[0], other[0]), min(need[1], other[1]), max(need[2], other[2])


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

    def may_fit(self, need: tuple) -> bool:
        """Whether items within ``need`` (least cost, least size, largest limit) may fit: False only when none can
        (each side is :meth:`fits`' with a bound in place of an item's value)."""
        least_cost, least_size, most_limit = need
        return self.size + least_size <= min(self.limit, most_limit) and self.cost + least_cost <= self.max_cost


class _OwnerIndex:
    """The waiting owners in key order, in blocks of about :data:`BLOCK` entries ``(*key, owner)``, each block with
    bounds on what its owners' items need (lowered as items come, made exact as a batch enters the block)."""

    def __init__(self) -> None:
        self.blocks: list[list[tuple]] = []
        self.lasts: list[tuple] = []  # each block's last key
        self.needs: list[tuple] = []

    def insert(self, key: tuple, record: _Owner) -> None:
        if not self.blocks:
            self.blocks, self.lasts, self.needs = [[]], [key], [record.need]
        at = min(bisect_left(self.lasts, key), len(self.blocks) - 1)
        block = self.blocks[at]
        insort(block, (*key, record))
        self.lasts[at], self.needs[at] = block[-1][:3], _widened(self.needs[at], record.need)
        if len(block) > 2 * BLOCK:  # split in two, each half's bounds exact
            halves = block[:BLOCK], block[BLOCK:]
            self.blocks[at:at + 1] = halves
            self.lasts[at:at + 1] = [half[-1][:3] for half in halves]
            self.needs[at:at + 1] = [_need_of(half) for half in halves]

    def remove(self, key: tuple) -> None:
        at = bisect_left(self.lasts, key)
        block = self.blocks[at]
        del block[bisect_left(block, key)]
        if not block:
            del self.blocks[at], self.lasts[at], self.needs[at]
        else:
            self.lasts[at] = block[-1][:3]

    def widen(self, key: tuple, need: tuple) -> None:
        """The owner whose entry is ``key`` may now need as little as ``need``."""
        at = bisect_left(self.lasts, key)
        self.needs[at] = _widened(self.needs[at], need)


def _need_of(block: list[tuple]) -> tuple:
    need = (math.inf, math.inf, -math.inf)
    for entry in block:
        need = _widened(need, entry[-1].need)
    return need


BLOCK = 64  # owners a block of the index holds (up to twice as many before it is split)


class _Cursor:
    """A walk through the index in key order during one batch, stepping over the blocks and owners that cannot fit
    it. The batch only grows, so what cannot fit it now never will; the index does not change meanwhile."""

    def __init__(self, index: _OwnerIndex) -> None:
        self.index, self.block, self.at, self.entered = index, 0, 0, -1

    def pop_first(self) -> _Owner | None:
        """The owner first in order, whatever it needs (a batch's first item need not fit)."""
        if not self.index.blocks:
            return None
        self.at, self.entered = 1, 0
        return self.index.blocks[0][0][-1]

    def peek(self, batch: _Batch) -> tuple | None:
        """The next entry whose owner may fit ``batch``, without passing it; None: no owner left may."""
        index = self.index
        while self.block < len(index.blocks):
            entries = index.blocks[self.block]
            if self.entered < self.block:  # entering it: its bounds, made exact where they let the batch in
                self.entered = self.block
                if batch.may_fit(index.needs[self.block]):
                    index.needs[self.block] = _need_of(entries)
                if not batch.may_fit(index.needs[self.block]):
                    self.block += 1
                    continue
            while self.at < len(entries):
                if batch.may_fit(entries[self.at][-1].need):
                    return entries[self.at]
                self.at += 1
            self.block, self.at = self.block + 1, 0
        return None

    def advance(self) -> None:
        self.at += 1


class FairQueue:
    """Waiting items, each batch taken by the rule above; ``served``: cost run so far, per owner still waiting."""

    def __init__(self, max_size: int, max_cost: float) -> None:
        self.max_size, self.max_cost = max_size, max_cost
        self.served: dict[Any, float] = {}
        self._order: collections.OrderedDict[Waiting, None] = collections.OrderedDict()  # waiting, oldest first
        self._owners: dict[Any, _Owner] = {}
        self._index = _OwnerIndex()  # each waiting owner by (served, arrived, seq) of its oldest item
        self._classes: dict[tuple, list[tuple]] = {}  # (size, limit) -> heap of (cost, seq, item)
        self._class_live: collections.Counter = collections.Counter()  # (size, limit) -> items waiting
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
            self._rekey(record)
        else:
            record.add(waiting)  # not its oldest: its key stays
            self._index.widen(record.key, record.need)
        key = (waiting.size, waiting.limit)
        heappush(self._classes.setdefault(key, []), (waiting.cost, waiting.seq, waiting))
        self._class_live[key] += 1

    def leave(self, waiting: Waiting) -> None:
        """``waiting`` was cancelled: it is dropped unrun (unless its batch has it already)."""
        if not waiting.gone:
            record = self._owners[waiting.owner]
            self._forget(waiting)
            self._rekey(record)

    def drop(self) -> list[Waiting]:
        """Every waiting item, now out of the queue."""
        dropped = list(self._order)
        for waiting in dropped:
            self._forget(waiting)
        self._index = _OwnerIndex()
        return dropped

    def take(self) -> list[Waiting]:
        """The next batch, by the rule above; ``served`` then keeps only the owners still waiting."""
        batch, candidates, cursor, served = _Batch(self.max_size, self.max_cost), [], _Cursor(self._index), {}
        first = cursor.pop_first()  # the first item need not fit: one alone may exceed any bound
        chosen = None if first is None else (first, first.head())
        while chosen is not None:
            record, waiting = chosen
            self._forget(waiting)
            batch.add(waiting)
            served[id(record)] = record
            self.served[record.owner] = self.served.get(record.owner, 0.0) + waiting.cost
            self._seek(record, batch, candidates)
            chosen = self._next(batch, candidates, cursor)
        for record in served.values():  # only now: the cursor walked the index as it was
            self._rekey(record)
        for owner in self._emptied:
            if owner not in self._owners:
                self.served.pop(owner, None)
        self._emptied.clear()
        return batch.items

    def _next(self, batch: _Batch, candidates: list, cursor: _Cursor) -> tuple[_Owner, Waiting] | None:
        """The least fitting item: an owner's fitting item found earlier (checked again: the batch has grown), or
        the next owner in order that may fit, whose oldest item bounds what it can give."""
        if not self._anything_fits(batch):
            return None
        while True:
            top = cursor.peek(batch)
            if candidates and (top is None or candidates[0][:3] <= top[:3]):
                *_, record, waiting = heappop(candidates)
                if batch.fits(waiting):
                    return record, waiting
                self._seek(record, batch, candidates)
            elif top is not None:
                cursor.advance()
                self._seek(top[-1], batch, candidates)
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

    def _rekey(self, record: _Owner) -> None:
        """``record``'s entry in the index under its key now, or none once it has nothing waiting."""
        live = self._owners.get(record.owner) is record
        key = self._key(record) if live else None
        if key != record.key:
            if record.key is not None:
                self._index.remove(record.key)
            if key is not None:
                self._index.insert(key, record)
            record.key = key

    def _forget(self, waiting: Waiting) -> None:
        waiting.gone = True
        # Its future's call back to the queue refers to it: a cycle that kept its item (a question's windows and
        # logits) and result alive until the garbage collector's next full pass, not until its request let go.
        waiting.future.on_cancel = None
        del self._order[waiting]
        self._forget_class(waiting)
        record = self._owners[waiting.owner]
        record.live -= 1
        if not record.live:
            del self._owners[waiting.owner]
            self._emptied.add(waiting.owner)
            record.items.clear()  # what it held is not kept alive by its entry until the entry goes
            record.shapes.clear()

    def _forget_class(self, waiting: Waiting) -> None:
        """One item fewer in its class; gone items leave its heap at the top, or all at once past half of it."""
        key = (waiting.size, waiting.limit)
        self._class_live[key] -= 1
        if not self._class_live[key]:
            del self._classes[key], self._class_live[key]
        elif len(self._classes[key]) > 2 * self._class_live[key] + 64:
            heap = self._classes[key] = [entry for entry in self._classes[key] if not entry[2].gone]
            heapify(heap)
