"""What JSON5 and editors' "JSON with comments" allow and JSON does not, named where a JSON parser stopped: a comment
(``//`` or ``/* */``) or a comma before ``}`` or ``]``. The parser's own words (``Expecting value``, ``Expecting
property name enclosed in double quotes``) say neither. And a value of a JSON file as an error quotes it: as the file
spells it (``true``, ``null``, ``"text"``), not as Python writes it (``True``, ``None``, ``'text'``)."""

from __future__ import annotations

import json
import re
import reprlib
from typing import Any

__all__ = ["LOOK", "decode_hint", "json_kind", "json_value", "syntax_hint"]

_BLANK = " \t\n\r"  # JSON's whitespace
LOOK = 1000  # characters read each side of the stop: a longer run of whitespace is read as no hint


def syntax_hint(text: str, at: int) -> str:
    """``"; JSON has no comments: remove the `//` comment"`` (or a block comment's, or a trailing comma's hint) where
    ``text`` holds one at index ``at``, where the parser stopped (whitespace before it passed over); "" otherwise."""
    after = text[at : at + LOOK].lstrip(_BLANK)
    if after.startswith("//"):
        return "; JSON has no comments: remove the `//` comment"
    if after.startswith("/*"):
        return "; JSON has no comments: remove the `/* */` comment"
    if after[:1] in ("}", "]") and text[max(0, at - LOOK) : at].rstrip(_BLANK).endswith(","):
        return f"; JSON has no trailing commas: remove the `,` before `{after[0]}`"
    return ""


def decode_hint(err: BaseException) -> str:
    """:func:`syntax_hint` where ``err`` is a :class:`json.JSONDecodeError` (which keeps the text and where it
    stopped); "" for any other error."""
    return syntax_hint(err.doc, err.pos) if isinstance(err, json.JSONDecodeError) else ""


_NOT_ASCII = re.compile(r"[^ -~]")  # json.dumps escapes ASCII's controls itself; each other character is looked at


def _whole(value: Any) -> str:
    """``value`` as JSON, its letters as they are and each character that shows as nothing (a control, a byte-order
    mark, a zero-width space, a line separator) escaped, as Python's ``repr`` escapes them; an object's keys sorted,
    as ``reprlib`` sorts them."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except TypeError:  # keys of several types do not sort: in their given order, as reprlib leaves them
        text = json.dumps(value, ensure_ascii=False)
    # such a character stands only inside a string, so escaping it there keeps the value
    return _NOT_ASCII.sub(lambda found: found.group() if found.group().isprintable() else json.dumps(found.group())[1:-1], text)


class _JsonRepr(reprlib.Repr):
    """``reprlib``'s shortened values, spelt as JSON spells them: ``true``, ``false``, ``null``, ``"text"``, ``NaN``."""

    def repr_bool(self, value: bool, level: int) -> str:
        return "true" if value else "false"

    def repr_NoneType(self, value: None, level: int) -> str:  # noqa: N802 (reprlib's name for the type)
        return "null"

    def repr_float(self, value: float, level: int) -> str:
        return json.dumps(value)  # NaN and Infinity as Python's json reads and writes them

    def repr_str(self, value: str, level: int) -> str:
        if len(value) <= self.maxstring:
            return _whole(value)
        head = max(0, (self.maxstring - 3) // 2)
        tail = max(0, self.maxstring - 3 - head)
        return _whole(value[:head])[:-1] + self.fillvalue + _whole(value[len(value) - tail :])[1:]


_SHORT = _JsonRepr()  # keywords only from Python 3.12
_SHORT.maxstring, _SHORT.maxlong, _SHORT.maxother, _SHORT.maxlist, _SHORT.maxdict, _SHORT.maxlevel = 80, 40, 80, 5, 5, 3


def json_value(value: Any, whole: bool = False) -> str:
    """``value``, read from a JSON file, as an error quotes it: as JSON spells it (``true``, ``null``, ``"text"``,
    ``{"a": 1}``, ``NaN``), each character that shows as nothing escaped (``"\\u200b"``), an object's keys sorted (two
    values an error sets side by side line up); shortened (a string of millions of characters, a list of thousands,
    would make a line as long), or ``whole``: every character, for a value read to be copied or chosen from (a path,
    the names to pick one of). A value short enough reads the same either way."""
    return _whole(value) if whole else _SHORT.repr(value)


_KINDS = {dict: "a JSON object", list: "a JSON array", str: "a JSON string", bool: "a JSON boolean", int: "a JSON number",
          float: "a JSON number", type(None): "JSON null"}


def json_kind(value: Any) -> str:
    """What a value read from a JSON file is, as JSON names it (``a JSON array``, ``JSON null``), not as Python does
    (``list``, ``NoneType``)."""
    return _KINDS.get(type(value), f"a {type(value).__name__}")
