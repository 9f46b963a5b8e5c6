"""How much one input may hold: limits that refuse a file in one line before it costs more memory or time
than any real data set needs (a gzip file of 255 KB can hold one context of 250 million characters).

Each limit has a default and an environment variable that changes it, read when the limit is checked:

* ``BIO_MRC_MAX_CONTEXT_CHARS`` (default 5,000,000): the longest context, in characters (the longest SQuAD
  context has 3,706, a long scientific paper 200,000);
* ``BIO_MRC_MAX_LINE_BYTES`` (default 64 MiB): the longest line of a JSON Lines file, decompressed; a
  longer line is refused after reading at most this much of it;
* ``BIO_MRC_MAX_HEADER_BYTES`` (default 1 MiB) and ``BIO_MRC_MAX_COLUMNS`` (default 1,000): a CSV or TSV
  header row, and the fields of any of its rows;
* ``BIO_MRC_MAX_DATA_BYTES`` (default 8 GiB): a compressed data file (``.jsonl.gz``, ``.csv.gz``, any ``.gz`` of
  questions), decompressed, and a Parquet file, decoded: about a hundred times SQuAD 1.1's training set as JSON Lines
  (85 MB), while a gzip file of 8 MB can hold it (and a Parquet file of kilobytes, one context repeated). A larger one
  is refused once this much is read;
* ``BIO_MRC_MAX_JSON_BYTES`` (default 1 GiB): a JSON file read whole, decompressed: a predictions or no-answer
  probability file (a million questions' answers take about 100 MB), an earlier comparison's report (the largest
  committed one holds 20 MB). A larger one is refused after reading at most this much of it (a plain file by its
  size, unread).
"""

from __future__ import annotations

import os
from typing import BinaryIO

from ..errors import ConfigError

DEFAULTS = {"BIO_MRC_MAX_CONTEXT_CHARS": 5_000_000, "BIO_MRC_MAX_LINE_BYTES": 64 << 20,
            "BIO_MRC_MAX_HEADER_BYTES": 1 << 20, "BIO_MRC_MAX_COLUMNS": 1_000, "BIO_MRC_MAX_JSON_BYTES": 1 << 30,
            "BIO_MRC_MAX_DATA_BYTES": 8 << 30}
_CHUNK = 1 << 20  # bytes read at a time: a gzip file of 1 MB can hold a gigabyte


def limit(name: str) -> int:
    """The limit ``name`` (one of :data:`DEFAULTS`): its environment variable's value, else the default."""
    text = os.environ.get(name, "").strip()
    if not text:
        return DEFAULTS[name]
    if not (text.isascii() and text.isdigit()) or int(text) < 1:  # '²' is a digit to isdigit(), and no int
        raise ConfigError(f"{name}={text!r}: a positive whole number is needed (default {DEFAULTS[name]})")
    return int(text)


def max_context_chars() -> int:
    return limit("BIO_MRC_MAX_CONTEXT_CHARS")


def max_line_bytes() -> int:
    return limit("BIO_MRC_MAX_LINE_BYTES")


def max_header_bytes() -> int:
    return limit("BIO_MRC_MAX_HEADER_BYTES")


def max_columns() -> int:
    return limit("BIO_MRC_MAX_COLUMNS")


def max_json_bytes() -> int:
    return limit("BIO_MRC_MAX_JSON_BYTES")


def max_data_bytes() -> int:
    return limit("BIO_MRC_MAX_DATA_BYTES")


def read_at_most(handle: BinaryIO, most: int, compressed: bool) -> bytearray | None:
    """All the bytes of ``handle`` (a decompressing one where ``compressed``) where they are at most ``most``; else
    None, having held no more than ``most`` and one. A plain file's size is its bytes', so one larger is not read."""
    if not compressed and os.fstat(handle.fileno()).st_size > most:
        return None
    held = bytearray()
    while chunk := handle.read(min(_CHUNK, most + 1 - len(held))):
        held += chunk
        if len(held) > most:
            return None
    return held
