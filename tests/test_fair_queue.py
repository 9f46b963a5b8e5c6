"""The batcher's fair queue chooses the same batches, in the same order, as the plain rule it replaces: each next
member the oldest item of the owner served least so far among those that fit, found by looking at every item."""

import asyncio
import math
import random

import pytest

from bio_mrc.serving.batching import DynamicBatcher


class PlainRule:
    """The rule written out plainly, as the batcher kept it before its queue: every item looked at for each member."""

    def __init__(self, max_size, max_cost):
        self.max_size, self.max_cost = max_size, max_cost
        self.waiting, self.served, self.arrivals = [], {}, 0

    def add(self, name, size, owner, cost, limit, future):
        self.waiting.append({"name": name, "size": size, "owner": name if owner is None else owner, "cost": cost,
                             "limit": limit, "future": future, "arrived": self.arrivals})
        self.arrivals += 1

    def due_full(self):
        waiting = [w for w in self.waiting if not w["future"].done()]
        return sum(w["size"] for w in waiting) >= self.max_size or sum(w["cost"] for w in waiting) >= self.max_cost

    def take(self):
        waiting = [w for w in self.waiting if not w["future"].done()]
        batch, size, cost, limit = [], 0, 0.0, self.max_size
        while True:
            fits = [w for w in waiting if size + w["size"] <= min(limit, w["limit"]) and cost + w["cost"] <= self.max_cost] \
                if batch else waiting
            if not fits:
                break
            chosen = min(fits, key=lambda w: (self.served.get(w["owner"], 0.0), w["arrived"]))
            waiting.remove(chosen)
            batch.append(chosen)
            size, cost, limit = size + chosen["size"], cost + chosen["cost"], min(limit, chosen["limit"])
            self.served[chosen["owner"]] = self.served.get(chosen["owner"], 0.0) + chosen["cost"]
        self.waiting = waiting
        still_waiting = {w["owner"] for w in waiting}
        self.served = {owner: served for owner, served in self.served.items() if owner in still_waiting}
        return [w["name"] for w in batch]


def random_round(rng, batcher, plain, futures, count):
    """Queue a few items (shared owners, items alone, mixed sizes, costs and limits), then cancel a few."""
    for _ in range(rng.randint(0, 10)):
        name = f"item {next(count)}"
        size = rng.randint(1, batcher.max_batch_size)
        owner = rng.choice([None, None, *"abcdefghijkl"])
        cost = rng.choice([0, 0, 1, 1, 2.5, 4, 9, 30])
        limit = rng.choice([math.inf, math.inf, math.inf, rng.randint(1, batcher.max_batch_size + 1), 2.5])
        future = batcher.enqueue(name, size, owner, cost, limit)
        plain.add(name, size, owner, cost, limit, future)
        futures.append(future)
    for future in rng.sample(futures, min(len(futures), rng.choice([0, 0, 1, 2, 8]))):
        future.cancel()  # one already taken or cancelled: nothing changes


def served_by_owner(batcher):
    return {getattr(owner, "item", owner): served for owner, served in batcher._waiting.served.items()}  # alone: its name


def run_scenario(seed):
    rng = random.Random(seed)

    async def main():
        max_size, max_cost = rng.randint(1, 8), rng.choice([math.inf, 10, 12.5])
        batcher = DynamicBatcher(lambda items: items, max_batch_size=max_size, max_wait=1.0, max_batch_cost=max_cost)
        plain, futures, count, batches = PlainRule(max_size, max_cost), [], iter(range(10_000)), []
        await batcher.start()
        try:  # nothing awaited until the end: the worker never runs, each batch is taken here
            for _ in range(150):
                random_round(rng, batcher, plain, futures, count)
                assert batcher.has_waiting == any(not w["future"].done() for w in plain.waiting)
                full = batcher.due() == next(iter(batcher._waiting)).arrived if batcher.has_waiting else False
                assert full == (plain.due_full() and batcher.has_waiting)
                taken, expected = [w.item for w in batcher.take_fairly()], plain.take()
                assert taken == expected
                assert served_by_owner(batcher) == plain.served
                batches.append(taken)
        finally:
            await batcher.stop()
        return batches

    return asyncio.run(main())


@pytest.mark.parametrize("seed", range(40))
def test_the_fair_queue_takes_the_same_batches_as_the_plain_rule(seed):
    batches = run_scenario(seed)
    assert sum(len(batch) for batch in batches) > 0


def test_an_owner_whose_oldest_item_does_not_fit_gives_its_next_one_that_does():
    """Owner a's oldest item (cost 8) does not fit beside b's (cost 5, batch cost 10); a's next one (cost 1) does, and
    is older than b's second: the batch is b's first, then a's second."""
    async def main():
        batcher = DynamicBatcher(lambda items: items, max_batch_size=4, max_wait=1.0, max_batch_cost=10)
        await batcher.start()
        try:
            batcher.enqueue("b1", 1, "b", 5)
            batcher.enqueue("a1", 1, "a", 8)
            batcher.enqueue("a2", 1, "a", 1)
            batcher.enqueue("b2", 1, "b", 1)
            batcher._waiting.served["a"] = 3.0  # a was served before: b goes first
            return [[w.item for w in batcher.take_fairly()] for _ in range(3)]
        finally:
            await batcher.stop()

    assert asyncio.run(main()) == [["b1", "a2", "b2"], ["a1"], []]


class CountedOwner:
    """An owner that counts how often the queue looks it up: the queue's work, in a form that does not depend on time."""

    lookups = 0

    def __hash__(self):
        CountedOwner.lookups += 1
        return id(self)


def mixed_owners(batcher, count):
    """Owners of one to three questions, every tenth a long question's chunks each in a pass of its own (an oldest
    item that fits no batch it does not start)."""
    queued = 0
    while queued < count:
        owner = CountedOwner()
        if queued % 10 == 0:
            for _ in range(3):
                batcher.enqueue("chunk", 2, owner, 2, limit=2)
        else:
            for _ in range(1 + queued % 3):
                batcher.enqueue("question", 1, owner, 1 + queued % 7)
        queued = len(batcher._waiting)


def long_ones_first(batcher, count):
    """Half the owners one long question (cost 30,000), then half one short one (800): batches of 50,000 take one
    long question and 25 short ones while short ones wait, each time with every other long one too costly for them."""
    for index in range(count):
        batcher.enqueue("question", 1, CountedOwner(), 30_000 if index < count // 2 else 800)


def lookups_to_drain(count, queue_items=mixed_owners, max_batch_size=8, max_batch_cost=40):
    """Owner look-ups, per item, to drain ``count`` items queued by ``queue_items``."""
    async def main():
        batcher = DynamicBatcher(lambda items: items, max_batch_size=max_batch_size, max_wait=1.0,
                                 max_batch_cost=max_batch_cost)
        await batcher.start()
        try:
            queue_items(batcher, count)
            queued = len(batcher._waiting)
            CountedOwner.lookups, taken = 0, 0
            while batcher.has_waiting:
                batcher.due()
                taken += len(batcher.take_fairly())
            assert taken == queued
            return CountedOwner.lookups / queued
        finally:
            await batcher.stop()

    return asyncio.run(main())


def test_draining_the_queue_looks_each_owner_up_a_bounded_number_of_times_per_item():
    """The plain rule looks up every waiting item's owner for each batch member (about 1,300 times per item here);
    the queue, a few times per item whatever the queue's length."""
    assert lookups_to_drain(2000) <= 30


def test_long_questions_waiting_ahead_of_short_ones_are_not_looked_at_for_each_batch():
    """While 1,000 short questions wait behind 1,000 long ones, each batch takes one long question and 25 short ones;
    every other long one is too costly for what that batch has left. Looking at each of those owners for each such
    batch took about 150 look-ups per item here, twice that for twice the items; stepping over blocks of them, 10."""
    assert lookups_to_drain(2000, long_ones_first, max_batch_size=32, max_batch_cost=50_000) <= 30
