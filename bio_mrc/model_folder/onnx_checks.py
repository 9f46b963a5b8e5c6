"""An ONNX export's ``model.onnx`` checked: it parses, keeps its data inside the folder, has its heads' inputs and
outputs and finite weights."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .. import registry
from ..model_defaults import HEADS
from .files import ONNX_FILE, fail


def check_onnx(folder: Path, config: Mapping[str, Any]) -> None:
    """``model.onnx`` parses, keeps its external data inside the folder, has the inputs and outputs its heads need, and
    finite weights."""
    onnx = _import_onnx(folder)
    path = folder / ONNX_FILE
    if not path.is_file():
        raise fail(folder, ONNX_FILE, "missing")
    try:
        graph = onnx.load(str(path), load_external_data=False).graph
    except Exception as err:  # noqa: BLE001 - protobuf raises DecodeError and others for a corrupt file
        raise fail(folder, ONNX_FILE, f"not an ONNX model (a truncated or corrupt file?): {str(err)[:200]}") from None
    root = folder.resolve()
    for tensor in graph.initializer:
        location = {entry.key: entry.value for entry in tensor.external_data}.get("location")
        if location is not None and not _inside(root, root / location):
            raise fail(folder, ONNX_FILE, f"its external data {location!r} lies outside the folder")
        if location is not None and not (root / location).is_file():
            raise fail(folder, ONNX_FILE, f"its external data {location!r} is missing")
    _check_onnx_signature(folder, graph, config)
    for tensor in graph.initializer:
        if problem := _initializer_problem(onnx, tensor, root):
            raise fail(folder, ONNX_FILE, f"its initializer {tensor.name!r} {problem}")


def _initializer_problem(onnx: Any, tensor: Any, root: Path) -> str | None:
    """Why a float initializer cannot be run (it holds NaN, or infinity beside values other than 0), else None. NaN
    weights answer every question with scores no decoding reads; a tensor of infinities and zeros alone (a lone
    fill value, a mask of 0 and -inf) is an attention mask's, not a weight."""
    if tensor.data_type not in _onnx_float_types(onnx):
        return None
    held = tensor
    if tensor.data_location == onnx.TensorProto.EXTERNAL:  # read into a copy: one tensor's data held at a time
        held = onnx.TensorProto()
        held.CopyFrom(tensor)
    try:
        values = onnx.numpy_helper.to_array(held, base_dir=str(root))
    except (OSError, ValueError) as err:
        return f"cannot be read ({str(err)[:200]})"
    values = values if values.dtype.kind == "f" else values.astype(np.float32)  # bfloat16, float8: ml_dtypes' types
    if np.isfinite(values).all():
        return None
    nan, inf = int(np.isnan(values).sum()), int(np.isinf(values).sum())
    mask_like = not nan and bool(np.all(np.isinf(values) | (values == 0)))
    if not mask_like:
        shape = "x".join(map(str, values.shape)) or "scalar"
        return (f"({shape}) holds {nan:,} NaN and {inf:,} infinite values of {values.size:,}: the model's weights "
                "were not finite when it was exported (a diverged training run or a corrupt file)")
    return None


def _onnx_float_types(onnx: Any) -> set[int]:
    names = ("FLOAT", "FLOAT16", "DOUBLE", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ")
    return {getattr(onnx.TensorProto, name) for name in names if hasattr(onnx.TensorProto, name)}


def _inside(root: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except ValueError:
        return False
    return True


def _import_onnx(folder: Path):
    try:
        import onnx
    except ImportError as err:
        raise fail(folder, ONNX_FILE, f"checking an ONNX model needs the 'onnx' package ({err}): pip install 'bio_mrc[onnx]'") from None
    return onnx


def _dims(value_info: Any) -> list[int | str]:
    return [d.dim_value if d.HasField("dim_value") else d.dim_param for d in value_info.type.tensor_type.shape.dim]


def _check_onnx_signature(folder: Path, graph: Any, config: Mapping[str, Any]) -> None:
    inputs = {value.name: _dims(value) for value in graph.input}
    outputs = {value.name: _dims(value) for value in graph.output}
    for name, dims in inputs.items():
        if len(dims) != 2:
            raise fail(folder, ONNX_FILE, f"input {name!r} has shape {dims}, not (batch, sequence)")
        if any(isinstance(d, int) for d in dims):  # a graph traced for one shape fails on every other batch
            longest = config.get("max_seq_length")
            shape = ", ".join(str(d) if d != "" else "?" for d in dims)
            raise fail(folder, ONNX_FILE, f"input {name!r} has the fixed shape [{shape}]: windows are batched and padded to "
                       f"their batch's longest{f', up to max_seq_length {longest}' if longest else ''}, so an export takes "
                       "any number of windows of any length (dynamic batch and sequence axes); export the PyTorch model "
                       "again with bio-mrc export")
    if "input_ids" not in inputs:
        raise fail(folder, ONNX_FILE, "has no input_ids input")
    heads = registry.head_names(config.get("heads", HEADS))
    for head in heads:
        entry = registry.head(head)
        for output, extra in zip(entry.outputs, entry.output_dims):
            if output not in outputs:
                raise fail(folder, ONNX_FILE, f"lacks the output {output!r} of its {head} head")
            dims = outputs[output]
            if len(dims) != 2 + len(extra) or any(isinstance(d, int) and d != e for d, e in zip(dims[2:], extra)):
                raise fail(folder, ONNX_FILE, f"output {output!r} has shape {dims}, not (batch, sequence{''.join(f', {e}' for e in extra)})")
