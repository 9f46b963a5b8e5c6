"""The run and evaluation records of a model folder, checked for what the model card reads."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..json_syntax import decode_hint
from ..model_records import RECORD_SCHEMAS, record_problem
from .config_reading import MAX_CONFIG_BYTES, non_finite_as, special_floats
from .files import fail


def check_records(folder: Path) -> None:
    """The run and evaluation records, where the folder keeps them, hold what the model card reads
    (:mod:`bio_mrc.model_records`): an edited or foreign one is refused here, not in a traceback once the work is done."""
    for name in RECORD_SCHEMAS:
        checked_record(folder, name)


def checked_record(folder: Path, name: str) -> dict[str, Any] | None:
    """The record ``name`` (one of :data:`~bio_mrc.model_records.RECORD_SCHEMAS`) of the folder, read and checked as
    :func:`check_records` checks it; None where the folder keeps none."""
    path = folder / name
    if not path.is_file():
        return None
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise fail(folder, name, f"{path.stat().st_size:,} bytes, more than the {MAX_CONFIG_BYTES:,} a model folder's file may hold")
    try:  # as bio_mrc writes it: an always-abstaining threshold as -Infinity
        record = special_floats(json.loads(path.read_bytes().decode("utf-8-sig")))
    except (UnicodeDecodeError, RecursionError, ValueError) as err:
        raise fail(folder, name, f"cannot be read as JSON ({type(err).__name__}: {str(err)[:120]}{decode_hint(err)}); delete "
                                 "it, and the model card leaves out what it said") from None
    if problem := record_problem(name, record) or _non_finite_field(record):
        raise fail(folder, name, f"{problem}; a record bio_mrc did not write as it is: delete it, and the model card "
                                 "leaves out what it said")
    return record


def _non_finite_field(value: Any, where: str = "") -> str | None:
    """The first NaN in a record, or infinity outside a no-answer ``threshold`` (where it always or never abstains),
    named by its field (``evaluations.0.results.joint.f1 must be a finite number, got NaN``): the card would show
    ``nan`` for a score, a loss or a time; None where every number is one."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(item, float) and (math.isnan(item) or math.isinf(item) and key != "threshold"):
            kind = "a number or ±Infinity" if key == "threshold" else "a finite number"
            return f"{where}{key} must be {kind}, got {non_finite_as(item, str)}"
        if problem := _non_finite_field(item, f"{where}{key}."):
            return problem
    return None
