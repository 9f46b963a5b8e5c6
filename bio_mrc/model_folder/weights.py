"""A model folder's weights: safetensors headers and index maps, pickled encoder weights, and the shapes the model
builds on the meta device, which they must fit."""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from ..json_syntax import json_value
from ..pickled_weights import pickled_shapes
from ..plurals import counted, number_form
from .builds import meta_build
from .config_reading import is_plain_int, read_json_object
from .files import ONNX_FILE, PICKLED_WEIGHTS, SAFETENSORS_FILE, SAFETENSORS_INDEX, fail


# Trained encoders' weights stay within a few hundred (all-MiniLM-L6-v2: 7.9); a flipped exponent bit makes ~1e38.
MAX_WEIGHT_MAGNITUDE = 1e6

MAX_SAFETENSORS_HEADER = 100 * 2**20  # safetensors' own limit

DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1,
               "U16": 2, "U32": 4, "U64": 8, "F8_E4M3": 1, "F8_E5M2": 1}
FLOAT_DTYPES = frozenset({"F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2"})


def weight_shapes(folder: Path) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape by name, from the safetensors headers (one file or the shards of an index)."""
    check_weights_present(folder)
    if not (folder / SAFETENSORS_INDEX).is_file():
        return safetensors_shapes(folder, SAFETENSORS_FILE)
    weight_map = _index_weight_map(folder, SAFETENSORS_INDEX)
    shapes: dict[str, tuple[int, ...]] = {}
    for shard in sorted(set(weight_map.values())):
        shapes.update(safetensors_shapes(folder, shard))
    if missing := sorted(set(weight_map) - set(shapes)):
        raise fail(folder, SAFETENSORS_INDEX, f"names tensors no shard holds: {', '.join(missing[:3])}")
    return shapes


def check_weights_present(folder: Path) -> None:
    """``model.safetensors`` or its index is there: pickled weights and an ONNX export alone are named as such."""
    if not (folder / SAFETENSORS_FILE).is_file() and not (folder / SAFETENSORS_INDEX).is_file():
        pickled = [name for name in PICKLED_WEIGHTS if (folder / name).is_file()]
        if pickled:
            raise fail(folder, pickled[0], "pickled weights are never loaded (unpickling can run code); "
                                           "save the weights as model.safetensors")
        if (folder / ONNX_FILE).is_file():
            raise fail(folder, None, f"an ONNX export ({ONNX_FILE}), which holds no PyTorch weights: give the PyTorch "
                                     "model it was made from")
        raise fail(folder, None, f"no weights ({SAFETENSORS_FILE}): an unfinished or partial copy?")


def _pickled_weight_shapes(folder: Path) -> tuple[str, dict[str, tuple[int, ...]]]:
    """(the file named in errors, every tensor's shape by name) of an encoder folder's pickled weights: the one file,
    or the shards of its index, each read as tensors only (:mod:`bio_mrc.pickled_weights`)."""
    file, shards = pickled_weight_files(folder)
    shapes: dict[str, tuple[int, ...]] = {}
    for shard in shards:
        shapes.update(pickled_shapes(folder, shard))
    return file, shapes


def pickled_weight_files(folder: Path) -> tuple[str, list[str]]:
    """(the file named in errors, the files holding the tensors) of an encoder folder's pickled weights: the one file,
    or the shards its index names, each there in the folder; read without torch, so ``train`` refuses a broken index
    at once."""
    single, index = PICKLED_WEIGHTS
    if (folder / single).is_file():
        return single, [single]
    shards = sorted(set(_index_weight_map(folder, index).values()))
    if missing := [shard for shard in shards if not (folder / shard).is_file()]:
        raise fail(folder, index, f"names a shard that is missing: {json_value(missing[0])}")
    return index, shards


def _index_weight_map(folder: Path, index: str) -> dict[str, str]:
    """A sharded checkpoint's ``weight_map`` (tensor name -> shard file), each shard a file of the folder itself."""
    weight_map = read_json_object(folder, index).get("weight_map")
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise fail(folder, index, "has no 'weight_map' of tensor names to shard files")
    if outside := sorted(shard for shard in set(weight_map.values()) if Path(shard).name != shard):
        raise fail(folder, index, f"names a shard outside the folder: {json_value(outside[0])}")
    return weight_map


def safetensors_shapes(folder: Path, name: str) -> dict[str, tuple[int, ...]]:
    """One safetensors file's tensor shapes; its header must parse and its tensors tile the data exactly."""
    path = folder / name
    if not path.is_file():
        raise fail(folder, name, "missing")
    size = path.stat().st_size
    with open(path, "rb") as file:
        prefix = file.read(8)
        length = int.from_bytes(prefix, "little") if len(prefix) == 8 else -1
        if length < 2 or length > min(size - 8, MAX_SAFETENSORS_HEADER):
            raise fail(folder, name, f"not a safetensors file, or cut short ({size:,} {number_form(size, 'byte')})")
        header_bytes = file.read(length)
    try:
        header = json.loads(header_bytes.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise fail(folder, name, "its header is not valid JSON (a corrupt file?)") from None
    if not isinstance(header, dict):
        raise fail(folder, name, "its header is not a JSON object (a corrupt file?)")
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values())):
        raise fail(folder, name, "its header's __metadata__ is not an object of text values, as safetensors reads it "
                                 "(a corrupt file?)")
    return _tiled_shapes(folder, name, header, size - 8 - length)


def _tiled_shapes(folder: Path, name: str, header: Mapping[str, Any], data_bytes: int) -> dict[str, tuple[int, ...]]:
    """Each tensor's shape; a :class:`Shape`, which also carries the tensor's safetensors dtype."""
    shapes, spans = {}, []
    for tensor, entry in header.items():
        entry = entry if isinstance(entry, dict) else {}
        dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if (dtype not in DTYPE_BYTES or not isinstance(shape, list) or not all(is_plain_int(d) and d >= 0 for d in shape)
                or not isinstance(offsets, list) or len(offsets) != 2 or not all(is_plain_int(o) for o in offsets)):
            raise fail(folder, name, f"tensor {json_value(tensor)} has a corrupt header entry")
        if offsets[1] - offsets[0] != math.prod(shape) * DTYPE_BYTES[dtype]:
            raise fail(folder, name, f"tensor {json_value(tensor)}: its bytes do not match its shape {shape} (a corrupt file?)")
        shapes[tensor] = Shape(shape, dtype)
        spans.append((offsets[0], offsets[1]))
    end = 0
    for start, stop in sorted(spans):
        if start != end:
            raise fail(folder, name, "its tensors overlap or leave gaps (a corrupt file?)")
        end = stop
    if end != data_bytes:
        problem = "cut short" if end > data_bytes else "longer than its tensors"
        raise fail(folder, name, f"{problem}: the header names {end:,} {number_form(end, 'byte')} of tensors, the file holds {data_bytes:,}")
    return shapes


class Shape(tuple):
    """A saved tensor's shape (a tuple of its sizes) and, as ``dtype``, its safetensors dtype (``F32``, ``BOOL``, …);
    a shape the model builds has the dtype of its own tensor's kind (``F32`` for a floating point one)."""

    dtype: str

    def __new__(cls, sizes: Iterable[int], dtype: str) -> Shape:
        shape = super().__new__(cls, sizes)
        shape.dtype = dtype
        return shape


def expected_shapes(model_class: type, config: Mapping[str, Any], folder: Path) -> dict[str, tuple[int, ...]]:
    """The weights ``model_class`` builds from ``config``, built on the meta device (no memory is taken); each a
    :class:`Shape`, of dtype ``F32`` where the model's tensor is floating point."""
    return dict(built_on_meta(lambda: _built_shapes(model_class, json.dumps(config, sort_keys=True)), folder))


@functools.lru_cache(maxsize=16)
def _built_shapes(model_class: type, config_text: str) -> Mapping[str, tuple[int, ...]]:
    """:func:`expected_shapes` of a config as JSON text, kept for the process: a model loaded again (a server's, a
    comparison's runs scored and tuned) is not built a second time to be checked."""
    model = model_class(model_class.config_class.from_dict(json.loads(config_text)))
    return {name: Shape(tensor.shape, "F32" if tensor.is_floating_point() else str(tensor.dtype))
            for name, tensor in model.state_dict().items()}


def built_on_meta(build: Callable[[], Any], folder: Path) -> Any:
    """What ``build`` makes of a folder's ``config.json``, on the meta device (no memory is taken, no weight
    initialised: :func:`~bio_mrc.model_folder.builds.meta_build`); any failure to build is one line naming the file."""
    try:
        with meta_build():
            return build()
    except Exception as err:  # noqa: BLE001 - any failure to build is the config file's fault
        lines = [line.strip() for line in str(err).strip().splitlines()] or [type(err).__name__]
        first = " ".join(lines[:2]) if lines[0].endswith(":") else lines[0]  # a heading line, then what it heads
        raise fail(folder, "config.json", f"describes no model this version can build: {first}") from None


def check_weights_fit(folder: Path, found: Mapping[str, tuple], expected: Mapping[str, tuple]) -> None:
    """The saved tensors are exactly those the config implies, each with its shape."""
    missing, extra = sorted(set(expected) - set(found)), sorted(set(found) - set(expected))
    if missing or extra:
        parts = [f"lacks {counted(len(missing), 'tensor')} the config implies ({', '.join(missing[:3])})" if missing else "",
                 f"holds {len(extra)} the config does not ({', '.join(extra[:3])})" if extra else ""]
        raise fail(folder, SAFETENSORS_FILE, " and ".join(p for p in parts if p) + ": config.json and the weights disagree "
                                             "(layer count or heads edited?)")
    if wrong := [name for name in expected if tuple(found[name]) != tuple(expected[name])]:
        name = wrong[0]
        raise fail(folder, SAFETENSORS_FILE, f"{counted(len(wrong), 'tensor')} {number_form(len(wrong), 'does', 'do')} not have the shapes config.json implies "
                                             f"(e.g. {name}: {list(found[name])}, config.json: {list(expected[name])})")
    check_floating_weights(folder, found, expected)


def check_floating_weights(folder: Path, found: Mapping[str, tuple], expected: Mapping[str, tuple]) -> None:
    """A tensor the model holds as floating point numbers is saved as such (``F32``, ``BF16``, …): one saved as
    integers or booleans (``I32``, ``BOOL``) holds no trained weights, and loading would cast it silently."""
    if wrong := [name for name, shape in expected.items() if getattr(shape, "dtype", None) == "F32"
                 and getattr(found[name], "dtype", "F32") not in FLOAT_DTYPES]:
        name = wrong[0]
        raise fail(folder, SAFETENSORS_FILE, f"{counted(len(wrong), 'tensor')} {number_form(len(wrong), 'holds', 'hold')} {found[name].dtype} "
                                             f"values where the model has floating point weights (e.g. {name}): a corrupt or hand-edited file?")
