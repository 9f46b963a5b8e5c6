"""Multi-span questions of one's own in any SQuAD-shaped form: ``--format answer-parts`` (a comparison config's
``"format": "answer-parts"``) reads a question's listed answers as the parts of one answer, for training, tuning,
prediction and MultiSpanQA's metrics, where SQuAD reads them as alternatives."""

import json

import pytest

from bio_mrc import registry
from bio_mrc.cli import main
from bio_mrc.data.answer_parts import AlternativesReadNote, as_answer_parts
from bio_mrc.data.one_answer import JoinedPartsNote
from bio_mrc.data.squad import examples_to_squad_json, load_squad
from bio_mrc.harness.comparison_splits import resolve_split
from bio_mrc.harness.config import DataSpec
from bio_mrc.inference import TrainedModel

from .conftest import forget_training_questions

PEOPLE = [("Dave", "Barbara"), ("Ann", "Bob"), ("Cleo", "Dan"), ("Eve", "Finn"), ("Gus", "Hana"), ("Ivo", "Jo")]


def parts_rows() -> list[dict]:
    """Six questions in the Hugging Face SQuAD columns, each with two listed answers that are one answer's parts
    (the first with a repeated part, which counts once), and one with a single part."""
    rows = []
    for k, (first, second) in enumerate(PEOPLE):
        context = f"{first} and {second} met in town {k}."
        texts, starts = [first, second], [0, len(first) + 5]
        if k == 0:
            texts, starts = [*texts, first], [*starts, 0]
        rows.append({"id": f"p{k}", "title": f"town {k}", "question": "Who met?", "context": context,
                     "answers": {"text": texts, "answer_start": starts}})
    rows.append({"id": "one", "title": "a city", "question": "Where did they meet?", "context": "They met in Rome.",
                 "answers": {"text": ["Rome"], "answer_start": [12]}})
    return rows


def write_parts(tmp_path) -> str:
    path = tmp_path / "parts.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in parts_rows()), encoding="utf-8")
    return str(path)


def test_listed_answers_become_one_answer_of_parts_in_context_order(tmp_path):
    read = load_squad(write_parts(tmp_path)).examples
    assert read[0].answer_texts() == [["Dave"], ["Barbara"], ["Dave"]]  # SQuAD: three alternatives
    with pytest.warns(JoinedPartsNote, match="^1 question of the input lists answer parts that repeat, nest or overlap"):
        parts = as_answer_parts(read)  # Dave twice
    assert parts[0].answer_texts() == [["Dave", "Barbara"]]  # one answer, its parts once each, in context order
    assert parts[-1].answer_texts() == [["Rome"]]
    assert [(ex.id, ex.question, ex.context, ex.title) for ex in parts] == [(ex.id, ex.question, ex.context, ex.title) for ex in read]
    unlabelled = load_squad([{"question": "Who?", "context": "Ann met Bob."}]).examples
    assert as_answer_parts(unlabelled) == unlabelled  # nothing to join: questions to predict stay as they are


def test_a_comparison_reads_any_squad_shaped_form_as_answer_parts(tmp_path):
    path = write_parts(tmp_path)
    with pytest.warns(JoinedPartsNote, match="^1 question of .*parts.jsonl lists answer parts that repeat"):
        as_parts = resolve_split(DataSpec(path="parts.jsonl", format="answer-parts"), tmp_path)
    assert as_parts.task == "answer-parts" and as_parts.gold["p0"] == ["Dave", "Barbara"]
    with pytest.warns(AlternativesReadNote, match=r'read as alternatives.*give "format": "answer-parts" in its config entry'):
        as_alternatives = resolve_split(DataSpec(path="parts.jsonl"), tmp_path)
    assert as_alternatives.gold["p0"] == ["Dave", "Barbara", "Dave"]
    with pytest.warns(JoinedPartsNote, match="^1 question of .*parts.jsonl lists answer parts that repeat"):
        quoref = resolve_split(DataSpec(path=path, format="quoref", limit=3), tmp_path)
    assert quoref.task == "quoref" and quoref.ids == ["p0", "p1", "p2"] and quoref.gold["p1"] == ["Ann", "Bob"]
    task = registry.task("answer-parts")
    assert task.scorer == "multispan" and task.multi_span_answers and task.layout is None


def test_the_cli_trains_tunes_predicts_and_evaluates_answer_parts(tiny_encoder_dir, tmp_path, capsys):
    data, model, preds = write_parts(tmp_path), tmp_path / "model", tmp_path / "preds.json"
    window = ["--max-seq-length", "32", "--doc-stride", "8", "--max-query-length", "8"]
    assert main(["train", "--train", data, "--format", "answer-parts", "--output-dir", str(model), "--encoder",
                 str(tiny_encoder_dir), "--epochs", "1", *window]) == 0
    assert json.loads(capsys.readouterr().out)["questions"] == len(parts_rows())
    forget_training_questions(model)  # tuned on its training questions: a test has no others
    assert main(["tune", "--model", str(model), "--data", data, "--format", "answer-parts"]) == 0
    printed = capsys.readouterr()
    report = json.loads(printed.out)
    decodings = TrainedModel.load(model).decodings
    assert {f"min_span_probability/{d}" for d in decodings} <= set(report)  # the span-count rules, as on MultiSpanQA
    for d in decodings:  # each said in one line on stderr, by the task's statistic
        rule = report[f"min_span_probability/{d}"]
        assert (f"span-count rule {d}: a further span kept from probability {rule['value']:g} (was none; EM F1 "
                f"{rule['em_f1']:.2f}, {rule['em_f1_at_default']:.2f} at the default)") in printed.err
    assert "answerable questions (EM F1 " in printed.err
    assert main(["predict", "--model", str(model), "--data", data, "--format", "answer-parts", "--output", str(preds)]) == 0
    answers = json.loads(preds.read_text())
    assert set(answers) == {row["id"] for row in parts_rows()} and all(isinstance(a, list) and a for a in answers.values())
    capsys.readouterr()
    assert main(["evaluate", "--data", data, "--format", "answer-parts", "--predictions", str(preds)]) == 0
    assert set(json.loads(capsys.readouterr().out)) == {"em_precision", "em_recall", "em_f1", "pm_precision", "pm_recall", "pm_f1"}
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps({row["id"]: row["answers"]["text"][:2] for row in parts_rows()}), encoding="utf-8")
    assert main(["evaluate", "--data", data, "--format", "answer-parts", "--predictions", str(gold), "--metric", "multispan"]) == 0
    assert json.loads(capsys.readouterr().out)["em_f1"] == 100.0  # each gold part once: every span right



def test_drop_style_parts_are_scored_with_multispanqa_metrics(tmp_path, capsys):
    """DROP's span answers as answer-parts JSON Lines (docs/data.md), parts repeated, out of order, an unanswerable
    question among them. Hand-computed: gold d1 {robbie gould, matt forte}, d2 {devin hester}, d3 {}; predicted d1
    {robbie gould, jay cutler}, d2 {devin hester}, d3 {}. EM: 3 right of 4 predicted and 4 gold (d3's empty pair counts
    one each): P = R = F1 = 75. PM: jay cutler shares 1 character at most with either gold text (10 characters), and
    matt forte with either prediction: credits 1.1 + 1 + 1 of 4 on both sides, so P = R = F1 = 77.5."""
    context = "The Bears scored first with a field goal by Robbie Gould. Then Jay Cutler threw a pass to Devin Hester. Later Matt Forte ran in."
    rows = [("d1", ["Matt Forte", "Robbie Gould", "Matt Forte"]), ("d2", ["Devin Hester"]), ("d3", [])]
    data = tmp_path / "drop.jsonl"
    data.write_text("".join(json.dumps({"id": qid, "title": "nfl_1", "context": context, "question": "Who?",
                                        "answers": {"text": spans, "answer_start": [context.find(s) for s in spans]}}) + "\n"
                            for qid, spans in rows), encoding="utf-8")
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({"d1": ["Robbie Gould", "Jay Cutler"], "d2": ["Devin Hester"], "d3": []}), encoding="utf-8")
    assert main(["evaluate", "--data", str(data), "--format", "answer-parts", "--predictions", str(preds)]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert scores == pytest.approx({"em_precision": 75.0, "em_recall": 75.0, "em_f1": 75.0,
                                    "pm_precision": 77.5, "pm_recall": 77.5, "pm_f1": 77.5})

def test_several_listed_answers_read_without_a_format_are_said_to_be_alternatives(tmp_path, capsys):
    """The Hugging Face SQuAD columns hold a question's several answers as alternatives (SQuAD's release) or as one
    answer's parts (Quoref's): read without --format they are alternatives, a one-part prediction scoring full marks,
    and one note says so and how to name either; --format squad, or SQuAD's own JSON, says alternatives already."""
    data = write_parts(tmp_path)
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({row["id"]: row["answers"]["text"][0] for row in parts_rows()}), encoding="utf-8")
    assert main(["evaluate", "--data", data, "--predictions", str(preds)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["f1"] == 100.0
    assert err.splitlines() == [
        f"note: 6 questions of {data} list several answers that share no text, as the parts of one answer do, read as "
        "alternatives, any one of them right, as SQuAD's "
        "release of these columns means them (Quoref's means the parts of one answer), e.g. 'p0', 'p1', 'p2', 'p3', "
        "'p4', ...; give --format answer-parts where they are the parts of one answer, or --format squad to read them "
        "as alternatives without this note"]
    assert main(["evaluate", "--data", data, "--predictions", str(preds), "--format", "squad"]) == 0
    assert capsys.readouterr().err == ""
    official = tmp_path / "official.json"
    official.write_text(json.dumps(examples_to_squad_json(load_squad(data).examples)), encoding="utf-8")
    assert main(["evaluate", "--data", str(official), "--predictions", str(preds)]) == 0
    assert capsys.readouterr().err == ""


def test_annotators_alternatives_in_the_hugging_face_columns_are_read_without_a_note(tmp_path, capsys):
    """SQuAD's release in the Hugging Face columns: annotators' alternatives overlap ("Denver Broncos", "Broncos") or
    repeat a text at two places, which one answer's parts never do, so its several answers are alternatives unsaid;
    one question of parts among three of alternatives does not make the file one of parts."""
    context = "The Denver Broncos beat the Carolina Panthers. The Broncos won, and the Broncos cheered."
    rows = [("nested", ["Denver Broncos", "Broncos"], [4, 11]), ("two-places", ["Broncos", "Broncos"], [11, 51]),
            ("cased", ["The Broncos", "the Broncos"], [47, 68]), ("parts", ["Denver Broncos", "Carolina Panthers"], [4, 28])]
    data = tmp_path / "squad-columns.jsonl"
    data.write_text("".join(json.dumps({"id": qid, "question": "Who?", "context": context,
                                        "answers": {"text": texts, "answer_start": starts}}) + "\n"
                            for qid, texts, starts in rows), encoding="utf-8")
    assert [context[s:s + len(t)] for _, texts, starts in rows for t, s in zip(texts, starts)] == [
        t for _, texts, _ in rows for t in texts]
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({qid: texts[-1] for qid, texts, _ in rows}), encoding="utf-8")
    assert main(["evaluate", "--data", str(data), "--predictions", str(preds)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["f1"] == 100.0 and err == ""
    data.write_text("".join(json.dumps({"id": qid, "question": "Who?", "context": context,
                                        "answers": {"text": texts, "answer_start": starts}}) + "\n"
                            for qid, texts, starts in rows[2:]), encoding="utf-8")
    preds.write_text(json.dumps({qid: texts[-1] for qid, texts, _ in rows[2:]}), encoding="utf-8")
    assert main(["evaluate", "--data", str(data), "--predictions", str(preds)]) == 0
    assert capsys.readouterr().err == ""  # one of two questions listing several answers lists parts: not most
    data.write_text(json.dumps({"id": "parts", "question": "Who?", "context": context,
                                "answers": {"text": rows[3][1], "answer_start": rows[3][2]}}), encoding="utf-8")
    preds.write_text(json.dumps({"parts": "Carolina Panthers"}), encoding="utf-8")
    assert main(["evaluate", "--data", str(data), "--predictions", str(preds)]) == 0
    assert capsys.readouterr().err.startswith(f"note: 1 question of {data} lists several answers that share no text")


def test_train_says_how_it_reads_several_answers_before_any_work(tiny_encoder_dir, tmp_path, capsys):
    data, bad = write_parts(tmp_path), tmp_path / "held-out.jsonl"
    bad.write_text(json.dumps({"id": "x", "question": "Who?", "context": "Ann met Bob."}) + "\n", encoding="utf-8")
    assert main(["train", "--train", data, "--eval", str(bad), "--output-dir", str(tmp_path / "model"),
                 "--encoder", str(tiny_encoder_dir), "--max-seq-length", "32", "--doc-stride", "8", "--max-query-length", "8",
                 "--training-args", '{"eval_strategy": "epoch"}']) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"note: 6 questions of {data} list several answers that share no text")
    assert "question without answers" in err[1] and not (tmp_path / "model" / "config.json").exists()


def test_a_metric_that_does_not_score_the_format_is_refused_in_one_line(tmp_path, capsys):
    data = write_parts(tmp_path)
    (tmp_path / "preds.json").write_text(json.dumps({row["id"]: "Dave" for row in parts_rows()}), encoding="utf-8")
    assert main(["evaluate", "--data", data, "--format", "answer-parts", "--metric", "squad",
                 "--predictions", str(tmp_path / "preds.json")]) == 2
    err = capsys.readouterr().err
    assert "--metric squad does not score --format answer-parts" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["train", "tune", "predict", "evaluate"])
def test_every_command_that_reads_questions_takes_each_registered_format(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    assert "--format{" + ",".join(registry.data_formats()) + "}" in capsys.readouterr().out.replace("\n", "").replace(" ", "")


def test_answer_parts_train_a_tag_for_every_part(tiny_tokenizer, tmp_path):
    from bio_mrc.features.config import FeatureConfig
    from bio_mrc.features.windows import build_features
    from bio_mrc.tags import TAG_B

    with pytest.warns(JoinedPartsNote):
        examples = as_answer_parts(load_squad(write_parts(tmp_path)).examples[:1])
    features = build_features(examples, tiny_tokenizer, FeatureConfig(64, 16, 16), heads=("bio",))
    assert sum(tag[TAG_B] == 1.0 for tag in features[0]["bio_targets"]) == 2  # Dave and Barbara both begin a span


def test_quoref_and_answer_parts_share_their_reading():
    quoref, parts = registry.task("quoref"), registry.task("answer-parts")
    assert quoref.examples_as == parts.examples_as and quoref.scorer == parts.scorer and quoref.folds == parts.folds


@pytest.mark.parametrize("command", ["train", "tune"])
def test_several_listed_answers_named_squad_are_read_without_the_note(command, tiny_encoder_dir, trained_dir, tmp_path, capsys):
    """``--format squad`` says the listed answers are alternatives, as ``evaluate`` reads them without the note; the
    same command without ``--format`` says it. Training stops at its unlabelled held-out questions, once both are read."""
    data, held_out = write_parts(tmp_path), tmp_path / "held-out.jsonl"
    held_out.write_text(json.dumps({"id": "x", "question": "Who?", "context": "Ann met Bob."}) + "\n", encoding="utf-8")
    window = ["--max-seq-length", "32", "--doc-stride", "8", "--max-query-length", "8"]
    arguments = {"train": lambda out: ["train", "--train", data, "--eval", str(held_out), "--output-dir", str(out), "--encoder",
                                       str(tiny_encoder_dir), *window, "--training-args", '{"eval_strategy": "epoch"}'],
                 "tune": lambda out: ["tune", "--model", str(trained_dir), "--data", data, "--output-dir", str(out),
                                      "--no-calibration"]}[command]
    finished = {"train": 2, "tune": 0}[command]
    assert main(arguments(tmp_path / "unnamed")) == finished
    assert capsys.readouterr().err.startswith(f"note: 6 questions of {data} list several answers that share no text")
    assert main([*arguments(tmp_path / "named"), "--format", "squad"]) == finished
    assert "share no text" not in capsys.readouterr().err


# "Denmark", then more tokens than a window of FeatureConfig(32, 8, 8) holds, then "Iceland": the two parts of one
# answer lie in different windows
FAR_APART = "Denmark " + " ".join(["the normans were famed"] * 10) + " Iceland"


def part_windows(tiny_tokenizer, context: str, parts: tuple) -> tuple:
    from bio_mrc.features.config import FeatureConfig
    from bio_mrc.features.windows import build_features
    from bio_mrc.types import Example

    example = Example("far", "Which countries?", context, (parts,))
    return example, build_features([example], tiny_tokenizer, FeatureConfig(32, 8, 8, tag_mentions="annotated"), heads=("span", "bio"))


def test_each_window_teaches_the_span_head_the_part_it_holds(tiny_tokenizer):
    from bio_mrc.tags import TAG_B

    iceland = (len(FAR_APART) - len("Iceland"), len(FAR_APART))
    _, features = part_windows(tiny_tokenizer, FAR_APART, ((0, 7), iceland))
    assert len(features) == 2
    for window, part in zip(features, ("Denmark", "Iceland")):
        start, end = window["offset_mapping"][window["start_positions"]][0], window["offset_mapping"][window["end_positions"]][1]
        tagged = [FAR_APART[slice(*window["offset_mapping"][k])] for k, tag in enumerate(window["bio_targets"]) if tag[TAG_B] == 1.0]
        assert FAR_APART[start:end] == part and tagged == [part]  # the span head learns the part the tagger learns there


def test_a_question_whose_first_part_no_window_holds_whole_trains_on_its_other_parts(tiny_tokenizer):
    from bio_mrc.features.targets import answers_no_window_holds

    context = FAR_APART + " and Norway"
    long_part = (0, len(FAR_APART) - len(" Iceland"))  # more tokens than a window holds
    example, features = part_windows(tiny_tokenizer, context, (long_part, (len(context) - 6, len(context))))
    assert answers_no_window_holds(features, [example]) == []  # not refused as a question no window answers
    assert context[slice(features[-1]["offset_mapping"][features[-1]["start_positions"]][0],
                         features[-1]["offset_mapping"][features[-1]["end_positions"]][1])] == "Norway"
