"""Torch's CPU threads in a process forked from this one: one, so its first forward pass does not hang.

Torch's CPU thread pool in the Linux wheels is GNU OpenMP's. Its threads stay behind in the parent at ``fork``,
while the child still counts them as its own, so once the parent has run a forward pass, a child's first parallel
region of more than one thread waits for them forever. Neither torch nor OpenMP can start that pool again in the
child (torch's own fork handling covers its GPU backends alone), so a forked child runs torch with one thread, as torch's
DataLoader workers do: the usual setting for several worker processes anyway. A process that never forks, and one
started with ``spawn`` (a new interpreter, with a pool of its own), keeps its threads.
"""

from __future__ import annotations

import os

import torch

_registered = False


def one_thread_in_child() -> None:
    """Run in a forked child: torch with one intra-op thread (more wait for the parent's pool threads)."""
    if torch.get_num_threads() > 1:
        torch.set_num_threads(1)


def register_fork_handler() -> None:
    """Have every child forked from this process on run :func:`one_thread_in_child` (once however often called)."""
    global _registered
    if not _registered and hasattr(os, "register_at_fork"):  # no fork, and no register_at_fork, on Windows
        os.register_at_fork(after_in_child=one_thread_in_child)
        _registered = True


__all__ = ["one_thread_in_child", "register_fork_handler"]
