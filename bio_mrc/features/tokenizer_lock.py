"""One caller at a time per tokenizer: a fast tokenizer's truncation and padding are settings of the tokenizer object.

transformers sets them on the Rust tokenizer before each call (``truncation="only_second"`` for windows, none for
the questions and contexts alone), so two threads calling one tokenizer (one loaded model answering several requests)
would encode with each other's settings, or fail (``Truncation error: Second sequence not provided``, ``Already
borrowed``). Every call bio_mrc makes to a shared tokenizer holds its lock. The settings live in the Rust tokenizer
(``backend_tokenizer``), which copies of one tokenizer share (:func:`bio_mrc.encoders.right_sided` makes one), so
the lock is that tokenizer's.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

_LOCKS: "weakref.WeakKeyDictionary[Any, threading.RLock]" = weakref.WeakKeyDictionary()
_MAKING = threading.Lock()  # two threads asking for a tokenizer's first lock get the same one


def tokenizer_lock(tokenizer: Any) -> threading.RLock:
    """The lock of ``tokenizer``'s Rust tokenizer, the same for every copy that shares it (reentrant: a call holding it
    may make another); it lives as long as that tokenizer."""
    shared = getattr(tokenizer, "backend_tokenizer", tokenizer)
    with _MAKING:
        lock = _LOCKS.get(shared)
        if lock is None:
            lock = _LOCKS[shared] = threading.RLock()
        return lock


__all__ = ["tokenizer_lock"]
