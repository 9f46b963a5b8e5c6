"""Atomic file writes: a file either keeps its old content or has its complete new content, never a part.

Each write goes to a temporary file in the target's own folder (so the rename stays on one file
system), is flushed and fsynced, and is then renamed over the target with ``os.replace``, which
POSIX and Windows both make atomic. A crash leaves at most a stray ``.NAME.*.tmp`` file behind.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import shutil
from pathlib import Path
from typing import Any, Iterator

from .errors import OutputError

__all__ = ["check_file_target", "check_folder_target", "writes_named", "atomic_write_text", "atomic_write_bytes", "atomic_write_json",
           "atomic_writer", "atomic_move_files", "fsync_dir", "usual_file_mode", "finish_file_set", "replaced_together"]


# torch's checkpoint writer reports a full disk as a RuntimeError without the errno
TORCH_WRITE_FAILURES = ("file write failed", "inline_container", "No space left on device")


@contextlib.contextmanager
def writes_named(folder: str | Path) -> Iterator[None]:
    """A full disk or a spent quota while writing under ``folder`` becomes one :class:`OutputError`
    naming the folder and its free space, instead of a traceback from deep inside a writer."""
    try:
        yield
    except OutputError:
        raise
    except (OSError, RuntimeError) as err:
        full = isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT)
        if not full and not (isinstance(err, RuntimeError) and any(sign in str(err) for sign in TORCH_WRITE_FAILURES)):
            raise
        first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise OutputError(f"could not write there, {_free_space(Path(folder))} free on its device: {first_line}",
                          str(folder)) from None


def _free_space(folder: Path) -> str:
    existing = next((p for p in (folder, *folder.parents) if p.exists()), Path("."))
    return f"{shutil.disk_usage(existing).free / 2**20:,.0f} MiB"


def check_file_target(path: str | Path) -> Path:
    """``path`` if a file can be written there: it is no folder, and no file stands where a folder on its way must be.
    Commands check their outputs with this before any work, so a long run never fails at its last step."""
    path = Path(path)
    if path.is_dir():
        raise OutputError("a folder has this name; give a file name", str(path))
    _check_nearest_folder(path)
    return path


def check_folder_target(path: str | Path) -> Path:
    """``path`` if a folder can be made or used there: no file stands in its way."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputError("a file has this name; give a folder", str(path))
    _check_nearest_folder(path)
    return path


def _check_nearest_folder(path: Path) -> None:
    """The nearest existing folder above ``path`` is a writable folder, not a file."""
    parent = next(p for p in path.parents if p.exists())  # "." or "/" at the latest
    if not parent.is_dir():
        raise OutputError(f"{parent} is a file, so no folder can be made there for this output", str(path))
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{parent} is not writable", str(path))


def atomic_write_text(path: str | Path, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically; returns the path. On any error the old file (or no file) remains."""
    return atomic_write_bytes(path, text.encode(encoding))


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_write_text`)."""
    path = Path(path)
    with writes_named(path.parent):
        return _atomic_write_bytes(path, data)


def _atomic_write_bytes(path: Path, data: bytes) -> Path:
    with _atomic_binary(path) as handle:
        handle.write(data)
    return path


@contextlib.contextmanager
def atomic_writer(path: str | Path, encoding: str = "utf-8") -> Iterator[Any]:
    """A text handle whose content replaces ``path`` atomically when the block ends without an error
    (for a file written piece by piece, too large to hold as one string)."""
    path = Path(path)
    with writes_named(path.parent), _atomic_binary(path) as raw:
        with open(raw.fileno(), "w", encoding=encoding, closefd=False, newline="") as handle:
            yield handle


@contextlib.contextmanager
def _atomic_binary(path: Path) -> Iterator[Any]:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    # os.open with mode 0o666 lets the umask decide the permissions, as open() would (mkstemp gives 0o600).
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())  # the data is on disk before the name points at it
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    fsync_dir(path.parent)


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
    mode = usual_file_mode()
    for file in files:
        with open(file, "rb") as handle:
            os.fsync(handle.fileno())
        os.chmod(file, mode)  # some writers (safetensors through transformers) leave 0o600: a model folder reads as any file
    moved = []
    for file in files:
        os.replace(file, target_dir / file.name)
        moved.append(target_dir / file.name)
    fsync_dir(target_dir)
    return moved


def usual_file_mode() -> int:
    """The mode ``open()`` gives a new file: 0o666 less the umask (0o644 under the usual 022)."""
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


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


SET_MANIFEST = ".files.json"  # in a set's staging folder: the names of the set's files


def _set_folders(folder: Path, name: str) -> tuple[Path, Path, Path]:
    """The folder a set is written in, the same folder once the set is complete, and the list of the set in place."""
    return folder / f".{name}-writing", folder / f".{name}-complete", folder / f".{name}-files.json"


@contextlib.contextmanager
def replaced_together(folder: str | Path, name: str) -> Iterator[Path]:
    """Yield a staging folder; the files written there replace the set ``name`` in ``folder`` together.

    A write-ahead journal: the new set is written and fsynced whole with the list of its files, then its
    folder is renamed to mark it complete (the commit point), then its files are renamed into ``folder``.
    A crash before the commit leaves the old set; a crash after it is finished by :func:`finish_file_set`,
    which the next writer runs first. Files of the old set that the new one lacks are removed; no other file is.
    """
    folder = Path(folder)
    finish_file_set(folder, name)
    writing, complete, _ = _set_folders(folder, name)
    shutil.rmtree(writing, ignore_errors=True)
    writing.mkdir(parents=True)
    try:
        yield writing
        files = sorted(file.name for file in writing.iterdir())
        for file in files:
            with open(writing / file, "rb") as handle:
                os.fsync(handle.fileno())
        atomic_write_json(writing / SET_MANIFEST, files)
    except BaseException:
        shutil.rmtree(writing, ignore_errors=True)
        raise
    os.replace(writing, complete)
    fsync_dir(folder)
    finish_file_set(folder, name)


def finish_file_set(folder: str | Path, name: str) -> None:
    """Complete an interrupted :func:`replaced_together` (it may run any number of times): move a complete
    set in, drop an incomplete one."""
    folder = Path(folder)
    writing, complete, in_place = _set_folders(folder, name)
    shutil.rmtree(writing, ignore_errors=True)
    if not complete.is_dir():
        return
    new = json.loads((complete / SET_MANIFEST).read_text(encoding="utf-8"))
    old = json.loads(in_place.read_text(encoding="utf-8")) if in_place.is_file() else []
    for file in new:
        if (complete / file).exists():
            os.replace(complete / file, folder / file)
    fsync_dir(folder)
    for stale in set(old) - set(new):  # files the old set wrote and the new one does not
        with contextlib.suppress(FileNotFoundError):
            (folder / stale).unlink()
    atomic_write_json(in_place, new)
    shutil.rmtree(complete)
    fsync_dir(folder)
