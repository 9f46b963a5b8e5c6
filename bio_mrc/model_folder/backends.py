"""Which backend runs a model folder (PyTorch weights or an ONNX export), and a warning where both lie side by side."""

from __future__ import annotations

import warnings
from pathlib import Path

from ..errors import ConfigError, InputWarning
from .files import ONNX_FILE, WEIGHT_FILES


def check_pytorch_folder(folder: Path, name: str | Path) -> None:
    """An export reads a PyTorch model: an ONNX export of one (no PyTorch weights, which would otherwise read as a
    partial copy) is refused, naming what to give instead."""
    if model_backend(folder) == "onnx":
        raise ConfigError(f"{name} is an ONNX export; export the PyTorch model it was made from")


BACKENDS = ("auto", "torch", "onnx")


def model_backend(model_dir: Path, backend: str = "auto") -> str:
    """``auto``: PyTorch when the folder has PyTorch weights (the reference), else ONNX when it holds
    an export's ``model.onnx``; ``torch`` and ``onnx`` choose."""
    if backend not in BACKENDS:
        raise ConfigError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend != "auto":
        return backend
    has_weights = any((model_dir / name).is_file() for name in WEIGHT_FILES)
    return "onnx" if not has_weights and (model_dir / ONNX_FILE).is_file() else "torch"


class ExportBesideWeightsWarning(InputWarning):
    """PyTorch weights and an ONNX export's ``model.onnx`` side by side in one folder: ``backend="auto"`` runs the
    weights."""


def warn_export_beside_weights(model_dir: Path, backend: str, name: str) -> None:
    """One :class:`ExportBesideWeightsWarning` where ``backend`` ``auto`` finds PyTorch weights beside a ``model.onnx``
    in ``model_dir`` (``name``: as given): the weights answer, and the export beside them, which may be another
    model's, never does; a loader asked for a backend by name runs that one unsaid."""
    if backend == "auto" and model_backend(model_dir) == "torch" and (model_dir / ONNX_FILE).is_file():
        warnings.warn(ExportBesideWeightsWarning(
            f"{name} holds PyTorch weights and an ONNX export ({ONNX_FILE}) side by side: the PyTorch weights answer; "
            "an export answers from a folder of its own (the one bio-mrc export writes)"), stacklevel=3)
