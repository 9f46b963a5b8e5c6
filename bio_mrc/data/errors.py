"""One error type for bad input, always naming the file and the record, and the one JSON reader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class DataFormatError(ValueError):
    """Raised when an input file or record does not fit the expected layout."""

    def __init__(self, problem: str, record: str | None = None, source: str | None = None) -> None:
        where = ", ".join(part for part in (f"in {source}" if source else "", f"record {record!r}" if record else "") if part)
        super().__init__(f"{problem} ({where})" if where else problem)
        self.problem, self.record, self.source = problem, record, source


def read_json(path: str | Path) -> Any:
    """Parse a UTF-8 JSON file, turning every failure into a DataFormatError naming the file."""
    source = str(path)
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataFormatError("file not found", source=source) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DataFormatError(f"not valid UTF-8 JSON: {err}", source=source) from None
