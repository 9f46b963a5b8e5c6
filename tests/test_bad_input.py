"""Bad input: every case raises a typed error naming the file, the record and the problem,
and the command line prints it in one line, without a traceback."""

import json
import re

import pytest

from bio_mrc.cli import main
from bio_mrc.data.predictions import UnknownIdsWarning, load_na_probs, load_predictions
from bio_mrc.data.squad import load_squad
from bio_mrc.errors import BioMrcError, DataFormatError, ModelFormatError
from bio_mrc.metrics.squad_official import squad_metrics

from .conftest import untrained_model_folder

CONTEXT = "Paris is the capital of France."


def squad_file(tmp_path, qas=None, context=CONTEXT, raw=None, name="data.json"):
    path = tmp_path / name
    if raw is None:
        qas = qas if qas is not None else [question("q1")]
        raw = {"version": "1.1", "data": [{"title": "Paris", "paragraphs": [{"context": context, "qas": qas}]}]}
    path.write_text(raw if isinstance(raw, str) else json.dumps(raw), encoding="utf-8")
    return path


def question(qid, text="France", start=24, **extra):
    return {"id": qid, "question": "Where?", "answers": [{"text": text, "answer_start": start}], **extra}


def raises_naming(path, record, match, **options):
    with pytest.raises(DataFormatError, match=match) as info:
        load_squad(path, **options)
    assert info.value.source == str(path) and str(path) in str(info.value)
    assert info.value.record == record and (record is None or repr(record) in str(info.value))
    return info.value


# --- data files ---------------------------------------------------------------------------------

def test_truncated_and_malformed_json(tmp_path):
    whole = json.dumps({"version": "1.1", "data": [{"title": "Paris", "paragraphs": []}]})
    raises_naming(squad_file(tmp_path, raw=whole[:-7]), None, "ends early .a truncated file")
    raises_naming(squad_file(tmp_path, raw='{"data": [}'), None, r"not valid JSON: .* \(line 1, column 11\)")
    raises_naming(squad_file(tmp_path, raw=b"\xff\xfe{}".decode("latin-1")), None, "not valid JSON")
    (tmp_path / "latin1.json").write_bytes(b'{"data": "caf\xe9"}')
    raises_naming(tmp_path / "latin1.json", None, "not UTF-8 text")
    raises_naming(tmp_path / "missing.json", None, "file not found")


@pytest.mark.parametrize("raw", [[], {"version": "1.1"}, {"data": {"title": "x"}}])
def test_wrong_top_level_layout(tmp_path, raw):
    raises_naming(squad_file(tmp_path, raw=raw), None, "expected an object with a 'data' list")


def test_wrong_article_and_paragraph_layout(tmp_path):
    raises_naming(squad_file(tmp_path, raw={"data": [{"title": "Oslo", "paragraphs": "text"}]}), "Oslo", "'paragraphs' list")
    raises_naming(squad_file(tmp_path, raw={"data": ["just text"]}), "article #1", "'paragraphs' list")
    raw = {"data": [{"title": "Oslo", "paragraphs": [{"context": "Oslo."}]}]}
    raises_naming(squad_file(tmp_path, raw=raw), "Oslo", "paragraph 0 has no 'qas' list")


@pytest.mark.parametrize(
    "qas, context, record, match",
    [
        ([question("q1")], None, "q1", "empty or missing context"),
        ([question("q1")], "  \n", "q1", "empty or missing context"),
        ([{**question("q1"), "question": ""}], CONTEXT, "q1", "empty or missing question"),
        ([{k: v for k, v in question("q1").items() if k != "question"}], CONTEXT, "q1", "empty or missing question"),
        ([{**question("q1"), "id": ["q1"]}], CONTEXT, "Paris", "'id' must be a string"),
        ([question("q1"), question("q2"), question("q1")], CONTEXT, "q1", "duplicate question id"),
        ([question("q1", start=3)], CONTEXT, "q1", "not at answer_start 3; the text does occur at 24 .fix_offsets=True"),
        ([question("q1", text="Berlin")], CONTEXT, "q1", 'answer text "Berlin" is not in the context'),
        ([question("q1", text="Zu\u0308rich")], "Paris is near Z\u00fcrich.", "q1",
         "is not in the context as written, though it is once both are in one Unicode normalisation form"),
        ([question("q1", text="Z\u00fcrich")], "Paris is near Zu\u0308rich.", "q1", "unicodedata.normalize"),
        ([question("q1", start="24")], CONTEXT, "q1", "integer 'answer_start'"),
        ([question("q1", is_impossible=True)], CONTEXT, "q1", "marked is_impossible has answers"),
        ([{"id": "q1", "question": "Where?", "answers": []}], CONTEXT, "q1", "no answers and is not marked is_impossible"),
        ([{**question("q1"), "is_impossible": "no"}], CONTEXT, "q1", "'is_impossible' must be true or false"),
    ],
)
def test_bad_records_name_the_file_and_the_record(tmp_path, qas, context, record, match):
    raises_naming(squad_file(tmp_path, qas, context), record, match)


def test_fix_offsets_relocates_to_the_nearest_occurrence(tmp_path):
    context = "France borders Spain. Paris is the capital of France."
    path = squad_file(tmp_path, [question("q1", start=40), question("q2", start=1), question("q3", start=46)], context)
    data = load_squad(path, fix_offsets=True)
    assert [ex.answers[0][0] for ex in data.examples] == [(46, 52), (0, 6), (46, 52)]
    assert data.fixed_offsets == ["q1", "q2"]  # q3 was right
    raises_naming(squad_file(tmp_path, [question("q1", text="Berlin")]), "q1", "not in the context", fix_offsets=True)


def test_fix_offsets_takes_a_whole_word_before_a_piece_of_a_longer_one(tmp_path):
    # "an" at 6 is off; the nearest "an" ends "plan" (5), the word is at 8.
    context = "We plan an annual trip; an event."
    path = squad_file(tmp_path, [question("q1", text="an", start=6)], context)
    assert load_squad(path, fix_offsets=True).examples[0].answers == (((8, 10),),)
    raises_naming(path, "q1", "the text does occur at 8 ")
    inside = squad_file(tmp_path, [question("q1", text="lan", start=2)], context)  # only inside a word: still found
    assert load_squad(inside, fix_offsets=True).examples[0].answers == (((4, 7),),)


def test_skip_invalid_reports_every_skipped_question(tmp_path):
    path = squad_file(tmp_path, [question("q1"), question("q2", text="Rome"), {"id": "q3", "question": ""}, question("q1")])
    data = load_squad(path, skip_invalid=True)
    assert [ex.id for ex in data.examples] == ["q1"]
    assert [(e.record, e.problem.split(" ")[0]) for e in data.skipped] == [("q2", "answer"), ("q3", "empty"), ("q1", "duplicate")]


def test_cli_prints_one_line_without_a_traceback(tmp_path, capsys):
    bad = squad_file(tmp_path, [question("q1", start=3)])
    assert main(["evaluate", "--data", str(bad), "--predictions", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(bad) in err and "'q1'" in err and "Traceback" not in err
    preds = tmp_path / "p.json"
    preds.write_text(json.dumps({"q1": "France"}))
    assert main(["evaluate", "--data", str(bad), "--predictions", str(preds), "--fix-offsets"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["exact_match"] == 100.0 and "relocated answer_start of 1 question in" in captured.err


def test_relocated_ids_reach_the_terminal_without_control_sequences(tmp_path, capsys):
    hostile = "q\x1b[2J\x1b]0;title\x07"  # clears the screen and retitles the terminal when printed as it is
    bad = squad_file(tmp_path, [question(hostile, start=3)])
    preds = tmp_path / "p.json"
    preds.write_text(json.dumps({hostile: "France"}))
    assert main(["evaluate", "--data", str(bad), "--predictions", str(preds), "--fix-offsets"]) == 0
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    assert r"question in " + str(bad) + r": 'q\x1b[2J\x1b]0;title\x07'" in err


def test_the_lines_naming_what_a_command_reads_and_writes_reach_the_terminal_without_control_sequences(
        saved_model, tmp_path, capsys):
    hostile = "\x1b[2J\x1b]8;;http:evil\x07\u202egnp"  # clears, links, and shows what follows reversed
    page = tmp_path / f"page{hostile}.html"
    assert main(["extract", "--model", str(saved_model), "--question", "who", "--context", "Ada wrote it.",
                 "--html", str(page)]) == 0
    assert page.is_file()
    exported, converted = tmp_path / f"qa{hostile}", tmp_path / f"back{hostile}"  # each line where its work begins
    assert main(["export", "--model", str(saved_model), "--output", str(exported), "--format", "transformers"]) == 0
    assert main(["convert", "--model", str(exported), "--output", str(converted)]) == 0
    err = capsys.readouterr().err
    for command in ("export", "convert"):  # refused: one line, no line of work begun before it
        assert main([command, "--model", str(tmp_path / f"gone{hostile}"), "--output", str(tmp_path / "out")]) == 2
        refusal = capsys.readouterr().err
        assert refusal.count("\n") == 1 and refusal.startswith("error: ") and "\\x1b[2J" in refusal, refusal
    shown = "\\x1b[2J\\x1b]8;;http:evil\\x07\\u202egnp"
    assert f"page: {tmp_path}/page{shown}.html (every decoding's answer" in err
    assert f"exporting {saved_model} to transformers in {tmp_path}/qa{shown}\n" in err
    assert f"converting {tmp_path}/qa{shown} into a bio_mrc model in {tmp_path}/back{shown}\n" in err
    assert not any(char in err for char in "\x1b\x07\u202e")


def test_cli_skip_invalid_counts(tmp_path, capsys):
    data = squad_file(tmp_path, [question("q1"), question("q2", text="Rome")])
    preds = tmp_path / "p.json"
    preds.write_text(json.dumps({"q1": "France"}))
    assert main(["evaluate", "--data", str(data), "--predictions", str(preds), "--skip-invalid"]) == 0
    err = capsys.readouterr().err
    assert 'skipped: answer text "Rome"' in err and "skipped 1 invalid question" in err


# --- prediction files --------------------------------------------------------------------------

def test_truncated_predictions_file_is_named(tmp_path, capsys):
    data = squad_file(tmp_path)
    preds = tmp_path / "preds.json"
    preds.write_text('{"q1": "Fra')
    with pytest.raises(DataFormatError, match="ends early") as info:
        load_predictions(preds, ["q1"])
    assert info.value.source == str(preds)
    assert main(["evaluate", "--data", str(data), "--predictions", str(preds)]) == 2
    assert "truncated" in capsys.readouterr().err


@pytest.mark.parametrize("raw", [b"", b" \n", b"\xef\xbb\xbf"])
@pytest.mark.parametrize("option", ["--predictions", "--na-probs", "--data"])
def test_an_empty_predictions_probabilities_or_data_file_is_named_empty_not_truncated(tmp_path, capsys, raw, option):
    """An empty file (or one of blanks, or a byte-order mark alone) was called a JSON that ends early, a truncated file."""
    files = {"--data": squad_file(tmp_path), "--predictions": tmp_path / "preds.json", "--na-probs": tmp_path / "na.json"}
    files["--predictions"].write_text('{"q1": "France"}', encoding="utf-8")
    files["--na-probs"].write_text('{"q1": 0.5}', encoding="utf-8")
    files[option].write_bytes(raw)
    assert main(["evaluate", *(part for name, path in files.items() for part in (name, str(path)))]) == 2
    problem = "the file is empty: it holds no JSON value"
    if option == "--data":
        problem += '; read as squad: official SQuAD JSON: {"data": [{title, paragraphs: [{context, qas: [{id, question, answers}]}]}]}'
    assert capsys.readouterr().err.splitlines() == [f"error: {problem} (in {files[option]})"]


def test_predicts_answers_stream_given_as_the_predictions_file_is_named_with_the_file_to_give(tmp_path, capsys):
    """``PREDS.answers.jsonl`` read as a JSON object: "not valid JSON: Extra data", or with one line "no question id of
    it is in the data: a predictions file of another data set?"."""
    data = squad_file(tmp_path)
    stream = tmp_path / "preds.answers.jsonl"
    stream.write_text(json.dumps({"id": "q1", "decoding": "span", "answer": "France"}) + "\n", encoding="utf-8")
    assert main(["evaluate", "--data", str(data), "--predictions", str(stream)]) == 2
    assert capsys.readouterr().err == (f"error: this is predict's answers stream (JSON Lines, one line per question and "
                                       f"decoding), not an official predictions file {{id: answer}}; give the one predict "
                                       f"wrote beside it: {tmp_path / 'preds.json'} (in {stream})\n")
    (tmp_path / "preds.answers.run.json").write_text(json.dumps({"decodings": ["span", "bio"]}), encoding="utf-8")
    assert main(["evaluate", "--data", str(data), "--predictions", str(stream)]) == 2
    assert capsys.readouterr().err.startswith(f"error: this is predict's answers stream (JSON Lines, one line per question "
                                              f"and decoding), not an official predictions file {{id: answer}}; give the one "
                                              f"predict wrote beside it for the decoding to score: "
                                              f"{tmp_path / 'preds.span.json'}, {tmp_path / 'preds.bio.json'} (in {stream})")
    (tmp_path / "preds.json").write_text(json.dumps({"q1": "France"}), encoding="utf-8")
    assert main(["evaluate", "--data", str(data), "--predictions", str(tmp_path / "preds.json"), "--na-probs", str(stream)]) == 2
    assert ("not a no-answer probability file; give the one predict wrote beside it for the decoding to score: "
            f"{tmp_path / 'preds.span.na_probs.json'}, {tmp_path / 'preds.bio.na_probs.json'} (in {stream})") in capsys.readouterr().err


def test_predicts_answers_stream_under_another_name_is_named_by_its_first_line(tmp_path, capsys):
    """A stream renamed ``out.json`` was read as one JSON object: "not valid JSON: Extra data"."""
    data = squad_file(tmp_path)
    stream = tmp_path / "out.json"
    lines = [{"id": "q1", "decoding": "span", "answer": "France"}, {"id": "q1", "decoding": "bio", "answer": "France"}]
    stream.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    assert main(["evaluate", "--data", str(data), "--predictions", str(stream)]) == 2
    assert capsys.readouterr().err == (f"error: this is predict's answers stream (JSON Lines, one line per question and "
                                       f"decoding), not an official predictions file {{id: answer}}; give the one predict "
                                       f"wrote beside it, as it writes PREDS.json beside PREDS.answers.jsonl "
                                       f"(PREDS.DECODING.json for each of several decodings) (in {stream})\n")
    (tmp_path / "preds.json").write_text(json.dumps({"q1": "France"}), encoding="utf-8")
    assert main(["evaluate", "--data", str(data), "--predictions", str(tmp_path / "preds.json"), "--na-probs", str(stream)]) == 2
    assert ("not a no-answer probability file; give the one predict wrote beside it, as it writes PREDS.na_probs.json "
            f"beside PREDS.answers.jsonl (PREDS.DECODING.na_probs.json for each of several decodings) (in {stream})"
            ) in capsys.readouterr().err
    one_line = tmp_path / "one-line.json"  # an official file on one line is read as ever
    one_line.write_text(json.dumps({"q1": "France"}) + "\n", encoding="utf-8")
    assert main(["evaluate", "--data", str(data), "--predictions", str(one_line)]) == 0
    assert json.loads(capsys.readouterr().out)["exact_match"] == 100.0


def test_predicts_other_files_given_in_the_wrong_place_are_named_with_the_file_to_give(tmp_path, capsys):
    """predict's n-best file, its no-answer probabilities and its answers each given where another is read, another
    tool's n-best lists, and the data file itself: each is one line saying what the file is and what to give."""
    data = squad_file(tmp_path)
    preds, nbest, probs = (tmp_path / name for name in ("preds.json", "preds.nbest.json", "preds.na_probs.json"))
    preds.write_text(json.dumps({"q1": "France"}), encoding="utf-8")
    entry = {"id": "q1", "answer": "France", "abstain": False, "spans": [{"text": "France", "start": 24, "end": 30}]}
    nbest.write_text(json.dumps({"q1": entry}), encoding="utf-8")
    probs.write_text(json.dumps({"q1": 0.25}), encoding="utf-8")
    lists = tmp_path / "nbest_predictions.json"  # transformers' run_qa.py writes its n-best lists so
    lists.write_text(json.dumps({"q1": [{"text": "France", "probability": 0.9}]}), encoding="utf-8")
    shown = '{"abstain": false, "answer": "France", "id": "q1", "spans": [{"end": 30, "start": 24, "text": "France"}]}'
    cases = [
        (["--predictions", nbest], f"a prediction must be a string, got {shown}: this is predict's n-best file {{id: "
                                   f"{{answer, spans, ...}}}}, not an official predictions file {{id: answer}}; give the "
                                   f"one written with it: {preds} (in {nbest}, record 'q1')"),
        (["--predictions", preds, "--na-probs", nbest], f"a no-answer probability or score must be a finite number, got "
                                                        f"{shown}: this is predict's n-best file {{id: {{answer, spans, ...}}}}, "
                                                        f"not a no-answer probability file {{id: probability}}; give the one "
                                                        f"written with it: {probs} (in {nbest}, record 'q1')"),
        (["--predictions", probs], "a prediction must be a string, got 0.25: this is a no-answer probability file {id: "
                                   "probability}, not an official predictions file {id: answer}: give it as --na-probs, and "
                                   f"the answers as --predictions (in {probs}, record 'q1')"),
        (["--predictions", preds, "--na-probs", preds], "a no-answer probability or score must be a finite number, got "
                                                        '"France": this is a predictions file {id: answer}, not a no-answer '
                                                        "probability file {id: probability}: give it as --predictions, and "
                                                        f"the no-answer probabilities as --na-probs (in {preds}, record 'q1')"),
        (["--predictions", lists], 'a prediction must be a string, got [{"probability": 0.9, "text": "France"}]: this is an '
                                   "n-best file {id: [{text, ...}]}, not an official predictions file {id: answer}; give the "
                                   f"one written with it (in {lists}, record 'q1')"),
        (["--predictions", data], f"no question id of {data} is in {data}: it is a data file (a 'data' list of articles), "
                                  "not a predictions file {question id: answer}"),
    ]
    for options, line in cases:
        assert main(["evaluate", "--data", str(data), *map(str, options)]) == 2
        assert capsys.readouterr().err.splitlines() == [f"error: {line}"]


def test_one_number_among_answers_or_one_text_among_probabilities_is_that_value_wrong_not_the_file(tmp_path, capsys):
    """A number among answers (a year written as 1990) was called a no-answer probability file to give as --na-probs,
    and a probability written as text among numbers a predictions file; a file of them alone still is one."""
    data = squad_file(tmp_path, qas=[question("q1"), question("q2")])
    preds, probs = tmp_path / "preds.json", tmp_path / "probs.json"
    preds.write_text(json.dumps({"q1": "France", "q2": 1990}), encoding="utf-8")
    probs.write_text(json.dumps({"q1": "0.25", "q2": 0.5}), encoding="utf-8")
    assert main(["evaluate", "--data", str(data), "--predictions", str(preds)]) == 2
    assert capsys.readouterr().err == f"error: a prediction must be a string, got 1990 (in {preds}, record 'q2')\n"
    preds.write_text(json.dumps({"q1": "France", "q2": "France"}), encoding="utf-8")
    assert main(["evaluate", "--data", str(data), "--predictions", str(preds), "--na-probs", str(probs)]) == 2
    assert capsys.readouterr().err == (f"error: a no-answer probability or score must be a finite number, got \"0.25\" "
                                       f"(in {probs}, record 'q1')\n")


EXTRA_IDS = [f"old-{i}" for i in range(7)]  # as a published file made for an older copy of the data


def test_predictions_for_unknown_questions_are_ignored_with_a_warning_as_the_official_scorer(tmp_path, capsys):
    data = squad_file(tmp_path, [question("q1"), question("q2"), question("q3")])
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({"q1": "France", "old-0": "x", "q2": "the capital of France", **dict.fromkeys(EXTRA_IDS[1:], "y")}))
    assert main(["evaluate", "--data", str(data), "--predictions", str(preds)]) == 0
    captured = capsys.readouterr()
    # evaluate-v1.1.py by hand: q1 exact (1, 1); q2 "capital of france" against "france": EM 0,
    # F1 2 * 1/3 * 1 / (1/3 + 1) = 0.5; q3 has no prediction (0, 0); the old-* ids are never looked at
    assert json.loads(captured.out) == {"exact_match": pytest.approx(100 / 3), "f1": pytest.approx(50.0)}
    warning = next(line for line in captured.err.splitlines() if "not questions of the data" in line)
    assert warning.startswith("warning: 7 id(s) are not questions of the data: 'old-0', 'old-1', 'old-2', 'old-3', 'old-4', ...")
    assert str(preds) in warning and "--strict makes this an error" in warning
    assert "1 of 3 questions has no prediction" in captured.err


def test_loaders_leave_out_unknown_ids_and_warn_with_them(tmp_path):
    preds, probs = tmp_path / "preds.json", tmp_path / "na_probs.json"
    preds.write_text(json.dumps({"q1": "France", "other-7": ["not even a string"]}))  # an ignored value is never checked
    probs.write_text(json.dumps({"other-7": 0.5, "q1": 0.25}))
    with pytest.warns(UnknownIdsWarning, match="1 id.s. are not questions of the data: 'other-7'; ignored") as caught:
        assert load_predictions(preds, ["q1", "q2"]) == ({"q1": "France"}, ["q2"])
    assert caught[0].message.ids == ["other-7"] and caught[0].message.source == str(preds)
    assert caught[0].filename == __file__  # points at the caller, not into the package
    with pytest.warns(UnknownIdsWarning, match="other-7"):
        assert load_na_probs(probs, ["q1"]) == ({"q1": 0.25}, [])


def test_unknown_ids_are_an_error_under_strict(tmp_path, capsys):
    data = squad_file(tmp_path)
    preds, probs = tmp_path / "preds.json", tmp_path / "na_probs.json"
    preds.write_text(json.dumps({"q1": "France", "other-7": "x", "other-8": "y"}))
    probs.write_text(json.dumps({"q1": 0.1, "other-9": 0.5}))
    with pytest.raises(DataFormatError, match="2 id.s. are not questions of the data: 'other-7', 'other-8'") as info:
        load_predictions(preds, ["q1"], strict=True)
    assert info.value.record == "other-7" and info.value.source == str(preds)
    with pytest.raises(DataFormatError, match="1 id.s. are not questions of the data: 'other-9'"):
        load_na_probs(probs, ["q1"], strict=True)
    assert main(["evaluate", "--data", str(data), "--predictions", str(preds), "--strict"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: 2 id(s) are not questions of the data: 'other-7', 'other-8'") and str(preds) in err


def test_no_answer_probabilities_for_unknown_questions_are_ignored_too(tmp_path, capsys):
    data = squad_file(tmp_path, [question("q1"), {"id": "q2", "question": "?", "answers": [], "is_impossible": True}])
    preds, probs = tmp_path / "preds.json", tmp_path / "na_probs.json"
    preds.write_text(json.dumps({"q1": "France", "q2": ""}))
    probs.write_text(json.dumps({"q1": 0.1, "q2": 0.9, "gone": 0.3}))
    assert main(["evaluate", "--data", str(data), "--predictions", str(preds), "--na-probs", str(probs)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["exact"] == 100.0
    assert "warning: 1 id(s) are not questions of the data: 'gone'" in captured.err and str(probs) in captured.err


def test_missing_predictions_are_wrong_with_a_warning_or_an_error_under_strict(tmp_path, capsys):
    data = squad_file(tmp_path, [question("q1"), question("q2"), {"id": "q3", "question": "?", "answers": [], "is_impossible": True}])
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({"q1": "France"}))
    assert main(["evaluate", "--data", str(data), "--predictions", str(preds)]) == 0
    captured = capsys.readouterr()
    # v2.0 (q3 is unanswerable): q2 and q3 lack predictions and are wrong, even q3, where "" would be right
    assert json.loads(captured.out)["exact"] == pytest.approx(100 / 3)
    assert "2 of 3 questions have no prediction" in captured.err
    assert main(["evaluate", "--data", str(data), "--predictions", str(preds), "--strict"]) == 2
    assert "2 of 3 questions have no entry: 'q2', 'q3'" in capsys.readouterr().err


def test_a_predictions_file_that_shares_no_question_id_with_the_data_is_refused(tmp_path, capsys):
    """Every question would be missing, and scored as wrong: a 0 with warnings, where the file is of another data set.
    One shared id is enough for the rule above (the others scored as wrong)."""
    data = squad_file(tmp_path, [question("q1"), question("q2")])
    preds, probs = tmp_path / "preds.json", tmp_path / "na_probs.json"
    preds.write_text(json.dumps({"other-1": "France", "other-2": "x"}))
    assert main(["evaluate", "--data", str(data), "--predictions", str(preds)]) == 2
    assert capsys.readouterr().err == (f"error: no question id of {preds} is in {data}: a predictions file of another "
                                       "data set?\n")
    preds.write_text("{}")
    with pytest.raises(DataFormatError, match=r"^no question id of .* is in the data: the file is an empty object$"):
        load_predictions(preds, ["q1"])
    probs.write_text(json.dumps({"other-1": 0.5}))
    with pytest.raises(DataFormatError, match=r"^no question id of .* is in d\.json: a no-answer probability file of"):
        load_na_probs(probs, ["q1"], data="d.json")
    (tmp_path / "some.json").write_text(json.dumps({"q2": "France", "other-1": "x"}))
    with pytest.warns(UnknownIdsWarning):
        assert load_predictions(tmp_path / "some.json", ["q1", "q2"]) == ({"q2": "France"}, ["q1"])
    # an id past --limit (unscored) is the data's: the file is of this data set
    assert load_predictions(tmp_path / "some.json", ["q1"], unscored=["q2", "other-1"]) == ({}, ["q1"])


def test_missing_v2_predictions_score_as_wrong_never_as_abstaining():
    gold = {"a": ["x"], "b": []}
    result = squad_metrics(gold, {"a": "x"}, "2.0", {"a": 0.1}, missing_as_wrong=True)
    assert result["exact"] == 50.0 and result["NoAns_exact"] == 0.0
    assert result["best_exact"] == 50.0  # abstaining on "b" is not something the missing prediction did
    with pytest.raises(ValueError, match="1 of 2 questions has no prediction"):
        squad_metrics(gold, {"a": "x"}, "2.0")


def test_bad_prediction_values_are_named(tmp_path):
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({"q1": ["France"]}))
    with pytest.raises(DataFormatError, match="must be a string") as info:
        load_predictions(preds, ["q1"])
    assert info.value.record == "q1"
    preds.write_text(json.dumps({"q1": "France"}))
    with pytest.raises(DataFormatError, match="list of strings"):
        load_predictions(preds, ["q1"], multi_span=True)
    preds.write_text(json.dumps(["France"]))
    with pytest.raises(DataFormatError, match="entry 1 is a JSON string, not a record"):
        load_predictions(preds, ["q1"])
    preds.write_text(json.dumps({"q1": "high"}))
    with pytest.raises(DataFormatError, match=r"a no-answer probability or score must be a finite number, got \"high\"") as info:
        load_na_probs(preds, ["q1"])
    assert info.value.record == "q1"
    preds.write_text('{"q1": 1e999}')  # infinity: no threshold can place it
    with pytest.raises(DataFormatError, match=r"must be a finite number, got Infinity"):
        load_na_probs(preds, ["q1"])
    preds.write_text('{"q1": 1' + "0" * 400 + "}")  # an integer past the float range, as 1e999
    with pytest.raises(DataFormatError, match=r"must be a finite number, got 10000") as info:
        load_na_probs(preds, ["q1"])
    assert info.value.record == "q1"
    preds.write_text('{"q1": 1' + "0" * 5000 + "}")  # past Python's 4300-digit limit for reading an integer
    with pytest.raises(DataFormatError, match=r"a number too long to read \(Exceeds the limit \(4300 digits\)"):
        load_predictions(preds, ["q1"])


def test_a_nan_in_a_prediction_file_is_located(tmp_path):
    """json.dump writes a NaN no-answer probability as NaN, which was refused without saying where: in a file of
    thousands of questions it was not to be found. "NaN" inside a string is text, not the number."""
    probs = tmp_path / "na_probs.json"
    probs.write_text('{"NaN": 0.5,\n "a\\"NaN": NaN}')  # the number is on line 2, column 12
    with pytest.raises(DataFormatError, match=r"^NaN is not a JSON number") as info:
        load_na_probs(probs, ["NaN"])
    assert info.value.problem.endswith("(line 2, column 12)") and info.value.source == str(probs)
    probs.write_text('{"q1": "x", "q2": -Infinity}')
    with pytest.raises(DataFormatError, match=r"-Infinity is not a JSON number") as info:
        load_predictions(probs, ["q1", "q2"])
    assert info.value.problem.endswith("(line 1, column 19)")


def test_a_huge_prediction_value_is_shown_shortened(tmp_path):
    """A value of the wrong type was shown whole: an n-best file given as predictions, or an answer list of a
    million characters, made an error line of that length, the question's id at its end."""
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({"q1": ["x" * 1_000_000, "y"]}))
    with pytest.raises(DataFormatError, match="got the list of spans") as info:
        load_predictions(preds, ["q1"])
    assert info.value.record == "q1" and len(str(info.value)) < 1000
    with pytest.raises(DataFormatError, match="must be a finite number") as info:
        load_na_probs(preds, ["q1"])
    assert info.value.record == "q1" and len(str(info.value)) < 1000


def test_no_answer_scores_of_any_scale_are_read_as_the_official_script_reads_them(tmp_path, capsys):
    # BERT's null_odds.json: a log-odds score per question, negative or above 1
    data = squad_file(tmp_path, [question("q1"), {"id": "q2", "question": "?", "answers": [], "is_impossible": True}, question("q3")])
    preds, odds = tmp_path / "preds.json", tmp_path / "null_odds.json"
    preds.write_text(json.dumps({"q1": "France", "q2": "France", "q3": "Spain"}))
    odds.write_text(json.dumps({"q1": -4.0, "q2": 2.5, "q3": 7.25}))
    assert load_na_probs(odds, ["q1", "q2", "q3"]) == ({"q1": -4.0, "q2": 2.5, "q3": 7.25}, [])
    assert main(["evaluate", "--data", str(data), "--predictions", str(preds), "--na-probs", str(odds)]) == 0
    scores = json.loads(capsys.readouterr().out)
    # by the official rule (score > 1.0 abstains): q1 right, q2 abstains (right), q3 abstains (wrong): 2 of 3
    assert scores["exact"] == pytest.approx(200 / 3)
    # all abstaining scores 1; answering q1 (score -4) gives 2, q2 (2.5) 1, q3 (7.25) 1: the best is 2 at -4.0
    assert (scores["best_exact"], scores["best_exact_thresh"]) == (pytest.approx(200 / 3), -4.0)


def test_a_question_without_a_no_answer_score_answers_at_every_threshold(tmp_path, capsys):
    data = squad_file(tmp_path, [question("q1"), {"id": "q2", "question": "?", "answers": [], "is_impossible": True}, question("q3")])
    preds, odds = tmp_path / "preds.json", tmp_path / "null_odds.json"
    preds.write_text(json.dumps({"q1": "France", "q2": "France", "q3": "Spain"}))
    odds.write_text(json.dumps({"q1": -4.0, "q3": -3.0}))
    assert main(["evaluate", "--data", str(data), "--predictions", str(preds), "--na-probs", str(odds)]) == 0
    scores = json.loads(capsys.readouterr().out)
    # q2 (no score) answers, wrongly, at any threshold, even one below 0: never the abstention it would be scored for
    assert scores["best_exact"] == pytest.approx(100 / 3) and scores["exact"] == pytest.approx(100 / 3)


def _evaluate_with_an_unanswerable_q2(tmp_path, capsys, predictions: dict, na_probs: dict) -> tuple[dict, str]:
    """``evaluate --na-probs`` on q1 (answer France) and q2 (unanswerable): its scores, read as strict JSON, and stderr."""
    data = squad_file(tmp_path, [question("q1"), {"id": "q2", "question": "?", "answers": [], "is_impossible": True}])
    preds, probs = tmp_path / "preds.json", tmp_path / "na_probs.json"
    preds.write_text(json.dumps(predictions))
    probs.write_text(json.dumps(na_probs))
    assert main(["evaluate", "--data", str(data), "--predictions", str(preds), "--na-probs", str(probs)]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out, parse_constant=lambda name: pytest.fail(f"bare {name} in the JSON")), captured.err


def test_evaluate_writes_strict_json_when_the_best_threshold_is_minus_infinity(tmp_path, capsys):
    # q1 has no no-answer score (-inf: it answers at every threshold); q2 (unanswerable, answered wrongly) has 0.9.
    # Walk: start 1 (q2 abstains), q1 right: 2 (best, at -inf), q2 answered: 1. The threshold is -inf.
    scores, err = _evaluate_with_an_unanswerable_q2(tmp_path, capsys, {"q1": "France", "q2": "France"}, {"q2": 0.9})
    assert (scores["best_exact"], scores["best_exact_thresh"]) == (100.0, "-Infinity")
    assert "answer them at every threshold" in err and "take 0.0" not in err


def test_a_missing_v2_prediction_never_abstains_whatever_its_no_answer_score():
    gold = {"a": ["x"], "b": []}
    # b has no prediction but a no-answer score of 4.0, above the threshold 1.0: still wrong, not an abstention
    result = squad_metrics(gold, {"a": "x"}, "2.0", {"a": -3.0, "b": 4.0}, missing_as_wrong=True)
    assert (result["exact"], result["NoAns_exact"], result["HasAns_exact"]) == (50.0, 0.0, 100.0)
    # start 0 (b is no abstention), a at -3.0: 1 (best), b: 1: 50.0 at -3.0
    assert (result["best_exact"], result["best_exact_thresh"]) == (50.0, -3.0)
    # a wrong, b missing: no threshold makes anything right, "abstain everywhere" included
    result = squad_metrics(gold, {"a": "y"}, "2.0", {"a": 0.5}, missing_as_wrong=True)
    assert (result["best_exact"], result["best_f1"]) == (0.0, 0.0)


def test_an_unanswerable_question_without_a_no_answer_score_is_never_credited_as_abstaining(tmp_path, capsys):
    # q2 (unanswerable) has no score, so it answers "France" (wrong) at every threshold; q1 answers wrongly at 0.5.
    # No threshold makes anything right: best_exact 0, not the 50 of crediting q2 as abstaining at the start.
    scores, _ = _evaluate_with_an_unanswerable_q2(tmp_path, capsys, {"q1": "Paris", "q2": "France"}, {"q1": 0.5})
    assert (scores["best_exact"], scores["best_f1"], scores["best_exact_thresh"]) == (0.0, 0.0, "-Infinity")


# --- model folders -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def saved_model(tiny_encoder_dir, tmp_path_factory):
    return untrained_model_folder(tiny_encoder_dir, tmp_path_factory.mktemp("model"), max_seq_length=64, doc_stride=16,
                                  max_query_length=16)


def copy_model(saved_model, tmp_path, edit=None, drop=()):
    import shutil

    folder = tmp_path / "copy"
    shutil.copytree(saved_model, folder)
    for name in drop:
        (folder / name).unlink()
    if edit:
        config = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**config, **edit}))
    return folder


def load_fails(folder, match):
    from bio_mrc.inference import TrainedModel

    with pytest.raises(ModelFormatError, match=match) as info:
        TrainedModel.load(folder)
    assert info.value.source == str(folder) and isinstance(info.value, BioMrcError)


def test_model_folders_that_cannot_be_run(saved_model, tiny_encoder_dir, tmp_path):
    from bio_mrc.inference import TrainedModel

    assert TrainedModel.load(saved_model).model.config.bio_mrc_format == 1
    load_fails(tmp_path / "nowhere", "no such model folder")
    load_fails(tmp_path, "no config.json")
    load_fails(tiny_encoder_dir, "a bert model, not a bio_mrc model")
    load_fails(copy_model(saved_model, tmp_path, edit={"bio_mrc_format": 99}),
               r"^config.json: bio_mrc_format: written by a newer bio_mrc \(model format 99\); this bio_mrc .* reads formats up to 1: upgrade bio_mrc")
    for number, bad in enumerate((True, 0, -1, 1.0, "1", None)):
        load_fails(copy_model(saved_model, tmp_path / f"f{number}", edit={"bio_mrc_format": bad}),
                   rf"^config.json: bio_mrc_format: model format {re.escape(json.dumps(bad))} is not one bio_mrc writes")
    load_fails(copy_model(saved_model, tmp_path / "w", drop=["model.safetensors"]), "no weights")
    unwindowed = copy_model(saved_model, tmp_path / "u", edit={"max_seq_length": None, "doc_stride": None, "max_query_length": None})
    load_fails(unwindowed, r"lacks the window settings \['max_seq_length', 'doc_stride', 'max_query_length'\]: set them in config.json")
    assert TrainedModel.load(saved_model).features.max_seq_length == 64  # the config's own, not a default


def test_a_tokenizer_without_offset_mappings_is_refused(monkeypatch, saved_model):
    import transformers

    from bio_mrc.encoders import load_tokenizer

    class SlowTokenizer:
        is_fast = False

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *a, **k: SlowTokenizer())
    with pytest.raises(ModelFormatError, match="SlowTokenizer.*not a fast tokenizer.*offset mappings"):
        load_tokenizer(str(saved_model))


def test_cli_names_a_bad_model_folder(tiny_encoder_dir, tmp_path, capsys):
    data = squad_file(tmp_path)
    code = main(["predict", "--model", str(tiny_encoder_dir), "--data", str(data), "--output", str(tmp_path / "p.json")])
    assert code == 2
    err = capsys.readouterr().err
    assert "not a bio_mrc model" in err and str(tiny_encoder_dir) in err and "Traceback" not in err


def test_a_bad_comparison_config_is_named(tmp_path):
    from bio_mrc.harness.config import load_config

    path = tmp_path / "ablation.json"
    path.write_text(json.dumps({"runs": [{"name": "a", "heads_": "span"}], "train": {"path": "x"}, "eval": {"path": "y"}}))
    with pytest.raises(DataFormatError, match="runs\\[0\\]: unknown key \"heads_\" \\(did you mean \"heads\"\\?\\)") as info:
        load_config(path)
    assert info.value.source == str(path)
    path.write_text('{"runs": [')
    with pytest.raises(DataFormatError, match="truncated"):
        load_config(path)
    with pytest.raises(DataFormatError, match="no such config file"):
        load_config(tmp_path / "missing.json")


def test_missing_no_answer_probabilities_are_named_in_a_warning_or_an_error_under_strict(tmp_path, capsys):
    data = squad_file(tmp_path, [question("q1"), {"id": "q2", "question": "?", "answers": [], "is_impossible": True}, question("q3")])
    preds, probs = tmp_path / "preds.json", tmp_path / "na_probs.json"
    preds.write_text(json.dumps({"q1": "France", "q2": "", "q3": "France"}))
    probs.write_text(json.dumps({"q1": 0.1}))
    assert main(["evaluate", "--data", str(data), "--predictions", str(preds), "--na-probs", str(probs)]) == 0
    err = capsys.readouterr().err
    assert "warning: 2 of 3 questions have no no-answer probability" in err and "'q2'" in err and str(probs) in err
    assert main(["evaluate", "--data", str(data), "--predictions", str(preds), "--na-probs", str(probs), "--strict"]) == 2
    assert "2 of 3 questions have no entry: 'q2', 'q3'" in capsys.readouterr().err


def test_a_repeated_key_is_refused_never_a_value_dropped(tmp_path):
    from bio_mrc.data.squad import load_squad

    one = {"id": "q1", "question": "Where?", "answers": [{"text": "France", "answer_start": 0}]}
    article = {"title": "t", "paragraphs": [{"context": "France is a country.", "qas": [one]}]}
    path = tmp_path / "two_data_keys.json"
    path.write_text('{"version": "1.1", "data": [], "data": ' + json.dumps([article]) + "}")
    with pytest.raises(DataFormatError, match='the key "data" appears twice in one object') as info:
        load_squad(str(path))
    assert info.value.source == str(path)
    rows = tmp_path / "rows.jsonl"
    row = json.dumps({"id": "q1", "context": "France is a country.", "question": "Where?",
                      "answers": {"text": ["France"], "answer_start": [0]}})
    repeated = row.replace('"q1"', '"q2"')[:-1] + ', "answers": {"text": ["x"], "answer_start": [0]}}'
    rows.write_text(row + "\n" + repeated + "\n")
    column = repeated.rindex('"answers"') + 1
    with pytest.raises(DataFormatError, match=rf'the key "answers" appears twice in one object .*\(line 2, column {column}\)'):
        load_squad(str(rows))


def test_file_names_reach_the_terminal_without_control_sequences(tmp_path, capsys):
    data = squad_file(tmp_path, [question("q1"), question("q2", start=3), question("q3")], name="dev\x1b[2J.json")
    preds = tmp_path / "p\x1b]0;title\x07.json"
    preds.write_text(json.dumps({"zz": "France", "q3": "France"}))
    assert main(["evaluate", "--data", str(data), "--predictions", str(preds), "--skip-invalid"]) == 0
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    shown_data, shown_preds = str(tmp_path) + "/dev\\x1b[2J.json", str(tmp_path) + "/p\\x1b]0;title\\x07.json"
    assert 'skipped: answer "France" is not at answer_start 3; the text does occur at 24' in err and f"(in {shown_data}, record 'q2')" in err
    assert f"warning: skipped 1 invalid question of {shown_data}\n" in err
    assert f"ignored, as the official SQuAD scripts do (in {shown_preds}) (--strict makes this an error)\n" in err
    assert f"warning: 1 of 2 questions has no prediction in {shown_preds} (e.g. 'q1')" in err
    assert main(["evaluate", "--data", str(tmp_path / "gone\x1b[2J\n.json"), "--predictions", str(preds)]) == 2
    err = capsys.readouterr().err  # the error is one line, its file named with the controls escaped
    assert err.startswith("error: ") and err.count("\n") == 1 and "\x1b" not in err and "gone\\x1b[2J\\n.json" in err
