"""A trained model folder's records, read back: its run record (``bio_mrc_run.json``) and Trainer's log history
(``training_log.json``). Light on purpose (no torch, no transformers): a report rendered from a finished comparison's
records, and ``bio-mrc train`` refusing a finished model, read them without the training stack that writes them
(:mod:`.saving`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..data.json_reader import read_json
from ..errors import DataFormatError
from ..model_folder import TRAINING_LOG_FILE
from ..model_records import RUN_FILE


def load_training_log(model_dir: str | Path) -> list[dict[str, Any]] | None:
    """The log history a model folder keeps (one dict per logged step: loss, learning_rate, eval_*, step,
    epoch), or None for a folder that keeps none."""
    path = Path(model_dir) / TRAINING_LOG_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def load_run_record(model_dir: str | Path) -> dict[str, Any] | None:
    """The run record of a complete model in ``model_dir``, or None (no model, or one still being saved). One that
    cannot be read (cut short, not UTF-8, a folder, no JSON object) raises a DataFormatError naming it."""
    path = Path(model_dir) / RUN_FILE
    if not path.exists():
        return None
    record = read_json(path)
    if not isinstance(record, dict):
        raise DataFormatError(f"a run record is a JSON object, got a JSON {type(record).__name__}", source=str(path))
    return record


__all__ = ["load_run_record", "load_training_log"]
