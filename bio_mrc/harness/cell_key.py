"""A cell's name: one run decoded one way, ``run/decoding`` in reports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError


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
            raise ConfigError(f"{source}: {label!r} is not a cell label of the form run/decoding")
        return cls(run, decoding)
