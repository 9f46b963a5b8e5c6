"""``--limit`` past the questions of the data: ``evaluate`` refuses it (tests/test_evaluate_subset.py), while
``predict``, ``tune`` and ``train`` use every question and say so in one line worded as evaluate's refusal, and
nothing records the questions as "the first N". The sample holds 8 questions."""

import json

import pytest

from bio_mrc.cli import main
from bio_mrc.errors import as_flags, as_keywords

from .conftest import SAMPLE_V1, WINDOW_ARGS, untrained_model_folder

NOTE = f"note: --limit 9: {SAMPLE_V1} has 8 questions; all 8 are used"


@pytest.fixture(scope="module")
def model(tiny_encoder_dir, tmp_path_factory):
    return untrained_model_folder(tiny_encoder_dir, tmp_path_factory.mktemp("limit") / "model", heads="span",
                                  max_seq_length=48, doc_stride=16, max_query_length=12)


def test_the_wording_is_one_for_every_door():
    from bio_mrc.arguments import limit_past_data

    said = limit_past_data(9, 8, "D")
    assert (as_keywords(said), as_flags(said, {"limit": "--limit"})) == ("limit=9: D has 8 questions", "--limit 9: D has 8 questions")
    assert limit_past_data(8, 8, "D") is None and limit_past_data(None, 8, "D") is None


def test_predict_answers_every_question_and_says_so(capsys, model, tmp_path):
    assert main(["predict", "--model", str(model), "--data", str(SAMPLE_V1), "--output", str(tmp_path / "p.json"),
                 "--limit", "9"]) == 0
    captured = capsys.readouterr()
    assert NOTE in captured.err.splitlines() and json.loads(captured.out)["questions"] == 8
    assert main(["predict", "--model", str(model), "--data", str(SAMPLE_V1), "--output", str(tmp_path / "q.json"),
                 "--limit", "8"]) == 0
    assert "note: --limit" not in capsys.readouterr().err  # within the data: nothing to say


def test_tune_says_so_and_records_no_first_nine(capsys, model, tmp_path):
    """The tuned settings said they were tuned on "SAMPLE (first 9 questions)" of a file of 8."""
    out = tmp_path / "tuned"
    assert main(["tune", "--model", str(model), "--data", str(SAMPLE_V1), "--limit", "9", "--no-calibration",
                 "--output-dir", str(out)]) == 0
    assert NOTE in capsys.readouterr().err.splitlines()
    tuned_on = json.loads((out / "config.json").read_text(encoding="utf-8"))["tuned_on"]
    assert (tuned_on["description"], tuned_on["questions"]) == (str(SAMPLE_V1), 8)


def test_train_says_so(capsys, tiny_encoder_dir, tmp_path):
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "m"), "--encoder", str(tiny_encoder_dir),
                 "--heads", "span", "--epochs", "1", "--limit", "9", *WINDOW_ARGS]) == 0
    err = capsys.readouterr().err.splitlines()
    assert NOTE in err and f"training on 8 questions of {SAMPLE_V1}" in err


def test_with_skipped_questions_the_note_counts_the_valid_ones_as_such(capsys, model, tmp_path):
    """The note said "D has 7 questions" right after "skipped 1 invalid question of D", of a file of 8."""
    data = json.loads(SAMPLE_V1.read_text(encoding="utf-8"))
    data["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["text"] = "Rome"  # not at its answer_start: invalid
    path = tmp_path / "one-invalid.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert main(["predict", "--model", str(model), "--data", str(path), "--output", str(tmp_path / "p.json"),
                 "--limit", "9", "--skip-invalid"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert f"warning: skipped 1 invalid question of {path}" in err
    assert [line for line in err if line.startswith("note:")] == [
        f"note: --limit 9: {path} has 7 valid questions (1 skipped); all 7 are used"]


@pytest.mark.parametrize("skip, described, held", [(0, "", "8 questions"), (2, " (from question 3)", "6 questions")])
def test_a_comparison_entry_past_its_data_says_so_and_is_described_as_what_it_takes(capsys, skip, described, held):
    """A config's limit past the file's questions took them all, and the report said "(first 9 questions)"."""
    from bio_mrc.cli.console import input_warnings_as_lines
    from bio_mrc.errors import LimitPastDataWarning
    from bio_mrc.harness.comparison_splits import resolve_split
    from bio_mrc.harness.config import DataSpec

    spec = DataSpec(str(SAMPLE_V1), limit=9, skip=skip)
    said = f"eval: limit=9: {SAMPLE_V1}{described} has {held}; all {8 - skip} are used"
    with pytest.warns(LimitPastDataWarning) as caught:
        split = resolve_split(spec, SAMPLE_V1.parent, "eval")
    assert [str(warning.message) for warning in caught] == [said]
    assert (split.description, len(split.examples)) == (f"{SAMPLE_V1}{described}", 8 - skip)
    with input_warnings_as_lines({}):  # the command line's note, as predict's
        resolve_split(spec, SAMPLE_V1.parent, "eval")
    assert capsys.readouterr().err.splitlines() == [f"note: {said}"]
    within = resolve_split(DataSpec(str(SAMPLE_V1), limit=8 - skip, skip=skip), SAMPLE_V1.parent, "eval")
    assert within.description == f"{SAMPLE_V1} (" + ("questions 3 to 8)" if skip else "first 8 questions)")


def test_predict_prints_the_warning_python_raises_as_one_note(capsys, model, tmp_path):
    """The read says it, and predict_to_files, which now says it too, is not given the limit past the data."""
    assert main(["predict", "--model", str(model), "--data", str(SAMPLE_V1), "--output", str(tmp_path / "p.json"),
                 "--limit", "9"]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith(("note:", "warning:"))]
    assert [line for line in said if "max_query_length" not in line] == [NOTE]  # the sample's p3 is past 12 tokens


def test_tune_model_says_so_as_tune_does(model, tmp_path):
    """tune_model(..., limit=9) of 8 questions used all 8 without a word."""
    from bio_mrc.errors import LimitPastDataWarning
    from bio_mrc.inference import tune_model

    with pytest.warns(LimitPastDataWarning) as caught:
        tune_model(model, SAMPLE_V1, output_dir=tmp_path / "tuned", limit=9, calibrate=False, name="D")
    # the sample's p3 is past max_query_length: said in a note of its own
    assert [str(warning.message) for warning in caught if issubclass(warning.category, LimitPastDataWarning)] == [
        "limit=9: D has 8 questions; all 8 are used"]
    tuned_on = json.loads((tmp_path / "tuned" / "config.json").read_text(encoding="utf-8"))["tuned_on"]
    assert (tuned_on["description"], tuned_on["questions"]) == ("D", 8)


def test_predict_to_files_says_so_as_predict_does(model, tmp_path):
    """predict_to_files(..., limit=9) of 8 questions answered all 8 without a word; of a stream of no known count it
    cannot say so before the work, and within the data there is nothing to say."""
    import warnings

    from bio_mrc.data.squad import load_squad
    from bio_mrc.errors import LimitPastDataWarning
    from bio_mrc.inference import StreamPlan, TrainedModel, predict_to_files

    trained, examples = TrainedModel.load(model), load_squad(SAMPLE_V1).examples
    with pytest.warns(LimitPastDataWarning) as caught:
        predict_to_files(trained, examples, StreamPlan(("span",)), tmp_path / "named.json", name="D", limit=9)
    said = [str(warning.message) for warning in caught if issubclass(warning.category, LimitPastDataWarning)]
    assert said == ["limit=9: D has 8 questions; all 8 are used"]
    with pytest.warns(LimitPastDataWarning, match=r"^limit=9: the data has 8 questions; all 8 are used$"):
        predict_to_files(trained, examples, StreamPlan(("span",)), tmp_path / "unnamed.json", limit=9)
    assert len(json.loads((tmp_path / "named.json").read_text(encoding="utf-8"))) == 8
    with warnings.catch_warnings():
        warnings.simplefilter("error", LimitPastDataWarning)
        predict_to_files(trained, examples, StreamPlan(("span",)), tmp_path / "within.json", limit=8)
        predict_to_files(trained, iter(examples), StreamPlan(("span",)), tmp_path / "stream.json", limit=9)


def test_load_squad_says_a_limit_past_its_questions_once():
    """load_squad(..., limit=9) of 8 questions returned all 8 without a word, where the commands print a note."""
    import warnings

    from bio_mrc.data.squad import load_squad
    from bio_mrc.errors import LimitPastDataWarning

    with pytest.warns(LimitPastDataWarning) as caught:
        data = load_squad(SAMPLE_V1, limit=9)
    assert [str(warning.message) for warning in caught] == [f"limit=9: {SAMPLE_V1} has 8 questions; all 8 are used"]
    assert len(data.examples) == 8
    with warnings.catch_warnings():
        warnings.simplefilter("error", LimitPastDataWarning)
        assert len(load_squad(SAMPLE_V1, limit=8).examples) == len(load_squad(SAMPLE_V1).examples) == 8


def test_stream_squad_says_it_once_when_every_question_is_read(tmp_path):
    """A stream reads its source again each time it is iterated: the first full reading says it, counting the valid
    questions where invalid ones were skipped; a reading stopped early cannot know and says nothing."""
    import warnings

    from bio_mrc.data.squad import stream_squad
    from bio_mrc.errors import LimitPastDataWarning

    data = json.loads(SAMPLE_V1.read_text(encoding="utf-8"))
    data["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["text"] = "Rome"  # not at its answer_start: invalid
    path = tmp_path / "one-invalid.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    stream = stream_squad(path, limit=9, skip_invalid=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LimitPastDataWarning)
        assert next(iter(stream)).id  # stopped at the first question
    with pytest.warns(LimitPastDataWarning) as caught:
        first, again = list(stream), list(stream)
    assert [str(warning.message) for warning in caught] == [f"limit=9: {path} has 7 valid questions (1 skipped); all 7 are used"]
    assert len(first) == len(again) == 7
    with warnings.catch_warnings():
        warnings.simplefilter("error", LimitPastDataWarning)
        assert len(list(stream_squad(path, limit=7, skip_invalid=True))) == 7


@pytest.mark.parametrize("command", ["tune", "predict"])
def test_the_command_line_prints_the_readers_warning_as_one_note(capsys, model, tmp_path, command):
    """tune reads the questions whole and predict streams them: either read, which now warns from Python, leaves the
    command its one note."""
    target = ["--output-dir", str(tmp_path / "tuned"), "--no-calibration"] if command == "tune" else ["--output", str(tmp_path / "p.json")]
    assert main([command, "--model", str(model), "--data", str(SAMPLE_V1), "--limit", "9", *target]) == 0
    assert [line for line in capsys.readouterr().err.splitlines() if "--limit" in line] == [NOTE]
