"""The lines of an answers stream that a resumed run keeps, carried over as this version writes them.

A resumed run ends with the bytes of a run never interrupted, so each line it keeps is the line this version writes
for the same answer: the record read back, written as :func:`~bio_mrc.inference.streaming.chunk_lines` writes one. A
line this version wrote comes out byte for byte as it was; an earlier version's comes out in this version's form: a
no-answer score, confidence or probability of no finite value (the ``Infinity`` an earlier version wrote for a
question no span survives for, which no JSON reader but Python's takes) as null, as
:meth:`~bio_mrc.types.Prediction.to_dict` writes it, and a line separator or control character escaped
(:func:`~bio_mrc.io.printable_json`). A number of no finite value anywhere else (a span's score, decoded by an earlier
version from a model's scores of no finite value, which this version refuses) stands for no line this version writes:
the resume is refused.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, TextIO

from ..errors import DataFormatError, argument
from ..io import printable_json
from ..json_syntax import json_value

# The numbers of an answers line that this version writes as null where they have no finite value (Prediction.to_dict).
NULL_WHERE_NOT_FINITE = ("no_answer_score", "confidence", "probability")


def line_written_now(record: dict[str, Any], line: int, stream: Path) -> str:
    """Line ``line`` of ``stream``, read back as ``record`` (an answers line, its fields checked), as this version
    writes it, newline included; a number of no finite value where this version writes none is refused in one line."""
    nulls = {name: None for name in NULL_WHERE_NOT_FINITE if _not_finite(record.get(name))}
    found = _first_not_finite({key: value for key, value in record.items() if key not in nulls})
    if found is not None:
        where, value = found
        raise DataFormatError(
            f"line {line} has {where} {json_value(value)}, no number this version writes (it refuses a "
            f"model's scores of no finite value): start again without {argument('resume', True)}",
            source=str(stream),
        )
    return printable_json({**record, **nulls}) + "\n"


def write_kept_lines(source: Path, handle: TextIO, size: int) -> None:
    """The lines of the first ``size`` bytes of the answers stream ``source`` (whole lines, read and checked already),
    each written to ``handle`` as this version writes it (:func:`line_written_now`)."""
    with open(source, "rb") as reading:
        for number, raw in enumerate(reading, 1):
            if size <= 0:
                break
            size -= len(raw)
            handle.write(line_written_now(json.loads(raw), number, source))


def _not_finite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def _first_not_finite(record: dict[str, Any]) -> tuple[str, float] | None:
    """Where ``record`` first holds a float of no finite value (``spans[0].score``) and the value; None where it holds
    none. Walked without recursion: a line is as deep as the JSON parser reads."""
    pending: list[tuple[str, Any]] = [(key, value) for key, value in reversed(record.items())]
    while pending:
        where, value = pending.pop()
        if _not_finite(value):
            return where, value
        if isinstance(value, dict):
            pending += [(f"{where}.{key}", item) for key, item in reversed(value.items())]
        elif isinstance(value, list):
            pending += [(f"{where}[{index}]", item) for index, item in reversed(list(enumerate(value)))]
    return None


__all__ = ["NULL_WHERE_NOT_FINITE", "line_written_now", "write_kept_lines"]
