"""A comparison's results as typed records, and ``report.json``'s format: what ``compare`` writes and reads back.

``report.json`` carries ``format_version``. A report of this version is read as it is; one without it
(written before the field existed: the first form, every report committed before it) is read by
upgrading it in memory (:func:`upgrade_report`); one of a later version is refused, saying what to do.
"""

from __future__ import annotations

from typing import Any

from .. import registry
from ..errors import ConfigError

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
