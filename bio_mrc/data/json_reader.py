"""The one JSON reader: every failure becomes a :class:`DataFormatError` naming the file."""

from __future__ import annotations

import codecs
import gzip
import json
import math
import re
import zlib
from itertools import accumulate
from pathlib import Path
from typing import Any, BinaryIO, Iterable

from ..errors import DataFormatError
from ..io import home_expanded, special_file_kind
from ..json_syntax import json_value, syntax_hint
from .limits import max_json_bytes, read_at_most

__all__ = ["FLOAT_TOO_LARGE", "MAX_NESTING", "NESTED_TOO_DEEP", "DataFormatError", "NotPlainJsonError",
           "RepeatedKeyError", "check_not_special", "compression_hint", "loads", "other_compression", "lone_surrogate_escape",
           "nested_too_deep", "not_utf8", "parse_json_text", "read_json", "read_json_text", "repeated_key_index",
           "special_number", "wide_without_mark"]


class NotPlainJsonError(ValueError):
    """Text that parses as JSON but cannot stand for what it says: a value would be lost or unwritable. ``located``:
    the message names the line (and column) of the problem already."""

    located = False


class LoneSurrogateError(NotPlainJsonError):
    """A ``\\uD800``-``\\uDFFF`` escape that is half of no UTF-16 pair, named by its line and column."""

    located = True


class RepeatedKeyError(NotPlainJsonError):
    """An object names one key twice: JSON keeps only the last value, and the other would be lost without a word."""

    def __init__(self, key: str) -> None:
        super().__init__(f"the key {json_value(key)} appears twice in one object (JSON keeps only the last, losing the other)")
        self.key = key


def _object_without_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        raise RepeatedKeyError(next(key for key, _ in pairs if key in seen or seen.add(key)))
    return found


# What a scan for a repeated key stops at: a quote, a backslash (whose next character is passed over), a bracket, a colon.
_KEY_STOP = re.compile(r'["\\{}\[\]:]')
_LONGEST_KEY = 1 << 10  # characters of a string kept to compare as a key: a longer one (a context) is not held


def repeated_key_index(chunks: Iterable[str]) -> int | None:
    """The index (in characters) of the first key an object of JSON text, given a piece at a time, names twice; None
    where none is. The parser names no place, so this scan reads the text again, on that error path only."""
    objects: list[set[str] | None] = []  # a set of keys per open object, None per open array
    inside, skip, seen, start, pieces, last = False, 0, 0, 0, [], None
    for chunk in chunks:
        for stop in _KEY_STOP.finditer(chunk, max(skip - seen, 0)):
            at, char = seen + stop.start(), stop.group()
            if at < skip:  # the character an escape's backslash takes
                continue
            if inside and char == "\\":
                skip = at + 2
            elif char == '"':
                if inside:
                    pieces.append(chunk[max(start - seen, 0) : stop.start()])
                    last = (start - 1, "".join(pieces)) if sum(map(len, pieces)) <= _LONGEST_KEY else None
                inside, start, pieces = not inside, at + 1, []
            elif not inside and char in "{[":
                objects.append(set() if char == "{" else None)
            elif not inside and char in "}]" and objects:
                objects.pop()
            elif not inside and char == ":" and last is not None and objects and objects[-1] is not None:
                key = json.loads(f'"{last[1]}"')
                if key in objects[-1]:
                    return last[0]
                objects[-1].add(key)
        if inside and sum(map(len, pieces)) <= _LONGEST_KEY:
            pieces.append(chunk[max(start - seen, 0) :])
        seen += len(chunk)
    return None


def _located_repeated_key(err: RepeatedKeyError, text: str, first_line: int) -> RepeatedKeyError:
    """``err`` with the line and column of the key named twice in ``text``."""
    at = repeated_key_index([text])
    if at is None:
        return err
    located = RepeatedKeyError(err.key)
    located.args = (f"{err} (line {text.count(chr(10), 0, at) + first_line}, column {at - text.rfind(chr(10), 0, at)})",)
    located.located = True
    return located


class SpecialNumberError(NotPlainJsonError):
    """``NaN``, ``Infinity`` or ``-Infinity`` where a number is (Python's ``json.dumps`` writes them)."""


def special_number(name: str) -> str:
    """The refusal of ``NaN``, ``Infinity`` or ``-Infinity`` (``name``), alike from the whole-file and streamed readers."""
    return f"{name} is not a JSON number (Python writes it, the JSON standard and other readers refuse it)"


def _no_special_number(name: str) -> Any:
    raise SpecialNumberError(special_number(name))


# A whole string (skipped, so a "NaN" inside one is text) or a special number outside any string.
_STRING_OR_SPECIAL = re.compile(r'"(?:[^"\\]++|\\.)*+"|(-?Infinity|NaN)')


def _located_special_number(err: SpecialNumberError, text: str, first_line: int) -> SpecialNumberError:
    """``err`` with the line and column of the first special number of ``text``: the parser names neither, and one
    value among thousands of records is otherwise not to be found."""
    found = next((m for m in _STRING_OR_SPECIAL.finditer(text) if m.group(1)), None)
    if found is None:
        return err
    at = found.start(1)
    located = SpecialNumberError(f"{err} (line {text.count(chr(10), 0, at) + first_line}, column {at - text.rfind(chr(10), 0, at)})")
    located.located = True
    return located


MAX_NESTING = 256  # levels of arrays and objects: real data nests under 10, and Python's parser stops near 1,000
NESTED_TOO_DEEP = f"arrays or objects nested deeper than {MAX_NESTING} levels"
_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"')
_NOT_BRACKET = bytes(byte for byte in range(128) if chr(byte) not in "[]{}")
_STEP = [0] * 128
_STEP[ord("[")] = _STEP[ord("{")] = 1
_STEP[ord("]")] = _STEP[ord("}")] = -1


def nested_too_deep(text: str) -> bool:
    """Whether ``text`` (JSON) opens more than :data:`MAX_NESTING` arrays or objects one inside another: counted over
    its brackets outside strings, in C-speed passes, so both readers refuse at one depth whatever the call stack."""
    if text.count("[") + text.count("{") <= MAX_NESTING:  # too few brackets to nest so deep: most texts stop here
        return False
    brackets = _STRING.sub("", text).encode("ascii", "ignore").translate(None, _NOT_BRACKET)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > MAX_NESTING


FLOAT_TOO_LARGE = "a number too large for a float (it would be read as infinity)"


def _finite_float(text: str) -> float:
    """A JSON number with a fraction or exponent, refused where it overflows (``1e400``), as yajl refuses it."""
    value = float(text)
    if math.isinf(value):
        raise NotPlainJsonError(FLOAT_TOO_LARGE)
    return value


SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
# Text read from an escape boundary on: plain characters, an escape other than \\u (\\\\ among them, so a backslash's
# parity is kept), a \\u escape of no surrogate, and a high surrogate's escape with its low one, each taken whole and
# never given back (possessive), so the first surrogate escape that follows is one of no pair. One pass in the regex
# engine, linear in the text (a loop over the escapes in Python took 35 s for a 5,000,000-character context).
_PAIRED_THEN_LONE = re.compile(r"(?:[^\\]++|\\[^u]|\\u(?![dD][89a-fA-F])"
                               r"|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})*+"
                               r"(?=\\u[dD][89a-fA-F][0-9a-fA-F]{2})")


def lone_surrogate_escape(text: str, begin: int = 0, end: int | None = None) -> re.Match[str] | None:
    """The first ``\\uD800``-``\\uDFFF`` escape starting in ``text[begin:end]`` that is half of no UTF-16 pair:
    Python keeps it as a character no UTF-8 file can hold, so a model's answer, a report or a prediction file with
    it could not be written. ``text`` is read from its start (where no escape is cut), so an escape's partner and
    the backslashes before it are known; an escape before ``begin`` is left to the caller that decided it."""
    at = 0
    while (found := _PAIRED_THEN_LONE.match(text, at)) is not None:
        hit = SURROGATE_ESCAPE.match(text, found.end())
        if end is not None and hit.start() >= end:
            return None
        if hit.start() >= begin:
            return hit
        at = hit.end()
    return None


def loads(text: str, first_line: int = 1, finite: bool = False) -> Any:
    """``json.loads`` that refuses what would lose or garble a value (:class:`NotPlainJsonError`): an object with a
    repeated key, ``NaN``/``Infinity``, and a lone UTF-16 surrogate escape (named by line and column, the text's
    first line numbered ``first_line``: a JSON Lines line's number in its file); with ``finite``, a number too large
    for a float (``1e400``), which the streaming reader of data files refuses too; and arrays or objects nested past
    :data:`MAX_NESTING` levels, as that reader refuses them."""
    if lone := lone_surrogate_escape(text):
        line = text.count("\n", 0, lone.start()) + first_line
        column = lone.start() - text.rfind("\n", 0, lone.start())
        raise LoneSurrogateError(f"{lone.group()} is half of a UTF-16 surrogate pair, no character (line {line}, column {column})")
    try:
        value = json.loads(text, object_pairs_hook=_object_without_repeated_keys, parse_constant=_no_special_number,
                           parse_float=_finite_float if finite else float)
    except RecursionError:
        raise NotPlainJsonError(NESTED_TOO_DEEP) from None
    except SpecialNumberError as err:
        raise _located_special_number(err, text, first_line) from None
    except RepeatedKeyError as err:
        raise _located_repeated_key(err, text, first_line) from None
    except ValueError as err:  # an integer past Python's digit limit: its int() refuses it, the scanner passes it on
        if isinstance(err, (json.JSONDecodeError, NotPlainJsonError)):
            raise
        raise NotPlainJsonError(f"a number too long to read ({str(err).split(';')[0]})") from None
    if nested_too_deep(text):  # what Python's parser followed, the streamed reader refuses alike
        raise NotPlainJsonError(NESTED_TOO_DEEP)
    return value


_WIDE_MARKS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"), (codecs.BOM_UTF16_LE, "UTF-16"),
               (codecs.BOM_UTF16_BE, "UTF-16"))
GZIP_MAGIC = b"\x1f\x8b"  # the first bytes of every gzip file
GZIP_HINT = ("; it is gzip-compressed: decompress it first (gunzip), or, for JSON Lines, CSV or TSV, name it with .gz at "
             "the end (.jsonl.gz), which is read decompressed")


# Most text that is not UTF-8 is Windows-1252: Latin-1 but for curly quotes and dashes where Latin-1 has invisible
# controls (0x80-0x9F), so converting it as Latin-1 would turn them into those controls.
LATIN1_HINT = "; convert it first, e.g. iconv -f cp1252 -t utf-8"
HEAD_BYTES = 10  # the first bytes that tell a compressed file
# The first bytes of the other compressed files data sets ship as, and what to do with each.
_COMPRESSED = ((re.compile(rb"\xfd7zXZ\x00"), "it is xz-compressed: decompress it first (unxz)"),
               (re.compile(rb"BZh[1-9](?:1AY&SY|\x17rE8P\x90)"), "it is bzip2-compressed: decompress it first (bunzip2)"),
               (re.compile(rb"\x28\xb5\x2f\xfd"), "it is zstd-compressed: decompress it first (unzstd)"),
               (re.compile(rb"PK\x03\x04"), "it is a zip archive: extract its file first (unzip)"))


def compression_hint(head: bytes) -> str:
    """``"; it is xz-compressed: decompress it first (unxz)"`` where a file's first bytes ``head`` are those of a
    gzip, xz, bzip2 or zstd file or a zip archive (whose bytes are no text, or begin as text: ``BZh``, ``PK``);
    "" otherwise."""
    if head.startswith(GZIP_MAGIC):
        return GZIP_HINT
    return next((f"; {hint}" for magic, hint in _COMPRESSED if magic.match(head)), "")


def misnamed_gzip(head: bytes, path: str | Path) -> str | None:
    """``"it is gzip-compressed: ..."`` where a file's first bytes ``head`` are gzip's and its ``path`` does not end in
    ``.gz``, the name a reader decompresses by (every format would read its bytes as text); None otherwise."""
    if not head.startswith(GZIP_MAGIC) or Path(path).suffix.lower() == ".gz":
        return None
    return GZIP_HINT.removeprefix("; ")


def other_compression(head: bytes) -> str | None:
    """``"it is xz-compressed: decompress it first (unxz)"`` where a file's first bytes ``head`` are those of a file
    compressed by another tool than gzip (xz, bzip2, zstd, zip), which no reader decompresses; None otherwise."""
    return next((hint for magic, hint in _COMPRESSED if magic.match(head)), None)


# Which bytes of the first four are NUL, in text whose first two characters are ASCII, as JSON's are (RFC 4627).
_WIDE_NULS = {(True, True, True, False): "UTF-32BE", (False, True, True, True): "UTF-32LE",
              (True, False, True, False): "UTF-16BE", (False, True, False, True): "UTF-16LE"}


def wide_without_mark(head: bytes) -> str | None:
    """A text file saved as UTF-16 or UTF-32 without a byte-order mark: its first bytes ``head`` hold NUL bytes where
    those encodings write an ASCII character (UTF-8 text holds none: JSON refuses a NUL anywhere, and a document of
    prose has none); the message that names the encoding and how to convert it, or None."""
    name = _WIDE_NULS.get(tuple(byte == 0 for byte in head[:4])) if len(head) >= 4 else None
    if name is None:
        return None
    return (f"not UTF-8 text (a NUL byte at byte {head.index(0)}); it looks like {name} without a byte-order mark: "
            f"convert it first, e.g. iconv -f {name} -t UTF-8")


def not_utf8(err: UnicodeDecodeError, where: str = "") -> str:
    """The message of text that is not UTF-8: where decoding failed, and, for text that starts with a UTF-16 or UTF-32
    byte-order mark (what Windows editors save as "Unicode"), that encoding and how to convert it; for compressed
    bytes under a name that does not say so (:func:`compression_hint`), so; for other text, how to convert Windows-1252 (and Latin-1)."""
    head = err.object[:4] if err.start < 4 else b""
    wide = next((name for mark, name in _WIDE_MARKS if head.startswith(mark)), None)
    hint = f"; it looks like {wide}: convert it first, e.g. iconv -f {wide} -t UTF-8" if wide else LATIN1_HINT
    hint = compression_hint(err.object[:HEAD_BYTES]) or hint
    return f"not UTF-8 text ({err.reason} {where or 'at'} byte {err.start}){hint}"


def check_not_special(path: str | Path, expected: str = "a file") -> None:
    """A :class:`DataFormatError` naming ``path`` when it is a FIFO, a device or a socket: reading one waits for a
    writer or never ends (``/dev/zero``)."""
    if kind := special_file_kind(path):
        raise DataFormatError(f"expected {expected}, found {kind}", source=str(path))


def read_json(path: str | Path, finite: bool = False, decompress: bool = False, bounded: bool = False) -> Any:
    """Parse a UTF-8 JSON file, turning every failure into a DataFormatError naming the file (``finite``: as
    :func:`loads`; ``decompress`` and ``bounded``: as :func:`read_json_text`)."""
    path = home_expanded(path)
    return parse_json_text(read_json_text(path, decompress, bounded), str(path), finite)


def read_json_text(path: str | Path, decompress: bool = False, bounded: bool = False) -> str:
    """The text of a UTF-8 JSON (or JSON Lines) file, not empty; with ``decompress``, a gzip-compressed file, told by
    its first bytes whatever its name, is read decompressed; with ``bounded``, a file larger than
    :func:`~bio_mrc.data.limits.max_json_bytes` (decompressed) is refused, read no further. Every failure is a
    DataFormatError naming the file."""
    path = home_expanded(path)
    source = str(path)
    check_not_special(path, "a JSON file")
    try:
        with open(path, "rb") as handle:
            raw = _file_bytes(handle, source, decompress, bounded)
    except FileNotFoundError:
        raise DataFormatError("file not found", source=source) from None
    except IsADirectoryError:
        raise DataFormatError("expected a JSON file, found a folder", source=source) from None
    if wide := wide_without_mark(raw[:4]):  # ASCII with NULs between: valid UTF-8, which json calls bad JSON
        raise DataFormatError(wide, source=source)
    try:
        text = raw.decode("utf-8-sig")  # a byte-order mark is allowed, as Python's json.load allows it
    except UnicodeDecodeError as err:
        raise DataFormatError(not_utf8(err), source=source) from None
    if not text.strip():  # no value at all: an empty file, not one cut short
        raise DataFormatError("the file is empty: it holds no JSON value", source=source)
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text  # universal newlines, as a text read


def _file_bytes(handle: BinaryIO, source: str, decompress: bool, bounded: bool) -> bytes | bytearray:
    """The bytes of an open file, decompressed a chunk at a time where ``decompress`` and its first bytes are gzip's
    (a 1 MB gzip file can hold a gigabyte), and within the limit where ``bounded``."""
    compressed = decompress and handle.read(2) == GZIP_MAGIC
    handle.seek(0)
    reader = gzip.GzipFile(fileobj=handle, mode="rb") if compressed else handle
    most = max_json_bytes() if bounded else None
    try:
        raw = reader.read() if most is None else read_at_most(reader, most, compressed)
    except EOFError:
        raise DataFormatError("the gzip stream ends early (a truncated file?)", source=source) from None
    except (OSError, zlib.error) as err:
        if not compressed:
            raise
        raise DataFormatError(f"not a readable gzip file: {err}", source=source) from None
    if raw is None:
        raise DataFormatError(f"the file is larger than {most:,} bytes{' decompressed' if compressed else ''} "
                              "(BIO_MRC_MAX_JSON_BYTES raises the limit)", source=source)
    return raw


def parse_json_text(text: str, source: str, finite: bool = False) -> Any:
    """The JSON value of a file's whole ``text``; a failure is a DataFormatError naming ``source`` and where."""
    try:
        return loads(text, finite=finite)
    except NotPlainJsonError as err:
        raise DataFormatError(str(err), source=source) from None
    except json.JSONDecodeError as err:
        # The parser ran out of text (or inside a string that never closes): the file was cut short.
        truncated = not text[err.pos :].strip() or err.msg.startswith("Unterminated string")
        problem = "the JSON ends early (a truncated file?)" if truncated else "not valid JSON"
        raise DataFormatError(f"{problem}: {err.msg} (line {err.lineno}, column {err.colno}){syntax_hint(text, err.pos)}",
                              source=source) from None
