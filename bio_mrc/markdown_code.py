"""Text as inline code in Markdown that bio_mrc writes (a model card, ``report.md``), shown as it is, whatever it holds."""

from __future__ import annotations

import re
from typing import Any

from .io import printable_line

__all__ = ["code_span"]


def code_span(value: Any) -> str:
    """``value`` (a data set's description, a folder) as inline code on one line: its line breaks as spaces, its other
    control characters as Python writes them (``\\x1b``), fenced by more backticks than it holds in a row, so a file name
    with a backtick, a line break or markup in it can neither end the code span nor start a heading or a table of its
    own, and a file printed to a terminal cannot clear or recolour it."""
    text = printable_line(" ".join(str(value).splitlines()))
    fence = "`" * (1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
