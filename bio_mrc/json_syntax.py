"""What JSON5 and editors' "JSON with comments" allow and JSON does not, named where a JSON parser stopped: a comment
(``//`` or ``/* */``) or a comma before ``}`` or ``]``. The parser's own words (``Expecting value``, ``Expecting
property name enclosed in double quotes``) say neither."""

from __future__ import annotations

import json

__all__ = ["LOOK", "decode_hint", "syntax_hint"]

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
