"""Typed records read back from ``report.json``: an object checked for its keys, and a record of plain fields made
from one. A malformed object is a :class:`ConfigError` naming where it was read and the field."""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any, TypeVar

from ..errors import ConfigError
from ..json_syntax import json_value

R = TypeVar("R")
_KIND_NAMES = {list: "a list", dict: "an object", str: "a string"}
# The paired statistics a summary keeps, and their JSON kinds (a report's first form may lack them).
STATISTICS_KINDS = {"baseline": dict, "resampling": str, "contrasts": list, "comparisons": list, "intervals": dict}


def checked(data: Any, required: tuple[str, ...], source: str, what: str) -> dict[str, Any]:
    """``data`` as read, when it is an object with every ``required`` key; a :class:`ConfigError` naming ``source`` otherwise."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source} is not {what} (a JSON object), but {type(data).__name__}")
    missing = [name for name in required if name not in data]
    if missing:
        raise ConfigError(f"{source} is not {what}: it lacks {missing}")
    return data


def check_kinds(data: dict[str, Any], kinds: dict[str, type], source: str) -> None:
    """A :class:`ConfigError` naming the first field of ``data`` that is not of its JSON kind."""
    for name, kind in kinds.items():
        if not isinstance(data[name], kind):
            raise ConfigError(f"{source}: field {name!r} must be {_KIND_NAMES[kind]}, got {type(data[name]).__name__}")


def required_fields(cls: type) -> tuple[str, ...]:
    """The fields of a dataclass that have no default."""
    return tuple(f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING)


def refuse_unknown(data: dict[str, Any], known: Any, source: str) -> None:
    """A :class:`ConfigError` naming the keys of ``data`` that are not ``known``."""
    known = set(known)
    unknown = [key for key in data if key not in known]
    if unknown:
        raise ConfigError(f"{source}: unknown fields {json_value(unknown)}")


def plain_record(cls: type[R], data: Any, source: str, what: str, **typed: Any) -> R:
    """A record of the dataclass ``cls`` from an object with its fields (all that have no default, none it does not
    know), those given in ``typed`` (read into records already) taken from there."""
    data = checked(data, tuple(name for name in required_fields(cls) if name not in typed), source, what)
    refuse_unknown(data, (f.name for f in fields(cls)), source)
    return cls(**{**data, **typed})


def per_seed_scores(data: dict[str, Any], other_fields: Any, source: str) -> dict[str, list[Any]]:
    """The keys of a row read back that are not its ``other_fields``: its scores by metric, each a list per seed."""
    other = set(other_fields)
    scores = {key: value for key, value in data.items() if key not in other}
    for key, value in scores.items():
        if not isinstance(value, list):
            raise ConfigError(f"{source}: score {json_value(key)} must be a list of per-seed scores, got {json_value(value)}")
    return scores

