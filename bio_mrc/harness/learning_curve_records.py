"""The learning curve of a summary as typed records: each cell a :class:`CurvePoint` (training questions, F1 and
its interval), each joint run's BIO − span :class:`Gap`, the gap's :class:`GapTrend` (and its :class:`LastStep`),
all of it a :class:`LearningCurve`; with their JSON form, ``report.json``'s ``summary.learning_curve``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from ..errors import ConfigError
from ..json_syntax import json_value
from .cell_key import CellKey, OfOneCell
from .record_json import check_kinds, checked, plain_record, refuse_unknown


@dataclass(frozen=True)
class CurvePoint(OfOneCell):
    """A cell trained on ``train_questions``: the heads of its run, its seeds, F1's mean (and sd over seeds, None
    with one) and the 95% interval."""

    cell: CellKey
    heads: str
    train_questions: int
    seeds: list[int]
    f1: float
    f1_sd: float | None
    ci_low: float
    ci_high: float

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run, "decoding": self.decoding, **{f.name: getattr(self, f.name) for f in fields(self) if f.name != "cell"}}

    @classmethod
    def from_json(cls, data: Any, source: str) -> "CurvePoint":
        cell = CellKey.of_fields(checked(data, (), source, "a point of the learning curve"), source)
        others = {key: value for key, value in data.items() if key not in ("run", "decoding")}
        return plain_record(cls, others, source, "a point of the learning curve", cell=cell)


@dataclass(frozen=True)
class Gap:
    """A run's paired BIO − span difference at its number of training questions, the seeds it paired on and how."""

    run: str
    train_questions: int
    diff: float
    ci_low: float
    ci_high: float
    seeds: list[int] | None
    resampling: str | None


@dataclass(frozen=True)
class LastStep:
    """The gap's change per 10× between the two largest sizes, the line through those two, where it reaches zero."""

    from_questions: float
    to_questions: float
    slope_per_decade: float
    intercept: float
    closing_questions: float | None


@dataclass(frozen=True)
class GapTrend:
    """The weighted line of the gap on log10(training questions): its slope (95% interval), intercept, the sizes it
    spans, the fitted gap at the largest, the residual check (χ², degrees of freedom, p; None with two sizes), the
    last step, and whether and where it closes (``closed``, ``never``, ``extrapolated``)."""

    slope_per_decade: float
    slope_ci: list[float]
    intercept: float
    sizes: int
    fitted_gap_at_largest: float
    residual_chi2: float
    residual_dof: int
    lack_of_fit_p: float | None
    last_step: LastStep | None
    closes: str
    closing_questions: float | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any, source: str) -> "GapTrend":
        step = checked(data, ("last_step",), source, "the gap's trend")["last_step"]
        last_step = None if step is None else plain_record(LastStep, step, f"{source}: last_step", "the last step")
        return plain_record(cls, data, source, "the gap's trend", last_step=last_step)


@dataclass(frozen=True)
class LearningCurve:
    """Every cell as a point (by training questions, then the report's order), the curves of the runs that share
    their heads (``heads · decoding``, those with two sizes or more), the gaps and their trend (None with one size),
    all in ``statistic``, the title of the task's main statistic (a point's ``f1`` is its value: MultiSpanQA's EM F1)."""

    points: list[CurvePoint]
    curves: dict[str, list[CurvePoint]]
    gaps: list[Gap]
    gap_trend: GapTrend | None
    statistic: str = "F1"

    def to_json(self) -> dict[str, Any]:
        return {"points": [p.to_json() for p in self.points],
                "curves": {name: [p.to_json() for p in curve] for name, curve in self.curves.items()},
                "gaps": [asdict(g) for g in self.gaps], "gap_trend": self.gap_trend and self.gap_trend.to_json(),
                **({"statistic": self.statistic} if self.statistic != "F1" else {})}  # F1 unsaid: reports before the field read back the same

    @classmethod
    def from_json(cls, data: Any, source: str = "the learning curve") -> "LearningCurve":
        data = checked(data, ("points", "curves", "gaps", "gap_trend"), source, "a learning curve")
        refuse_unknown(data, ("points", "curves", "gaps", "gap_trend", "statistic"), source)
        check_kinds(data, {"points": list, "curves": dict, "gaps": list, **({"statistic": str} if "statistic" in data else {})}, source)
        if not all(isinstance(curve, list) for curve in data["curves"].values()):
            raise ConfigError(f"{source}: field 'curves' must map each curve's name to a list of points")
        trend = data["gap_trend"]
        return cls(points=[CurvePoint.from_json(p, f"{source}: point {k}") for k, p in enumerate(data["points"])],
                   curves={name: [CurvePoint.from_json(p, f"{source}: curve {json_value(name)}") for p in curve] for name, curve in data["curves"].items()},
                   gaps=[plain_record(Gap, g, f"{source}: gap {k}", "a gap") for k, g in enumerate(data["gaps"])],
                   gap_trend=None if trend is None else GapTrend.from_json(trend, f"{source}: gap_trend"), statistic=data.get("statistic", "F1"))
