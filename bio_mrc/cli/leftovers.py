"""What a library leaves behind that no command asked for, removed as the command ends."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from typing import Iterator

_TORCH_CACHE_MODULE = "torch._inductor.runtime.cache_dir_utils"  # names torch's compiler cache folder
_TORCH_CACHE_PREFIX = "torchinductor_"  # torch's compiler cache folder in the temporary folder: torchinductor_USER


@contextlib.contextmanager
def no_empty_torch_cache_folder() -> Iterator[None]:
    """transformers imports ``torch._dynamo``, which makes torch's compiler cache folder (``$TMPDIR/torchinductor_USER``)
    at import. The package compiles nothing, so a folder that this command made and left empty goes as it ends; a folder
    of the user's (``TORCHINDUCTOR_CACHE_DIR``), one there before, or one holding anything stays."""
    chosen = "TORCHINDUCTOR_CACHE_DIR" in os.environ  # torch sets it on import, so it is set here by the user alone
    there_before = set() if chosen else _torch_cache_folders()
    try:
        yield
    finally:
        cache_module = sys.modules.get(_TORCH_CACHE_MODULE)  # not imported: torch made no such folder
        if not chosen and cache_module is not None:
            folder = cache_module.default_cache_dir()
            if os.path.basename(folder) not in there_before:
                _remove_if_empty(folder)


def _torch_cache_folders() -> set[str]:
    try:
        with os.scandir(tempfile.gettempdir()) as entries:
            return {entry.name for entry in entries if entry.name.startswith(_TORCH_CACHE_PREFIX)}
    except OSError:  # no temporary folder to look in: torch makes none there either
        return set()


def _remove_if_empty(folder: str) -> None:
    try:
        os.rmdir(folder)  # removes an empty folder only
    except OSError:  # holds files, gone, or not ours to remove: it stays
        pass
