"""Atomic file writes: a file either keeps its old content or has its complete new content, never a part.

Each write goes to a temporary file in the target's own folder (so the rename stays on one file
system), is flushed and fsynced, and is then renamed over the target with ``os.replace``, which
POSIX and Windows both make atomic. A crash leaves at most a stray ``.NAME.*.tmp`` file behind.
:func:`printable_json` and :func:`printable_line` are JSON and text for a terminal: every control character escaped.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import stat
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

from .errors import ConfigError, OutputError, argument, as_keywords

T = TypeVar("T")

__all__ = ["check_name_lengths", "check_file_target", "check_folder_target", "check_writable_folder",
           "writes_named", "atomic_write_text", "atomic_write_bytes", "atomic_write_json",
           "atomic_writer", "atomic_writers", "atomic_move_files", "replace_all",
           "fsync_dir", "file_sha256", "remove_temporaries_of", "usual_file_mode", "finish_file_set", "check_set_files", "note_set_files", "replaced_together",
           "UnsafePathError", "owned_path", "signals_held", "updated_alone", "remove_file", "remove_tree", "replace_file", "plain_name", "check_outputs_apart",
           "open_no_follow", "sole_process_in", "written_alone", "FolderBusyError",
           "sole_writer", "special_file_kind", "broken_link", "printable_json", "printable_line", "home_expanded",
           "json_with_controls_escaped", "files_state", "read_in_one_state", "READ_TRIES"]


def home_expanded(path: Any) -> Any:
    """``path`` with a leading ``~`` read as the home folder, as the shell and the command line read it, so the
    library finds ``load_squad("~/dev.json")`` and never writes into a folder named ``~``; anything else as it is
    (a string stays a string, so errors name the path as given but for the home folder)."""
    if isinstance(path, str) and path.startswith("~"):
        return os.path.expanduser(path)
    if isinstance(path, os.PathLike) and os.fspath(path).startswith("~"):
        return Path(path).expanduser()
    return path


# torch's checkpoint writer reports a full disk as a RuntimeError without the errno
TORCH_WRITE_FAILURES = ("file write failed", "inline_container", "No space left on device")


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


_BIDI_CONTROLS = "\u202a-\u202e\u2066-\u2069"  # embeddings, overrides, isolates: "evil\u202egnp.exe" shows as "evilexe.png"
_C1_CONTROLS = re.compile(f"[\x7f-\x9f{_BIDI_CONTROLS}\u2028\u2029]")  # DEL, the 8-bit controls (U+009B begins a terminal
# escape, as ESC [ does), the bidirectional overrides, which reorder what a terminal shows after them, and U+2028 and
# U+2029, where str.splitlines(), JavaScript before ES2019 and many log tools end a line


def printable_json(value: Any, **json_dumps_kwargs: Any) -> str:
    """``value`` as JSON that keeps a text's letters as they are (``ensure_ascii=False``) and escapes every control
    character, DEL and U+0080-U+009F included, which ``json.dumps`` leaves as they are, and the bidirectional overrides
    (U+202E), and U+2028 and U+2029: the same JSON value, yet an answer or question id cut from someone's document can
    neither clear nor retitle the terminal it is printed to, nor show the text after it reversed, nor split a JSON
    Lines record for a reader that ends lines at U+2028."""
    return json_with_controls_escaped(json.dumps(value, ensure_ascii=False, **json_dumps_kwargs))


def json_with_controls_escaped(text: str) -> str:
    """JSON ``text`` (``json.dumps``', pydantic's) with DEL, U+0080-U+009F, the bidirectional overrides and isolates
    (U+202A-U+202E, U+2066-U+2069) and the line and paragraph separators (U+2028, U+2029), which JSON writers leave as
    they are, escaped as ``\\u0085``: the same JSON value (such a character stands only inside a string)."""
    return _C1_CONTROLS.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


_LINE_CONTROLS = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_BIDI_CONTROLS}]")  # every control character but the tab


def printable_line(text: Any) -> str:
    """``text`` (a message naming a file) as one line for a terminal: each control character as Python writes it in
    a string (``\\x1b``, ``\\n``, ``\\u202e``), so a file name holding ``\\x1b[2J`` can neither clear the screen nor break
    the line, and one holding U+202E cannot show its end reversed (``evil\\u202egnp.exe`` as ``evilexe.png``). An
    argument a message names (:func:`~bio_mrc.errors.argument`) and no door rendered reads as its keyword."""
    return _LINE_CONTROLS.sub(lambda match: repr(match.group())[1:-1], as_keywords(str(text)))


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
def atomic_writers(paths: Sequence[str | Path], encoding: str = "utf-8") -> Iterator[list[Any]]:
    """Text handles whose contents replace ``paths`` (files that agree only together, in one folder) when the block
    ends without an error: every file is written and fsynced before the first rename (:func:`replace_all`), so a
    failure while writing leaves the old files, all of them."""
    paths = [Path(path) for path in paths]
    with writes_named(paths[0].parent), contextlib.ExitStack() as stack:
        raws = [stack.enter_context(_staged_binary(path)) for path in paths]
        handles = [stack.enter_context(open(raw.fileno(), "w", encoding=encoding, closefd=False, newline="")) for raw, _ in raws]
        yield handles
        for handle, (raw, _) in zip(handles, raws):
            handle.close()  # flushed into the file, which stays open
            os.fsync(raw.fileno())
            raw.close()  # closed before the rename, which Windows needs
        replace_all([(temporary, path) for (_, temporary), path in zip(raws, paths)], paths[0].parent)


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


SET_MANIFEST = ".files.json"  # in a set's staging folder: the names of the set's files and their SHA-256


def set_entries(name: str) -> tuple[str, str, str]:
    """The names of the set ``name``'s bookkeeping in its folder: the folder the set is written in, the same folder
    once the set is complete, and the list of the set in place."""
    return f".{name}-writing", f".{name}-complete", f".{name}-files.json"


def _set_folders(folder: Path, name: str) -> tuple[Path, Path, Path]:
    """:func:`set_entries` in ``folder``."""
    writing, complete, in_place = (folder / entry for entry in set_entries(name))
    return writing, complete, in_place


@contextlib.contextmanager
def replaced_together(folder: str | Path, name: str) -> Iterator[Path]:
    """Yield a staging folder; the files written there replace the set ``name`` in ``folder`` together.

    A write-ahead journal: the new set is written and fsynced whole with the list of its files, then its
    folder is renamed to mark it complete (the commit point), then its files are renamed into ``folder``.
    A crash before the commit leaves the old set; a crash after it is finished by :func:`finish_file_set`,
    which the next writer runs first. Files of the old set that the new one lacks are removed when they
    still hold what the set wrote; no other file is.
    Another process writing or finishing a set in ``folder`` (a second comparison into the same folder) waits for
    this one to end: it would remove this staging folder, or write into it, and a mixture of the two sets would move in.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with _set_alone(folder):
        _finish_file_set(folder, name)
        writing, complete, _ = _set_folders(folder, name)
        remove_tree(writing, folder)
        writing.mkdir(parents=True)
        try:
            yield writing
            files = {}
            for file in sorted(writing.iterdir()):
                with open(file, "rb") as handle:
                    os.fsync(handle.fileno())
                files[plain_name(file.name, str(writing))] = file_sha256(file)
            atomic_write_json(writing / SET_MANIFEST, files)
        except BaseException:
            remove_tree(writing, folder)
            raise
        replace_file(writing, complete, folder)
        fsync_dir(folder)
        _finish_file_set(folder, name)


SETS_LOCK = ".sets.lock"  # in a folder of sets: their lock, a file apart from the folder's own (written_alone)


def _set_alone(folder: Path) -> Any:
    """The lock of the sets written in ``folder``, waited for: :data:`SETS_LOCK` in the folder's real path (it may be
    a link the user chose). Not the folder itself, which ``tune`` or ``export`` writing there holds
    (:func:`written_alone`): a set then neither waits on them nor, taken inside such a hold, on its own process."""
    return sole_writer(Path(os.path.realpath(folder)) / SETS_LOCK, "a set of files", wait=True)


def finish_file_set(folder: str | Path, name: str) -> None:
    """Complete an interrupted :func:`replaced_together` (it may run any number of times): move a complete
    set in, drop an incomplete one; a set another process is writing now is waited for, never removed."""
    folder = Path(folder)
    writing, complete, _ = _owned_set_folders(folder, name)
    if not (os.path.lexists(writing) or os.path.lexists(complete)):  # none being written, none to move in: no lock taken
        return
    with _set_alone(folder):
        _finish_file_set(folder, name)


def _finish_file_set(folder: Path, name: str) -> None:
    """:func:`finish_file_set` with the folder's sets held. Its bookkeeping is read as untrusted input: only plain file
    names inside ``folder`` are moved or removed, a link in their place is refused, and an old file is removed only
    while it holds the content the set wrote."""
    writing, complete, in_place = _owned_set_folders(folder, name)
    remove_tree(writing, folder)
    if not complete.is_dir():
        return
    new = _read_file_list(complete / SET_MANIFEST, required=True)
    old = _read_file_list(in_place, required=False)
    _refuse_unlisted(folder, [file for file in new if (complete / file).is_file()], old, in_place)
    for file in new:
        source = complete / file
        if source.is_symlink() or (source.exists() and not source.is_file()):
            raise UnsafePathError(f"{file!r} in {complete} is no plain file, so bio_mrc did not write it; remove that folder",
                                  str(complete / SET_MANIFEST))
        if source.is_file():  # else moved in before a kill
            replace_file(source, folder / file, folder)
    fsync_dir(folder)
    new = {file: digest or _sha256_or_none(folder / file) for file, digest in new.items()}
    for stale in set(old) - set(new):  # files the old set wrote and the new one does not, unchanged since
        if old[stale] is not None and _sha256_or_none(folder / stale) == old[stale]:
            remove_file(folder / stale, folder)
    atomic_write_json(in_place, new)
    remove_tree(complete, folder)
    fsync_dir(folder)


def _owned_set_folders(folder: Path, name: str) -> tuple[Path, Path, Path]:
    """:func:`_set_folders`, none of them a link, so the journal never reaches outside the folder."""
    paths = _set_folders(folder, name)
    for bookkeeping in paths:
        owned_path(bookkeeping, folder)
    return paths


def check_set_files(folder: str | Path, name: str, files: Sequence[str]) -> None:
    """Before any work: refuse when one of ``files`` lies in ``folder`` but the set ``name`` did not write it (it is
    not in the set's list), as writing the set would replace it."""
    in_place = _set_folders(Path(folder), name)[2]
    _refuse_unlisted(Path(folder), files, _read_file_list(in_place, required=False), in_place)


def note_set_files(folder: str | Path, name: str, files: Sequence[str]) -> None:
    """Add ``files`` to the list of the set ``name`` in ``folder``, for a set written file by file in place: each is
    listed before it is written (a kill between the two leaves it listed), so :func:`check_set_files` tells them
    from a file of the user's at the same name. Processes adding names at once (comparisons into one folder) keep
    each other's."""
    in_place = _set_folders(Path(folder), name)[2]
    if set(files) <= set(_read_file_list(in_place, required=False)):  # listed already: no lock, no write
        return
    with _set_alone(Path(folder)):  # read and rewritten alone: another process's names, added meanwhile, are kept
        listed = _read_file_list(in_place, required=False)
        new = {plain_name(file, str(in_place)): None for file in files if file not in listed}
        if new:
            atomic_write_json(in_place, {**listed, **new})


def _refuse_unlisted(folder: Path, files: Sequence[str], old: Mapping[str, str | None], in_place: Path) -> None:
    """UnsafePathError naming the first of ``files`` that is a plain file in ``folder`` and that the list ``old`` (of
    ``in_place``) lacks."""
    for file in files:
        path = folder / file
        if file not in old and path.is_file() and not path.is_symlink():  # a link or a folder is refused where it is replaced
            raise UnsafePathError(f"{path} was not written by bio_mrc (it is not in {in_place.name}), so it is not "
                                  "replaced: move it or choose another output folder", str(folder))


def _read_file_list(path: Path, required: bool) -> dict[str, str | None]:
    """The set's files named in ``path``: ``{name: sha256}``, or a plain list of names (older sets, no digests)."""
    owned_path(path, path.parent)
    if not path.is_file():
        if required:
            raise UnsafePathError(f"{path.parent} has no list of its files, so bio_mrc did not write it; remove it or "
                                  "choose another output folder", str(path.parent))
        return {}
    try:
        listed = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise UnsafePathError(f"not a list of file names bio_mrc wrote ({type(err).__name__}); remove it", str(path)) from None
    if isinstance(listed, list):
        listed = dict.fromkeys(listed)
    if not isinstance(listed, dict) or not all(digest is None or isinstance(digest, str) for digest in listed.values()):
        raise UnsafePathError("not a list of file names bio_mrc wrote; remove it", str(path))
    return {plain_name(file, str(path)): digest for file, digest in listed.items()}


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of the file at ``path``, as hex, read in blocks (never whole in memory)."""
    digest = hashlib.sha256()  # read in blocks: hashlib.file_digest is Python 3.11's, and the package runs on 3.10
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _sha256_or_none(path: Path) -> str | None:
    """The digest of a plain file (never one reached through a link), else None."""
    if path.is_symlink() or not path.is_file():
        return None
    return file_sha256(path)


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


def prepare_output(output_dir: Path, overwrite: bool, staging_name: str) -> Path:
    """A fresh staging folder ``staging_name`` inside ``output_dir`` (which the caller has checked is not the folder it
    reads); never over another folder's files unless ``overwrite``, never through a link."""
    check_folder_free(output_dir, overwrite, staging_name)
    staging = output_dir / staging_name
    remove_tree(staging, output_dir)
    staging.mkdir(parents=True)
    return staging


def check_folder_free(output_dir: Path, overwrite: bool, staging_name: str) -> None:
    """What :func:`prepare_output` refuses, alone: a writer checks it before it loads a model, as well as when it
    stages the files."""
    if output_dir.is_file():
        raise OutputError("a file has this name; give a folder", str(output_dir))
    existing = [p.name for p in output_dir.iterdir() if p.name != staging_name] if output_dir.is_dir() else []
    links = sorted(name for name in existing if (output_dir / name).is_symlink())
    if links:
        raise UnsafePathError(f"{output_dir / links[0]} is a symbolic link, which bio_mrc neither follows nor replaces; "
                              "remove it or choose another folder", str(output_dir))
    if existing and not overwrite:
        shown = ", ".join(sorted(existing)[:4])
        raise OutputError(f"the folder is not empty ({shown}); choose another folder or pass {argument('overwrite', True)}", str(output_dir))


@contextlib.contextmanager
def staged_folder(output_dir: Path, overwrite: bool, staging_name: str) -> Iterator[Path]:
    """A staging folder inside ``output_dir`` (:func:`prepare_output`) whose files move into ``output_dir``
    once all are written; a full disk is one error naming the folder; a failure leaves neither the staging folder nor
    the folders made for the output (``output_dir`` and those above it) where they hold nothing. The folder is held
    (:func:`written_alone`) for the block: a second writer would empty this staging folder under the first."""
    with written_alone(output_dir):
        staging = prepare_output(output_dir, overwrite, staging_name)
        try:
            with writes_named(output_dir):
                yield staging
                atomic_move_files(staging, output_dir)
        finally:
            remove_tree(staging, output_dir)


def check_outputs_apart(outputs: Iterable[str | Path], inputs: Iterable[str | Path] = (),
                        model_dirs: Iterable[str | Path] = ()) -> None:
    """Before any work: no output file is a symbolic link (an output folder may be one: the user chose where it
    points), the same file as an input, or inside (or the same as) a model folder being read, or a hard link to one of
    its files."""
    inputs = [Path(p) for p in inputs if p is not None and str(p) != "-" and Path(p).exists()]
    folders = [Path(p) for p in model_dirs if p is not None and Path(p).is_dir()]
    for output in (check_name_lengths(p) for p in outputs if p is not None and str(p) != "-"):
        if output.is_symlink() and not output.is_dir():
            raise UnsafePathError(f"{output} is a symbolic link; bio_mrc writes no output through a link (remove it or "
                                  "choose another output)", str(output))
        real = Path(os.path.realpath(output))
        for given in inputs:
            if real == Path(os.path.realpath(given)) or (output.exists() and os.path.samefile(output, given)):
                raise UnsafePathError(f"this output is the input {given}, which it would replace; choose another output",
                                      str(output))
        for folder in folders:
            inside = Path(os.path.realpath(folder))
            if real == inside or inside in real.parents:
                raise UnsafePathError(f"this output lies in the model folder {folder}, which is being read; choose an "
                                      "output outside it", str(output))
            if linked := _hard_link_into(output, inside):
                raise UnsafePathError(f"this output is a hard link: it is the file {Path(folder) / linked} of the model "
                                      "folder, which is being read and which writing it would change; remove the link "
                                      "or choose another output", str(output))


def _hard_link_into(output: Path, folder: Path) -> Path | None:
    """The file of ``folder`` that ``output`` is another name of (a hard link: an output written in place, such as an
    answers stream, would change it), relative to ``folder``; None where it is none or ``output`` has one name."""
    try:
        found = os.stat(output)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(found.st_mode) or found.st_nlink < 2:
        return None
    for root, _, files in os.walk(folder):  # only for an output of several names: a model folder holds few files
        for name in files:
            with contextlib.suppress(OSError):  # a hub snapshot's files are links to its blobs: followed
                if os.path.samestat(found, os.stat(Path(root) / name)):
                    return (Path(root) / name).relative_to(folder)
    return None
