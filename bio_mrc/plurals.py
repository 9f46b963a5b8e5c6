"""Counted nouns for printed lines: "1 question", "2 questions", and the verb that agrees with the count."""

from __future__ import annotations

from typing import Any


def number_form(count: Any, singular: str, plural: str | None = None) -> str:
    """``singular`` for a count of exactly one, else ``plural`` (default: ``singular`` + "s"); a count that is no number
    (a hand-edited record's) takes the plural."""
    return singular if count == 1 and not isinstance(count, bool) else plural or singular + "s"


def counted(count: Any, singular: str, plural: str | None = None) -> str:
    """``count`` and the noun in its number: ``counted(1, "question")`` is "1 question", ``counted(2, "question")``
    "2 questions"."""
    return f"{count} {number_form(count, singular, plural)}"


def first_few(names: list[str], shown: int = 3) -> str:
    """The first ``shown`` of ``names`` joined by commas, and how many more: "a, b, c and 2 more"."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more
