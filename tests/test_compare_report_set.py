"""A comparison's report, its prediction files and its models' evaluation records change together: a rerun that fails
while it writes its report leaves the earlier report beside the earlier files."""

import errno
import json

import pytest

from bio_mrc.harness import report as harness_report
from bio_mrc.harness.compare import compare
from bio_mrc.harness.config import parse_config

from .conftest import FIXTURES, SAMPLE_V1


def config(encoder, max_answer_length):
    return parse_config(
        {
            "name": "report-set",
            "train": {"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": 0, "seed": 0}},
            "eval": {"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": 1, "seed": 0}},
            "defaults": {
                "encoder": str(encoder),
                "max_seq_length": 32,
                "doc_stride": 8,
                "max_query_length": 12,
                "epochs": 1,
                "batch_size": 4,
                "learning_rate": 1e-3,
            },
            "runs": [{"name": "span-only", "heads": "span"}],
            "seeds": [3],
            "decode": {"max_answer_length": max_answer_length},
        }
    )


def files(folder):
    """Every file under ``folder`` but the harness's caches (``cells/``), by its path there."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.relative_to(folder).parts[0] != "cells" and not path.name.endswith(".lock")
    }


def the_records(out):
    """The report's, its prediction files' and the model's card and evaluation record."""
    return {name: data for name, data in files(out).items() if name.startswith(("report", "predictions/")) or name.endswith(("README.md", "bio_mrc_eval.json"))}


@pytest.mark.slow
@pytest.mark.parametrize("fails_in", ["write_html_report", "write_plots"])
def test_a_rerun_that_fails_while_writing_its_report_keeps_the_earlier_report_predictions_and_records(tiny_encoder_dir, tmp_path, monkeypatch, fails_in):
    out = tmp_path / "out"
    compare(config(tiny_encoder_dir, 30), FIXTURES, out)
    earlier = the_records(out)
    assert any(name.startswith("predictions/") for name in earlier) and any(name.endswith("bio_mrc_eval.json") for name in earlier)

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(harness_report, fails_in, full_disk)
        with pytest.raises(OSError, match="No space left"):
            compare(config(tiny_encoder_dir, 1), FIXTURES, out)  # other answers: one-token spans
    assert the_records(out) == earlier

    compare(config(tiny_encoder_dir, 1), FIXTURES, out)  # the cells scored by the failed run are read back
    fresh = tmp_path / "fresh"
    compare(config(tiny_encoder_dir, 30), FIXTURES, fresh)
    compare(config(tiny_encoder_dir, 1), FIXTURES, fresh)
    now, expected = the_records(out), the_records(fresh)
    predictions = sorted(name for name in now if name.startswith("predictions/") and not name.endswith("-files.json"))
    assert predictions == sorted(name for name in expected if name.startswith("predictions/") and not name.endswith("-files.json"))
    assert all(now[name] == expected[name] for name in predictions) and predictions
    assert all(now[name] != earlier[name] for name in predictions if name.endswith("span.json"))
    record = json.loads(next(data for name, data in now.items() if name.endswith("bio_mrc_eval.json")))
    assert sorted(entry["decode"]["max_answer_length"] for entry in record["evaluations"]) == [1, 30]
    assert not (out / "cells" / ".predictions-staged").exists()
