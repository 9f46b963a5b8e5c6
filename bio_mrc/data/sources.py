"""Readers of the SQuAD forms users have: an official SQuAD JSON file; JSON Lines with the Hugging Face SQuAD
columns (``id``, ``title``, ``context``, ``question``, ``answers: {text: [...], answer_start: [...]}``), plain or
gzipped; a ``datasets.Dataset``/``DatasetDict`` with those columns, in memory or saved with ``save_to_disk``; a hub
dataset id. Each reads lazily into raw :class:`Records`; :mod:`bio_mrc.data.formats` says which reader a source
needs and :func:`bio_mrc.data.squad.load_squad` validates every form with the same per-question rule.

A string may end in ``:SPLIT`` to pick a split of a saved DatasetDict or of a hub dataset
(``squad_saved:validation``, ``rajpurkar/squad:validation``); a DatasetDict with one split needs none.
"""

from __future__ import annotations

import gzip
import json
import re
import unicodedata
import zlib
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..io import home_expanded
from ..json_syntax import json_value, syntax_hint
from ..types import Example
from .json_reader import DataFormatError, NotPlainJsonError, loads, not_utf8, wide_without_mark
from .limits import max_data_bytes, max_line_bytes

SQUAD_COLUMNS = ("id", "context", "question", "answers")
# Questions to predict need only these: a missing id is generated, missing answers make them unlabelled.
REQUIRED_COLUMNS = ("context", "question")
_OPTIONAL = ("id", "title", "answers", "is_impossible")
ROW_SUFFIXES = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz", ".gz")
# A split name, optionally with the hub's slice syntax: validation, train[:1000].
_WITH_SPLIT = re.compile(r"^(?P<base>.+):(?P<split>[A-Za-z0-9_][\w.\-]*(?:\[[^\]]*\])?)\Z")  # "\Z": "$" passes "x\n"
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(?:/[\w.\-]+)?\Z")
_FILE_SUFFIXES = (".json", ".jsonl", ".ndjson", ".gz", ".txt", ".csv", ".tsv", ".tab", ".parquet", ".arrow")
_SNIFF_BYTES = 1 << 20
_JSON_TYPES = {list: "list", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


@dataclass
class Records:
    """One source's questions before validation: ``squad`` (an official JSON object), ``rows``
    (``(where, row)`` pairs in the Hugging Face SQuAD columns; ``where`` is ``line N`` or ``row N``; a question
    that could not be read as a row has its :class:`DataFormatError` in its place, raised or skipped with its checks) or
    ``examples`` (already validated, from a layout with its own rules such as MultiSpanQA's; a bad record's
    :class:`DataFormatError` in its place). ``parts``: a question's listed answers are the parts of one answer
    (Quoref's, DROP's, MASH-QA's layouts), not alternatives."""

    name: str
    squad: Any = None
    rows: Iterable[tuple[str, Any]] | None = None
    examples: list[Example | DataFormatError] | None = None
    parts: bool = False

    def close(self) -> None:
        """Let go of a source read lazily (a file's lines, a dataset's rows) where its reading stopped part-way: a
        question refused while it was read would otherwise hold the file, or the dataset's memory map, for as long as
        its error's traceback (which holds the reader's frame) is kept."""
        for reader in (self.rows, self.squad):
            if isinstance(reader, Generator):
                reader.close()


def split_spec(text: str) -> tuple[str, str | None]:
    """``"folder:validation"`` -> ``("folder", "validation")``; a path that exists is never split."""
    match = _WITH_SPLIT.match(text)
    if Path(text).exists() or not match:
        return text, None
    base = match["base"]
    return (base, match["split"]) if Path(base).exists() or is_hub_id(base) else (text, None)


def is_hub_id(text: str) -> bool:
    """``name`` or ``owner/name`` without a data-file suffix: what ``datasets.load_dataset`` fetches from the hub."""
    return bool(_HUB_ID.match(text)) and not text.lower().endswith(_FILE_SUFFIXES)


DATA_DIR_VARIABLE = "BIO_MRC_DATA"


def default_data_dir(beside: str | Path | None = None) -> Path:
    """The data folder when none is given: ``$BIO_MRC_DATA``, else ``shared/data`` beside ``beside`` (a checkout of
    the repository; default the working directory), the layout of this project's machines (``../shared/data``)."""
    import os

    return Path(os.environ.get(DATA_DIR_VARIABLE) or Path(beside or Path.cwd()).resolve().parent / "shared" / "data")


def local_data_path(spec: str, base_dir: Path) -> Path:
    """A comparison config's data path as a local one: under ``base_dir`` unless it is absolute or begins with ``~`` (the
    home folder, as a run's encoder reads it and the shell reads a command's paths)."""
    expanded = Path(home_expanded(spec))
    return expanded if expanded.is_absolute() else base_dir / spec


def locate(spec: str, base_dir: Path) -> str:
    """A comparison config's data path: :func:`local_data_path`, or a hub id no local path shadows."""
    local = local_data_path(spec, base_dir)
    if not Path(split_spec(str(local))[0]).exists() and is_hub_id(split_spec(spec)[0]):
        return spec
    return str(local)


def jsonl_records(path: Path) -> Records:
    return Records(str(path), rows=jsonl_rows(path))


def first_line_is_a_row(record: Any) -> bool:
    """A first line's object that is a question in the Hugging Face columns (``Dataset.to_json`` writes them to
    ``.json`` files), not an official file on one line."""
    return isinstance(record, dict) and "data" not in record and any(key in record for key in SQUAD_COLUMNS)


def first_json_line(path: Path) -> Any:
    """The object on a file's first line (a gzipped file's too), or None where it is not one JSON value."""
    try:
        with (gzip.open if path.suffix.lower() == ".gz" else open)(path, "rb") as handle:
            first = handle.readline(_SNIFF_BYTES)
        return json.loads(first)
    except (ValueError, RecursionError, OSError, EOFError, zlib.error):  # pretty-printed, long, not JSON, a bad gzip
        return None


def jsonl_rows(path: Path) -> Iterator[tuple[str, Any]]:
    """``("line N", object)`` for each non-blank line, read one at a time; a bad line raises naming it, and a
    line longer than :func:`~bio_mrc.data.limits.max_line_bytes` (decompressed) is refused unread past it."""
    source = str(path)
    with (gzip.open if path.suffix.lower() == ".gz" else open)(path, "rb") as handle:
        for number, raw in enumerate(bounded_lines(handle, source), 1):
            if raw.strip():
                yield f"line {number}", _json_line(raw, number, source)


def bounded_lines(handle: Any, source: str) -> Iterator[bytes]:
    """The lines of a binary (or gzip) handle; one longer than :func:`~bio_mrc.data.limits.max_line_bytes` raises, and
    so does a gzip handle holding more than :func:`~bio_mrc.data.limits.max_data_bytes`, read no further."""
    most, compressed = max_line_bytes(), isinstance(handle, gzip.GzipFile)
    total = max_data_bytes() if compressed else None
    left = total  # a gzip file of kilobytes can hold gigabytes of lines, each within the line limit
    try:
        number = 0
        while raw := handle.readline(most + 1 if left is None else min(most, left) + 1):
            number += 1
            if left is not None and len(raw) > left:
                raise DataFormatError(f"the file is larger than {total:,} bytes decompressed "
                                      "(BIO_MRC_MAX_DATA_BYTES raises the limit)", source=source)
            if len(raw) > most:
                raise DataFormatError(f"line {number} is longer than {most:,} bytes{' decompressed' if compressed else ''}"
                                      f" (BIO_MRC_MAX_LINE_BYTES raises the limit)", source=source)
            left = None if left is None else left - len(raw)
            yield raw
    except EOFError:
        raise DataFormatError("the gzip stream ends early (a truncated file?)", source=source) from None
    except (OSError, zlib.error) as err:
        raise DataFormatError(f"not a readable gzip file: {err}", source=source) from None


# A .json.gz file is read as JSON Lines (the .gz suffix says so); a first line that is none is official JSON on many lines.
_GZIPPED_JSON = ("; a .gz file is read as JSON Lines, one question a line, and official SQuAD JSON is read uncompressed: "
                 "decompress it first (gunzip)")


# A lone \r ends a line in old Mac files; JSON reads it as whitespace, so the next line's value is "Extra data".
_LONE_CR = ("; a carriage return (\\r) ends a line (old Mac line endings?), which JSON Lines does not: end the lines with "
            "\\n or \\r\\n, e.g. tr '\\r' '\\n' < IN > OUT")


def _json_line(raw: bytes, number: int, source: str) -> dict[str, Any]:
    """One line's object; errors read as :func:`read_json`'s do, with the line number."""
    if number == 1 and (wide := wide_without_mark(raw[:4])):  # its lines are cut at the byte 0x0A, NULs between
        raise DataFormatError(wide, source=source)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataFormatError(not_utf8(err, f"at line {number},"), source=source) from None
    text = text.lstrip("\ufeff") if number == 1 else text
    try:
        record = loads(text, first_line=number)
    except NotPlainJsonError as err:
        raise DataFormatError(str(err) if err.located else f"{err} (line {number})", source=source) from None
    except json.JSONDecodeError as err:
        # Only the last line of a file cut short lacks its newline.
        truncated = not text.endswith("\n") and (not text[err.pos :].strip() or err.msg.startswith("Unterminated string"))
        problem = "the JSON ends early (a truncated file?)" if truncated else "not valid JSON"
        hint = syntax_hint(text, err.pos) or (_GZIPPED_JSON if number == 1 and source.lower().endswith(".json.gz") else "")
        hint = hint or (_LONE_CR if err.msg == "Extra data" and text[: err.pos].rstrip(" \t").endswith("\r") else "")
        raise DataFormatError(f"{problem}: {err.msg} (line {number}, column {err.colno}){hint}", source=source) from None
    if not isinstance(record, dict):
        kind = _JSON_TYPES.get(type(record), type(record).__name__)
        raise DataFormatError(f"line {number} is a JSON {kind}, not an object (JSON Lines: one question per line)", source=source)
    if "data" in record and "question" not in record:  # official JSON is read uncompressed: a .gz name says JSON Lines
        hint = "; official SQuAD JSON is read uncompressed: decompress it first (gunzip)" if source.lower().endswith(".gz") else ""
        raise DataFormatError(f"line {number} is an official SQuAD JSON object, not one question (JSON Lines expected){hint}",
                              source=source)
    if number == 1 and source.lower().endswith(".json.gz") and not first_line_is_a_row(record) and not near_miss(record):  # DROP's
        raise DataFormatError("line 1 is a JSON object with no question in the SQuAD columns (context, question); a .gz file is "
                              "read as JSON Lines, one question a line, and JSON of other layouts is read uncompressed: "
                              "decompress it first (gunzip)", source=source)
    return record


def from_datasets(data: Any) -> bool:
    """A ``datasets`` object, recognised without importing ``datasets`` (slow) for files."""
    return type(data).__module__.split(".")[0] == "datasets"


def dataset_records(data: Any, split: str | None, name: str, in_memory: bool = False) -> Records:
    """The rows of a Dataset, or of one split of a DatasetDict: the one named, or the only one. ``in_memory``: the
    object itself was passed, whose split only ``split=`` names (a path takes ``PATH:SPLIT``)."""
    if isinstance(data, Mapping):
        names = list(data)
        if split is None and len(names) == 1:
            split = names[0]
        if split not in data:
            wanted = f"no split {split!r}" if split is not None else "several splits"
            how = f"pass split=, e.g. split={names[0]!r}" if in_memory and names else f"name one as {name}:SPLIT"
            raise DataFormatError(f"{wanted} in this DatasetDict (it has {names}); {how}", source=name)
        data, name = data[split], f"{name}:{split}"
    elif split is not None:
        asked = f"split={split!r}" if in_memory else f"':{split}'"
        raise DataFormatError(f"{asked} picks a split of a DatasetDict; this is a single Dataset", source=name)
    check_columns(getattr(data, "column_names", None), name, "dataset")
    return Records(name, rows=table_rows(enumerate(data), name))


def check_columns(columns: Iterable[str] | None, name: str, kind: str) -> None:
    if columns is None:  # no column names to check: each row is checked as it is read
        return
    columns = list(columns)
    if hint := foreign_layout(columns):
        raise DataFormatError(hint, source=name)
    check_near_misses(columns, name, kind)  # first: 'Question' says to rename it, not only that 'question' lacks
    missing = [column for column in REQUIRED_COLUMNS if column not in columns]
    if missing:
        raise DataFormatError(f"the {kind} lacks the SQuAD columns {missing} (it has {columns}; "
                              "id and answers are optional)", source=name)


# Published layouts of other data sets, by columns (or keys) they alone have: what to read instead.
_FOREIGN_LAYOUTS = (
    ({"passage", "answers_spans"}, "DROP's Hugging Face columns (passage, answers_spans) join the spans of its validated "
                                   "answers into one list, so an answer's parts cannot be told from its alternatives: give "
                                   "DROP's own drop_dataset_dev.json (or _train), which is read as drop"),
    *(({"story_text", ranges}, f"NewsQA's CSV (story_text, {ranges}) is not read: give MRQA's NewsQA file "
                               "(NewsQA.jsonl.gz), which is read as mrqa") for ranges in ("answer_char_ranges", "answer_token_ranges")),
)


def foreign_layout(names: Iterable[Any]) -> str | None:
    """What to give instead of a table or record in another data set's published layout (its columns or keys
    ``names``), or None."""
    names = set(names)
    return next((hint for marks, hint in _FOREIGN_LAYOUTS if marks <= names and "context" not in names), None)


def check_near_misses(columns: list[str], name: str, kind: str) -> None:
    """A column that is one bio_mrc reads but for case or surrounding spaces or invisible characters (``' id'``,
    ``'Answers'``, ``'\\ufeffid'`` after a second byte-order mark) is refused: read as an unknown column it would be
    ignored, and with it every question's id, title or answers."""
    if near := near_miss(columns):
        column, meant = near
        raise DataFormatError(f"the {kind} names the column {json_value(column)}, which is not {json_value(meant)} as "
                              f"spelt, so its values would be ignored; rename it {json_value(meant)}", source=name)


def near_miss(names: Iterable[Any]) -> tuple[str, str] | None:
    """The first of ``names`` (a table's columns, a record's keys) that is a name bio_mrc reads but for case, spaces or
    invisible characters around it, where the name itself is absent, and that name; None where there is none."""
    known, names = (*REQUIRED_COLUMNS, *_OPTIONAL), list(names)
    for column in names:
        meant = _bare_name(str(column))
        if column not in known and meant in known and meant not in names:
            return str(column), meant
    return None


# A key's name that says it holds answers (other layouts': DROP's answer, answer_text columns, a label): a row with one
# and no 'answers' is read as a question to predict, so its reader names the key it does not read.
_ANSWER_LIKE = re.compile(r"answer|(?<![a-z])(?:labels?|spans?|gold)(?![a-z])")


def answer_like_key(row: Mapping[Any, Any]) -> str | None:
    """The first key of ``row`` beyond the columns bio_mrc reads whose name says it holds answers (``answer``,
    ``answer_text``, ``answers_spans``, ``label``) and whose value is given (not null, empty or NaN), or None."""
    known = (*REQUIRED_COLUMNS, *_OPTIONAL)
    return next((key for key, value in row.items() if isinstance(key, str) and key not in known
                 and _ANSWER_LIKE.search(key.lower()) and _given(value)), None)


def _given(value: Any) -> bool:
    """Not null, an empty string or NaN (a table's empty cell)."""
    if value is None or isinstance(value, str):
        return bool(value)
    return not (isinstance(value, float) and value != value)


def _bare_name(column: str) -> str:
    """``column`` in lower case without the whitespace and format characters (a byte-order mark, a zero-width space)
    around it."""
    start, end = 0, len(column)
    while start < end and (column[start].isspace() or unicodedata.category(column[start]) == "Cf"):
        start += 1
    while end > start and (column[end - 1].isspace() or unicodedata.category(column[end - 1]) == "Cf"):
        end -= 1
    return column[start:end].lower()


def table_rows(rows: Iterable[tuple[int, Any]], name: str) -> Iterator[tuple[str, Any]]:
    """``("row N", row)`` with plain Python values: a table cell cannot hold an object, so ``answers`` may be its
    JSON text (a CSV's cell, a string column), and array values (pandas, NumPy) become lists. An empty ``answers``
    cell is no answers (an unlabelled question), as a missing column is; so is pandas' NaN in an optional column."""
    for index, row in rows:
        row = plain(row)
        if isinstance(row, dict):
            row = {key: None if key in _OPTIONAL and value != value else value for key, value in row.items()}  # NaN
        answers = row.get("answers") if isinstance(row, dict) else None
        if isinstance(answers, str) and not answers.strip():
            row = {**row, "answers": None}
        elif isinstance(answers, str):
            try:
                row = {**row, "answers": loads(answers)}
            except (ValueError, NotPlainJsonError) as err:  # the question's own problem, raised with its checks
                row = DataFormatError(f"'answers' is text but not JSON {{\"text\": [...], \"answer_start\": [...]}}: {err}",
                                      row.get("id") or None, f"{name}, row {index}")
        yield f"row {index}", row


def plain(value: Any) -> Any:
    """Dicts, lists and scalars of Python's own types, for values read through NumPy, pandas or Arrow."""
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value.tolist() if hasattr(value, "tolist") and not isinstance(value, str) else value


def folder_records(path: Path, split: str | None) -> Records:
    if not ((path / "dataset_dict.json").exists() or (path / "state.json").exists()):
        raise DataFormatError(
            "expected a JSON or JSON Lines file, or a folder saved with datasets' save_to_disk; "
            "found a folder without dataset_dict.json or state.json", source=str(path),
        )
    import datasets

    try:
        loaded = datasets.load_from_disk(str(path))
    except Exception as err:  # datasets raises many kinds for a damaged folder; all mean the same to the user
        raise DataFormatError(f"could not read the saved dataset: {type(err).__name__}: {first_line(err)}", source=str(path)) from None
    return dataset_records(loaded, split, str(path))


HUB_PROBE_TIMEOUT_S = 5.0  # one look-up of the dataset's page; datasets' own retries take ~25 s offline


def hub_records(dataset_id: str, split: str | None) -> Records:
    """``datasets.load_dataset(id, split=...)``, once the hub has said the dataset exists (or offline mode reads the
    cache); without a network, or with an unknown id, a clear error at once."""
    import datasets

    name = f"{dataset_id}:{split}" if split else dataset_id
    problem = hub_dataset_problem(dataset_id)
    if problem:
        raise DataFormatError(f"no such file or folder: {dataset_id}; and {problem}; without a network, pass a local "
                              "SQuAD JSON or JSON Lines file or a folder saved with save_to_disk (or set HF_HUB_OFFLINE=1 "
                              "to read a hub dataset from the cache)", source=name)
    try:
        loaded = datasets.load_dataset(dataset_id, split=split)
    except Exception as err:  # offline mode, unknown split, a dataset datasets cannot read: the user's next step is the same
        raise DataFormatError(
            f"no such local file or folder, and the Hugging Face hub dataset could not be loaded "
            f"({type(err).__name__}: {first_line(err)}); without a network, pass a local SQuAD JSON or "
            "JSON Lines file or a folder saved with save_to_disk", source=name,
        ) from None
    return dataset_records(loaded, None, name)


def hub_dataset_problem(dataset_id: str) -> str | None:
    """Why the hub cannot give ``dataset_id`` now, after one look-up of at most :data:`HUB_PROBE_TIMEOUT_S` seconds;
    None when it can, or when offline mode (``HF_HUB_OFFLINE``, ``HF_DATASETS_OFFLINE``) leaves it to the cache."""
    import datasets
    from huggingface_hub import HfApi
    from huggingface_hub.errors import RepositoryNotFoundError

    if datasets.config.HF_HUB_OFFLINE or getattr(datasets.config, "HF_DATASETS_OFFLINE", False):
        return None
    try:
        HfApi().dataset_info(dataset_id, timeout=HUB_PROBE_TIMEOUT_S)
    except RepositoryNotFoundError:
        return "the Hugging Face hub has no dataset of that id"
    except Exception as err:  # noqa: BLE001  (no route, no name resolution, a timeout, a refusal: the hub is out of reach)
        return f"the Hugging Face hub cannot be reached ({type(err).__name__}: {first_line(err)})"
    return None


def first_line(error: Exception) -> str:
    return (str(error).strip().splitlines() or [""])[0]
