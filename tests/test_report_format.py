"""``report.json``'s format: typed cells and results, ``format_version``, and the first form (every report
committed before the field existed) read back by upgrading it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bio_mrc.errors import ConfigError
from bio_mrc.harness.earlier_report import read_report
from bio_mrc.harness.results import REPORT_FORMAT, Cell, ComparisonResults, upgrade_report

REPORT_FILES = sorted((Path(__file__).parents[1] / "benchmarks" / "reports").glob("*/report.json*"))


@pytest.mark.parametrize("path", REPORT_FILES, ids=lambda path: path.parent.name)
def test_every_committed_report_reads_as_typed_cells_that_write_back_the_same(path):
    report = read_report(path)
    assert report["format_version"] == REPORT_FORMAT and report["eval"]["task"] in ("squad-v1.1", "squad-v2.0", "multispanqa")
    for cell in report["cells"]:
        typed = Cell.from_json(cell, str(path))
        assert typed.to_json() == {key: value for key, value in cell.items() if value is not None}
        assert typed["run"] == cell["run"] and ("f1" in typed) == (cell.get("f1") is not None)


def test_the_first_form_names_its_task_by_metric_and_version():
    first = {"config": {}, "cells": [], "eval_ids": []}
    assert upgrade_report({**first, "eval": {"version": "2.0", "metric": "squad"}}, "r")["eval"] == {"task": "squad-v2.0"}
    assert upgrade_report({**first, "eval": {"version": "1.1", "metric": "squad"}}, "r")["eval"] == {"task": "squad-v1.1"}
    assert upgrade_report({**first, "eval": {"version": "multispan", "metric": "multispan"}}, "r")["eval"] == {"task": "multispanqa"}


def test_a_report_of_a_later_format_is_refused_saying_what_to_do(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"format_version": REPORT_FORMAT + 1, "config": {}, "eval": {}, "eval_ids": [], "cells": []}))
    with pytest.raises(ConfigError, match=rf"report format {REPORT_FORMAT + 1}.*upgrade bio_mrc"):
        read_report(path)


def test_a_cell_with_an_unknown_field_is_refused_where_it_is_made():
    with pytest.raises(ConfigError, match=r"unknown cell fields \['f2'\]"):
        Cell.from_json({"run": "r", "decoding": "span", "seed": 1, "model_dir": "m", "answers": [], "decode_seconds": 0.0, "f2": []})


def test_results_read_like_their_json_and_write_report_json_with_its_version():
    cell = Cell("joint", "span", 42, "/m", ["a", "b"], 0.1, em=np.array([100.0, 0.0]), f1=np.array([100.0, 50.0]))
    assert "calibration" not in cell and cell.get("threshold", "none") == "none" and cell["f1"].mean() == 75.0
    results = ComparisonResults({"name": "c"}, "0.1.0", "today", {"task": "squad-v1.1"}, [], [cell])
    written = results.report_json({"rows": []})
    assert written["format_version"] == REPORT_FORMAT and written["cells"][0]["f1"] == [100.0, 50.0]
    assert "browser" not in written and "eval_examples" not in written and written["eval_ids"] == []


def test_every_report_section_has_one_form_and_a_new_one_is_one_function_in_the_list(monkeypatch):
    import inspect

    from bio_mrc.harness import report

    assert all(list(inspect.signature(section).parameters) == ["results", "summary", "plots"] for section in report.SECTIONS)
    committed = read_report(next(path for path in REPORT_FILES if path.parent.name == "quick"))

    def notes_section(results, summary, plots):
        return ["", "## Notes", "", f"{len(summary['rows'])} cells."]

    monkeypatch.setattr(report, "SECTIONS", (*report.SECTIONS[:-1], notes_section, report.SECTIONS[-1]))
    markdown = report.render_markdown(committed, committed["summary"], {})
    assert f"## Notes\n\n{len(committed['summary']['rows'])} cells.\n\n## Configuration" in markdown
