"""A comparison's results as typed records (:class:`Cell`, :class:`ComparisonResults`), and ``report.json``'s
format: what ``compare`` writes (:mod:`bio_mrc.harness.saved_report` reads it back).

Readers use the records' attributes (``cell.f1``, ``cell.calibration is not None``, ``results.eval``); a field
that does not apply is None and is left out of the JSON. JSON becomes a record where it is read (a model's cached
cells, a report read back, results handed to ``write_report`` as a mapping), and a record is built only from
known fields, so a misspelt or missing key is an error there, naming where it came from. ``config`` and the
splits' descriptions stay the JSON mappings they are written as.

``report.json`` carries ``format_version``. A report of this version is read as it is; one without it
(written before the field existed: the first form, every report committed before it) is read by
upgrading it in memory (:func:`upgrade_report`); one of a later version is refused, saying what to do.
"""

from __future__ import annotations

import math
from dataclasses import MISSING, dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import registry
from ..config_schema import whole_number
from ..errors import ConfigError, argument
from ..json_syntax import json_value
from ..types import Example
from .cell_key import CellKey
from .record_json import STATISTICS_KINDS  # not statistics_records: cached cells do not follow the statistics code

if TYPE_CHECKING:
    from .summary_records import Summary

REPORT_FORMAT = 2  # 1: no format_version; the evaluation's task as SQuAD "version" and "metric"
_FIRST_FORM = 1
_FIRST_FORM_METRIC = "multispan"  # the first form's "metric" of a MultiSpanQA evaluation


def report_format(report: dict[str, Any]) -> int:
    return report.get("format_version", _FIRST_FORM)


def upgrade_report(report: dict[str, Any], source: str) -> dict[str, Any]:
    """``report`` in this version's form: the first form's evaluation gets its ``task``; a later
    version than this package reads is a :class:`ConfigError` naming ``source`` and what to do."""
    version = report_format(report)
    if not whole_number(version) or version > REPORT_FORMAT or version < _FIRST_FORM:  # true is no version
        raise ConfigError(f"{source}: report format {json_value(version)}, but this bio_mrc reads formats {_FIRST_FORM} to "
                          f"{REPORT_FORMAT}: upgrade bio_mrc (pip install -U bio_mrc) or run the comparison again")
    if version == _FIRST_FORM:
        evaluation = dict(report["eval"])
        evaluation["task"] = first_form_task(evaluation.pop("metric", None), evaluation.pop("version", None))
        report = {**report, "eval": evaluation, "format_version": REPORT_FORMAT, **_first_form_summary(report.get("summary"), source)}
    return report


def _first_form_summary(summary: Any, source: str) -> dict[str, Any]:
    """A first-form summary whose rows were written before rows counted their training questions: each such row's
    ``train_questions`` read as None, the count unknown (the learning curve leaves it out); ``{}`` for any other. One
    written before summaries kept their paired statistics (a baseline, its contrasts, each cell's interval) is a
    :class:`ConfigError` saying what to do: nothing this version reports can be made of its cells without them."""
    if not isinstance(summary, dict) or not isinstance(summary.get("rows"), list):
        return {}
    if missing := [name for name in STATISTICS_KINDS if name not in summary]:
        raise ConfigError(f"{source}: summary is not a comparison summary: it lacks {missing} (a report written before "
                          f"summaries kept their paired statistics); run the comparison again without {argument('cells_from')}")
    rows = [{**row, "train_questions": None} if isinstance(row, dict) and "train_questions" not in row else row
            for row in summary["rows"]]
    return {"summary": {**summary, "rows": rows}}


def first_form_task(metric: str | None, version: str | None) -> str:
    """The task of a first-form evaluation: MultiSpanQA's metric, else SQuAD of its version."""
    if metric == _FIRST_FORM_METRIC:
        return registry.task_for("multispanqa", False).name
    return registry.task_for("squad", version == "2.0").name


def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


def _required_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING)


def _set_fields(record: Any) -> dict[str, Any]:
    """A record's fields that are set (not None), as the JSON keeps them."""
    return {f.name: value for f in fields(record) if (value := getattr(record, f.name)) is not None}


PER_QUESTION = ("em", "f1", "counts")  # a cell's per-question scores, arrays in memory and lists in JSON
# Per-question confidences keep 7 significant digits: beyond float32's precision, which the model computes in, and
# a committed report.json.xz half the size of one with every float64 digit (reports travel to GPU machines).
CONFIDENCE_DIGITS = 7


# 10**k is a float64 exactly up to k = 22: a quotient by one is then correctly rounded, as float() reads a decimal
_EXACT_POWERS = np.array([float(10**k) for k in range(23)])


def stored_confidences(values: Any) -> list[float]:
    """Confidences as a cell keeps them, in memory and in JSON: each to ``CONFIDENCE_DIGITS`` significant digits,
    ``float(f"{value:.7g}")``; float arithmetic gives the same number for nearly all at once, the rest go one by one."""
    numbers = np.asarray(values, dtype=np.float64)
    rounded, unsure = _rounded_at_once(numbers)
    for k in np.flatnonzero(unsure):
        rounded[k] = float(f"{float(numbers[k]):.{CONFIDENCE_DIGITS}g}")
    return rounded.tolist()


def _rounded_at_once(numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each of a 1-D array of numbers to ``CONFIDENCE_DIGITS`` significant digits by float arithmetic, and a mask of
    those it may get wrong: a digit tie within the product's rounding error, an exponent ``log10`` misjudged next to a
    power of ten, a power of ten no float64 holds, a number not positive and finite."""
    low, high = float(10 ** (CONFIDENCE_DIGITS - 1)), float(10 ** CONFIDENCE_DIGITS)
    with np.errstate(all="ignore"):  # zeros, negatives, NaN and infinities are masked, their warnings idle
        places = CONFIDENCE_DIGITS - 1 - np.floor(np.log10(numbers))
        sure = (numbers > 0) & np.isfinite(places) & (places >= 0) & (places < len(_EXACT_POWERS))
        scale = _EXACT_POWERS[np.where(sure, places, 0).astype(np.intp)]
        scaled = numbers * scale  # off the exact product by under 1e-9 below 1e7
        digits = np.rint(scaled)
        sure &= (scaled >= low) & (digits <= high) & (np.abs(scaled - np.floor(scaled) - 0.5) > 1e-6)
    return digits / scale, ~sure


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _plain_numbers(flat: np.ndarray) -> bool:
    """Whether a flat object array holds only JSON's numbers (Python ints and floats, no bools), at C speed."""
    return set(map(type, flat.tolist())) <= {int, float}


def _numbers_only(flat: np.ndarray) -> bool:
    return _plain_numbers(flat) or all(_is_number(n) for n in flat)


def _confidences_listed(value: Any) -> bool:
    """Whether a cell's ``selective`` is an object whose confidences (where it holds them) are an object of flat lists
    of numbers: each is rounded as a number (:func:`stored_confidences`)."""
    confidence = value.get("confidence", {}) if isinstance(value, dict) else None
    return isinstance(confidence, dict) and all(isinstance(x, list) and set(map(type, x)) <= {int, float} for x in confidence.values())


def _kind(check: Any, what: str) -> Any:
    return lambda value: None if check(value) else f"must be {what}, got {json_value(value)}"


def _scores(low: float, high: float | None) -> Any:
    """A check of per-question scores: a list of numbers in [low, high] (numbers at any depth, for span counts)."""
    def check(value: Any) -> str | None:
        if not isinstance(value, list):
            return f"must be a list of per-question scores, got {json_value(value)}"
        flat = np.asarray(value, dtype=object).ravel() if value else np.array([])
        if _plain_numbers(flat):  # checked at once; the loop below only names a bad one
            numbers = flat.astype(np.float64)
            if ((numbers >= low) & (numbers <= (math.inf if high is None else high))).all():
                return None
        for k, number in enumerate(flat):
            if not _is_number(number) or not low <= number <= (math.inf if high is None else high):
                bound = f"[{low:g}, {high:g}]" if high is not None else f"a count >= {low:g}"
                return f"holds {json_value(number)} at position {k}, outside {bound} (a hand-edited or corrupt file?)"
        return None
    return check


def _anything(value: Any) -> None:
    return None


_TEXT = _kind(lambda v: isinstance(v, str), "a string")
_SECONDS = _kind(lambda v: _is_number(v) and 0 <= v < math.inf, "a number of seconds >= 0")
_SETTING = _kind(lambda v: _is_number(v) and not math.isnan(v), "a number")
_FLAG = _kind(lambda v: isinstance(v, bool), "true or false")
_OBJECT = _kind(lambda v: isinstance(v, dict), "an object")
# What each cell field read back from JSON may hold; a report or cache with another value is refused, naming it.
_CELL_CHECKS = {
    "run": _TEXT, "decoding": _TEXT, "model_dir": _TEXT, "precision": _TEXT,
    "seed": _kind(lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    "train_questions": _kind(lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0, "a count >= 0"),
    "answers": _kind(lambda v: isinstance(v, list) and all(isinstance(a, str) for a in v), "a list of answer strings"),
    "em": _scores(0.0, 100.0), "f1": _scores(0.0, 100.0), "counts": _scores(0.0, None),
    "scores": _kind(lambda v: isinstance(v, dict) and all(isinstance(x, list) and _numbers_only(np.ravel(np.asarray(x, dtype=object)))
                                                      for x in v.values()), "an object of per-question score lists"),
    "decode_seconds": _SECONDS, "inference_seconds": _SECONDS, "train_seconds": _SECONDS,
    "threshold": _SETTING, "bio_length_prior": _SETTING,
    "tuning_saved_with_model": _FLAG, "train_seconds_partial": _FLAG, "reused_model": _FLAG,
    "tag_scores": _kind(lambda v: isinstance(v, dict) and all(_is_number(x) and 0 <= x <= 1 for x in v.values()),
                        "an object of scores in [0, 1]"),
    "calibration": _OBJECT, "selective": _kind(_confidences_listed, "an object whose confidences are lists of numbers"),
    "scored_in": _OBJECT, "calibration_skipped": _TEXT,
    "fold_model_dirs": _kind(lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of folders"),
    "fold_bio_length_priors": _kind(lambda v: isinstance(v, list) and all(x is None or _is_number(x) for x in v), "a list of numbers"),
    "fold_thresholds": _kind(lambda v: isinstance(v, list) and all(x is None or _is_number(x) for x in v), "a list of numbers"),
    "fold_question_hashes": _kind(lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of hashes"),
    "fold_training_hashes": _kind(lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of hashes"),
}


@dataclass
class Cell:
    """One model decoded one way on the evaluation questions: its per-question scores (SQuAD's ``em``/``f1``
    in 0..100, or MultiSpanQA's span ``counts``), answers, the settings it decoded with, its times, and
    where it came from (a cross-validation cell: each fold's model, settings and held-out questions; a reused one: ``scored_in``).
    A field that does not apply is None, and left out of the JSON."""

    run: str
    decoding: str
    seed: int
    model_dir: str
    answers: list[str]
    decode_seconds: float
    em: np.ndarray | None = None
    f1: np.ndarray | None = None
    counts: np.ndarray | None = None
    scores: dict[str, np.ndarray] | None = None  # per-question columns of a task scored otherwise, by name
    tag_scores: dict[str, float] | None = None
    inference_seconds: float | None = None
    threshold: float | None = None
    precision: str | None = None
    bio_length_prior: float | None = None
    min_span_probability: float | None = None  # multi-span answers: the span-count rule's threshold it decoded with
    calibration: dict[str, Any] | None = None
    calibration_skipped: str | None = None  # why tuning saved no calibrator for the decoding (a degenerate fit)
    selective: dict[str, Any] | None = None
    tuning_saved_with_model: bool | None = None
    train_seconds: float | None = None
    train_seconds_partial: bool | None = None
    reused_model: bool | None = None
    train_questions: int | None = None
    fold_model_dirs: list[str] | None = None
    fold_bio_length_priors: list[float | None] | None = None
    fold_thresholds: list[float | None] | None = None
    fold_min_span_probabilities: list[float] | None = None
    fold_question_hashes: list[str] | None = None  # which questions each fold held out (comparison_splits.held_out_hashes)
    fold_training_hashes: list[str] | None = None  # a run's share of each fold's training questions (comparison_splits.training_hashes)
    scored_in: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        for key in PER_QUESTION:  # arrays however the cell was made
            if getattr(self, key) is not None:
                setattr(self, key, np.asarray(getattr(self, key)))
        if self.scores is not None:
            self.scores = {name: np.asarray(values) for name, values in self.scores.items()}
        if self.selective and "confidence" in self.selective:  # the same digits however the cell was made
            confidence = {name: stored_confidences(values) for name, values in self.selective["confidence"].items()}
            self.selective = {**self.selective, "confidence": confidence}

    def columns(self) -> dict[str, np.ndarray]:
        """Every per-question column the cell holds, by name (``em``, ``f1``, ``counts``, a task's own)."""
        held = {key: getattr(self, key) for key in PER_QUESTION if getattr(self, key) is not None}
        return {**held, **(self.scores or {})}

    def column(self, name: str) -> np.ndarray:
        """One per-question column; a name the cell lacks is a :class:`ConfigError` naming it."""
        held = self.columns()
        if name not in held:
            raise ConfigError(f"cell {self.label} (seed {self.seed}) has no per-question {json_value(name)} scores; "
                              f"it has {json_value(sorted(held), whole=True)}")
        return held[name]

    @property
    def key(self) -> CellKey:
        """The cell's key in the summary: its run and decoding (its seeds are one cell there)."""
        return CellKey(self.run, self.decoding)

    @property
    def label(self) -> str:
        """The cell's name in the report: ``run/decoding``."""
        return str(self.key)

    @classmethod
    def from_json(cls, data: Any, source: str = "a cell") -> "Cell":
        """A cell from its JSON form (a report's, a cache's); anything but an object with the cell's fields (no
        unknown one, every required one) is a :class:`ConfigError` naming ``source``."""
        if not isinstance(data, dict):
            raise ConfigError(f"{source} is not a comparison cell (a JSON object), but {type(data).__name__}")
        missing = sorted(_required_names(cls) - set(data))
        if missing:
            raise ConfigError(f"{source} is not a comparison cell: it lacks {missing}")
        unknown = sorted(set(data) - _field_names(cls))
        if unknown:
            raise ConfigError(f"{source}: unknown cell fields {json_value(unknown)}; known: {json_value(sorted(_field_names(cls)), whole=True)}")
        for name, value in data.items():
            if value is not None and (problem := _CELL_CHECKS.get(name, _anything)(value)):
                raise ConfigError(f"{source}: field {name!r} {problem}")
        return cls(**data)

    def to_json(self) -> dict[str, Any]:
        """The JSON form: the fields set, arrays as lists."""
        as_json = lambda value: value.tolist() if isinstance(value, np.ndarray) else value  # noqa: E731
        return {key: {k: as_json(v) for k, v in value.items()} if key == "scores" else as_json(value)
                for key, value in _set_fields(self).items()}


@dataclass
class ComparisonResults:
    """Everything a comparison's report is made from: its config, provenance, the questions of each split
    (``eval`` with its ``task``), the cells, and each model's question-browser data (kept out of ``report.json``).
    ``config`` and the splits' descriptions (``eval``, ``train``, ``run_train``, ``tune``) are the JSON they are written as."""

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
    machine: str | None = None  # where the cells were scored and their models trained (bio_mrc.machine); its times are that machine's

    @classmethod
    def coerce(cls, results: "ComparisonResults | dict[str, Any]", source: str = "comparison results") -> "ComparisonResults":
        """``results`` as a record: a record as it is; a mapping of its fields (cells as JSON) checked and
        typed, a :class:`ConfigError` naming ``source`` where it is not."""
        if isinstance(results, cls):
            return results
        unknown = sorted(set(results) - _field_names(cls))
        missing = sorted(_required_names(cls) - set(results))
        if unknown or missing:
            raise ConfigError(f"{source}: unknown comparison result fields {unknown}, missing {missing}; known: {sorted(_field_names(cls))}")
        cells = [cell if isinstance(cell, Cell) else Cell.from_json(cell, f"{source}: cell {k}") for k, cell in enumerate(results["cells"])]
        return cls(**{**results, "cells": cells})

    def report_json(self, summary: Summary) -> dict[str, Any]:
        """``report.json``: this version's format, the results without the examples and browser data, the question ids, the summary."""
        kept = {key: value for key, value in _set_fields(self).items() if key not in ("cells", "eval_examples", "browser")}
        return {"format_version": REPORT_FORMAT, **kept, "cells": [cell.to_json() for cell in self.cells],
                "eval_ids": [ex.id for ex in self.eval_examples], "summary": summary.to_json()}
