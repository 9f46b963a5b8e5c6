"""``bio-mrc predict`` streams: chunks of questions in, answer lines out, files from the lines; resumable."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bio_mrc import registry
from bio_mrc.cli import main
from bio_mrc.data.squad import load_squad
from bio_mrc.io import file_sha256

from .conftest import SAMPLE_V1, StoppedReplace, offline_hub

CALIBRATOR = {"method": "beta", "a": 2.0, "b": 1.0, "c": 0.5, "correct_if": "f1 > 0.5"}


@pytest.fixture(scope="module")
def model_dir(trained_dir, tmp_path_factory):
    """A copy of the session's joint model, calibrated as ``tune`` calibrates."""
    out = shutil.copytree(trained_dir, tmp_path_factory.mktemp("stream-model") / "model")
    config = json.loads((out / "config.json").read_text())
    config["calibration"] = {decoding: CALIBRATOR for decoding in ("span", "bio", "joint")}
    (out / "config.json").write_text(json.dumps(config))
    return out


def predict(model_dir, output, *options, data=SAMPLE_V1) -> int:
    return main(["predict", "--model", str(model_dir), "--data", str(data), "--output", str(output),
                 "--precision", "fp32", *options])


def many_questions(path: Path, copies: int) -> Path:
    """The sample's questions ``copies`` times over, each copy with its own ids (official SQuAD JSON)."""
    raw = json.loads(SAMPLE_V1.read_text(encoding="utf-8"))
    articles = []
    for copy in range(copies):
        for article in raw["data"]:
            paragraphs = [{**paragraph, "qas": [{**qa, "id": f"{qa['id']}-{copy}"} for qa in paragraph["qas"]]}
                          for paragraph in article["paragraphs"]]
            articles.append({**article, "paragraphs": paragraphs})
    path.write_text(json.dumps({"version": "1.1", "data": articles}), encoding="utf-8")
    return path


def contents(folder: Path) -> dict[str, bytes]:
    """Every file of ``folder`` by name (a stray temporary file too)."""
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


@pytest.mark.parametrize("multi_span", [False, True])
def test_the_files_hold_the_extractors_answers_with_confidence_and_probability(model_dir, tmp_path, multi_span):
    from bio_mrc.inference import AnswerExtractor

    flag = ["--multi-span"] if multi_span else []
    assert predict(model_dir, tmp_path / "p.json", "--decoding", "span", "bio", "joint", *flag) == 0
    examples = load_squad(SAMPLE_V1).examples
    lines = [json.loads(line) for line in (tmp_path / "p.answers.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(r["id"], r["decoding"]) for r in lines] == [(ex.id, d) for ex in examples for d in ("span", "bio", "joint")]
    for decoding in ("span", "bio", "joint"):
        extractor = AnswerExtractor.from_pretrained(model_dir, precision="fp32", decoding=decoding, multi_span=multi_span)
        expected = extractor.predict(extractor.trained.windows(examples), examples)
        nbest = json.loads((tmp_path / f"p.{decoding}.nbest.json").read_text(encoding="utf-8"))
        assert nbest == {p.id: p.to_dict() for p in expected}
        official = json.loads((tmp_path / f"p.{decoding}.json").read_text(encoding="utf-8"))
        assert official == {p.id: p.answers if multi_span else p.answer for p in expected}
        assert all(entry["probability"] is not None and entry["confidence"] is not None for entry in nbest.values())
    for record, example in zip(lines[::3], examples):  # each answer's offsets point at its text, every span's too
        assert example.context[record["start"]: record["end"]] == record["answer"]
        assert all(example.context[s["start"]: s["end"]] == s["text"] for s in record["spans"])
        assert (record["answers"] == [s["text"] for s in record["spans"]]) if multi_span else "answers" not in record


def test_the_answers_do_not_depend_on_the_chunk_size(model_dir, tmp_path):
    for size in ("1", "3", "1000"):
        assert predict(model_dir, tmp_path / size / "p.json", "--decoding", "joint", "--chunk-size", size) == 0
    answers = [json.loads((tmp_path / size / "p.json").read_text()) for size in ("1", "3", "1000")]
    assert answers[0] == answers[1] == answers[2] and len(answers[0]) == 8


@pytest.mark.parametrize("cut", ["inside a line", "after a whole chunk", "inside the first chunk", "after every line"])
def test_a_resumed_run_skips_the_answered_chunks_and_ends_byte_identical(model_dir, tmp_path, monkeypatch, cut):
    import bio_mrc.inference.streaming as streaming

    options = ["--decoding", "span", "joint", "--chunk-size", "3"]
    assert predict(model_dir, tmp_path / "full" / "p.json", *options) == 0
    full = contents(tmp_path / "full")
    lines = full["p.answers.jsonl"].splitlines(keepends=True)  # 2 lines a question, 3 questions a chunk
    kept = {"inside a line": b"".join(lines[:7]) + lines[7][:20], "after a whole chunk": b"".join(lines[:6]),
            "inside the first chunk": b"".join(lines[:3]), "after every line": b"".join(lines)}[cut]
    (tmp_path / "resumed").mkdir()
    (tmp_path / "resumed" / "p.answers.jsonl").write_bytes(kept)
    answered = []
    original = streaming.chunk_lines
    monkeypatch.setattr(streaming, "chunk_lines", lambda trained, chunk, plan: answered.extend(ex.id for ex in chunk) or
                        original(trained, chunk, plan))
    assert predict(model_dir, tmp_path / "resumed" / "p.json", *options, "--resume") == 0
    assert contents(tmp_path / "resumed") == full
    ids = [ex.id for ex in load_squad(SAMPLE_V1).examples]
    first_redone = {"inside a line": 3, "after a whole chunk": 3, "inside the first chunk": 0, "after every line": 6}[cut]
    assert answered == ids[first_redone:]  # whole chunks only: the last one (2 questions) is never whole in the middle


def strict_json(text: str | bytes):
    """``text`` read as JSON, refusing ``NaN``, ``Infinity`` and ``-Infinity``, which Python's reader takes."""

    def refuse(constant: str):
        raise ValueError(f"{constant} is no JSON number")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("kept_in", ["p.answers.jsonl", "p.answers.partial.jsonl"])
def test_a_resumed_stream_of_an_earlier_version_ends_strict_json_and_byte_identical(model_dir, tmp_path, monkeypatch, kept_in):
    """An earlier version wrote a question no span survives for with ``"no_answer_score": Infinity`` (a confidence of no
    finite value as ``NaN``) where this one writes null: a --resume kept those lines' bytes, so the stream and the
    n-best file it ended with were no strict JSON and differed from a run never interrupted."""
    import math

    import bio_mrc.inference.streaming as streaming
    from bio_mrc.types import Prediction

    lost, original = load_squad(SAMPLE_V1).examples[1].id, streaming.answer_record
    monkeypatch.setattr(streaming, "answer_record", lambda prediction, decoding, multi_span=False: original(
        Prediction(lost, [], math.inf, confidence=math.nan) if prediction.id == lost else prediction, decoding, multi_span))
    options = ["--decoding", "span", "joint", "--chunk-size", "3"]
    assert predict(model_dir, tmp_path / "full" / "p.json", *options) == 0
    full = contents(tmp_path / "full")
    lines = full["p.answers.jsonl"].splitlines(keepends=True)  # 2 lines a question, 3 questions a chunk
    today = b'"no_answer_score": null, "confidence": null'
    assert [today in line for line in lines[:6]] == [False, False, True, True, False, False]
    earlier = [line.replace(today, b'"no_answer_score": Infinity, "confidence": NaN') for line in lines[:6]]
    (tmp_path / "resumed").mkdir()
    (tmp_path / "resumed" / kept_in).write_bytes(b"".join(earlier) + lines[6][:20])
    assert predict(model_dir, tmp_path / "resumed" / "p.json", *options, "--resume") == 0
    resumed = contents(tmp_path / "resumed")
    assert [strict_json(line) for line in resumed["p.answers.jsonl"].splitlines()]
    assert all(strict_json(data) for name, data in resumed.items() if name.endswith(".json"))
    assert resumed == full


@pytest.mark.parametrize("value", ["Infinity", "-Infinity", "NaN"])
def test_resume_refuses_a_kept_span_score_of_no_finite_value_and_leaves_the_stream(tmp_path, value):
    """An earlier version decoded a model's scores of no finite value into spans; this one refuses such a question
    (ModelOutputError), so no line it writes stands for the kept one."""
    from bio_mrc.errors import DataFormatError
    from bio_mrc.inference.files import answer_record
    from bio_mrc.inference.streaming import resume_point
    from bio_mrc.io import printable_json
    from bio_mrc.types import AnswerSpan, Prediction

    line = printable_json(answer_record(Prediction("q1", [AnswerSpan("Alpha", 0, 5, 0.5)], -1.0), "span")) + "\n"
    stream = tmp_path / "preds.answers.jsonl"
    stream.write_text(line.replace('"score": 0.5', f'"score": {value}'), encoding="utf-8")
    before = stream.read_bytes()
    with pytest.raises(DataFormatError) as refused:
        resume_point(stream, ["span"], 1)
    assert str(refused.value) == (f"line 1 has spans[0].score {value}, no number this version writes (it refuses a model's "
                                  f"scores of no finite value): start again without resume=True (in {stream})")
    assert stream.read_bytes() == before


@pytest.mark.slow
def test_a_killed_predict_resumes_to_the_same_bytes(model_dir, tmp_path):
    data = many_questions(tmp_path / "many.json", copies=25)  # 200 questions
    options = ["--decoding", "span", "--chunk-size", "8"]
    assert predict(model_dir, tmp_path / "full" / "p.json", *options, data=data) == 0
    full = contents(tmp_path / "full")
    stream = tmp_path / "killed" / "p.answers.partial.jsonl"  # the run's stream, until its files are written
    command = [sys.executable, "-m", "bio_mrc.cli", "predict", "--model", str(model_dir), "--data", str(data),
               "--output", str(tmp_path / "killed" / "p.json"), "--precision", "fp32", *options]
    killed_once_it_streams(command, stream, questions=200)
    assert predict(model_dir, tmp_path / "killed" / "p.json", *options, "--resume", data=data) == 0
    assert contents(tmp_path / "killed") == full


def killed_once_it_streams(command: list[str], stream: Path, questions: int) -> None:
    """Runs ``command`` (a ``predict``) and kills it with SIGKILL once its answers stream holds a line: mid-run, some
    chunks written and the rest not."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while process.poll() is None and time.monotonic() < deadline:
        if stream.is_file() and stream.stat().st_size > 0:
            process.send_signal(signal.SIGKILL)
            break
        time.sleep(0.05)
    process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL and 0 < len(stream.read_bytes().splitlines()) < questions


def test_resume_refuses_a_stream_of_other_options_or_questions(model_dir, tmp_path, capsys):
    assert predict(model_dir, tmp_path / "p.json", "--decoding", "span", "--chunk-size", "2") == 0
    assert predict(model_dir, tmp_path / "p.json", "--decoding", "bio", "--resume", "--chunk-size", "2") == 2
    assert "resume with the same options" in capsys.readouterr().err
    for limit in ("5", "2"):  # the first questions again, but fewer: the stream answers questions the data lacks
        assert predict(model_dir, tmp_path / "p.json", "--decoding", "span", "--resume", "--chunk-size", "2", "--limit", limit) == 2
        assert "where the data" in capsys.readouterr().err


def test_resume_refuses_a_stream_made_with_another_model_option_chunk_size_or_data_file(model_dir, tmp_path, capsys):
    """The stream's record of what it was made with: each difference is refused in one line naming it."""
    options = ["--decoding", "span", "--chunk-size", "2"]
    assert predict(model_dir, tmp_path / "p.json", *options, "--limit", "4") == 0
    record = json.loads((tmp_path / "p.answers.run.json").read_text(encoding="utf-8"))
    assert record["max_answer_length"] != 3 and record["chunk_size"] == 2
    assert record["data"] == f"{SAMPLE_V1.resolve()}, {SAMPLE_V1.stat().st_size} bytes, sha256 {file_sha256(SAMPLE_V1)[:16]}"
    stream = (tmp_path / "p.answers.jsonl").read_bytes()
    other_data = tmp_path / "copy.json"
    other_data.write_bytes(SAMPLE_V1.read_bytes())
    refusals = {("--max-answer-length", "3"): "--max-answer-length 30, this run has 3",
                ("--chunk-size", "1"): "--chunk-size 2, this run has 1", ("--n-best", "2"): "--n-best 20, this run has 2"}
    for changed, named in refusals.items():
        assert predict(model_dir, tmp_path / "p.json", *options, *changed, "--resume") == 2
        errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and errors[0].startswith(f"error: the answers stream was made with {named}"), errors
    assert predict(model_dir, tmp_path / "p.json", *options, "--resume", data=other_data) == 2
    data = record["data"]
    assert f'made with --data "{data}", this run has "{other_data}, {SAMPLE_V1.stat().st_size} bytes, sha256 ' in capsys.readouterr().err
    edited = tmp_path / "edited.json"  # the same ids, a question edited: other data at the same path
    edited.write_text(SAMPLE_V1.read_text(encoding="utf-8").replace("Normandy located?", "Normandy located ?", 1), encoding="utf-8")
    assert predict(model_dir, tmp_path / "e.json", *options, "--limit", "4", data=edited) == 0
    edited.write_text(SAMPLE_V1.read_text(encoding="utf-8"), encoding="utf-8")
    assert predict(model_dir, tmp_path / "e.json", *options, "--resume", data=edited) == 2
    assert 'bytes, sha256 ' in capsys.readouterr().err
    assert (tmp_path / "p.answers.jsonl").read_bytes() == stream  # refused before the stream was touched
    assert predict(model_dir, tmp_path / "p.json", *options, "--resume") == 0  # the same ones resume: more questions
    assert len(json.loads((tmp_path / "p.json").read_text())) == 8


def test_resume_refuses_other_options_data_or_model_before_the_model_loads(model_dir, tmp_path, capsys, monkeypatch):
    """A resume with other options or data was refused only once the model had loaded (its loading bar first): what
    the options, data and model files settle is checked before, in the same one line."""
    import shutil

    from bio_mrc.inference import TrainedModel

    options = ["--decoding", "span", "--chunk-size", "2"]
    assert predict(model_dir, tmp_path / "p.json", *options, "--limit", "4") == 0
    capsys.readouterr()
    stream = (tmp_path / "p.answers.jsonl").read_bytes()
    other_model, other_data = tmp_path / "other-model", tmp_path / "copy.json"
    shutil.copytree(model_dir, other_model)
    other_data.write_bytes(SAMPLE_V1.read_bytes())
    load = TrainedModel.load
    monkeypatch.setattr(TrainedModel, "load", lambda *args, **kwargs: pytest.fail("the model loaded"))
    refusals = {
        ("--chunk-size", "1"): "--chunk-size 2, this run has 1",
        ("--batch-size", "3"): "--batch-size null, this run has 3",
        ("--decoding", "bio"): '--decoding ["span"], this run has ["span", "bio"]',  # each use adds its decodings
        ("--max-answer-length", "3"): "--max-answer-length 30, this run has 3",
    }
    for changed, named in refusals.items():
        assert predict(model_dir, tmp_path / "p.json", *options, *changed, "--resume") == 2
        errors = capsys.readouterr().err.splitlines()
        assert errors == [f"error: the answers stream was made with {named}; resume with the same options and data, or "
                          f"start again without --resume (in {tmp_path / 'p.answers.run.json'})"]
    # a prior the span decoding never reads changes no answer of the stream: refused as no option of this run
    assert predict(model_dir, tmp_path / "p.json", *options, "--bio-length-prior", "0.5", "--resume") == 2
    assert capsys.readouterr().err.startswith("error: --bio-length-prior sets the length prior of the BIO head's spans, which "
                                              "the span decoding never reads")
    assert predict(other_model, tmp_path / "p.json", *options, "--resume") == 2
    assert f'made with --model "{model_dir.resolve()}", this run has "{other_model.resolve()}"' in capsys.readouterr().err
    assert predict(model_dir, tmp_path / "p.json", *options, "--resume", data=other_data) == 2
    assert f'this run has "{other_data.resolve()}, ' in capsys.readouterr().err
    assert predict(model_dir, tmp_path / "p.json", *options, "--decoding", "auto", "--resume") == 2  # the heads' joint
    assert 'made with --decoding ["span"], this run has ["span", "joint"]' in capsys.readouterr().err
    monkeypatch.setattr(TrainedModel, "load", load)
    assert (tmp_path / "p.answers.jsonl").read_bytes() == stream
    assert predict(model_dir, tmp_path / "p.json", *options, "--resume") == 0


def test_resume_refuses_what_the_model_files_settle_before_the_model_loads(model_dir, tmp_path, capsys, monkeypatch):
    """An ``auto`` decoding, the model's tuned length prior and a hub id's snapshot were checked against the stream only
    once the model had loaded: config.json and the local hub cache settle them, so the refusal comes first."""
    import shutil

    from bio_mrc.inference import TrainedModel

    tuned = tmp_path / "tuned"
    shutil.copytree(model_dir, tuned)
    config = json.loads((tuned / "config.json").read_text(encoding="utf-8"))
    (tuned / "config.json").write_text(json.dumps({**config, "bio_length_prior": 0.25}), encoding="utf-8")
    snapshot = offline_hub(monkeypatch, tmp_path / "hub", {"org/tiny": model_dir})["org/tiny"]
    options = ["--chunk-size", "2", "--limit", "2"]
    assert predict(model_dir, tmp_path / "span.json", *options, "--decoding", "span") == 0
    assert predict(tuned, tmp_path / "prior.json", *options, "--decoding", "bio", "--bio-length-prior", "0.5") == 0
    capsys.readouterr()
    monkeypatch.setattr(TrainedModel, "load", lambda *args, **kwargs: pytest.fail("the model loaded"))
    refusals = [(model_dir, "span", ["--decoding", "auto"], '--decoding ["span"], this run has ["joint"]'),
                (tuned, "prior", ["--decoding", "bio"], "--bio-length-prior 0.5, this run has 0.25"),
                ("org/tiny", "span", ["--decoding", "span"], f'--model "{model_dir.resolve()}", this run has "{snapshot.resolve()}"')]
    for model, stem, changed, named in refusals:
        assert predict(model, tmp_path / f"{stem}.json", *options, *changed, "--resume") == 2
        assert capsys.readouterr().err.splitlines() == [
            f"error: the answers stream was made with {named}; resume with the same options and data, or start again "
            f"without --resume (in {tmp_path / f'{stem}.answers.run.json'})"]


def test_output_dash_writes_the_answer_lines_to_standard_output_and_nothing_else(model_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert predict(model_dir, "-", "--decoding", "span", "bio") == 0
    captured = capsys.readouterr()
    records = [json.loads(line) for line in captured.out.splitlines()]
    assert [(r["id"], r["decoding"]) for r in records] == [(ex.id, d) for ex in load_squad(SAMPLE_V1).examples
                                                          for d in ("span", "bio")]
    assert '"questions": 8' in captured.err  # the report goes to standard error
    assert list(tmp_path.iterdir()) == []  # and no file named "-", nor any other


def test_limit_reads_no_further_than_its_questions(model_dir, tmp_path, capsys):
    """An official JSON file cut short after its first article: --limit 2 never reaches the cut."""
    raw = json.loads(SAMPLE_V1.read_text(encoding="utf-8"))
    cut = tmp_path / "cut.json"
    cut.write_text('{"data": [' + json.dumps(raw["data"][0]) + ', {"title": "cut', encoding="utf-8")
    assert predict(model_dir, tmp_path / "p.json", "--limit", "2", data=cut) == 0
    assert len(json.loads((tmp_path / "p.json").read_text())) == 2
    assert predict(model_dir, tmp_path / "q.json", data=cut) == 2
    assert "ends early" in capsys.readouterr().err
    assert not (tmp_path / "q.answers.jsonl").exists()  # refused before any work


def test_a_bad_question_anywhere_is_refused_before_any_answer_is_written(model_dir, tmp_path, capsys):
    raw = json.loads(many_questions(tmp_path / "many.json", copies=3).read_text())
    raw["data"][-1]["paragraphs"][-1]["qas"][-1]["answers"][0]["text"] = "not in the context at all"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(raw))
    assert predict(model_dir, tmp_path / "p.json", "--chunk-size", "2", data=bad) == 2
    assert "not in the context" in capsys.readouterr().err
    assert not (tmp_path / "p.answers.jsonl").exists()


def test_options_that_cannot_work_are_refused_before_any_work(model_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert predict(model_dir, "-", "--resume") == 2
    assert "--resume continues" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        predict(model_dir, "p.json", "--chunk-size", "0")
    assert "a positive number" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("output", ["preds", "out/preds", "preds.json", "a.b"])
def test_no_two_decodings_share_a_file_whatever_the_outputs_suffix(output):
    from bio_mrc.inference.streaming import prediction_outputs

    files = prediction_outputs(output, ["span", "bio", "joint"])
    # the stream and its record, three files a decoding, a run's stream and record, the list of the decodings' files
    assert len(set(files)) == len(files) == 14, files
    assert prediction_outputs("preds.json", ["joint"])[2:] == [Path("preds.json"), Path("preds.nbest.json"),
                                                               Path("preds.na_probs.json"), Path("preds.answers.partial.jsonl"),
                                                               Path("preds.answers.partial.run.json"),
                                                               Path("preds.answers.files.json")]  # the names as ever


def test_resume_refuses_a_multi_span_stream_for_a_run_without_multi_span(tmp_path):
    from bio_mrc.inference.files import answer_record
    from bio_mrc.inference.streaming import resume_point
    from bio_mrc.errors import DataFormatError
    from bio_mrc.types import AnswerSpan, Prediction

    prediction = Prediction("q1", [AnswerSpan("Alpha", 0, 5, 0.9, 0.9), AnswerSpan("Beta", 10, 14, 0.8, 0.8)], -1.0)
    stream = tmp_path / "preds.answers.jsonl"
    stream.write_text(json.dumps(answer_record(prediction, "joint", multi_span=True)) + "\n", encoding="utf-8")
    assert resume_point(stream, ["joint"], 1, multi_span=True) == ["q1"]
    with pytest.raises(DataFormatError, match="line 1 was written with multi_span=True"):
        resume_point(stream, ["joint"], 1, multi_span=False)



def test_a_stream_line_or_run_record_nested_past_the_parsers_stack_is_no_traceback(tmp_path):
    """A line nested deeper than the JSON parser's stack is a line to answer again, as one cut short; a run record so
    nested is one line naming it (both ended --resume in RecursionError)."""
    from bio_mrc.inference.files import answer_record
    from bio_mrc.inference.streaming import check_run_record, resume_point
    from bio_mrc.errors import DataFormatError
    from bio_mrc.types import AnswerSpan, Prediction

    stream = tmp_path / "preds.answers.jsonl"
    whole = json.dumps(answer_record(Prediction("q1", [AnswerSpan("Alpha", 0, 5, 0.9)], -1.0), "joint")) + "\n"
    stream.write_text(whole + "[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    assert resume_point(stream, ["joint"], 1) == ["q1"] and stream.read_text(encoding="utf-8") == whole
    record = tmp_path / "preds.answers.run.json"
    record.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(DataFormatError, match="cannot read the record of the answers stream's options .*without resume=True"):
        check_run_record(record, {"model": "m"})


def test_a_resumed_stream_made_with_other_options_names_the_keyword_and_both_values_as_json_spells_them(tmp_path):
    """From Python the option is the keyword (the command line's flag: the tests above), each value as the record
    file spells it."""
    from bio_mrc.errors import DataFormatError
    from bio_mrc.inference.streaming import check_run_record

    record = tmp_path / "preds.answers.run.json"
    record.write_text(json.dumps({"chunk_size": 2, "precision": "fp32", "batch_size": None}), encoding="utf-8")
    for wanted, named in [({"chunk_size": 1}, "chunk_size 2, this run has 1"), ({"precision": "bf16"}, 'precision "fp32", this run has "bf16"'),
                          ({"batch_size": 3}, "batch_size null, this run has 3")]:
        with pytest.raises(DataFormatError) as refused:
            check_run_record(record, wanted)
        assert str(refused.value) == (f"the answers stream was made with {named}; resume with the same options and data, or "
                                      f"start again without resume=True (in {record})")


def test_resume_with_multi_span_names_a_stream_written_without_it(tmp_path):
    from bio_mrc.inference.files import answer_record
    from bio_mrc.inference.streaming import resume_point
    from bio_mrc.errors import DataFormatError
    from bio_mrc.types import AnswerSpan, Prediction

    prediction = Prediction("q1", [AnswerSpan("Alpha", 0, 5, 0.9)], -1.0)
    stream = tmp_path / "preds.answers.jsonl"
    stream.write_text(json.dumps(answer_record(prediction, "joint")) + "\n", encoding="utf-8")
    assert resume_point(stream, ["joint"], 1) == ["q1"]
    # the line is predict's own, written without --multi-span: the options differ, the line is not broken
    with pytest.raises(DataFormatError, match="line 1 was written without multi_span=True .*resume with the same options"):
        resume_point(stream, ["joint"], 1, multi_span=True)

def test_each_decodings_nbest_file_survives_an_output_without_suffix(tmp_path):
    from bio_mrc.inference.files import answer_record, write_files_from_stream
    from bio_mrc.types import AnswerSpan, Prediction

    stream = tmp_path / "preds.answers.jsonl"
    lines = [answer_record(Prediction("q1", [AnswerSpan(text, 0, 5, 1.0)], -1.0), decoding)
             for decoding, text in (("span", "Alpha"), ("bio", "Omega"))]
    stream.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    written = write_files_from_stream(stream, tmp_path / "preds", ["span", "bio"])
    for decoding, text in (("span", "Alpha"), ("bio", "Omega")):
        nbest = json.loads(written[decoding].nbest.read_text(encoding="utf-8"))
        assert nbest["q1"]["spans"][0]["text"] == text, (decoding, written[decoding].nbest)


@pytest.mark.parametrize("decodings", [["joint"], ["span", "bio"]])
def test_two_outputs_differing_past_a_dot_share_no_file(decodings):
    """``run.v1`` and ``run.v2`` are two outputs: their streams and side files keep the whole name."""
    from bio_mrc.inference.streaming import prediction_outputs

    first, second = prediction_outputs("run.v1", decodings), prediction_outputs("run.v2", decodings)
    assert not set(first) & set(second), (first, second)
    assert first[0] == Path("run.v1.answers.jsonl")
    assert Path("run.v1.nbest.json" if decodings == ["joint"] else "run.v1.span.nbest.json") in first


def test_a_full_disk_while_the_answers_stream_grows_is_one_line_and_resumable(model_dir, tmp_path, capsys, monkeypatch):
    import errno

    from bio_mrc.inference import streaming

    opened, writes = streaming.open_no_follow, []

    class FillsUp:  # the disk fills after the first chunk's lines
        def __init__(self, handle):
            self.handle = handle

        def write(self, text):
            if writes:
                raise OSError(errno.ENOSPC, "No space left on device")
            writes.append(text)
            return self.handle.write(text)

        def __getattr__(self, name):
            return getattr(self.handle, name)

    monkeypatch.setattr(streaming, "open_no_follow", lambda *args, **kwargs: FillsUp(opened(*args, **kwargs)))
    out = tmp_path / "preds" / "p.json"
    assert predict(model_dir, out, "--decoding", "span", "--chunk-size", "4") == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("error: could not write there, ") and line.endswith(f"[Errno 28] No space left on device (in {out.parent})")
    monkeypatch.setattr(streaming, "open_no_follow", opened)
    assert predict(model_dir, out, "--decoding", "span", "--chunk-size", "4", "--resume") == 0
    assert len(json.loads(out.read_text())) == len(load_squad(SAMPLE_V1).examples)


class _FailsAfter:
    """``chunk_lines`` that answers ``chunks`` chunks, then fails as a full disk would (the rerun stops part-way)."""

    def __init__(self, original, chunks: int) -> None:
        self.original, self.left = original, chunks

    def __call__(self, trained, chunk, plan):
        import errno

        if not self.left:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.left -= 1
        return self.original(trained, chunk, plan)


@pytest.mark.parametrize("rerun", [["--decoding", "bio"], ["--decoding", "span"]])
def test_a_rerun_that_fails_part_way_keeps_the_earlier_complete_set_and_resume_continues_the_new_run(
        model_dir, tmp_path, monkeypatch, capsys, rerun):
    """A rerun into the output of a complete run emptied its answers stream first: one that failed part-way left the
    earlier official files beside a new partial stream, the earlier stream gone. The earlier set stays whole until the
    new one is; --resume then continues the new run, never the earlier run's answers."""
    import bio_mrc.inference.streaming as streaming

    options = ["--chunk-size", "2"]
    assert predict(model_dir, tmp_path / "earlier" / "p.json", "--decoding", "span", *options) == 0
    earlier = contents(tmp_path / "earlier")
    assert predict(model_dir, tmp_path / "fresh" / "p.json", *rerun, *options) == 0
    fresh = contents(tmp_path / "fresh")
    original = streaming.chunk_lines
    monkeypatch.setattr(streaming, "chunk_lines", _FailsAfter(original, chunks=1))
    assert predict(model_dir, tmp_path / "earlier" / "p.json", *rerun, *options) == 2
    assert "No space left on device" in capsys.readouterr().err
    after = contents(tmp_path / "earlier")
    assert {name: data for name, data in after.items() if name in earlier} == earlier  # the earlier set, byte for byte
    partial = {name for name in after if name not in earlier}
    assert partial == {"p.answers.partial.jsonl", "p.answers.partial.run.json"}
    assert len(after["p.answers.partial.jsonl"].splitlines()) == 2  # the new run's first chunk
    answered = []
    monkeypatch.setattr(streaming, "chunk_lines", lambda trained, chunk, plan: answered.extend(ex.id for ex in chunk) or
                        original(trained, chunk, plan))
    assert predict(model_dir, tmp_path / "earlier" / "p.json", *rerun, *options, "--resume") == 0
    assert answered == [ex.id for ex in load_squad(SAMPLE_V1).examples][2:]  # the new run continued past its first chunk
    assert contents(tmp_path / "earlier") == fresh  # the new set whole, no file of the earlier one's or the partial one left


def test_a_rerun_that_completes_replaces_the_earlier_set_with_the_bytes_of_a_fresh_run(model_dir, tmp_path):
    options = ["--decoding", "span", "joint", "--chunk-size", "3"]
    assert predict(model_dir, tmp_path / "fresh" / "p.json", *options) == 0
    assert predict(model_dir, tmp_path / "rerun" / "p.json", "--decoding", "joint", "span", "--limit", "4") == 0
    assert predict(model_dir, tmp_path / "rerun" / "p.json", *options) == 0
    assert contents(tmp_path / "rerun") == contents(tmp_path / "fresh")  # no partial stream left beside them


def test_a_resume_of_a_complete_run_that_fails_keeps_the_earlier_set(model_dir, tmp_path, monkeypatch, capsys):
    """--resume of a complete stream cut its last part-chunk back and answered it again in place: a failure then left
    the official files beside a shorter stream."""
    import bio_mrc.inference.streaming as streaming

    options = ["--decoding", "span", "--chunk-size", "3"]
    assert predict(model_dir, tmp_path / "p.json", *options) == 0
    earlier = contents(tmp_path)
    monkeypatch.setattr(streaming, "chunk_lines", _FailsAfter(streaming.chunk_lines, chunks=0))
    assert predict(model_dir, tmp_path / "p.json", *options, "--resume") == 2
    capsys.readouterr()
    after = contents(tmp_path)
    assert {name: data for name, data in after.items() if name in earlier} == earlier
    monkeypatch.undo()
    assert predict(model_dir, tmp_path / "p.json", *options, "--resume") == 0
    assert contents(tmp_path) == earlier


def test_an_output_folder_removed_while_the_answers_stream_grows_is_one_line_naming_the_stream(model_dir, tmp_path, capsys,
                                                                                             monkeypatch):
    import shutil

    from bio_mrc.inference import streaming

    opened = streaming.open_no_follow

    class RemovedMidway:  # the folder goes once the first chunk's lines are written; the open file takes the rest
        def __init__(self, handle):
            self.handle = handle

        def write(self, text):
            written = self.handle.write(text)
            shutil.rmtree(out.parent, ignore_errors=True)
            return written

        def __getattr__(self, name):
            return getattr(self.handle, name)

    monkeypatch.setattr(streaming, "open_no_follow", lambda *args, **kwargs: RemovedMidway(opened(*args, **kwargs)))
    out = tmp_path / "preds" / "p.json"
    assert predict(model_dir, out, "--decoding", "span", "--chunk-size", "4") == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line == ("error: the output folder was removed while the answers were written to it; run predict again "
                    f"(in {out.parent / 'p.answers.partial.jsonl'})")


def test_an_output_folder_made_read_only_midway_is_one_line_and_keeps_the_earlier_predictions(model_dir, tmp_path, capsys,
                                                                                            monkeypatch):
    import errno
    import os

    from bio_mrc import io

    out = tmp_path / "p.json"
    assert predict(model_dir, out, "--decoding", "span") == 0
    earlier = out.read_bytes()
    replace = io.atomic.os.replace

    def read_only(source, target):  # the folder was remounted read-only once the stream was written
        raise OSError(errno.EROFS, "Read-only file system", str(source), None, str(target))

    monkeypatch.setattr(io.atomic.os, "replace", read_only)
    assert predict(model_dir, out, "--decoding", "span", "--resume") == 2
    (line,) = capsys.readouterr().err.strip().splitlines()[-1:]
    assert line.startswith("error: could not write there: [Errno 30] Read-only file system: ") and line.endswith(f"(in {tmp_path})")
    monkeypatch.setattr(io.atomic.os, "replace", replace)
    assert out.read_bytes() == earlier and not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]


def test_a_question_id_with_8_bit_terminal_controls_is_printed_escaped(model_dir, tmp_path, capsys):
    hostile = "q\u009b2J\u009d0;title\u009c\x7f"  # CSI "clear screen" and OSC "set title" in their one-character forms
    data = tmp_path / "c1.json"
    data.write_text(json.dumps({"version": "1.1", "data": [{"title": "T", "paragraphs": [{
        "context": "Paris is the capital of France.",
        "qas": [{"id": hostile, "question": "What is the capital?", "answers": [{"text": "Paris", "answer_start": 0}]}]}]}]}))
    assert predict(model_dir, "-", "--decoding", "span", data=data) == 0
    out = capsys.readouterr().out
    assert '"id": "q\\u009b2J\\u009d0;title\\u009c\\u007f"' in out  # before: the characters themselves
    assert not any("\x7f" <= ch <= "\x9f" for ch in out) and json.loads(out)["id"] == hostile


def untuned_line(line: str) -> bool:
    """A warning line of predict other than the one naming a question past the model's max_query_length (sample's p3)."""
    return line.startswith("warning:") and "max_query_length" not in line


def test_questions_without_an_answer_and_no_tuned_threshold_are_warned_of_before_the_work(model_dir, tmp_path, capsys):
    """A SQuAD 2.0 file answered by a decoding without a tuned no-answer threshold: every question got an answer,
    without a word; a decoding with a threshold says nothing."""
    raw = json.loads(SAMPLE_V1.read_text(encoding="utf-8"))
    raw["version"] = "v2.0"
    first = raw["data"][0]["paragraphs"][0]["qas"][0]
    first.update(answers=[], is_impossible=True)
    data = tmp_path / "v2.json"
    data.write_text(json.dumps(raw), encoding="utf-8")
    assert predict(model_dir, tmp_path / "p.json", "--decoding", "span", "joint", data=data) == 0
    warning = [line for line in capsys.readouterr().err.splitlines() if untuned_line(line)]
    assert warning == [f"warning: {data} holds 1 question without an answer, and the model has no tuned no-answer "
                       "threshold for span, joint, so it answers every question (its no-answer score is untrained: it "
                       "was trained on no question without an answer) (bio-mrc tune fits one on held-out SQuAD 2.0 questions)"]
    tuned = tmp_path / "tuned"
    import shutil

    shutil.copytree(model_dir, tuned)
    config = json.loads((tuned / "config.json").read_text())
    config["no_answer_thresholds"] = {"span": 0.0}  # as tune saves it, with the questions it was tuned on
    config["tuned_on"] = {"description": "held-out", "questions": 9, "content_hash": "c"}
    (tuned / "config.json").write_text(json.dumps(config))
    assert predict(tuned, tmp_path / "q.json", "--decoding", "span", data=data) == 0
    assert not [line for line in capsys.readouterr().err.splitlines() if untuned_line(line)]


def test_the_warning_of_questions_without_an_answer_counts_those_limit_answers(model_dir, tmp_path, capsys):
    """``--limit 2`` of a file whose first and last questions have no answer: the warning named the file as holding the
    count of the first two alone; it now says the count is of the questions answered."""
    raw = json.loads(SAMPLE_V1.read_text(encoding="utf-8"))
    raw["version"] = "v2.0"
    for qa in (raw["data"][0]["paragraphs"][0]["qas"][0], raw["data"][-1]["paragraphs"][-1]["qas"][-1]):
        qa.update(answers=[], is_impossible=True)
    data = tmp_path / "v2.json"
    data.write_text(json.dumps(raw), encoding="utf-8")
    untuned = ("and the model has no tuned no-answer threshold for span, so it answers every question (its no-answer score is "
               "untrained: it was trained on no question without an answer) (bio-mrc tune fits one on held-out SQuAD 2.0 questions)")
    for limit, asked in [(["--limit", "2"], f"1 of the first 2 questions of {data} has no answer"),
                         (["--limit", "1"], f"1 of the first 1 question of {data} has no answer"),
                         (["--limit", "8"], f"2 of the first 8 questions of {data} have no answer"),
                         (["--limit", "9"], f"{data} holds 2 questions without an answer"),  # all 8 answered
                         ([], f"{data} holds 2 questions without an answer")]:
        assert predict(model_dir, tmp_path / "p.json", "--decoding", "span", *limit, data=data) == 0
        warnings = [line for line in capsys.readouterr().err.splitlines() if untuned_line(line)]
        assert warnings == [f"warning: {asked}, {untuned}"], limit


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("stop", ["ctrl-c", "full disk"])
def test_a_stop_while_a_decodings_files_are_replaced_leaves_them_all_old_or_all_new(model_dir, tmp_path, monkeypatch, capsys,
                                                                                             k, stop, sigint_as_in_a_terminal):
    """A Ctrl-C between the renames of a decoding's files left the new official file beside the old n-best and na_prob
    files (a full disk while writing them is in tests/test_io.py: every file is written before the first rename). The
    answers stream and its record are renamed in last, with them: the three files, the list of them, the record and the
    stream."""
    from bio_mrc import io

    out = tmp_path / "p.json"
    names = ("p.json", "p.nbest.json", "p.na_probs.json")
    assert predict(model_dir, out, "--decoding", "span", "--limit", "2") == 0
    old = {name: (tmp_path / name).read_bytes() for name in names}
    (tmp_path / "p.answers.jsonl").unlink()
    with monkeypatch.context() as patch:  # counts the renames of the three files alone
        patch.setattr(io.atomic.os, "replace", StoppedReplace(stop, k, counted=lambda target: Path(target).name in names))
        code = predict(model_dir, out, "--decoding", "span")
    new = {name: (tmp_path / name).read_bytes() for name in names}
    line = capsys.readouterr().err.strip().splitlines()[-1]
    if stop == "ctrl-c":  # the signal takes effect once the three are in
        assert code == 130 and predict(model_dir, tmp_path / "q.json", "--decoding", "span") == 0
        assert new == {name: (tmp_path / name.replace("p.", "q.", 1)).read_bytes() for name in names} != old
    elif k == 1:  # no file replaced
        assert code == 2 and new == old and line.endswith(f"No space left on device (in {tmp_path})")
    else:  # a rename refused after others: the mix is named
        assert code == 2 and new != old and line == (f"error: {k - 1} of the 6 new files replaced old ones before [Errno 28] No "
                                                     "space left on device: the files there do not agree (new beside old); "
                                                     f"write them again (in {tmp_path})")


def test_answers_with_line_separators_keep_one_line_a_record_and_an_older_raw_stream_resumes(tmp_path):
    # U+2028 and U+2029 end a line for str.splitlines(): they are written as \u2028 escapes, the same JSON value
    from bio_mrc.inference.files import answer_record, write_files_from_stream, write_prediction_files
    from bio_mrc.inference.streaming import resume_point
    from bio_mrc.io import printable_json
    from bio_mrc.types import AnswerSpan, Prediction

    predictions = [Prediction("q\u2028one", [AnswerSpan("Par\u2028is", 0, 6, 0.9, 0.9)], -1.0),
                   Prediction("q2", [AnswerSpan("a\u2029b", 7, 10, 0.8, 0.8)], -1.0)]
    lines = [printable_json(answer_record(p, "joint")) + "\n" for p in predictions]  # as chunk_lines writes them
    stream = tmp_path / "preds.answers.jsonl"
    stream.write_text("".join(lines), encoding="utf-8")
    text = stream.read_text(encoding="utf-8")
    assert len(text.splitlines()) == 2 and [json.loads(line) for line in text.splitlines()] == [
        answer_record(p, "joint") for p in predictions]
    written = write_files_from_stream(stream, tmp_path / "preds.json", ["joint"])["joint"]
    direct = write_prediction_files(predictions, tmp_path / "direct" / "preds.json")
    for ours, theirs in zip(written.paths(), direct.paths(), strict=True):  # from the stream or at once: the same bytes
        assert ours.read_bytes() == theirs.read_bytes()
        assert not {"\u2028", "\u2029"} & set(ours.read_text(encoding="utf-8"))  # no raw separator
    assert json.loads(written.predictions.read_text(encoding="utf-8")) == {"q\u2028one": "Par\u2028is", "q2": "a\u2029b"}
    # a stream written with the characters raw (as before) is read as values: it resumes, and gives the same files
    stream.write_text("".join(json.dumps(answer_record(p, "joint"), ensure_ascii=False) + "\n" for p in predictions),
                      encoding="utf-8")
    assert "\u2028" in stream.read_text(encoding="utf-8")
    assert resume_point(stream, ["joint"], 1) == ["q\u2028one", "q2"]
    assert stream.read_text(encoding="utf-8") == "".join(lines)  # kept as this version writes them, escaped
    rewritten = write_files_from_stream(stream, tmp_path / "again" / "preds.json", ["joint"])["joint"]
    assert [path.read_bytes() for path in rewritten.paths()] == [path.read_bytes() for path in direct.paths()]


def test_a_question_id_and_context_with_a_line_separator_give_one_stream_line_a_record(model_dir, tmp_path, capsys):
    data = tmp_path / "ls.json"
    data.write_text(json.dumps({"version": "1.1", "data": [{"title": "T", "paragraphs": [{
        "context": "Paris\u2028is the capital\u2029of France.",
        "qas": [{"id": f"q\u2028{n}", "question": "What is\u2028the capital?", "answers": [{"text": "Paris", "answer_start": 0}]}
                for n in range(2)]}]}]}))
    assert predict(model_dir, tmp_path / "p.json", "--decoding", "span", "joint", data=data) == 0
    text = (tmp_path / "p.answers.jsonl").read_text(encoding="utf-8")
    assert len(text.splitlines()) == 4 and [json.loads(line)["id"] for line in text.splitlines()] == ["q\u20280"] * 2 + ["q\u20281"] * 2
    capsys.readouterr()
    assert predict(model_dir, "-", "--decoding", "span", data=data) == 0
    out = capsys.readouterr().out
    assert [json.loads(line)["id"] for line in out.splitlines()] == ["q\u20280", "q\u20281"]


@pytest.mark.parametrize("kind", ["span", "bio", "span+bio", "tuned prior", "answer-length limit", "qa checkpoint"])
def test_the_settings_resume_reads_from_the_files_are_those_the_loaded_model_gives(tiny_encoder_dir, tmp_path, kind):
    """``predict --resume`` settles the decodings, the length prior, the answer-length limit and the heads from ``config.json``
    before the model loads (:func:`saved_settings`): they are the loaded model's own."""
    from bio_mrc.decoding.postprocess import DecodeConfig
    from bio_mrc.inference import TrainedModel
    from bio_mrc.inference.loading import saved_settings

    from .conftest import untrained_model_folder
    from .test_qa_checkpoints import random_qa_model

    if kind == "qa checkpoint":
        folder = random_qa_model("distilbert", tiny_encoder_dir, tmp_path / "qa")
    else:
        folder = untrained_model_folder(tiny_encoder_dir, tmp_path / "model", heads=kind if kind in registry.HEADS or "+" in kind
                                        else "span+bio", max_seq_length=48, doc_stride=16, max_query_length=12)
    saved = {"tuned prior": {"bio_length_prior": 0.75}, "answer-length limit": {"max_answer_length": 64}}.get(kind)
    if saved:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        (folder / "config.json").write_text(json.dumps({**config, **saved}), encoding="utf-8")
    trained = TrainedModel.load(folder, precision="fp32", device="cpu")
    resolved = trained.decode_config(DecodeConfig())
    assert saved_settings(folder) == (trained.decodings, resolved.bio_length_prior, resolved.max_answer_length,
                                      registry.head_names(trained.heads))
    assert saved_settings(folder)[1:3] == (0.75 if kind == "tuned prior" else 0.0, 64 if kind == "answer-length limit" else 30)


def test_resume_refuses_a_data_file_edited_in_place_at_the_same_size_and_ids(model_dir, tmp_path, capsys):
    """A question's text changed under the same id, the file's size unchanged: the answered chunks were kept and the
    files mixed answers to the old question with answers to the new ones. The record's digest of the file tells."""
    data = tmp_path / "data.json"
    text = SAMPLE_V1.read_text(encoding="utf-8")
    data.write_text(text, encoding="utf-8")
    options = ["--decoding", "span", "--chunk-size", "2"]
    assert predict(model_dir, tmp_path / "p.json", *options, "--limit", "4", data=data) == 0
    stream = (tmp_path / "p.answers.jsonl").read_bytes()
    edited = text.replace("Normandy located?", "Normandy placed??", 1)
    assert edited != text and len(edited) == len(text)
    data.write_text(edited, encoding="utf-8")
    capsys.readouterr()
    assert predict(model_dir, tmp_path / "p.json", *options, "--resume", data=data) == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 1 and errors[0].startswith(f'error: the answers stream was made with --data "{data.resolve()}, ')
    assert "sha256" in errors[0] and (tmp_path / "p.answers.jsonl").read_bytes() == stream


@pytest.mark.parametrize("change", ["tuned", "retrained"])
def test_resume_refuses_a_model_changed_in_place_before_it_loads(model_dir, tmp_path, capsys, monkeypatch, change):
    """The same model folder tuned since (another calibrator: other probabilities) or retrained into (other weights): the
    answered chunks were kept and the files mixed the two models' answers."""
    from bio_mrc.inference import TrainedModel

    model = shutil.copytree(model_dir, tmp_path / "model")
    options = ["--decoding", "span", "--chunk-size", "2"]
    assert predict(model, tmp_path / "p.json", *options, "--limit", "4") == 0
    stream = (tmp_path / "p.answers.jsonl").read_bytes()
    if change == "tuned":
        config = json.loads((model / "config.json").read_text(encoding="utf-8"))
        config["calibration"]["span"] = {**CALIBRATOR, "a": 3.0}
        (model / "config.json").write_text(json.dumps(config), encoding="utf-8")
    else:
        weights = bytearray((model / "model.safetensors").read_bytes())
        weights[-1] ^= 1  # the last bit of the last weight
        (model / "model.safetensors").write_bytes(bytes(weights))
    capsys.readouterr()
    monkeypatch.setattr(TrainedModel, "load", lambda *args, **kwargs: pytest.fail("the model loaded"))
    assert predict(model, tmp_path / "p.json", *options, "--resume") == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: the model {model.resolve()} changed since the answers stream was made (its weights, tokenizer or "
        "config.json, which holds its tuned settings, differ); resume with the model it was made with, or start again "
        f"without --resume (in {tmp_path / 'p.answers.run.json'})"]
    assert (tmp_path / "p.answers.jsonl").read_bytes() == stream


def test_a_resumed_run_removes_the_temporary_files_a_killed_write_left(model_dir, tmp_path):
    """A kill while the record or an official file was written leaves its temporary file beside it: a resumed run
    ended with the answers right and the stray file still there. Another file's temporary is not predict's to remove."""
    options = ["--decoding", "span", "joint", "--chunk-size", "3"]
    assert predict(model_dir, tmp_path / "full" / "p.json", *options) == 0
    full = contents(tmp_path / "full")
    shutil.copytree(tmp_path / "full", tmp_path / "killed")
    strays = [".p.answers.run.json.41.0123abcd.tmp", ".p.span.json.42.89abcdef.tmp", ".p.joint.nbest.json.42.00ff00ff.tmp"]
    for name in [*strays, ".notes.json.43.0123abcd.tmp"]:
        (tmp_path / "killed" / name).write_text("{", encoding="utf-8")
    (tmp_path / "killed" / "p.joint.json").unlink()  # killed before the last official file was renamed into place
    assert predict(model_dir, tmp_path / "killed" / "p.json", *options, "--resume") == 0
    assert contents(tmp_path / "killed") == {**full, ".notes.json.43.0123abcd.tmp": b"{"}


def test_a_record_kept_without_the_model_files_digest_resumes_on_the_other_checks(model_dir, tmp_path):
    options = ["--decoding", "span", "--chunk-size", "2"]
    assert predict(model_dir, tmp_path / "full" / "p.json", *options) == 0
    assert predict(model_dir, tmp_path / "cut" / "p.json", *options, "--limit", "4") == 0
    record_path = tmp_path / "cut" / "p.answers.run.json"
    record = json.loads(record_path.read_text(encoding="utf-8"))
    assert len(record.pop("model_files")) == 16
    record_path.write_text(json.dumps(record), encoding="utf-8")
    assert predict(model_dir, tmp_path / "cut" / "p.json", *options, "--resume") == 0
    assert contents(tmp_path / "cut") == contents(tmp_path / "full")


@pytest.fixture
def auto_choice(monkeypatch):
    """What ``auto`` resolves to on this machine, set by the test (``auto_choice["auto"]``): another machine, or a
    measurement that came out the other way."""
    from bio_mrc import precision

    chosen, choice = {"auto": "bf16"}, precision.precision_choice

    def patched(asked, *args, **kwargs):
        if (asked or precision.DEFAULT_PRECISION) == "auto":
            return {"precision": chosen["auto"], "how": "measured"}
        return choice(asked, *args, **kwargs)

    monkeypatch.setattr(precision, "precision_choice", patched)
    return chosen


def test_resume_refuses_a_stream_answered_in_another_precision_or_on_another_device(model_dir, tmp_path, capsys, auto_choice):
    """The record kept --precision as given: a stream begun where auto chose bf16 and resumed where it chooses fp32
    mixed answers of both. It keeps the precision auto resolved to and the device's kind; a resume that differs in either
    is refused in one line, and the precision it names resumes to the bytes of a run never interrupted."""
    span = ["--decoding", "span", "--chunk-size", "2"]
    assert predict(model_dir, tmp_path / "full" / "p.json", *span, "--precision", "bf16") == 0
    assert predict(model_dir, tmp_path / "cut" / "p.json", *span, "--precision", "auto", "--limit", "4") == 0
    record_path, stream = tmp_path / "cut" / "p.answers.run.json", tmp_path / "cut" / "p.answers.jsonl"
    record = json.loads(record_path.read_text(encoding="utf-8"))
    assert (record["precision"], record["resolved_precision"], record["device"]) == ("auto", "bf16", "cpu")
    answered = stream.read_bytes()
    auto_choice["auto"] = "fp32"
    capsys.readouterr()
    assert predict(model_dir, tmp_path / "cut" / "p.json", *span, "--precision", "auto", "--resume") == 2
    assert [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")] == [
        "error: the answers stream was answered in bf16 (--precision auto), this run answers in fp32 (--precision auto); "
        f"resume with --precision bf16, or start again without --resume (in {record_path})"]
    assert stream.read_bytes() == answered
    assert predict(model_dir, tmp_path / "cut" / "p.json", *span, "--precision", "bf16", "--resume") == 0
    assert contents(tmp_path / "cut") == contents(tmp_path / "full")
    record_path.write_text(json.dumps({**json.loads(record_path.read_text(encoding="utf-8")), "device": "cuda"}), encoding="utf-8")
    capsys.readouterr()
    assert predict(model_dir, tmp_path / "cut" / "p.json", *span, "--precision", "bf16", "--resume") == 2
    assert [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")] == [
        "error: the answers stream was answered on cuda, this run answers on cpu; resume with --device cuda, or start "
        f"again without --resume (in {record_path})"]


def test_resume_refuses_an_explicit_precision_other_than_the_streams_before_the_model_loads(model_dir, tmp_path, capsys,
                                                                                        monkeypatch, auto_choice):
    """An explicit --precision settles the precision without the model; auto given where the stream was answered in the
    same precision, asked explicitly, resumes."""
    from bio_mrc.inference import TrainedModel

    span = ["--decoding", "span", "--chunk-size", "2"]
    assert predict(model_dir, tmp_path / "p.json", *span, "--limit", "4") == 0  # --precision fp32
    load = TrainedModel.load
    monkeypatch.setattr(TrainedModel, "load", lambda *args, **kwargs: pytest.fail("the model loaded"))
    capsys.readouterr()
    assert predict(model_dir, tmp_path / "p.json", *span, "--precision", "bf16", "--resume") == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: the answers stream was answered in fp32 (--precision fp32), this run answers in bf16 (--precision bf16); "
        f"resume with --precision fp32, or start again without --resume (in {tmp_path / 'p.answers.run.json'})"]
    monkeypatch.setattr(TrainedModel, "load", load)
    auto_choice["auto"] = "fp32"
    assert predict(model_dir, tmp_path / "p.json", *span, "--precision", "auto", "--resume") == 0
    assert len(json.loads((tmp_path / "p.json").read_text(encoding="utf-8"))) == 8


def test_a_record_kept_without_the_resolved_precision_or_device_resumes_on_the_other_checks(model_dir, tmp_path, auto_choice):
    """A record written before they were kept says nothing of them: the resume is not refused for what it cannot know."""
    span = ["--decoding", "span", "--chunk-size", "2", "--precision", "auto"]
    assert predict(model_dir, tmp_path / "p.json", *span, "--limit", "4") == 0
    record_path = tmp_path / "p.answers.run.json"
    record = json.loads(record_path.read_text(encoding="utf-8"))
    assert (record.pop("resolved_precision"), record.pop("device")) == ("bf16", "cpu")
    record_path.write_text(json.dumps(record), encoding="utf-8")
    auto_choice["auto"] = "fp32"
    assert predict(model_dir, tmp_path / "p.json", *span, "--resume") == 0
    assert len(json.loads((tmp_path / "p.json").read_text(encoding="utf-8"))) == 8
    assert json.loads(record_path.read_text(encoding="utf-8"))["resolved_precision"] == "fp32"


@pytest.mark.parametrize("first", [b"hello\n", b"[1, 2]\n", b'"q1"\n', b"{broken\n"])
def test_resume_refuses_an_answers_stream_whose_whole_line_is_no_json_object(model_dir, tmp_path, capsys, first):
    """A file no predict wrote under the stream's name: a whole line that is no JSON object was taken for a line cut
    short by a kill, and the file was cut back to nothing and written over. Only a last line without its newline is one."""
    stream = tmp_path / "p.answers.jsonl"
    stream.write_bytes(first + b"more of someone's notes\n")
    assert predict(model_dir, tmp_path / "p.json", "--decoding", "span", "--resume") == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: line 1 is not a JSON object: it is no answers line bio-mrc predict "
                                                     "wrote; start again without --resume (in "), errors
    assert stream.read_bytes() == first + b"more of someone's notes\n"
