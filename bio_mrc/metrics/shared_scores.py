"""Per-question scores kept while a block runs: scorers called twice on one file's answers (its official metrics, then
its per-question columns for a paired difference) compute each question's score once, and a tuning's grid, whose
answers share most of their spans, each span's partial match with a gold span once. Outside a block nothing is kept."""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Hashable, Iterator, TypeVar

Score = TypeVar("Score")

# The scores kept by the open block of this thread or task (None: no block, each score computed afresh).
_KEPT: ContextVar[dict[Hashable, Any] | None] = ContextVar("bio_mrc_shared_question_scores", default=None)


@contextmanager
def shared_question_scores() -> Iterator[None]:
    """Inside the block, the official scorers keep each question's score of each answer (and MultiSpanQA's partial
    match of each gold and predicted span) and reuse it; a block inside another shares the outer one's. The scores
    are dropped when the outermost block ends."""
    kept = _KEPT.get()
    token = _KEPT.set({} if kept is None else kept)
    try:
        yield
    finally:
        _KEPT.reset(token)


def kept_score(key: Hashable, compute: Callable[[], Score]) -> Score:
    """``compute()``, kept under ``key`` (everything the score depends on) while a block is open; a score whose
    computation fails is not kept, so asking again fails again."""
    kept = _KEPT.get()
    if kept is None:
        return compute()
    if key not in kept:
        kept[key] = compute()
    return kept[key]


__all__ = ["kept_score", "shared_question_scores"]
