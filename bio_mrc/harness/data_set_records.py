"""One data set of a multi-set evaluation as typed records: each cell's :class:`DataSetRow` (its metrics per seed,
empty share, spans per question, and :class:`SingleSpanScores`) and the data set's :class:`DataSetSummary`
(its rows and its own statistics), with their JSON form, ``report.json``'s ``summary.data_sets``."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .cell_key import CellKey, OfOneCell
from .record_json import check_kinds, checked, per_seed_scores, plain_record, refuse_unknown
from .statistics_records import STATISTICS_KINDS, Statistics

_ROW_FIELDS = ("empty_share", "spans_per_question", "single_span")


@dataclass(frozen=True)
class SingleSpanScores:
    """SQuAD v1.1's EM and F1 of the spans given, joined, on the data set's questions whose gold is one span."""

    questions: int
    em: float
    f1: float


@dataclass(frozen=True)
class DataSetRow(OfOneCell):
    """A cell on one data set: its metrics per seed (``scores``: MultiSpanQA's six), and its first seed's share of
    questions left without a span, spans per question and single-span scores (None without the questions at hand)."""

    cell: CellKey
    scores: dict[str, list[float]]
    empty_share: float
    spans_per_question: float
    single_span: SingleSpanScores | None = None

    def to_json(self) -> dict[str, Any]:
        row = {"cell": str(self.cell), **self.scores, "empty_share": self.empty_share, "spans_per_question": self.spans_per_question}
        return row | ({"single_span": asdict(self.single_span)} if self.single_span else {})

    @classmethod
    def from_json(cls, data: Any, source: str) -> "DataSetRow":
        data = checked(data, ("cell", "empty_share", "spans_per_question"), source, "a data set's row")
        scores = per_seed_scores(data, ("cell", *_ROW_FIELDS), source)
        single = data.get("single_span")
        return cls(CellKey.parse(data["cell"], source), scores, data["empty_share"], data["spans_per_question"],
                   None if single is None else plain_record(SingleSpanScores, single, f"{source}: single_span", "single-span scores"))


@dataclass(frozen=True, kw_only=True)
class DataSetSummary(Statistics):
    """One data set of the evaluation alone: its description, task and number of questions, a row per cell, and
    the statistics (:class:`~.statistics_records.Statistics`) of its questions."""

    description: str
    task: str
    questions: int
    rows: list[DataSetRow]

    def to_json(self) -> dict[str, Any]:
        return {"description": self.description, "task": self.task, "questions": self.questions,
                "rows": [row.to_json() for row in self.rows], **self.statistics_json()}

    @classmethod
    def from_json(cls, data: Any, source: str) -> "DataSetSummary":
        names = ("description", "task", "questions", "rows")
        data = checked(data, names + tuple(STATISTICS_KINDS), source, "a data set's summary")
        check_kinds(data, {"rows": list}, source)
        refuse_unknown(data, names + tuple(STATISTICS_KINDS), source)
        rows = [DataSetRow.from_json(row, f"{source}: row {k}") for k, row in enumerate(data["rows"])]
        return cls(description=data["description"], task=data["task"], questions=data["questions"], rows=rows,
                   **Statistics.fields_from_json(data, source))
