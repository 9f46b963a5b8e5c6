"""A comparison's prediction files and model records, kept aside while it scores and moved in once its report is in:
``OUTPUT/predictions/`` and each model's evaluation record and card change with the report they agree with, never
before it (a comparison that fails while it writes its report leaves the earlier report with the earlier files)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ..io import note_set_files, owned_path, remove_file, remove_tree, replace_all

PREDICTION_SET = "predictions"  # OUTPUT/predictions/.predictions-files.json lists the files a comparison wrote there
PREDICTION_FILE_SUFFIXES = (".json", ".nbest.json", ".na_probs.json")  # a cell's files (write_prediction_files)
STAGED_PREDICTIONS = ".predictions-staged"  # in OUTPUT/cells/: the cells' prediction files until the report is in


def prediction_file_names(prefix: str, decoding: str) -> list[str]:
    """The names of one cell's prediction files, ``<prefix><decoding><suffix>``."""
    return [f"{prefix}{decoding}{suffix}" for suffix in PREDICTION_FILE_SUFFIXES]


def staged_predictions(output_dir: Path) -> Path:
    """Where a comparison's cells keep their prediction files until :meth:`PendingOutputs.publish` moves them into
    ``OUTPUT/predictions``."""
    return Path(output_dir) / "cells" / STAGED_PREDICTIONS


def fresh_staging(output_dir: Path) -> Path:
    """:func:`staged_predictions`, emptied of what a comparison stopped before its report left there (made again)."""
    staging = staged_predictions(output_dir)
    remove_tree(staging, output_dir)
    staging.mkdir(parents=True)
    return staging


def cells_file_names(cells: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    """The prediction files' names of ``cells``, each a ``prefix`` and its decodings."""
    return [name for prefix, decodings in cells for decoding in decodings for name in prediction_file_names(prefix, decoding)]


def note_prediction_files(output_dir: Path, cells: Sequence[tuple[str, Sequence[str]]]) -> Path:
    """List the prediction files of ``cells`` (each a ``prefix`` and its decodings) as the comparison's own, in one
    update of the list, before they are written or moved in; returns ``OUTPUT/predictions``."""
    folder = Path(output_dir) / "predictions"
    folder.mkdir(parents=True, exist_ok=True)
    note_set_files(folder, PREDICTION_SET, cells_file_names(cells))
    return folder


@dataclass
class PendingOutputs:
    """What a comparison changes beside its report, done once the report is in: each scored cell's prediction files
    (``prefix`` and decodings), moved from :func:`staged_predictions` into ``OUTPUT/predictions``, and each model's
    evaluation record (a call)."""

    output_dir: Path
    cells: list[tuple[str, list[str]]] = field(default_factory=list)
    records: list[Callable[[], None]] = field(default_factory=list)

    def add(self, prefix: str, decodings: list[str], record: Callable[[], None] | None = None) -> None:
        self.cells.append((prefix, decodings))
        if record is not None:
            self.records.append(record)

    def publish(self) -> None:
        """Move the cells' prediction files in, together (every file written before the first rename; a Ctrl-C during
        the renames takes effect after the last), remove the files of their names they lack (an earlier sitting's
        ``.na_probs.json``), then keep each model's evaluation."""
        staging, names = staged_predictions(self.output_dir), cells_file_names(self.cells)
        folder = note_prediction_files(self.output_dir, self.cells)
        moved = [name for name in names if (staging / name).is_file()]
        replace_all([(owned_path(staging / name, self.output_dir), owned_path(folder / name, folder)) for name in moved], folder)
        for name in sorted(set(names) - set(moved)):
            remove_file(folder / name, folder)
        remove_tree(staging, self.output_dir)
        for record in self.records:
            record()
