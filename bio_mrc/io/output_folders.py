"""Output folders: staged and moved in whole, never over another folder's files, and kept apart from the inputs and
models read."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Iterable, Iterator

from ..errors import OutputError, argument
from .atomic import atomic_move_files
from .locks import written_alone
from .owned_paths import UnsafePathError, remove_tree
from .paths import check_name_lengths
from .write_errors import writes_named


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
