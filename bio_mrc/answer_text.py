"""The package's one answer normalisation, SQuAD's: what every metric compares, and what makes two spans
of a context one answer (the same text once normalised); where user-perceived characters (grapheme clusters) begin
and end, which every answer's edges keep to; the edges of an answer (no blank user-perceived character at either end);
and the other mentions of an answer's text in its context, which a tagger may learn as the answer too."""

from __future__ import annotations

import functools
import re
import string
import unicodedata
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator, Sequence

import numpy as np
import regex  # grapheme clusters (\X), which re lacks

from .types import Alternative, CharSpan

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


# Each text's normalised form, kept by the open block of this thread or task (None: no block, each text normalised afresh).
_NORMALIZED: ContextVar[dict[str, str] | None] = ContextVar("bio_mrc_normalized_answers", default=None)


def normalize_answer(s: str) -> str:
    """Lower-case, drop ASCII punctuation, then the articles a/an/the, then squash white space (a text normalised
    once while :func:`shared_normalized_answers` runs)."""
    kept = _NORMALIZED.get()
    if kept is None:
        return _normalized(s)
    if (text := kept.get(s)) is None:
        text = kept[s] = _normalized(s)
    return text


def _normalized(s: str) -> str:
    s = "".join(ch for ch in s.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", s).split())


@contextmanager
def shared_normalized_answers() -> Iterator[None]:
    """Inside the block, :func:`normalize_answer` keeps each text's normalised form and reuses it (a grid of decodings
    of one chunk of questions meets the same span texts at every value); a block inside another shares the outer
    one's. The texts are dropped when the outermost block ends."""
    kept = _NORMALIZED.get()
    token = _NORMALIZED.set({} if kept is None else kept)
    try:
        yield
    finally:
        _NORMALIZED.reset(token)


# Characters nobody reads as an answer's first or last: whitespace, controls and format characters (zero-width
# spaces and joiners, a byte-order mark, soft hyphens, bidirectional controls), and combining marks with no letter.
_BLANK = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp", "Mn", "Mc", "Me"})
_CLUSTER = regex.compile(r"\X")


def _blank(character: str) -> bool:
    return unicodedata.category(character) in _BLANK


def trimmed_span(context: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)``, both on user-perceived character (grapheme cluster) boundaries, without the clusters at its
    edges that hold only blank characters (whitespace, zero-width and bidirectional controls, a byte-order mark, soft
    hyphens, a mark on a space): a SentencePiece token holds the space before its word, and a byte-level BPE token may
    be a zero-width space alone. A cluster with a letter keeps its marks and joiners (``cafe\\u0301``). Empty: no text."""
    while start < end and _blank(context[start]):  # a cluster starting with a letter has text: the common case ends here
        cluster = _CLUSTER.match(context, start, end)
        if not all(map(_blank, cluster.group())):
            break
        start = cluster.end()
    last = end
    while last > start and _blank(context[last - 1]):
        last -= 1
    if last < end:  # the cluster of the last readable character ends within the blank run after it, as no rule looks back
        end = start if last == start else _CLUSTER.match(context, last - 1, end).end()
    return start, end


def without_blank_edges(context: str, alternatives: tuple[Alternative, ...] | None) -> tuple[Alternative, ...] | None:
    """Each gold span trimmed as every decoder trims its answers (:func:`trimmed_span`; a span of blank characters
    alone as given): the spans both heads learn, a report's gold tags score against and a window must hold. A gold
    text of " Paris" or "Paris\u200b" ends past the last token of a window that holds "Paris" (the span head would
    learn [CLS] there), and the tokens of the blanks beside it (a SentencePiece "▁" or "\u200b", a GPT-2 " from"
    after it) would be tagged as the answer, which no decoder ever gives."""
    def trimmed(start: int, end: int) -> CharSpan:
        first, last = trimmed_span(context, start, end)
        return (first, last) if first < last else (start, end)
    return None if alternatives is None else tuple(tuple(trimmed(*span) for span in alt) for alt in alternatives)


def trimmed_spans(contexts: Sequence[str], rows: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`trimmed_span` of each ``(contexts[rows[k]], start[k], end[k])``, as two int64 arrays. A span whose first
    and last characters are not blank is its own trim, found with numpy on the contexts' code points; only the others
    (few: spans of a space or a newline) go through :func:`trimmed_span`, one at a time in Python, which for a long
    context's hundreds of thousands of spans takes longer than finding them."""
    rows, begin, stop = (np.asarray(a, dtype=np.int64).reshape(-1) for a in (rows, start, end))
    begin, stop = begin.copy(), stop.copy()
    spans = np.flatnonzero(begin < stop)
    base, length, codes = _code_points(contexts, rows[spans])
    row_base, row_length = base[rows[spans]], length[rows[spans]]
    inside = (begin[spans] >= 0) & (stop[spans] <= row_length)
    first = np.where(inside, row_base + begin[spans], 0)
    last = np.where(inside, row_base + stop[spans] - 1, 0)
    edges = _blank_codes(codes[np.concatenate([first, last])]).reshape(2, -1) if len(codes) else np.ones((2, len(spans)), bool)
    for k in spans[~inside | edges[0] | edges[1]].tolist():
        begin[k], stop[k] = trimmed_span(contexts[rows[k]], int(begin[k]), int(stop[k]))
    return begin, stop


def _code_points(contexts: Sequence[str], rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where each context of ``rows`` begins in one array of code points of them all (each distinct context once; a
    lone surrogate is a code point, as Python indexes it), each context's length (by position in ``contexts``), and
    that array."""
    base, length = np.zeros(len(contexts), dtype=np.int64), np.zeros(len(contexts), dtype=np.int64)
    placed: dict[str, int] = {}
    total = 0
    for row in np.unique(rows).tolist():
        text = contexts[row]
        if text not in placed:
            placed[text], total = total, total + len(text)
        base[row], length[row] = placed[text], len(text)
    codes = np.frombuffer("".join(placed).encode("utf-32-le", "surrogatepass"), dtype="<u4")
    return base, length, codes


# Which ASCII code points are blank (:func:`_blank`); others are looked up once per distinct code point.
_BLANK_ASCII = np.array([_blank(chr(point)) for point in range(128)])


def _blank_codes(codes: np.ndarray) -> np.ndarray:
    """Whether each code point is a blank character (:func:`_blank`)."""
    blank = _BLANK_ASCII[np.minimum(codes, 127)]
    other = codes >= 128
    if other.any():
        points, where = np.unique(codes[other], return_inverse=True)
        blank[other] = np.array([_blank(chr(point)) for point in points.tolist()], dtype=bool)[where]
    return blank


# A grapheme cluster: \X, except that a flag (a pair of regional indicators) followed by another indicator is
# matched as the pair alone: \X looks back over the whole run of indicators before each flag to pair them, time
# quadratic in the run (25 s for a context of 100,000 characters of flags, hours for one of 5,000,000).
_GRAPHEME = regex.compile(r"(?P<flag>\p{GCB=Regional_Indicator}{2}(?=\p{GCB=Regional_Indicator}))|\X")


def grapheme_bounds(contexts: Sequence[str]) -> list[np.ndarray | None]:
    """The positions between user-perceived characters (extended grapheme clusters) of each context, its
    length included; None for ASCII text, where only CR LF is one character of two, and no token holds it."""
    found: dict[str, np.ndarray | None] = {}
    for context in contexts:
        if context not in found:
            found[context] = None if context.isascii() else np.fromiter(
                (m.end() for m in _GRAPHEME.finditer(context)), dtype=np.int64, count=-1)
    return [None if found[c] is None else np.concatenate([[0], found[c]]) for c in contexts]


@functools.lru_cache(maxsize=2)  # a paragraph's answers and their mentions are looked at in one context
def _character_bounds(context: str) -> bytes | None:
    """1 at each position of ``context`` between user-perceived characters, else 0 (a byte a position: looked up one
    at a time for each of hundreds of thousands of mentions); None for ASCII text."""
    bounds = grapheme_bounds([context])[0]
    if bounds is None:
        return None
    flags = np.zeros(len(context) + 1, dtype=np.uint8)
    flags[bounds] = 1
    return flags.tobytes()


def cut_character(context: str, start: int, end: int) -> str | None:
    """The user-perceived character (grapheme cluster) of ``context`` that the span ``(start, end)`` cuts in two at
    either end (a letter from its accent written apart, an emoji from its skin tone, a jamo from its syllable, a
    flag's halves), or None where both ends fall between characters, as every answer's do. The span is looked at
    as every answer is trimmed (:func:`trimmed_span`): "Paris\\r" of a CR LF ends at the "s"."""
    if start < end and (_blank(context[start]) or _blank(context[end - 1])):
        first, last = trimmed_span(context, start, end)
        start, end = (first, last) if first < last else (start, end)
    for at in (start, end):
        if at <= 0 or at >= len(context) or (context[at - 1] < "\x80" and context[at] < "\x80" and context[at - 1] != "\r"):
            continue  # between two ASCII characters other than CR LF: always a break
        flags = _character_bounds(context)
        if flags is None:  # ASCII: CR LF alone is one character of two
            return context[at - 1:at + 1] if context[at] == "\n" else None
        if not flags[at]:
            return context[flags.rfind(1, 0, at):flags.find(1, at)]
    return None


def _of_a_word(character: str) -> bool:
    """Whether ``character`` belongs to the word around it: a letter, a digit, or a combining mark (a Devanagari
    vowel sign, an accent written apart), which is part of the letter before it."""
    return character.isalnum() or unicodedata.category(character)[0] == "M"


def mentions(context: str, text: str) -> list[tuple[int, int]]:
    """Every occurrence of ``text`` in ``context`` as (start, end) characters, end exclusive: the same
    characters, not inside a longer word (no letter, digit or combining mark touches either end) nor inside a
    user-perceived character (:func:`cut_character`), non-overlapping, left to right."""
    if not text.strip():
        return []
    found, start = [], context.find(text)
    while start >= 0:
        end = start + len(text)
        inside_a_word = (start > 0 and _of_a_word(context[start - 1]) and _of_a_word(text[0])) or (
            end < len(context) and _of_a_word(context[end]) and _of_a_word(text[-1]))
        if inside_a_word:
            start = context.find(text, _next_start(context, text, start))
        elif cut_character(context, start, end) is not None:  # "👍" of "👍🏽": part of one character
            start = context.find(text, start + 1)
        else:
            found.append((start, end))
            start = context.find(text, end)
    return found


_NOT_ALNUM = re.compile(r"[\W_]")  # a character that is not str.isalnum(), as \w is alnum or "_"


def _next_start(context: str, text: str, start: int) -> int:
    """Where to look for ``text`` after an occurrence at ``start`` inside a word: a text that begins with a letter or
    digit begins no mention before the end of the word it is in (else a 1,000-character text in a 5,000,000-character
    word, a DNA sequence, was compared at each of its characters)."""
    if not text[0].isalnum():
        return start + 1
    after = _NOT_ALNUM.search(context, start)
    return len(context) + 1 if after is None else after.end()


class TakenCharacters:
    """Characters of a text that spans (start, end; end exclusive) have taken, and whether another span overlaps one
    of them (shares a character, or holds an empty span strictly inside, as ``a.start < b.end and b.start < a.end``
    says), in time of the span's length: taking spans one by one against all taken before is linear in their
    characters, not quadratic in their number. ``spans``: every span that will be asked about (what it spans)."""

    def __init__(self, spans: Sequence[tuple[int, int]]) -> None:
        self.offset = min((start for start, _ in spans), default=0)
        size = max([self.offset, *(end for _, end in spans)]) - self.offset + 2
        # characters of a span; places of an empty span; characters whose next one is of the same span
        self.taken, self.points, self.joined = bytearray(size), bytearray(size), bytearray(size)

    def overlaps(self, start: int, end: int) -> bool:
        """Whether the span shares a character with a taken one, or is an empty span strictly inside one."""
        start, end = start - self.offset, end - self.offset
        if end <= start:
            return end == start and start > 0 and self.joined[start - 1] == 1
        return self.taken.find(1, start, end) >= 0 or self.points.find(1, start + 1, end) >= 0

    def take(self, start: int, end: int) -> None:
        """Mark the span's characters taken (an empty span: its place)."""
        start, end = start - self.offset, end - self.offset
        if end > start:
            self.taken[start:end] = b"\x01" * (end - start)
            self.joined[start:end - 1] = b"\x01" * (end - 1 - start)
        elif end == start:
            self.points[start] = 1


def with_every_mention(context: str, spans: Sequence[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """``spans`` (one answer's, as annotated, first) followed by every other mention of their texts that
    overlaps none of them, left to right; a longer text's mentions claim their characters first.

    Time linear in the context (per distinct text): a mention is checked against the characters taken
    (:class:`TakenCharacters`), not against every span chosen before it (a text such as "a" occurs hundreds of
    thousands of times in a long context)."""
    chosen = list(spans)
    taken = TakenCharacters([*chosen, (0, len(context))])
    for start, end in chosen:
        taken.take(start, end)
    extra: list[tuple[int, int]] = []
    for text in sorted({context[s:e] for s, e in spans}, key=len, reverse=True):
        for start, end in mentions(context, text):
            if not taken.overlaps(start, end):
                extra.append((start, end))
                taken.take(start, end)
    return (*chosen, *sorted(extra))
