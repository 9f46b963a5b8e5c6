"""List columns of a ``datasets.Dataset`` as numpy arrays, read straight from Arrow, and rows written to Arrow alike.

Reading a column row by row builds a Python list per window; at inference that costs more than
decoding. Arrow already stores a list column as one flat buffer of values plus row offsets, so a
:class:`RaggedColumn` takes those two arrays as they are and pads any set of rows in one numpy
gather; :func:`arrow_list_column` builds such a column from rows in one step, and :func:`ragged_column` the
:class:`RaggedColumn` that Arrow column reads as, without Arrow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

if TYPE_CHECKING:  # imported where a column is read from or written to Arrow: an answer's windows never are
    import pyarrow as pa
    from datasets import Dataset


@dataclass(frozen=True)
class RaggedColumn:
    """Rows of different lengths: ``values[starts[r] : starts[r] + lengths[r]]`` is row ``r``.

    ``values`` is (total, *item_shape): scalars per position, or fixed-length items such as
    the (start, end) pairs of offsets.
    """

    values: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray

    @classmethod
    def from_dataset(cls, dataset: Dataset, name: str) -> "RaggedColumn":
        """Column ``name`` of ``dataset`` in the dataset's row order (selections included)."""
        return cls.from_arrow(dataset.with_format("arrow")[name], name)

    @classmethod
    def columns_of(cls, dataset: Dataset, names: Sequence[str]) -> dict[str, "RaggedColumn"]:
        """:meth:`from_dataset` of each of ``names``, by name: the dataset's Arrow view (a copy of the dataset object)
        made once for them all."""
        table = dataset.with_format("arrow")
        return {name: cls.from_arrow(table[name], name) for name in names}

    @classmethod
    def from_arrow(cls, column: pa.Array | pa.ChunkedArray, name: str = "column") -> "RaggedColumn":
        """An Arrow list column (e.g. one of a table's) as it stands; ``name`` is for errors."""
        import pyarrow as pa

        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        if not pa.types.is_list(column.type) and not pa.types.is_large_list(column.type):
            raise TypeError(f"column {name!r} is not a list column (it holds {column.type})")
        offsets = column.offsets.to_numpy()
        values = column.flatten()  # only this slice's values, unlike .values
        item_shape: tuple[int, ...] = ()
        if pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
            items = np.diff(values.offsets.to_numpy())
            if len(items) and (items != items[0]).any():
                raise ValueError(f"column {name!r} has items of different lengths; only fixed-length items pad")
            item_shape = (int(items[0]) if len(items) else 0,)
            values = values.flatten()
        flat = values.to_numpy(zero_copy_only=False).reshape(-1, *item_shape)
        return cls(flat, offsets[:-1] - offsets[0], np.diff(offsets))

    @classmethod
    def from_rows(cls, rows: Sequence[Any]) -> "RaggedColumn":
        """Rows given one by one (lists or arrays of equal item shape), in order."""
        arrays = [np.asarray(row) for row in rows]
        lengths = np.array([len(array) for array in arrays], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        values = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
        return cls(values, starts, lengths)

    @classmethod
    def concat(cls, columns: Sequence["RaggedColumn"]) -> "RaggedColumn":
        """The rows of ``columns``, one after another."""
        return cls.from_rows([column.row(r) for column in columns for r in range(len(column))])

    def row(self, r: int) -> np.ndarray:
        return self.values[self.starts[r] : self.starts[r] + self.lengths[r]]

    def take(self, rows: Sequence[int]) -> "RaggedColumn":
        """Rows ``rows`` only, renumbered 0, 1, … in that order."""
        return RaggedColumn.from_rows([self.row(r) for r in rows])

    def __len__(self) -> int:
        return len(self.lengths)

    def padded(self, rows: np.ndarray | None = None, width: int | None = None, fill: float = 0, dtype=None) -> np.ndarray:
        """Rows ``rows`` (default: all) as one (len(rows), width, *item_shape) array; positions
        past a row's end hold ``fill``; ``width`` defaults to the longest of those rows."""
        rows = np.arange(len(self)) if rows is None else np.asarray(rows)
        lengths = self.lengths[rows]
        width = int(lengths.max(initial=0)) if width is None else width
        inside = np.arange(width) < lengths[:, None]
        out = np.full((len(rows), width, *self.values.shape[1:]), fill, dtype=dtype or self.values.dtype)
        out[inside] = self.values[(self.starts[rows][:, None] + np.arange(width))[inside]]
        return out


def arrow_list_column(rows: Sequence[Any], dtype: Any, width: int | None = None) -> pa.ListArray:
    """Rows (lists or arrays of numbers; with ``width``, (n, width) arrays, each row a list of lists) as one Arrow
    list column of ``dtype`` values, from one flat buffer: ``datasets`` converts row by row and looks at every value
    of a Python list for mixed types, which cost a long context's windows more than tokenizing them."""
    import pyarrow as pa

    flat = [np.asarray(row, dtype=dtype).reshape(-1) for row in rows]
    values = pa.array(np.concatenate(flat) if flat else np.zeros(0, dtype=dtype))
    if width is not None:
        values = pa.ListArray.from_arrays(pa.array(np.arange(0, len(values) + 1, width, dtype=np.int32)), values)
    lengths = np.fromiter(map(len, flat), dtype=np.int64, count=len(flat)) // (width or 1)
    return pa.ListArray.from_arrays(pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)), values)


def ragged_column(rows: Sequence[Any], dtype: Any, width: int | None = None) -> RaggedColumn:
    """The :class:`RaggedColumn` that :meth:`RaggedColumn.from_arrow` reads from :func:`arrow_list_column` of the same
    ``rows``, ``dtype`` and ``width`` (the same values of the same type; starts and lengths of the same numbers), built
    in numpy alone: an Arrow array made from numpy imports pandas (pyarrow looks for its types), a cost an answer's
    windows, cut and run in one call, need not pay."""
    flat = [np.asarray(row, dtype=dtype).reshape(-1) for row in rows]
    values = np.concatenate(flat) if flat else np.zeros(0, dtype=dtype)
    lengths = np.fromiter(map(len, flat), dtype=np.int64, count=len(flat)) // (width or 1)
    return RaggedColumn(values.reshape(-1, width) if width is not None else values, np.cumsum(lengths) - lengths, lengths)
