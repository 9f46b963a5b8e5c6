"""Every form questions come in, in one table: a format's name, what it looks like, how it is recognised and how it
is read. :func:`detect_format` picks the first format whose detector accepts the source (the table's order is
the order of the checks); :func:`bio_mrc.data.squad.load_squad` reads and validates it, and an error names the
format it was read as and what that format expects."""

from __future__ import annotations

import contextlib
import os
import re
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cached_property
from os import PathLike
from pathlib import Path
from typing import Any, Callable, Iterator

from ..errors import ConfigError
from ..io import broken_link, home_expanded
from .json_reader import DataFormatError, check_not_special, compression_hint, misnamed_gzip, other_compression, read_json
from .drop import SNIFF_BYTES as DROP_SNIFF_BYTES
from .drop import drop_records, is_drop_start
from .json_stream import Paragraph, SquadJsonStream
from .mashqa import is_mashqa_paragraph, mashqa_records
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
    def start(self) -> bytes:
        """The file's first bytes, for a layout told by how its JSON opens."""
        with open(self.path, "rb") as handle:
            return handle.read(DROP_SNIFF_BYTES)

    @cached_property
    def first_record(self) -> Any:
        """The first record of a JSON object's ``data`` list, as the official SQuAD reader streams it (an article, or a
        :class:`Paragraph` of one), or None where the file is no such object."""
        if not self.is_file:
            return None
        try:
            return next(iter(SquadJsonStream(self.path)), None)
        except DataFormatError:  # not JSON, or not an object with a 'data' list: the squad reader says which
            return None

    @cached_property
    def json(self) -> Any:
        """The whole file's JSON value; a file that is not JSON raises when its reader asks, not when detected."""
        try:
            return _parsed_once(self.path)
        except DataFormatError as error:
            return error

    def parsed_json(self) -> Any:
        if isinstance(self.json, DataFormatError):
            raise self.json
        return self.json


# Within :func:`each_file_parsed_once`: the JSON value of each data file read there, by the file's identity and state.
_PARSED: ContextVar[dict[tuple, Any] | None] = ContextVar("bio_mrc_parsed_data_files", default=None)


@contextlib.contextmanager
def each_file_parsed_once() -> Iterator[None]:
    """Inside it, a whole JSON data file that several reads name (a comparison's training and tuning questions, two
    parts of one file) is parsed once: a later read of the file, unchanged since (the same device, inode, size and
    modification time), gets the value the first parsed. Readers only read that value. Outside it, every read parses."""
    token = _PARSED.set({})
    try:
        yield
    finally:
        _PARSED.reset(token)


def _parsed_once(path: Path) -> Any:
    """The JSON value of the data file ``path`` (1e400 refused, as the streaming reader refuses it), parsed once within
    :func:`each_file_parsed_once`; a file that cannot be parsed raises its DataFormatError at each read."""
    parsed = _PARSED.get()
    try:
        state = os.stat(path)
    except OSError:  # named by the reader's own error
        parsed = None
    if parsed is None:
        return read_json(path, finite=True)
    key = (os.path.abspath(path), state.st_dev, state.st_ino, state.st_size, state.st_mtime_ns)
    if key not in parsed:
        parsed[key] = read_json(path, finite=True)
    return parsed[key]


@dataclass(frozen=True)
class DataFormat:
    """``expects`` says what the format looks like (in errors and docs); ``detect`` and ``read`` take a :class:`Source`.
    ``answers_either_way``: the Hugging Face SQuAD columns, whose listed answers are alternatives in SQuAD's release
    and the parts of one answer in Quoref's, so a reading that names neither says which it took."""

    expects: str
    detect: Callable[[Source], bool]
    read: Callable[[Source], Records]
    takes_split: bool = False
    stream: Callable[[Source], Records] | None = None  # reads without holding the whole source (else ``read`` does)
    answers_either_way: bool = False


def _is_multispanqa(source: Source) -> bool:
    """A JSON file whose first ``data`` record has word labels, or a context of words (a file of questions to predict,
    as MultiSpanQA's test file); only that record is read."""
    first = source.first_record
    return isinstance(first, dict) and ("label" in first or isinstance(first.get("context"), list))


def _first_paragraph(source: Source) -> Any:
    """The first paragraph of an official SQuAD JSON file (None where there is none)."""
    first = source.first_record
    if isinstance(first, Paragraph):
        return first.value
    paragraphs = first.get("paragraphs") if isinstance(first, dict) else None
    return paragraphs[0] if isinstance(paragraphs, list) and paragraphs else None


def _is_quoref(source: Source) -> bool:
    """Official SQuAD JSON whose first paragraph has Quoref's ``context_id``: Quoref's files, whose listed answers are
    the parts of one answer."""
    paragraph = _first_paragraph(source)
    return isinstance(paragraph, dict) and "context_id" in paragraph


def _squad_records(source: Source, stream: bool, parts: bool = False) -> Records:
    """An official SQuAD JSON file, whole or streamed; ``parts``: its listed answers are one answer's parts."""
    path = _json_file(source).path
    return Records(source.name, squad=SquadJsonStream(path) if stream else source.parsed_json(), parts=parts)


def _multispanqa_records(source: Source) -> Records:
    return Records(source.name, examples=multispanqa_questions(source.parsed_json(), source.name))


def _json_file(source: Source) -> Source:
    """``source``, where it starts as JSON does; a file of plain text (questions a line, a document) read as the
    official SQuAD JSON, which every file no other format claims is, is refused saying what the readers take."""
    with open(source.path, "rb") as handle:
        start = handle.read(_TEXT_SNIFF_BYTES).removeprefix(b"\xef\xbb\xbf").lstrip()
    if _BIOASQ_START.match(start):
        raise DataFormatError("BioASQ's JSON ({\"questions\": [...]}) gives exact answers as texts beside snippets, not "
                              "spans: write each question with a snippet holding its answers as a JSON Lines line in the "
                              "SQuAD columns, each answer text found in the snippet, and give --format answer-parts "
                              "(docs/data.md, other answers given as span texts)", source=source.name)
    if _plain_text(start):
        raise DataFormatError("not JSON, and its name has no suffix of another format: questions are read with their "
                              "contexts, as JSON Lines (.jsonl, a {\"question\": ..., \"context\": ...} object a line), a table "
                              "(.csv, .tsv, .parquet) with question and context columns, or SQuAD JSON; a question over a "
                              "text file is asked with `bio-mrc extract --question Q --context-file FILE`", source=source.name)
    return source


def _plain_text(start: bytes) -> bool:
    """Whether a file's first bytes (whitespace and a byte-order mark left out) start with a printable ASCII character
    no JSON value starts with; other bytes (gzip, UTF-16, Latin-1) are left to the reader, which names them, and so is
    a comment (JSON with comments), which the reader names as what JSON lacks, and a compressed file whose first bytes
    are letters (bzip2's ``BZh``, a zip archive's ``PK``), which the reader names as compressed."""
    if not start or not 0x20 < start[0] < 0x7F or start[:1] in b'{["-0123456789' or start[:2] in (b"//", b"/*"):
        return False
    if compression_hint(start):
        return False
    return re.match(rb"(true|false|null)\b", start) is None


_TEXT_SNIFF_BYTES = 4096  # leading whitespace read past before the first character a JSON value starts with
_BIOASQ_START = re.compile(rb'\{\s*"questions"\s*:\s*\[')


_HF_COLUMNS = ("the Hugging Face SQuAD columns context, question, and optionally id, title and answers "
               "{text: [...], answer_start: [...]} (no answers: a question to predict)")

FORMATS: dict[str, DataFormat] = {
    "datasets": DataFormat(f"a datasets.Dataset or DatasetDict with {_HF_COLUMNS}", lambda s: from_datasets(s.data),
                           lambda s: dataset_records(s.data, s.split, f"datasets.{s.name}", in_memory=True), takes_split=True, answers_either_way=True),
    "dataframe": DataFormat(f"a pandas DataFrame with {_HF_COLUMNS}", lambda s: type(s.data).__module__.startswith("pandas"),
                            lambda s: dataframe_records(s.data), answers_either_way=True),
    "records": DataFormat(f"a list of dicts with {_HF_COLUMNS}", lambda s: isinstance(s.data, (list, tuple)),
                          lambda s: list_records(s.data), answers_either_way=True),
    "saved-dataset": DataFormat(f"a folder written by datasets' save_to_disk, with {_HF_COLUMNS}",
                                lambda s: s.path is not None and s.path.is_dir(), lambda s: folder_records(s.path, s.split),
                                takes_split=True, answers_either_way=True),
    "csv": DataFormat(f"a CSV file with a header row naming {_HF_COLUMNS} (answers as JSON text)",
                      lambda s: s.suffix_is(".csv", ".csv.gz"), lambda s: delimited_records(s.path, ","), answers_either_way=True),
    "tsv": DataFormat(f"a TSV file with a header row naming {_HF_COLUMNS} (answers as JSON text)",
                      lambda s: s.suffix_is(".tsv", ".tab", ".tsv.gz", ".tab.gz"), lambda s: delimited_records(s.path, "\t"), answers_either_way=True),
    "parquet": DataFormat(f"a Parquet file with {_HF_COLUMNS}", lambda s: s.is_file and (s.head == PARQUET_MAGIC or s.suffix_is(".parquet")),
                          lambda s: parquet_records(s.path), answers_either_way=True),
    "mrqa": DataFormat("an MRQA shared-task file: a {\"header\": ...} line (or none), then one context per line with 'qas' "
                       "of 'qid', 'question' and 'detected_answers' with 'char_spans'", lambda s: is_mrqa_start(s.first_line),
                       lambda s: mrqa_records(s.path)),
    "jsonl": DataFormat(f"JSON Lines, one question per line in {_HF_COLUMNS}",
                        lambda s: s.suffix_is(*ROW_SUFFIXES) or first_line_is_a_row(s.first_line), lambda s: jsonl_records(s.path), answers_either_way=True),
    "drop": DataFormat("DROP JSON: {passage_id: {passage, qa_pairs: [{query_id, question, answer: {spans: [texts], number, "
                       "date}}]}} (an answer's spans are its parts; a number or date answer is left out)",
                       lambda s: s.is_file and is_drop_start(s.start), lambda s: drop_records(s.parsed_json(), s.name)),
    "multispanqa": DataFormat("MultiSpanQA JSON: {\"data\": [{id, question: [words], context: [words], label: [B/I/O per word]}]} "
                              "(no label: a question to predict)",
                              _is_multispanqa, _multispanqa_records),
    "mash-qa": DataFormat("MASH-QA JSON: official SQuAD JSON whose answers list their sentences as answer_starts: "
                          "[[start, length], ...], the parts of one answer", lambda s: is_mashqa_paragraph(_first_paragraph(s)),
                          lambda s: mashqa_records(_json_file(s).parsed_json(), s.name)),
    "quoref": DataFormat("Quoref JSON: official SQuAD JSON whose paragraphs have a context_id, a question's listed "
                         "answers the parts of one answer", _is_quoref, lambda s: _squad_records(s, False, parts=True),
                         stream=lambda s: _squad_records(s, True, parts=True)),
    "squad": DataFormat("official SQuAD JSON: {\"data\": [{title, paragraphs: [{context, qas: [{id, question, answers}]}]}]}",
                        lambda s: s.is_file, lambda s: _squad_records(s, False), stream=lambda s: _squad_records(s, True)),
    "hub": DataFormat("a Hugging Face hub dataset id with the SQuAD columns, e.g. rajpurkar/squad:validation",
                      lambda s: isinstance(s.data, str) and not s.path.exists() and not s.path.is_symlink() and is_hub_id(s.data),
                      lambda s: hub_records(s.data, s.split), takes_split=True, answers_either_way=True),
}


_READ_COMPRESSED = "; data files are read uncompressed, or gzip-compressed under a .gz name (.jsonl.gz, .csv.gz, .tsv.gz)"


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
    if source.is_file and (packed := other_compression(source.start)):  # no format reads it: none is named
        raise DataFormatError(f"{packed}{_READ_COMPRESSED}", source=source.name)
    # read as text by every format but Parquet, which a .parquet name is read as whatever it holds
    if source.is_file and not source.suffix_is(".parquet") and (packed := misnamed_gzip(source.start, source.path)):
        raise DataFormatError(packed, source=source.name)
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
