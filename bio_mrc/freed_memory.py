"""glibc's malloc kept from handing a model's freed blocks back to the kernel, in a process that trains or answers in batches.

Each training step allocates the activations and gradients the step before freed, and each answering batch those of
the batch before. glibc's malloc serves a block above its mmap threshold (128 KiB, raised as such blocks are freed, to
at most 32 MiB) with a mapping of its own, unmapped when freed, and hands the heap's free top back to the kernel once it
exceeds its trim threshold (twice the mmap threshold): a step frees far more than that at once, so the next step's
blocks are new pages, which the kernel zeroes at their first touch. :func:`keep_freed_blocks` fixes the mmap threshold at
its maximum and the trim threshold high, so a step's freed blocks serve the next, as PyTorch's CPU tuning
guide has jemalloc or tcmalloc do. A process's allocator is the whole process's: the command line keeps freed blocks in
the commands that train or answer a file (:mod:`bio_mrc.cli.freed_blocks`), and the user's own settings stand (a
``MALLOC_*`` variable, a ``glibc.malloc`` tunable). Other C libraries (musl, macOS, Windows) are left as they are.
"""

from __future__ import annotations

import os
from typing import Mapping

# mallopt's parameters (glibc's malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD_MAX = 32 * 1024 * 1024  # glibc's bound on 64-bit systems: larger blocks are always mapped
KEPT_FREE_TOP = 2**31 - 1  # bytes of free heap top kept before trimming: the most mallopt's int takes
SETTINGS = ((M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX), (M_TRIM_THRESHOLD, KEPT_FREE_TOP))


def glibc_version() -> str | None:
    """``"glibc 2.36"`` where this process runs on glibc, else None."""
    try:
        return os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):  # no confstr (Windows), or a C library that does not know the name
        return None


def users_malloc_settings(environ: Mapping[str, str]) -> list[str]:
    """The malloc settings the user gave in ``environ``: ``MALLOC_*`` variables (glibc's, or jemalloc's ``MALLOC_CONF``
    beside a preloaded jemalloc), a ``glibc.malloc`` tunable."""
    named = sorted(k for k in environ if k.startswith("MALLOC_"))
    return named + (["GLIBC_TUNABLES"] if "glibc.malloc." in environ.get("GLIBC_TUNABLES", "") else [])


def keep_freed_blocks(environ: Mapping[str, str] | None = None) -> bool:
    """Have glibc's malloc keep the blocks a training step or answering batch frees for the next (its mmap threshold at
    its 32 MiB maximum, its trim threshold at 2 GiB) for the whole process; True where it now does, False where this
    process runs on another C library or the user set malloc's behaviour in ``environ`` (default: the process's)."""
    if glibc_version() is None or users_malloc_settings(os.environ if environ is None else environ):
        return False
    import ctypes  # here: the command line's --help loads no more than it needs

    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return all([mallopt(parameter, value) == 1 for parameter, value in SETTINGS])


__all__ = ["keep_freed_blocks", "users_malloc_settings"]
