"""A comparison's summary as typed records: :class:`CellKey` (a cell's run and decoding, ``run/decoding`` as text),
:class:`Row` (a cell's scores and settings per seed), :class:`Contrast` (a paired difference A − B),
:class:`AgainstAbstaining` (SQuAD 2.0's cells against always abstaining) and :class:`Summary` (all of it, with the
selective-QA, learning-curve and data-set records of their own modules), with their JSON form, ``report.json``'s
``summary``.

A record is written with the keys it is read from, so a report reads back to the same numbers and writes
the same JSON again.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from ..errors import ConfigError
from ..json_syntax import json_value
from .cell_key import CellKey, OfOneCell
from .data_set_records import DataSetSummary
from .learning_curve_records import LearningCurve
from .record_json import check_kinds, checked, per_seed_scores, refuse_unknown
from .selective_records import SelectiveSummary
from .statistics_records import STATISTICS_KINDS, Contrast, Statistics, bootstrap_from_json
from ..metrics.stats import BootstrapResult

_ROW_REQUIRED = ("run", "decoding", "seeds", "train_questions", "threshold", "bio_length_prior", "train_seconds",
                 "inference_seconds", "decode_seconds")
_SUMMARY_KINDS = {"rows": list, **STATISTICS_KINDS, "breakdowns": dict}


@dataclass(frozen=True)
class Row(OfOneCell):
    """One cell's line of the score table: per seed (in ``seeds`` order) its scores (``scores``: the task's metrics,
    SQuAD 2.0's HasAns/NoAns subsets), settings and times; the mean tag scores and the ECE where they were measured."""

    cell: CellKey
    seeds: list[int]
    train_questions: int | None
    threshold: list[float | None]
    bio_length_prior: list[float | None]
    train_seconds: list[float | None]
    inference_seconds: list[float | None]
    decode_seconds: list[float]
    scores: dict[str, list[float | None]] = field(default_factory=dict)
    train_seconds_partial: list[bool | None] | None = None
    tag_scores: dict[str, float] | None = None
    ece: dict[str, list[float]] | None = None

    def to_json(self) -> dict[str, Any]:
        """The row as ``report.json`` keeps it: its label, run and decoding, then its fields, its scores by metric."""
        row: dict[str, Any] = {"cell": str(self.cell), "run": self.run, "decoding": self.decoding}
        for name in ("seeds", "train_questions", "threshold", "bio_length_prior", "train_seconds", "train_seconds_partial",
                     "inference_seconds", "decode_seconds", "tag_scores", "ece"):
            if (value := getattr(self, name)) is not None or name == "train_questions":
                row[name] = value
        return {**row, **self.scores}

    @classmethod
    def from_json(cls, data: Any, source: str = "a summary row") -> "Row":
        data = checked(data, _ROW_REQUIRED, source, "a summary row")
        cell = CellKey.of_fields(data, source)
        if data.get("cell", str(cell)) != str(cell):
            raise ConfigError(f"{source}: cell {json_value(data['cell'])} is not its run and decoding, {json_value(str(cell))}")
        known = {f.name for f in fields(cls)} - {"cell", "scores"}
        scores = per_seed_scores(data, known | {"cell", "run", "decoding"}, source)
        given = {key: value for key, value in data.items() if key in known}
        return cls(cell, scores=scores, **given)


@dataclass(frozen=True)
class AgainstAbstaining:
    """SQuAD 2.0's trivial reader, always abstaining, on the same questions: its F1, and each cell's paired
    difference from it (cell − always abstaining)."""

    f1: float
    cells: dict[CellKey, BootstrapResult]

    def to_json(self) -> dict[str, Any]:
        return {"f1": self.f1, "cells": {str(key): result.to_dict() for key, result in self.cells.items()}}

    @classmethod
    def from_json(cls, data: Any, source: str = "always abstaining") -> "AgainstAbstaining":
        data = checked(data, ("f1", "cells"), source, "the cells against always abstaining")
        refuse_unknown(data, ("f1", "cells"), source)
        check_kinds(data, {"cells": dict}, source)
        return cls(data["f1"], {CellKey.parse(label, f"{source}: cells"): bootstrap_from_json(value, f"{source}: {label}")
                                for label, value in data["cells"].items()})


# The parts of a summary that apply to some comparisons only, each a record of its own, by field.
_PARTS = {"selective": SelectiveSummary.from_json, "always_abstain": AgainstAbstaining.from_json,
          "learning_curve": LearningCurve.from_json}


@dataclass(frozen=True, kw_only=True)
class Summary(Statistics):
    """A comparison's numbers before any rendering: a row per cell, the baseline (and whether the configuration
    named it), how the bootstrap resampled, the contrasts (Holm-adjusted), every pair of cells, each cell's
    interval, the breakdowns by question group (``{group kind: {cell: {group: numbers}}}``); and where they apply,
    selective QA, always abstaining, the learning curve and each data set alone."""

    rows: list[Row]
    breakdowns: dict[str, dict[CellKey, dict[str, dict[str, float]]]] = field(default_factory=dict)
    selective: SelectiveSummary | None = None
    always_abstain: AgainstAbstaining | None = None
    learning_curve: LearningCurve | None = None
    data_sets: list[DataSetSummary] | None = None

    def to_json(self) -> dict[str, Any]:
        """``report.json``'s ``summary``: the keys it is read from."""
        summary = {"rows": [row.to_json() for row in self.rows], **self.statistics_json(),
                   "breakdowns": {name: {str(key): groups for key, groups in table.items()} for name, table in self.breakdowns.items()}}
        for name in _PARTS:
            if part := getattr(self, name):
                summary[name] = part.to_json()
        if self.data_sets:
            summary["data_sets"] = [part.to_json() for part in self.data_sets]
        return summary

    @classmethod
    def from_json(cls, data: Any, source: str = "the summary") -> "Summary":
        """The summary ``to_json`` wrote, its keys checked; a wrong one is a ConfigError naming ``source`` and the field."""
        data = checked(data, tuple(_SUMMARY_KINDS), source, "a comparison summary")
        check_kinds(data, _SUMMARY_KINDS, source)
        if not all(isinstance(table, dict) for table in data["breakdowns"].values()):
            raise ConfigError(f"{source}: field 'breakdowns' must map each kind of group to an object of cells")
        refuse_unknown(data, (f.name for f in fields(cls) if f.name != "baseline_named_in_config"), source)
        data_sets = data.get("data_sets")
        if data_sets is not None and not isinstance(data_sets, list):
            raise ConfigError(f"{source}: field 'data_sets' must be a list, got {type(data_sets).__name__}")
        return cls(
            rows=[Row.from_json(row, f"{source}: row {k}") for k, row in enumerate(data["rows"])],
            **Statistics.fields_from_json(data, source),
            breakdowns={name: {CellKey.parse(label, f"{source}: breakdown {json_value(name)}"): groups for label, groups in table.items()}
                        for name, table in data["breakdowns"].items()},
            **{name: read(data[name], f"{source}: {name}") for name, read in _PARTS.items() if data.get(name) is not None},
            data_sets=None if data_sets is None else [DataSetSummary.from_json(part, f"{source}: data set {k}") for k, part in enumerate(data_sets)],
        )


__all__ = ["AgainstAbstaining", "CellKey", "Contrast", "Row", "Statistics", "Summary"]
