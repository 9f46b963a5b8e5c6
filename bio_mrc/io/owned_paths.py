"""The one way bio_mrc deletes, renames or writes through a path: inside the output folder, never through a symbolic
link."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from ..errors import OutputError


class UnsafePathError(OutputError):
    """A delete, rename or write would touch a path bio_mrc does not own: outside its output folder, through a
    symbolic link, over an input or inside a model folder being read, or a name from a bookkeeping file that is no
    plain file name."""


def plain_name(name: object, source: str) -> str:
    """``name`` if it is a plain file name (no folder, no ``..``, not absolute); read from ``source``."""
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise UnsafePathError(f"{name!r} is not a plain file name; bio_mrc names only files inside this folder "
                              "(remove the file if bio_mrc did not write it)", source)
    return name


def owned_path(path: str | Path, root: str | Path) -> Path:
    """``path`` if it lies inside ``root`` (the output folder a command was given) with no symbolic link on the way
    below ``root``, its own name included: the only paths bio_mrc deletes, renames or replaces. ``root`` itself
    may be a link (the user chose it)."""
    path, root = Path(path), Path(root)
    below_root = path.parts[len(root.parts):] if path.parts[:len(root.parts)] == root.parts else path.parts
    if ".." in below_root:  # the root may be reached through '..' (an output folder such as ../models), nothing below it
        raise UnsafePathError(f"{path} goes up a folder with '..'; bio_mrc changes only files inside {root}", str(path))
    try:
        below = Path(os.path.abspath(path)).relative_to(os.path.abspath(root))
    except ValueError:
        raise UnsafePathError(f"{path} lies outside the output folder {root}; bio_mrc changes only files inside it",
                              str(path)) from None
    current = Path(root)
    for part in below.parts:
        current = current / part
        if current.is_symlink():
            raise UnsafePathError(f"{current} is a symbolic link, which bio_mrc did not make; it neither follows nor "
                                  "replaces it: remove the link or choose another output folder", str(root))
    return path


def remove_file(path: str | Path, root: str | Path) -> bool:
    """Delete the file ``path`` inside ``root`` (see :func:`owned_path`); False if there was none."""
    path = owned_path(path, root)
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def remove_tree(path: str | Path, root: str | Path) -> bool:
    """Delete the folder ``path`` inside ``root`` (see :func:`owned_path`) with what it holds (links inside are
    removed, never followed); False if there was none."""
    path = owned_path(path, root)
    if not path.exists():
        return False
    if not path.is_dir():
        raise UnsafePathError(f"{path} is a file where bio_mrc keeps a folder of its own; remove it", str(root))
    shutil.rmtree(path)
    return True


def replace_file(source: str | Path, target: str | Path, root: str | Path) -> Path:
    """Rename ``source`` over ``target`` (``os.replace``), both inside ``root`` (see :func:`owned_path`); a file
    never replaces a folder."""
    source, target = owned_path(source, root), owned_path(target, root)
    if target.is_dir() and not source.is_dir():
        raise UnsafePathError(f"{target} is a folder, which bio_mrc does not replace with a file; move it away", str(root))
    os.replace(source, target)
    return Path(target)


def open_no_follow(path: str | Path, mode: str, encoding: str = "utf-8") -> Any:
    """``open(path, mode)`` for ``"w"``, ``"a"``, ``"r+b"`` or ``"a+b"`` that refuses a symbolic link at ``path`` instead of
    writing through it."""
    flags = {"w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND, "r+b": os.O_RDWR,
             "a+b": os.O_RDWR | os.O_CREAT | os.O_APPEND}[mode]
    try:
        descriptor = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0), 0o666)
    except OSError as err:
        if Path(path).is_symlink():
            raise UnsafePathError(f"{path} is a symbolic link; bio_mrc writes no file through a link (remove it or "
                                  "choose another output)", str(path)) from None
        raise err
    if "b" in mode:
        return os.fdopen(descriptor, mode)
    return os.fdopen(descriptor, mode, encoding=encoding, newline="")
