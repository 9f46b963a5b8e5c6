"""``evaluate`` reads the predictions layouts other tools write, told from the file's content: Hugging Face
evaluate's squad / squad_v2 records in a JSON list, JSON Lines of records, and gzip-compressed files. Each scores
as the same predictions in the official layout, whose scores are computed by hand below."""

import gzip
import json

import pytest

from bio_mrc.cli import main
from bio_mrc.data.json_reader import DataFormatError

CONTEXT = "Paris is the capital of France."
ANSWERS = {"q1": "France", "q2": "Paris France", "q3": ""}
NA_PROBS = {"q1": 0.1, "q2": 0.2, "q3": 0.9}
# q1 right; q2 "paris france" against "paris": precision 1/2, recall 1, F1 2/3, not exact; q3 rightly abstains
HAND = {"exact": 100 * 2 / 3, "f1": 100 * (1 + 2 / 3 + 1) / 3, "HasAns_exact": 50.0, "HasAns_f1": 100 * (1 + 2 / 3) / 2,
        "NoAns_exact": 100.0}
# best_exact: from 1 (the unanswerable q3 abstaining at every threshold) q1 adds 1 at 0.1, q2 adds 0, q3 abstains
BEST = {"best_exact": 100 * 2 / 3, "best_exact_thresh": 0.1}


def data_file(tmp_path):
    qas = [{"id": "q1", "question": "Where?", "answers": [{"text": "France", "answer_start": 24}]},
           {"id": "q2", "question": "What?", "answers": [{"text": "Paris", "answer_start": 0}]},
           {"id": "q3", "question": "Who?", "answers": [], "is_impossible": True}]
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"version": "v2.0", "data": [{"title": "T", "paragraphs": [{"context": CONTEXT, "qas": qas}]}]}))
    return path


def write(path, text, compress=False):
    path.write_bytes(gzip.compress(text.encode()) if compress else text.encode())
    return path


def evaluate(capsys, data, predictions, *options):
    argv = ["evaluate", "--data", str(data), "--predictions", str(predictions), *map(str, options)]
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def refused(capsys, data, predictions, *options):
    assert main(["evaluate", "--data", str(data), "--predictions", str(predictions), *map(str, options)]) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()  # one line, no traceback
    assert not captured.out
    return line


@pytest.fixture
def official(tmp_path, capsys):
    """The data, and the official layout's scores without and with the no-answer probabilities."""
    data = data_file(tmp_path)
    plain = evaluate(capsys, data, write(tmp_path / "preds.json", json.dumps(ANSWERS)))
    with_probs = evaluate(capsys, data, tmp_path / "preds.json", "--na-probs",
                          write(tmp_path / "na.json", json.dumps(NA_PROBS)))
    for scores in (plain, with_probs):
        assert {key: scores[key] for key in HAND} == pytest.approx(HAND)
    assert {key: with_probs[key] for key in BEST} == pytest.approx(BEST)
    return data, plain, with_probs


def test_hugging_face_squad_records_score_as_the_official_file(tmp_path, capsys, official):
    data, plain, _ = official
    records = [{"id": qid, "prediction_text": text} for qid, text in ANSWERS.items()]
    assert evaluate(capsys, data, write(tmp_path / "hf.json", json.dumps(records, indent=2))) == plain


def test_hugging_face_squad_v2_records_give_their_no_answer_probabilities(tmp_path, capsys, official):
    data, _, with_probs = official
    records = [{"id": qid, "prediction_text": text, "no_answer_probability": NA_PROBS[qid]} for qid, text in ANSWERS.items()]
    hf = write(tmp_path / "hf.json", json.dumps(records))
    assert evaluate(capsys, data, hf) == with_probs
    line = refused(capsys, data, hf, "--na-probs", tmp_path / "na.json")  # given twice: which is meant is not known
    assert line == (f"error: --na-probs: {hf} gives a no_answer_probability with its answers (Hugging Face's squad_v2 "
                    f"layout), so the probabilities would be given twice; drop --na-probs {tmp_path / 'na.json'}, or the "
                    f"no_answer_probability of {hf}")


@pytest.mark.parametrize("key", ["prediction_text", "prediction", "answer"])
def test_json_lines_records_score_as_the_official_file(tmp_path, capsys, official, key):
    data, plain, _ = official
    lines = "".join(json.dumps({"id": qid, key: text, "score": 1.5}) + "\n" for qid, text in ANSWERS.items())
    assert evaluate(capsys, data, write(tmp_path / "preds.jsonl", lines)) == plain
    assert evaluate(capsys, data, write(tmp_path / "preds.json", "\n" + lines + "\n\n")) == plain  # by content, not name


def test_gzip_prediction_and_na_prob_files_are_read_decompressed(tmp_path, capsys, official):
    data, plain, with_probs = official
    preds = write(tmp_path / "preds.json.gz", json.dumps(ANSWERS), compress=True)
    probs = write(tmp_path / "na.json.gz", json.dumps(NA_PROBS), compress=True)
    assert evaluate(capsys, data, preds) == plain
    assert evaluate(capsys, data, preds, "--na-probs", probs) == with_probs
    lines = "".join(json.dumps({"id": q, "answer": t, "no_answer_probability": NA_PROBS[q]}) + "\n" for q, t in ANSWERS.items())
    assert evaluate(capsys, data, write(tmp_path / "preds.jsonl.gz", lines, compress=True)) == with_probs
    assert evaluate(capsys, data, write(tmp_path / "renamed.json", json.dumps(ANSWERS), compress=True)) == plain
    cut = write(tmp_path / "cut.json.gz", json.dumps(ANSWERS), compress=True)
    cut.write_bytes(cut.read_bytes()[:-12])
    assert refused(capsys, data, cut) == f"error: the gzip stream ends early (a truncated file?) (in {cut})"


def test_an_ambiguous_or_incomplete_record_is_refused_naming_its_line(tmp_path, capsys, official):
    data = official[0]
    both = '{"id": "q1", "answer": "France"}\n{"id": "q2", "prediction": "Paris", "answer": "Paris"}\n'
    line = refused(capsys, data, write(tmp_path / "both.jsonl", both))
    assert line == ("error: line 2 gives an answer under both 'prediction' and 'answer', so which one is meant is not known; "
                    f"keep one (in {tmp_path / 'both.jsonl'}, record 'q2')")
    no_id = '{"id": "q1", "answer": "France"}\n\n{"qid": "q2", "answer": "Paris"}\n'
    assert refused(capsys, data, write(tmp_path / "no_id.jsonl", no_id)).startswith("error: line 3 has no 'id': a record is ")
    no_answer = [{"id": "q1", "prediction_text": "France"}, {"id": "q2", "text": "Paris"}]
    line = refused(capsys, data, write(tmp_path / "list.json", json.dumps(no_answer)))
    assert line.startswith("error: entry 2 has no answer: a record gives it under one of 'prediction_text', 'prediction' or")
    assert refused(capsys, data, write(tmp_path / "empty.json", "[]")) == (
        f'error: the file is an empty list: it holds no prediction record {{"id": ..., "prediction_text": ...}} (in {tmp_path / "empty.json"})')


def test_an_id_given_twice_is_refused_naming_both_records(tmp_path, capsys, official):
    data = official[0]
    lines = '{"id": "q1", "answer": "France"}\n{"id": "q2", "answer": "Paris"}\n{"id": "q1", "answer": ""}\n'
    assert refused(capsys, data, write(tmp_path / "twice.jsonl", lines)) == (
        f"error: the id \"q1\" is given on line 1 and again on line 3: a question has one prediction (in {tmp_path / 'twice.jsonl'}, record 'q1')")
    records = [{"id": "q2", "prediction_text": "Paris"}, {"id": "q2", "prediction_text": "France"}]
    assert "given on entry 1 and again on entry 2" in refused(capsys, data, write(tmp_path / "twice.json", json.dumps(records)))


def test_a_single_record_is_one_line_of_json_lines_not_an_official_file(tmp_path):
    from bio_mrc.data.prediction_layouts import read_prediction_file

    read = read_prediction_file(write(tmp_path / "one.jsonl", '{"id": "q1", "prediction": "France"}\n'))
    assert (read.answers, read.na_probs, read.layout) == ({"q1": "France"}, None, "JSON Lines")
    read = read_prediction_file(write(tmp_path / "official.json", '{"q1": "France", "q2": ""}'))
    assert (read.answers, read.layout) == ({"q1": "France", "q2": ""}, "official")


def test_a_null_prediction_says_how_an_abstention_is_written(tmp_path, capsys, official):
    data = official[0]
    path = write(tmp_path / "null.json", json.dumps({**ANSWERS, "q3": None}))
    assert refused(capsys, data, path) == ('error: a prediction must be a string, got null: an abstention is written as "", '
                                           "the empty string, as the official SQuAD v2.0 script reads it "
                                           f"(in {path}, record 'q3')")
    records = write(tmp_path / "null.jsonl", "".join(json.dumps({"id": q, "answer": None}) + "\n" for q in ANSWERS))
    assert "got null: an abstention is written as \"\"" in refused(capsys, data, records)


def test_a_compressed_answers_stream_is_refused_as_the_stream(tmp_path, capsys, official):
    data = official[0]
    stream = "".join(json.dumps({"id": q, "decoding": "span", "answer": t}) + "\n" for q, t in ANSWERS.items())
    line = refused(capsys, data, write(tmp_path / "preds.answers.jsonl.gz", stream, compress=True))
    assert line.startswith("error: line 1 is a line of predict's answers stream (one line per question and decoding)")


def test_record_probabilities_on_multispanqa_are_refused_not_ignored(tmp_path, capsys):
    record = {"id": "m0", "question": ["who", "sang", "?"], "context": ["Dave", "and", "Barbara", "sang", "."],
              "label": ["B", "O", "B", "O", "O"]}
    (tmp_path / "ms.json").write_text(json.dumps({"data": [record]}))
    preds = write(tmp_path / "preds.json", json.dumps([{"id": "m0", "prediction_text": ["Dave"], "no_answer_probability": 0.2}]))
    line = refused(capsys, tmp_path / "ms.json", preds)
    assert line.startswith(f"error: the no_answer_probability of {preds}: no-answer probabilities are for SQuAD's official")
    preds = write(tmp_path / "preds.json", json.dumps([{"id": "m0", "prediction_text": ["Dave", "Barbara"]}]))
    assert evaluate(capsys, tmp_path / "ms.json", preds)["em_f1"] == 100.0


def test_the_loaders_read_every_layout(tmp_path):
    from bio_mrc.data.prediction_layouts import read_prediction_file
    from bio_mrc.data.predictions import load_na_probs, load_predictions

    path = write(tmp_path / "hf.json.gz", json.dumps([{"id": "q1", "prediction_text": "x", "no_answer_probability": 0.5}]),
                 compress=True)
    assert load_predictions(path, ["q1"]) == ({"q1": "x"}, [])
    assert load_na_probs(read_prediction_file(path), ["q1"]) == ({"q1": 0.5}, [])
    with pytest.raises(DataFormatError, match="it is a list of prediction records; give it as predictions, "):
        load_na_probs(path, ["q1"])


# --- files over the size limit: a small gzip file can hold gigabytes ---------------------------------------

def test_a_gzip_bomb_is_refused_once_past_the_limit_decompressed_never_held_whole(tmp_path, capsys, official, monkeypatch):
    """300,000 bytes of blanks after the answers compress to about 400 bytes; past BIO_MRC_MAX_JSON_BYTES the reading
    stops (gzip.decompress held the whole file first, whatever its size)."""
    from bio_mrc.data import json_reader

    data, plain, with_probs = official
    held: list[int] = []

    class CountedGzipFile(gzip.GzipFile):
        def read(self, size=-1):
            held.append(len(chunk := super().read(size)))
            return chunk

    monkeypatch.setattr(json_reader.gzip, "GzipFile", CountedGzipFile)
    bomb = write(tmp_path / "bomb.json.gz", json.dumps(ANSWERS) + " " * 300_000, compress=True)
    probs = write(tmp_path / "na.json.gz", json.dumps(NA_PROBS) + " " * 300_000, compress=True)
    assert bomb.stat().st_size < 1_000
    monkeypatch.setenv("BIO_MRC_MAX_JSON_BYTES", "100000")
    assert refused(capsys, data, bomb) == (f"error: the file is larger than 100,000 bytes decompressed "
                                           f"(BIO_MRC_MAX_JSON_BYTES raises the limit) (in {bomb})")
    assert sum(held) <= 100_001 + 2  # the limit and one, after the two bytes that tell gzip
    assert refused(capsys, data, tmp_path / "preds.json", "--na-probs", probs) == (
        f"error: the file is larger than 100,000 bytes decompressed (BIO_MRC_MAX_JSON_BYTES raises the limit) (in {probs})")
    monkeypatch.setenv("BIO_MRC_MAX_JSON_BYTES", "400000")
    assert evaluate(capsys, data, bomb, "--na-probs", probs) == with_probs


def test_a_plain_predictions_file_over_the_limit_is_refused_unread(tmp_path, capsys, official, monkeypatch):
    data, plain, _ = official
    big = write(tmp_path / "big.json", json.dumps(ANSWERS) + " " * 2_000)
    monkeypatch.setenv("BIO_MRC_MAX_JSON_BYTES", "1000")
    assert refused(capsys, data, big) == f"error: the file is larger than 1,000 bytes (BIO_MRC_MAX_JSON_BYTES raises the limit) (in {big})"
    monkeypatch.setenv("BIO_MRC_MAX_JSON_BYTES", "1e9")
    assert refused(capsys, data, big) == "error: BIO_MRC_MAX_JSON_BYTES='1e9': a positive whole number is needed (default 1073741824)"
    monkeypatch.setenv("BIO_MRC_MAX_JSON_BYTES", "3000")
    assert evaluate(capsys, data, big) == plain


@pytest.mark.parametrize(("answers", "said"), [
    ({"q1": True, "q2": "x"}, "a prediction must be a string, got true"),
    ({"q1": ["Ada", None], "q2": "x"}, "a prediction must be a string, got the list of spans [\"Ada\", null]"),
    ({"q1": {"text": False}, "q2": "x"}, 'a prediction must be a string, got {"text": false}'),
])
def test_a_prediction_of_the_wrong_kind_is_quoted_as_the_json_file_spells_it(tmp_path, answers, said):
    """The file holds true, false and null: a message showing True, False and None named values it does not hold."""
    from bio_mrc.data.predictions import load_predictions

    path = tmp_path / "preds.json"
    path.write_text(json.dumps(answers), encoding="utf-8")
    with pytest.raises(DataFormatError) as caught:
        load_predictions(path, ["q1", "q2"])
    assert caught.value.problem.startswith(said)
    assert caught.value.record == "q1"


def test_a_no_answer_probability_of_null_is_quoted_as_null(tmp_path):
    from bio_mrc.data.predictions import load_na_probs

    path = tmp_path / "na.json"
    path.write_text('{"q1": null, "q2": 0.5}', encoding="utf-8")
    with pytest.raises(DataFormatError) as caught:
        load_na_probs(path, ["q1", "q2"])
    assert caught.value.problem == "a no-answer probability or score must be a finite number, got null"
