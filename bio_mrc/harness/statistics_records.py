"""The statistics of a summary as typed records: :class:`Contrast` (a paired difference A − B) and
:class:`Statistics` (the baseline, the contrasts, every pair, each cell's interval), with their JSON form.
A comparison's summary and each data set's of a multi-set evaluation hold them."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from ..errors import ConfigError
from ..json_syntax import json_value
from .cell_key import CellKey
from .record_json import STATISTICS_KINDS, check_kinds, checked, plain_record, refuse_unknown
from ..metrics.stats import BootstrapResult, Interval

_CONTRAST_REQUIRED = ("a", "b", "mean_a", "mean_b", "diff", "ci_low", "ci_high", "p_value", "significant", "n_questions",
                      "n_resamples")


@dataclass(frozen=True, kw_only=True)
class Contrast(BootstrapResult):
    """A paired difference, cell ``a`` − cell ``b``: the bootstrap's result (the fields of
    :class:`~bio_mrc.metrics.stats.BootstrapResult`), the seeds it paired on and how it resampled, how often the two cells' answers
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
        data = checked(data, _CONTRAST_REQUIRED, source, "a paired difference")
        refuse_unknown(data, (f.name for f in fields(cls)), source)
        return cls(**{**data, "a": CellKey.parse(data["a"], source), "b": CellKey.parse(data["b"], source)})


def bootstrap_from_json(data: Any, source: str) -> BootstrapResult:
    """A paired bootstrap's result as :meth:`~bio_mrc.metrics.stats.BootstrapResult.to_dict` wrote it."""
    return plain_record(BootstrapResult, data, source, "a paired bootstrap")


def _interval_from_json(data: Any, source: str) -> Interval:
    names = [f.name for f in fields(Interval)]
    data = checked(data, tuple(names), source, "an interval")
    return Interval(**{name: data[name] for name in names})  # its resampling is written from n_seeds


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
        """The fields by name, to build a record that holds them from."""
        return {f.name: getattr(self, f.name) for f in fields(Statistics)}

    def statistics_json(self) -> dict[str, Any]:
        """The statistics as ``report.json`` keeps them."""
        return {
            "baseline": {"cell": str(self.baseline), "named_in_config": self.baseline_named_in_config},
            "resampling": self.resampling,
            "contrasts": [c.to_json() for c in self.contrasts],
            "comparisons": [c.to_json() for c in self.comparisons],
            "intervals": {str(key): interval.to_dict() for key, interval in self.intervals.items()},
        }

    @staticmethod
    def fields_from_json(data: dict[str, Any], source: str) -> dict[str, Any]:
        """The statistics' fields read from an object that holds their JSON (a summary's, or a data set's)."""
        check_kinds(data, STATISTICS_KINDS, source)
        baseline = data["baseline"]
        if "cell" not in baseline:
            raise ConfigError(f"{source}: field 'baseline' must name the baseline's cell, got {json_value(baseline)}")
        return dict(
            baseline=CellKey.parse(baseline["cell"], f"{source}: baseline"),
            baseline_named_in_config=bool(baseline.get("named_in_config")), resampling=data["resampling"],
            contrasts=[Contrast.from_json(c, f"{source}: contrast {k}") for k, c in enumerate(data["contrasts"])],
            comparisons=[Contrast.from_json(c, f"{source}: comparison {k}") for k, c in enumerate(data["comparisons"])],
            intervals={CellKey.parse(label, f"{source}: intervals"): _interval_from_json(value, f"{source}: interval of {label}")
                       for label, value in data["intervals"].items()},
        )
