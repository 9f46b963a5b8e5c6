"""A comparison's summary as typed records: :class:`CellKey` (a cell's run and decoding, ``run/decoding`` as text),
:class:`Row` (a cell's scores and settings per seed), :class:`Contrast` (a paired difference A − B) and
:class:`Summary` (all of it), with their JSON form, ``report.json``'s ``summary``.

A record is written with the keys it is read from, so a report reads back to the same numbers and writes
the same JSON again. The parts that are only rendered (selective QA, always abstaining, the learning curve,
the data sets of a multi-set evaluation) stay the JSON mappings they are written as, their cells named by label.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from ..errors import ConfigError
from .cell_key import CellKey
from .stats import BootstrapResult, Interval


def _checked(data: Any, required: tuple[str, ...], source: str, what: str) -> dict[str, Any]:
    """``data`` as read, when it is an object with every ``required`` key; a :class:`ConfigError` naming ``source`` otherwise."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source} is not {what} (a JSON object), but {type(data).__name__}")
    missing = [name for name in required if name not in data]
    if missing:
        raise ConfigError(f"{source} is not {what}: it lacks {missing}")
    return data


_ROW_REQUIRED = ("run", "decoding", "seeds", "train_questions", "threshold", "bio_length_prior", "train_seconds",
                 "inference_seconds", "decode_seconds")
_CONTRAST_REQUIRED = ("a", "b", "mean_a", "mean_b", "diff", "ci_low", "ci_high", "p_value", "significant", "n_questions",
                      "n_resamples")
_KIND_NAMES = {list: "a list", dict: "an object", str: "a string"}
_SUMMARY_KINDS = {"rows": list, "baseline": dict, "resampling": str, "contrasts": list, "comparisons": list, "intervals": dict,
                  "breakdowns": dict}


@dataclass(frozen=True)
class Row:
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

    @property
    def run(self) -> str:
        return self.cell.run

    @property
    def decoding(self) -> str:
        return self.cell.decoding

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
        data = _checked(data, _ROW_REQUIRED, source, "a summary row")
        for name in ("run", "decoding"):
            if not isinstance(data.get(name), str):
                raise ConfigError(f"{source}: field {name!r} must be a string, got {data.get(name)!r}")
        cell = CellKey(data["run"], data["decoding"])
        if data.get("cell", str(cell)) != str(cell):
            raise ConfigError(f"{source}: cell {data['cell']!r} is not its run and decoding, {str(cell)!r}")
        known = {f.name for f in fields(cls)} - {"cell", "scores"}
        scores = {key: value for key, value in data.items() if key not in known | {"cell", "run", "decoding"}}
        for key, value in scores.items():
            if not isinstance(value, list):
                raise ConfigError(f"{source}: score {key!r} must be a list of per-seed scores, got {value!r}")
        given = {key: value for key, value in data.items() if key in known}
        return cls(cell, scores=scores, **given)


@dataclass(frozen=True, kw_only=True)
class Contrast(BootstrapResult):
    """A paired difference, cell ``a`` − cell ``b``: the bootstrap's result (the fields of
    :class:`~.stats.BootstrapResult`), the seeds it paired on and how it resampled, how often the two cells' answers
    agree, and for a contrast the configuration names, its Holm-adjusted p-value (None in the full matrix of pairs)."""

    a: CellKey
    b: CellKey
    seeds: list[int] | None = None
    resampling: str | None = None
    agreement: float | None = None
    p_holm: float | None = None
    significant_holm: bool | None = None

    def to_json(self) -> dict[str, Any]:
        """The contrast as ``report.json`` keeps it: the cells by label, the fields set."""
        values = {"a": str(self.a), "b": str(self.b), **{f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("a", "b")}}
        return {key: value for key, value in values.items() if value is not None}

    @classmethod
    def from_json(cls, data: Any, source: str = "a contrast") -> "Contrast":
        data = _checked(data, _CONTRAST_REQUIRED, source, "a paired difference")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ConfigError(f"{source}: unknown fields {unknown}")
        return cls(**{**data, "a": CellKey.parse(data["a"], source), "b": CellKey.parse(data["b"], source)})


def _interval_from_json(data: Any, source: str) -> Interval:
    if not isinstance(data, dict):
        raise ConfigError(f"{source} is not an interval (a JSON object), but {type(data).__name__}")
    names = {f.name for f in fields(Interval)}
    missing = sorted(names - set(data))
    if missing:
        raise ConfigError(f"{source} is not an interval: it lacks {missing}")
    return Interval(**{name: data[name] for name in names})


@dataclass(frozen=True)
class Statistics:
    """The statistics :func:`~.summary.statistics` computes: the baseline, the contrasts, every pair, each interval."""

    baseline: CellKey
    baseline_named_in_config: bool
    resampling: str
    contrasts: list[Contrast]
    comparisons: list[Contrast]
    intervals: dict[CellKey, Interval]

    def as_kwargs(self) -> dict[str, Any]:
        """The fields by name, to build a :class:`Summary` from."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, kw_only=True)
class Summary(Statistics):
    """A comparison's numbers before any rendering: a row per cell, the baseline (and whether the configuration
    named it), how the bootstrap resampled, the contrasts (Holm-adjusted), every pair of cells, each cell's
    interval, the breakdowns by question group (``{group kind: {cell: {group: numbers}}}``); and where they apply,
    selective QA, always abstaining, the learning curve and the data sets, as their JSON."""

    rows: list[Row]
    breakdowns: dict[str, dict[CellKey, dict[str, dict[str, float]]]] = field(default_factory=dict)
    selective: dict[str, Any] | None = None
    always_abstain: dict[str, Any] | None = None
    learning_curve: dict[str, Any] | None = None
    data_sets: list[dict[str, Any]] | None = None

    def to_json(self) -> dict[str, Any]:
        """``report.json``'s ``summary``: the keys it is read from."""
        summary = {"rows": [row.to_json() for row in self.rows], **statistics_json(self),
                   "breakdowns": {name: {str(key): groups for key, groups in table.items()} for name, table in self.breakdowns.items()}}
        for name in ("selective", "always_abstain", "learning_curve", "data_sets"):
            if getattr(self, name):
                summary[name] = getattr(self, name)
        return summary

    @classmethod
    def from_json(cls, data: Any, source: str = "the summary") -> "Summary":
        data = _checked(data, tuple(_SUMMARY_KINDS), source, "a comparison summary")
        for name, kind in _SUMMARY_KINDS.items():
            if not isinstance(data[name], kind):
                raise ConfigError(f"{source}: field {name!r} must be {_KIND_NAMES[kind]}, got {type(data[name]).__name__}")
        baseline = data["baseline"]
        if "cell" not in baseline:
            raise ConfigError(f"{source}: field 'baseline' must name the baseline's cell, got {baseline!r}")
        if not all(isinstance(table, dict) for table in data["breakdowns"].values()):
            raise ConfigError(f"{source}: field 'breakdowns' must map each kind of group to an object of cells")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ConfigError(f"{source}: unknown fields {unknown}")
        return cls(
            rows=[Row.from_json(row, f"{source}: row {k}") for k, row in enumerate(data["rows"])],
            baseline=CellKey.parse(baseline["cell"], f"{source}: baseline"),
            baseline_named_in_config=bool(baseline.get("named_in_config")), resampling=data["resampling"],
            contrasts=[Contrast.from_json(c, f"{source}: contrast {k}") for k, c in enumerate(data["contrasts"])],
            comparisons=[Contrast.from_json(c, f"{source}: comparison {k}") for k, c in enumerate(data["comparisons"])],
            intervals={CellKey.parse(label, f"{source}: intervals"): _interval_from_json(value, f"{source}: interval of {label}")
                       for label, value in data["intervals"].items()},
            breakdowns={name: {CellKey.parse(label, f"{source}: breakdown {name!r}"): groups for label, groups in table.items()}
                        for name, table in data["breakdowns"].items()},
            **{name: data.get(name) for name in ("selective", "always_abstain", "learning_curve", "data_sets")},
        )


def statistics_json(statistics: Any) -> dict[str, Any]:
    """The statistics of a summary (or of one data set's), as ``report.json`` keeps them."""
    return {
        "baseline": {"cell": str(statistics.baseline), "named_in_config": statistics.baseline_named_in_config},
        "resampling": statistics.resampling,
        "contrasts": [c.to_json() for c in statistics.contrasts],
        "comparisons": [c.to_json() for c in statistics.comparisons],
        "intervals": {str(key): interval.to_dict() for key, interval in statistics.intervals.items()},
    }


__all__ = ["CellKey", "Contrast", "Row", "Statistics", "Summary", "statistics_json"]
