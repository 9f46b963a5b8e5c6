"""bio-mrc serve's batch choice: draining W waiting items, the batcher's fair queue against the plain rule it replaced.

The server chooses each batch from what waits (:mod:`bio_mrc.serving.fair_queue`): each next member is the oldest
item of the owner served least so far, among the items that still fit. The plain rule (a copy below) looked at every
waiting item for each member, and again for each batch's due time, so draining W items cost about W² / batch size;
a client that queues many items made every batch slower. This script queues W items (one question each, its own
request, as from W clients), drains them the way the worker does (due time, batch, requests finished) with both,
checks that both chose the same batches, and prints the CPU seconds of each and their ratio, with the machine.

    python benchmarks/bench_batching.py                      # W = 2,000, 4,000, 8,000, 16,000
    python benchmarks/bench_batching.py --sizes 1000 2000    # quicker
    python benchmarks/bench_batching.py --workload mixed     # requests of several questions, long ones' chunks
    python benchmarks/bench_batching.py --workload long-first --sizes 1000 2000 4000   # long ones waiting ahead of short ones
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import math
import time

from _common import command_load_and_date, machine_description

from bio_mrc.serving.batching import DynamicBatcher
from bio_mrc.serving.fair_queue import Waiting


class PlainRule:
    """The rule as the batcher kept it before its fair queue (a copy, for comparison): every waiting item looked at
    for each batch member, for each due time and for the requests a batch finished."""

    def __init__(self, max_batch_size: int, max_batch_cost: float) -> None:
        self.max_batch_size, self.max_batch_cost = max_batch_size, max_batch_cost
        self._waiting: collections.deque[Waiting] = collections.deque()
        self._served: dict = {}

    def enqueue(self, item, size: int, owner, cost: float, limit: float, loop: asyncio.AbstractEventLoop) -> None:
        self._waiting.append(Waiting(item, size, loop.time(), loop.create_future(), owner, cost, limit))

    @property
    def has_waiting(self) -> bool:
        return any(not waiting.future.done() for waiting in self._waiting)

    def due_full(self) -> bool:
        self._waiting = collections.deque(w for w in self._waiting if not w.future.done())
        return sum(w.size for w in self._waiting) >= self.max_batch_size \
            or sum(w.cost for w in self._waiting) >= self.max_batch_cost

    def take_fairly(self) -> list[Waiting]:
        waiting = [w for w in self._waiting if not w.future.done()]
        batch, size, cost, limit = [], 0, 0.0, self.max_batch_size
        while True:
            fits = [w for w in waiting if size + w.size <= min(limit, w.limit) and cost + w.cost <= self.max_batch_cost] \
                if batch else waiting
            if not fits:
                break
            chosen = min(fits, key=lambda w: (self._served.get(w.owner, 0.0), w.arrived))
            waiting.remove(chosen)
            batch.append(chosen)
            size, cost, limit = size + chosen.size, cost + chosen.cost, min(limit, chosen.limit)
            self._served[chosen.owner] = self._served.get(chosen.owner, 0.0) + chosen.cost
        self._waiting = collections.deque(waiting)
        still_waiting = {w.owner for w in waiting}
        self._served = {owner: served for owner, served in self._served.items() if owner in still_waiting}
        return batch

    def finished(self, batch: list[Waiting]) -> int:
        still_waiting = {w.owner for w in self._waiting if not w.future.done()}
        return len({w.owner for w in batch} - still_waiting)


def workload(count: int, chars: int, kind: str) -> list[tuple]:
    """(item, size, owner, cost, limit) of ``count`` items. ``single``: one question a request. ``mixed``: requests
    of one to three questions of 1 to 7 times ``chars``, and every tenth a long question's three chunks of 2 windows,
    each in a pass of its own (an oldest item that fits no batch it does not start). ``long-first``: half the
    requests one question of 30,000 characters, then the other half one of ``chars`` (each batch of a long one and
    short ones has every other long one waiting too costly for what it has left: the queue steps over them by blocks)."""
    if kind == "long-first":
        return [(index, 1, f"request {index}", 30_000 if index < count // 2 else chars, math.inf) for index in range(count)]
    if kind == "single":
        return [(index, 1, f"request {index}", chars, math.inf) for index in range(count)]
    items: list[tuple] = []
    while len(items) < count:
        owner = f"request {len(items)}"
        if len(items) % 10 == 0:
            items += [(len(items) + k, 2, owner, 2, 2) for k in range(3)]
        else:
            items += [(len(items) + k, 1, owner, chars * (1 + len(items) % 7), math.inf) for k in range(1 + len(items) % 3)]
    return items[:count]


def drain_plain(items: list[tuple], max_batch_size: int, max_batch_cost: float) -> tuple[list, float]:
    async def main():
        loop, rule = asyncio.get_running_loop(), PlainRule(max_batch_size, max_batch_cost)
        for item in items:
            rule.enqueue(*item, loop)
        started, batches = time.process_time(), []
        while rule.has_waiting:
            rule.due_full()
            batch = rule.take_fairly()
            rule.finished(batch)
            batches.append([w.item for w in batch])
        return batches, time.process_time() - started

    return asyncio.run(main())


def drain_queue(items: list[tuple], max_batch_size: int, max_batch_cost: float) -> tuple[list, float]:
    async def main():
        batcher = DynamicBatcher(lambda items: items, max_batch_size, 0.005, max_batch_cost)
        await batcher.start()
        try:  # nothing awaited while draining: the batcher's own worker never runs, each batch is taken here
            for item in items:
                batcher.enqueue(*item)
            started, batches = time.process_time(), []
            while batcher.has_waiting:
                batcher.due()
                batch = batcher.take_fairly()
                sum(not batcher._waiting.waits_for(owner) for owner in {w.owner for w in batch})
                batches.append([w.item for w in batch])
            return batches, time.process_time() - started
        finally:
            await batcher.stop()

    return asyncio.run(main())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 4000, 8000, 16000], help="waiting items W")
    parser.add_argument("--max-batch-size", type=int, default=32, help="questions a batch (serve's default)")
    parser.add_argument("--max-batch-chars", type=float, default=50_000, help="a batch's cost (serve's default)")
    parser.add_argument("--chars", type=int, default=800, help="each question's cost: its characters")
    parser.add_argument("--workload", choices=("single", "mixed", "long-first"), default="single",
                        help="single: one question a request; mixed: requests of 1 to 3 questions of mixed lengths, and "
                        "long questions' chunks each in a pass of its own; long-first: half the requests long ones")
    args = parser.parse_args()
    print(command_load_and_date())
    print(f"machine: {machine_description()}")
    print(f"workload: {args.workload}")
    print(f"{'W':>7} {'batches':>8} {'plain rule s':>13} {'fair queue s':>13} {'ratio':>8}")
    for count in args.sizes:
        items = workload(count, args.chars, args.workload)
        plain, plain_s = drain_plain(items, args.max_batch_size, args.max_batch_chars)
        fair, fair_s = drain_queue(items, args.max_batch_size, args.max_batch_chars)
        if plain != fair:
            raise SystemExit(f"W = {count}: the fair queue chose other batches than the plain rule")
        print(f"{count:>7} {len(fair):>8} {plain_s:>13.3f} {fair_s:>13.4f} {plain_s / max(fair_s, 1e-9):>7.0f}×",
              flush=True)


if __name__ == "__main__":
    main()
