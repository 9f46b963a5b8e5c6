"""An encoder, a model or a QA model folder whose files are broken (config.json that is no JSON or names no model type,
weights cut short or with a corrupt header, tokenizer files that do not parse) is refused from its files alone, before
torch loads, in the words its loading says once torch has loaded; nothing is written first."""

import json
import shutil
from pathlib import Path

import pytest

from bio_mrc.errors import ModelFormatError

from .conftest import SAMPLE_V1, untrained_model_folder
from .test_early_refusals import free_port, refused


def cut_weights(folder: Path) -> None:
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])


def corrupt_header(folder: Path) -> None:
    data = bytearray((folder / "model.safetensors").read_bytes())
    data[8:40] = b"\xff" * 32  # inside the JSON header that follows its 8-byte length
    (folder / "model.safetensors").write_bytes(bytes(data))


def cut_tokenizer(folder: Path) -> None:
    text = (folder / "tokenizer.json").read_text(encoding="utf-8")
    (folder / "tokenizer.json").write_text(text[: len(text) // 2], encoding="utf-8")


def edit_encoder_config(folder: Path, edit) -> None:
    """``edit`` the encoder's config: the file itself, or a bio_mrc model's ``encoder`` object in it."""
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    edit(config["encoder"] if config.get("model_type") == "bio_mrc" else config)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")


def without_model_type(folder: Path) -> None:
    edit_encoder_config(folder, lambda encoder: encoder.pop("model_type"))


# Each way a folder is broken, and what its refusal says (the folder appended).
BREAKS = {
    "cut-weights": cut_weights,
    "corrupt-header": corrupt_header,
    "cut-tokenizer": cut_tokenizer,
    "no-model-type": without_model_type,
    "size-not-integer": lambda folder: edit_encoder_config(folder, lambda encoder: encoder.update(hidden_size="x")),
    "config-not-json": lambda folder: (folder / "config.json").write_text("{oops", encoding="utf-8"),
    "tokenizer-config-not-json": lambda folder: (folder / "tokenizer_config.json").write_text("{oops", encoding="utf-8"),
}
NOT_JSON = "not valid JSON (a truncated or corrupt file?): Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
SAID = {
    "cut-weights": "model.safetensors: cut short: the header names {named} bytes of tensors, the file holds {held}",
    "corrupt-header": "model.safetensors: its header is not valid JSON (a corrupt file?)",
    "cut-tokenizer": "tokenizer.json: not a tokenizer file tokenizers can read (a truncated or corrupt file?): ",
    "no-model-type": "config.json: {where}model_type is missing: give the encoder's (\"bert\")",
    "size-not-integer": "config.json: {where}hidden_size must be an integer in [1, 16,384], got \"x\"",
    "config-not-json": f"config.json: {NOT_JSON}",
    "tokenizer-config-not-json": f"tokenizer_config.json: {NOT_JSON}",
}


def broken_copies(whole: Path, root: Path) -> dict[str, Path]:
    folders = {}
    for name, breaking in BREAKS.items():
        folders[name] = Path(shutil.copytree(whole, root / name))
        breaking(folders[name])
    return folders


@pytest.fixture(scope="module")
def broken_encoders(tiny_encoder_dir, tmp_path_factory) -> dict[str, Path]:
    return broken_copies(tiny_encoder_dir, tmp_path_factory.mktemp("broken-encoders"))


@pytest.fixture(scope="module")
def broken_models(tiny_encoder_dir, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("broken-model-files")
    whole = untrained_model_folder(tiny_encoder_dir, root / "whole", max_seq_length=48, doc_stride=16, max_query_length=12)
    return broken_copies(whole, root)


@pytest.fixture(scope="module")
def broken_qa_models(tiny_encoder_dir, tmp_path_factory) -> dict[str, Path]:
    from .test_qa_checkpoints import random_qa_model

    root = tmp_path_factory.mktemp("broken-qa-models")
    return broken_copies(random_qa_model("distilbert", tiny_encoder_dir, root / "whole"), root)


def said(name: str, folder: Path, where: str = "") -> str:
    """The refusal of the folder broken as ``name`` (a cut tokenizer's parser message left out: its prefix is matched)."""
    if name == "cut-weights":
        from bio_mrc.model_folder import safetensors_shapes

        with pytest.raises(ModelFormatError) as refusal:
            safetensors_shapes(folder, "model.safetensors")
        return str(refusal.value)
    return f"{SAID[name].format(where=where)}{'' if name == 'cut-tokenizer' else f' (in {folder})'}"


def refusal_of(check) -> str:
    with pytest.raises(ModelFormatError) as refusal:
        check()
    return str(refusal.value)


def test_a_broken_encoder_is_refused_from_its_files_in_its_loadings_words(broken_encoders):
    """An encoder folder without a model_type ended in transformers' ValueError, and one whose tokenizer_config.json is
    no JSON in "its tokenizer files cannot be loaded", naming no file; each of these was found only once torch had
    loaded. Its files alone now refuse them, as the check before training does."""
    from bio_mrc.encoders import resolve_encoder
    from bio_mrc.model_folder import check_encoder_files

    for name, folder in broken_encoders.items():
        early, late = refusal_of(lambda folder=folder: check_encoder_files(folder)), refusal_of(lambda folder=folder: resolve_encoder(str(folder)))
        assert early == late, name
        assert early.startswith(said(name, folder)) if name == "cut-tokenizer" else early == said(name, folder), name


def test_a_broken_model_is_refused_from_its_files_in_its_loadings_words(broken_models):
    """A model folder's weights cut short or with a corrupt header, its tokenizer.json cut short and its encoder's
    missing model_type were found only once the encoder's classes were built (torch loaded)."""
    from bio_mrc.inference import TrainedModel
    from bio_mrc.model_folder import check_model_files

    for name, folder in broken_models.items():
        early, late = refusal_of(lambda folder=folder: check_model_files(folder)), refusal_of(lambda folder=folder: TrainedModel.load(folder))
        assert early == late, name
        expected = said(name, folder, where="encoder.")
        assert early.startswith(expected) if name == "cut-tokenizer" else early == expected, name


def test_a_broken_qa_model_is_refused_from_its_files_in_its_conversions_words(broken_qa_models):
    """convert named a QA model whose config.json is no JSON "not an extractive question-answering model", and found
    its cut weights, corrupt header, broken tokenizer files and missing model_type only once torch had loaded."""
    from bio_mrc.model_folder import check_convertible
    from bio_mrc.qa_checkpoints import check_qa_folder

    for name, folder in broken_qa_models.items():
        early = refusal_of(lambda folder=folder: check_convertible(folder, str(folder)))
        expected = said(name, folder)
        assert early.startswith(expected) if name == "cut-tokenizer" else early == expected, name
        assert refusal_of(lambda folder=folder: check_qa_folder(folder)) == early, name


@pytest.mark.slow
def test_broken_model_files_are_refused_before_torch_loads(broken_encoders, broken_models, broken_qa_models, tmp_path):
    """Every command that reads an encoder or a model refuses a broken one before torch loads, and writes nothing."""
    data, new, out = str(SAMPLE_V1), str(tmp_path / "new"), str(tmp_path / "out")
    halves = [{"path": data, "split": {"fractions": [0.5, 0.5], "part": part, "seed": 0}} for part in (0, 1)]
    configs = {name: tmp_path / f"{name}.json" for name in ("no-model-type", "tokenizer-config-not-json")}
    for name, config in configs.items():  # the second wrote its first model's folder before it was refused
        config.write_text(json.dumps({"name": "broken", "train": halves[0], "eval": halves[1],
                                      "defaults": {"encoder": str(broken_encoders[name])},
                                      "runs": [{"name": "joint", "heads": "span+bio"}]}), encoding="utf-8")
    model = {name: str(folder) for name, folder in broken_models.items()}
    result = refused([
        ["train", "--train", data, "--output-dir", new, "--encoder", str(broken_encoders["config-not-json"])],
        ["train", "--train", data, "--output-dir", new, "--encoder", str(broken_encoders["cut-weights"])],
        ["train", "--train", data, "--output-dir", new, "--encoder", str(broken_encoders["tokenizer-config-not-json"])],
        *[["compare", "--config", str(config), "--output-dir", new] for config in configs.values()],
        ["predict", "--model", model["cut-weights"], "--data", data, "--output", str(tmp_path / "new" / "preds.json")],
        ["extract", "--model", model["corrupt-header"], "--question", "Who?", "--context", "Ada wrote it."],
        ["tune", "--model", model["no-model-type"], "--data", data, "--output-dir", new],
        ["serve", "--model", model["cut-tokenizer"], "--port", free_port()],
        ["export", "--model", model["cut-weights"], "--output", out],
        ["convert", "--model", str(broken_qa_models["cut-weights"]), "--output", out],
        ["convert", "--model", str(broken_qa_models["config-not-json"]), "--output", out],
    ], tmp_path)
    encoders, qa = broken_encoders, broken_qa_models
    assert [code for code, _ in result["lines"]] == [2] * 12
    assert [line for _, line in result["lines"]] == [f"error: {text}" for text in [
        said("config-not-json", encoders["config-not-json"]), said("cut-weights", encoders["cut-weights"]),
        said("tokenizer-config-not-json", encoders["tokenizer-config-not-json"]),
        f"runs[0].encoder: {said('no-model-type', encoders['no-model-type'])}",
        f"runs[0].encoder: {said('tokenizer-config-not-json', encoders['tokenizer-config-not-json'])}",
        said("cut-weights", broken_models["cut-weights"]), said("corrupt-header", broken_models["corrupt-header"]),
        said("no-model-type", broken_models["no-model-type"], where="encoder."),
        result["lines"][8][1].removeprefix("error: "), said("cut-weights", broken_models["cut-weights"]),
        said("cut-weights", qa["cut-weights"]), said("config-not-json", qa["config-not-json"])]]
    assert result["lines"][8][1].startswith(f"error: {said('cut-tokenizer', broken_models['cut-tokenizer'])}")
    assert result["heavy"] == []
    assert not Path(new).exists() and not Path(out).exists()
