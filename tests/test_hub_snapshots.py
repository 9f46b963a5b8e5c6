"""Models, encoders and transformers QA checkpoints read by hub id from a Hugging Face cache laid out as huggingface_hub
lays it out (refs, snapshots of links into blobs), with the hub offline: the snapshot read, the commit named."""

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from huggingface_hub import constants

from bio_mrc.cli import main
from bio_mrc.errors import ModelFormatError
from bio_mrc.inference import AnswerExtractor, TrainedModel

from .conftest import SAMPLE_V1

WINDOW_ARGS = ["--max-seq-length", "48", "--doc-stride", "16", "--max-query-length", "12"]
FIRST, SECOND = "1" * 40, "2" * 40  # commits as the hub names them: 40 hex digits
QUESTION, CONTEXT = "Who wrote it?", "It was written by Ada Lovelace in 1843."


def cached(cache: Path, repo_id: str, folder: Path, commit: str, refs: tuple[str, ...] = ("main",)) -> Path:
    """``folder`` as snapshot ``commit`` of ``repo_id`` in ``cache``: each file a blob named by its SHA-256, linked from the
    snapshot by a relative link, each of ``refs`` naming the commit. The snapshot folder."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    snapshot = repo / "snapshots" / commit
    for file in sorted(path for path in folder.rglob("*") if path.is_file()):
        data = file.read_bytes()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        link = snapshot / file.relative_to(folder)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    for ref in refs:
        (repo / "refs" / ref).write_text(commit)
    return snapshot


def calibrated_copy(model: Path, folder: Path) -> Path:
    """``model`` with a calibrator of 1/2 for every answer: its probability tells which snapshot answered."""
    shutil.copytree(model, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "calibration": {"span": {"method": "beta", "a": 0.0, "b": 0.0, "c": 0.0}}}))
    return folder


@pytest.fixture
def hub_cache(tmp_path, monkeypatch, span_model, tiny_encoder_dir):
    """HF_HUB_OFFLINE=1 and a cache of org/reader (main and tag v1 at FIRST, the model; dev at SECOND, it calibrated),
    org/encoder (a bare encoder) and org/qa (transformers' DistilBertForQuestionAnswering)."""
    from .test_qa_checkpoints import random_qa_model

    cache = tmp_path / "hub"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    snapshots = {"reader": cached(cache, "org/reader", span_model, FIRST, ("main", "v1")),
                 "dev": cached(cache, "org/reader", calibrated_copy(span_model, tmp_path / "dev"), SECOND, ("dev",)),
                 "encoder": cached(cache, "org/encoder", tiny_encoder_dir, FIRST),
                 "qa": cached(cache, "org/qa", random_qa_model("distilbert", tiny_encoder_dir, tmp_path / "qa"), FIRST)}
    return {"cache": cache, **snapshots}


def test_a_short_commit_hash_reads_the_cached_snapshot_it_begins(hub_cache, capsys):
    """A short hash was 'not in the Hugging Face cache' although its snapshot was there: huggingface_hub's cache reads a
    ref or a full commit alone."""
    from transformers import pipeline

    for revision, snapshot in ((SECOND[:7], hub_cache["dev"]), (FIRST[:12], hub_cache["reader"])):
        assert TrainedModel.load("org/reader", revision=revision).path == str(snapshot), revision
        assert AnswerExtractor("org/reader", revision=revision).trained.path == str(snapshot), revision
        assert pipeline("bio-mrc-qa", model="org/reader", revision=revision, device="cpu").model.name_or_path == str(snapshot)
    assert main(["extract", "--model", "org/reader", "--revision", SECOND[:7], "--question", QUESTION, "--context", CONTEXT]) == 0
    assert json.loads(capsys.readouterr().out)["probability"] == 0.5


def test_a_short_hash_of_two_cached_commits_is_one_line_naming_them(hub_cache, span_model):
    cached(hub_cache["cache"], "org/reader", span_model, "2" * 39 + "f", ())
    with pytest.raises(ModelFormatError) as refused:
        TrainedModel.load("org/reader", revision="2222")
    assert str(refused.value) == (f"revision '2222' begins 2 commits in the Hugging Face cache ({SECOND}, {'2' * 39 + 'f'}): "
                                  "give more of its hash (in org/reader)")


def test_serve_and_the_answer_page_name_a_hub_model_by_its_id_and_commit(hub_cache, tmp_path, monkeypatch, capsys):
    """They named it by its snapshot folder's name, the bare commit hash (`"model": "2222…"`), and serve's first line by
    the id and revision alone, so which snapshot answered was not said."""
    pytest.importorskip("fastapi")
    from types import SimpleNamespace

    from fastapi.testclient import TestClient

    from bio_mrc.serving import app, server
    from bio_mrc.serving.app import create_app

    extractor = AnswerExtractor.from_pretrained("org/reader", revision="dev", device="cpu")
    with TestClient(create_app(extractor)) as client:
        assert client.get("/health").json()["model"] == "org/reader@2222222"
    stub = SimpleNamespace(state=SimpleNamespace(helper=SimpleNamespace(start=lambda: None), scheduler=SimpleNamespace(close=None)))
    monkeypatch.setattr(app, "create_app", lambda extractor, config: stub)
    monkeypatch.setattr(server, "serve_until_stopped", lambda *args, **kwargs: None)
    monkeypatch.setattr(server, "check_servable", lambda *args: None)
    server.run_server("org/reader", revision="dev", device="cpu")
    assert capsys.readouterr().err.splitlines()[-1] == (f"serving org/reader at revision dev (commit {SECOND}) on "
                                                        "http://127.0.0.1:8000 (API docs at /docs)")
    page = tmp_path / "page.html"
    assert main(["extract", "--model", "org/reader", "--question", QUESTION, "--context", CONTEXT, "--html", str(page)]) == 0
    assert "org/reader@1111111" in page.read_text()


def test_a_model_trained_from_a_hub_id_names_the_id_and_the_commit_it_read(hub_cache, tmp_path):
    """The card named the id (and the revision where one was given) but not the commit read, which a branch moves on
    from; the run record holds the snapshot read (encoder_path, named by its commit)."""
    out = tmp_path / "continued"
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(out), "--init-from", "org/reader", "--revision", "dev",
                 "--heads", "span", "--epochs", "1", *WINDOW_ARGS]) == 0
    record = json.loads((out / "bio_mrc_run.json").read_text())
    assert (record["train"]["init_from"], record["train"]["revision"], record["encoder_path"]) == ("org/reader", "dev", str(hub_cache["dev"]))
    assert f"| encoder | that of `org/reader` at revision `dev`, commit `{SECOND}` |" in (out / "README.md").read_text()
    out = tmp_path / "from-encoder"
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(out), "--encoder", "org/encoder", "--heads", "span",
                 "--epochs", "1", *WINDOW_ARGS]) == 0
    assert json.loads((out / "bio_mrc_run.json").read_text())["encoder_path"] == str(hub_cache["encoder"])
    assert f"| encoder | `org/encoder` at commit `{FIRST}` |" in (out / "README.md").read_text()


def test_every_door_answers_from_a_cached_id_as_from_its_folder(hub_cache, span_model, tmp_path, capsys):
    """A bio_mrc model and transformers' QA model read by id through the cache's links answer as the folders do."""
    from transformers import pipeline

    from .test_qa_checkpoints import random_qa_model

    qa = random_qa_model("distilbert", span_model.parent / "tiny-bert", tmp_path / "qa-again")
    for model_id, folder in (("org/reader", span_model), ("org/qa", qa)):
        expected = AnswerExtractor.from_pretrained(str(folder), device="cpu")(QUESTION, CONTEXT).to_dict()
        assert AnswerExtractor.from_pretrained(model_id, device="cpu")(QUESTION, CONTEXT).to_dict() == expected, model_id
        assert AnswerExtractor(model_id)(QUESTION, CONTEXT).to_dict() == expected, model_id
        answered = pipeline("bio-mrc-qa", model=model_id, device="cpu")(question=QUESTION, context=CONTEXT)
        assert answered["answer"] == expected["answer"], model_id
        printed = []
        for model in (str(folder), model_id):
            assert main(["extract", "--model", model, "--question", QUESTION, "--context", CONTEXT, "--device", "cpu"]) == 0
            printed.append(json.loads(capsys.readouterr().out))
        assert printed[0] == printed[1], model_id


@pytest.mark.parametrize("damage", ["blob removed", "blob incomplete", "link to no blob"])
def test_a_partly_downloaded_snapshot_is_one_line_at_every_door(hub_cache, span_model, tmp_path, capsys, damage):
    """A blob gone, one still downloading (huggingface_hub links it into the snapshot once complete) or a snapshot link
    pointing at no blob: the weights are missing, said in one line naming the id and the snapshot."""
    snapshot = cached(hub_cache["cache"], "org/partial", span_model, FIRST)
    weights = snapshot / "model.safetensors"
    blob = Path(os.path.realpath(weights))
    if damage == "blob incomplete":
        weights.unlink()
        blob.rename(blob.with_name(blob.name + ".incomplete"))
    elif damage == "blob removed":
        blob.unlink()
    else:
        weights.unlink()
        weights.symlink_to("../../blobs/" + "0" * 64)
    said = f": an unfinished or partial copy? (in org/partial, cached as {snapshot})"
    with pytest.raises(ModelFormatError) as refused:
        TrainedModel.load("org/partial")
    assert str(refused.value) == "no weights (model.safetensors or pytorch_model.bin)" + said
    for command in (["extract", "--model", "org/partial", "--question", QUESTION, "--context", CONTEXT],
                    ["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "out"), "--init-from", "org/partial"]):
        assert main(command) == 2
        (line,) = capsys.readouterr().err.splitlines()
        assert line.startswith("error: no weights (model.safetensors") and line.endswith(said), command
    assert not (tmp_path / "out").exists()


def test_a_snapshot_file_linked_outside_the_cache_is_read(hub_cache, span_model, tmp_path):
    """As huggingface_hub's own links may point anywhere (a cache moved, a shared blob store), the file is read where it
    points."""
    snapshot = cached(hub_cache["cache"], "org/linked", span_model, FIRST)
    outside = shutil.copy(span_model / "model.safetensors", tmp_path / "weights.safetensors")
    (snapshot / "model.safetensors").unlink()
    (snapshot / "model.safetensors").symlink_to(outside)
    expected = AnswerExtractor.from_pretrained(str(span_model))(QUESTION, CONTEXT).to_dict()
    assert AnswerExtractor.from_pretrained("org/linked")(QUESTION, CONTEXT).to_dict() == expected


def test_a_repository_of_another_shape_is_one_line(hub_cache, span_model, tmp_path):
    """A pipeline's repository (model_index.json and a folder a part) or a model in a subfolder: no config.json at the
    top, refused as any folder without one; a subfolder is given as a local folder of the snapshot."""
    shaped = tmp_path / "shaped"
    shutil.copytree(span_model, shaped / "reader")
    (shaped / "model_index.json").write_text(json.dumps({"_class_name": "SomePipeline", "reader": ["bio_mrc", "BioMrcForQuestionAnswering"]}))
    snapshot = cached(hub_cache["cache"], "org/shaped", shaped, FIRST)
    with pytest.raises(ModelFormatError) as refused:
        TrainedModel.load("org/shaped")
    assert str(refused.value) == f"not a saved model: no config.json (train one with `bio-mrc train`) (in org/shaped, cached as {snapshot})"
    assert TrainedModel.load(snapshot / "reader").decodings == ["span"]


def test_a_local_folder_of_the_ids_name_wins_over_the_cached_id(hub_cache, tiny_encoder_dir, tmp_path, monkeypatch):
    """A folder ./org/reader is read, not the cached org/reader, at every door (here a bare encoder, refused as one)."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(tiny_encoder_dir, tmp_path / "org" / "reader")
    with pytest.raises(ModelFormatError, match=r"^config.json: a bert model, not a bio_mrc model .*\(in org/reader\)$"):
        TrainedModel.load("org/reader")


MOVED = "3" * 40  # the commit the default branch moves on to


def killed_runs(sample_v1, tmp_path, names):
    """A span run continuing org/reader for each of ``names``, killed at step 4 (a checkpoint at step 3); their config."""
    from bio_mrc.training.config import TrainConfig
    from bio_mrc.training.train import train_model

    from .training_kill import Killed, KillAtStep

    config = TrainConfig(init_from="org/reader", heads="span", max_seq_length=32, doc_stride=8, max_query_length=12, epochs=1,
                         batch_size=4, learning_rate=1e-3, seed=3)
    for name in names:
        with pytest.raises(Killed):
            train_model(sample_v1.examples, config, tmp_path / name, checkpoint_steps=3, callbacks=[KillAtStep(4)])
    return config


def move_main(hub_cache, span_model, tmp_path):
    """org/reader's main moves on to MOVED: other weights (each one more)."""
    from safetensors.torch import load_file, save_file

    moved = shutil.copytree(span_model, tmp_path / "moved-model")
    weights = load_file(moved / "model.safetensors")
    save_file({name: tensor + 1 for name, tensor in weights.items()}, moved / "model.safetensors", metadata={"format": "pt"})
    cached(hub_cache["cache"], "org/reader", moved, MOVED)


def test_a_training_from_a_hub_id_resumes_from_the_commit_it_began_from_after_the_branch_moved(hub_cache, span_model, sample_v1,
                                                                                               tmp_path):
    """Where the branch moved to another commit before the resume, the resume was refused; the commit the run began
    from is still cached, so the run continues from it, said in one note, and ends as a run the branch never moved under."""
    from safetensors.torch import load_file

    from bio_mrc.training.recorded_commit import RecordedCommitNote
    from bio_mrc.training.train import train_model

    config = killed_runs(sample_v1, tmp_path, ("still", "moved"))
    assert train_model(sample_v1.examples, config, tmp_path / "still", checkpoint_steps=3, resume=True).steps == 6
    move_main(hub_cache, span_model, tmp_path)
    with pytest.warns(RecordedCommitNote) as noted:
        assert train_model(sample_v1.examples, config, tmp_path / "moved", checkpoint_steps=3, resume=True).steps == 6
    assert [str(note.message) for note in noted if issubclass(note.category, RecordedCommitNote)] == [
        f"org/reader: the hub id's default branch now reads commit {MOVED}; the run continues from commit {FIRST}, which it "
        "began from"]
    record = json.loads((tmp_path / "moved" / "bio_mrc_run.json").read_text())
    assert (record["encoder_path"], record["train"].get("revision")) == (str(hub_cache["reader"]), None)
    assert f"| encoder | that of `org/reader` at commit `{FIRST}` |" in (tmp_path / "moved" / "README.md").read_text()
    still, moved = (load_file(tmp_path / name / "model.safetensors") for name in ("still", "moved"))
    assert still.keys() == moved.keys() and all(still[name].equal(moved[name]) for name in still)


def test_a_resume_after_the_branch_moved_is_one_line_where_the_commit_it_began_from_is_not_cached(hub_cache, span_model,
                                                                                                   sample_v1, tmp_path):
    """Offline, the commit the run began from can only be read from the cache: without it the run cannot continue, said
    in one line naming both commits and how to fetch the one it began from."""
    from bio_mrc.training.checkpoints import ResumeError
    from bio_mrc.training.train import train_model

    config = killed_runs(sample_v1, tmp_path, ("moved",))
    move_main(hub_cache, span_model, tmp_path)
    shutil.rmtree(hub_cache["reader"])
    with pytest.raises(ResumeError) as refused:
        train_model(sample_v1.examples, config, tmp_path / "moved", checkpoint_steps=3, resume=True)
    checkpoints = tmp_path / "moved" / "checkpoints"
    assert str(refused.value) == (
        f"cannot resume from {checkpoints / 'checkpoint-3'}: the hub id's default branch now reads commit {MOVED}, and commit "
        f"{FIRST}, which the run began from, is not in the Hugging Face cache ({hub_cache['cache']}); fetch it (`hf download "
        f"org/reader --revision {FIRST}`, the hub reachable) to continue the run, or delete {checkpoints} to start over")
    assert (checkpoints / "checkpoint-3").is_dir()


@pytest.mark.parametrize("revision, shown", [(None, "org/reader"), ("dev", "org/reader@dev")])
def test_the_fresh_head_note_of_a_hub_id_names_it_as_given(hub_cache, tmp_path, capfd, revision, shown):
    """It named the cached snapshot's folder, a long path in the Hugging Face cache, for the id the user typed."""
    given = ["--revision", revision] if revision else []
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "joint"), "--init-from", "org/reader",
                 *given, "--epochs", "1", *WINDOW_ARGS]) == 0
    notes = [line for line in capfd.readouterr().err.splitlines() if "fresh weights" in line]
    assert notes == [f"note: {shown} has no bio head: it starts from fresh weights"]


def test_a_hub_model_whose_weights_lack_encoder_tensors_is_refused_not_loaded_half_random(hub_cache, span_model, tmp_path):
    """``from_pretrained`` of a hub id has no folder check before the load: encoder weights its file lacks would start
    from random values with no word, the load report hidden. Refused in one line, as a local folder's are."""
    from safetensors.torch import load_file, save_file

    from bio_mrc.model import BioMrcForQuestionAnswering

    partial = tmp_path / "partial"
    shutil.copytree(span_model, partial)
    weights = load_file(partial / "model.safetensors")
    dropped = sorted(name for name in weights if ".layer.1.attention.self." in name)
    save_file({name: value for name, value in weights.items() if name not in dropped}, partial / "model.safetensors",
              metadata={"format": "pt"})
    cached(hub_cache["cache"], "org/partial", partial, FIRST)
    with pytest.raises(ModelFormatError) as refused:
        BioMrcForQuestionAnswering.from_pretrained("org/partial")
    assert str(refused.value) == (f"its saved weights lack 6 tensors the config implies ({', '.join(dropped[:3])} and 3 more): "
                                  "they would start from random values (in org/partial)")
