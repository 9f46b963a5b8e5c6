"""A call's windows held as numpy columns, read as the answering doors read a ``datasets.Dataset`` of them.

An answer's windows are cut, run and let go within one call: never mapped, cached or shuffled. Holding them in a
``Dataset`` cost every answering process the import of ``datasets`` and of pandas (which pyarrow imports for any array
built from Python or numpy) for a wrapper whose columns the forward pass reads back as numpy arrays at once.
A :class:`WindowTable` holds those arrays themselves: each list column a
:class:`~bio_mrc.features.ragged.RaggedColumn`, each column of one value a window an array.
:func:`window_columns` and :func:`column_values` read either kind of windows alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from .ragged import RaggedColumn

if TYPE_CHECKING:
    from datasets import Dataset


class WindowTable:
    """Windows by column, in order: a list column (tokens of a window) a :class:`RaggedColumn`, a column of one value
    a window (its example, its question's tokens) a numpy array; every column one row a window."""

    def __init__(self, columns: Mapping[str, RaggedColumn | np.ndarray]) -> None:
        self.columns = dict(columns)
        if len({len(column) for column in self.columns.values()}) > 1:
            raise ValueError(f"the columns of a WindowTable hold one row a window, got {self._lengths()}")

    def _lengths(self) -> dict[str, int]:
        return {name: len(column) for name, column in self.columns.items()}

    def __len__(self) -> int:
        return next((len(column) for column in self.columns.values()), 0)

    def __repr__(self) -> str:
        return f"WindowTable(windows={len(self)}, columns={self.column_names})"

    @property
    def column_names(self) -> list[str]:
        return list(self.columns)

    def __getitem__(self, name: str) -> np.ndarray:
        """A column of one value a window, as an array (``np.asarray`` of a ``Dataset``'s column reads the same)."""
        column = self._column(name)
        if isinstance(column, RaggedColumn):
            raise TypeError(f"column {name!r} holds a list a window: read it with ragged([{name!r}])")
        return column

    def ragged(self, names: Sequence[str]) -> dict[str, RaggedColumn]:
        """The list columns ``names``, by name (as :meth:`RaggedColumn.columns_of` reads a ``Dataset``'s)."""
        found = {name: self._column(name) for name in names}
        if flat := [name for name, column in found.items() if not isinstance(column, RaggedColumn)]:
            raise TypeError(f"columns {flat} hold one value a window, not a list: read them by name")
        return found  # type: ignore[return-value] (each one a RaggedColumn, checked)

    def _column(self, name: str) -> RaggedColumn | np.ndarray:
        if name not in self.columns:
            raise KeyError(f"no column {name!r} among the windows' columns {self.column_names}")
        return self.columns[name]

    @classmethod
    def joined(cls, tables: Sequence["WindowTable"]) -> "WindowTable":
        """The windows of ``tables``, one after another (each holding the same columns, each list column's rows one
        after another in its values, as :func:`~bio_mrc.features.ragged.ragged_column` builds them)."""
        if len(tables) == 1:
            return tables[0]
        if not tables:
            return cls({})
        names = tables[0].column_names
        if any(table.column_names != names for table in tables):
            raise ValueError(f"tables of different columns cannot be joined: {[table.column_names for table in tables]}")
        return cls({name: _joined([table.columns[name] for table in tables]) for name in names})


def _joined(columns: Sequence[RaggedColumn | np.ndarray]) -> RaggedColumn | np.ndarray:
    if not isinstance(columns[0], RaggedColumn):
        return np.concatenate(columns)
    lengths = np.concatenate([column.lengths for column in columns])  # each column's values: its rows, in order
    return RaggedColumn(np.concatenate([column.values for column in columns]), np.cumsum(lengths) - lengths, lengths)


def window_columns(windows: Dataset | WindowTable, names: Sequence[str]) -> dict[str, RaggedColumn]:
    """The list columns ``names`` of ``windows``: a :class:`WindowTable`'s as it holds them, a ``Dataset``'s read from
    its Arrow view (:meth:`RaggedColumn.columns_of`)."""
    if isinstance(windows, WindowTable):
        return windows.ragged(names)
    return RaggedColumn.columns_of(windows, names)


def column_values(windows: Dataset | WindowTable, name: str) -> np.ndarray:
    """The column ``name`` of one value a window (every window's example, its question's tokens) as an array: a
    :class:`WindowTable`'s as it holds it, a ``Dataset``'s read whole from its Arrow view, as any selection of the
    windows reads it."""
    if isinstance(windows, WindowTable):
        return windows[name]
    return windows.with_format("arrow")[name].to_numpy()
