"""One line's inline Markdown as HTML: backslash escapes, inline code, images, links, bold and italic.

Each element's close is found in lists of the closing marks, made once a line and searched by bisection, giving the
HTML of one regular expression's search: that search runs from each opening mark to the end of the line when the
element never closes, time of the line's length squared for a line of unclosed ``[a](``.
"""

from __future__ import annotations

import html
import re
from bisect import bisect_left, bisect_right
from typing import Callable

ImageSource = Callable[[str], "str | None"]  # a Markdown image path -> the src to use, None when there is none

_OPENER = re.compile(r"[\\`!\[*]")  # the first characters of the elements
_ESCAPABLE = re.compile(r"[!-/:-@\[-`{-~]")  # ASCII punctuation, taken as it is after a backslash
_WORD_OR_STAR = re.compile(r"[\w*]")  # what may not stand just outside an italic's stars
_EM_EDGE = re.compile(r"[^*\s]")  # what an italic's text starts and ends with
_SAFE_LINK = re.compile(r"^(?:https?:|mailto:|#|[^:]*$)", re.I)  # no javascript: or data: targets


def no_image(src: str) -> None:
    """The image source of a page that embeds no images."""
    return None


class _Marks:
    """Where each kind of closing mark stands in one text, listed once."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.brackets = _places(r"\]", text)
        self.target_ends = _places(r"[)\s]", text)  # a link's target ends at ``)`` or white space
        self.stars = _places(r"\*", text)
        self.star_pairs = _places(r"(?=\*\*)", text)  # overlapping: ``***`` holds two
        self.newlines = _places(r"\n", text)
        self.runs = [(match.start(), match.end()) for match in re.finditer("`+", text)]
        self.run_starts = [start for start, _ in self.runs]
        self.longest_after = self._longest_runs_after()

    def next(self, places: list[int], at: int) -> int:
        """The first of ``places`` at or after ``at``; the text's length where there is none."""
        index = bisect_left(places, at)
        return places[index] if index < len(places) else len(self.text)

    def _longest_runs_after(self) -> list[int]:
        """For each run of backticks, the longest run after it on its line (0 where there is none)."""
        longest = [0] * len(self.runs)
        for run in range(len(self.runs) - 2, -1, -1):
            start, end = self.runs[run + 1]
            if self.next(self.newlines, self.runs[run][1]) > start:
                longest[run] = max(end - start, longest[run + 1])
        return longest


def _places(pattern: str, text: str) -> list[int]:
    return [match.start() for match in re.finditer(pattern, text)]


def inline_html(text: str, image_source: ImageSource = no_image) -> str:
    """One line's inline Markdown as HTML, everything else escaped: from left to right, the element that starts
    at each place, if any; one bisection per opening mark, never a search to the line's end."""
    marks, parts, last = _Marks(text), [], 0
    opener = _OPENER.search(text)
    while opener is not None:
        found = _element_at(marks, opener.start())
        if found is None:
            opener = _OPENER.search(text, opener.start() + 1)
            continue
        end, kind, groups = found
        parts.append(html.escape(text[last:opener.start()]))
        parts.append(_element_html(kind, groups, image_source))
        last = end
        opener = _OPENER.search(text, end)
    parts.append(html.escape(text[last:]))
    return "".join(parts)


Found = tuple[int, str, tuple[str, ...]] | None  # the element's end, its kind and its parts


def _element_at(marks: _Marks, at: int) -> Found:
    text = marks.text
    first = text[at]
    if first == "\\":
        return (at + 2, "escaped", (text[at + 1],)) if _ESCAPABLE.match(text, at + 1) else None
    if first == "`":
        return _code(marks, at)
    if first == "!":
        return _bracketed(marks, at, at + 2, "image") if text.startswith("[", at + 1) else None
    if first == "[":
        return _bracketed(marks, at, at + 1, "link")
    return _bold(marks, at) or _em(marks, at)


def _code(marks: _Marks, at: int) -> Found:
    """Inline code: the longest fence of the run of backticks at ``at`` that closes later on the line (a part of the
    run itself closes a fence of at most half its length less one, around one backtick)."""
    run = bisect_right(marks.run_starts, at) - 1
    width = marks.runs[run][1] - at
    within = (width - 1) // 2
    fence = max(min(width, marks.longest_after[run]), within)
    if fence == 0:
        return None
    if fence == within:
        close = at + fence + 1
    else:
        later = run + 1
        while marks.runs[later][1] - marks.runs[later][0] < fence:
            later += 1
        close = marks.runs[later][0]
    return close + fence, "code", (marks.text[at + fence:close],)


def _bracketed(marks: _Marks, at: int, opened: int, kind: str) -> Found:
    """An image or a link: text up to the first ``]``, then ``(``, a target without white space, ``)``."""
    text = marks.text
    closed = marks.next(marks.brackets, opened)
    if (kind == "link" and closed == opened) or not text.startswith("(", closed + 1):
        return None
    target_end = marks.next(marks.target_ends, closed + 2)
    if target_end == closed + 2 or not text.startswith(")", target_end):
        return None
    return target_end + 1, kind, (text[opened:closed], text[closed + 2:target_end])


def _bold(marks: _Marks, at: int) -> Found:
    if not marks.text.startswith("*", at + 1):
        return None
    close = marks.next(marks.star_pairs, at + 3)
    if close == len(marks.text) or marks.next(marks.newlines, at + 2) < close:
        return None
    return close + 2, "bold", (marks.text[at + 2:close],)


def _em(marks: _Marks, at: int) -> Found:
    """Italic: between single stars, not inside a word, with no white space just inside either star."""
    text = marks.text
    if (at > 0 and _WORD_OR_STAR.match(text, at - 1)) or not _EM_EDGE.match(text, at + 1):
        return None
    close = marks.next(marks.stars, at + 1)
    if close == len(text) or not _EM_EDGE.match(text, close - 1) or _WORD_OR_STAR.match(text, close + 1):
        return None
    return close + 1, "em", (text[at + 1:close],)


def _element_html(kind: str, groups: tuple[str, ...], image_source: ImageSource) -> str:
    if kind == "escaped":
        return html.escape(groups[0])
    if kind == "code":
        return f"<code>{html.escape(groups[0].strip())}</code>"
    if kind == "image":
        alt, src = html.escape(groups[0]), image_source(groups[1])
        return f'<img src="{html.escape(src)}" alt="{alt}">' if src else f"<em>[{alt}: image not found]</em>"
    if kind == "link":
        text, href = inline_html(groups[0], image_source), groups[1]
        return f'<a href="{html.escape(href)}">{text}</a>' if _SAFE_LINK.match(href) else text
    tag = "strong" if kind == "bold" else "em"
    return f"<{tag}>{inline_html(groups[0], image_source)}</{tag}>"
