"""``bio-mrc tune`` says what it changes: every fitted setting with its questions, a refusal to calibrate on too
few questions, no degenerate calibrator ever saved, and ``--output-dir`` for a tuned copy instead of in place."""

import json
import os
import re
import threading

import numpy as np
import pytest

from bio_mrc.cli import main
from bio_mrc.inference.calibrators import degenerate_calibrator, fit_calibrator

from .conftest import SAMPLE_V1, StoppedReplace


def files(folder):
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file()}


def test_degenerate_calibrators_are_named():
    raw = np.array([0.2, 0.5, 0.9])
    assert "constant output 1e-06" in degenerate_calibrator(fit_calibrator(raw, np.zeros(3)), raw)  # all wrong: the rate
    assert degenerate_calibrator({"method": "beta", "a": 0.0, "b": 0.0, "c": 0.3}, raw).startswith("constant output")
    # sigmoid(ln p - 10) < 1e-3 and sigmoid(ln p + 10) > 0.999 for every p here: all near 0, all near 1
    assert "all within 0.001 of 0" in degenerate_calibrator({"method": "beta", "a": 1.0, "b": 0.0, "c": -10.0}, raw)
    assert "of 1" in degenerate_calibrator({"method": "beta", "a": 1.0, "b": 0.0, "c": 10.0}, raw)
    assert degenerate_calibrator({"method": "beta", "a": 1.0, "b": 1.0, "c": 0.0}, raw) is None  # p / (p + 1 - p) = p


def test_the_prior_is_reported_apart_from_the_best_grid_value_alone(monkeypatch):
    """The prior is chosen by the F1 averaged with its grid neighbours': a lone higher grid value elsewhere is named as
    such in the line and the report, not printed beside the prior's F1 as if it were the prior's."""
    from bio_mrc.decoding.postprocess import DecodeConfig
    from bio_mrc.inference import tuning
    from bio_mrc.model import BioMrcConfig
    from bio_mrc.types import Example

    grid = tuning.LENGTH_PRIOR_GRID
    statistic = np.zeros(len(grid))
    statistic[[0, 1, 5, 6, 7]] = [20.0, 50.0, 40.0, 40.0, 40.0]  # a lone 50 at 0.25, 40 from 1.25 to 1.75
    # averaged within 0.25: 35 at 0, 23.33 at 0.25, 40 at 1.5 (the most), 26.67 at 1.25 and 1.75
    chosen = grid[tuning.smoothed_argmax(grid, statistic, tuning.LENGTH_PRIOR_BANDWIDTH)]
    monkeypatch.setattr(tuning, "tune_bio_length_prior", lambda *args, **kwargs: (chosen, statistic))
    examples = [Example(f"q{k}", "?", "aa bb", (((0, 2),),)) for k in range(2)]
    tuned = tuning.tune_settings(None, examples, ["bio"], DecodeConfig(), tune_prior=True, tune_thresholds=False)
    assert tuned.report["bio_length_prior"] == {"value": 1.5, "f1": 40.0, "best_grid_value": 0.25, "best_grid_f1": 50.0,
                                                "f1_without": 20.0, "questions": 2}
    assert tuning.tuning_summary(tuned, BioMrcConfig()) == [
        "bio_length_prior: 1.5 (was none), fitted on 2 answerable questions (F1 40.00 at 1.5, whose grid values within "
        "0.25 score best on average; 50.00 at 0.25, the best grid value alone; 20.00 at 0)"]


def test_too_few_questions_are_refused_before_any_work(trained_dir, capsys):  # noqa: F811
    before = files(trained_dir)
    assert main(["tune", "--model", str(trained_dir), "--data", str(SAMPLE_V1)]) == 2
    error = capsys.readouterr().err.strip()
    assert error == (f"error: {SAMPLE_V1}: 8 questions are too few to fit a calibrator (at least 100); --no-calibration "
                     "tunes the rest, --min-calibration-questions 8 fits one anyway")
    assert files(trained_dir) == before


@pytest.mark.parametrize("inside", ["plots", "."])
def test_a_plot_dir_inside_the_output_dir_is_refused_before_any_work(trained_dir, tmp_path, capsys, inside):  # noqa: F811
    """The copy goes into a new folder, which the plots were written into first: the copy was then refused as a
    folder that is not empty, after every question was answered and tuned, and the plots left there."""
    out = tmp_path / "tuned"
    assert main(["tune", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--no-calibration",
                 "--output-dir", str(out), "--plot-dir", str(out / inside)]) == 2
    error = capsys.readouterr().err.strip()
    assert error == (f"error: --plot-dir {out / inside} lies in --output-dir {out}, the new folder of the tuned copy "
                     "of the model alone; give a plot folder outside it")
    assert not out.exists()


def test_output_dir_writes_a_tuned_copy_and_every_setting_is_printed(trained_dir, tmp_path, capsys):  # noqa: F811
    before = files(trained_dir)
    out = tmp_path / "tuned"
    assert main(["tune", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--output-dir", str(out),
                 "--min-calibration-questions", "8"]) == 0
    assert files(trained_dir) == before  # the model itself is untouched
    copied = files(out)
    assert set(copied) == set(before) and copied["model.safetensors"] == before["model.safetensors"]
    config = json.loads(copied["config.json"])
    assert config["tuned_on"]["questions"] == 8 and config["bio_length_prior"] is not None
    err = capsys.readouterr().err
    assert "bio_length_prior: " in err and "fitted on 8 answerable questions" in err
    # the tiny model answers every question right: each calibrator would be constant, so none is saved
    for decoding in ("span", "bio", "joint"):
        assert f"warning: no calibrator saved for {decoding}: degenerate (constant output" in err
    assert config["calibration"] is None
    # the tune record keeps why, and the card says it, a line per decoding (it listed the fitted calibrators alone)
    not_fitted = config["tuned_on"]["calibrators_not_fitted"]
    assert sorted(not_fitted) == ["bio", "joint", "span"] and all(r.startswith("constant output") for r in not_fitted.values())
    tuned_rows = copied["README.md"].decode().split("## Tuned settings")[1].split("## Usage")[0]
    for decoding, reason in not_fitted.items():
        assert f"| calibrator `{decoding}` | not fitted: degenerate (`{reason}`) |" in tuned_rows
    assert f"saved in {out / 'config.json'} (a tuned copy of {trained_dir})" in err
    assert "warning: tuned on 8 questions: settings fitted on fewer than 100 follow the questions drawn" in err
    card = copied["README.md"].decode()  # the card names the folder the copy lives in, not where it was staged
    assert "# tuned\n" in card and "- name: tuned\n" in card and "tune-staging" not in card
    assert main(["tune", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--output-dir", str(out),
                 "--no-calibration"]) == 2
    error = capsys.readouterr().err.strip()
    assert error == f"error: --output-dir {out} is not empty; give a new folder (the tuned copy of the model goes there)"


def test_no_calibration_keeps_the_saved_calibrators(trained_dir, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "tuned"
    assert main(["tune", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--output-dir", str(out),
                 "--no-calibration"]) == 0
    assert json.loads((out / "config.json").read_text()).get("calibration") == json.loads(
        (trained_dir / "config.json").read_text()).get("calibration")
    assert "calibrators: none fitted; kept as saved" in capsys.readouterr().err


def test_names_from_the_models_config_are_printed_on_one_line_each(trained_dir, tmp_path, capsys):  # noqa: F811
    """A copied config.json's tuning file name and calibrator keys reach stderr as Python writes their controls."""
    import shutil

    model = tmp_path / "model"
    shutil.copytree(trained_dir, model)
    config = json.loads((model / "config.json").read_text())
    hostile = "dev\x1b[2J\u202egnp.json\rX"
    config.update(no_answer_thresholds={"span": 0.5, "bio": 0.5}, tuned_on={"description": hostile, "questions": 3, "content_hash": "c"},
                  calibration={"span" + hostile: {"method": "beta", "a": 1.0, "b": 1.0, "c": 0.0, "questions": 5}})
    (model / "config.json").write_text(json.dumps(config))
    assert main(["tune", "--model", str(model), "--data", str(SAMPLE_V1), "--output-dir", str(tmp_path / "tuned"),
                 "--no-calibration", "--decoding", "span"]) == 0
    err = capsys.readouterr().err
    shown = "dev\\x1b[2J\\u202egnp.json\\rX"
    assert f"tuned on {shown}, not on these questions)" in err
    assert f"calibrators: none fitted; kept as saved (span{shown})" in err
    named = [line for line in err.split("\n") if "gnp.json" in line]  # the progress bars' own \r aside
    assert len(named) >= 2 and not any(char in line for line in named for char in "\x1b\r\u202e")


def test_plot_dir_on_questions_that_all_have_an_answer_says_nothing_is_plotted(trained_dir, tmp_path, capsys):  # noqa: F811
    plots = tmp_path / "plots"
    assert main(["tune", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--output-dir", str(tmp_path / "tuned"),
                 "--plot-dir", str(plots), "--no-calibration"]) == 0
    assert f"note: nothing plotted in {plots}: the curves are of no-answer thresholds" in capsys.readouterr().err
    assert not plots.exists() or not any(plots.iterdir())


@pytest.mark.parametrize("calibration", [["--no-calibration"], ["--min-calibration-questions", "8"]])
def test_questions_none_of_which_has_an_answer_are_refused_before_the_model_loads(trained_dir, tmp_path, capsys, monkeypatch,
                                                                                calibration):  # noqa: F811
    """Abstaining on all of them (a threshold of -inf) scored F1 100 and was saved: a model that answers nothing. Then
    no threshold was tuned, but only after the model's whole pass, and a tune in place dropped the thresholds saved."""
    import shutil

    from bio_mrc.inference import TrainedModel

    data = json.loads(SAMPLE_V1.read_text(encoding="utf-8"))
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            for question in paragraph["qas"]:
                question.update(answers=[], is_impossible=True)
    unanswerable = tmp_path / "unanswerable.json"
    unanswerable.write_text(json.dumps({"version": "v2.0", "data": data["data"]}), encoding="utf-8")
    model = tmp_path / "model"
    shutil.copytree(trained_dir, model)
    config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    (model / "config.json").write_text(json.dumps({**config, "no_answer_thresholds": {"span": 0.5}}), encoding="utf-8")
    before = files(model)
    monkeypatch.setattr(TrainedModel, "load", lambda *args, **kwargs: pytest.fail("the model loaded"))
    assert main(["tune", "--model", str(model), "--data", str(unanswerable), *calibration]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: none of its 8 questions has an answer: tune fits the length prior and span-count rules on answered "
        "questions, no-answer thresholds on answered and unanswerable ones, and calibrators on the answers given; tune "
        f"on held-out questions with and without answers (in {unanswerable})"]
    assert files(model) == before


def test_an_always_abstaining_threshold_is_valid_json():
    from bio_mrc.cli.console import json_numbers

    def refuse(constant):
        raise ValueError(f"{constant} is no JSON number")
    printed = json.dumps(json_numbers({"span": {"threshold": float("-inf"), "best_f1": 100.0}}))
    assert json.loads(printed, parse_constant=refuse) == {"span": {"threshold": "-Infinity", "best_f1": 100.0}}


def test_a_full_disk_while_copying_the_model_is_one_line_and_leaves_no_half_copy(trained_dir, tmp_path, capsys, monkeypatch):  # noqa: F811
    import errno
    import os
    import shutil

    copy = shutil.copyfile

    def full_disk(source, target, *args, **kwargs):
        if os.fspath(source).endswith("model.safetensors"):  # the weights cut short, after config.json and the record
            with open(target, "wb") as handle:
                handle.write(b"cut")
            raise OSError(errno.ENOSPC, "No space left on device")
        return copy(source, target, *args, **kwargs)

    monkeypatch.setattr(shutil, "copyfile", full_disk)
    out = tmp_path / "tuned"
    assert main(["tune", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--output-dir", str(out), "--no-calibration"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()[-1:]
    assert line.startswith("error: could not write there, ") and line.endswith(f"[Errno 28] No space left on device (in {out})")
    assert not out.exists()  # no folder holding config.json and a run record beside cut weights


@pytest.mark.parametrize("where", ["file", "below a file"])
def test_a_plot_dir_that_is_a_file_is_refused_before_any_work(tmp_path, capsys, where):
    mine = tmp_path / "notes.txt"
    mine.write_text("mine")
    plots = mine if where == "file" else mine / "plots"
    # the model is not there: the plot folder is refused before it would be read (it was a FileExistsError traceback
    # after the tuning, when the plots were drawn)
    assert main(["tune", "--model", str(tmp_path / "absent-model"), "--data", str(SAMPLE_V1), "--plot-dir", str(plots)]) == 2
    expected = "a file has this name; give a folder" if where == "file" else f"{mine} is a file, so no folder can be made there for this output"
    assert capsys.readouterr().err.strip() == f"error: {expected} (in {plots})"
    assert mine.read_text() == "mine"


def test_a_folder_or_link_at_a_plots_name_is_refused_before_any_work(trained_dir, tmp_path, capsys):  # noqa: F811
    """A plot is written once every question is answered and tuned, before the settings are saved: a folder at its
    name (``threshold_joint.png`` for a joint model, or for the decoding asked for) is refused before the data or the
    model is read, and so is a link there, as any output file's."""
    plots, before = tmp_path / "plots", files(trained_dir)
    (plots / "threshold_joint.png").mkdir(parents=True)
    assert main(["tune", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--plot-dir", str(plots), "--no-calibration"]) == 2
    assert capsys.readouterr().err.strip() == f"error: a folder has this name; give a file name (in {plots / 'threshold_joint.png'})"
    assert files(trained_dir) == before
    mine = tmp_path / "mine.png"
    mine.write_bytes(b"mine")
    (plots / "threshold_span.png").symlink_to(mine)
    assert main(["tune", "--model", str(tmp_path / "absent-model"), "--data", str(SAMPLE_V1), "--plot-dir", str(plots),
                 "--decoding", "span"]) == 2
    link = plots / "threshold_span.png"
    assert capsys.readouterr().err.strip() == (f"error: {link} is a symbolic link; bio_mrc writes no output through a link "
                                               f"(remove it or choose another output) (in {link})")
    assert mine.read_bytes() == b"mine"


def test_a_tuning_on_other_questions_drops_the_span_count_rules_it_did_not_fit(tiny_encoder_dir, tmp_path):
    """Span-count rules tuned on multi-span questions stayed when the model was tuned again on SQuAD 2.0 questions,
    and ``tuned_on`` and the card then named the SQuAD questions as theirs."""
    import copy

    from bio_mrc.inference.tuning import dropped_settings, save_tuned_settings
    from bio_mrc.model import BioMrcConfig, BioMrcForQuestionAnswering
    from bio_mrc.model_card import CARD_FILE

    folder = tmp_path / "model"
    BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio").save_pretrained(str(folder))
    multi = {"description": "multispan.json", "questions": 30, "content_hash": "aaaa"}
    squad2 = {"description": "squad2.json", "questions": 40, "content_hash": "bbbb"}
    config = BioMrcConfig.from_pretrained(folder)
    assert save_tuned_settings(folder, config, {}, {"bio_length_prior": 1.25, "min_span_probabilities": {"joint": 0.3}}, multi)
    before = copy.deepcopy(config)
    assert save_tuned_settings(folder, config, {"joint": -2.0}, {"bio_length_prior": 0.5}, squad2)
    assert dropped_settings(before, config) == [
        "min_span_probabilities: dropped (was {'joint': 0.3}, tuned on multispan.json, not on these questions)"]
    saved = BioMrcConfig.from_pretrained(folder)
    assert (saved.min_span_probabilities, saved.no_answer_thresholds, saved.bio_length_prior) == (None, {"joint": -2.0}, 0.5)
    assert saved.tuned_on == squad2
    assert "a span after the first needs probability" not in (folder / CARD_FILE).read_text(encoding="utf-8")
    # a tune of one decoding on other questions keeps its rule alone: the others' are dropped, and said to be
    assert save_tuned_settings(folder, config, {}, {"min_span_probabilities": {"span": 0.1, "bio": 0.2, "joint": 0.3}}, multi)
    before = copy.deepcopy(config)
    assert save_tuned_settings(folder, config, {}, {"min_span_probabilities": {"bio": 0.4}}, squad2)
    assert config.min_span_probabilities == {"bio": 0.4}
    assert dropped_settings(before, config) == [
        "min_span_probabilities: dropped (was {'span': 0.1, 'joint': 0.3}, tuned on multispan.json, not on these questions)"]


def test_a_calibrator_fitted_at_another_no_answer_threshold_is_dropped_when_a_tune_fits_none(tiny_encoder_dir, tmp_path):
    """``tune --no-calibration`` on other SQuAD 2.0 questions kept a calibrator fitted at the old threshold, which scored
    an abstention at the new one as the span it no longer gives (the probability of answering)."""
    import copy

    from bio_mrc.inference.tuning import save_tuned_settings, stale_calibrator_lines
    from bio_mrc.model import BioMrcConfig, BioMrcForQuestionAnswering

    folder = tmp_path / "model"
    BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio").save_pretrained(str(folder))
    beta = {"method": "beta", "a": 1.0, "b": 0.5, "c": 0.2, "correct_if": "f1 > 0.5", "questions": 40}
    calibration = {"joint": beta | {"no_answer_threshold": -2.0}, "span": beta | {"no_answer_threshold": -1.0}, "bio": beta}
    config = BioMrcConfig.from_pretrained(folder)
    first = {"description": "a.json", "questions": 40, "content_hash": "aaaa"}
    assert save_tuned_settings(folder, config, {"joint": -2.0, "span": -1.0}, {"calibration": calibration}, first)
    assert set(config.calibration) == {"joint", "span", "bio"}  # each fitted at the threshold saved beside it
    before = copy.deepcopy(config)
    other = {"description": "b.json", "questions": 40, "content_hash": "bbbb"}
    assert save_tuned_settings(folder, config, {"joint": -3.5, "span": -1.0}, {}, other)  # --no-calibration
    assert set(BioMrcConfig.from_pretrained(folder).calibration) == {"span", "bio"}  # bio: fitted without a threshold
    assert stale_calibrator_lines(before, config) == [
        "calibrator joint: dropped (fitted at no-answer threshold -2, now -3.5); its answers get no probability until "
        "a tune without --no-calibration fits one"]


def test_a_calibrator_of_a_decoding_not_registered_here_is_judged_by_the_saved_thresholds(tiny_encoder_dir, tmp_path):
    """A plug-in decoding's calibrator fitted at a no-answer threshold, in a folder tuned where the plug-in is not
    imported: saving looked up its threshold's key in the registry and ended in a ValueError traceback after the whole
    tuning. Its key is unknown here: it stays while a saved threshold holds the value it was fitted at (a tune of
    other decodings on the same questions keeps the plug-in's threshold), and is dropped, said in a line, once none does."""
    import copy

    from bio_mrc.inference.tuning import save_tuned_settings, stale_calibrator_lines
    from bio_mrc.model import BioMrcConfig, BioMrcForQuestionAnswering

    folder = tmp_path / "model"
    BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio").save_pretrained(str(folder))
    beta = {"method": "beta", "a": 1.0, "b": 0.5, "c": 0.2, "correct_if": "f1 > 0.5", "questions": 40}
    config = BioMrcConfig.from_pretrained(folder)
    first = {"description": "a.json", "questions": 40, "content_hash": "aaaa"}
    assert save_tuned_settings(folder, config, {"plugged": -2.0, "span": -1.0},
                               {"calibration": {"plugged": beta | {"no_answer_threshold": -2.0}}}, first)
    assert save_tuned_settings(folder, config, {"span": -1.5}, {}, first)  # same questions: the plug-in's threshold stays
    assert config.no_answer_thresholds == {"plugged": -2.0, "span": -1.5} and set(config.calibration) == {"plugged"}
    before = copy.deepcopy(config)
    other = {"description": "b.json", "questions": 40, "content_hash": "bbbb"}
    assert save_tuned_settings(folder, config, {"span": -1.0}, {}, other)  # other questions: no threshold of -2 is left
    assert BioMrcConfig.from_pretrained(folder).calibration is None
    assert stale_calibrator_lines(before, config) == [
        "calibrator plugged: dropped (fitted at no-answer threshold -2, which no saved threshold holds now; plugged is no "
        "registered decoding); its answers get no probability until a tune without --no-calibration fits one"]


def test_a_given_length_prior_is_saved_with_the_settings_fitted_with_it(trained_dir, tmp_path, capsys):  # noqa: F811
    """``tune --bio-length-prior`` fitted the thresholds and calibrators with the given β but saved the model's old one."""
    out = tmp_path / "tuned"
    assert main(["tune", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--output-dir", str(out),
                 "--no-calibration", "--bio-length-prior", "2.75"]) == 0
    assert json.loads((out / "config.json").read_text())["bio_length_prior"] == 2.75
    captured = capsys.readouterr()
    assert "bio_length_prior: 2.75 (was " in captured.err and "as given; the other settings were fitted with it" in captured.err
    assert json.loads(captured.out)["bio_length_prior"] == {"value": 2.75, "given": True}


def test_decoding_options_the_model_does_not_keep_are_named_when_they_shaped_the_fit(trained_dir, tmp_path, capsys):  # noqa: F811
    """``tune --max-answer-length 3`` fitted the prior and thresholds on answers of at most 3 tokens and saved them
    beside the model's own limit, which every door answers with, without a word; the n-best count shapes the span-count
    rules of multi-span questions alike, and is no setting of the model either."""
    from bio_mrc import registry
    from bio_mrc.decoding.postprocess import DecodeConfig
    from bio_mrc.inference.model_tuning import unkept_options_lines

    out = tmp_path / "tuned"
    assert main(["tune", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--output-dir", str(out),
                 "--no-calibration", "--max-answer-length", "3", "--n-best", "5"]) == 0
    limit = json.loads((trained_dir / "config.json").read_text())["max_answer_length"]
    assert json.loads((out / "config.json").read_text())["max_answer_length"] == limit == 30
    warned = [line for line in capsys.readouterr().err.splitlines() if "does not keep" in line]
    assert warned == ["warning: the settings were fitted with an answer-length limit of 3 tokens (the model's is 30), which "
                      "the model does not keep: predict, extract and serve answer with its own unless given the same"]
    answered, multispan, squad = DecodeConfig(max_answer_length=30), registry.scorer("multispan"), registry.squad_task("1.1")
    assert unkept_options_lines(DecodeConfig(max_answer_length=30, n_best=5), answered, multispan) == [
        "warning: the settings were fitted with 5 n-best candidates (by default 20), which the model does not keep: "
        "predict, extract and serve answer with its own unless given the same"]
    assert unkept_options_lines(DecodeConfig(n_best=5), answered, squad) == []  # one answer: its fit reads no n-best count
    assert unkept_options_lines(DecodeConfig(max_answer_length=30), answered, multispan) == []


def test_one_question_is_refused_for_calibration_whatever_the_minimum(trained_dir, tmp_path, capsys):  # noqa: F811
    """``--min-calibration-questions 1`` on one question tuned the rest, fitted no calibrator and kept the old ones
    beside the new settings without a word."""
    data = json.loads(SAMPLE_V1.read_text(encoding="utf-8"))
    article = data["data"][0]
    paragraph = article["paragraphs"][0]
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"version": "1.1", "data": [{**article, "paragraphs": [{**paragraph, "qas": paragraph["qas"][:1]}]}]}),
                   encoding="utf-8")
    out = tmp_path / "tuned"
    assert main(["tune", "--model", str(trained_dir), "--data", str(one), "--output-dir", str(out),
                 "--min-calibration-questions", "1"]) == 2
    assert capsys.readouterr().err.strip() == (f"error: {one}: 1 question is too few to fit a calibrator (at least 2); "
                                               "--no-calibration tunes the rest")
    assert not out.exists()


def test_a_tune_on_one_question_speaks_of_it_in_the_singular(trained_dir, tmp_path, capsys):  # noqa: F811
    """``--limit 1``: "fitted on 1 answerable questions", "tuned on 1 questions", "(first 1 questions)"."""
    out = tmp_path / "tuned"
    assert main(["tune", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--limit", "1", "--no-calibration",
                 "--output-dir", str(out)]) == 0
    err = capsys.readouterr().err
    assert "), fitted on 1 answerable question (" in err and "warning: tuned on 1 question: settings fitted on fewer" in err
    assert "questions" not in err.split("fitted on 1 answerable question")[1].split("\n")[0]
    tuned_on = json.loads((out / "config.json").read_text(encoding="utf-8"))["tuned_on"]
    assert tuned_on["description"] == f"{SAMPLE_V1} (first 1 question)" and tuned_on["questions"] == 1


def test_counted_nouns_and_verbs_agree_with_their_count():
    from bio_mrc.plurals import counted, number_form

    assert [counted(n, "question") for n in (0, 1, 2)] == ["0 questions", "1 question", "2 questions"]
    assert counted(1, "answerable question") == "1 answerable question"
    assert counted("?", "question") == "? questions" and counted(True, "question") == "True questions"
    assert [number_form(n, "has", "have") for n in (1, 3)] == ["has", "have"]


def test_a_given_span_count_rule_is_saved_for_every_decoding(trained_dir, tmp_path, capsys):  # noqa: F811
    """``tune --min-span-probability 0.3`` on multi-span questions tuned no rule, dropped the saved ones and saved nothing:
    the model then answered with the registry's defaults, not the rule its other settings were fitted with."""
    out = tmp_path / "tuned"
    assert main(["tune", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--format", "answer-parts", "--output-dir", str(out),
                 "--no-calibration", "--min-span-probability", "0.3"]) == 0
    saved = json.loads((out / "config.json").read_text())
    assert saved["min_span_probabilities"] == {"bio": 0.3, "joint": 0.3, "span": 0.3}
    captured = capsys.readouterr()
    assert "span-count rule joint: a further span kept from probability 0.3 (was " in captured.err and "), as given" in captured.err
    assert json.loads(captured.out)["min_span_probability/bio"] == {"value": 0.3, "given": True}


def test_a_given_span_count_rule_on_single_span_questions_is_refused_not_ignored(trained_dir, tmp_path, capsys):  # noqa: F811
    """On SQuAD questions tune sets no span-count rule, so a given one would be saved nowhere: it is refused in one line
    before the model loads, and the model folder is left as it was."""
    out = tmp_path / "tuned"
    assert main(["tune", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--output-dir", str(out),
                 "--no-calibration", "--min-span-probability", "0.3"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: --min-span-probability sets the span-count rule of multi-span answers, which tune saves from multi-span "
        f"questions (MultiSpanQA's layout, --format answer-parts or quoref); {SAMPLE_V1} is read as single-span questions: "
        "leave it out, or name the format its answers have")
    assert not out.exists()


def test_questions_without_an_answer_scored_by_metrics_that_never_abstain_say_why_no_threshold(trained_dir, tmp_path, capsys):  # noqa: F811
    """``tune --format answer-parts`` on questions some of which have no answer tuned no threshold without a word."""
    data = json.loads(SAMPLE_V1.read_text())
    for qa in data["data"][0]["paragraphs"][0]["qas"][:2]:
        qa["answers"], qa["is_impossible"] = [], True
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps(data))
    assert main(["tune", "--model", str(trained_dir), "--data", str(mixed), "--format", "answer-parts",
                 "--output-dir", str(tmp_path / "tuned"), "--no-calibration"]) == 0
    captured = capsys.readouterr()
    assert ("no-answer thresholds: none tuned: 2 tuning questions without an answer, but they are scored with "
            in captured.err and "which never abstain (SQuAD 2.0's metrics tune a no-answer threshold)" in captured.err)
    assert json.loads((tmp_path / "tuned" / "config.json").read_text()).get("no_answer_thresholds") is None


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("stop", ["ctrl-c", "full disk"])
def test_a_stop_while_tuned_settings_are_saved_leaves_no_card_of_other_settings(tiny_encoder_dir, tmp_path, monkeypatch,
                                                                                 k, stop, sigint_as_in_a_terminal):
    """A full disk once config.json was replaced left the card showing the settings before, without a word."""
    from bio_mrc import io
    from bio_mrc.inference.tuning import save_tuned_settings
    from bio_mrc.model import BioMrcConfig, BioMrcForQuestionAnswering
    from bio_mrc.model_card import CARD_FILE, write_model_card

    folder = tmp_path / "model"
    BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio").save_pretrained(str(folder))
    write_model_card(folder)
    old = {name: (folder / name).read_bytes() for name in ("config.json", CARD_FILE)}
    with monkeypatch.context() as patch, pytest.raises(KeyboardInterrupt if stop == "ctrl-c" else io.OutputError):
        patch.setattr(io.atomic.os, "replace", StoppedReplace(stop, k))  # 1: config.json, 2: the card
        save_tuned_settings(folder, BioMrcConfig.from_pretrained(folder), {"joint": -2.0}, {},
                            {"description": "d.json", "questions": 3, "content_hash": "cc"})
    saved = BioMrcConfig.from_pretrained(folder).no_answer_thresholds
    if stop == "full disk" and k == 1:  # nothing replaced
        assert {name: (folder / name).read_bytes() for name in old} == old
    elif stop == "full disk":  # the new settings, and no card rather than the old one
        assert saved == {"joint": -2.0} and not (folder / CARD_FILE).exists()
    else:
        assert saved == {"joint": -2.0} and "-2" in (folder / CARD_FILE).read_text(encoding="utf-8")


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="names an open file by /proc")
def test_a_disk_that_fills_while_the_card_is_written_keeps_the_old_settings_and_card(tiny_encoder_dir, tmp_path, monkeypatch):
    """A full disk while the card was written (config.json already replaced) left the new settings and no card: the
    card the folder held was lost. Both are written before either replaces the old: the old pair stays."""
    import errno

    from bio_mrc import io
    from bio_mrc.inference.tuning import save_tuned_settings
    from bio_mrc.model import BioMrcConfig, BioMrcForQuestionAnswering
    from bio_mrc.model_card import CARD_FILE, write_model_card

    folder = tmp_path / "model"
    BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio").save_pretrained(str(folder))
    write_model_card(folder)
    old = {name: (folder / name).read_bytes() for name in ("config.json", CARD_FILE)}
    fsync = os.fsync

    def card_does_not_fit(descriptor):  # the card's temporary file is the one the disk has no room for
        if f".{CARD_FILE}." in os.readlink(f"/proc/self/fd/{descriptor}"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return fsync(descriptor)

    monkeypatch.setattr(io.atomic.os, "fsync", card_does_not_fit)
    with pytest.raises(io.OutputError, match=re.escape(f"No space left on device (in {folder})")):
        save_tuned_settings(folder, BioMrcConfig.from_pretrained(folder), {"joint": -2.0}, {},
                            {"description": "d.json", "questions": 3, "content_hash": "cc"})
    assert {name: (folder / name).read_bytes() for name in old} == old
    assert sorted(path.name for path in folder.iterdir()) == sorted(["config.json", "model.safetensors", CARD_FILE])


@pytest.mark.parametrize("into", ["the model", "--output-dir"])
def test_a_tune_of_a_folder_another_process_writes_is_refused_before_it_reads_the_model(trained_dir, tmp_path, capsys,
                                                                                       monkeypatch, into):
    """A tune in place read the model, and minutes later wrote its config made from that reading over whatever a train
    or another tune had saved there meanwhile: a config of the old model beside the new weights, or one tuning lost."""
    pytest.importorskip("fcntl")
    import os

    from bio_mrc.inference import TrainedModel
    from bio_mrc.io import sole_process_in

    held = trained_dir if into == "the model" else tmp_path / "tuned"
    before = files(trained_dir)
    monkeypatch.setattr(TrainedModel, "load", classmethod(lambda cls, *args, **kwargs: pytest.fail("the model was read")))
    command = ["tune", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--no-calibration"]
    with sole_process_in(os.path.realpath(held), "held"):  # a train (or tune) writing there now
        assert main(command + ([] if into == "the model" else ["--output-dir", str(held)])) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: another process is writing into this folder now; wait for it to end, or choose another output folder (in {held})"
    assert files(trained_dir) == before


def test_a_train_into_a_folder_a_tune_or_export_writes_is_refused(tmp_path, capsys, monkeypatch):
    """train's lock and the one tune and export hold are one: neither writes a model folder the other writes. The
    refusal names what may hold it, not a train: here a tune or an export (another process) does."""
    pytest.importorskip("fcntl")
    import subprocess
    import sys

    import bio_mrc.cli.train_command

    out = tmp_path / "model"
    monkeypatch.setattr(bio_mrc.cli.train_command, "_train_into", lambda args: pytest.fail("the train went on"))
    holder = ("import sys; from bio_mrc.io import written_alone\n"
              f"with written_alone({str(out)!r}):\n    print('held', flush=True); sys.stdin.read()")
    other = subprocess.Popen([sys.executable, "-c", holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline() == "held\n"  # the other process holds the folder, as a tune writing it does
        assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(out), "--encoder", "e", "--overwrite"]) == 2
    finally:
        other.communicate("")  # its standard input ends: it lets go and exits
    assert capsys.readouterr().err.strip() == (
        "error: another process is writing into this folder now (a train, tune, export or convert of a model there); "
        f"wait for it to end, or choose another --output-dir (in {out})")
    assert other.returncode == 0


def test_a_tune_of_one_decoding_on_the_same_questions_keeps_the_others_calibrators(trained_dir, tmp_path, capsys):  # noqa: F811
    """Their thresholds stayed and their calibrators went: bio and joint answers lost their probability. The
    tuned decoding's own calibrator is replaced, here by none (the tiny model's is degenerate), not kept."""
    data = json.loads(SAMPLE_V1.read_text(encoding="utf-8"))
    paragraph = data["data"][0]["paragraphs"][0]
    paragraph["qas"] += [{"id": f"none-{k}", "question": question, "answers": [], "is_impossible": True}
                         for k, question in enumerate(["Who painted it?", "Where was it sold?", "How old is it?"])]
    questions = tmp_path / "v2.json"
    questions.write_text(json.dumps({"version": "v2.0", "data": data["data"]}), encoding="utf-8")
    first, second = tmp_path / "first", tmp_path / "second"
    assert main(["tune", "--model", str(trained_dir), "--data", str(questions), "--output-dir", str(first),
                 "--no-calibration"]) == 0
    config = json.loads((first / "config.json").read_text())
    thresholds = config["no_answer_thresholds"]
    keys = {"span": "span", "bio": "bio/ratio", "joint": "joint"}
    config["calibration"] = {decoding: {"method": "beta", "a": 1.0, "b": 1.0, "c": 0.0, "correct_if": "f1 > 0.5",
                                        "questions": 11, "no_answer_threshold": thresholds[key]}
                             for decoding, key in keys.items()}  # as fitted on these questions at these thresholds
    (first / "config.json").write_text(json.dumps(config), encoding="utf-8")
    assert main(["tune", "--model", str(first), "--data", str(questions), "--output-dir", str(second),
                 "--min-calibration-questions", "2", "--decoding", "span"]) == 0
    assert "warning: no calibrator saved for span: degenerate" in capsys.readouterr().err
    after = json.loads((second / "config.json").read_text())
    assert after["no_answer_thresholds"] == thresholds
    assert after["calibration"] == {decoding: config["calibration"][decoding] for decoding in ("bio", "joint")}


def test_a_tune_on_other_questions_says_which_calibrators_it_dropped(trained_dir, tmp_path, capsys):  # noqa: F811
    """A tune of one decoding on other questions dropped the other decodings' calibrators, fitted on the questions the
    saved tuned_on named, without a word: their answers lost their probability."""
    import shutil

    model, tuned = tmp_path / "model", tmp_path / "tuned"
    shutil.copytree(trained_dir, model)
    config = json.loads((model / "config.json").read_text())
    beta = {"method": "beta", "a": 1.0, "b": 1.0, "c": 0.0, "correct_if": "f1 > 0.5", "questions": 11}
    config["calibration"] = {"bio": beta, "joint": beta, "span": beta}
    config["tuned_on"] = {"description": "old\nheld-out.json", "questions": 11, "content_hash": "other"}
    (model / "config.json").write_text(json.dumps(config), encoding="utf-8")
    assert main(["tune", "--model", str(model), "--data", str(SAMPLE_V1), "--output-dir", str(tuned),
                 "--min-calibration-questions", "2", "--decoding", "span"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert "calibration: dropped (was bio, joint, tuned on old\\nheld-out.json, not on these questions)" in err
    assert set(json.loads((tuned / "config.json").read_text())["calibration"] or {}) <= {"span"}
    # the same questions again: the span calibrator is replaced, and nothing is said to be dropped
    tuned_again = tmp_path / "again"
    assert main(["tune", "--model", str(tuned), "--data", str(SAMPLE_V1), "--output-dir", str(tuned_again),
                 "--min-calibration-questions", "2", "--decoding", "span"]) == 0
    assert "dropped" not in capsys.readouterr().err


@pytest.mark.parametrize("asked, auto, expected", [("auto", "bf16", "bf16"), ("fp32", "bf16", "fp32")])
def test_the_tune_record_keeps_the_precision_and_device_its_scores_were_computed_in(trained_dir, tmp_path, monkeypatch,
                                                                                    asked, auto, expected):  # noqa: F811
    """``auto`` resolves per machine: the record keeps what it resolved to (bf16 here, patched as another machine's
    choice), and an explicit fp32 as fp32, with the device's kind; the card says both."""
    from bio_mrc import precision

    choice = precision.precision_choice

    def patched(given, *args, **kwargs):
        if (given or precision.DEFAULT_PRECISION) == "auto":
            return {"precision": auto, "how": "measured"}
        return choice(given, *args, **kwargs)

    monkeypatch.setattr(precision, "precision_choice", patched)
    out = tmp_path / "tuned"
    assert main(["tune", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--output-dir", str(out),
                 "--no-calibration", "--precision", asked, "--device", "cpu"]) == 0
    tuned_on = json.loads((out / "config.json").read_text())["tuned_on"]
    assert (tuned_on["precision"], tuned_on["device"]) == (expected, "cpu")
    card = (out / "README.md").read_text()
    assert f"content hash `{tuned_on['content_hash']}`), on scores computed in `{expected}` on `cpu`; saved in" in card


def with_unanswerable_questions(folder):
    """The sample's questions and three without an answer, as a SQuAD 2.0 file in ``folder``."""
    data = json.loads(SAMPLE_V1.read_text(encoding="utf-8"))
    data["data"][0]["paragraphs"][0]["qas"] += [
        {"id": f"none-{k}", "question": question, "answers": [], "is_impossible": True}
        for k, question in enumerate(["Who painted it?", "Where was it sold?", "How old is it?"])]
    path = folder / "v2.json"
    path.write_text(json.dumps({"version": "v2.0", "data": data["data"]}), encoding="utf-8")
    return path


def test_a_tune_that_moves_the_length_prior_drops_the_settings_fitted_at_the_old_one(trained_dir, tmp_path, capsys):  # noqa: F811
    """A tune of the joint decoding alone at another length prior, on the same questions, kept the BIO decoding's
    no-answer threshold and calibrator, fitted at the prior before: its no-answer score moves with the prior, so it
    abstained by a stale threshold. The span decoding, which reads no prior, keeps its own."""
    questions, first, second = with_unanswerable_questions(tmp_path), tmp_path / "first", tmp_path / "second"
    assert main(["tune", "--model", str(trained_dir), "--data", str(questions), "--output-dir", str(first),
                 "--no-calibration", "--bio-length-prior", "1"]) == 0
    config = json.loads((first / "config.json").read_text())
    thresholds = config["no_answer_thresholds"]
    config["calibration"] = {decoding: {"method": "beta", "a": 1.0, "b": 1.0, "c": 0.0, "correct_if": "f1 > 0.5",
                                        "questions": 11, "no_answer_threshold": thresholds[key]}
                             for decoding, key in (("span", "span"), ("bio", "bio/ratio"))}
    (first / "config.json").write_text(json.dumps(config), encoding="utf-8")
    capsys.readouterr()
    assert main(["tune", "--model", str(first), "--data", str(questions), "--output-dir", str(second),
                 "--no-calibration", "--decoding", "joint", "--bio-length-prior", "3"]) == 0
    err = capsys.readouterr().err.splitlines()
    after = json.loads((second / "config.json").read_text())
    assert after["bio_length_prior"] == 3
    assert set(after["no_answer_thresholds"]) == {"span", "joint"}
    assert after["no_answer_thresholds"]["span"] == thresholds["span"]
    assert set(after["calibration"]) == {"span"}
    assert f"no_answer_thresholds: dropped (was {{'bio/ratio': {thresholds['bio/ratio']!r}}}, fitted at bio_length_prior 1, not 3)" in err
    assert "calibration: dropped (was bio, fitted at bio_length_prior 1, not 3)" in err
    # the same prior again: nothing fitted at another one, nothing dropped
    again = tmp_path / "again"
    assert main(["tune", "--model", str(second), "--data", str(questions), "--output-dir", str(again),
                 "--no-calibration", "--decoding", "joint", "--bio-length-prior", "3"]) == 0
    assert "dropped" not in capsys.readouterr().err
    assert json.loads((again / "config.json").read_text())["no_answer_thresholds"] == after["no_answer_thresholds"]


def test_a_prior_saved_where_none_was_is_stale_only_if_the_decodings_read_another():
    """A model without a saved prior decodes at 0: a tune that saves 0 moves nothing, one that saves 2 moves it."""
    from bio_mrc.inference.tuning import prior_stale
    from bio_mrc.model import BioMrcConfig

    before = BioMrcConfig(no_answer_thresholds={"span": 1.0, "bio/ratio": 2.0, "joint": 3.0})
    assert prior_stale(before, 0.0) == {}
    assert prior_stale(before, None) == {}
    assert prior_stale(before, 2.0)["no_answer_thresholds"] == {"bio/ratio", "joint"}
