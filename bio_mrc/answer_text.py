"""The package's one answer normalisation, SQuAD's: what every metric compares, and what makes two spans
of a context one answer (the same text once normalised); and the other mentions of an answer's text in its
context, which a tagger may learn as the answer too."""

from __future__ import annotations

import re
import string
from typing import Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(s: str) -> str:
    """Lower-case, drop ASCII punctuation, then the articles a/an/the, then squash white space."""
    s = "".join(ch for ch in s.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", s).split())


def mentions(context: str, text: str) -> list[tuple[int, int]]:
    """Every occurrence of ``text`` in ``context`` as (start, end) characters, end exclusive: the same
    characters, not inside a longer word (no letter or digit touches either end), non-overlapping, left to right."""
    if not text.strip():
        return []
    found, start = [], context.find(text)
    while start >= 0:
        end = start + len(text)
        inside_a_word = (start > 0 and context[start - 1].isalnum() and text[0].isalnum()) or (
            end < len(context) and context[end].isalnum() and text[-1].isalnum())
        if not inside_a_word:
            found.append((start, end))
        start = context.find(text, end if not inside_a_word else start + 1)
    return found


def with_every_mention(context: str, spans: Sequence[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """``spans`` (one answer's, as annotated, first) followed by every other mention of their texts that
    overlaps none of them, left to right; a longer text's mentions claim their characters first."""
    chosen = list(spans)
    extra: list[tuple[int, int]] = []
    for text in sorted({context[s:e] for s, e in spans}, key=len, reverse=True):
        for start, end in mentions(context, text):
            if all(end <= s or start >= e for s, e in chosen + extra):
                extra.append((start, end))
    return (*chosen, *sorted(extra))
