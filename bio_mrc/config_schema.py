"""A config dataclass as JSON Schema, and the same checks on an instance.

A field's JSON type comes from its annotation and its allowed values from its ``metadata``:
``choices`` (an enum; a function of no arguments, such as a registry's names, is called when the schema
is built, so it never holds a stale copy), ``minimum``, ``exclusive_minimum``, ``maximum``, ``exclusive_maximum``, ``min_length`` (on a
tuple field they bound each item), ``schema`` (a field schema given whole; its ``problem``, if any,
is the error message) and ``help`` (the description; a function of no arguments too, called alike). The command-line
options (:mod:`bio_mrc.config_options`) read the same metadata, so an option, its range and its help are written once.
Reading the metadata and writing the schema need no jsonschema: it loads with the first check
(:func:`schema_validator`), so a command's ``--help`` reads its options without it.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import numbers
import types
import typing
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from .errors import ConfigError
from .json_syntax import json_value

if TYPE_CHECKING:
    import jsonschema

BOUNDS = {"minimum": "minimum", "exclusive_minimum": "exclusiveMinimum", "maximum": "maximum",
          "exclusive_maximum": "exclusiveMaximum", "min_length": "minLength"}
SEED_RANGE = {"minimum": 0, "maximum": 2**32 - 1}  # numpy's random seeds
JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string"}


def whole_number(value: Any) -> bool:
    """A count as a caller may hold it: a Python or numpy integer (``np.int64(3)``), never a bool or a float."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


@functools.cache
def _validator_class() -> type[jsonschema.Draft202012Validator]:
    """Draft 2020-12's validator with one change: JSON Schema counts 1.0 as an integer; a count given as 1.0 is refused
    here, as Python's range() would."""
    import jsonschema

    checker = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", lambda _checker, value: whole_number(value))
    return jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=checker)


def schema_validator(schema: Mapping[str, Any]) -> jsonschema.Draft202012Validator:
    """The package's validator of ``schema`` (a count is a whole number, never 1.0)."""
    return _validator_class()(schema)


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        inner = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(inner) != 1:
            raise TypeError(f"no JSON Schema for {annotation} (one type, or one type | None)")
        return inner[0], type(None) in typing.get_args(annotation)
    return annotation, False


def field_choices(metadata: Mapping[str, Any]) -> tuple[Any, ...]:
    """A field's allowed values: its ``choices``, called when a function (read when asked, not copied)."""
    choices = metadata["choices"]
    values = choices() if callable(choices) else choices
    return values if isinstance(values, tuple) else tuple(values)  # a registry's names keep what they are


def field_help(metadata: Mapping[str, Any]) -> str:
    """A field's help text: its ``help``, called when a function (a registry's entries in their own words)."""
    text = metadata["help"]
    return text() if callable(text) else text


def _bounds(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {BOUNDS[key]: value for key, value in metadata.items() if key in BOUNDS}


def field_schema(annotation: Any, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON Schema of one field: its type (``null`` too for an Optional), enum, bounds and description."""
    if "schema" in metadata:
        schema = dict(metadata["schema"])
    else:
        inner, optional = _unwrap_optional(annotation)
        if typing.get_origin(inner) is tuple:
            (item,) = set(typing.get_args(inner))
            length = len(typing.get_args(inner))
            schema = {"type": "array", "items": {"type": JSON_TYPES[item], **_bounds(metadata)},
                      "minItems": length, "maxItems": length}
        else:
            schema = {"type": JSON_TYPES[inner], **_bounds(metadata)}
            if "choices" in metadata:
                schema["enum"] = list(field_choices(metadata))
        if optional:
            schema["type"] = [schema["type"], "null"]
            if "enum" in schema:
                schema["enum"].append(None)
    if "help" in metadata:
        schema["description"] = field_help(metadata)
    return schema


def dataclass_schema(cls: type) -> dict[str, Any]:
    """An object of the dataclass's fields (each optional: the dataclass has its defaults), no others."""
    hints = typing.get_type_hints(cls)
    properties = {f.name: field_schema(hints[f.name], f.metadata) for f in dataclasses.fields(cls) if f.init}
    return {"type": "object", "properties": properties, "additionalProperties": False}


def _key_path(path: Iterable[Any]) -> str:
    """``runs[2].epochs`` from the parts of a path into a JSON document."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def schema_errors(instance: Any, schema: Mapping[str, Any]) -> list[str]:
    """Every place ``instance`` breaks ``schema``, each as ``key.path: problem``, in document order; a NaN or an
    infinity as ``key.path must be a finite number, got NaN``, spelt as JSON spells it, and no bound it breaks besides."""
    non_finite = dict(_non_finite(instance, ()))
    found = [(path, 0, f"{_key_path(path)} must be a finite number, got {json_value(value)}") for path, value in non_finite.items()]
    for error in schema_validator(schema).iter_errors(instance):
        if tuple(error.absolute_path) in non_finite:
            continue
        # a schema's own "problem" says in words what a pattern means
        message = f"{error.schema['problem']}; got {json_value(error.instance)}" if "problem" in error.schema else schema_message(error)
        if error.validator == "additionalProperties":
            message = _unknown_keys(error.instance, error.schema.get("properties", {}))
        # an unknown key first: its "did you mean" names the key a missing one is often misspelt as
        rank = 0 if error.validator == "additionalProperties" else 1
        found.append((tuple(error.absolute_path), rank, f"{_key_path(error.absolute_path) or 'top level'}: {message}"))
    return [line for _, _, line in sorted(found, key=lambda item: ([str(part) for part in item[0]], item[1]))]


def schema_message(error: jsonschema.ValidationError) -> str:
    """jsonschema's words for ``error`` with the value it got, and a type or choice it names, as JSON spells them
    (``"5" is not of type "integer"``, ``true``, ``"eval" is a required property``): jsonschema quotes them as Python
    writes them (``'5'``, ``True``, ``'eval'``)."""
    if error.validator == "type":
        types = [error.validator_value] if isinstance(error.validator_value, str) else error.validator_value
        return f"{json_value(error.instance)} is not of type {', '.join(json_value(kind, whole=True) for kind in types)}"
    if error.validator == "enum":
        return f"{json_value(error.instance)} is not one of {json_value(error.validator_value, whole=True)}"
    if error.validator == "maxItems":  # jsonschema says "is too long", naming neither the length nor the bound
        return f"{json_value(error.instance)} is too long ({len(error.instance):,} items; the maximum is {error.validator_value:,})"
    if error.validator == "required":  # jsonschema names one missing key per error, as Python quotes it
        missing = next((key for key in error.validator_value if error.message.startswith(repr(key))), None)
        if missing is not None:
            return f"{json_value(missing, whole=True)} is a required property"
    python = repr(error.instance)
    return json_value(error.instance) + error.message[len(python):] if error.message.startswith(python) else error.message


def _unknown_keys(found: Mapping[str, Any], known: Mapping[str, Any]) -> str:
    """Name the unknown keys, with the known key each one most likely misspells."""
    unknown = [key for key in found if key not in known]
    guesses = {key: difflib.get_close_matches(key, list(known), n=1) for key in unknown}
    named = ", ".join(json_value(key) + (f" (did you mean {json_value(guesses[key][0])}?)" if guesses[key] else "") for key in unknown)
    return f"unknown key{'s' if len(unknown) > 1 else ''} {named}; the known keys are {', '.join(known)}"


def _non_finite(value: Any, path: tuple) -> Iterable[tuple[tuple, float]]:
    """NaN and infinities (JSON has none, Python's reader accepts them, and no range check refuses NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _non_finite(item, (*path, key))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _non_finite(item, (*path, index))


@functools.lru_cache(maxsize=None)
def _cached_schema(cls: type, choices: tuple[tuple[Any, ...], ...]) -> dict[str, Any]:
    return dataclass_schema(cls)


def _current_choices(cls: type) -> tuple[tuple[Any, ...], ...]:
    """Every field's choices as they stand now: the cache key, so a schema follows what is registered."""
    return tuple(field_choices(f.metadata) for f in dataclasses.fields(cls) if "choices" in f.metadata)


def check_fields(instance: Any) -> None:
    """Hold each numpy number given for a field (alone, or in a tuple or list) as a Python int or float, so the
    instance is checked and writes JSON alike either way (``json`` cannot write ``np.float32``); then refuse an
    instance whose fields break their own schema, naming the first such field."""
    values = {f.name: getattr(instance, f.name) for f in dataclasses.fields(instance) if f.init}
    for name, value in values.items():
        if isinstance(value, (tuple, list)):
            plain = type(value)(map(_plain_number, value))
            changed = any(a is not b for a, b in zip(plain, value))
        else:
            plain = _plain_number(value)
            changed = plain is not value
        if changed:
            object.__setattr__(instance, name, plain)  # frozen configs too: still in __post_init__
            values[name] = plain
    check_field_values(type(instance), values)


def check_field_values(cls: type, values: Mapping[str, Any]) -> None:
    """``values`` (some fields of the dataclass ``cls``, by name) refused as :func:`check_fields` refuses an instance,
    each against its own field's schema: what a caller checks before the work that settles the other fields."""
    checked = {name: list(value) if isinstance(value, tuple) else value for name, value in values.items()}
    if problems := schema_errors(checked, _cached_schema(cls, _current_choices(cls))):
        raise ConfigError(f"{cls.__name__}: {problems[0]}")


class UnaskedFloat(float):
    """A float field's default that a caller giving the same number is told apart from (``isinstance``): it compares,
    writes to JSON and checks as its value, and :func:`check_fields` keeps it as it is."""

    __slots__ = ()


def unasked_fields(instance: Any) -> frozenset[str]:
    """The fields of a config dataclass left at an :class:`UnaskedFloat` default. A config written to be read back
    leaves them out: its number would read back as asked."""
    return frozenset(f.name for f in dataclasses.fields(instance) if isinstance(getattr(instance, f.name), UnaskedFloat))


def unasked_defaults(cls: type) -> dict[str, float]:
    """Each field of ``cls`` whose default is an :class:`UnaskedFloat`, with the number a record writes for it."""
    return {f.name: float(f.default) for f in dataclasses.fields(cls) if isinstance(f.default, UnaskedFloat)}


def _plain_number(value: Any) -> Any:
    """A numpy (or other non-builtin) number as the Python int or float of its value; anything else as it is."""
    if isinstance(value, (bool, UnaskedFloat)) or type(value) in (int, float) or not isinstance(value, numbers.Real):
        return value
    return int(value) if whole_number(value) else float(value)


__all__ = ["SEED_RANGE", "UnaskedFloat", "check_field_values", "check_fields", "dataclass_schema", "field_choices", "field_schema",
           "schema_errors", "schema_message", "schema_validator", "unasked_defaults", "unasked_fields", "whole_number"]
