"""A full disk, a spent quota or a refused write while writing under a folder, as one line naming the folder."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from pathlib import Path
from typing import Iterator

from ..errors import OutputError


# torch's checkpoint writer reports a full disk as a RuntimeError without the errno (a record cut short, or the
# archive's end that no longer fits: its C++ stream's error)
TORCH_WRITE_FAILURES = ("file write failed", "inline_container", "No space left on device", "iostream error")


@contextlib.contextmanager
def writes_named(folder: str | Path) -> Iterator[None]:
    """A full disk or a spent quota while writing under ``folder`` becomes one :class:`OutputError`
    naming the folder and its free space, and a write the system refuses there (permissions taken away, a file
    system remounted read-only, a failing device) one naming the folder, instead of a traceback from deep inside a
    writer."""
    try:
        yield
    except OutputError:
        raise
    except OSError as err:
        if err.errno == errno.EFBIG and _written_under(err, folder):
            raise OutputError(f"could not write there: {_size_limit_reached()}: {err}", str(folder)) from None
        if err.errno in _REFUSED_WRITES and _written_under(err, folder):  # the folder was writable when checked
            raise OutputError(f"could not write there: {err}", str(folder)) from None
        _raise_full_disk(err, folder)
    except Exception as err:  # noqa: BLE001 - writers (torch, safetensors) report a full disk in exceptions of their own
        _raise_full_disk(err, folder)


# EFBIG: past a file size limit (ulimit -f, a file system's largest file), which Python meets as an error, not SIGXFSZ
_REFUSED_WRITES = (errno.EACCES, errno.EPERM, errno.EROFS, errno.EIO, errno.EFBIG)


def is_write_failure(err: BaseException) -> bool:
    """Whether ``err`` is the system refusing a write for the place written (a full disk or quota, a read-only or
    failing device, a size limit), which another way of writing the same bytes would meet too."""
    return isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT, *_REFUSED_WRITES)


def _written_under(err: OSError, folder: str | Path) -> bool:
    """Whether ``err`` names a path under ``folder``, or none (a writer's own error): not an input read meanwhile."""
    if not isinstance(err.filename, (str, bytes, os.PathLike)):
        return True
    return Path(os.path.abspath(os.fsdecode(err.filename))).is_relative_to(os.path.abspath(folder))


def _raise_full_disk(err: Exception, folder: str | Path) -> None:
    """``err`` as one :class:`OutputError` line when it says the disk or the quota is full; else ``err`` itself."""
    full = isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT)
    said = isinstance(err, RuntimeError) and any(sign in str(err) for sign in TORCH_WRITE_FAILURES)
    if not (full or said or "No space left on device" in str(err) or "Disk quota exceeded" in str(err)):
        raise err
    first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    # torch's writer says no more than that a write fell short: more room than the size limit leaves that limit
    if said and not full and (limit := file_size_limit()) is not None and _free_bytes(Path(folder)) > limit:
        raise OutputError(f"could not write there: {_size_limit_reached()}: {first_line}", str(folder)) from None
    raise OutputError(f"could not write there, {_free_space(Path(folder))} free on its device: {first_line}",
                      str(folder)) from None


def file_size_limit() -> int | None:
    """The largest file this process may write, in bytes (``ulimit -f``); None where there is no limit."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else soft


def _size_limit_reached() -> str:
    """EFBIG in words: the process's size limit for files where one is set, else the file system's."""
    limit = file_size_limit()
    if limit is None:
        return "a file reached the largest size this file system allows"
    return f"a file reached the size limit for files ({limit:,} bytes: ulimit -f)"


def _free_space(folder: Path) -> str:
    return f"{_free_bytes(folder) / 2**20:,.0f} MiB"


def _free_bytes(folder: Path) -> int:
    existing = next((p for p in (folder, *folder.parents) if p.exists()), Path("."))
    return shutil.disk_usage(existing).free
