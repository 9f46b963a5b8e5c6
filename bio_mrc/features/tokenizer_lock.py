"""One caller at a time per tokenizer: a fast tokenizer's truncation and padding are settings of the tokenizer object.

transformers sets them on the Rust tokenizer before each call (``truncation="only_second"`` for windows, none for
the questions and contexts alone), so two threads calling one tokenizer (one loaded model answering several requests)
would encode with each other's settings, or fail (``Truncation error: Second sequence not provided``, ``Already
borrowed``). Every call bio_mrc makes to a shared tokenizer holds its lock.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

_LOCKS: "weakref.WeakKeyDictionary[Any, threading.RLock]" = weakref.WeakKeyDictionary()
_MAKING = threading.Lock()  # two threads asking for a tokenizer's first lock get the same one


def tokenizer_lock(tokenizer: Any) -> threading.RLock:
    """The lock of ``tokenizer`` (reentrant: a call holding it may make another); it lives as long as the tokenizer."""
    with _MAKING:
        lock = _LOCKS.get(tokenizer)
        if lock is None:
            lock = _LOCKS[tokenizer] = threading.RLock()
        return lock


__all__ = ["tokenizer_lock"]
