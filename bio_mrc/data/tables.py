"""Tables of questions in the Hugging Face SQuAD columns: CSV, TSV and Parquet files read into ``datasets``,
a pandas DataFrame and a list of dicts. A table cell cannot hold an object, so ``answers`` may be written as the
JSON text ``{"text": [...], "answer_start": [...]}``; every other column is read as it is written (a CSV's cells
as text, so an id ``007`` stays ``"007"``)."""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import tempfile
import zlib
from pathlib import Path
from typing import Any, Sequence

from ..json_syntax import json_value
from .json_reader import DataFormatError, not_utf8, wide_without_mark
from .limits import max_columns, max_data_bytes, max_header_bytes, max_line_bytes
from .sources import Records, bounded_lines, check_columns, dataset_records, first_line, table_rows

PARQUET_MAGIC = b"PAR1"


def delimited_records(path: Path, delimiter: str) -> Records:
    """A CSV (``delimiter=","``) or TSV (``"\\t"``) file with a header row; every cell is read as text, an empty
    cell as the empty string (never a missing value)."""
    import datasets

    columns = _header(path, delimiter)
    _check_delimiter(columns, delimiter, str(path))
    check_columns(columns, str(path), f"header row ({'tab' if delimiter == chr(9) else 'comma'}-separated)")
    if not _checked_rows(path, delimiter, len(columns)):
        return Records(str(path), rows=iter(()))
    features = datasets.Features({column: datasets.Value("string") for column in columns})
    loaded = _load("csv", path, features=features, delimiter=delimiter, na_filter=False)
    return dataset_records(loaded, None, str(path))


def parquet_records(path: Path) -> Records:
    """A Parquet file's rows, decoded once: the batches counted against the size limit are the ``Dataset`` read (as
    ``datasets`` reads the file: its schema, its features). One of no rows has no questions."""
    import datasets
    import pyarrow
    import pyarrow.parquet

    try:
        with pyarrow.parquet.ParquetFile(path) as parquet:
            if parquet.metadata.num_rows == 0:
                return Records(str(path), rows=iter(()))
            table = pyarrow.Table.from_batches(_decoded_batches(parquet, str(path)), parquet.schema_arrow)
        loaded = datasets.Dataset(datasets.table.InMemoryTable(table))
    except DataFormatError:
        raise
    except Exception as err:  # noqa: BLE001  (Arrow raises its own kinds for a damaged footer or page; datasets a type it has none of)
        raise DataFormatError(f"could not read it as parquet: {type(err).__name__}: {first_line(err)}", source=str(path)) from None
    return dataset_records(loaded, None, str(path))


_PARQUET_BATCH_ROWS = 1_024  # rows decoded at a time: the size is counted as each batch is added


def _decoded_batches(parquet: Any, source: str) -> list[Any]:
    """A Parquet file's rows as Arrow batches, raising where they decode to more than
    :func:`~bio_mrc.data.limits.max_data_bytes`: first by the uncompressed sizes its footer states, then, as dictionary
    encoding stores a repeated value once (a file of kilobytes can decode to gigabytes) and a footer may understate, by
    the Arrow buffers of the batches, decoded and counted one batch at a time."""
    most, metadata = max_data_bytes(), parquet.metadata
    stated = sum(metadata.row_group(index).total_byte_size for index in range(metadata.num_row_groups))
    batches, decoded = [], 0
    for batch in parquet.iter_batches(batch_size=_PARQUET_BATCH_ROWS) if stated <= most else ():
        decoded += sum(_decoded_bytes(column) for column in batch.columns)
        if decoded > most:
            break
        batches.append(batch)
    if max(stated, decoded) > most:
        raise DataFormatError(f"the file is larger than {most:,} bytes decoded (BIO_MRC_MAX_DATA_BYTES raises the limit)",
                              source=source)
    return batches


def _decoded_bytes(array: Any) -> int:
    """The bytes of ``array`` as ``datasets`` holds it: a dictionary array (a column written with its Arrow type, as
    pandas' categories are, reads back as one) holds each value once, and decoded takes it once for each row."""
    import pyarrow
    import pyarrow.compute

    if not pyarrow.types.is_dictionary(array.type):
        return array.nbytes
    values, types = array.dictionary, pyarrow.types
    if not any(kind(values.type) for kind in (types.is_string, types.is_binary, types.is_large_string, types.is_large_binary)):
        mean = -(-values.nbytes // max(1, len(values)))  # any other value: its mean size, once a row that holds one
        return mean * (len(array) - array.null_count) + array.indices.nbytes
    taken = pyarrow.compute.sum(pyarrow.compute.take(pyarrow.compute.binary_length(values), array.indices)).as_py() or 0
    return taken + array.indices.nbytes


def dataframe_records(frame: Any, name: str = "pandas.DataFrame") -> Records:
    """A DataFrame's rows: lists in cells may be NumPy arrays (as pandas reads Parquet); they become lists."""
    check_columns([str(column) for column in frame.columns], name, "DataFrame")
    rows = (_whole_starts(row) for row in frame.to_dict("records"))
    return Records(name, rows=table_rows(enumerate(rows), name))


def _whole_starts(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with an ``answer_start`` array that pandas made float to hold a missing value as NaN (reading a Parquet
    list of integers with a null) as the integers it held, each NaN a missing start; any other value as it is."""
    answers = row.get("answers")
    starts = answers.get("answer_start") if isinstance(answers, dict) else None
    if getattr(getattr(starts, "dtype", None), "kind", None) != "f" or not all(s != s or float(s).is_integer() for s in starts):
        return row
    return {**row, "answers": {**answers, "answer_start": [None if s != s else int(s) for s in starts]}}


def list_records(rows: Sequence[Any], name: str = "list of dicts") -> Records:
    return Records(name, rows=table_rows(enumerate(rows), name))


def _header(path: Path, delimiter: str) -> list[str]:
    """The first row's names; ``datasets`` reads the rest. A header row longer than
    :func:`~bio_mrc.data.limits.max_header_bytes`, or of more than ``max_columns`` names, is refused at once."""
    most = max_header_bytes()
    try:
        with (gzip.open if path.suffix.lower() == ".gz" else open)(path, "rb") as handle:
            raw = handle.readline(most + 1)
        if wide := wide_without_mark(raw[:4]):  # its column names would read with a NUL between letters
            raise DataFormatError(wide, source=str(path))
        first = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise DataFormatError(not_utf8(err, "in the header row,"), source=str(path)) from None
    except (OSError, EOFError, zlib.error) as err:  # zlib.error: a damaged .gz, no OSError
        raise DataFormatError(f"could not read the header row: {err}", source=str(path)) from None
    if len(raw) > most and b"\r" in raw:  # a file of old Mac line endings reads as one line
        raise DataFormatError(_CR_ONLY, source=f"{path}, line 1")
    if len(raw) > most:
        raise DataFormatError(f"the header row is longer than {most:,} bytes (a SQuAD table names 4 to 6 columns; "
                              "BIO_MRC_MAX_HEADER_BYTES raises the limit)", source=str(path))
    try:
        columns = next(csv.reader(io.StringIO(first), delimiter=delimiter), [])
    except csv.Error as err:
        raise DataFormatError(_csv_problem(err), source=f"{path}, line 1") from None
    if len(columns) > max_columns():
        raise DataFormatError(f"the header row names {len(columns):,} columns, more than the limit of {max_columns():,} "
                              "(a SQuAD table names 4 to 6; BIO_MRC_MAX_COLUMNS raises the limit)", source=str(path))
    if "" in columns:
        raise DataFormatError(f"column {columns.index('') + 1} of the header row has no name", source=str(path))
    if repeated := next((name for name in columns if columns.count(name) > 1), None):
        raise DataFormatError(f"the header row names {repeated!r} twice (one of the two columns would be lost)", source=str(path))
    return columns


_DELIMITERS = ",\t;|"


def _check_delimiter(columns: list[str], delimiter: str, source: str) -> None:
    """A header row read as one column whose name holds another delimiter (a CSV saved with ``;``, as spreadsheets
    write it where ``,`` is the decimal mark) is refused naming that delimiter, not as a table lacking its columns."""
    if len(columns) != 1:
        return
    other = next((mark for mark in _DELIMITERS if mark != delimiter and mark in columns[0]), None)
    if other is not None:
        kind, expected = ("csv", "','") if delimiter == "," else ("tsv", "a tab")
        raise DataFormatError(f"the header row reads as one column, {json_value(columns[0])}: its names are separated by "
                              f"{other!r}, and a {kind} file's by {expected} (.csv comma-separated, .tsv and .tab "
                              "tab-separated): write it with that delimiter", source=source)


def _checked_rows(path: Path, delimiter: str, width: int) -> int:
    """How many rows follow the header (blank lines skipped, as pandas skips them). A row of more or fewer fields than
    the header names, a quoted field never closed and a line that is not UTF-8 raise naming the line: pandas would
    read a row of one field more as an index, shifting every cell into the wrong column."""
    source, rows, line = str(path), 0, 1
    with (gzip.open if path.suffix.lower() == ".gz" else open)(path, "rb") as handle, _field_size_limit(max_line_bytes()):
        reader = csv.reader(_utf8_lines(bounded_lines(handle, source), source), delimiter=delimiter, strict=True)
        try:
            next(reader, None)  # the header row, read by _header
            for row in reader:
                line, start = reader.line_num, line + 1
                if row and len(row) != width:
                    raise DataFormatError(f"the row has {len(row)} fields, the header row names {width} (a delimiter too many "
                                          "or too few, or a quote not closed?)", source=f"{source}, line {start}")
                if row and row[0].startswith(_BOM):
                    raise DataFormatError(_LATER_BOM, source=f"{source}, line {start}")
                rows += bool(row)
        except csv.Error as err:
            raise DataFormatError(_csv_problem(err), source=f"{source}, line {line + 1}") from None
    return rows


_BOM = "\ufeff"
# The mark a file starts with, here at the start of a later row: files joined, the second's mark kept. Read, it would be
# part of the row's first cell (an id no other file names).
_LATER_BOM = ("the row's first cell starts with a byte-order mark (U+FEFF), which only a file's first line may hold (two "
              "files joined, e.g. cat a.csv b.csv?): remove it, e.g. sed 's/^\\xEF\\xBB\\xBF//' IN > OUT")


_CR_ONLY = ("a carriage return (\\r) outside quotes that ends no line (old Mac line endings?): end the lines with "
            "\\n or \\r\\n, e.g. tr '\\r' '\\n' < IN > OUT, or quote the field")


def _csv_problem(err: csv.Error) -> str:
    """What Python's csv reader found wrong, in the user's words: a bare carriage return (\\r) ends no line here,
    as in files saved with the old Mac line endings, which Python's reader would name "universal-newline mode"."""
    if "end of data" in str(err):
        return "a quoted field is never closed"
    if "new-line character seen in unquoted field" in str(err):
        return _CR_ONLY
    return f"not a readable table: {err}"


def _utf8_lines(lines: Any, source: str) -> Any:
    for number, raw in enumerate(lines, 1):
        try:
            yield raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as err:
            raise DataFormatError(not_utf8(err, f"at line {number},"), source=source) from None


@contextlib.contextmanager
def _field_size_limit(most: int) -> Any:
    before = csv.field_size_limit(most)
    try:
        yield
    finally:
        csv.field_size_limit(before)


def _load(builder: str, path: Path, **options: Any) -> Any:
    """``datasets.load_dataset(builder, data_files=path)`` held in memory, its cache in a folder removed after, quietly:
    reading a file writes nothing beside it or in the user's cache."""
    import datasets

    quiet, verbosity = datasets.are_progress_bars_disabled(), datasets.logging.get_verbosity()
    datasets.disable_progress_bars()
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)  # its readers log each failure they raise
    try:
        with tempfile.TemporaryDirectory(prefix="bio_mrc_table_") as cache, contextlib.redirect_stderr(io.StringIO()):
            return datasets.load_dataset(builder, data_files=str(path), split="train", cache_dir=cache, keep_in_memory=True, **options)
    except Exception as err:  # pandas, Arrow and datasets each raise their own kinds for a damaged file; all mean the same
        while err.__cause__ is not None:  # datasets wraps the reader's own error in a DatasetGenerationError
            err = err.__cause__
        raise DataFormatError(f"could not read it as {builder}: {type(err).__name__}: {first_line(err)}", source=str(path)) from None
    finally:
        datasets.logging.set_verbosity(verbosity)
        if not quiet:
            datasets.enable_progress_bars()
