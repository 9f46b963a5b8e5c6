"""``evaluate`` on what was predicted: ``--limit`` as ``predict`` has it, ``--only-predicted`` for the ids of the
predictions file; the subset is stated in the output. Scores computed by hand on the sample's 8 questions."""

import json

import pytest

from bio_mrc.cli import main
from bio_mrc.data.answer_parts import as_answer_parts
from bio_mrc.data.one_answer import JoinedPartsNote
from bio_mrc.data.squad import load_squad
from bio_mrc.errors import ConfigError

from .conftest import SAMPLE_V1


def evaluate(capsys, predictions, *options):
    assert main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(predictions), *options]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def test_the_whole_file_scores_the_unanswered_as_wrong(capsys, three_answers):
    metrics, err = evaluate(capsys, three_answers[0])
    assert metrics["exact_match"] == pytest.approx(100 * 2 / 8) and "scored" not in metrics
    assert "5 of 8 questions have no prediction" in err


def test_only_predicted_scores_the_ids_of_the_predictions_file(capsys, three_answers):
    metrics, err = evaluate(capsys, three_answers[0], "--only-predicted")
    assert metrics["exact_match"] == pytest.approx(100 * 2 / 3) and metrics["f1"] == pytest.approx(100 * 2 / 3)
    assert metrics["scored"]["questions"] == 3 and "the 3 of 8 questions" in metrics["scored"]["subset"]
    assert "no prediction" not in err and "note: scoring the 3 of 8 questions" in err


def test_limit_scores_the_first_questions_as_predict_limit_answers_them(capsys, three_answers):
    metrics, err = evaluate(capsys, three_answers[0], "--limit", "2")
    assert metrics["exact_match"] == 100.0 and metrics["scored"] == {
        "questions": 2, "subset": f"the first 2 questions of {SAMPLE_V1} (--limit 2)"}
    assert "no prediction" not in err  # the third answer is of a question past the limit: ignored, with a warning
    metrics, _ = evaluate(capsys, three_answers[0], "--limit", "4", "--only-predicted")
    assert metrics["exact_match"] == pytest.approx(100 * 2 / 3) and metrics["scored"]["questions"] == 3
    # of the file's first 4 questions, not of a file of 4
    assert metrics["scored"]["subset"].startswith("the 3 of the first 4 questions of ")
    assert metrics["scored"]["subset"].endswith(" answers (--limit 4 --only-predicted)")


def test_limit_past_the_data_is_refused_as_with_a_baseline(capsys, three_answers):
    """--limit 9 of the sample's 8 questions scored all 8 as "the first 8 questions (--limit 9)", while --baseline
    refused it: both refuse it now in one line, and so does the Python call; --limit 8 scores them all."""
    from bio_mrc.inference import evaluate_predictions

    predictions = three_answers[0]
    assert main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(predictions), "--limit", "9"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == (f"error: --limit 9: {SAMPLE_V1} has 8 questions; scores of fewer "
                                                   "questions than asked would not say so (give at most that many)\n")
    with pytest.raises(ConfigError, match=r"^limit=9: .* has 8 questions; scores of fewer questions than asked"):
        evaluate_predictions(SAMPLE_V1, predictions, limit=9)
    metrics, _ = evaluate(capsys, predictions, "--limit", "8")
    assert metrics["scored"]["questions"] == 8 and metrics["exact_match"] == pytest.approx(100 * 2 / 8)


def test_limit_past_the_valid_questions_counts_them_as_the_skipped_line_before_it(capsys, three_answers, tmp_path):
    """Under --skip-invalid the refusal said "D has 7 questions" right after "skipped 1 invalid question of D", where
    predict's note says "7 valid questions (1 skipped)"."""
    data = json.loads(SAMPLE_V1.read_text(encoding="utf-8"))
    data["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["text"] = "Rome"  # not at its answer_start: invalid
    path = tmp_path / "one-invalid.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert main(["evaluate", "--data", str(path), "--predictions", str(three_answers[0]), "--limit", "9",
                 "--skip-invalid"]) == 2
    assert capsys.readouterr().err.splitlines()[-2:] == [
        f"warning: skipped 1 invalid question of {path}",
        f"error: --limit 9: {path} has 7 valid questions (1 skipped); scores of fewer questions than asked would not "
        "say so (give at most that many)"]


def test_only_predicted_with_no_common_id_is_one_line(capsys, tmp_path):
    (tmp_path / "other.json").write_text(json.dumps({"nope": "x"}))
    assert main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(tmp_path / "other.json"), "--only-predicted"]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "--only-predicted: no question of" in error and "has an answer in" in error


def test_only_predicted_with_a_list_names_the_files_problem(capsys, tmp_path):
    """A predictions file that is a JSON list was refused as answering no question of the data; a list is read as
    Hugging Face evaluate's records, so one of strings names its first entry."""
    (tmp_path / "list.json").write_text('["France"]')
    assert main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(tmp_path / "list.json"), "--only-predicted"]) == 2
    error = capsys.readouterr().err.strip()
    assert error == ('error: entry 1 is a JSON string, not a record {"id": ..., "prediction_text": ...}; the official layout '
                     f"is an object {{question id: answer}} (in {tmp_path / 'list.json'})")


def test_limit_with_strict_takes_a_predictions_file_of_the_whole_data(capsys, tmp_path):
    """Answers to questions past --limit are of questions of the data: neither refused under --strict (nor always, as
    MultiSpanQA's strict reading was) as "not questions of the data", nor warned about; a truly unknown id still is."""
    examples = load_squad(SAMPLE_V1).examples
    (tmp_path / "all.json").write_text(json.dumps({ex.id: ex.answer_texts()[0][0] for ex in examples}))
    metrics, err = evaluate(capsys, tmp_path / "all.json", "--limit", "2", "--strict")
    assert metrics["exact_match"] == 100.0 and metrics["scored"]["questions"] == 2 and "not questions" not in err
    (tmp_path / "extra.json").write_text(json.dumps({examples[0].id: "x", "nope": "x"}))
    assert main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(tmp_path / "extra.json"), "--limit", "1",
                 "--strict"]) == 2
    assert "1 id(s) are not questions of the data: 'nope'" in capsys.readouterr().err


def test_limit_on_multispanqa_scores_the_first_questions(capsys, tmp_path):
    record = {"question": ["who", "sang", "?"], "context": ["Dave", "and", "Barbara", "sang", "."],
              "label": ["B", "O", "B", "O", "O"]}
    (tmp_path / "ms.json").write_text(json.dumps({"data": [{"id": f"m{n}", **record} for n in range(3)]}))
    (tmp_path / "preds.json").write_text(json.dumps({f"m{n}": ["Dave", "Barbara"] for n in range(3)}))
    assert main(["evaluate", "--data", str(tmp_path / "ms.json"), "--predictions", str(tmp_path / "preds.json"),
                 "--limit", "2"]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics["em_f1"] == 100.0 and metrics["scored"]["questions"] == 2


def test_na_probs_for_multispanqa_are_refused_not_read_and_ignored(capsys, tmp_path):
    record = {"id": "m0", "question": ["who", "sang", "?"], "context": ["Dave", "and", "Barbara", "sang", "."],
              "label": ["B", "O", "B", "O", "O"]}
    (tmp_path / "ms.json").write_text(json.dumps({"data": [record]}))
    (tmp_path / "preds.json").write_text(json.dumps({"m0": ["Dave", "Barbara"]}))
    (tmp_path / "na.json").write_text(json.dumps({"m0": 0.9}))
    assert main(["evaluate", "--data", str(tmp_path / "ms.json"), "--predictions", str(tmp_path / "preds.json"),
                 "--na-probs", str(tmp_path / "na.json")]) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert not captured.out and line.startswith("error: --na-probs: no-answer probabilities are for SQuAD's official")
    assert line.endswith(f"(in {tmp_path / 'na.json'})")


def test_format_squad_on_multispanqa_data_is_refused_not_ignored(capsys, tmp_path):
    """--format multispanqa on SQuAD JSON is refused; --format squad on MultiSpanQA JSON was silently ignored, the
    questions scored with MultiSpanQA's metrics all the same. Now refused both ways, in one line."""
    assert main(_evaluate_one_multispanqa_question(tmp_path, "--format", "squad")) == 2
    captured = capsys.readouterr()
    assert not captured.out and captured.err.splitlines()[-1].startswith(
        f"error: --format squad: {tmp_path / 'ms.json'} is in multispanqa's layout")
    metrics, _ = evaluate(capsys, _answers_all(tmp_path), "--format", "squad")
    assert metrics["exact_match"] == 100.0


def _evaluate_one_multispanqa_question(tmp_path, *options):
    """``evaluate``'s arguments for one MultiSpanQA question (its own layout) and its right answer, with ``options``."""
    record = {"id": "m0", "question": ["who", "sang", "?"], "context": ["Dave", "and", "Barbara", "sang", "."],
              "label": ["B", "O", "B", "O", "O"]}
    (tmp_path / "ms.json").write_text(json.dumps({"data": [record]}))
    (tmp_path / "preds.json").write_text(json.dumps({"m0": ["Dave", "Barbara"]}))
    return ["evaluate", "--data", str(tmp_path / "ms.json"), "--predictions", str(tmp_path / "preds.json"), *options]


def test_metric_squad_on_multispanqa_data_names_the_metric_option(capsys, tmp_path):
    """--metric squad on MultiSpanQA JSON (no --format given) was refused naming --format squad and telling to drop
    --format, an option the command line never had."""
    assert main(_evaluate_one_multispanqa_question(tmp_path, "--metric", "squad")) == 2
    captured = capsys.readouterr()
    assert not captured.out and captured.err.splitlines()[-1] == (
        f"error: --metric squad: {tmp_path / 'ms.json'} is in multispanqa's layout, which is scored as multispanqa; "
        "drop --metric or give --metric multispan")


def _answers_all(tmp_path):
    path = tmp_path / "all.json"
    path.write_text(json.dumps({ex.id: ex.answer_texts()[0][0] for ex in load_squad(SAMPLE_V1).examples}))
    return path


def test_multi_span_predictions_on_squad_questions_name_the_format_that_scores_them(capsys, tmp_path):
    """predict --multi-span writes lists of spans: evaluate refused them with `must be a string` and no way on."""
    examples = load_squad(SAMPLE_V1).examples
    path = tmp_path / "preds.bio.json"
    path.write_text(json.dumps({ex.id: [ex.answer_texts()[0][0]] for ex in examples}))
    assert main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(path)]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and 'got the list of spans ["France"]' in error and "--format answer-parts" in error
    with pytest.warns(JoinedPartsNote, match="^3 questions of the input list answer parts that repeat, nest or overlap"):
        parts = as_answer_parts(examples)  # the listed answers as one answer's parts, overlapping ones joined
    path.write_text(json.dumps({ex.id: ex.answer_texts()[0] for ex in parts}))
    metrics, _ = evaluate(capsys, path, "--format", "answer-parts")  # the way it names: MultiSpanQA's metrics
    assert metrics["em_precision"] == metrics["em_recall"] == 100.0


def test_the_subset_note_names_a_data_file_on_one_line(capsys, three_answers, tmp_path):
    """A data file named with an escape sequence cannot clear the terminal the note is printed to."""
    data = tmp_path / "dev\x1b[2J\u202egnp.json"
    data.write_bytes(SAMPLE_V1.read_bytes())
    assert main(["evaluate", "--data", str(data), "--predictions", str(three_answers[0]), "--only-predicted"]) == 0
    note = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note: scoring")]
    assert len(note) == 1 and "dev\\x1b[2J\\u202egnp.json" in note[0] and "\x1b" not in note[0] and "\u202e" not in note[0]


def test_evaluate_predictions_states_its_subset_with_its_keywords(three_answers, capsys):
    """A Python caller's result and note name the keywords that chose the questions, not the command line's flags."""
    from bio_mrc.inference import evaluate_predictions

    predictions = three_answers[0]
    result = evaluate_predictions(SAMPLE_V1, predictions, limit=4, only_predicted=True)
    assert result.metrics["scored"] == {
        "questions": 3,
        "subset": f"the 3 of the first 4 questions of {SAMPLE_V1} that {predictions} answers (limit=4, only_predicted=True)"}
    result = evaluate_predictions(SAMPLE_V1, predictions, limit=2, progress=True)
    assert result.metrics["scored"]["subset"] == f"the first 2 questions of {SAMPLE_V1} (limit=2)"
    assert capsys.readouterr().err == f"note: scoring the first 2 questions of {SAMPLE_V1} (limit=2)\n"


def test_evaluate_notes_its_subset_with_its_flags(three_answers, capsys):
    _, err = evaluate(capsys, three_answers[0], "--limit", "4", "--only-predicted")
    assert f"note: scoring the 3 of the first 4 questions of {SAMPLE_V1} that {three_answers[0]} answers (--limit 4 " \
           "--only-predicted)" in err.splitlines()


def test_evaluate_notes_its_subset_before_scoring_it(capsys, tmp_path):
    """The note came once the scores were in, so a question missing under --strict ended the command without it."""
    path = tmp_path / "preds.json"
    path.write_text(json.dumps({"n1": "a", "n2": "b", "n3": "c"}))  # n4, within --limit 4, has no answer
    assert main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(path), "--limit", "4", "--strict"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"note: scoring the first 4 questions of {SAMPLE_V1} (--limit 4)",
        f"error: 1 of 4 questions has no entry: 'n4' (in {path}, record 'n4')"]
