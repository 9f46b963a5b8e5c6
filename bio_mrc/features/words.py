"""Words of a context as the tokenizer sees them, and which token of a window carries each word's tag: the
word boundaries BIO tags live on (a word cut by a window's edge keeps its whole span)."""

from __future__ import annotations

import re
import unicodedata
from typing import Sequence

import numpy as np
import regex  # scripts (\p{Script=...}) and other Unicode properties, which re lacks
from transformers import PreTrainedTokenizerBase

from ..answer_text import grapheme_bounds, trimmed_spans
from .pair_windows import ContextsAlone
from .tokenizer_lock import tokenizer_lock

__all__ = ["context_words", "dropped_attached_runs", "extend_over_attached", "snap_to_graphemes",
           "tokens_alone", "word_of_tokens"]


def context_words(
    tokenizer: PreTrainedTokenizerBase, contexts: Sequence[str], attached: Sequence[np.ndarray] | None = None,
    bounds: Sequence[np.ndarray | None] | None = None, units: str = "punctuation",
    tokens: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
) -> list[np.ndarray]:
    """(W, 2) character spans of the words of each context, in order, without blank edges (whitespace, zero-width and
    bidirectional controls: :func:`~bio_mrc.answer_text.trimmed_span`).

    Words are the tokenizer's own (``word_ids`` of the context tokenized alone, so
    a word cut by a window's edge keeps its whole span and is the same word in
    every window). Byte-level BPE words carry their leading space; it is stripped.
    ``attached``, ``bounds``: :func:`dropped_attached_runs` and :func:`grapheme_bounds` of ``contexts``,
    when the caller has them. ``units``: ``"punctuation"`` makes punctuation pieces words of their own where the
    tokenizer's words hold punctuation (:func:`_punctuation_apart`); ``"tokenizer"`` keeps its words as they are.
    ``tokens``: :func:`tokens_alone` of ``contexts``, when the caller has them.
    """
    first: dict[str, int] = {}  # each distinct context once, by its first position
    for i, context in enumerate(contexts):
        first.setdefault(context, i)
    with tokenizer_lock(tokenizer):
        punctuation_apart = units == "punctuation" and _words_hold_punctuation(tokenizer)
    spans_by_context = {}
    for context, (offsets, ids) in (tokens_alone(tokenizer, list(first)) if tokens is None else tokens).items():
        runs = dropped_attached_runs([context], [offsets])[0] if attached is None else attached[first[context]]
        bound = grapheme_bounds([context])[0] if bounds is None else bounds[first[context]]
        offsets = snap_to_graphemes(extend_over_attached(offsets, runs), bound)[ids >= 0]
        spans_by_context[context] = _word_spans(context, offsets, ids[ids >= 0], punctuation_apart)
    return [spans_by_context[c] for c in contexts]


def tokens_alone(tokenizer: PreTrainedTokenizerBase, contexts: Sequence[str],
                 alone: ContextsAlone | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each distinct context's (T, 2) token offsets and word ids (-1: none), the context tokenized alone, as arrays
    of 24 bytes a token. Tokenizing a long context holds a few hundred bytes a token while it runs, so a caller that
    cuts windows too does this first, while they are not yet held. ``alone``: the caller's, whose contexts its
    windows' slices read too (None: tokenized here)."""
    tokens = (ContextsAlone() if alone is None else alone)(tokenizer, contexts)
    return {context: (held.offsets, held.word_ids) for context, held in tokens.items()}


def _word_spans(context: str, offsets: np.ndarray, ids: np.ndarray, punctuation_apart: bool) -> np.ndarray:
    """(W, 2) character spans of the words of one context from its tokens' ``offsets`` and word ``ids``, trimmed."""
    ids = _unspaced_pieces_apart(context, offsets, _spaced_pieces_apart(context, offsets, ids))
    if punctuation_apart:
        ids = _punctuation_apart(context, offsets, ids)
    n_words = int(ids.max(initial=-1)) + 1
    spans = np.stack([np.full(n_words, len(context)), np.zeros(n_words, dtype=np.int64)], axis=1)
    np.minimum.at(spans[:, 0], ids, offsets[:, 0])
    np.maximum.at(spans[:, 1], ids, offsets[:, 1])
    stripped = np.stack(trimmed_spans([context], np.zeros(n_words, dtype=np.int64), spans[:, 0], spans[:, 1]), axis=1)
    return stripped[stripped[:, 0] < stripped[:, 1]]  # blank "words" (a zero-width space) carry no tag


# Unicode whitespace (tab, newline, no-break and ideographic spaces, line separators): what ends a word in any family.
_WHITESPACE = regex.compile(r"\p{White_Space}+")


def _spaced_pieces_apart(context: str, offsets: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Word ids in which whitespace between two pieces of one word ends the word there. Metaspace splits at " " alone,
    so where the normalizer leaves a tab, a newline or a no-break space in place, ``flows\\tnorth`` is one word, and a
    tagger on words answers across it. A piece of whitespace alone stays where the tokenizer put it (and is trimmed);
    a piece holding whitespace between other characters stays whole."""
    if not len(ids):
        return ids
    spaces = _marked(_WHITESPACE, context)
    solid = np.flatnonzero(~spaces)
    if not len(solid):
        return ids
    counts = np.concatenate([[0], np.cumsum(spaces)])  # spaces before each place
    # each piece's first character that is no space, and the place after its last one
    first = np.concatenate([solid, [len(context)]])[np.searchsorted(solid, offsets[:, 0], side="left")]
    end = np.concatenate([[0], solid + 1])[np.searchsorted(solid, offsets[:, 1], side="left")]
    held = first < offsets[:, 1]  # the piece holds a character that is no space
    places = np.arange(len(ids))
    before = np.concatenate([[-1], np.maximum.accumulate(np.where(held, places, -1))[:-1]])  # the last such piece before
    prior = np.maximum(before, 0)
    starts = held & (before >= 0) & (ids[prior] == ids) & (counts[first] > counts[np.minimum(end[prior], first)])
    starts[0] = True
    starts[1:] |= ids[1:] != ids[:-1]
    return np.cumsum(starts) - 1


# Scripts written without spaces between words, whole (their extension blocks, 々 and 〇 are Han, hentaigana kana).
_UNSPACED = regex.compile(r"[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}"
                          r"\p{Script=Khmer}\p{Script=Myanmar}]")


def _unspaced_pieces_apart(context: str, offsets: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Word ids in which each piece holding a character of a script written without spaces is a word of its own.
    Sentencepiece and byte-level BPE split words at spaces (and, BPE, punctuation) only, so one "word" of Chinese or
    Japanese is a whole clause, and a tagger on words could answer nothing shorter; BERT's tokenizer makes each
    ideograph a word. The other pieces of such a word keep their runs whole (``首都。Emoji``: ``首都``, ``。Emoji``), so
    no answer starts or ends inside ``Emoji``. Pieces of one character (byte-level BPE) stay one word."""
    if not len(ids) or not _UNSPACED.search(context):
        return ids
    unspaced = _holds_unspaced(context, offsets)
    starts = np.ones(len(ids), dtype=bool)
    starts[1:] = (ids[1:] != ids[:-1]) | ((unspaced[1:] | unspaced[:-1]) & (offsets[1:, 0] >= offsets[:-1, 1]))
    return np.cumsum(starts) - 1


def _holds_unspaced(context: str, offsets: np.ndarray) -> np.ndarray:
    """Whether each (start, end) of ``offsets`` holds a character of a script written without spaces, by binary
    search in their positions: pieces snapped to one long grapheme (a letter and 100,000 combining marks) all span it,
    and searching each span's characters took time of the pieces times the grapheme."""
    places = np.fromiter((m.start() for m in _UNSPACED.finditer(context)), dtype=np.int64, count=-1)
    return np.searchsorted(places, offsets[:, 0], side="left") < np.searchsorted(places, offsets[:, 1], side="left")


# Punctuation as BERT's pre-tokenizer reads it (ASCII symbols too), and what stays inside a word: the separators of a
# decimal or a thousands group (3.5, 1,000) and the full stops of an abbreviation of single letters (U.S., e.g.).
_PUNCTUATION = regex.compile(r"[!-/:-@\[-`{-~\p{P}]+")
_BLANK = regex.compile(r"[\p{Cc}\p{Cf}\p{Zs}\p{Zl}\p{Zp}\p{M}]+")
_KEPT = regex.compile(r"(?<=\d)[.,](?=\d)|(?<![\w.])(?:[^\W\d_]\.){2,}")
# Words that hold punctuation next to letters where the tokenizer splits at spaces only.
_PROBE = "Rollo, (Rollo)."


def _words_hold_punctuation(tokenizer: PreTrainedTokenizerBase) -> bool:
    """Whether one of the tokenizer's words holds punctuation and a letter: sentencepiece's (``Rollo,``) do; those of
    WordPiece and byte-level BPE, whose pre-tokenizers split punctuation off, never do, and stay as they are."""
    enc = tokenizer(_PROBE, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    spans: dict[int, list[int]] = {}
    for word, (start, end) in zip(enc.word_ids(), enc["offset_mapping"]):
        if word is not None:
            span = spans.setdefault(word, [start, end])
            span[0], span[1] = min(span[0], start), max(span[1], end)
    texts = [_PROBE[a:b] for a, b in spans.values()]
    return any(_PUNCTUATION.search(t) and regex.search(r"\p{L}", t) for t in texts)


def _punctuation_apart(context: str, offsets: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Word ids in which a piece of punctuation alone is a word apart from the pieces of letters or digits beside it.
    Sentencepiece splits words at spaces only, so ``Paris.`` is one word and a tagger on words answers with the full
    stop, as BERT's words (``Paris`` ``.``) never do. Only between pieces, never inside one: a piece of letters and
    punctuation stays whole. A blank piece (a space alone) never starts a word: it stays where the tokenizer put it;
    the separators of decimals and abbreviations are no punctuation here (:data:`_KEPT`)."""
    if not len(ids) or not _PUNCTUATION.search(context):
        return ids
    kinds = _piece_kinds(context, offsets)  # 0 blank, 1 punctuation only, 2 anything else
    places = np.arange(len(ids))
    before = np.concatenate([[-1], np.maximum.accumulate(np.where(kinds > 0, places, -1))[:-1]])  # last non-blank piece
    prior = np.maximum(before, 0)
    apart = ((kinds > 0) & (before >= 0) & (ids[prior] == ids) & ((kinds == 1) | (kinds[prior] == 1))
             & (offsets[:, 0] >= offsets[prior, 1]))  # pieces of one character (byte-level BPE) are never apart
    starts = apart.copy()
    starts[0] = True
    starts[1:] |= ids[1:] != ids[:-1]
    return np.cumsum(starts) - 1


def _piece_kinds(context: str, offsets: np.ndarray) -> np.ndarray:
    """For each piece: 0 when its characters are blank, 1 when the others are punctuation, 2 otherwise, by counts of
    each kind of character before each place (linear in the context and the pieces)."""
    punctuation = _marked(_PUNCTUATION, context) & ~_marked(_KEPT, context)
    counts = {name: np.concatenate([[0], np.cumsum(found)]) for name, found in
              (("punctuation", punctuation), ("solid", ~_marked(_BLANK, context)))}
    n_solid, n_punctuation = (counts[name][offsets[:, 1]] - counts[name][offsets[:, 0]] for name in ("solid", "punctuation"))
    return np.where(n_solid == 0, 0, np.where(n_punctuation == n_solid, 1, 2))


def _marked(pattern: regex.Pattern, context: str) -> np.ndarray:
    """Whether a match of ``pattern`` holds each character of ``context`` (difference counts of its runs)."""
    spans = np.array([m.span() for m in pattern.finditer(context)], dtype=np.int64).reshape(-1, 2)
    counts = np.zeros(len(context) + 1, dtype=np.int64)
    np.add.at(counts, spans[:, 0], 1)
    np.add.at(counts, spans[:, 1], -1)
    return np.cumsum(counts)[:-1] > 0


def dropped_attached_runs(contexts: Sequence[str], token_offsets: Sequence[np.ndarray]) -> list[np.ndarray]:
    """(R, 2) character spans of each context's runs of characters that attach to the one before
    them (combining marks, ZWJ/ZWNJ, emoji skin tones, Hangul vowel and final jamo: no grapheme
    break before them) and that no token covers: ``token_offsets`` are each context's token
    offsets (-1 rows, of other sequences, ignored).

    An uncased BERT strips accents; an NFKC normalizer (SentencePiece's) composes ``e\\u0301``
    into one character, its offsets the ``e``'s alone, and decomposed Hangul into syllables
    alike. Without these runs a token ends mid-grapheme: ``cafe\\u0301`` decodes as ``cafe``,
    ``नहीं`` loses its final sign.
    """
    runs = []
    for context, offsets in zip(contexts, token_offsets):
        attaching = "".join(sorted(c for c in set(context) if _attaches(c)))
        if not attaching:
            runs.append(np.zeros((0, 2), dtype=np.int64))
            continue
        covered = _covered(len(context), offsets)
        found = [(a, b) for m in re.finditer("[" + re.escape(attaching) + "]+", context)
                 for a, b in _uncovered_parts(covered, *m.span())]
        runs.append(np.array(found, dtype=np.int64).reshape(-1, 2))
    return runs


def _attaches(character: str) -> bool:
    point = ord(character)
    return (unicodedata.category(character).startswith("M") or character in "\u200c\u200d"
            or 0x1F3FB <= point <= 0x1F3FF or 0x1160 <= point <= 0x11FF or 0xD7B0 <= point <= 0xD7FF)


def _covered(length: int, offsets: np.ndarray) -> np.ndarray:
    """Whether some token's offsets hold each character (difference counts: linear in the context)."""
    offsets = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    offsets = offsets[(offsets[:, 0] >= 0) & (offsets[:, 1] > offsets[:, 0])]
    counts = np.zeros(length + 1, dtype=np.int64)
    np.add.at(counts, offsets[:, 0], 1)
    np.add.at(counts, offsets[:, 1], -1)
    return np.cumsum(counts)[:length] > 0


def _uncovered_parts(covered: np.ndarray, start: int, end: int) -> list[tuple[int, int]]:
    """The runs of ``start:end`` no token covers, each after a character (a token may end there)."""
    held = np.concatenate([[True], covered[start:end], [True]])
    edges = np.flatnonzero(held[1:] != held[:-1])
    return [(start + a, start + b) for a, b in zip(edges[::2], edges[1::2]) if start + a > 0]


def extend_over_attached(offsets: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """Token offsets whose end is followed by a run of :func:`dropped_attached_runs` end after the run."""
    if not len(runs):
        return offsets
    index = np.minimum(np.searchsorted(runs[:, 0], offsets[:, 1]), len(runs) - 1)
    hit = (runs[index, 0] == offsets[:, 1]) & (offsets[:, 1] > offsets[:, 0])
    offsets = offsets.copy()
    offsets[hit, 1] = runs[index[hit], 1]
    return offsets


def snap_to_graphemes(offsets: np.ndarray, bounds: np.ndarray | None) -> np.ndarray:
    """Token offsets widened to whole user-perceived characters: a token that starts or ends inside one
    (a combining mark, a Hangul jamo or an emoji of a ZWJ sequence a token of its own) holds all of it, as
    byte-level BPE's tokens of one character all hold that character, so no answer splits it. A token of no
    characters inside one (byte-level BPE's trimmed space before a skin tone) stands at its start: an answer from it
    starts there."""
    if bounds is None or not len(offsets):
        return offsets
    placed = (offsets[:, 0] >= 0) & (offsets[:, 1] >= offsets[:, 0])
    real = placed & (offsets[:, 1] > offsets[:, 0])
    snapped = offsets.copy()
    snapped[placed, 0] = bounds[np.searchsorted(bounds, offsets[placed, 0], side="right") - 1]
    snapped[real, 1] = bounds[np.minimum(np.searchsorted(bounds, offsets[real, 1], side="left"), len(bounds) - 1)]
    snapped[placed & ~real, 1] = snapped[placed & ~real, 0]
    return snapped


def word_of_tokens(offsets: np.ndarray, in_context: np.ndarray, words: np.ndarray,
                   window_starts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For the tokens of one window (or of several, one after another, each but the first starting at a place of
    ``window_starts``): the character span of each paragraph token's word (-1 elsewhere), and which tokens carry the
    word's tag (the token holding its first character)."""
    spans = np.full_like(offsets, -1)
    if not len(words):
        return spans, np.zeros(len(offsets), dtype=bool)
    index = np.minimum(np.searchsorted(words[:, 1], offsets[:, 0], side="right"), len(words) - 1)
    word = words[index]
    belongs = in_context & (word[:, 0] <= np.maximum(offsets[:, 1] - 1, offsets[:, 0])) & (word[:, 1] > offsets[:, 0])
    spans[belongs] = word[belongs]
    first = belongs & (offsets[:, 0] <= word[:, 0]) & (word[:, 0] < offsets[:, 1])
    # Byte-level BPE splits a character into several tokens with its offsets: tag only the first.
    after_first = first[:-1] & (spans[1:] == spans[:-1]).all(axis=1)
    if window_starts is not None:
        starts = np.asarray(window_starts, dtype=np.int64)
        after_first[starts[(starts > 0) & (starts < len(offsets))] - 1] = False  # a window's first token follows none
    first[1:] &= ~after_first
    return spans, first
