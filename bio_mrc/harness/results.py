"""A comparison's results as typed records (:class:`Cell`, :class:`ComparisonResults`), and ``report.json``'s
format: what ``compare`` writes and reads back.

Both records read like the JSON they are written as (``cell["f1"]``, ``"calibration" in cell``, ``cell.get(...)``;
a field that is None is left out of ``in`` and the JSON), so a report read back from JSON and one just computed go through the
same summary and renderers; a record is built only from known fields, so a misspelt key is an error where it is made.

``report.json`` carries ``format_version``. A report of this version is read as it is; one without it
(written before the field existed: the first form, every report committed before it) is read by
upgrading it in memory (:func:`upgrade_report`); one of a later version is refused, saying what to do.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Iterator

import numpy as np

from .. import registry
from ..errors import ConfigError
from ..types import Example

REPORT_FORMAT = 2  # 1: no format_version; the evaluation's task as SQuAD "version" and "metric"
_FIRST_FORM = 1
_FIRST_FORM_METRIC = "multispan"  # the first form's "metric" of a MultiSpanQA evaluation


def report_format(report: dict[str, Any]) -> int:
    return report.get("format_version", _FIRST_FORM)


def upgrade_report(report: dict[str, Any], source: str) -> dict[str, Any]:
    """``report`` in this version's form: the first form's evaluation gets its ``task``; a later
    version than this package reads is a :class:`ConfigError` naming ``source`` and what to do."""
    version = report_format(report)
    if not isinstance(version, int) or version > REPORT_FORMAT or version < _FIRST_FORM:
        raise ConfigError(f"{source}: report format {version!r}, but this bio_mrc reads formats {_FIRST_FORM} to "
                          f"{REPORT_FORMAT}: upgrade bio_mrc (pip install -U bio_mrc) or run the comparison again")
    if version == _FIRST_FORM:
        evaluation = dict(report["eval"])
        evaluation["task"] = first_form_task(evaluation.pop("metric", None), evaluation.pop("version", None))
        report = {**report, "eval": evaluation, "format_version": REPORT_FORMAT}
    return report


def first_form_task(metric: str | None, version: str | None) -> str:
    """The task of a first-form evaluation: MultiSpanQA's metric, else SQuAD of its version."""
    if metric == _FIRST_FORM_METRIC:
        return registry.task_for("multispanqa", False).name
    return registry.task_for("squad", version == "2.0").name


class _ReadsLikeJson:
    """Mapping-style reads of a dataclass's fields: ``record[field]`` (None where unset), and a None field is
    absent from ``in``, ``get`` and ``keys`` (as ``to_json`` leaves it out)."""

    def keys(self) -> list[str]:
        return [f.name for f in fields(self) if getattr(self, f.name) is not None]

    def __getitem__(self, key: str) -> Any:
        if key not in _field_names(type(self)):
            raise KeyError(key)
        return getattr(self, key)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in _field_names(type(self)) and getattr(self, key) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def items(self) -> list[tuple[str, Any]]:
        return [(key, getattr(self, key)) for key in self.keys()]


def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


PER_QUESTION = ("em", "f1", "counts")  # a cell's per-question scores, arrays in memory and lists in JSON


@dataclass
class Cell(_ReadsLikeJson):
    """One model decoded one way on the evaluation questions: its per-question scores (SQuAD's ``em``/``f1``
    in 0..100, or MultiSpanQA's span ``counts``), answers, the settings it decoded with, its times, and
    where it came from (a cross-validation cell: each fold's model and settings; a reused one: ``scored_in``)."""

    run: str
    decoding: str
    seed: int
    model_dir: str
    answers: list[str]
    decode_seconds: float
    em: np.ndarray | None = None
    f1: np.ndarray | None = None
    counts: np.ndarray | None = None
    tag_scores: dict[str, float] | None = None
    inference_seconds: float | None = None
    threshold: float | None = None
    precision: str | None = None
    bio_length_prior: float | None = None
    calibration: dict[str, Any] | None = None
    selective: dict[str, Any] | None = None
    tuning_saved_with_model: bool | None = None
    train_seconds: float | None = None
    train_seconds_partial: bool | None = None
    reused_model: bool | None = None
    train_questions: int | None = None
    fold_model_dirs: list[str] | None = None
    fold_bio_length_priors: list[float | None] | None = None
    fold_thresholds: list[float | None] | None = None
    scored_in: dict[str, Any] | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any], source: str = "a cell") -> "Cell":
        """A cell from its JSON form (a report's, a cache's); an unknown key is a :class:`ConfigError` naming ``source``."""
        unknown = sorted(set(data) - _field_names(cls))
        if unknown:
            raise ConfigError(f"{source}: unknown cell fields {unknown}; known: {sorted(_field_names(cls))}")
        arrays = {key: np.asarray(data[key]) for key in PER_QUESTION if data.get(key) is not None}
        return cls(**{**data, **arrays})

    def to_json(self) -> dict[str, Any]:
        """The JSON form: the fields set, arrays as lists."""
        return {key: value.tolist() if isinstance(value, np.ndarray) else value for key, value in self.items()}


@dataclass
class ComparisonResults(_ReadsLikeJson):
    """Everything a comparison's report is made from: its config, provenance, the questions of each split
    (``eval`` with its ``task``), the cells, and each model's question-browser data (kept out of ``report.json``)."""

    config: dict[str, Any]
    package_version: str
    date: str
    eval: dict[str, Any]
    eval_examples: list[Example]
    cells: list[Cell]
    code: str | None = None  # the fingerprint of the code that scored the cells
    train: dict[str, Any] | None = None
    run_train: dict[str, Any] = field(default_factory=dict)
    tune: dict[str, Any] | None = None
    cells_from: dict[str, Any] | None = None
    browser: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def coerce(cls, results: "ComparisonResults | dict[str, Any]") -> "ComparisonResults":
        """``results`` as a record: a record as it is; a mapping of its fields (cells as JSON) checked and typed."""
        if isinstance(results, cls):
            return results
        unknown = sorted(set(results) - _field_names(cls))
        if unknown:
            raise ConfigError(f"unknown comparison result fields {unknown}; known: {sorted(_field_names(cls))}")
        cells = [cell if isinstance(cell, Cell) else Cell.from_json(dict(cell), f"cell {k}") for k, cell in enumerate(results["cells"])]
        return cls(**{**results, "cells": cells})

    def report_json(self, summary: dict[str, Any]) -> dict[str, Any]:
        """``report.json``: this version's format, the results without the examples and browser data, the question ids, the summary."""
        kept = {key: value for key, value in self.items() if key not in ("cells", "eval_examples", "browser")}
        return {"format_version": REPORT_FORMAT, **kept, "cells": [cell.to_json() for cell in self.cells],
                "eval_ids": [ex.id for ex in self.eval_examples], "summary": summary}
