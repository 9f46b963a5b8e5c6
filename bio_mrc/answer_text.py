"""The package's one answer normalisation, SQuAD's: what every metric compares, and what makes two spans
of a context one answer (the same text once normalised)."""

from __future__ import annotations

import re
import string

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(s: str) -> str:
    """Lower-case, drop ASCII punctuation, then the articles a/an/the, then squash white space."""
    s = "".join(ch for ch in s.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", s).split())
