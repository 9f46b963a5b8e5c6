"""JSON and text for a terminal: every control character escaped, so a name cut from someone's document neither clears
nor retitles the terminal it is printed to."""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import as_keywords


_BIDI_CONTROLS = "\u202a-\u202e\u2066-\u2069"  # embeddings, overrides, isolates: "evil\u202egnp.exe" shows as "evilexe.png"
_C1_CONTROLS = re.compile(f"[\x7f-\x9f{_BIDI_CONTROLS}\u2028\u2029]")  # DEL, the 8-bit controls (U+009B begins a terminal
# escape, as ESC [ does), the bidirectional overrides, which reorder what a terminal shows after them, and U+2028 and
# U+2029, where str.splitlines(), JavaScript before ES2019 and many log tools end a line


def printable_json(value: Any, **json_dumps_kwargs: Any) -> str:
    """``value`` as JSON that keeps a text's letters as they are (``ensure_ascii=False``) and escapes every control
    character, DEL and U+0080-U+009F included, which ``json.dumps`` leaves as they are, and the bidirectional overrides
    (U+202E), and U+2028 and U+2029: the same JSON value, yet an answer or question id cut from someone's document can
    neither clear nor retitle the terminal it is printed to, nor show the text after it reversed, nor split a JSON
    Lines record for a reader that ends lines at U+2028."""
    return json_with_controls_escaped(json.dumps(value, ensure_ascii=False, **json_dumps_kwargs))


def json_with_controls_escaped(text: str) -> str:
    """JSON ``text`` (``json.dumps``', pydantic's) with DEL, U+0080-U+009F, the bidirectional overrides and isolates
    (U+202A-U+202E, U+2066-U+2069) and the line and paragraph separators (U+2028, U+2029), which JSON writers leave as
    they are, escaped as ``\\u0085``: the same JSON value (such a character stands only inside a string)."""
    return _C1_CONTROLS.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


_LINE_CONTROLS = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_BIDI_CONTROLS}]")  # every control character but the tab


def printable_line(text: Any) -> str:
    """``text`` (a message naming a file) as one line for a terminal: each control character as Python writes it in
    a string (``\\x1b``, ``\\n``, ``\\u202e``), so a file name holding ``\\x1b[2J`` can neither clear the screen nor break
    the line, and one holding U+202E cannot show its end reversed (``evil\\u202egnp.exe`` as ``evilexe.png``). An
    argument a message names (:func:`~bio_mrc.errors.argument`) and no door rendered reads as its keyword."""
    return _LINE_CONTROLS.sub(lambda match: repr(match.group())[1:-1], as_keywords(str(text)))
