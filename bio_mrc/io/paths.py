"""Output paths checked before any work (names a file system takes, no folder or device in a file's place, a writable
folder on the way), names libraries reach as Python does, and whether a name is a glob pattern or a file's own."""

from __future__ import annotations

import errno
import glob
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..errors import ConfigError, OutputError


def home_expanded(path: Any) -> Any:
    """``path`` with a leading ``~`` read as the home folder, as the shell and the command line read it, so the
    library finds ``load_squad("~/dev.json")`` and never writes into a folder named ``~``; anything else as it is
    (a string stays a string, so errors name the path as given but for the home folder)."""
    if isinstance(path, str) and path.startswith("~"):
        return os.path.expanduser(path)
    if isinstance(path, os.PathLike) and os.fspath(path).startswith("~"):
        return Path(path).expanduser()
    return path


def names_a_pattern(path: str | None) -> bool:
    """Whether ``path`` is a glob pattern to match files by: it holds ``*``, ``?`` or ``[`` and no file or folder has
    its very name (a folder named ``a[1]b`` or ``a?b`` is that folder, which the pattern would miss or match with
    others)."""
    return bool(path) and glob.has_magic(path) and not os.path.lexists(path)  # lexists: False for a name no path can hold


def folders_escaped(pattern: str) -> str:
    """``pattern`` to match by, its deepest folder that is there by its very name taken as that folder
    (:func:`glob.escape`): ``exp [1]/models/joint-*`` matches in the folder ``exp [1]``, not in ``exp 1``."""
    path = Path(pattern)
    folder = next((parent for parent in path.parents if os.path.lexists(parent)), None)
    if folder is None or not glob.has_magic(str(folder)):
        return pattern
    return os.path.join(glob.escape(str(folder)), str(path.relative_to(folder)))


# A file name's longest length in bytes on common file systems (ext4, XFS, APFS, NTFS in UTF-16 units); an
# atomic write's temporary file adds ``_TEMPORARY_EXTRA`` bytes around the name (see _atomic_binary).
NAME_MAX = 255
_TEMPORARY_EXTRA = len(".." + "4194304" + ".12345678.tmp")


def check_name_lengths(path: str | Path) -> Path:
    """``path`` if each of its names fits a file system's limit, with room for an atomic write's temporary
    name; else an :class:`OutputError` before any work (the system would refuse it only when writing). An empty
    path names nothing (``Path("")`` would be the current folder)."""
    if not str(path).strip():
        raise OutputError("an empty path names no file or folder; give one", repr(str(path)))
    path = Path(path)
    for part in path.parts:
        size = len(os.fsencode(part))
        if size + (_TEMPORARY_EXTRA if part == path.name else 0) > NAME_MAX:
            room = NAME_MAX - (_TEMPORARY_EXTRA if part == path.name else 0)
            raise OutputError(f"the name {part[:40]!r}... is {size} bytes long; file names here may have at most "
                              f"{room} bytes: choose a shorter one", str(path)[:300])
    return path


_SPECIAL_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
                  (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def special_file_kind(path: str | Path) -> str | None:
    """What ``path`` is when it names neither a regular file nor a folder (a FIFO, a device, a socket; a link is
    followed), else None: reading one may wait or never end, and replacing one destroys it."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return next((kind for test, kind in _SPECIAL_KINDS if test(mode)), None)


def broken_link(path: str | Path) -> str | None:
    """What ``path`` is where it is a symbolic link that leads to nothing (its target missing, or a loop), else None:
    such a name is a local path gone wrong, not a hub id to look up."""
    try:
        if not os.path.islink(path):
            return None
        os.stat(path)
    except FileNotFoundError:
        return f"a broken symbolic link: its target {os.readlink(path)} does not exist"
    except OSError as err:
        return "a symbolic link that loops (it leads back to itself)" if err.errno == errno.ELOOP else None
    except ValueError:  # a NUL in the name: no link
        return None
    return None


def check_file_target(path: str | Path) -> Path:
    """``path`` if a file can be written there: it is no folder, no FIFO, device or socket, and no file stands where
    a folder on its way must be. Commands check their outputs with this before any work, so a long run never fails
    at its last step."""
    path = check_name_lengths(path)
    if path.is_dir():
        raise OutputError("a folder has this name; give a file name", str(path))
    if kind := special_file_kind(path):
        raise OutputError(f"this is {kind}, not a file; bio_mrc writes its outputs as new files, which would replace it: "
                          "give a file name", str(path))
    _check_nearest_folder(path)
    return path


def check_writable_folder(folder: str | Path, why: str) -> Path:
    """``folder`` if a file can be made in it (tried with a nameless temporary file, which works for any user,
    read-only mounts and access lists included); else an :class:`OutputError` saying ``why`` it must be."""
    folder = Path(folder)
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise OutputError(f"the folder is not writable ({error.strerror or error}), and {why}: copy it to a "
                          "writable place first", str(folder)) from None
    return folder


def check_folder_target(path: str | Path) -> Path:
    """``path`` if a folder can be made or used there: no file stands in its way."""
    path = check_name_lengths(path)
    if path.exists() and not path.is_dir():
        raise OutputError("a file has this name; give a folder", str(path))
    _check_nearest_folder(path, itself=True)  # an existing folder is written into, so it must be writable itself
    return path


def check_library_path(path: str | Path) -> Path:
    """``path`` if libraries that take a file name as UTF-8 text (tokenizers, ONNX Runtime) reach the same file
    Python does: under a locale whose file-name encoding is not UTF-8 (``LC_ALL=C``, Latin-1), a non-ASCII name is
    spelled otherwise, and such a library would end a save or load half done."""
    path = Path(path)
    if byte := non_utf8_byte(path):  # no locale spells it in UTF-8: only another name does
        raise ConfigError(f"{path}: this name holds the byte {byte}, which is not UTF-8 and which tokenizers and ONNX "
                          "Runtime cannot name a file by; give a name spelled in UTF-8")
    try:
        same = str(path).encode("utf-8") == os.fsencode(path)
    except UnicodeEncodeError:  # surrogates: bytes the locale's encoding could not decode
        same = False
    if not same:
        raise ConfigError(f"{path}: this name is not spelled in UTF-8 under the locale's file-name encoding "
                          f"({sys.getfilesystemencoding()}); set a UTF-8 locale, e.g. PYTHONUTF8=1")
    return path


def non_utf8_byte(path: str | Path) -> str | None:
    """The first byte of ``path``'s name, as the system spells it, that is no part of UTF-8 text (``\\xff``: a name
    written in Latin-1), or None. safetensors, tokenizers and ONNX Runtime open a file by a UTF-8 name alone."""
    spelled = os.fsencode(path)
    try:
        spelled.decode("utf-8")
    except UnicodeDecodeError as err:
        return f"\\x{spelled[err.start]:02x}"
    return None


def _check_nearest_folder(path: Path, itself: bool = False) -> None:
    """The nearest existing folder above ``path`` (or ``path`` itself, with ``itself``) is a writable folder, not a
    file."""
    # "." or "/" at the latest: Path(".") has no parents, and a relative path's last one is "."
    parent = next((p for p in (*([path] if itself else []), *path.parents) if p.exists()), Path("."))
    if not parent.is_dir():
        raise OutputError(f"{parent} is a file, so no folder can be made there for this output", str(path))
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{parent} is not writable", str(path))
