"""compare's output folder: a new or empty folder, or an earlier comparison's (resumed, runs added); a folder of
other files (a project, the home folder) is refused before any work, as train, export, convert and tune refuse one."""

import json
from pathlib import Path

import pytest

from bio_mrc.cli import main
from bio_mrc.errors import DataFormatError, OutputError
from bio_mrc.harness.compare import compare, run_comparison, train_models
from bio_mrc.harness.config import parse_config

from .conftest import FIXTURES, SAMPLE_V1

MISSING_DATA = {"name": "c", "train": {"path": "missing-train.json"}, "eval": {"path": "missing-eval.json"}, "runs": [{"name": "a"}]}
ENTRY_POINTS = {"compare": compare, "run_comparison": run_comparison, "train_models": train_models}


def folder_of(root: Path, entries: list[str]) -> Path:
    """A folder holding ``entries`` (a name ending in / is a folder, with a file in it)."""
    root.mkdir()
    for entry in entries:
        if entry.endswith("/"):
            (root / entry).mkdir()
            (root / entry / "kept.txt").write_text("the user's", encoding="utf-8")
        else:
            (root / entry).write_text("the user's", encoding="utf-8")
    return root


def listing(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None for p in sorted(folder.rglob("*"))}


FOREIGN = {
    "a file": (["notes.txt"], "notes.txt"),
    "a project": ([".git/", "README.md", "setup.py", "src/", "tests/"], ".git, README.md, setup.py and 2 more"),
    "a project's own models": (["models/", "train.py"], "train.py"),
    "plots of its own": (["calibration.png"], "calibration.png"),
}


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
@pytest.mark.parametrize("case", FOREIGN)
def test_a_folder_of_other_files_is_refused_before_any_work(tmp_path, entry_point, case):
    """compare wrote its models, cells, predictions and report into any folder (., ~, a project's), refusing only a
    file at one of its own names."""
    entries, shown = FOREIGN[case]
    out = folder_of(tmp_path / "out", entries)
    before = listing(out)
    with pytest.raises(OutputError) as refused:  # before the data are read (they do not exist)
        ENTRY_POINTS[entry_point](parse_config(MISSING_DATA), tmp_path, out)
    assert str(refused.value) == (
        f"the folder holds entries no comparison wrote ({shown}) and is no earlier comparison's output folder (one "
        "holding .bio_mrc-comparison.json, or a report's .report-files.json): give output_dir a new or empty folder, "
        f"or an earlier comparison's to resume it or add runs to it (in {out})")
    assert listing(out) == before


TAKEN = {
    "an empty folder": [],
    "an earlier comparison's, with notes of the user's": [".bio_mrc-comparison.json", "models/", "notes.txt"],
    "a comparison's with a report, written before folders were marked": [".report-files.json", "report.md", "notes.txt"],
    "a comparison's own entries alone": ["models/", "cells/", "predictions/", ".sets.lock"],
}


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
@pytest.mark.parametrize("case", TAKEN)
def test_a_new_empty_or_earlier_comparisons_folder_is_taken(tmp_path, entry_point, case):
    out = folder_of(tmp_path / "out", TAKEN[case])
    if (out / ".report-files.json").exists():
        (out / ".report-files.json").write_text(json.dumps({"report.md": None}), encoding="utf-8")
    if (out / "models" / "kept.txt").exists():
        (out / "models" / "kept.txt").unlink()  # a model folder is checked as one when a run trains into it
    with pytest.raises(DataFormatError, match="missing-eval.json"):  # the folder passed: the data are read next
        ENTRY_POINTS[entry_point](parse_config(MISSING_DATA), tmp_path, out)
    with pytest.raises(DataFormatError, match="missing-eval.json"):
        ENTRY_POINTS[entry_point](parse_config(MISSING_DATA), tmp_path, tmp_path / "new")


def test_the_command_refuses_a_folder_of_other_files_in_its_own_words(tmp_path, capsys):
    out = folder_of(tmp_path / "out", ["notes.txt", "src/"])
    config = tmp_path / "c.json"
    config.write_text(json.dumps(MISSING_DATA), encoding="utf-8")
    assert main(["compare", "--config", str(config), "--data-dir", str(tmp_path), "--output-dir", str(out)]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: the folder holds entries no comparison wrote (notes.txt, src) and is no earlier comparison's output folder "
        "(one holding .bio_mrc-comparison.json, or a report's .report-files.json): give --output-dir a new or empty "
        f"folder, or an earlier comparison's to resume it or add runs to it (in {out})")
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "src"]


@pytest.mark.slow  # it trains a model of its own, twice through the command line
def test_the_main_job_runs_twice_in_its_default_folder_and_marks_it(tiny_encoder_dir, tmp_path, monkeypatch, capsys):
    """``bio-mrc compare --config NAME`` writes runs/NAME in the working folder; run again there, it reuses the
    models, with a file of the user's put beside the report left as it is."""
    config = {"name": "tiny", "train": {"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": 0, "seed": 0}},
              "eval": {"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": 1, "seed": 0}},
              "defaults": {"encoder": str(tiny_encoder_dir), "max_seq_length": 48, "doc_stride": 16, "max_query_length": 12,
                           "epochs": 1, "batch_size": 4},
              "runs": [{"name": "joint", "heads": "span+bio"}], "seeds": [1]}
    (tmp_path / "tiny.json").write_text(json.dumps(config), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["compare", "--config", "tiny.json", "--data-dir", str(FIXTURES)]) == 0, capsys.readouterr().err
    out = tmp_path / "runs" / "tiny"
    assert json.loads((out / ".bio_mrc-comparison.json").read_text(encoding="utf-8")) == {"written_by": "bio-mrc compare"}
    (out / "notes.txt").write_text("the user's", encoding="utf-8")
    models = sorted(p.name for p in (out / "models").iterdir())
    assert main(["compare", "--config", "tiny.json", "--data-dir", str(FIXTURES)]) == 0, capsys.readouterr().err
    assert sorted(p.name for p in (out / "models").iterdir()) == models
    assert (out / "notes.txt").read_text(encoding="utf-8") == "the user's"
    assert json.loads((out / "report.json").read_text(encoding="utf-8"))["cells"][0]["reused_model"] is True
