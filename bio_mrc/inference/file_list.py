"""The list of the decoding files the latest ``predict`` run into an output wrote (``PREDS.answers.files.json``): each
file's name and SHA-256, so that a rerun with other decodings removes the earlier run's files it does not write, and
no other file.

The list is written with the run's files and renamed in with them (:func:`~bio_mrc.inference.files.write_files_from_stream`),
naming the earlier run's files the new run lacks too; once the new files are in, those are removed where they still
hold what the earlier run wrote (a file changed since is the user's), and the list is written again naming the new
files alone. A run stopped before its files move in leaves the earlier files and list as they were; one stopped
after leaves the earlier files listed, for the next run to remove. A run that would write, or rename into place, a file
another output's list in the folder names (``p.json`` of two decodings writes ``p.span.json``, the official file of the
output ``p.span.json``), or a comparison's list of a set of its files (``.report-files.json``), is refused before any
work (:func:`check_files_apart`); a file two lists name all the same (a folder two runs wrote before that refusal)
is the other output's as well, and stays.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Collection, Iterable, Iterator

from ..errors import DataFormatError, argument
from ..io import UnsafePathError, atomic_write_text, file_sha256, home_expanded, remove_file, set_entries
from ..json_syntax import json_value
from .files import FILE_LIST_SUFFIX, PARTIAL_RUN_SUFFIX, PARTIAL_SUFFIX, RUN_SUFFIX, STREAM_SUFFIX, file_list_path, file_list_text, side_file

_SHA256 = re.compile(r"[0-9a-f]{64}")
_BOOKKEEPING = (STREAM_SUFFIX, RUN_SUFFIX, PARTIAL_SUFFIX, PARTIAL_RUN_SUFFIX, FILE_LIST_SUFFIX)


def read_file_list(output: str | Path, inputs: Iterable[str | os.PathLike | None] = ()) -> dict[str, str]:
    """The files the list beside ``output`` names, ``{name: SHA-256}`` (``{}`` where there is none); a list ``predict``
    did not write (not a JSON object of the names of ``output``'s decoding files and their SHA-256, or one naming a
    file of ``inputs``, the data the run reads) is refused in one line naming it, before any work."""
    output = Path(home_expanded(output))
    path = file_list_path(output)
    if path.is_symlink():  # predict renames its list in: a link is none of its
        raise _not_a_list("it is a symbolic link", path)
    if not path.exists():
        return {}
    try:
        listed = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:  # RecursionError: nested past the parser's stack
        raise _not_a_list(f"it does not read as JSON: {error}", path) from None
    if not isinstance(listed, dict):
        raise _not_a_list(f"it holds {json_value(listed)}, not an object of file names and their SHA-256", path)
    for name, digest in listed.items():
        if not _decoding_file_name(output, name):
            raise _not_a_list(f"it names {json_value(name)}, no file predict writes for {output.name}", path)
        if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
            raise _not_a_list(f"it gives {json_value(name)} the digest {json_value(digest)}, not a SHA-256 in hex", path)
    if data := next((name for name in listed if _is_one_of(path.parent / name, inputs)), None):
        raise _not_a_list(f"it names {json_value(data)}, the data this run reads", path)
    return listed


def _is_one_of(path: Path, inputs: Iterable[str | os.PathLike | None]) -> bool:
    """Whether ``path`` is the very file of one of ``inputs`` (another name of it, a link, too)."""
    given = [str(item) for item in inputs if item is not None and str(item) != "-"]
    try:
        return path.exists() and any(os.path.exists(item) and os.path.samefile(path, item) for item in given)
    except (OSError, ValueError):  # a name too long, or holding a NUL: no file of the data
        return False


def _not_a_list(problem: str, path: Path) -> DataFormatError:
    return DataFormatError(f"this is no list of the files bio-mrc predict wrote ({problem}); remove it (the files it names stay as they are)", source=str(path))


def _decoding_file_name(output: Path, name: str) -> bool:
    """Whether ``name`` may be one of ``output``'s decoding files (``preds.json``, ``preds.<...>``): a plain file name,
    ``output``'s own or one that begins with its stem and a dot, and no answers stream, record or list, its own or
    another output's (``p.span.answers.jsonl`` is the output ``p.span.json``'s)."""
    if "/" in name or "\\" in name or "\0" in name or name in (".", ".."):
        return False
    stem = side_file(output, "").name
    return name == output.name or (name.startswith(stem + ".") and not name.endswith(_BOOKKEEPING))


def remove_earlier_files(output: str | Path, written: Collection[str]) -> list[str]:
    """Once a run's decoding files (the names ``written``) and its list are in: remove each other file the list names
    (the earlier run's), where it is still a plain file holding what that run wrote, then list ``written`` alone.
    Returns the names removed."""
    path = file_list_path(Path(home_expanded(output)))
    listed = read_file_list(output)
    earlier = {name: digest for name, digest in listed.items() if name not in written}
    if not earlier:
        return []
    folder, others = path.parent, _listed_by_others(path)
    removed = [name for name, digest in earlier.items() if name not in others and _holds(folder / name, digest) and remove_file(folder / name, folder)]
    atomic_write_text(path, file_list_text({name: digest for name, digest in listed.items() if name in written}))
    return removed


def _holds(path: Path, digest: str) -> bool:
    """Whether ``path`` is a plain file (never one reached through a link) whose SHA-256 is ``digest``."""
    return not path.is_symlink() and path.is_file() and file_sha256(path) == digest


def check_files_apart(output: str | Path, files: Iterable[str | os.PathLike]) -> None:
    """Before any work: refuse, in one line naming the file and the list, where a list of another output's files in
    ``output``'s folder (another ``predict`` output's, or a comparison's list of a set of its files) names one of
    ``files``, those a run into ``output`` writes or renames into place there: it would write over that output's file
    (and a rerun of that output over this one's). ``output``'s own list is this output's: a rerun is never refused."""
    own = file_list_path(Path(home_expanded(output)))
    names = [Path(file).name for file in files]
    for other, listed in _other_lists(own):
        if clash := next((name for name in names if name in listed), None):
            raise UnsafePathError(
                f"this run writes {clash}, a file of another output in this folder, whose list {other.name} names it; give {argument('output')} another name",
                str(other),
            )


def _listed_by_others(path: Path) -> set[str]:
    """The names the lists of the other outputs in the folder of the list ``path`` name (a file two outputs wrote alike
    stays while another names it)."""
    return {name for _, listed in _other_lists(path) for name in listed}


_SET_LIST = set_entries("*")[2]  # a comparison's list of a set of its files in their folder: .report-files.json


def _other_lists(path: Path) -> Iterator[tuple[Path, set[str]]]:
    """Each list of files in the folder of the list ``path`` but ``path`` itself (other ``predict`` outputs', and a
    comparison's sets'), and the names it holds: an object's keys, or an array's names (a set's older list); a file
    that does not read as a list, or is a link, names none."""
    for other in sorted({*path.parent.glob("*" + FILE_LIST_SUFFIX), *path.parent.glob(_SET_LIST)}):
        if other.name == path.name or other.is_symlink() or not other.is_file():
            continue
        try:
            listed = json.loads(other.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(listed, (dict, list)):
            yield other, {name for name in listed if isinstance(name, str)}
