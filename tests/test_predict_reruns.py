"""``bio-mrc predict`` run again into the same output with other decodings: the folder ends holding the latest run's
files and no file an earlier run wrote under another name, while every file of the user's stays as it is."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bio_mrc.cli import main
from bio_mrc.io import file_sha256

from .conftest import SAMPLE_V1
from .test_predict_stream import killed_once_it_streams

PARTIAL = {"p.answers.partial.jsonl", "p.answers.partial.run.json"}  # a run's stream and record until its files are in


def predict(model_dir, output, *options, data=SAMPLE_V1) -> int:
    return main(["predict", "--model", str(model_dir), "--data", str(data), "--output", str(output), "--precision", "fp32", *options])


def contents(folder: Path) -> dict[str, bytes]:
    """Every file of ``folder`` by name (a stray temporary file too)."""
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def decoding_files(*decodings: str) -> list[str]:
    """The names of the official, n-best and no-answer files ``--output p.json --decoding DECODINGS`` writes."""
    stems = [f"p.{decoding}" for decoding in decodings] if len(decodings) > 1 else ["p"]
    return [f"{stem}{suffix}" for stem in stems for suffix in (".json", ".nbest.json", ".na_probs.json")]


@pytest.mark.parametrize(
    "first, then",
    [
        (["span", "bio", "joint"], ["joint", "span"]),  # fewer decodings
        (["span", "bio", "joint"], ["bio"]),  # one: p.json itself
        (["joint"], ["span", "bio"]),  # p.json to one file a decoding
        (["span", "joint"], ["bio", "span"]),  # other decodings
    ],
)
def test_a_rerun_with_other_decodings_leaves_the_files_of_a_fresh_run(trained_dir, tmp_path, first, then):
    """The earlier run's files of names the rerun does not write stayed beside the new ones: a reader of the folder
    could not tell which files were the latest run's."""
    assert predict(trained_dir, tmp_path / "fresh" / "p.json", "--decoding", *then) == 0
    assert predict(trained_dir, tmp_path / "rerun" / "p.json", "--decoding", *first) == 0
    assert predict(trained_dir, tmp_path / "rerun" / "p.json", "--decoding", *then) == 0
    assert contents(tmp_path / "rerun") == contents(tmp_path / "fresh")


def test_the_list_of_a_runs_files_names_each_decodings_files_with_their_sha256(trained_dir, tmp_path):
    assert predict(trained_dir, tmp_path / "p.json", "--decoding", "span", "joint") == 0
    listed = json.loads((tmp_path / "p.answers.files.json").read_text(encoding="utf-8"))
    assert listed == {name: file_sha256(tmp_path / name) for name in decoding_files("span", "joint")}
    assert set(contents(tmp_path)) == {*listed, "p.answers.jsonl", "p.answers.run.json", "p.answers.files.json"}


def test_the_listed_sha256_of_files_of_any_text_is_that_of_their_bytes(tmp_path):
    """The digests are taken as the files are written: text beyond ASCII (in the official and n-best files as it is, in
    the no-answer file escaped) hashes as the UTF-8 bytes written; the earlier run's files the new ones lack follow them."""
    from bio_mrc.inference.files import answer_record, write_files_from_stream
    from bio_mrc.io import printable_json
    from bio_mrc.types import AnswerSpan, Prediction

    predictions = [Prediction("q\u00e9", [AnswerSpan("K\u00f6ln \u6771\u4eac \U0001f600", 0, 10, 0.9, 0.9)], -1.0), Prediction("q2", [], 2.0, abstain=True)]
    stream = tmp_path / "p.answers.jsonl"
    stream.write_text("".join(printable_json(answer_record(p, d)) + "\n" for p in predictions for d in ("span", "bio")), encoding="utf-8")
    earlier = {"p.json": "0" * 64, "p.joint.json": "1" * 64}
    written = write_files_from_stream(stream, tmp_path / "p.json", ["span", "bio"], earlier=earlier)
    listed = json.loads((tmp_path / "p.answers.files.json").read_text(encoding="utf-8"))
    names = [path.name for files in written.values() for path in files.paths()]
    assert list(listed) == [*names, *earlier] and names == decoding_files("span", "bio")
    assert {name: listed[name] for name in names} == {name: file_sha256(tmp_path / name) for name in names}
    assert {name: listed[name] for name in earlier} == earlier


def test_a_rerun_leaves_the_users_files_of_similar_names_and_a_file_changed_since_alone(trained_dir, tmp_path):
    assert predict(trained_dir, tmp_path / "fresh" / "p.json", "--decoding", "joint") == 0
    out = tmp_path / "rerun"
    assert predict(trained_dir, out / "p.json", "--decoding", "span", "joint") == 0
    own = {
        "p.bio.json": b'{"q1": "mine"}',
        "p.span.notes.json": b"notes",
        "p.span.json.bak": b"{}",
        "p.joint.nbest.json.orig": b"kept",
        "q.span.json": b"{}",
    }  # names a run into p.json could write, or near them
    for name, data in own.items():
        (out / name).write_bytes(data)
    (out / "p.joint.na_probs.json").write_bytes(b'{"q1": 0.5}')  # a file the run wrote, changed since: the user's now
    assert predict(trained_dir, out / "p.json", "--decoding", "joint") == 0
    after = contents(out)
    assert {name: after.get(name) for name in own} == own
    assert after["p.joint.na_probs.json"] == b'{"q1": 0.5}'
    fresh = contents(tmp_path / "fresh")
    assert {name: data for name, data in after.items() if name not in own and name != "p.joint.na_probs.json"} == fresh


class _StoppedAfter:
    """``chunk_lines`` that answers ``chunks`` chunks, then stops as Ctrl-C does (the rerun is stopped part-way)."""

    def __init__(self, original, chunks: int) -> None:
        self.original, self.left = original, chunks

    def __call__(self, trained, chunk, plan):
        if not self.left:
            raise KeyboardInterrupt
        self.left -= 1
        return self.original(trained, chunk, plan)


@pytest.mark.parametrize("first, then", [(["span", "bio", "joint"], ["joint"]), (["span"], ["bio", "joint"])])
def test_a_rerun_stopped_part_way_keeps_the_earlier_set_whole_and_its_resume_ends_as_a_fresh_run(trained_dir, tmp_path, monkeypatch, capsys, first, then):
    import bio_mrc.inference.streaming as streaming

    options = ["--chunk-size", "2"]
    assert predict(trained_dir, tmp_path / "fresh" / "p.json", "--decoding", *then, *options) == 0
    out = tmp_path / "rerun"
    assert predict(trained_dir, out / "p.json", "--decoding", *first, *options) == 0
    earlier = contents(out)
    with monkeypatch.context() as patch:
        patch.setattr(streaming, "chunk_lines", _StoppedAfter(streaming.chunk_lines, chunks=1))
        assert predict(trained_dir, out / "p.json", "--decoding", *then, *options) == 130
    capsys.readouterr()
    after = contents(out)
    assert {name: after.get(name) for name in earlier} == earlier and set(after) - set(earlier) == PARTIAL
    assert predict(trained_dir, out / "p.json", "--decoding", *then, *options, "--resume") == 0
    assert contents(out) == contents(tmp_path / "fresh")


def test_earlier_files_a_stop_left_listed_once_the_new_set_was_in_go_with_the_next_run(trained_dir, tmp_path, monkeypatch, capsys):
    """A run stopped after its files moved in, before it removed the earlier run's, leaves those listed: a resume of the
    complete run, or any later run, removes them."""
    from bio_mrc.inference import file_list

    assert predict(trained_dir, tmp_path / "fresh" / "p.json", "--decoding", "bio") == 0
    out = tmp_path / "rerun"
    assert predict(trained_dir, out / "p.json", "--decoding", "span", "joint") == 0
    with monkeypatch.context() as patch:
        patch.setattr(file_list, "remove_file", lambda *args: (_ for _ in ()).throw(KeyboardInterrupt))
        assert predict(trained_dir, out / "p.json", "--decoding", "bio") == 130
    capsys.readouterr()
    listed = json.loads((out / "p.answers.files.json").read_text(encoding="utf-8"))
    assert set(listed) == {*decoding_files("bio"), *decoding_files("span", "joint")}
    assert predict(trained_dir, out / "p.json", "--decoding", "bio", "--resume") == 0
    assert contents(out) == contents(tmp_path / "fresh")


@pytest.mark.parametrize(
    "listed",
    [
        "[1, 2]",
        '{"p.span.json": 3}',
        '{"../p.span.json": "00"}',
        '{"x.span.json": "00"}',
        "{",
        '{"p.span.answers.jsonl": "%s"}' % ("0" * 64),  # the answers stream of the output p.span.json
        '{"p.v2.answers.files.json": "%s"}' % ("0" * 64),  # the list of the output p.v2.json
        '{"p.span.answers.partial.run.json": "%s"}' % ("0" * 64),
    ],
)
def test_a_list_of_files_predict_did_not_write_is_refused_before_the_model_loads(trained_dir, tmp_path, monkeypatch, capsys, listed):
    from bio_mrc.inference import TrainedModel

    (tmp_path / "p.span.json").write_bytes(b"{}")
    (tmp_path / "p.answers.files.json").write_text(listed, encoding="utf-8")
    monkeypatch.setattr(TrainedModel, "load", lambda *args, **kwargs: pytest.fail("the model loaded"))
    assert predict(trained_dir, tmp_path / "p.json", "--decoding", "bio") == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: ") and "no list of the files bio-mrc predict wrote" in line
    assert line.endswith(f"(in {tmp_path / 'p.answers.files.json'})")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["p.answers.files.json", "p.span.json"]


def test_a_rerun_keeps_the_files_another_output_in_the_folder_lists_alike(trained_dir, tmp_path):
    """A folder where two outputs' lists name one file (``p.json`` of two decodings wrote ``p.span.json``, and the output
    ``p.span.json`` wrote it too, as a run into it was not refused): the rerun of ``p.json`` removed the other output's
    files, which its list names."""
    assert predict(trained_dir, tmp_path / "p.json", "--decoding", "span", "bio") == 0
    other = ["p.span.json", "p.span.na_probs.json", "p.span.nbest.json"]
    (tmp_path / "p.span.answers.files.json").write_text(json.dumps({name: file_sha256(tmp_path / name) for name in other}), encoding="utf-8")
    kept = {name: (tmp_path / name).read_bytes() for name in other}
    assert predict(trained_dir, tmp_path / "p.json", "--decoding", "bio") == 0
    assert {name: (tmp_path / name).read_bytes() for name in other} == kept
    assert not (tmp_path / "p.bio.json").exists() and json.loads((tmp_path / "p.answers.files.json").read_text(encoding="utf-8")).keys() == set(
        decoding_files("bio")
    )


@pytest.mark.parametrize(
    "first, then, clash, other_list",
    [
        (("p.json", "span", "bio"), ("p.span.json", "span"), "p.span.json", "p.answers.files.json"),  # p.json's p.span.json
        (("p.span.json", "joint"), ("p.json", "span", "joint"), "p.span.json", "p.span.answers.files.json"),
        (("p.joint.json", "bio"), ("p.json", "span", "auto"), "p.joint.json", "p.joint.answers.files.json"),  # auto: joint
        (("p.answers.jsonl", "bio"), ("p.json", "bio"), "p.answers.jsonl", "p.answers.jsonl.answers.files.json"),  # the stream
    ],
)
def test_a_run_that_would_write_over_a_file_another_outputs_list_names_is_refused_before_the_model_loads(
    trained_dir, tmp_path, monkeypatch, capsys, first, then, clash, other_list
):
    """``--output p.span.json`` beside ``p.json``'s ``p.span.json`` wrote its files over that output's (and a rerun of
    ``p.json`` then over this one's): refused in one line naming the file and the other output's list, the folder as it was."""
    from bio_mrc.inference import TrainedModel

    assert predict(trained_dir, tmp_path / first[0], "--decoding", *first[1:]) == 0
    capsys.readouterr()
    before = contents(tmp_path)
    monkeypatch.setattr(TrainedModel, "load", lambda *args, **kwargs: pytest.fail("the model loaded"))
    assert predict(trained_dir, tmp_path / then[0], "--decoding", *then[1:]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (
        f"error: this run writes {clash}, a file of another output in this folder, whose list {other_list} "
        f"names it; give --output another name (in {tmp_path / other_list})"
    )
    assert contents(tmp_path) == before


def test_predict_to_files_refuses_to_write_over_a_file_another_outputs_list_names(trained_dir, tmp_path):
    """The decodings as the model settles them (``auto``: joint), before any file is written."""
    from bio_mrc.data.squad import load_squad
    from bio_mrc.inference import StreamPlan, TrainedModel, predict_to_files
    from bio_mrc.io import UnsafePathError

    assert predict(trained_dir, tmp_path / "p.joint.json", "--decoding", "span") == 0
    before = contents(tmp_path)
    trained = TrainedModel.load(trained_dir, precision="fp32")
    with pytest.raises(UnsafePathError, match=r"writes p\.joint\.json, .* p\.joint\.answers\.files\.json names it; give output another name"):
        predict_to_files(trained, load_squad(SAMPLE_V1).examples, StreamPlan(("span", "auto")), tmp_path / "p.json")
    assert contents(tmp_path) == before


def test_a_run_that_would_write_over_a_comparisons_file_is_refused(trained_dir, tmp_path, capsys):
    """A comparison's report and prediction files are listed in their folder (``.report-files.json``): a predict into
    one of their names wrote over it."""
    (tmp_path / "report.json").write_text("{}", encoding="utf-8")
    (tmp_path / ".report-files.json").write_text(json.dumps({"report.json": file_sha256(tmp_path / "report.json")}), encoding="utf-8")
    assert predict(trained_dir, tmp_path / "report.json", "--decoding", "span") == 2
    assert "this run writes report.json, a file of another output in this folder, whose list .report-files.json names it" in capsys.readouterr().err
    assert (tmp_path / "report.json").read_text(encoding="utf-8") == "{}"


def test_a_list_naming_the_data_is_refused_before_the_model_loads_and_the_data_stays(trained_dir, tmp_path, monkeypatch, capsys):
    from bio_mrc.inference import TrainedModel

    data = tmp_path / "p.dev.json"
    data.write_bytes(SAMPLE_V1.read_bytes())
    (tmp_path / "p.answers.files.json").write_text(json.dumps({"p.dev.json": file_sha256(data)}), encoding="utf-8")
    monkeypatch.setattr(TrainedModel, "load", lambda *args, **kwargs: pytest.fail("the model loaded"))
    assert predict(trained_dir, tmp_path / "p.json", "--decoding", "bio", data=data) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "no list of the files bio-mrc predict wrote" in line and "p.dev.json" in line and "the data" in line
    assert data.read_bytes() == SAMPLE_V1.read_bytes()


def test_predict_to_files_refuses_a_list_naming_its_data(trained_dir, tmp_path):
    from bio_mrc.data.squad import load_squad
    from bio_mrc.errors import DataFormatError
    from bio_mrc.inference import StreamPlan, TrainedModel, predict_to_files

    data = tmp_path / "p.dev.json"
    data.write_bytes(SAMPLE_V1.read_bytes())
    (tmp_path / "p.answers.files.json").write_text(json.dumps({"p.dev.json": file_sha256(data)}), encoding="utf-8")
    trained = TrainedModel.load(trained_dir, precision="fp32")
    with pytest.raises(DataFormatError, match="the data"):
        predict_to_files(trained, load_squad(data).examples, StreamPlan(("bio",)), tmp_path / "p.json", source=str(data))
    assert data.read_bytes() == SAMPLE_V1.read_bytes() and not (tmp_path / "p.answers.jsonl").exists()


def many_questions(path: Path, copies: int) -> Path:
    """The sample's questions ``copies`` times over, each copy with its own ids (official SQuAD JSON)."""
    raw = json.loads(SAMPLE_V1.read_text(encoding="utf-8"))
    articles = [
        {
            **article,
            "paragraphs": [{**paragraph, "qas": [{**qa, "id": f"{qa['id']}-{copy}"} for qa in paragraph["qas"]]} for paragraph in article["paragraphs"]],
        }
        for copy in range(copies)
        for article in raw["data"]
    ]
    path.write_text(json.dumps({"version": "1.1", "data": articles}), encoding="utf-8")
    return path


@pytest.mark.slow
def test_a_rerun_killed_mid_run_keeps_the_earlier_set_whole_and_its_resume_ends_as_a_fresh_run(trained_dir, tmp_path):
    data = many_questions(tmp_path / "many.json", copies=25)  # 200 questions
    options = ["--chunk-size", "8"]
    assert predict(trained_dir, tmp_path / "fresh" / "p.json", "--decoding", "bio", *options, data=data) == 0
    out = tmp_path / "rerun"
    assert predict(trained_dir, out / "p.json", "--decoding", "span", "joint", *options, data=data) == 0
    earlier = contents(out)
    stream = out / "p.answers.partial.jsonl"
    command = [
        sys.executable,
        "-m",
        "bio_mrc.cli",
        "predict",
        "--model",
        str(trained_dir),
        "--data",
        str(data),
        "--output",
        str(out / "p.json"),
        "--precision",
        "fp32",
        "--decoding",
        "bio",
        *options,
    ]
    killed_once_it_streams(command, stream, questions=200)
    after = contents(out)
    assert {name: after.get(name) for name in earlier} == earlier and set(after) - set(earlier) == PARTIAL
    assert predict(trained_dir, out / "p.json", "--decoding", "bio", *options, "--resume", data=data) == 0
    assert contents(out) == contents(tmp_path / "fresh")
