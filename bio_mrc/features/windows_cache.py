"""Where training windows are cached, and how the cache stays within its size: the least recently used
windows files go first once the folder holds more than :func:`cache_budget_bytes`."""

from __future__ import annotations

import contextlib
import os
import re
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..errors import ConfigError, InputNote
from ..io import OutputError, check_writable_folder

if TYPE_CHECKING:  # datasets loads where a cache is read: train checks the budget before any work
    import datasets

BUDGET_VARIABLE = "BIO_MRC_WINDOWS_CACHE_GB"
DEFAULT_BUDGET_GB = 10.0  # about ten variants of all of SQuAD's training windows (about 1 GB each)
_WINDOWS_FILE = re.compile(r"windows-[0-9a-f]{20}\.arrow")
# datasets writes a windows file as a temporary file (tempfile's name) renamed when whole: one a killed run left
# behind is never renamed, and one untouched for a day is no run's work in progress.
_TEMPORARY_FILE = re.compile(r"tmp[a-z0-9_]{8}")
STALE_TEMPORARY_SECONDS = 24 * 3600


class WindowsCacheNote(InputNote):
    """The training windows cache cannot be made or written (``HF_DATASETS_CACHE``, or ``HF_HOME`` or the home folder
    it lies in, read-only, missing or a file): the windows are built in memory for this run."""


def default_windows_cache() -> Path | None:
    """Where training windows are cached: beside ``datasets``' own cache (``HF_DATASETS_CACHE``);
    ``None`` (no cache) after ``datasets.disable_caching()``; ``HF_DATASETS_CACHE`` set empty is read as unset, never
    as the working folder. ``None`` too where that folder cannot be made or written (one
    :class:`WindowsCacheNote`): the run builds its windows in memory, as it would without a cache."""
    import datasets

    if not datasets.is_caching_enabled():
        return None
    # HF_DATASETS_CACHE set empty (an unset shell variable) is no folder: datasets reads it as the working folder
    given = os.environ.get("HF_DATASETS_CACHE") == "" and datasets.config.DEFAULT_HF_DATASETS_CACHE
    folder = Path(given or datasets.config.HF_DATASETS_CACHE) / "bio_mrc_windows"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        check_writable_folder(folder, "training caches its windows there")
    except (OSError, OutputError) as error:
        problem = error.strerror if isinstance(error, OSError) and error.strerror else "not writable"
        warnings.warn(
            WindowsCacheNote(
                f"the training windows cache {folder} cannot be written ({problem}): this run "
                "builds its windows in memory; set HF_DATASETS_CACHE to a writable folder to "
                "cache them"
            ),
            stacklevel=2,
        )
        return None
    return folder


def windows_cache_file(cache_dir: str | Path, fingerprint: str) -> Path:
    return Path(cache_dir) / f"windows-{fingerprint}.arrow"


def drop_unreadable(cache_file: Path, complete: Callable[[datasets.Dataset], bool]) -> None:
    """Remove a windows file that cannot be read whole, or that reads as fewer windows than ``complete`` expects (an
    Arrow stream cut between two of its batches reads as a shorter one), so that the windows are built again and it
    is rewritten; refuse a folder or anything else but a file under its name, which would never be."""
    import datasets

    if not os.path.lexists(cache_file):
        return
    if not cache_file.is_file():
        raise ConfigError(f"{cache_file} is not a file, yet training caches its windows there: move it away, or delete it")
    try:
        whole = complete(datasets.Dataset.from_file(str(cache_file)))
    # pyarrow's ArrowInvalid is a ValueError, its ArrowIOError an OSError; a file a newer datasets wrote (the cache is
    # shared by every environment) names feature types an older one fails on with a TypeError
    except (OSError, ValueError, KeyError, TypeError):
        whole = False
    if not whole:
        with contextlib.suppress(FileNotFoundError):
            cache_file.unlink()


def cache_budget_bytes() -> int:
    """``$BIO_MRC_WINDOWS_CACHE_GB`` gigabytes (10 unless set; 0 keeps only the windows last used)."""
    text = os.environ.get(BUDGET_VARIABLE, "").strip()
    if not text:
        return int(DEFAULT_BUDGET_GB * 1e9)
    try:
        gigabytes = float(text) if text.isascii() else float("nan")  # float() reads '٣' as 3
    except ValueError:
        gigabytes = float("nan")
    if not gigabytes >= 0 or gigabytes * 1e9 == float("inf"):  # 1e300 GB is no number of bytes either
        raise ConfigError(f"{BUDGET_VARIABLE}={text!r}: give the windows cache's size as a number of gigabytes, 0 or more")
    return int(gigabytes * 1e9)


def mark_used_and_prune(used: Path, budget_bytes: int) -> list[Path]:
    """Mark ``used`` as just used, then remove the least recently used other windows files of its folder while the
    folder's windows files come to more than ``budget_bytes``. Only files named as windows files are touched; one
    that cannot be removed (open elsewhere, on a system that forbids that) is left. A temporary file that a killed run
    left (:data:`STALE_TEMPORARY_SECONDS` old) goes too. Returns the files removed. One pass over the folder, one
    ``stat`` a file named as the cache's: a folder of many cached windows is read once a call."""
    with contextlib.suppress(OSError):
        os.utime(used)
    removed, others, now = [], [], time.time()
    with os.scandir(used.parent) as entries:
        for entry in entries:
            windows, temporary = _WINDOWS_FILE.fullmatch(entry.name), _TEMPORARY_FILE.fullmatch(entry.name)
            if entry.name == used.name or not (windows or temporary):
                continue
            with contextlib.suppress(OSError):
                if not entry.is_file():
                    continue
                stat = entry.stat()
                if windows:
                    others.append((stat.st_mtime, stat.st_size, entry.path))
                elif now - stat.st_mtime > STALE_TEMPORARY_SECONDS:
                    os.unlink(entry.path)
                    removed.append(Path(entry.path))
    total = sum(size for _, size, _ in others) + (used.stat().st_size if used.exists() else 0)
    for _, size, path in sorted(others):
        if total <= budget_bytes:
            break
        with contextlib.suppress(OSError):
            os.unlink(path)
            total -= size
            removed.append(Path(path))
    return removed
