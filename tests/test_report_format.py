"""``report.json``'s format: typed cells and results, ``format_version``, and the first form (every report
committed before the field existed) read back by upgrading it."""

from __future__ import annotations

import copy
import functools
import json
import lzma
import math
from pathlib import Path

import numpy as np
import pytest

from bio_mrc.errors import ConfigError
from bio_mrc.harness.earlier_report import read_report
from bio_mrc.harness.results import REPORT_FORMAT, Cell, ComparisonResults, upgrade_report
from bio_mrc.harness.saved_report import SavedReport
from bio_mrc.harness.learning_curve_records import LearningCurve
from bio_mrc.harness.summary_records import CellKey, Summary

REPORT_FILES = sorted((Path(__file__).parents[1] / "benchmarks" / "reports").glob("*/report.json*"))


# The committed reports several tests of this module read: each read once (as stored and as typed) and shared. A test
# that changes one changes its own deep copy; the others only read it. That every committed report reads as typed
# records that write back the same is tested by tests/test_committed_reports.py, which reads each once for all its tests.
SHARED_REPORTS = ("gpu-multispan-reader", "multispan-reader-cpu-reduced", "quick", "v2-from-reader")


def _stored_json(path: Path) -> dict:
    with (lzma.open if path.suffix == ".xz" else open)(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def _report_file(name: str) -> Path:
    assert name in SHARED_REPORTS, f"{name} is read once a module only as one of SHARED_REPORTS"
    return next(path for path in REPORT_FILES if path.parent.name == name)


@functools.cache
def _stored(name: str) -> dict:
    """The committed report ``name``'s JSON as stored, read once: not to be changed (``copy.deepcopy`` it first)."""
    return _stored_json(_report_file(name))


@functools.cache
def _committed(name: str) -> SavedReport:
    """The committed report ``name`` as ``read_report`` types it, read once: not to be changed (``copy.deepcopy`` it first)."""
    return read_report(_report_file(name))


def test_a_cell_key_is_its_run_and_decoding_and_reads_back_from_its_label():
    key = CellKey("joint-10k/v2", "bio")  # a run's name may hold a slash; a decoding's does not
    assert str(key) == "joint-10k/v2/bio" and CellKey.parse(str(key)) == key
    assert Cell("joint", "span", 1, "m", [], 0.0).key == CellKey("joint", "span")
    for label in ("joint", "/span", "joint/", 3):
        with pytest.raises(ConfigError, match="is not a cell label of the form run/decoding"):
            CellKey.parse(label, "report.json: intervals")


def test_a_hand_edited_summary_is_refused_naming_the_file_and_the_field(tmp_path):
    stored = _stored("quick")  # each edit a new mapping: the stored one unchanged
    broken = {**stored, "summary": {**stored["summary"], "contrasts": [{"a": "joint/span"}]}}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(broken))
    with pytest.raises(ConfigError, match=r"report.json': summary: contrast 0 is not a paired difference: it lacks \['b', "):
        read_report(path)
    path.write_text(json.dumps({**stored, "summary": {**stored["summary"], "baseline": {"cell": "nobody"}}}))
    with pytest.raises(ConfigError, match='summary: baseline: "nobody" is not a cell label'):
        read_report(path)
    row = {key: value for key, value in stored["summary"]["rows"][1].items() if key != "decode_seconds"}
    path.write_text(json.dumps({**stored, "summary": {**stored["summary"], "rows": [stored["summary"]["rows"][0], row]}}))
    with pytest.raises(ConfigError, match=r"summary: row 1 is not a summary row: it lacks \['decode_seconds'\]"):
        read_report(path)
    path.write_text(json.dumps({**stored, "summary": {**stored["summary"], "intervals": []}}))
    with pytest.raises(ConfigError, match="summary: field 'intervals' must be an object, got list"):
        read_report(path)


def _stored_summary(name: str) -> dict:
    return _stored(name)["summary"]  # read only: _edited changes a deep copy


def _edited(summary: dict, path: tuple, value) -> dict:
    """A deep copy of ``summary`` with the value at ``path`` (keys and indices) replaced, or removed given ``...``."""
    edited = json.loads(json.dumps(summary))
    *parents, last = path
    target = edited
    for key in parents:
        target = target[key]
    if value is ...:
        del target[last]
    else:
        target[last] = value
    return edited


@pytest.mark.parametrize("name, path, value, message", [
    ("v2-from-reader", ("selective", "cells", "joint/span", "raw", "aurc"), ...,
     r"summary: selective: joint/span raw is not a confidence's measures: it lacks \['aurc'\]"),
    ("v2-from-reader", ("selective", "contrasts", 0, "a"), "joint", 'summary: selective: contrast 0: "joint" is not a cell label'),
    ("v2-from-reader", ("selective", "cells", "joint/span", "raw", "curve"), [0.5], r"curve is not a risk–coverage curve \(a JSON object\)"),
    ("v2-from-reader", ("always_abstain", "cells", "joint/bio", "diff"), ...,
     r"summary: always_abstain: joint/bio is not a paired bootstrap: it lacks \['diff'\]"),
    ("v2-from-reader", ("always_abstain", "cells"), [], "summary: always_abstain: field 'cells' must be an object, got list"),
    ("multispan-reader-cpu-reduced", ("data_sets", 1, "rows", 0, "single_span", "f1"), ...,
     r"summary: data set 1: row 0: single_span is not single-span scores: it lacks \['f1'\]"),
    ("multispan-reader-cpu-reduced", ("data_sets", 0, "rows", 0, "em_f1"), 17.6, 'summary: data set 0: row 0: score "em_f1" must be a list'),
    ("multispan-reader-cpu-reduced", ("data_sets", 0, "baseline"), "reader/bio", "summary: data set 0: field 'baseline' must be an object"),
    ("multispan-reader-cpu-reduced", ("data_sets",), {}, "summary: field 'data_sets' must be a list, got dict"),
    ("v2-from-reader", ("breakdowns", "by type"), {"x": {}}, 'summary: breakdown "by type": "x" is not a cell label'),
])
def test_a_hand_edited_part_of_the_summary_is_refused_naming_the_field(name, path, value, message):
    with pytest.raises(ConfigError, match=message):
        Summary.from_json(_edited(_stored_summary(name), path, value), "report.json: summary")


def test_a_hand_edited_learning_curve_is_refused_naming_the_field():
    curve = {"points": [{"run": "joint-3k", "decoding": "span", "heads": "span+bio", "train_questions": 3000, "seeds": [42], "f1": 50.0,
                         "f1_sd": None, "ci_low": 49.0, "ci_high": 51.0}], "curves": {}, "gaps": [], "gap_trend": None}
    assert LearningCurve.from_json(curve).to_json() == curve
    assert LearningCurve.from_json({**curve, "statistic": "EM F1"}).to_json() == {**curve, "statistic": "EM F1"}
    for path, value, message in [
        (("statistic",), 3, "field 'statistic' must be a string, got int"),
        (("points", 0, "run"), 3, "learning curve: point 0: field 'run' must be a string, got 3"),
        (("points", 0, "f1"), ..., r"point 0 is not a point of the learning curve: it lacks \['f1'\]"),
        (("points", 0, "f2"), 1.0, r'point 0: unknown fields \["f2"\]'),
        (("gaps",), [{"run": "r"}], r"gap 0 is not a gap: it lacks \['train_questions', "),
        (("gap_trend",), {"slope": 1.0}, r"gap_trend is not the gap's trend: it lacks \['last_step'\]"),
        (("curves",), {"span": 3}, "field 'curves' must map each curve's name to a list of points"),
        (("gaps",), {}, "field 'gaps' must be a list, got dict"),
        (("curves",), {"span": [3]}, 'learning curve: curve "span" is not a point'),
    ]:
        with pytest.raises(ConfigError, match=message):
            LearningCurve.from_json(_edited(curve, path, value), "report.json: summary: learning curve")


def test_the_console_table_is_built_from_the_rows_not_cut_from_the_markdown(monkeypatch):
    from bio_mrc.harness import report

    committed = _committed("v2-from-reader")
    markdown = report.render_markdown(committed.results, committed.summary, {})
    table = report.console_table(committed.results, committed.summary)
    assert table.startswith("## Scores\n\n| run | decoding | EM | F1 |") and table in markdown
    assert len(table.splitlines()) == 4 + len(committed.summary.rows)  # heading, blank, header, rule, a line per row
    monkeypatch.setattr(report, "SECTIONS", ())  # no Markdown at all: the table stands
    assert report.console_table(committed.results, committed.summary) == table


def test_the_first_form_names_its_task_by_metric_and_version():
    first = {"config": {}, "cells": [], "eval_ids": []}
    assert upgrade_report({**first, "eval": {"version": "2.0", "metric": "squad"}}, "r")["eval"] == {"task": "squad-v2.0"}
    assert upgrade_report({**first, "eval": {"version": "1.1", "metric": "squad"}}, "r")["eval"] == {"task": "squad-v1.1"}
    assert upgrade_report({**first, "eval": {"version": "multispan", "metric": "multispan"}}, "r")["eval"] == {"task": "multispanqa"}


def test_a_first_form_report_written_before_rows_counted_their_training_questions_reads_them_as_unknown(tmp_path):
    stored = copy.deepcopy(_stored("v2-from-reader"))
    assert "format_version" not in stored  # the first form
    for row in stored["summary"]["rows"]:
        del row["train_questions"]
    path = tmp_path / "report.json"
    path.write_text(json.dumps(stored), encoding="utf-8")
    read = read_report(path)
    assert [row.train_questions for row in read.summary.rows] == [None] * len(stored["summary"]["rows"])
    committed = _committed("v2-from-reader")
    assert [cell.to_json() for cell in read.results.cells] == [cell.to_json() for cell in committed.results.cells]


def test_a_first_form_report_written_before_its_summary_kept_paired_statistics_is_refused_saying_what_to_do(tmp_path):
    stored = copy.deepcopy(_stored("v2-from-reader"))
    assert "format_version" not in stored  # the first form
    for key in ("baseline", "resampling", "contrasts", "intervals"):  # as a report of then: its pairs alone
        del stored["summary"][key]
    path = tmp_path / "report.json"
    path.write_text(json.dumps(stored), encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        read_report(path)
    message = str(refused.value)
    assert "\n" not in message and str(path) in message
    assert "summary is not a comparison summary: it lacks ['baseline', 'resampling', 'contrasts', 'intervals']" in message
    assert message.endswith("run the comparison again without cells_from")  # --cells-from on the command line


def test_a_report_of_a_later_format_is_refused_saying_what_to_do(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"format_version": REPORT_FORMAT + 1, "config": {}, "eval": {}, "eval_ids": [], "cells": []}))
    with pytest.raises(ConfigError, match=rf"report format {REPORT_FORMAT + 1}.*upgrade bio_mrc"):
        read_report(path)
    path.write_text(json.dumps({"format_version": True, "config": {}, "eval": {}, "eval_ids": [], "cells": []}))
    with pytest.raises(ConfigError, match="report format true, but this bio_mrc reads formats 1 to"):
        read_report(path)


def test_a_cell_with_an_unknown_or_a_missing_field_is_refused_where_it_is_made():
    cell = {"run": "r", "decoding": "span", "seed": 1, "model_dir": "m", "answers": [], "decode_seconds": 0.0}
    with pytest.raises(ConfigError, match=r'unknown cell fields \["f2"\]'):
        Cell.from_json({**cell, "f2": []})
    with pytest.raises(ConfigError, match=r"cell 3 is not a comparison cell: it lacks \['model_dir', 'seed'\]"):
        Cell.from_json({key: value for key, value in cell.items() if key not in ("seed", "model_dir")}, "cell 3")
    with pytest.raises(ConfigError, match=r"report.json: cell 0 is not a comparison cell \(a JSON object\), but list"):
        ComparisonResults.coerce({"config": {}, "package_version": "0", "date": "d", "eval": {}, "eval_examples": [], "cells": [[]]},
                                 "report.json")


def test_results_are_read_by_attribute_and_write_report_json_with_its_version():
    cell = Cell("joint", "span", 42, "/m", ["a", "b"], 0.1, em=[100.0, 0.0], f1=np.array([100.0, 50.0]))
    assert cell.calibration is None and cell.threshold is None and cell.label == "joint/span"
    assert isinstance(cell.em, np.ndarray) and cell.f1.mean() == 75.0  # per-question scores are arrays however made
    assert cell.to_json() == {"run": "joint", "decoding": "span", "seed": 42, "model_dir": "/m", "answers": ["a", "b"],
                              "decode_seconds": 0.1, "em": [100.0, 0.0], "f1": [100.0, 50.0]}  # unset fields left out
    results = ComparisonResults({"name": "c"}, "0.1.0", "today", {"task": "squad-v1.1"}, [], [cell])
    mapping = {"config": {"name": "c"}, "package_version": "0.1.0", "date": "today", "eval": {"task": "squad-v1.1"},
               "eval_examples": [], "cells": [cell.to_json()]}  # as a caller of write_report may hand them
    typed = ComparisonResults.coerce(mapping)
    assert isinstance(typed.cells[0].f1, np.ndarray) and typed.cells[0].to_json() == cell.to_json()
    assert ComparisonResults.coerce(results) is results
    summary = Summary(rows=[], baseline=CellKey("joint", "span"), baseline_named_in_config=False, resampling="questions",
                      contrasts=[], comparisons=[], intervals={})
    written = results.report_json(summary)
    assert written["format_version"] == REPORT_FORMAT and written["cells"][0]["f1"] == [100.0, 50.0]
    assert "browser" not in written and "eval_examples" not in written and written["eval_ids"] == []
    assert "tune" not in written and written["run_train"] == {}
    again = SavedReport.from_json({**written, "eval_ids": ["q1", "q2"]}, "report.json")
    assert again.results.cells[0].to_json() == cell.to_json() and again.eval_ids == ["q1", "q2"] and again.summary == summary
    assert again.to_json() == {**written, "eval_ids": ["q1", "q2"]}


def test_every_report_section_has_one_form_and_a_new_one_is_one_function_in_the_list(monkeypatch):
    import inspect

    from bio_mrc.harness import report

    assert all(list(inspect.signature(section).parameters) == ["results", "summary", "plots"] for section in report.SECTIONS)
    committed = _committed("quick")

    def notes_section(results, summary, plots):
        return ["", "## Notes", "", f"{len(summary.rows)} cells."]

    monkeypatch.setattr(report, "SECTIONS", (*report.SECTIONS[:-1], notes_section, report.SECTIONS[-1]))
    markdown = report.render_markdown(committed.results, committed.summary, {})
    assert f"## Notes\n\n{len(committed.summary.rows)} cells.\n\n## Configuration" in markdown


def test_a_cell_keeps_its_confidences_to_seven_significant_digits_however_it_was_made():
    from bio_mrc.harness.results import Cell

    raw = [0.123456789012, 1 / 3e12, 1.0, 0.99999996]
    cell = Cell("joint", "span", 42, "m", ["a"] * 4, 0.1, selective={"right": [1, 0, 1, 1], "confidence": {"raw": raw}})
    assert cell.selective["confidence"]["raw"] == [0.1234568, 3.333333e-13, 1.0, 1.0]  # 0.99999996 ties with 1 now
    assert cell.selective["right"] == [1, 0, 1, 1]
    again = Cell.from_json(json.loads(json.dumps(cell.to_json())))
    assert again.selective == cell.selective and again.to_json() == cell.to_json()  # idempotent: a report reads back the same


def test_confidences_are_rounded_at_once_to_the_digits_pythons_format_gives():
    """Rounding each confidence through a string was a third of reading a large report; float arithmetic gives the
    same numbers at once, and leaves to the string only what it may get wrong (ties, zeros, NaN, far exponents)."""
    from bio_mrc.harness.results import _rounded_at_once, stored_confidences

    below_one = float(np.nextafter(1.0, 0.0))
    written = [0.123456789012, 0.99999996, below_one, 9.9999996, 1234567.5, 1234568.5, 12345678.9, 1e-20, -2.5e-7, 0.0, -0.0,
               math.inf]
    assert stored_confidences(written) == [0.1234568, 1.0, 1.0, 10.0, 1234568.0, 1234568.0, 12345680.0, 1e-20, -2.5e-7, 0.0, 0.0,
                                           math.inf]  # the ties 1234567.5 and 1234568.5 round to the even digit
    assert math.copysign(1, stored_confidences([-0.0])[0]) == -1 and math.isnan(stored_confidences([math.nan])[0])
    assert _rounded_at_once(np.array([0.123456789012, 0.99999996, below_one]))[1].tolist() == [False] * 3  # no string
    assert _rounded_at_once(np.array([1234567.5, 12345678.9, 1e-20, 0.0, math.nan]))[1].tolist() == [True] * 5
    rng = np.random.default_rng(0)
    digits = rng.integers(10**6, 10**7, 2_000)
    ties = np.concatenate([(digits + 0.5) / 10.0**k for k in range(0, 23, 2)])  # next to a digit tie at every scale
    values = np.concatenate([rng.random(20_000), 10.0 ** rng.uniform(-17, 7, 20_000), ties, np.nextafter(ties, 0.0),
                             np.nextafter(ties, 1e9), 10.0 ** np.arange(-16, 7), np.nextafter(10.0 ** np.arange(-16, 7), 0.0)])
    assert stored_confidences(values) == [float(f"{value:.7g}") for value in values.tolist()]


@pytest.mark.parametrize("confidence", [{"raw": [[0.5]]}, {"raw": None}, {"raw": ["high"]}, {"raw": [True]}, [0.5], "raw"])
def test_a_hand_edited_cells_confidences_are_refused_naming_the_field(tmp_path, confidence):
    """Confidences that were no flat list of numbers (a list of lists, null, words) ended reading the report in a
    TypeError, ValueError or AttributeError traceback; true was read as 1."""
    stored = copy.deepcopy(_stored("quick"))  # a cell's confidences changed below
    number = next(k for k, cell in enumerate(stored["cells"]) if (cell.get("selective") or {}).get("confidence"))
    stored["cells"][number]["selective"]["confidence"] = confidence
    path = tmp_path / "report.json"
    path.write_text(json.dumps(stored))
    with pytest.raises(ConfigError, match=rf"^cells_from='{path}': cell {number}: field 'selective' must be an object whose "
                                          r'confidences are lists of numbers, got \{"confidence": '):
        read_report(path)


# transformers' form of non-finite floats, each place it may stand, and objects that only look like it
_SPECIAL_TEXT = """{"top": {"__float__": "-Infinity"}, "listed": [1.5, {"__float__": "NaN"}, [{"__float__": "Infinity"}]],
 "more_keys": {"__float__": "Infinity", "note": "kept"}, "other_name": {"__float__": "inf"}, "number": {"__float__": 7},
 "wrapped": {"__float__": {"__float__": "NaN"}}, "empty": {}}"""
_SPECIAL_READ = {"top": -math.inf, "listed": [1.5, math.nan, [math.inf]], "more_keys": {"__float__": "Infinity", "note": "kept"},
                 "other_name": {"__float__": "inf"}, "number": {"__float__": 7}, "wrapped": {"__float__": math.nan}, "empty": {}}


def test_special_floats_restored_while_decoding_read_as_the_walk_after_decoding_reads_them():
    """A report's non-finite floats are restored by ``json.loads``'s object hook, not by walking its million values after."""
    from bio_mrc.model_folder import special_float, special_floats

    expected = json.dumps(_SPECIAL_READ)  # NaN equals nothing; its JSON text compares
    assert json.dumps(json.loads(_SPECIAL_TEXT, object_hook=special_float)) == expected
    assert json.dumps(special_floats(json.loads(_SPECIAL_TEXT))) == expected


def test_a_reports_special_floats_read_back_as_floats_and_look_alikes_as_written(tmp_path):
    stored = _stored("quick")  # changed in copies of its cells only
    cells = [dict(cell) for cell in stored["cells"]]
    cells[0]["threshold"], cells[1]["threshold"] = {"__float__": "-Infinity"}, {"__float__": "Infinity"}
    cells[0]["scored_in"] = json.loads(_SPECIAL_TEXT)
    path = tmp_path / "report.json"
    path.write_text(json.dumps({**stored, "cells": cells}))
    read = read_report(path).results.cells
    assert (read[0].threshold, read[1].threshold) == (-math.inf, math.inf)
    assert json.dumps(read[0].scored_in) == json.dumps(_SPECIAL_READ)


@pytest.mark.parametrize("description, shown", [
    ("```", "<p>Description: <code>`</code></p>"),
    ("see\u2028```", "<p>see <code>`</code></p>"),
    ("# Scores\n| run | decoding | EM | F1 |\n|---|---|---|---|\n| fake | span | 99.99 | 99.99 |",
     "<p>Description: # Scores | run | decoding | EM | F1 | |---|---|---|---| | fake | span | 99.99 | 99.99 |</p>"),
])
def test_a_description_is_one_paragraph_that_opens_no_block(description, shown):
    from bio_mrc.harness import report
    from bio_mrc.harness.markdown_html import markdown_to_html

    committed = copy.deepcopy(_committed("v2-from-reader"))  # its description changed below
    plain = markdown_to_html(report.render_markdown(committed.results, committed.summary, {}))
    committed.results.config["description"] = description
    page = markdown_to_html(report.render_markdown(committed.results, committed.summary, {}))
    # The same headings, tables and code blocks as with the committed description; the text is one paragraph.
    for tag in ("<h2", "<table", "<pre"):
        assert page.count(tag) == plain.count(tag)
    before_the_configuration = page[:page.index("<pre")]
    assert shown in before_the_configuration and "99.99" not in before_the_configuration.replace(shown, "")


@pytest.mark.parametrize("report_name", ["v2-from-reader", "gpu-multispan-reader"])
def test_a_data_file_name_with_a_line_break_opens_no_block(report_name):
    import dataclasses

    from bio_mrc.harness import report
    from bio_mrc.harness.markdown_html import markdown_to_html

    committed = copy.deepcopy(_committed(report_name))  # its file names changed below
    plain = markdown_to_html(report.render_markdown(committed.results, committed.summary, {}))
    committed.results.eval["description"] = "dev\n```\n.json"  # a file name may hold line breaks
    committed.results.cells_from = {"path": "earlier\n```\n/report.json", "date": "2026-01-01\n# Scores", "package_version": "0.1.0",
                                    "code": None, "models": [{"run": "reader", "seed": 1}]}  # a report.json from elsewhere
    parts = committed.summary.data_sets or []
    assert bool(parts) == (report_name == "gpu-multispan-reader")  # the reader's report has its data sets' sections
    parts[:1] = [dataclasses.replace(part, description="part\u2028# Scores\n```") for part in parts[:1]]
    markdown = report.render_markdown(committed.results, committed.summary, {})
    page = markdown_to_html(markdown)
    for tag in ("<h2", "<h3", "<table", "<pre"):  # before: the fence took in every section after the evaluation's line
        assert page.count(tag) == plain.count(tag), tag
    assert "- Evaluation: dev\\\\n\\`\\`\\`\\\\n.json: " in markdown  # each line break as Python writes it, not a space
    # the path fenced by more backticks than it holds: one backtick ended its code span at the first of its own
    assert "````earlier\\n```\\n/report.json```` (`--cells-from`; its comparison of 2026-01-01\\\\n# Scores," in markdown
    assert not parts or "### part\\\\u2028# Scores\\\\n\\`\\`\\` (" in markdown


def test_a_data_file_name_with_markup_or_terminal_controls_shows_as_its_characters():
    from bio_mrc.harness import report
    from bio_mrc.harness.markdown_html import markdown_to_html

    committed = copy.deepcopy(_committed("v2-from-reader"))  # its file names changed below
    committed.results.eval["description"] = "d\x1b[2J<img src=x onerror=alert(1)>[x](javascript:alert(1))*a*.json"
    committed.results.config["description"] = "about\x1b]0;title\x07 this"
    markdown = report.render_markdown(committed.results, committed.summary, {})
    # report.md: no raw control character, and every character that starts HTML, a link or emphasis after a backslash
    assert "\x1b" not in markdown and "\x07" not in markdown and "about\\x1b]0;title\\x07 this" in markdown
    assert "- Evaluation: d\\\\x1b\\[2J\\<img src=x onerror=alert(1)\\>\\[x\\](javascript:alert(1))\\*a\\*.json: " in markdown
    # report.html reads the backslashes back: the name's own characters, escaped, no tag, link or emphasis
    page = markdown_to_html(markdown)
    assert "<li>Evaluation: d\\x1b[2J&lt;img src=x onerror=alert(1)&gt;[x](javascript:alert(1))*a*.json: " in page
    assert "<img" not in page and "<a " not in page and "<em>a" not in page


def test_a_heading_with_a_long_run_of_spaces_is_read_in_one_pass():
    # A data file's name shows in a heading of report.md; the heading's text was a lazy group before "\s*#*\s*$",
    # which tried every split of a run of spaces at each of its characters (2,000 spaces: 10 s; 5,000: minutes).
    from bio_mrc.harness.markdown_html import markdown_to_html

    name = "part" + " " * 5_000 + "two.json"
    assert markdown_to_html(f"### {name} (3 questions)") == f'<h3 id="part{"-" * 5_000}twojson-3-questions">{name} (3 questions)</h3>'
    assert markdown_to_html("## Scores ## \t") == '<h2 id="scores">Scores</h2>'  # closing #s and white space left out
    assert markdown_to_html("# #") == '<h1 id=""></h1>' and markdown_to_html("####### x") == "<p>####### x</p>"
