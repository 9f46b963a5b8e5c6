"""``train`` keeps a fingerprint of its questions in the run record; ``tune`` refuses questions the model trained on
(half or more), warns of a few, and tunes held-out ones as before."""

from __future__ import annotations

import base64
import hashlib
import json
import warnings
from pathlib import Path

import pytest

from bio_mrc.cli import main
from bio_mrc.data.squad import load_squad
from bio_mrc.errors import DataFormatError, ModelFormatError
from bio_mrc.inference import TrainedModel
from bio_mrc.inference.held_out import TrainingQuestionsWarning, check_held_out
from bio_mrc.model_records import RUN_FILE
from bio_mrc.question_fingerprint import MAX_QUESTIONS, fingerprint, known_questions

from .conftest import WINDOW_ARGS

COLOURS = ["red", "blue", "green", "white", "black", "yellow", "brown", "grey", "pink", "gold", "silver", "orange"]


def squad_file(path: Path, colours: list[str], prefix: str, also: list[tuple[str, int]] = ()) -> Path:
    """One question per colour, answered by the colour (``What colour is the <prefix> number N?``), then one per
    ``(prefix, N)`` of ``also``."""
    paragraphs = []
    for n, (prefix_n, colour) in enumerate([*((prefix, c) for c in colours), *((p, COLOURS[n]) for p, n in also)]):
        n = n if n < len(colours) else also[n - len(colours)][1]
        context = f"The {prefix_n} number {n} is {colour}."
        answer = {"text": colour, "answer_start": context.index(colour)}
        paragraphs.append({"context": context, "qas": [{"id": f"{prefix_n}-{n}", "question": f"What colour is the {prefix_n} number {n}?",
                                                       "answers": [answer]}]})
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": prefix, "paragraphs": paragraphs}]}), encoding="utf-8")
    return path


def train(data: Path, output: Path, *start: str) -> Path:
    assert main(["train", "--train", str(data), "--output-dir", str(output), *start, "--epochs", "1", "--batch-size", "4",
                 *WINDOW_ARGS]) == 0
    return output


@pytest.fixture(scope="module")
def stages(tiny_encoder_dir, tmp_path_factory):
    """A model trained on ten questions (``first``), and one continued from it on ten others (``second``)."""
    folder = tmp_path_factory.mktemp("held-out")
    first, second = squad_file(folder / "first.json", COLOURS[:10], "car"), squad_file(folder / "second.json", COLOURS[:10], "door")
    model = train(first, folder / "model", "--encoder", str(tiny_encoder_dir))
    continued = train(second, folder / "continued", "--init-from", str(model))
    return {"first": first, "second": second, "model": model, "continued": continued, "folder": folder}


def tune(model: Path, data: Path, output: Path) -> int:
    return main(["tune", "--model", str(model), "--data", str(data), "--output-dir", str(output), "--no-calibration"])


def test_the_run_record_holds_each_question_once_by_its_text_and_context(stages):
    record = json.loads((stages["model"] / RUN_FILE).read_text())["training_questions"]
    expected = sorted(int.from_bytes(hashlib.blake2b(f"What colour is the car number {n}?\0The car number {n} is {colour}."
                                                     .encode(), digest_size=8).digest(), "little")
                      for n, colour in enumerate(COLOURS[:10]))
    assert record["scheme"] == "blake2b-64" and record["version"] == 1 and record["questions"] == 10
    assert list(int(h) for h in __import__("numpy").frombuffer(base64.b64decode(record["hashes"]), dtype="<u8")) == expected


def test_tune_on_the_training_file_is_refused_before_the_model_loads(stages, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(TrainedModel, "load", lambda *a, **k: pytest.fail("the model loaded"))
    assert tune(stages["model"], stages["first"], tmp_path / "tuned") == 2
    assert capsys.readouterr().err.strip() == (
        f"error: 10 of its 10 questions are questions {stages['model']} was trained on (its {RUN_FILE} keeps their "
        "fingerprint): settings tuned on them follow the model's confidence where it learnt the answers, thresholds "
        "that abstain too rarely and calibrators near 1; tune on held-out questions, neither trained nor evaluated on "
        f"(in {stages['first']})")
    assert not (tmp_path / "tuned").exists()


def test_tune_on_the_training_file_is_refused_as_such_whatever_else_it_lacks(stages, tmp_path, capsys):
    """Ten training questions are also too few to calibrate on; the refusal names what no option remedies, that the
    model trained on them, rather than the count, which --no-calibration passes."""
    assert main(["tune", "--model", str(stages["model"]), "--data", str(stages["first"]), "--output-dir", str(tmp_path / "tuned")]) == 2
    err = capsys.readouterr().err
    assert "10 of its 10 questions are questions" in err and "too few to fit a calibrator" not in err
    assert not (tmp_path / "tuned").exists()


def test_one_training_question_of_ten_is_warned_of_and_recorded(stages, tmp_path, capsys):
    data = squad_file(tmp_path / "mixed.json", COLOURS[:9], "hat", also=[("car", 3)])  # 9 held out, 1 trained on
    assert tune(stages["model"], data, tmp_path / "tuned") == 0
    err = capsys.readouterr().err
    assert err.count(f"warning: {data}: 1 of its 10 questions is a question {stages['model']} was trained on") == 1
    assert json.loads((tmp_path / "tuned" / "config.json").read_text())["tuned_on"]["training_questions"] == 1


def test_held_out_questions_are_tuned_without_a_word(stages, tmp_path, capsys):
    data = squad_file(tmp_path / "held-out.json", COLOURS[:10], "hat")
    assert tune(stages["model"], data, tmp_path / "tuned") == 0
    assert "trained on" not in capsys.readouterr().err
    assert json.loads((tmp_path / "tuned" / "config.json").read_text())["tuned_on"]["training_questions"] == 0


def test_the_same_question_in_json_lines_under_another_id_matches(stages, tmp_path):
    rows = [{"id": f"other-{n}", "question": f"What  colour is the car number {n}? ", "context": f"The car number {n}\nis {colour}.",
             "answers": {"text": [colour], "answer_start": [f"The car number {n}\nis ".__len__()]}}
            for n, colour in enumerate(COLOURS[:10])]
    data = tmp_path / "same.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert tune(stages["model"], data, tmp_path / "tuned") == 2  # whitespace aside, the same ten questions


def test_a_continued_model_knows_both_stages(stages, tmp_path, capsys):
    record = json.loads((stages["continued"] / RUN_FILE).read_text())["training_questions"]
    assert record["questions"] == 20 and "partial" not in record
    for data in (stages["first"], stages["second"]):
        assert tune(stages["continued"], data, tmp_path / "tuned") == 2
        assert "10 of its 10 questions are questions" in capsys.readouterr().err


def test_a_model_continued_from_one_whose_record_keeps_no_fingerprint_says_its_fingerprint_is_partial(stages, tmp_path, capsys):
    """An earlier version's model keeps no fingerprint: the model continued from it knows the new stage's questions
    alone, and its record and card say so, never that they are every stage's."""
    older = copy_with_record(stages["model"], tmp_path / "older", training_questions=None)
    continued = train(stages["second"], tmp_path / "continued", "--init-from", str(older))
    record = json.loads((continued / RUN_FILE).read_text())["training_questions"]
    assert record["questions"] == 10 and record["partial"] is True
    card = (continued / "README.md").read_text(encoding="utf-8")
    assert "fingerprint of the 10 questions it was trained on in the stages that recorded theirs" in card
    assert "The questions of an earlier stage are not recorded" in card and "in every stage" not in card
    again = train(stages["first"], tmp_path / "again", "--init-from", str(continued))  # partial it stays
    assert json.loads((again / RUN_FILE).read_text())["training_questions"]["partial"] is True
    capsys.readouterr()
    assert tune(continued, stages["second"], tmp_path / "tuned") == 2  # the stage it keeps is still refused
    assert "10 of its 10 questions are questions" in capsys.readouterr().err


def test_a_fingerprint_of_a_continued_model_is_partial_where_the_earlier_one_is_unknown(stages):
    first, second = load_squad(stages["first"]).examples, load_squad(stages["second"]).examples
    assert "partial" not in fingerprint(second) and "partial" not in fingerprint(second, fingerprint(first), continued=True)
    assert fingerprint(second, None, continued=True)["partial"] is True
    assert fingerprint(second, {"scheme": "later", "version": 9}, continued=True)["partial"] is True
    assert fingerprint(first, fingerprint(second, None, continued=True), continued=True)["partial"] is True


def test_the_library_check_counts_warns_and_refuses(stages, tmp_path):
    held_out = load_squad(squad_file(tmp_path / "held-out.json", COLOURS[:10], "hat")).examples
    trained = load_squad(stages["first"]).examples
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_held_out(stages["model"], held_out, "held-out.json") == 0
    with pytest.warns(TrainingQuestionsWarning, match="4 of its 10 questions are questions"):
        assert check_held_out(stages["model"], held_out[:6] + trained[:4], "mixed.json") == 4
    with pytest.raises(DataFormatError, match="5 of its 10 questions"):
        check_held_out(stages["model"], held_out[:5] + trained[:5], "half.json")


def copy_with_record(model: Path, folder: Path, **fingerprint_fields) -> Path:
    import shutil

    shutil.copytree(model, folder)
    record = json.loads((folder / RUN_FILE).read_text())
    if fingerprint_fields.get("training_questions", "") is None:
        record.pop("training_questions")
    else:
        record["training_questions"] = {**record["training_questions"], **fingerprint_fields}
    (folder / RUN_FILE).write_text(json.dumps(record), encoding="utf-8")
    return folder


@pytest.mark.parametrize("fields, problem", [
    ({"hashes": "not base64!"}, 'training_questions.hashes: "not base64!" is not base64 text of at most'),
    ({"questions": 11}, "training_questions.hashes: 80 bytes, not 8 for each of its 11 questions"),
    ({"questions": MAX_QUESTIONS + 1}, f"training_questions.questions: {MAX_QUESTIONS + 1} is greater than the maximum of {MAX_QUESTIONS}"),
    ({"hashes": "A" * 12_000_000}, f'training_questions.hashes: "{"A" * 38}...{"A" * 39}" is not base64 text of at most 10,666,668 characters'),
    ({"hashes": base64.b64encode(bytes(16)).decode(), "questions": 2}, "training_questions.hashes: not sorted and distinct"),
])
def test_a_crafted_fingerprint_is_refused_naming_the_folder(stages, tmp_path, fields, problem):
    folder = copy_with_record(stages["model"], tmp_path / "crafted", **fields)
    for door in (lambda: TrainedModel.load(folder), lambda: check_held_out(folder, [], "d.json")):
        with pytest.raises(ModelFormatError) as refused:
            door()
        assert problem in str(refused.value) and str(folder) in str(refused.value) and "\n" not in str(refused.value)


def test_a_record_without_a_fingerprint_is_tuned_as_before(stages, tmp_path, capsys):
    folder = copy_with_record(stages["model"], tmp_path / "older", training_questions=None)
    assert tune(folder, stages["first"], tmp_path / "tuned") == 0
    assert "trained on" not in capsys.readouterr().err
    assert "training_questions" not in json.loads((tmp_path / "tuned" / "config.json").read_text())["tuned_on"]


def test_a_fingerprint_joins_the_earlier_one_without_repeats(stages):
    first, second = load_squad(stages["first"]).examples, load_squad(stages["second"]).examples
    joined = fingerprint(second, fingerprint(first + second[:3]))
    assert joined["questions"] == 20
    assert known_questions(joined, first + second) == 20 and known_questions(fingerprint(first), second) == 0
