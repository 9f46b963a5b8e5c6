"""Every form questions come in, in one table: a format's name, what it looks like, how it is recognised and how it
is read. :func:`detect_format` picks the first format whose detector accepts the source (the table's order is
the order of the checks); :func:`bio_mrc.data.squad.load_squad` reads and validates it, and an error names the
format it was read as and what that format expects."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from functools import cached_property
from os import PathLike
from pathlib import Path
from typing import Any, Callable, Iterator

from ..errors import ConfigError
from ..io import broken_link, home_expanded
from .json_reader import DataFormatError, check_not_special, read_json
from .json_stream import SquadJsonStream
from .mrqa import is_mrqa_start, mrqa_records
from .multispanqa import multispanqa_questions
from .sources import (
    ROW_SUFFIXES, Records, dataset_records, first_json_line, first_line_is_a_row, folder_records, from_datasets,
    hub_records, is_hub_id, jsonl_records, split_spec,
)
from .tables import PARQUET_MAGIC, dataframe_records, delimited_records, list_records, parquet_records


class Source:
    """What a detector looks at: the object passed, or a path and (read once, on demand) its content."""

    def __init__(self, data: Any, split: str | None) -> None:
        if isinstance(data, str) and split is None:
            data, split = split_spec(data)
        data = home_expanded(data)
        self.data, self.split = data, split
        self.path = Path(data) if isinstance(data, (str, PathLike)) else None
        self.name = str(data) if self.path is not None else type(data).__name__

    def suffix_is(self, *suffixes: str) -> bool:
        return self.is_file and self.path.name.lower().endswith(suffixes)

    @property
    def is_file(self) -> bool:
        return self.path is not None and self.path.is_file()

    @cached_property
    def first_line(self) -> Any:
        """The first line's JSON value (None where it is not one)."""
        return first_json_line(self.path) if self.is_file else None

    @cached_property
    def head(self) -> bytes:
        with open(self.path, "rb") as handle:
            return handle.read(4)

    @cached_property
    def json(self) -> Any:
        """The whole file's JSON value; a file that is not JSON raises when its reader asks, not when detected."""
        try:
            return read_json(self.path, finite=True)  # 1e400 refused, as the streaming reader refuses it
        except DataFormatError as error:
            return error

    def parsed_json(self) -> Any:
        if isinstance(self.json, DataFormatError):
            raise self.json
        return self.json


@dataclass(frozen=True)
class DataFormat:
    """``expects`` says what the format looks like (in errors and docs); ``detect`` and ``read`` take a :class:`Source`."""

    expects: str
    detect: Callable[[Source], bool]
    read: Callable[[Source], Records]
    takes_split: bool = False
    stream: Callable[[Source], Records] | None = None  # reads without holding the whole source (else ``read`` does)


def _is_multispanqa(source: Source) -> bool:
    """A JSON file whose first ``data`` record has word labels, or a context of words (a file of questions to predict,
    as MultiSpanQA's test file); only that record is read."""
    if not source.is_file:
        return False
    try:
        first = next(iter(SquadJsonStream(source.path)), None)
    except DataFormatError:  # not JSON, or not an object with a 'data' list: the squad reader says which
        return False
    return isinstance(first, dict) and ("label" in first or isinstance(first.get("context"), list))


def _multispanqa_records(source: Source) -> Records:
    return Records(source.name, examples=multispanqa_questions(source.parsed_json(), source.name))


def _json_file(source: Source) -> Source:
    """``source``, where it starts as JSON does; a file of plain text (questions a line, a document) read as the
    official SQuAD JSON, which every file no other format claims is, is refused saying what the readers take."""
    with open(source.path, "rb") as handle:
        start = handle.read(_TEXT_SNIFF_BYTES).removeprefix(b"\xef\xbb\xbf").lstrip()
    if _plain_text(start):
        raise DataFormatError("not JSON, and its name has no suffix of another format: questions are read with their "
                              "contexts, as JSON Lines (.jsonl, a {\"question\": ..., \"context\": ...} object a line), a table "
                              "(.csv, .tsv, .parquet) with question and context columns, or SQuAD JSON; a question over a "
                              "text file is asked with `bio-mrc extract --question Q --context-file FILE`", source=source.name)
    return source


def _plain_text(start: bytes) -> bool:
    """Whether a file's first bytes (whitespace and a byte-order mark left out) start with a printable ASCII character
    no JSON value starts with; other bytes (gzip, UTF-16, Latin-1) are left to the reader, which names them."""
    if not start or not 0x20 < start[0] < 0x7F or start[:1] in b'{["-0123456789':
        return False
    return re.match(rb"(true|false|null)\b", start) is None


_TEXT_SNIFF_BYTES = 4096  # leading whitespace read past before the first character a JSON value starts with


_HF_COLUMNS = ("the Hugging Face SQuAD columns context, question, and optionally id, title and answers "
               "{text: [...], answer_start: [...]} (no answers: a question to predict)")

FORMATS: dict[str, DataFormat] = {
    "datasets": DataFormat(f"a datasets.Dataset or DatasetDict with {_HF_COLUMNS}", lambda s: from_datasets(s.data),
                           lambda s: dataset_records(s.data, s.split, f"datasets.{s.name}", in_memory=True), takes_split=True),
    "dataframe": DataFormat(f"a pandas DataFrame with {_HF_COLUMNS}", lambda s: type(s.data).__module__.startswith("pandas"),
                            lambda s: dataframe_records(s.data)),
    "records": DataFormat(f"a list of dicts with {_HF_COLUMNS}", lambda s: isinstance(s.data, (list, tuple)),
                          lambda s: list_records(s.data)),
    "saved-dataset": DataFormat(f"a folder written by datasets' save_to_disk, with {_HF_COLUMNS}",
                                lambda s: s.path is not None and s.path.is_dir(), lambda s: folder_records(s.path, s.split),
                                takes_split=True),
    "csv": DataFormat(f"a CSV file with a header row naming {_HF_COLUMNS} (answers as JSON text)",
                      lambda s: s.suffix_is(".csv", ".csv.gz"), lambda s: delimited_records(s.path, ",")),
    "tsv": DataFormat(f"a TSV file with a header row naming {_HF_COLUMNS} (answers as JSON text)",
                      lambda s: s.suffix_is(".tsv", ".tab", ".tsv.gz", ".tab.gz"), lambda s: delimited_records(s.path, "\t")),
    "parquet": DataFormat(f"a Parquet file with {_HF_COLUMNS}", lambda s: s.is_file and s.head == PARQUET_MAGIC,
                          lambda s: parquet_records(s.path)),
    "mrqa": DataFormat("an MRQA shared-task file: a {\"header\": ...} line (or none), then one context per line with 'qas' "
                       "of 'qid', 'question' and 'detected_answers' with 'char_spans'", lambda s: is_mrqa_start(s.first_line),
                       lambda s: mrqa_records(s.path)),
    "jsonl": DataFormat(f"JSON Lines, one question per line in {_HF_COLUMNS}",
                        lambda s: s.suffix_is(*ROW_SUFFIXES) or first_line_is_a_row(s.first_line), lambda s: jsonl_records(s.path)),
    "multispanqa": DataFormat("MultiSpanQA JSON: {\"data\": [{id, question: [words], context: [words], label: [B/I/O per word]}]} "
                              "(no label: a question to predict)",
                              _is_multispanqa, _multispanqa_records),
    "squad": DataFormat("official SQuAD JSON: {\"data\": [{title, paragraphs: [{context, qas: [{id, question, answers}]}]}]}",
                        lambda s: s.is_file, lambda s: Records(s.name, squad=_json_file(s).parsed_json()),
                        stream=lambda s: Records(s.name, squad=SquadJsonStream(_json_file(s).path))),
    "hub": DataFormat("a Hugging Face hub dataset id with the SQuAD columns, e.g. rajpurkar/squad:validation",
                      lambda s: isinstance(s.data, str) and not s.path.exists() and not s.path.is_symlink() and is_hub_id(s.data),
                      lambda s: hub_records(s.data, s.split), takes_split=True),
}


@dataclass(frozen=True)
class Detected:
    """A source and the format it was recognised as."""

    format: str
    source: Source

    def read(self, stream: bool = False) -> Records:
        """The records; with ``stream``, read lazily where the format can be (official JSON one article, or paragraph, at a time)."""
        form = FORMATS[self.format]
        return (form.stream if stream and form.stream else form.read)(self.source)

    @contextlib.contextmanager
    def errors_described(self) -> Iterator[None]:
        """A :class:`DataFormatError` raised inside says which format the source was read as and what it expects."""
        try:
            yield
        except DataFormatError as error:
            raise DataFormatError(f"{error.marked_problem}; read as {self.format}: {FORMATS[self.format].expects}",
                                  error.record, error.source) from None


def detect_format(data: Any, split: str | None = None, expected: str | None = None) -> Detected:
    """The first format of :data:`FORMATS` that recognises ``data``; with ``expected``, a source recognised as
    another format raises, naming both."""
    if expected is not None and expected not in FORMATS:
        raise ConfigError(f"unknown data format {expected!r}; one of {', '.join(FORMATS)}")
    source = Source(data, split)
    name = next((name for name, form in FORMATS.items() if form.detect(source)), None)
    if name is None:
        if source.path is None:
            raise TypeError(f"expected a path, a hub dataset id, a datasets.Dataset/DatasetDict, a pandas DataFrame or "
                            f"a list of dicts, got {type(data).__name__}")
        check_not_special(source.path, "a file or a folder")
        raise DataFormatError(broken_link(source.path) or "file not found", source=source.name)
    if expected is not None and name != expected:
        raise DataFormatError(f"detected {name} ({FORMATS[name].expects}), expected {expected} ({FORMATS[expected].expects})",
                              source=source.name)
    if source.split is not None and not FORMATS[name].takes_split:
        raise DataFormatError(f"':{source.split}' picks a split of a saved DatasetDict or a hub dataset, not of a file", source=source.name)
    return Detected(name, source)
