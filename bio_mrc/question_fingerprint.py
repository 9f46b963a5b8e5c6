"""A set of questions in eight bytes each: the sorted 64-bit hashes of each question's text and context, kept in a model's
run record (``training_questions``) so that ``tune`` can tell its training questions from held-out ones.

A question is hashed by what it asks, not by its id or file: its text and its context, each in Unicode NFC with every
run of whitespace one space, so the same question read from SQuAD JSON, JSON Lines or a table matches under any id.
Two questions share a 64-bit hash by chance about once in 1.8e19 pairs: a held-out file of 10,000 questions against
88,000 training questions matches one by chance about once in 20 billion tunings.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import unicodedata
from typing import Any, Mapping, Sequence

import numpy as np

from .types import Example

SCHEME = "blake2b-64"  # blake2b with an 8-byte digest, unkeyed, of question, NUL, context (normalised as above)
VERSION = 1
HASH_BYTES = 8
# 1 million questions: 8 MB of hashes, about 10.7 MB in base64, within the 16 MiB a model folder's record may hold.
MAX_QUESTIONS = 1_000_000
MAX_BASE64_CHARS = 4 * ((HASH_BYTES * MAX_QUESTIONS + 2) // 3)


def normalised(text: str) -> bytes:
    """``text`` as a question's hash reads it (UTF-8): in NFC, each run of whitespace one space, none at either end."""
    text = unicodedata.normalize("NFC", text)
    # printable: no whitespace but the ASCII space (str.isprintable), so single spaces inside are already the form
    if not (text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " "):
        text = " ".join(text.split())
    return text.encode("utf-8", "surrogatepass")


def question_hashes(examples: Sequence[Example]) -> np.ndarray:
    """Each question's 64-bit hash, in order (one pass; a context shared by several questions is normalised once)."""
    contexts: dict[str, bytes] = {}
    digests = bytearray()
    for example in examples:
        context = contexts.get(example.context)
        if context is None:
            context = contexts[example.context] = normalised(example.context)
        digests += hashlib.blake2b(normalised(example.question) + b"\0" + context, digest_size=HASH_BYTES).digest()
    return np.frombuffer(bytes(digests), dtype="<u8")


def fingerprint(examples: Sequence[Example], earlier: Mapping[str, Any] | None = None,
                continued: bool = False) -> dict[str, Any] | None:
    """The fingerprint of ``examples`` joined with ``earlier`` (a model's record of the stages before, where it is of this
    scheme); None past :data:`MAX_QUESTIONS` questions, which no record holds. ``continued``: ``examples`` continue a
    model; where its record keeps no fingerprint this version reads (an earlier version's model, a converted one), or one
    itself partial, the fingerprint says so (``partial``: an earlier stage's questions are not in it)."""
    hashes = question_hashes(examples)
    readable = earlier is not None and is_readable(earlier)
    if readable:
        hashes = np.concatenate([hashes, decoded_hashes(earlier)])
    unique = np.unique(hashes).astype("<u8")
    if len(unique) > MAX_QUESTIONS:
        return None
    partial = continued and (not readable or earlier.get("partial") is True)
    return {"scheme": SCHEME, "version": VERSION, "questions": int(len(unique)),
            "hashes": base64.b64encode(unique.tobytes()).decode("ascii"), **({"partial": True} if partial else {})}


def is_readable(record: Mapping[str, Any]) -> bool:
    """Whether this version reads ``record``'s hashes (a later scheme's are kept as they are, unread)."""
    return record.get("scheme") == SCHEME and record.get("version") == VERSION


def decoded_hashes(record: Mapping[str, Any]) -> np.ndarray:
    """The sorted hashes of a record :func:`fingerprint_problem` passes."""
    return np.frombuffer(base64.b64decode(record["hashes"], validate=True), dtype="<u8")


def fingerprint_problem(record: Mapping[str, Any]) -> str | None:
    """What is wrong with a fingerprint of this scheme beyond its fields' kinds (the run record's schema checks those):
    base64 that does not decode, hashes that do not number ``questions``, or that are not sorted and distinct."""
    if not is_readable(record):
        return None
    try:
        raw = base64.b64decode(record["hashes"], validate=True)
    except (binascii.Error, ValueError) as err:
        return f"hashes: not base64 ({err})"
    if len(raw) != HASH_BYTES * record["questions"]:
        return f"hashes: {len(raw):,} bytes, not {HASH_BYTES} for each of its {record['questions']:,} questions"
    hashes = np.frombuffer(raw, dtype="<u8")
    if len(hashes) > 1 and not bool(np.all(hashes[1:] > hashes[:-1])):
        return "hashes: not sorted and distinct, as bio_mrc writes them"
    return None


def known_questions(record: Mapping[str, Any], examples: Sequence[Example]) -> int:
    """How many of ``examples`` ``record`` holds (each question of the file counted, repeats too)."""
    return int(np.isin(question_hashes(examples), decoded_hashes(record), assume_unique=False).sum())


__all__ = ["MAX_BASE64_CHARS", "MAX_QUESTIONS", "SCHEME", "VERSION", "decoded_hashes", "fingerprint", "fingerprint_problem",
           "is_readable", "known_questions", "normalised", "question_hashes"]
