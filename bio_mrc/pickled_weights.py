"""The tensor names and shapes of one pickled checkpoint file (``pytorch_model.bin``, or a shard its index names), read
as tensors only: ``torch.load`` with ``weights_only`` unpickles no code, and ``map_location="meta"`` (memory-mapped
where the file is a zip archive, as every ``torch.save`` since PyTorch 1.6 writes; an older file's data is read and
let go) keeps no tensor's data. Which files a folder's weights are is :mod:`bio_mrc.model_folder`'s to say."""

from __future__ import annotations

import zipfile
from pathlib import Path

from .errors import ModelFormatError


def pickled_shapes(folder: Path, name: str) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape by name in the folder's pickled file ``name``: a mapping of names to tensors, and nothing
    else; one :class:`ModelFormatError` naming the file where it cannot be read as tensors."""
    import torch

    path = folder / name
    try:
        state = torch.load(path, weights_only=True, mmap=zipfile.is_zipfile(path), map_location="meta")
    except Exception as err:  # noqa: BLE001 - torch raises UnpicklingError, RuntimeError and others for a foreign file
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise _fail(folder, name, f"cannot be read as tensors alone (a corrupt file, or one pickling more than "
                                  f"weights?): {first[:160]}") from None
    if not isinstance(state, dict) or not all(isinstance(value, torch.Tensor) for value in state.values()):
        raise _fail(folder, name, f"holds {type(state).__name__}, not a mapping of tensor names to tensors")
    return {str(key): tuple(tensor.shape) for key, tensor in state.items()}


def _fail(folder: Path, name: str, problem: str) -> ModelFormatError:
    return ModelFormatError(f"{name}: {problem}", str(folder))
