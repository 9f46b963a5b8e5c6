"""A cell's name: one run decoded one way, ``run/decoding`` in reports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..json_syntax import json_value


@dataclass(frozen=True)
class CellKey:
    """A cell of the report: one run decoded one way (its seeds are one cell)."""

    run: str
    decoding: str

    def __str__(self) -> str:
        return f"{self.run}/{self.decoding}"

    @classmethod
    def parse(cls, label: Any, source: str = "a cell label") -> "CellKey":
        """The key of a ``run/decoding`` label (a decoding's name has no ``/``; a run's may)."""
        run, slash, decoding = label.rpartition("/") if isinstance(label, str) else ("", "", "")
        if not (slash and run and decoding):
            raise ConfigError(f"{source}: {json_value(label)} is not a cell label of the form run/decoding")
        return cls(run, decoding)

    @classmethod
    def of_fields(cls, data: dict[str, Any], source: str) -> "CellKey":
        """The key of a record read back that names its cell by its ``run`` and ``decoding`` fields."""
        for name in ("run", "decoding"):
            if not isinstance(data.get(name), str):
                raise ConfigError(f"{source}: field {name!r} must be a string, got {json_value(data.get(name))}")
        return cls(data["run"], data["decoding"])


class OfOneCell:
    """A record of one cell (its ``cell`` field): the cell's run and decoding."""

    cell: CellKey

    @property
    def run(self) -> str:
        return self.cell.run

    @property
    def decoding(self) -> str:
        return self.cell.decoding
