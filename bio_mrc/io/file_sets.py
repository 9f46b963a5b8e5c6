"""A set of files that replaces another set in a folder together: a write-ahead journal, each set's list of its files
and their digests."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from .atomic import atomic_write_json, fsync_dir
from .locks import sole_writer
from .owned_paths import UnsafePathError, owned_path, plain_name, remove_file, remove_tree, replace_file


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
