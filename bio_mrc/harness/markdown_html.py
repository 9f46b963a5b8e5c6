"""The Markdown that ``report.md`` is written in, as HTML: headings, paragraphs, bullet lists, pipe tables,
fenced code, and inline code, bold, italic, links, images and backslash escapes (``\\[`` is a ``[``). Only that subset:
the report is the only input. Every text is HTML-escaped; a link keeps its target only when it is relative or http(s)/mailto,
and an image's source goes through ``image_source`` (report.html embeds each plot as a data URI).
"""

from __future__ import annotations

import html
import re
from typing import Callable

from ..io import printable_line
from ..markdown_code import one_line
from .markdown_inline import ImageSource, inline_html, no_image

_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")  # closing #s are stripped apart, in linear time (_heading_text)
_TABLE_RULE = re.compile(r"^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_BULLET = re.compile(r"^[-*]\s+")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def slug(heading: str) -> str:
    """An anchor for a heading: lower case, punctuation dropped, spaces to hyphens (as GitHub makes them)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _table_cells(line: str) -> list[str]:
    line = line.strip()
    line = line[1:] if line.startswith("|") else line
    line = line[:-1] if line.endswith("|") and not line.endswith("\\|") else line
    return [cell.strip().replace("\\|", "|") for cell in _CELL_SPLIT.split(line)]


def _table(lines: list[str], image_source: ImageSource) -> str:
    """A pipe table: header, rule, rows; in a box that scrolls sideways when the table is wider than the screen."""
    head = "".join(f"<th>{inline_html(c, image_source)}</th>" for c in _table_cells(lines[0]))
    rows = ["<tr>" + "".join(f"<td>{inline_html(c, image_source)}</td>" for c in _table_cells(line)) + "</tr>" for line in lines[2:]]
    return f"<div class=\"table-scroll\"><table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"


def _block_end(lines: list[str], start: int, belongs: Callable[[str], bool]) -> int:
    end = start
    while end < len(lines) and belongs(lines[end]):
        end += 1
    return end


def markdown_to_html(markdown: str, image_source: ImageSource = no_image) -> str:
    """``report.md``'s Markdown as an HTML fragment (see the module docstring for the subset)."""
    lines, out, i = markdown.splitlines(), [], 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif line.startswith("```"):
            end = _block_end(lines, i + 1, lambda text: not text.startswith("```"))
            language = line[3:].strip()
            attribute = f' class="language-{html.escape(language)}"' if language else ""
            out.append(f"<pre><code{attribute}>{html.escape(chr(10).join(lines[i + 1:end]))}</code></pre>")
            i = end + 1
        elif heading := _HEADING.match(line):
            level, text = len(heading.group(1)), _heading_text(heading.group(2))
            out.append(f'<h{level} id="{html.escape(slug(text))}">{inline_html(text, image_source)}</h{level}>')
            i += 1
        elif line.lstrip().startswith("|") and i + 1 < len(lines) and _TABLE_RULE.match(lines[i + 1]):
            end = _block_end(lines, i + 2, lambda text: text.lstrip().startswith("|"))
            out.append(_table(lines[i:end], image_source))
            i = end
        elif _BULLET.match(line):
            end = _block_end(lines, i, lambda text: bool(_BULLET.match(text)))
            items = "".join(f"<li>{inline_html(_BULLET.sub('', text, count=1), image_source)}</li>" for text in lines[i:end])
            out.append(f"<ul>{items}</ul>")
            i = end
        else:
            end = _block_end(lines, i, lambda text: bool(text.strip()) and not _starts_block(text))
            end = max(end, i + 1)
            out.append(f"<p>{inline_html(' '.join(text.strip() for text in lines[i:end]), image_source)}</p>")
            i = end
    return "\n".join(out)


def _heading_text(text: str) -> str:
    """A heading's text without the white space and closing ``#`` s after it (``## Scores ##``: ``Scores``)."""
    return text.rstrip().rstrip("#").rstrip()


def paragraph_text(text: str) -> str:
    """Free text (a comparison's description) as one line of a Markdown paragraph: its white space, line breaks
    (also U+2028) included, as single spaces, and ``Description:`` before a text whose first characters would open
    a heading, a list, a table or a code block, which would take in the report's sections after it."""
    line = printable_line(" ".join(text.split()))
    return f"Description: {line}" if _starts_block(line) else line


def line_text(text: str) -> str:
    """Text within one line of Markdown (a data file's name in a list item or a heading): its line breaks (also
    U+2028) as spaces, so a file name holding one cannot end the line and open a code block or heading of its own,
    and its other control characters as Python writes them (``\\x1b``), so ``cat report.md`` cannot clear a terminal."""
    return printable_line(" ".join(str(text).splitlines()))


_MARKUP = re.compile(r"([\\`*_\[\]<>&~])")  # what starts code, emphasis, a link or an image, HTML or an entity


def literal_text(text: str) -> str:
    """Text shown as it is within one line of Markdown (a data file's name): its line breaks and control characters
    as Python writes them (:func:`~bio_mrc.markdown_code.one_line`: ``a\\nb.json``, not another file's ``a b.json``),
    and a backslash before each character that would start markup, so ``<img src=x onerror=...>``,
    ``[x](javascript:...)`` or ``*a*`` in a file's name shows as those characters in any Markdown reader rather than as
    HTML, a link or emphasis."""
    return _MARKUP.sub(r"\\\1", one_line(text))


def _starts_block(line: str) -> bool:
    return line.startswith("```") or bool(_HEADING.match(line)) or bool(_BULLET.match(line)) or line.lstrip().startswith("|")
