"""The options every door shares, alike at each: a range checked before anything else (before the model is looked up,
before another option's fit), ``auto`` a decoding tune takes as predict and extract do, and every count held to the
command line's bound (``MAX_COUNT``) in Python too."""

from __future__ import annotations

import argparse
import json
import sys

import pytest

from bio_mrc.cli import main
from bio_mrc.errors import ConfigError

from .conftest import SAMPLE_V1, untrained_model_folder

WINDOWS = {"max_seq_length": 48, "doc_stride": 16, "max_query_length": 12}
TOO_MANY = 10**12


@pytest.fixture(scope="module")
def joint_model(tiny_encoder_dir, tmp_path_factory):
    return untrained_model_folder(tiny_encoder_dir, tmp_path_factory.mktemp("shared") / "model", heads="span+bio", **WINDOWS)


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def test_tune_refuses_an_option_out_of_range_before_looking_the_model_up(monkeypatch, tmp_path, capsys):
    """tune looked a model that is no folder here up on the hub before refusing --n-best 99999999999."""
    import bio_mrc.hub
    import bio_mrc.inference.tuning_checks  # noqa: F401  (a module first imported under the patch kept the fake for later tests)

    def looked_up(*_args, **_kwargs):
        pytest.fail("the model was looked up first")

    real = bio_mrc.hub.local_folder
    for module in [module for name, module in sys.modules.items() if name.startswith("bio_mrc")]:
        if getattr(module, "local_folder", None) is real:  # the hub's, and each module's own name for it
            monkeypatch.setattr(module, "local_folder", looked_up)
    assert main(["tune", "--model", "someone/model", "--data", str(tmp_path / "none.json"), "--output-dir", str(tmp_path / "t"),
                 "--n-best", "99999999999"]) == 2
    assert "n_best: 99999999999 is greater than the maximum of 1000000000" in one_line_error(capsys)


def test_extract_checks_a_range_before_whether_the_option_fits(capsys):
    """extract --min-span-probability 2 said "add --multi-span" where predict and tune name the range first."""
    assert main(["extract", "--model", "m", "--question", "q", "--context", "c", "--min-span-probability", "2"]) == 2
    assert "min_span_probability: 2.0 is greater than the maximum of 1.0" in one_line_error(capsys)


def test_tune_takes_auto_as_the_decoding_predict_uses(joint_model, tmp_path, capsys):
    """tune --decoding auto was an argparse "invalid choice"; it tunes the model's preferred decoding (joint here)."""
    raw = json.loads(SAMPLE_V1.read_text(encoding="utf-8"))  # as SQuAD 2.0: a no-answer threshold per decoding tuned
    raw["version"] = "v2.0"
    raw["data"][0]["paragraphs"][0]["qas"][0].update(answers=[], is_impossible=True)
    data, out = tmp_path / "v2.json", tmp_path / "tuned"
    data.write_text(json.dumps(raw), encoding="utf-8")
    assert main(["tune", "--model", str(joint_model), "--data", str(data), "--decoding", "auto", "joint",
                 "--no-calibration", "--output-dir", str(out)]) == 0
    assert list(json.loads(capsys.readouterr().out)) == ["bio_length_prior", "joint"]  # joint once, auto being joint
    assert list(json.loads((out / "config.json").read_text(encoding="utf-8"))["no_answer_thresholds"]) == ["joint"]


def test_tune_plots_auto_as_the_models_preferred_decoding(joint_model, tmp_path):
    from bio_mrc.cli.tune_command import _plot_files

    args = argparse.Namespace(model=str(joint_model), decoding=["auto"], plot_dir=str(tmp_path))
    assert _plot_files(args) == [tmp_path / "threshold_joint.png"]
    hub = argparse.Namespace(model="someone/model", decoding=["auto"], plot_dir=str(tmp_path))  # unread: any of them
    assert [path.name for path in _plot_files(hub)] == ["threshold_span.png", "threshold_bio.png", "threshold_joint.png"]


def test_python_counts_stop_where_the_command_lines_do(joint_model):
    """top_k, batch_size and chunk_size took 10**12 in Python where --top-k, --batch-size and --chunk-size stop at 10**9."""
    from bio_mrc import AnswerExtractor

    with pytest.raises(ConfigError, match="^batch_size: at most 1,000,000,000, not 1000000000000$"):
        AnswerExtractor.from_pretrained(joint_model, batch_size=TOO_MANY)
    extractor = AnswerExtractor.from_pretrained(joint_model, decoding="span")
    with pytest.raises(ConfigError, match="^top_k: at most 1,000,000,000, not 1000000000000$"):
        extractor("Where?", "In Paris.", top_k=TOO_MANY)
    extractor.chunk_size = TOO_MANY
    with pytest.raises(ConfigError, match="^chunk_size: at most 1,000,000,000, not 1000000000000$"):
        extractor(["Where?"], ["In Paris."])
    extractor.chunk_size = 0  # was range()'s own ValueError
    with pytest.raises(ConfigError, match="^chunk_size is a positive number"):
        extractor(["Where?"], ["In Paris."])
    extractor.chunk_size = 10**9
    assert extractor("Where?", "In Paris.", top_k=10**9).answer is not None
