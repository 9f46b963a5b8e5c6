"""One process at a time: a file or folder held for a block (released however the process dies), and Ctrl-C held past
writes that agree only together."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from pathlib import Path
from typing import Iterator

from ..errors import OutputError
from .owned_paths import open_no_follow
from .paths import broken_link


@contextlib.contextmanager
def sole_writer(path: str | Path, what: str, wait: bool = False) -> Iterator[None]:
    """Hold ``path`` (created if missing, never emptied) as the one process writing it for the block: another
    process asking while it is held is refused with one :class:`OutputError` line instead of both writing the
    file at once, or with ``wait`` waits for it. The lock is released when the block ends or the process dies,
    however it dies. Where the system has no ``flock`` (Windows) the block runs unguarded."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open_no_follow(path, "a+b") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OutputError(f"another process is writing {what} into this file now; wait for it to end or "
                              "choose another output", str(path)) from None
        yield


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM that arrive during the block take effect once it ends, so files that only agree together
    (a model's ``config.json`` and the card made from it) are both written or neither. Only the main thread receives
    signals, so elsewhere the block runs as it is; a signal ignored, or handled outside Python, stays so."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    held = {signum: handler for signum, handler in previous.items() if handler not in (signal.SIG_IGN, None)}
    for signum in held:
        signal.signal(signum, lambda received, frame: arrived.append(received))
    try:
        yield
    finally:
        for signum, handler in held.items():
            signal.signal(signum, handler)
        if arrived:
            signal.raise_signal(arrived[0])


@contextlib.contextmanager
def updated_alone(path: str | Path) -> Iterator[None]:
    """Hold ``path``'s update for the block: a process reading, changing and rewriting a file shared by many (a
    cache of entries) waits here for another one doing the same, so neither rewrites the file without the other's
    entry. The lock is on the file's folder (no file of its own left behind; never a link) and is released when the
    block ends or the process dies. Where the system has no ``flock`` (Windows) the block runs unguarded."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    descriptor = os.open(Path(path).parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0))
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


class FolderBusyError(OutputError):
    """Another process holds the folder (:func:`sole_process_in`): a caller that can do without writing it skips."""


@contextlib.contextmanager
def sole_process_in(folder: str | Path, refusal: str, shown: str | None = None) -> Iterator[None]:
    """Hold ``folder`` (created if missing; never a link) as the one process working in it for the block: another
    process asking while it is held is refused with one :class:`FolderBusyError` line, ``refusal``, naming the folder as
    ``shown`` (default: ``folder``). The lock is released
    when the block ends or the process dies, however it dies. Where the system has no ``flock`` (Windows) the block
    runs unguarded."""
    Path(folder).mkdir(parents=True, exist_ok=True)  # made where the lock is not taken too (Windows)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    descriptor = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0))
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FolderBusyError(refusal, shown or str(folder)) from None
        yield
    finally:
        os.close(descriptor)


FOLDER_BUSY = "another process is writing into this folder now; wait for it to end, or choose another output folder"
_WRITTEN = threading.local()  # the folders this thread holds with written_alone


@contextlib.contextmanager
def written_alone(folder: str | Path, refusal: str = FOLDER_BUSY) -> Iterator[None]:
    """Hold the output folder ``folder`` (created if missing) as the one process writing it for the block, as ``train``
    holds its own (:func:`sole_process_in` on its real path, so a link the user chose is followed, and ``train`` and
    this exclude each other): another process is refused with one line, ``refusal``, where both would write one
    staging folder and one set of model files at once. Held again inside the block by the same thread, it is taken
    as held; folders made here and left empty by a failure are removed (none on a refusal: the folder is the other's)."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise OutputError("a file has this name; give a folder", str(folder))
    if broken := broken_link(folder):  # its target would be made
        raise OutputError(f"this is {broken}; give a folder", str(folder))
    real = os.path.realpath(folder)
    held = _WRITTEN.__dict__.setdefault("folders", set())
    if real in held:
        yield
        return
    made = [path for path in (folder, *folder.parents) if not path.exists()]
    with sole_process_in(real, refusal, shown=str(folder)):
        held.add(real)
        try:
            yield
        except BaseException:
            for path in made:
                if path.is_dir() and not any(path.iterdir()):
                    path.rmdir()
            raise
        finally:
            held.discard(real)
