"""An official SQuAD JSON file read one article at a time (``ijson``), refusing what :func:`read_json` refuses.

The whole-file reader holds every article in memory; this one holds one, and of an article whose ``paragraphs``
follow its ``title`` (SQuAD's own layout) one paragraph (:class:`Paragraph`): a file of one article with every
question in it stays as flat as one of many articles. Its checks are the same:
a repeated key, ``NaN``/``Infinity``, a lone UTF-16 surrogate escape (yajl would turn it into ``?``
without a word, so the raw bytes are scanned for one), text that is not UTF-8, a file cut short;
each becomes a :class:`DataFormatError` naming the file.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterator

import ijson

from ..json_syntax import LOOK, syntax_hint
from .json_reader import (
    FLOAT_TOO_LARGE, HEAD_BYTES, MAX_NESTING, NESTED_TOO_DEEP, DataFormatError, NotPlainJsonError, RepeatedKeyError,
    lone_surrogate_escape, not_utf8, repeated_key_index, special_number, wide_without_mark,
)

_BOM = b"\xef\xbb\xbf"
NOT_SQUAD_OBJECT = "expected an object with a 'data' list (official SQuAD layout)"
# An array of articles lacks SQuAD's wrapping object; pandas' to_json(orient="records") writes rows as one array.
FOUND_ARRAY = (", found a JSON array: SQuAD's articles are read inside {\"data\": [...]}, and questions in the SQuAD "
               "columns as JSON Lines, one object a line (.jsonl; jq -c '.[]' FILE writes them)")
_ESCAPE_WIDTH = 12  # a surrogate pair's two escapes: deciding about one needs the 12 characters from it on
#: The most bytes one read of a long string takes. yajl reads a string that a read cuts again from its start with
#: each read, so a string of many reads (a 5,000,000-character context written with ``\\u`` escapes, as Python's
#: ``json.dump`` writes every character past ASCII: 30 MB) took time of its length squared over the read size (75 s
#: in 64 KiB reads); reads inside a string double up to this, and a string's end brings them back to ijson's size.
_LONGEST_READ = 16 << 20


class _SurrogateCheckedReader:
    """A binary file whose bytes are scanned, as they are read, for a ``\\uD800``-``\\uDFFF`` escape
    that is half of no pair (:func:`lone_surrogate_escape`; escapes are ASCII, so Latin-1 maps bytes to characters).
    A read that ends no string is followed by one twice as long (:data:`_LONGEST_READ`)."""

    def __init__(self, raw: BinaryIO, source: str) -> None:
        self.raw, self.source, self.tail, self.decided = raw, source, "", 0
        self.offset, self.lines, self.line_start = 0, 0, 0  # of the tail's first byte: bytes and lines before it
        self.reading = 0  # the bytes the next read takes at least: more than asked inside a long string

    def read(self, size: int = -1) -> bytes:
        chunk = self.raw.read(size if size is None or size < 0 else max(size, self.reading))
        if self.tail == "" and self.decided == 0 and self.offset == 0 and chunk.startswith(_BOM):  # allowed, as read_json allows it
            chunk = chunk[len(_BOM):]
        text = self.tail + chunk.decode("latin-1")
        limit = len(text) if not chunk else max(len(text) - _ESCAPE_WIDTH, self.decided)
        hit = lone_surrogate_escape(text, self.decided, limit)
        if hit is not None:
            raise DataFormatError(f"{hit.group()} is half of a UTF-16 surrogate pair, no character ({self._where(text, hit.start())})",
                                  source=self.source)
        start = max(limit - 6, 0)  # a low surrogate's leader sits 6 characters before it
        run = start - len(text[:start].rstrip("\\"))  # and an escape's backslashes count back from it: their parity
        start -= run % 2  # alone decides, so a run of millions (a context of backslashes) is kept as one or none
        self._advance(text, start)
        self.reading = 0 if _unescaped_quote(text, len(self.tail)) else min(2 * len(chunk), _LONGEST_READ)
        self.tail, self.decided = text[start:], limit - start
        return chunk

    def _advance(self, text: str, count: int) -> None:
        """Move the tail's start ``count`` bytes on in ``text``, counting the lines passed."""
        newlines = text.count("\n", 0, count)
        if newlines:
            self.lines += newlines
            self.line_start = self.offset + text.rindex("\n", 0, count) + 1
        self.offset += count

    def _where(self, text: str, index: int) -> str:
        """Line, column (in bytes, from 1) and byte offset of ``text[index]``."""
        newlines = text.count("\n", 0, index)
        line_start = self.offset + text.rindex("\n", 0, index) + 1 if newlines else self.line_start
        at = self.offset + index
        return f"line {self.lines + newlines + 1}, column {at - line_start + 1}, byte {at}"


def _unescaped_quote(text: str, begin: int) -> bool:
    """Whether ``text[begin:]`` holds a ``"`` that begins or ends a string: one after an even run of backslashes
    (the text before ``begin`` keeps such a run's parity, :class:`_SurrogateCheckedReader`)."""
    at = text.find('"', begin)
    while at >= 0:
        before = at
        while before > 0 and text[before - 1] == "\\":
            before -= 1
        if (at - before) % 2 == 0:
            return True
        at = text.find('"', at + 1)
    return False


def utf8_error(path: Path, chunk_size: int = 1 << 20) -> UnicodeDecodeError | None:
    """The first place ``path`` is not UTF-8, read a piece at a time: an error whose ``start`` is the byte offset in
    the file and whose ``object`` holds the file's first bytes (so :func:`not_utf8` names a UTF-16 or UTF-32
    byte-order mark, or a compressed file); None when it all is."""
    import codecs

    decoder, offset, head = codecs.getincrementaldecoder("utf-8")(), 0, b""
    with open(path, "rb") as handle:
        while True:
            chunk = handle.read(chunk_size)
            head, pending = head or chunk[:HEAD_BYTES], len(decoder.getstate()[0])
            try:
                decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as err:
                start = offset + err.start - pending
                return UnicodeDecodeError("utf-8", head, start, start + 1, err.reason)
            if not chunk:
                return None
            offset += len(chunk)


def _stop_index(message: str, path: Path) -> int | None:
    """The index (in characters, from 0) where ``path`` stops being JSON: yajl names no place, so ijson's Python
    parser, which names it ("Unexpected symbol '}' at 62"), reads the file again, on this error path only. It reads
    values one after another, so text after the first (yajl's "trailing garbage": a comment at the end) is placed too;
    a second whole value there has no place to name."""
    found = re.search(r" at (\d+)$", message)  # already the Python parser's (after an integer past 64 bits)
    if found is None:
        try:
            with open(path, "rb") as handle:
                for _ in ijson.get_backend("python").basic_parse(_SurrogateCheckedReader(handle, str(path)), use_float=True,
                                                                      multiple_values=True):
                    pass
        except ijson.JSONError as err:
            found = re.search(r" at (\d+)$", str(err))
        except ValueError:  # a problem of another kind, which the Python parser names no place for
            pass
    return int(found.group(1)) if found else None


def _repeated_key(path: Path) -> int | None:
    """The index (in characters, as :func:`_line_and_column` counts them) of the key ``path`` names twice in one object."""
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as handle:
        return repeated_key_index(iter(lambda: handle.read(1 << 20), ""))


def _line_and_column(path: Path, index: int | None) -> str:
    """`` (line L, column C)`` of the character at ``index`` (None: the end of the file), counted as json counts them
    in the whole-file reader's messages: lines by ``\n``, columns in characters, from 1."""
    line, line_start, seen = 1, 0, 0
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as handle:
        while (index is None or seen < index) and (chunk := handle.read(1 << 20)):
            part = chunk if index is None else chunk[: index - seen]
            if newlines := part.count("\n"):
                line, line_start = line + newlines, seen + part.rindex("\n") + 1
            seen += len(part)
    return f" (line {line}, column {(seen if index is None else index) - line_start + 1})"


def _around(path: Path, index: int) -> tuple[str, str]:
    """The :data:`~bio_mrc.json_syntax.LOOK` characters of ``path`` before the character ``index`` and those from it
    on, as :func:`_line_and_column` counts characters."""
    before, seen = "", 0
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as handle:
        while seen < index and (chunk := handle.read(min(1 << 20, index - seen))):
            before, seen = (before + chunk)[-LOOK:], seen + len(chunk)
        return before, handle.read(LOOK)


_SPECIAL_NUMBER = re.compile(r"-?Infinity|NaN")
_CONTROL_IN_STRING = "invalid character inside string"  # yajl's words for a raw control character in a string
CONTROL_CHARACTER = "Invalid control character at"  # json's, which the whole-file reader's messages quote
# What a scan for a raw control character in a string stops at: a quote, a backslash (whose next character is
# passed over) or a control character.
_STRING_STOP = re.compile(r'["\\\x00-\x1f]')


def _control_in_string(path: Path) -> int | None:
    """The index (in characters, as :func:`_line_and_column` counts them) of the first raw control character
    (U+0000-U+001F) inside a string of ``path``, or None; read a piece at a time, on this error path only."""
    inside, skip, seen = False, 0, 0
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as handle:
        while chunk := handle.read(1 << 20):
            for stop in _STRING_STOP.finditer(chunk, max(skip - seen, 0)):
                at, char = seen + stop.start(), stop.group()
                if at < skip:  # the character an escape's backslash takes
                    continue
                if char == '"':
                    inside = not inside
                elif char == "\\":
                    skip = at + 2
                elif inside:
                    return at
            seen += len(chunk)
    return None


def _holds_no_value(path: Path) -> bool:
    """Whether ``path`` holds nothing but blanks (a byte-order mark at its start aside): an empty file, not one cut short."""
    with open(path, "rb") as handle:
        chunk = handle.read(1 << 20).removeprefix(_BOM)
        while chunk:
            if chunk.strip():
                return False
            chunk = handle.read(1 << 20)
    return True


class _Builder:
    """Objects from ijson's events, a repeated key refused (ijson would keep the last value only), and a value
    nested past :data:`MAX_NESTING` levels, counting the ``outer`` arrays and objects it sits in (as the whole-file
    reader refuses it)."""

    def __init__(self, outer: int) -> None:
        self.room = MAX_NESTING - outer
        self.stack: list[Any] = []
        self.keys: list[str | None] = []
        self.value: Any = None

    def event(self, kind: str, value: Any) -> bool:
        """Feed one event; True once the value begun by the first event is complete (in ``value``)."""
        if kind == "map_key":
            if value in self.stack[-1]:
                raise RepeatedKeyError(value)
            self.keys[-1] = value
            return False
        if kind in ("start_map", "start_array"):
            if len(self.stack) == self.room:
                raise NotPlainJsonError(NESTED_TOO_DEEP)
            self.stack.append({} if kind == "start_map" else [])
            self.keys.append(None)
            return False
        if kind in ("end_map", "end_array"):
            self.keys.pop()
            value = self.stack.pop()
        return self._add(value)

    def _add(self, value: Any) -> bool:
        if not self.stack:
            self.value = value
            return True
        top = self.stack[-1]
        if isinstance(top, list):
            top.append(value)
        else:
            top[self.keys[-1]] = value
        return False


class _BeyondInt64(Exception):
    """yajl's parse refused an integer that does not fit in 64 bits: valid JSON, which json reads."""


class SquadJsonStream:
    """The articles of an official SQuAD JSON file, one at a time; ``version`` is the file's header,
    known once the file is read up to it (SQuAD's files write it after the articles)."""

    def __init__(self, path: str | Path) -> None:
        self.path, self.version = Path(path), None

    def __iter__(self) -> Iterator[Any]:
        read = 0
        try:
            for article in self._parsed(ijson.basic_parse):
                read += 1
                yield article
        except _BeyondInt64:  # yajl holds integers in 64 bits; ijson's Python parser, as json does, any integer
            yield from itertools.islice(self._parsed(ijson.get_backend("python").basic_parse), read, None)

    def _parsed(self, parse: Any) -> Iterator[Any]:
        source = str(self.path)
        try:
            with open(self.path, "rb") as handle:
                yield from self._articles(parse(_SurrogateCheckedReader(handle, source), use_float=True))
        except IsADirectoryError:
            raise DataFormatError("expected a JSON file, found a folder", source=source) from None
        except RepeatedKeyError as err:
            at = _repeated_key(self.path)
            raise DataFormatError(f"{err}{'' if at is None else _line_and_column(self.path, at)}", source=source) from None
        except NotPlainJsonError as err:  # nesting too deep
            raise DataFormatError(str(err), source=source) from None
        except json.JSONDecodeError as err:  # ijson's Python parser (after a >64-bit integer) reads strings with json's
            if err.msg.startswith("Invalid control character"):  # placed as yajl's refusal of it is
                raise DataFormatError(self._problem(_CONTROL_IN_STRING), source=source) from None
            raise DataFormatError(f"not valid JSON: {err.msg.removesuffix(' at')} inside a string", source=source) from None
        except UnicodeDecodeError:  # yajl found bytes that are no UTF-8 inside a string
            raise DataFormatError(self._not_utf8() or "not UTF-8 text", source=source) from None
        except ijson.JSONError as err:
            message = (str(err.args[0].decode("utf-8", "replace") if isinstance(err.args[0], bytes) else err)
                       if err.args else type(err).__name__)
            first = message.strip().splitlines()[0] if message.strip() else message
            if "integer overflow" in first:
                raise _BeyondInt64() from None
            if "floating point) overflow" in first:  # 1e400: the whole-file reader refuses it in these words
                raise DataFormatError(FLOAT_TOO_LARGE, source=source) from None
            raise DataFormatError(self._problem(first), source=source) from None

    def _problem(self, first: str) -> str:
        """What is wrong where yajl (or ijson's Python parser) stopped with the message ``first``, in the words of
        :func:`~bio_mrc.data.json_reader.read_json`."""
        truncated = "premature EOF" in first or "Incomplete JSON" in first  # yajl's words, the Python parser's
        if truncated and _holds_no_value(self.path):
            return "the file is empty: it holds no JSON value"
        if not truncated and (problem := self._not_utf8()):  # yajl calls bytes that are no UTF-8 (Latin-1, UTF-16) bad JSON
            return problem
        if _CONTROL_IN_STRING in first and (control := _control_in_string(self.path)) is not None:
            first, at = CONTROL_CHARACTER, control  # yajl names no place: found by a scan, worded as json words it
        else:
            at = None if truncated else _stop_index(first, self.path)
        where = _line_and_column(self.path, at) if truncated or at is not None else ""
        before, after = _around(self.path, at) if at is not None else ("", "")
        if special := _SPECIAL_NUMBER.match(after):  # yajl: "invalid char in json text"
            return f"{special_number(special.group())}{where}"
        problem = "the JSON ends early (a truncated file?)" if truncated else "not valid JSON"
        return f"{problem}: {first}{where}{syntax_hint(before + after, len(before)) if at is not None else ''}"

    def _not_utf8(self) -> str | None:
        """:func:`not_utf8`'s message where the file is not UTF-8 text (the byte, and how to convert UTF-16), or
        :func:`wide_without_mark`'s where it is UTF-16 or UTF-32 without a byte-order mark; else None."""
        with open(self.path, "rb") as handle:
            if wide := wide_without_mark(handle.read(4)):
                return wide
        err = utf8_error(self.path)
        return None if err is None else not_utf8(err)

    def _articles(self, events: Iterator[tuple[str, Any]]) -> Iterator[Any]:
        """Each element of the top-level object's ``data`` list; the other top-level values are read whole."""
        kind, _ = next(events, ("end", None))
        if kind != "start_map":
            raise DataFormatError(NOT_SQUAD_OBJECT + (FOUND_ARRAY if kind == "start_array" else ""), source=str(self.path))
        seen: set[str] = set()
        for kind, key in events:
            if kind == "end_map":
                break
            if key in seen:
                raise RepeatedKeyError(key)
            seen.add(key)
            if key == "data":
                yield from self._data_items(events)
            else:
                value = _whole_value(events, 1)
                self.version = value if key == "version" else self.version
        if "data" not in seen:
            raise DataFormatError(NOT_SQUAD_OBJECT, source=str(self.path))
        for _ in events:  # the parser refuses anything after the object (a second object, garbage), as read_json does
            pass

    def _data_items(self, events: Iterator[tuple[str, Any]]) -> Iterator[Any]:
        kind, _ = next(events)
        if kind != "start_array":
            raise DataFormatError(NOT_SQUAD_OBJECT, source=str(self.path))
        for number, (kind, value) in enumerate(events, 1):
            if kind == "end_array":
                return
            if kind == "start_map":
                yield from _article(events, number)
            else:
                yield _value_from(kind, value, events, 2)


@dataclass(frozen=True)
class Paragraph:
    """One paragraph of an article whose ``paragraphs`` follow its ``title``, read on its own: ``article`` is the
    article's place in ``data`` (from 1), ``index`` the paragraph's in its ``paragraphs``."""

    article: int
    title: Any
    index: int
    value: Any


def _article(events: Iterator[tuple[str, Any]], number: int) -> Iterator[Any]:
    """The article begun (its ``start_map`` read): a :class:`Paragraph` at a time where ``paragraphs`` is a list that
    follows ``title``; else (no title before it, or no list) the article whole, which the reader checks as before."""
    article: dict[str, Any] = {}
    streamed = 0
    for kind, key in events:
        if kind == "end_map":
            break
        if key in article:
            raise RepeatedKeyError(key)
        kind, value = next(events)
        if key == "paragraphs" and "title" in article and kind == "start_array":
            article[key] = []  # read: a repeated key is still refused
            for index, paragraph in enumerate(_array_items(events, 4)):
                streamed += 1
                yield Paragraph(number, article["title"], index, paragraph)
        else:
            article[key] = _value_from(kind, value, events, 3)
    if not streamed:
        yield article


def _array_items(events: Iterator[tuple[str, Any]], outer: int) -> Iterator[Any]:
    """Each element of the array begun (its ``start_array`` read), built one at a time; ``outer``: the arrays and
    objects around them."""
    builder = _Builder(outer)
    for kind, value in events:
        if kind == "end_array" and not builder.stack:
            return
        if builder.event(kind, value):
            yield builder.value


def _value_from(kind: str, value: Any, events: Iterator[tuple[str, Any]], outer: int) -> Any:
    """The whole value whose first event is ``(kind, value)``, inside ``outer`` arrays and objects."""
    builder = _Builder(outer)
    if builder.event(kind, value):
        return builder.value
    for kind, value in events:
        if builder.event(kind, value):
            return builder.value
    raise DataFormatError("the JSON ends early (a truncated file?)")


def _whole_value(events: Iterator[tuple[str, Any]], outer: int) -> Any:
    kind, value = next(events, ("end", None))
    if kind == "end":
        raise DataFormatError("the JSON ends early (a truncated file?)")
    return _value_from(kind, value, events, outer)
