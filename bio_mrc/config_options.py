"""Command-line options derived from a config dataclass, and the dataclass back from the parsed options.

Like transformers' ``HfArgumentParser``: each field becomes ``--field-name`` with the field's default, and
``help``/``choices``/``metavar`` from ``dataclasses.field(metadata=...)``, so options, defaults and help texts
cannot drift from the config. ``choices`` and ``help`` may be functions of no arguments (a registry's names, its
entries in their own words), called when the options are built: what is registered by then is offered. Written here because ``HfArgumentParser`` cannot parse
``tuple[float, float, float] | None`` fields (``bio_prior``, ``bio_class_weights``).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import types
import typing
from typing import Any, Collection, TypeVar

from .config_schema import check_field_values, field_choices, field_help
from .errors import ConfigError, argument

T = TypeVar("T")
_PASSED_THROUGH = ("help", "choices", "metavar", "type")  # "type": a field's own parser of the option's text


def _is_optional(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType) and type(None) in typing.get_args(annotation)


def _none_or(value_type: Any) -> Any:
    """An option type that reads ``none`` as None (an Optional field set back to None) and parses anything else."""
    def parse(text: str) -> Any:
        return None if text.lower() == "none" else value_type(text)
    parse.__name__ = getattr(value_type, "__name__", "value")  # argparse names the type in its errors
    return parse


class _NotFinite(str):
    """A number option's text that reads as NaN or an infinity, kept as typed: :func:`config_from_args` refuses it
    naming the flag and this text (``float`` would say ``nan`` for ``NaN`` and ``inf`` for ``Infinity``)."""


def number_option(text: str) -> float | _NotFinite:
    """A number option's value: a float, or the text as typed where it reads as NaN or an infinity, for
    :func:`refuse_non_finite` to name."""
    value = float(text)
    return value if math.isfinite(value) else _NotFinite(text)


number_option.__name__ = "float"  # argparse names the type in its errors: "invalid float value: 'x'"


def _value_type(annotation: Any) -> tuple[Any, int | None]:
    """``(type of one value, nargs)`` of a field: an Optional's inner type; a fixed-length tuple's length."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        inner = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(inner) != 1:
            raise TypeError(f"cannot make an option of {annotation} (one type, or one type | None)")
        annotation = inner[0]
    if typing.get_origin(annotation) is tuple:
        items = typing.get_args(annotation)
        if not items or Ellipsis in items or len(set(items)) != 1:
            raise TypeError(f"cannot make an option of {annotation} (a fixed-length tuple of one type)")
        return number_option if items[0] is float else items[0], len(items)
    return number_option if annotation is float else annotation, None


def _option_fields(cls: type, exclude: Collection[str]) -> list[tuple[dataclasses.Field, Any]]:
    """The fields (with their resolved types) that become options: the types are strings under
    ``from __future__ import annotations`` until resolved."""
    hints = _type_hints(cls)
    return [(f, hints[f.name]) for f in dataclasses.fields(cls) if f.init and f.name not in exclude]


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    """A class's resolved annotations, resolved once: the parser is built anew for every command run in a process."""
    return typing.get_type_hints(cls)


GIVEN = "given_options"  # the namespace's set of the fields whose option the command line gave


class _StoreGiven(argparse.Action):
    """argparse's plain store, noting the field as given (:func:`options_given`), so a command can tell a default
    from the same value typed."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, GIVEN, {*getattr(namespace, GIVEN, ()), self.dest})


def options_given(args: argparse.Namespace) -> set[str]:
    """The fields whose option (not a flag) the command line gave, whatever its value."""
    return set(getattr(args, GIVEN, ()))


def add_config_options(parser: argparse.ArgumentParser, cls: type, exclude: Collection[str] = ()) -> None:
    """Add ``--field-name`` for every field of the dataclass ``cls`` but ``exclude``.

    Booleans are flags (``--name`` for a False default, ``--no-name`` for a True one); tuples take
    ``nargs`` values; an Optional field parses its inner type or ``none`` (None).
    """
    for field, annotation in _option_fields(cls, exclude):
        options: dict[str, Any] = {"dest": field.name, "default": None}
        if field.default is not dataclasses.MISSING:
            options["default"] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            options["default"] = field.default_factory()
        else:
            options["required"] = True
        default = options["default"]
        options.update({key: field.metadata[key] for key in _PASSED_THROUGH if key in field.metadata})
        if "choices" in options:
            options["choices"] = field_choices(field.metadata)
        if "help" in options:
            options["help"] = field_help(field.metadata)
        name = field.name.replace("_", "-")
        value_type, nargs = _value_type(annotation)
        if value_type is bool and nargs is None and "type" not in options:
            options["action"] = "store_false" if default is True else "store_true"
            name = f"no-{name}" if default is True else name
        elif "type" not in options:
            options["type"] = _none_or(value_type) if _is_optional(annotation) and nargs is None else value_type
            if nargs is not None:
                options["nargs"] = nargs
        options.setdefault("action", _StoreGiven)
        parser.add_argument(f"--{name}", **options)


def config_from_args(cls: type[T], args: argparse.Namespace, **overrides: Any) -> T:
    """The dataclass ``cls`` from parsed options (lists back to tuples); ``overrides`` set the fields a
    command decides itself, and fields with no option keep their defaults."""
    values: dict[str, Any] = {}
    for field, annotation in _option_fields(cls, ()):
        if field.name in overrides:
            values[field.name] = overrides.pop(field.name)
        elif hasattr(args, field.name):
            value = getattr(args, field.name)
            refuse_non_finite(field.name, value)
            values[field.name] = tuple(value) if isinstance(value, list) and _value_type(annotation)[1] else value
    if overrides:
        raise TypeError(f"{cls.__name__} has no fields {sorted(overrides)}")
    return cls(**values)


def check_options(cls: type, args: argparse.Namespace) -> None:
    """The parsed options of the dataclass ``cls``'s fields refused as :func:`config_from_args` refuses them, each
    alone (NaN or an infinity named as typed, a value past its field's range), before a command's work settles the
    fields it decides itself."""
    values = {field.name: getattr(args, field.name) for field, _ in _option_fields(cls, ()) if hasattr(args, field.name)}
    for name, value in values.items():
        refuse_non_finite(name, value)
    check_field_values(cls, values)


def refuse_non_finite(name: str, value: Any) -> None:
    """One line naming the option (the keyword ``name``) and the text it was given where that reads as NaN or an
    infinity (:func:`number_option`)."""
    typed = next((item for item in (value if isinstance(value, list) else [value]) if isinstance(item, _NotFinite)), None)
    if typed is not None:
        raise ConfigError(f"{argument(name)} must be a finite number, got {typed}")


__all__ = ["add_config_options", "check_options", "config_from_args", "number_option", "options_given", "refuse_non_finite"]
