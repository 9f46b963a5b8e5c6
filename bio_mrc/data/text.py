"""The one check of a text the package reads: a string with something to read, that a UTF-8 file can hold.

A text of only whitespace, control and invisible characters (NUL, zero-width spaces, soft hyphens) tokenizes
to nothing: a question of it would be answered with a confident span of nothing it asked, so it is refused
here, where every entry point (data files, ``AnswerExtractor``, the pipeline, ``serve``) checks its texts.

A lone UTF-16 surrogate (from a ``\\ud800`` escape, a ``datasets`` column or an undecodable byte of a
command-line argument) is a Python character no UTF-8 file can hold: an answer, a prediction file or
a report with it could not be written, so it is refused when the text is read, not after training.
"""

from __future__ import annotations

import json
import shlex
import unicodedata
from pathlib import Path
from typing import Any

from ..errors import DataFormatError, a_type
from ..io import home_expanded
from .json_reader import check_not_special, not_utf8, wide_without_mark
from .limits import max_context_chars


def unwritable_character(text: str) -> str | None:
    """``U+D8xx`` of the first character of ``text`` that UTF-8 cannot encode, or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        return f"U+{ord(text[err.start]):04X}"
    return None


def carries_text(text: str) -> bool:
    """Whether ``text`` has a character a tokenizer reads: one that is not whitespace, a control or format
    character (NUL, a zero-width space, a soft hyphen, a byte-order mark), a lone combining mark or U+FFFD."""
    return any(unicodedata.category(c)[0] not in "CZM" and c != "\ufffd" for c in text)


def check_text(value: Any, what: str, record: str | None = None, source: str | None = None) -> str:
    """``value`` if it is a string with a readable character (:func:`carries_text`) and only writable characters; else a
    :class:`DataFormatError` naming ``what`` (e.g. ``question``), the record and the file."""
    if isinstance(value, (bytes, bytearray)):
        raise DataFormatError(f"the {what} is bytes, not text (decode it, e.g. value.decode('utf-8'))", record, source)
    if not isinstance(value, str) or not value.strip():
        raise DataFormatError(f"empty or missing {what}" + ("" if value is None or isinstance(value, str) else f" (got {a_type(value)})"),
                              record, source)
    if character := unwritable_character(value):
        raise DataFormatError(f"the {what} holds {character}, half of a UTF-16 surrogate pair or an undecodable byte, "
                              "which no UTF-8 file can hold (check the text's encoding)", record, source)
    if not carries_text(value):
        raise DataFormatError(f"the {what} holds no readable text: only whitespace, control or invisible characters "
                              "(e.g. NUL, zero-width spaces, soft hyphens), which tokenize to nothing", record, source)
    return value


def check_context_length(context: str, record: str | None = None, source: str | None = None) -> str:
    """``context`` if it is no longer than :func:`~bio_mrc.data.limits.max_context_chars`; else a
    :class:`DataFormatError` before any window of it is made."""
    check_context_chars(len(context), record, source)
    return context


def check_context_chars(length: int, record: str | None = None, source: str | None = None) -> None:
    """A :class:`DataFormatError` where a context of ``length`` characters is longer than
    :func:`~bio_mrc.data.limits.max_context_chars`."""
    most = max_context_chars()
    if length > most:
        raise DataFormatError(f"the context has {length:,} characters, more than the limit of {most:,} "
                              "(BIO_MRC_MAX_CONTEXT_CHARS raises it)", record, source)


def read_text_file(path: str | Path) -> str:
    """A UTF-8 text file as it is, line endings included (a byte-order mark allowed and left out), or a
    :class:`DataFormatError` naming it: missing, a folder, another encoding such as Latin-1 (with the byte where
    decoding failed), or longer than a context may be (read no further than the limit; the rest is counted)."""
    path = home_expanded(path)
    source = str(path)
    check_not_special(path, "a text file")
    try:  # line endings kept as they are: answers' offsets count the file's own characters
        with open(path, "rb") as handle:  # UTF-16 without a byte-order mark decodes as UTF-8, a NUL between letters
            if wide := wide_without_mark(handle.read(4)):
                raise DataFormatError(wide, source=source)
        with open(path, encoding="utf-8-sig", newline="") as handle:
            most = max_context_chars()
            text = handle.read(most + 1)
            if len(text) > most:  # a file of gigabytes is counted a chunk at a time, never held
                check_context_chars(len(text) + sum(map(len, iter(lambda: handle.read(1 << 20), ""))), source=source)
            return check_text(text, "text", source=source)
    except FileNotFoundError:
        raise DataFormatError("file not found", source=source) from None
    except IsADirectoryError:
        raise DataFormatError("expected a text file, found a folder", source=source) from None
    except UnicodeDecodeError as err:
        raise DataFormatError(not_utf8(err), source=source) from None


def check_not_questions(text: str, source: str) -> None:
    """A :class:`DataFormatError` where the text of a document to answer from is a file of questions instead (SQuAD
    JSON, JSON Lines or a table with question and context columns): its JSON would be answered as prose."""
    if kind := questions_layout(text):
        raise DataFormatError(f"{kind}, not a document's text: `bio-mrc predict --model MODEL --data {shlex.quote(source)} "
                              "--output PREDS.json` answers its questions", source=source)


def questions_layout(text: str) -> str | None:
    """What file of questions ``text`` reads as (its first line or its whole JSON value), or None for prose."""
    first = text.lstrip().partition("\n")[0].strip()
    cells = {cell.strip().strip('"').lower() for cell in first.replace("\t", ",").split(",")}
    if {"question", "context"} <= cells:
        return "a table of questions (its header names question and context columns)"
    for value in (_json_value(part) for part in (text, first)):  # lazily: a file on one line is parsed once
        if isinstance(value, dict) and isinstance(value.get("data"), list):
            return "SQuAD JSON (an object with a 'data' list)"
        record = value[0] if isinstance(value, list) and value else value
        if isinstance(record, dict) and ({"question", "qas", "header"} & set(record)):
            return "a file of questions in JSON"
    return None


def _json_value(text: str) -> Any:
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested past the parser's stack, no file of questions
        return None
