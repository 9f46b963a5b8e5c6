"""The one JSON reader: every failure becomes a :class:`DataFormatError` naming the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import DataFormatError

__all__ = ["DataFormatError", "RepeatedKeyError", "loads", "read_json"]


class RepeatedKeyError(ValueError):
    """An object names one key twice: JSON keeps only the last value, and the other would be lost without a word."""

    def __init__(self, key: str) -> None:
        super().__init__(f"the key {key!r} appears twice in one object (JSON keeps only the last, losing the other)")
        self.key = key


def _object_without_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        raise RepeatedKeyError(next(key for key, _ in pairs if key in seen or seen.add(key)))
    return found


def loads(text: str) -> Any:
    """``json.loads`` that refuses an object with a repeated key (:class:`RepeatedKeyError`)."""
    return json.loads(text, object_pairs_hook=_object_without_repeated_keys)


def read_json(path: str | Path) -> Any:
    """Parse a UTF-8 JSON file, turning every failure into a DataFormatError naming the file."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataFormatError("file not found", source=source) from None
    except IsADirectoryError:
        raise DataFormatError("expected a JSON file, found a folder", source=source) from None
    except UnicodeDecodeError as err:
        raise DataFormatError(f"not UTF-8 text ({err.reason} at byte {err.start})", source=source) from None
    try:
        return loads(text)
    except RepeatedKeyError as err:
        raise DataFormatError(str(err), source=source) from None
    except json.JSONDecodeError as err:
        # The parser ran out of text (or inside a string that never closes): the file was cut short.
        truncated = not text[err.pos :].strip() or err.msg.startswith("Unterminated string")
        problem = "the JSON ends early (a truncated file?)" if truncated else "not valid JSON"
        raise DataFormatError(f"{problem}: {err.msg} (line {err.lineno}, column {err.colno})", source=source) from None
