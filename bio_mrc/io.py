"""Atomic file writes: a file either keeps its old content or has its complete new content, never a part.

Each write goes to a temporary file in the target's own folder (so the rename stays on one file
system), is flushed and fsynced, and is then renamed over the target with ``os.replace``, which
POSIX and Windows both make atomic. A crash leaves at most a stray ``.NAME.*.tmp`` file behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from pathlib import Path
from typing import Any

__all__ = ["atomic_write_text", "atomic_write_bytes", "atomic_write_json", "atomic_move_files", "fsync_dir"]


def atomic_write_text(path: str | Path, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically; returns the path. On any error the old file (or no file) remains."""
    return atomic_write_bytes(path, text.encode(encoding))


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_write_text`)."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    # os.open with mode 0o666 lets the umask decide the permissions, as open() would (mkstemp gives 0o600).
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())  # the data is on disk before the name points at it
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    fsync_dir(path.parent)
    return path


def atomic_write_json(path: str | Path, obj: Any, **json_dumps_kwargs: Any) -> Path:
    """``json.dumps(obj, **json_dumps_kwargs)`` written atomically; an object that does not serialise writes nothing."""
    return atomic_write_text(path, json.dumps(obj, **json_dumps_kwargs))


def atomic_move_files(source_dir: str | Path, target_dir: str | Path) -> list[Path]:
    """Move every file of ``source_dir`` (top level) into ``target_dir``, each with one atomic rename.

    The files are fsynced first, so a name in ``target_dir`` never points at unwritten data. Each
    file is replaced atomically, the set of files is not: a caller that needs "all or nothing"
    writes a marker file after this returns and trusts the folder only when the marker exists.
    """
    source_dir, target_dir = Path(source_dir), Path(target_dir)
    files = sorted(source_dir.iterdir())
    folders = [p.name for p in files if p.is_dir()]
    if folders:  # refuse rather than leave part of a model behind
        raise IsADirectoryError(f"atomic_move_files moves files only; {source_dir} holds folders {folders}")
    for file in files:
        with open(file, "rb") as handle:
            os.fsync(handle.fileno())
    moved = []
    for file in files:
        os.replace(file, target_dir / file.name)
        moved.append(target_dir / file.name)
    fsync_dir(target_dir)
    return moved


def fsync_dir(folder: str | Path) -> None:
    """Make renames in ``folder`` durable; a no-op where folders cannot be opened (Windows)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
