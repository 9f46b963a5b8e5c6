"""The selective-QA part of a summary as typed records: per cell and confidence, :class:`ConfidenceMeasures` (each
number per seed, the first seed's :class:`RiskCoverageCurve`), the contrasts' :class:`AurcContrast`, all of it a
:class:`SelectiveSummary`; with their JSON form, ``report.json``'s ``summary.selective``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from ..errors import ConfigError
from .cell_key import CellKey
from .record_json import check_kinds, checked, plain_record, refuse_unknown
from ..metrics.stats import BootstrapResult


@dataclass(frozen=True)
class RiskCoverageCurve:
    """A risk–coverage curve subsampled for the report: each point's confidence threshold, coverage and accuracy."""

    threshold: list[float]
    coverage: list[float]
    accuracy: list[float]


@dataclass(frozen=True)
class ConfidenceMeasures:
    """One cell's numbers for one confidence, per seed (None where a seed has no right or no wrong answer), and
    its first seed's curve."""

    aurc: list[float]
    excess_aurc: list[float]
    coverage_at_80: list[float]
    coverage_at_90: list[float]
    ece: list[float]
    ice_right: list[float | None]
    ice_wrong: list[float | None]
    macro_ce: list[float | None]
    curve: RiskCoverageCurve

    @classmethod
    def from_json(cls, data: Any, source: str) -> "ConfidenceMeasures":
        curve = checked(data, ("curve",), source, "a confidence's measures")["curve"]
        return plain_record(cls, data, source, "a confidence's measures",
                            curve=plain_record(RiskCoverageCurve, curve, f"{source}: curve", "a risk–coverage curve"))


@dataclass(frozen=True, kw_only=True)
class AurcContrast(BootstrapResult):
    """AURC of cell ``a`` − cell ``b`` for one confidence, paired on the seeds both have: the bootstrap's result."""

    a: CellKey
    b: CellKey
    confidence: str
    seeds: list[int]

    def to_json(self) -> dict[str, Any]:
        bootstrap = {f.name: getattr(self, f.name) for f in fields(BootstrapResult)}
        return {"a": str(self.a), "b": str(self.b), "confidence": self.confidence, "seeds": self.seeds, **bootstrap}

    @classmethod
    def from_json(cls, data: Any, source: str) -> "AurcContrast":
        data = checked(data, ("a", "b"), source, "an AURC contrast")
        return plain_record(cls, data, source, "an AURC contrast", a=CellKey.parse(data["a"], source), b=CellKey.parse(data["b"], source))


@dataclass(frozen=True)
class SelectiveSummary:
    """Each cell's measures by confidence (``raw``, and ``calibrated`` where it has a calibrator), and the AURC
    contrasts of the configuration's contrasts."""

    cells: dict[CellKey, dict[str, ConfidenceMeasures]]
    contrasts: list[AurcContrast]

    def to_json(self) -> dict[str, Any]:
        return {"cells": {str(key): {kind: asdict(m) for kind, m in kinds.items()} for key, kinds in self.cells.items()},
                "contrasts": [c.to_json() for c in self.contrasts]}

    @classmethod
    def from_json(cls, data: Any, source: str = "the selective-QA summary") -> "SelectiveSummary":
        data = checked(data, ("cells", "contrasts"), source, "a selective-QA summary")
        refuse_unknown(data, ("cells", "contrasts"), source)
        check_kinds(data, {"cells": dict, "contrasts": list}, source)
        if not all(isinstance(kinds, dict) for kinds in data["cells"].values()):
            raise ConfigError(f"{source}: field 'cells' must map each cell to an object of confidences")
        cells = {CellKey.parse(label, f"{source}: cells"): {kind: ConfidenceMeasures.from_json(m, f"{source}: {label} {kind}")
                                                            for kind, m in kinds.items()} for label, kinds in data["cells"].items()}
        return cls(cells, [AurcContrast.from_json(c, f"{source}: contrast {k}") for k, c in enumerate(data["contrasts"])])
