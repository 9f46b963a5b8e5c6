"""The models of a comparison: trained once per (options, seed, training questions), then reused."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

from ..training.train import TrainConfig, load_run_record, train_model
from ..types import content_hash
from .config import RunSpec
from .splits import Split


def model_key(train: TrainConfig, train_split: Split) -> str:
    """Same configuration on the same training questions -> same key -> the model is reused."""
    blob = json.dumps({"train": train.to_dict(), "questions": content_hash(train_split.examples)}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def obtain_model(run: RunSpec, seed: int, train_split: Split, models_dir: Path, progress: bool) -> tuple[Path, float, bool]:
    """Train the run, or reuse it when a model with the same key exists. Returns (dir, train seconds, reused)."""
    config = replace(run.train, seed=seed)
    model_dir = models_dir / f"{run.name}-seed{seed}-{model_key(config, train_split)}"
    record = load_run_record(model_dir)  # written last, so a model cut short by a crash is never reused
    if record is not None and record.get("train") == config.to_dict():
        return model_dir, float(record["seconds"]), True
    result = train_model(train_split.examples, config, model_dir, save_checkpoints=False, progress=progress)
    return model_dir, result.seconds, False
