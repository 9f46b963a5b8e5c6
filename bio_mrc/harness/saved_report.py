"""A ``report.json`` read back (:class:`SavedReport`): its top-level fields checked, its format upgraded
(:func:`bio_mrc.harness.results.upgrade_report`), its results and summary typed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from .results import _OBJECT, _TEXT, ComparisonResults, _kind, upgrade_report
from .summary_records import Summary


@dataclass
class SavedReport:
    """A ``report.json`` read back: its results (``report.json`` keeps the questions' ids, not their text, and
    no browser data: ``results.eval_examples`` and ``results.browser`` are empty), the evaluation question ids
    in order, and its summary."""

    results: ComparisonResults
    eval_ids: list[str]
    summary: Summary

    @classmethod
    def from_json(cls, report: dict[str, Any], source: str) -> "SavedReport":
        """A report of any format this package reads (:func:`upgrade_report`), typed; a field it does not
        know or lacks is a :class:`ConfigError` naming ``source``."""
        for key, problem in _report_field_problems(report):
            raise ConfigError(f"{source}: field {key!r} {problem}")
        report = upgrade_report(report, source)
        stored = {key: value for key, value in report.items() if key not in ("format_version", "eval_ids", "summary")}
        results = ComparisonResults.coerce({**stored, "eval_examples": []}, source)
        return cls(results, list(report["eval_ids"]), Summary.from_json(report.get("summary"), f"{source}: summary"))

    def to_json(self) -> dict[str, Any]:
        """The report in this version's format, as ``compare`` writes it."""
        return {**self.results.report_json(self.summary), "eval_ids": self.eval_ids}


_REPORT_CHECKS = {
    "config": _OBJECT, "eval": _OBJECT, "cells": _kind(lambda v: isinstance(v, list), "a list of cells"),
    "eval_ids": _kind(lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of question ids"),
    "summary": _OBJECT, "train": _OBJECT, "tune": _OBJECT, "run_train": _OBJECT, "cells_from": _OBJECT,
    "date": _TEXT, "package_version": _TEXT, "code": _TEXT, "machine": _TEXT,
}


_REPORT_REQUIRED = ("config", "eval", "cells", "eval_ids")


def _report_field_problems(report: Any) -> list[tuple[str, str]]:
    """What is wrong with a report's top-level fields read back (a hand-edited file), as (field, problem)."""
    if not isinstance(report, dict):
        return [("(the report)", f"must be a JSON object, got {type(report).__name__}")]
    found = ((key, _REPORT_CHECKS[key](value)) for key, value in report.items() if key in _REPORT_CHECKS and (value is not None or key in _REPORT_REQUIRED))
    return [(key, problem) for key, problem in found if problem]
