"""A model folder's JSON files read: ``config.json`` (transformers' special floats, another kind of model named),
format numbers, JSON numbers as ``json`` reads them."""

from __future__ import annotations

import json
import math
import numbers
from pathlib import Path
from typing import Any, Callable, Mapping

from .. import __version__
from ..config_schema import whole_number
from ..errors import ModelFormatError
from ..json_syntax import decode_hint, json_value
from ..run_folder import unfinished_run
from .files import fail


MAX_CONFIG_BYTES = 16 * 2**20

BIO_MRC_MODEL_TYPE = "bio_mrc"  # BioMrcConfig.model_type, which this package sits below


def written_format_problem(value: Any, newest: int, kind: str) -> str | None:
    """None for a format number bio_mrc has written (1 to ``newest``; never a bool); else the problem in one line."""
    if whole_number(value) and 1 <= value <= newest:
        return None
    if whole_number(value) and value > newest:
        return (f"written by a newer bio_mrc ({kind} format {value}); this bio_mrc {__version__} reads formats up to "
                f"{newest}: upgrade bio_mrc")
    return f"{kind} format {json_value(value)} is not one bio_mrc writes (a whole number from 1 to {newest})"


def read_json_object(folder: Path, name: str, limit: int = MAX_CONFIG_BYTES) -> dict[str, Any]:
    """A JSON object file of the folder, or one error saying what is wrong with it."""
    path = folder / name
    if not path.is_file():
        raise fail(folder, name, "missing")
    if path.stat().st_size > limit:
        raise fail(folder, name, f"{path.stat().st_size:,} bytes, more than the {limit:,} a model folder's file may hold")
    try:
        value = json.loads(path.read_bytes().decode("utf-8-sig"), parse_constant=_no_constant)
    except UnicodeDecodeError as err:
        raise fail(folder, name, f"not UTF-8 text ({err.reason} at byte {err.start})") from None
    except RecursionError:
        raise fail(folder, name, "nested too deeply to be a model file") from None
    except (json.JSONDecodeError, ValueError) as err:
        raise fail(folder, name, f"not valid JSON (a truncated or corrupt file?): {err}{decode_hint(err)}") from None
    if not isinstance(value, dict):
        raise fail(folder, name, f"expected a JSON object, got {type(value).__name__}")
    return value


def saved_config(folder: Path) -> dict:
    """A model folder's ``config.json`` as a dict (empty where there is none, or it is not a JSON object of a sane size)."""
    try:
        return read_json_object(folder, "config.json")
    except ModelFormatError:
        return {}


def _no_constant(name: str) -> float:
    """``Infinity`` stands for a threshold that always (or never) fires; ``NaN`` is no number at all."""
    if name == "NaN":
        raise ValueError("NaN is no number")
    return float(name)


def read_config(folder: Path, read: dict[str, Any] | None = None) -> dict[str, Any]:
    """``config.json`` (or ``read``, the object it parsed to already) with transformers' ``{"__float__": "Infinity"}``
    read as the float it stands for; a run's folder without its model yet, and another kind of model, are named as such."""
    if problem := unfinished_run(folder):
        raise fail(folder, None, problem)
    config = special_floats(read_json_object(folder, "config.json") if read is None else read)
    if problem := foreign_model(config):
        raise fail(folder, "config.json", problem)
    if not isinstance(config.get("encoder"), dict):
        raise fail(folder, "config.json", "has no 'encoder' object (the encoder's config)")
    return config


def foreign_model(config: Mapping[str, Any]) -> str | None:
    """What a ``config.json`` of another kind of model holds, and how a bio_mrc model is made from it; None for
    a bio_mrc model's."""
    model_type = config.get("model_type")
    if model_type == BIO_MRC_MODEL_TYPE:
        return None
    names = config.get("architectures") if isinstance(config.get("architectures"), list) else []
    qa = next((name for name in names if isinstance(name, str) and name.endswith("ForQuestionAnswering")
               and name != "BioMrcForQuestionAnswering"), None)  # bio_mrc's own, its model_type edited: no QA model
    how = (f"`bio-mrc convert` saves transformers' extractive QA model ({qa}) as one" if qa else
           "a bare encoder is trained into one with `bio-mrc train --encoder PATH`")
    return f"a {model_type or 'non-bio_mrc'} model, not a bio_mrc model (model_type {json_value(model_type)}); {how}"


def special_floats(value: Any) -> Any:
    """transformers writes infinities (an always-abstaining threshold) and NaN as ``{"__float__": "-Infinity"}``."""
    if isinstance(value, dict):
        return special_float({key: special_floats(item) for key, item in value.items()})
    return [special_floats(item) for item in value] if isinstance(value, list) else value


def special_float(value: dict[str, Any]) -> Any:
    """One JSON object as :func:`special_floats` reads it, its members already read: ``json.loads``'s
    ``object_hook``, which restores them while decoding rather than walking every value after."""
    if len(value) == 1 and value.get("__float__") in ("Infinity", "-Infinity", "NaN"):
        return float(value["__float__"])
    return value


def non_finite_as(value: Any, spell: Callable[[str], Any]) -> Any:
    """``value`` (dicts and lists of it) with each non-finite float, numpy's too, as ``spell("Infinity")``,
    ``spell("-Infinity")`` or ``spell("NaN")``: JSON has no such numbers, and ``jq`` or another language's reader refuses
    Python's bare ``-Infinity`` (an always-abstaining threshold). ``spell`` is ``str`` for the command line's JSON,
    ``transformers_float`` for transformers' form, which :func:`special_floats` reads back."""
    if isinstance(value, dict):
        return {key: non_finite_as(item, spell) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [non_finite_as(item, spell) for item in value]
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral) and not math.isfinite(value):
        return spell("NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity"))
    return value


def transformers_float(name: str) -> dict[str, str]:
    """A non-finite float as transformers writes it in a ``config.json``: ``{"__float__": "-Infinity"}``."""
    return {"__float__": name}


def is_plain_int(value: Any) -> bool:
    """A JSON integer as ``json`` reads one: an int, never a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_finite_number(value: Any) -> bool:
    """A finite JSON number as ``json`` reads one: an int or a float, never a bool, NaN or an infinity."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
