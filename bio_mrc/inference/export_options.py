"""The ONNX export's options, their defaults and their check, in a module with no heavy imports: ``bio-mrc export``
refuses an opset or a tolerance before torch loads, in the words ``export_onnx`` refuses them."""

from __future__ import annotations

import importlib
import math
from typing import Any

from ..errors import ConfigError, argument

DEFAULT_OPSET = 18
MIN_OPSET = 7  # the oldest opset ONNX Runtime runs; the newest is the installed onnx's
TOLERANCE = 1e-4  # the largest logit difference from PyTorch an export may have


def check_export_options(opset: Any, atol: Any) -> None:
    """Before any work: an opset the installed onnx knows (an unknown one ended in ONNX Runtime's traceback once the
    model was exported), and a tolerance that is a positive number (NaN passed every check, and went into the marker
    as JSON cannot write it). Without onnx installed the opset is left to the export, which names the extra."""
    try:
        newest = importlib.import_module("onnx").defs.onnx_opset_version()
    except ImportError:
        newest = None
    if newest is not None and (isinstance(opset, bool) or not isinstance(opset, int) or not MIN_OPSET <= opset <= newest):
        raise ConfigError(f"opset is an ONNX opset version from {MIN_OPSET} to {newest} (the installed onnx's newest), "
                          f"got {opset!r}")
    if isinstance(atol, float) and not math.isfinite(atol):
        raise ConfigError(f"{argument('atol')} must be a finite number, got {atol!r}")
    if isinstance(atol, bool) or not isinstance(atol, (int, float)) or atol <= 0:
        raise ConfigError(f"atol is the largest logit difference from PyTorch an export may have, a number above 0, got {atol!r}")


__all__ = ["DEFAULT_OPSET", "MIN_OPSET", "TOLERANCE", "check_export_options"]
