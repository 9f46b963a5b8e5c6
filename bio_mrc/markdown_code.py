"""Text as inline code in Markdown that bio_mrc writes (a model card, ``report.md``), shown as it is, whatever it holds."""

from __future__ import annotations

import re
from typing import Any

from .io import printable_line

__all__ = ["code_span", "one_line"]

# Every character at which str.splitlines() ends a line, as the report's page reads its Markdown (CommonMark: \n, \r).
_LINE_ENDS = re.compile("[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def one_line(value: Any) -> str:
    """``value`` (a file's name) on one line as Python writes it in a string: each line end and other control character
    escaped (``\\n``, ``\\u2028``, ``\\x1b``), so ``a\\nb.json`` is never shown as another file's name, ``a b.json``, and
    shown as the command's own lines show it."""
    return printable_line(_LINE_ENDS.sub(lambda end: repr(end.group())[1:-1], str(value)))


def code_span(value: Any) -> str:
    """``value`` (a data set's description, a folder) as inline code on one line (:func:`one_line`: its line breaks
    and other control characters as Python writes them, ``\\n``, ``\\x1b``), fenced by more backticks than it holds in
    a row, so a file name with a backtick, a line break or markup in it can neither end the code span nor start a
    heading or a table of its own, and a file printed to a terminal cannot clear or recolour it."""
    text = one_line(value)
    fence = "`" * (1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
