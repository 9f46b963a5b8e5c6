"""A comparison's training-loss curves: each run's loss against optimizer step, one line per seed (or fold),
read from the log history its model folders keep (``training_log.json``). The report's Markdown section;
:func:`bio_mrc.harness.plots.plot_training_loss` draws the figure."""

from __future__ import annotations

from typing import Any, Sequence

from ..training.run_records import load_training_log
from .results import Cell

TRAINING_LOSS_PLOT = "training loss"  # the key of the figure in the report's plots


def loss_curves(cells: Sequence[Cell]) -> dict[str, list[dict[str, Any]]] | None:
    """``{run: [{"seed", "fold", "model_dir", "steps", "loss"}, …]}``, one entry per model folder (``fold`` None
    unless cross-validation trained one model per fold: the cell's ``fold_model_dirs``), in report order;
    None when no model folder keeps a log history (folders that keep none, or folders gone)."""
    curves: dict[str, list[dict[str, Any]]] = {}
    seen = set()
    for cell in cells:
        folds = cell.fold_model_dirs is not None
        for fold, folder in enumerate(cell.fold_model_dirs if folds else [cell.model_dir]):
            if (cell.run, folder) in seen:
                continue
            seen.add((cell.run, folder))
            logged = [entry for entry in load_training_log(folder) or () if "loss" in entry and "step" in entry]
            if logged:
                curves.setdefault(cell.run, []).append({
                    "seed": cell.seed, "fold": fold if folds else None, "model_dir": str(folder),
                    "steps": [entry["step"] for entry in logged], "loss": [entry["loss"] for entry in logged]})
    return curves or None


def training_loss_section(plot: str | None) -> list[str]:
    """The report's Markdown: what the figure shows, and the figure."""
    if not plot:
        return []
    return ["", "## Training loss", "",
            "Each run's training loss against the optimizer step, one panel per run and one line per seed (or fold): "
            "the mean loss over each logging interval (`logging_steps`, 25 by default), from the log history each "
            "model folder keeps (`training_log.json`).", "", f"![{TRAINING_LOSS_PLOT}]({plot})"]


__all__ = ["TRAINING_LOSS_PLOT", "loss_curves", "training_loss_section"]
