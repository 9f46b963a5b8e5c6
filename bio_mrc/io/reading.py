"""Files another process may be writing, read in one state: the same files before and after the read."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Callable, TypeVar


T = TypeVar("T")


def files_state(folder: str | Path) -> tuple[tuple[str, int, int, int, int], ...]:
    """Each file at the top of ``folder`` by name, inode, size, modification and change times: two equal states mean no
    file was written or replaced between them (a replacement is a new inode, and no copy keeps the change time), so a
    reader that finds the same state before and after reading a model read one model, not parts of two."""
    state = []
    for path in sorted(Path(folder).iterdir()) if Path(folder).is_dir() else []:
        with contextlib.suppress(OSError):  # removed meanwhile: left out, so the state differs
            info = path.stat()
            state.append((path.name, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns))
    return tuple(state)


READ_TRIES = 3  # reads of files another process keeps writing before the read is refused


def read_in_one_state(state: Callable[[], Any], read: Callable[[], T], changing: Exception,
                      retried: tuple[type[BaseException], ...] = ()) -> T:
    """``read()`` where ``state()`` is the same before and after it, read again where it is not (another process wrote
    the files meanwhile), at most :data:`READ_TRIES` times before ``changing`` is raised; an error of a ``retried``
    kind is the read's own where the state held, else the read is tried again."""
    for _ in range(READ_TRIES):
        before = state()
        try:
            result = read()
        except retried:
            if state() == before:  # the files as they are, not ones caught mid-write
                raise
            continue
        if state() == before:
            return result
    raise changing
