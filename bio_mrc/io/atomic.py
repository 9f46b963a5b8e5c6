"""Atomic file writes: a file either keeps its old content or has its complete new content, never a part.

Each write goes to a temporary file in the target's own folder (so the rename stays on one file
system), is flushed and fsynced, and is then renamed over the target with ``os.replace``, which
POSIX and Windows both make atomic. A crash leaves at most a stray ``.NAME.*.tmp`` file behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from ..errors import OutputError
from .locks import signals_held
from .owned_paths import owned_path, remove_file
from .paths import special_file_kind
from .printable import json_with_controls_escaped
from .write_errors import writes_named


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
    with _staged_binary(path) as (handle, temporary):
        yield handle
        handle.flush()
        os.fsync(handle.fileno())  # the data is on disk before the name points at it
        handle.close()
        os.replace(temporary, path)
    fsync_dir(path.parent)


def is_temporary_of(name: str, target: str) -> bool:
    """Whether ``name`` is the temporary file an atomic write of ``target`` (a name in the same folder) makes, as
    :func:`_staged_binary` names it: what a process killed while writing ``target`` leaves."""
    return re.fullmatch(rf"\.{re.escape(target)}\.\d+\.[0-9a-f]{{8}}\.tmp", name) is not None


def remove_temporaries_of(folder: str | Path, targets: Iterable[str]) -> None:
    """Remove from ``folder`` the temporary files a process killed while it wrote one of ``targets`` (names in it) left
    (plain files alone, never through a link)."""
    folder, targets = Path(folder), list(targets)
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if any(is_temporary_of(path.name, target) for target in targets) and path.is_file() and not path.is_symlink():
            remove_file(path, folder)


@contextlib.contextmanager
def _staged_binary(path: Path) -> Iterator[tuple[Any, Path]]:
    """A binary handle on a new temporary file beside ``path``, and its name; the file is removed unless renamed."""
    if kind := special_file_kind(path):  # a rename would replace the device or pipe itself
        raise OutputError(f"this is {kind}, not a file; give a file name", str(path))
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    # os.open with mode 0o666 lets the umask decide the permissions, as open() would (mkstemp gives 0o600).
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            yield handle, temporary
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)  # gone already once renamed


def atomic_write_json(path: str | Path, obj: Any, **json_dumps_kwargs: Any) -> Path:
    """``json.dumps(obj, **json_dumps_kwargs)`` written atomically (through :func:`json_with_controls_escaped`, so
    ``ensure_ascii=False`` writes no raw line separator); an object that does not serialise writes nothing."""
    return atomic_write_text(path, json_with_controls_escaped(json.dumps(obj, **json_dumps_kwargs)))


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
    moves = [(owned_path(file, source_dir), owned_path(target_dir / file.name, target_dir)) for file in files]
    replace_all(moves, target_dir)
    return [target for _, target in moves]


def replace_all(moves: Sequence[tuple[Path, Path]], folder: str | Path) -> None:
    """Rename each ``(source, target)`` over its target in ``folder``, files that agree only together: a Ctrl-C or
    SIGTERM during the renames takes effect after the last (:func:`signals_held`), and a rename that fails after
    others is one :class:`OutputError` line saying the folder mixes new and old files."""
    done = 0
    with signals_held():
        try:
            for source, target in moves:
                os.replace(source, target)
                done += 1
        except OSError as err:
            if not done:
                raise
            raise OutputError(f"{done} of the {len(moves)} new files replaced old ones before {err}: the files there do not "
                              "agree (new beside old); write them again", str(folder)) from None
    fsync_dir(folder)


@contextlib.contextmanager
def atomic_writers(paths: Sequence[str | Path], encoding: str = "utf-8",
                   moved_in: Sequence[tuple[str | Path, str | Path]] = ()) -> Iterator[list[Any]]:
    """Text handles whose contents replace ``paths`` (files that agree only together, in one folder) when the block
    ends without an error: every file is written and fsynced before the first rename (:func:`replace_all`), so a
    failure while writing leaves the old files, all of them. ``moved_in``: files already written in that folder, each
    ``(source, target)``, renamed over their targets with them, after them (fsynced first)."""
    paths = [Path(path) for path in paths]
    folder = paths[0].parent
    with writes_named(folder), contextlib.ExitStack() as stack:
        raws = [stack.enter_context(_staged_binary(path)) for path in paths]
        handles = [stack.enter_context(open(raw.fileno(), "w", encoding=encoding, closefd=False, newline="")) for raw, _ in raws]
        yield handles
        for handle, (raw, _) in zip(handles, raws):
            handle.close()  # flushed into the file, which stays open
            os.fsync(raw.fileno())
            raw.close()  # closed before the rename, which Windows needs
        moves = [(owned_path(source, folder), owned_path(target, folder)) for source, target in moved_in]
        for source, _ in moves:
            with open(source, "rb") as handle:
                os.fsync(handle.fileno())  # on disk before its new name points at it
        replace_all([*((temporary, path) for (_, temporary), path in zip(raws, paths)), *moves], folder)


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
