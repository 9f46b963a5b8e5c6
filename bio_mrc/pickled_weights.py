"""The tensor names and shapes of a pickled checkpoint (``pytorch_model.bin``, or the shards its index names), read
as tensors only: ``torch.load`` with ``weights_only`` unpickles no code, and ``map_location="meta"`` (memory-mapped
where the file is a zip archive, as every ``torch.save`` since PyTorch 1.6 writes; an older file's data is read and
let go) keeps no tensor's data."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from .errors import ModelFormatError

PICKLED_FILE, PICKLED_INDEX = "pytorch_model.bin", "pytorch_model.bin.index.json"
MAX_INDEX_BYTES = 16 * 2**20  # as any other JSON file of a model folder


def pickled_shapes(folder: Path) -> tuple[str, dict[str, tuple[int, ...]]]:
    """(the file named in errors, every tensor's shape by name) of the folder's pickled weights: the one file, or the
    shards of its index; one :class:`ModelFormatError` naming the file where one cannot be read as tensors."""
    if (folder / PICKLED_FILE).is_file():
        return PICKLED_FILE, _file_shapes(folder, PICKLED_FILE)
    shapes: dict[str, tuple[int, ...]] = {}
    for shard in _shards(folder):
        shapes.update(_file_shapes(folder, shard))
    return PICKLED_INDEX, shapes


def _shards(folder: Path) -> list[str]:
    """The shard files ``pytorch_model.bin.index.json``'s ``weight_map`` names, each inside the folder."""
    path = folder / PICKLED_INDEX
    try:
        if path.stat().st_size > MAX_INDEX_BYTES:
            raise ValueError(f"{path.stat().st_size:,} bytes, more than {MAX_INDEX_BYTES:,}")
        weight_map = json.loads(path.read_bytes().decode("utf-8-sig")).get("weight_map")
    except (OSError, UnicodeDecodeError, ValueError, RecursionError, AttributeError) as err:
        raise _fail(folder, PICKLED_INDEX, f"cannot be read as a weights index ({str(err)[:120]})") from None
    if not isinstance(weight_map, dict) or not all(isinstance(shard, str) for shard in weight_map.values()):
        raise _fail(folder, PICKLED_INDEX, "has no 'weight_map' of tensor names to shard files")
    shards = sorted(set(weight_map.values()))
    if outside := [shard for shard in shards if Path(shard).name != shard]:
        raise _fail(folder, PICKLED_INDEX, f"names a shard outside the folder: {outside[0]!r}")
    if missing := [shard for shard in shards if not (folder / shard).is_file()]:
        raise _fail(folder, PICKLED_INDEX, f"names a shard that is missing: {missing[0]!r}")
    return shards


def _file_shapes(folder: Path, name: str) -> dict[str, tuple[int, ...]]:
    """One pickled file's tensors' shapes: a mapping of names to tensors, and nothing else."""
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
