"""Printed counts agree with their nouns (bio_mrc.plurals): "1 question", "2 questions", "1 tensor does", "2 tensors do"."""

import json
from types import SimpleNamespace

import numpy as np
import pytest

from bio_mrc.errors import ModelFormatError
from bio_mrc.harness.config import DataSpec
from bio_mrc.harness.groups import breakdown
from bio_mrc.metrics.squad_official import squad_metrics
from bio_mrc.model_folder import check_floating_weights, check_weights_fit, safetensors_shapes

from .test_harness_report import synthetic_results, write


def test_one_missing_prediction_of_one_question_is_singular():
    with pytest.raises(ValueError, match=r"^1 of 1 question has no prediction: 'a'$"):
        squad_metrics({"a": ["x"]}, {}, "2.0")
    with pytest.raises(ValueError, match=r"^2 of 2 questions have no prediction: 'a', 'b'$"):
        squad_metrics({"a": ["x"], "b": []}, {}, "2.0")


def _refusal(check, *args) -> str:
    with pytest.raises(ModelFormatError) as refused:
        check(*args)
    return str(refused.value)


def test_one_tensor_is_named_in_the_singular(tmp_path):
    expected = {"a": (2, 2), "b": (3,)}
    assert "model.safetensors: 1 tensor does not have the shapes config.json implies (e.g. a: [2, 3]" in \
        _refusal(check_weights_fit, tmp_path, {"a": (2, 3), "b": (3,)}, expected)
    assert "model.safetensors: 2 tensors do not have the shapes" in _refusal(check_weights_fit, tmp_path, {"a": (2, 3), "b": (4,)}, expected)
    assert "model.safetensors: lacks 1 tensor the config implies (b)" in _refusal(check_weights_fit, tmp_path, {"a": (2, 2)}, expected)
    integers = SimpleNamespace(dtype="I32")
    floats = {"a": SimpleNamespace(dtype="F32"), "b": SimpleNamespace(dtype="F32")}
    assert "model.safetensors: 1 tensor holds I32 values where the model" in \
        _refusal(check_floating_weights, tmp_path, {"a": integers, "b": floats["b"]}, floats)
    assert "model.safetensors: 2 tensors hold I32 values" in _refusal(check_floating_weights, tmp_path, {"a": integers, "b": integers}, floats)


def test_a_safetensors_file_of_one_byte_says_one_byte(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"\0")
    assert "model.safetensors: not a safetensors file, or cut short (1 byte) (in" in _refusal(safetensors_shapes, tmp_path, "model.safetensors")


def test_a_header_naming_one_byte_of_tensors_says_one_byte(tmp_path):
    header = json.dumps({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}).encode()
    (tmp_path / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + b"\0\0")
    assert "model.safetensors: longer than its tensors: the header names 1 byte of tensors, the file holds 2 (in" in \
        _refusal(safetensors_shapes, tmp_path, "model.safetensors")


def test_a_limited_file_is_named_by_its_first_questions_where_the_limit_cut_it():
    from bio_mrc.arguments import first_questions

    assert first_questions("d.json", 4, 4) == "d.json (first 4 questions)"
    assert first_questions("d.json", 1, 1) == "d.json (first 1 question)"
    assert first_questions("d.json", 9, 8) == "d.json"  # a limit past the file's questions takes them all
    assert first_questions("d.json", None, 8) == "d.json"


def test_comparison_data_counts_are_singular_for_one():
    assert DataSpec("d.json", limit=1).describe() == "d.json (first 1 question)"
    assert DataSpec("d.json", limit=2).describe() == "d.json (first 2 questions)"
    with pytest.raises(ValueError, match=r"has 1 value for 2 groups$"):
        breakdown({"f1": np.array([1.0])}, np.array(["a", "b"]))


def test_a_learning_curves_residual_check_counts_its_degrees_of_freedom():
    from bio_mrc.harness.learning_curve import _describe_fit

    def fit(dof):
        return SimpleNamespace(lack_of_fit_p=0.5, residual_chi2=1.0, residual_dof=dof)

    assert " on 1 degree of freedom, p = 0.5" in _describe_fit(fit(1), "F1", "this verdict")
    assert " on 0 degrees of freedom" in _describe_fit(fit(0), "F1", "this verdict")


def test_the_report_counts_one_question_one_contrast_and_one_pair_of_cells_in_the_singular(tmp_path):
    results = synthetic_results(runs=("span-only", "bio-only"))
    results.train["questions"] = 1
    results.tune = {"description": "u", "questions": 1, "question_hash": "h"}
    _, report, _ = write(results, tmp_path)
    assert "- Train: t: 1 question (ids hash `h`)" in report and "- Tuned on u: 1 question (" in report
    assert "The p-values are adjusted for this one contrast with Holm's" in report
    assert "The one pair of cells, unadjusted, is in `report.json` (`summary.comparisons`)." in report
    assert "- Evaluation: e: 200 questions, " in report


def test_a_data_set_of_one_question_and_a_cell_that_misses_one_evaluation_question_are_singular():
    from bio_mrc.errors import ConfigError
    from bio_mrc.harness.data_sets import data_set_lines
    from bio_mrc.harness.earlier_report import _check_cell

    part = SimpleNamespace(description="one.json", task="squad-v1.1", questions=1, rows=[], contrasts=[])
    assert "### one.json (1 question)" in data_set_lines([part], "over questions")
    cell = synthetic_results(n=2).cells[0]
    with pytest.raises(ConfigError, match=r"does not score the 1 evaluation question \("):
        _check_cell("r.json", 0, cell, 1)
