"""Inline Markdown in report.html: the same HTML as the one regular expression it replaces, in linear time."""

from __future__ import annotations

import html
import random
import re

from bio_mrc.harness.markdown_html import inline_html, markdown_to_html

# The expression inline_html finds the elements of, searched from each opening mark to the end of the line.
_REFERENCE = re.compile(
    r"\\(?P<escaped>[!-/:-@\[-`{-~])"
    r"|(?P<ticks>`+)(?P<code>.+?)(?P=ticks)"
    r"|!\[(?P<alt>[^\]]*)\]\((?P<src>[^)\s]+)\)"
    r"|\[(?P<text>[^\]]+)\]\((?P<href>[^)\s]+)\)"
    r"|\*\*(?P<bold>.+?)\*\*"
    r"|(?<![\w*])\*(?P<em>[^*\s](?:[^*]*[^*\s])?)\*(?![\w*])"
)
_SAFE_LINK = re.compile(r"^(?:https?:|mailto:|#|[^:]*$)", re.I)


def reference_inline_html(text, image_source):
    parts, last = [], 0
    for match in _REFERENCE.finditer(text):
        parts.append(html.escape(text[last:match.start()]))
        parts.append(reference_element(match, image_source))
        last = match.end()
    parts.append(html.escape(text[last:]))
    return "".join(parts)


def reference_element(match, image_source):
    if match.group("escaped") is not None:
        return html.escape(match.group("escaped"))
    if match.group("ticks"):
        return f"<code>{html.escape(match.group('code').strip())}</code>"
    if match.group("src") is not None:
        alt = html.escape(match.group("alt"))
        src = image_source(match.group("src"))
        return f'<img src="{html.escape(src)}" alt="{alt}">' if src else f"<em>[{alt}: image not found]</em>"
    if match.group("href") is not None:
        text, href = reference_inline_html(match.group("text"), image_source), match.group("href")
        return f'<a href="{html.escape(href)}">{text}</a>' if _SAFE_LINK.match(href) else text
    if match.group("bold") is not None:
        return f"<strong>{reference_inline_html(match.group('bold'), image_source)}</strong>"
    return f"<em>{reference_inline_html(match.group('em'), image_source)}</em>"


def image_source(src):
    return None if "z" in src else f"data:{src}"  # some images found, some not


PIECES = [*"\\`![]()*  \n\t\u00a0\u2028aé_1:/#<&z", "](", "**", "``", "```", "[a](", "http:", "javascript:"]


def test_random_lines_render_as_the_regular_expression_finds_them():
    rng = random.Random(20)
    for _ in range(20_000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 30)))
        assert inline_html(text, image_source) == reference_inline_html(text, image_source), repr(text)


def test_backtick_fences_by_hand():
    assert inline_html("``a`b``") == "<code>a`b</code>"
    assert inline_html("```") == "<code>`</code>"  # a run closes a fence of one inside itself
    assert inline_html("```a``b`") == "<code>`a</code>b`"  # no later run of three: a fence of two
    assert inline_html("``a\n``") == "``a\n``"  # code ends at the line's end


def test_a_long_line_of_unclosed_elements_renders():
    line = "[a](" * 16_000  # 64 KB; each link searched its target to the line's end
    assert inline_html(line) == line
    assert markdown_to_html(line) == f"<p>{line}</p>"
    images = "![a](" * 13_000
    assert inline_html(images) == images
