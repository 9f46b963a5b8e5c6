"""The comparison harness end to end on the tiny encoder."""

import json

import numpy as np
import pytest

from bio_mrc.harness.compare import compare, resolve_split
from bio_mrc.harness.config import DataSpec, load_config, parse_config

from .conftest import FIXTURES, SAMPLE_V1


def config_dict(encoder, **overrides):
    raw = {
        "name": "tiny",
        "train": {"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": 0, "seed": 0}},
        "eval": {"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": 1, "seed": 0}},
        "defaults": {"encoder": str(encoder), "max_seq_length": 48, "doc_stride": 16, "max_query_length": 12,
                     "epochs": 2, "batch_size": 4, "learning_rate": 1e-3},
        "runs": [{"name": "span-only", "heads": "span"}, {"name": "joint", "heads": "span+bio", "bio_targets": "one-hot"}],
        "seeds": [1, 2],
    }
    raw.update(overrides)
    return raw


@pytest.fixture(scope="module")
def comparison(tiny_encoder_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("compare")
    results, summary = compare(parse_config(config_dict(tiny_encoder_dir)), FIXTURES, out, progress=False)
    return out, results, summary


def test_every_cell_sees_the_same_questions(comparison):
    out, results, _ = comparison
    cells = results["cells"]
    assert {(c["run"], c["decoding"], c["seed"]) for c in cells} == {
        (r, d, s) for s in (1, 2) for r, d in [("span-only", "span"), ("joint", "span"), ("joint", "bio"), ("joint", "joint")]
    }
    ids = [ex.id for ex in results["eval_examples"]]
    assert all(len(c["f1"]) == len(ids) for c in cells)
    for c in cells:
        predictions = json.loads((out / "predictions" / f"{c['run']}-seed{c['seed']}-{c['decoding']}.json").read_text())
        assert list(predictions) == ids
    train_ids = {ex.id for ex in resolve_split(DataSpec(**config_dict('x')["train"]), FIXTURES).examples}
    assert train_ids.isdisjoint(ids)


def test_bootstrap_is_paired_on_per_question_scores(comparison):
    _, results, summary = comparison
    f1 = {}
    for c in results["cells"]:
        f1.setdefault(f"{c['run']}/{c['decoding']}", []).append(c["f1"])
    for comp in summary["comparisons"]:
        a, b = np.mean(f1[comp["a"]], axis=0), np.mean(f1[comp["b"]], axis=0)
        assert comp["diff"] == pytest.approx(a.mean() - b.mean())
        assert comp["n_questions"] == len(a)
        if np.allclose(a - b, (a - b)[0]):  # a constant per-question difference has a zero-width paired CI
            assert comp["ci_low"] == pytest.approx(comp["ci_high"])
        assert comp["ci_low"] <= comp["diff"] + 1e-9 and comp["diff"] <= comp["ci_high"] + 1e-9


def test_report_files_and_table(comparison):
    out, _, summary = comparison
    report = (out / "report.md").read_text()
    for needle in ("## Scores", "span-only", "joint", "Paired differences", "BIO tags", "F1 by question word", "```json"):
        assert needle in report
    assert (out / "f1_by_answer_length.png").stat().st_size > 0
    data = json.loads((out / "report.json").read_text())
    assert data["eval"]["question_hash"] and len(data["summary"]["rows"]) == 4
    seeds = next(r for r in summary["rows"] if r["cell"] == "joint/bio")["seeds"]
    assert seeds == [1, 2]


def test_models_are_reused_not_retrained(comparison, tiny_encoder_dir):
    out, results, _ = comparison
    again, _ = compare(parse_config(config_dict(tiny_encoder_dir, seeds=[1])), FIXTURES, out, progress=False)
    assert all(c["reused_model"] for c in again["cells"])
    first = {(c["run"], c["decoding"]): c["f1"] for c in results["cells"] if c["seed"] == 1}
    for c in again["cells"]:
        np.testing.assert_array_equal(c["f1"], first[(c["run"], c["decoding"])])


def test_overlapping_splits_are_refused(tiny_encoder_dir, tmp_path):
    raw = config_dict(tiny_encoder_dir, eval={"path": str(SAMPLE_V1)})
    with pytest.raises(ValueError, match="overlap"):
        compare(parse_config(raw), FIXTURES, tmp_path, progress=False)


def test_config_errors_are_named():
    with pytest.raises(ValueError, match="unknown config keys"):
        parse_config({"runs": [{"name": "a"}], "train": {"path": "x"}, "eval": {"path": "y"}, "epochs": 3})
    with pytest.raises(ValueError, match="unknown training options"):
        parse_config({"runs": [{"name": "a", "heads_": "span"}], "train": {"path": "x"}, "eval": {"path": "y"}})
    assert load_config("quick").runs[0].train.heads == "span+bio"
