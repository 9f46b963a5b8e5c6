"""Tables of questions in the Hugging Face SQuAD columns: CSV, TSV and Parquet files read through ``datasets``,
a pandas DataFrame and a list of dicts. A table cell cannot hold an object, so ``answers`` may be written as the
JSON text ``{"text": [...], "answer_start": [...]}``; every other column is read as it is written (a CSV's cells
as text, so an id ``007`` stays ``"007"``)."""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import tempfile
from pathlib import Path
from typing import Any, Sequence

from .json_reader import DataFormatError
from .limits import max_columns, max_header_bytes
from .sources import Records, check_columns, dataset_records, first_line, table_rows

PARQUET_MAGIC = b"PAR1"


def delimited_records(path: Path, delimiter: str) -> Records:
    """A CSV (``delimiter=","``) or TSV (``"\\t"``) file with a header row; every cell is read as text, an empty
    cell as the empty string (never a missing value)."""
    import datasets

    columns = _header(path, delimiter)
    check_columns(columns, str(path), f"header row ({'tab' if delimiter == chr(9) else 'comma'}-separated)")
    features = datasets.Features({column: datasets.Value("string") for column in columns})
    loaded = _load("csv", path, features=features, delimiter=delimiter, na_filter=False)
    return dataset_records(loaded, None, str(path))


def parquet_records(path: Path) -> Records:
    return dataset_records(_load("parquet", path), None, str(path))


def dataframe_records(frame: Any, name: str = "pandas.DataFrame") -> Records:
    """A DataFrame's rows: lists in cells may be NumPy arrays (as pandas reads Parquet); they become lists."""
    check_columns([str(column) for column in frame.columns], name, "DataFrame")
    return Records(name, rows=table_rows(enumerate(frame.to_dict("records")), name))


def list_records(rows: Sequence[Any], name: str = "list of dicts") -> Records:
    return Records(name, rows=table_rows(enumerate(rows), name))


def _header(path: Path, delimiter: str) -> list[str]:
    """The first row's names; ``datasets`` reads the rest. A header row longer than
    :func:`~bio_mrc.data.limits.max_header_bytes`, or of more than ``max_columns`` names, is refused at once."""
    most = max_header_bytes()
    try:
        with (gzip.open if path.suffix.lower() == ".gz" else open)(path, "rb") as handle:
            raw = handle.readline(most + 1)
        first = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise DataFormatError(f"not UTF-8 text ({err.reason} in the header row, byte {err.start})", source=str(path)) from None
    except (OSError, EOFError) as err:
        raise DataFormatError(f"could not read the header row: {err}", source=str(path)) from None
    if len(raw) > most:
        raise DataFormatError(f"the header row is longer than {most:,} bytes (a SQuAD table names 4 to 6 columns; "
                              "BIO_MRC_MAX_HEADER_BYTES raises the limit)", source=str(path))
    columns = next(csv.reader(io.StringIO(first), delimiter=delimiter), [])
    if len(columns) > max_columns():
        raise DataFormatError(f"the header row names {len(columns):,} columns, more than the limit of {max_columns():,} "
                              "(a SQuAD table names 4 to 6; BIO_MRC_MAX_COLUMNS raises the limit)", source=str(path))
    return columns


def _load(builder: str, path: Path, **options: Any) -> Any:
    """``datasets.load_dataset(builder, data_files=path)`` held in memory, its cache in a folder removed after, quietly:
    reading a file writes nothing beside it or in the user's cache."""
    import datasets

    quiet = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        with tempfile.TemporaryDirectory(prefix="bio_mrc_table_") as cache, contextlib.redirect_stderr(io.StringIO()):
            return datasets.load_dataset(builder, data_files=str(path), split="train", cache_dir=cache, keep_in_memory=True, **options)
    except Exception as err:  # pandas, Arrow and datasets each raise their own kinds for a damaged file; all mean the same
        raise DataFormatError(f"could not read it as {builder}: {type(err).__name__}: {first_line(err)}", source=str(path)) from None
    finally:
        if not quiet:
            datasets.enable_progress_bars()
