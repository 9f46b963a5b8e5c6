"""Encoders and model folders of another kind than bio_mrc reads (a decoder, a sequence-to-sequence model, weights or
a tokenizer of another model, outputs turned into tuples) are one ModelFormatError naming the folder and the problem,
before any work: never a traceback, never a model trained or answering on random weights or one-way attention."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bio_mrc.cli import main
from bio_mrc.encoders import load_tokenizer, resolve_encoder
from bio_mrc.errors import ModelFormatError
from bio_mrc.inference import TrainedModel
from .conftest import WINDOW_ARGS


@pytest.fixture(scope="module")
def saved_model(tiny_encoder_dir, tmp_path_factory):
    from transformers import AutoTokenizer

    from bio_mrc.model import BioMrcForQuestionAnswering

    folder = tmp_path_factory.mktemp("model") / "tiny"
    BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), max_seq_length=64, doc_stride=16,
                                            max_query_length=16).save_pretrained(str(folder))
    AutoTokenizer.from_pretrained(str(tiny_encoder_dir)).save_pretrained(str(folder))
    return folder


def copy_with(source: Path, folder: Path, encoder: bool = False, **values) -> Path:
    """A copy of ``source`` whose config.json (its encoder's, with ``encoder``) holds ``values``."""
    shutil.copytree(source, folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    (config["encoder"] if encoder else config).update(values)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def refused_encoder(folder: Path) -> str:
    with pytest.raises(ModelFormatError) as refused:
        resolve_encoder(str(folder))
    assert refused.value.source == str(folder)
    return refused.value.problem


# --- model folders --------------------------------------------------------------------------------
def test_a_model_whose_config_turns_return_dict_off_is_refused_not_a_traceback(saved_model, tmp_path):
    """Its forward pass returned a tuple, and the first question ended in AttributeError: 'tuple' object has no
    attribute 'start_logits'."""
    folder = copy_with(saved_model, tmp_path / "model", return_dict=False)
    with pytest.raises(ModelFormatError) as refused:
        TrainedModel.load(folder)
    assert str(refused.value) == f"config.json: return_dict must be true (the forward pass's outputs by name), got false: delete it (in {folder})"


def test_a_model_whose_encoder_is_marked_a_decoder_is_refused_not_run_with_causal_attention(saved_model, tmp_path):
    """encoder.is_decoder: true loaded and answered with each token reading only those before it: other scores, no error."""
    folder = copy_with(saved_model, tmp_path / "model", encoder=True, is_decoder=True)
    with pytest.raises(ModelFormatError, match=r"^config.json: encoder.is_decoder is true: the encoder would read each token "
                                               r"with only the tokens before it \(causal attention\)"):
        TrainedModel.load(folder)


def test_a_bio_mrc_model_whose_model_type_was_edited_is_named_as_not_one(saved_model, tmp_path, capsys):
    """Its class name ends in ForQuestionAnswering, so it was read as transformers' QA model: the line named a missing
    encoder.vocab_size."""
    folder = copy_with(saved_model, tmp_path / "model", model_type="nosuch")
    assert main(["extract", "--model", str(folder), "--question", "Who?", "--context", "Ada."]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: config.json: a nosuch model, not a bio_mrc model (model_type \"nosuch\"); a bare encoder is trained into one with "
        f"`bio-mrc train --encoder PATH` (in {folder})")


# --- encoders -------------------------------------------------------------------------------------
def test_an_encoder_marked_a_decoder_is_refused(tiny_encoder_dir, tmp_path):
    """A BERT saved with is_decoder: true trained a model whose tokens never read the context after them."""
    problem = refused_encoder(copy_with(tiny_encoder_dir, tmp_path / "encoder", is_decoder=True))
    assert problem.startswith("config.json: is_decoder is true: the encoder would read each token with only the tokens before it")


def data_cut_short(folder: Path) -> Path:
    """Official SQuAD JSON cut short after its first article's start: a whole read refuses it, a look at its start does not."""
    path = folder / "cut-short.json"
    path.write_text('{"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": "Some text.", "qas": [', encoding="utf-8")
    return path


def test_a_model_type_that_is_no_string_is_refused_in_one_line(tiny_encoder_dir, saved_model, tmp_path, capsys):
    """A list or an object as model_type was looked up in transformers' tables: train --encoder ended in a traceback
    (TypeError: unhashable type: 'list'), and a model folder's encoder was refused as 'unhashable type'."""
    encoder = copy_with(tiny_encoder_dir, tmp_path / "encoder", model_type=["bert"])
    code = main(["train", "--train", str(data_cut_short(tmp_path)), "--output-dir", str(tmp_path / "out"),
                 "--encoder", str(encoder), *WINDOW_ARGS])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: config.json: model_type must be a string (\"bert\"), got [\"bert\"] (in {encoder})")
    assert not (tmp_path / "out").exists()
    folder = copy_with(saved_model, tmp_path / "model", encoder=True, model_type={"name": "bert"})
    with pytest.raises(ModelFormatError) as refused:
        TrainedModel.load(folder)
    assert refused.value.problem == "config.json: encoder.model_type must be a string (\"bert\"), got {\"name\": \"bert\"}"


def test_a_decoder_only_or_sequence_to_sequence_model_is_refused_naming_what_it_is(tiny_encoder_dir, tmp_path):
    """GPT-2 and T5 given to train --encoder ended in a traceback (ValueError: no attention dropout rate)."""
    from transformers import GPT2Config, GPT2Model, T5Config, T5Model

    models = {"gpt2": GPT2Model(GPT2Config(vocab_size=224, n_embd=32, n_layer=1, n_head=2, n_positions=64)),
              "t5": T5Model(T5Config(vocab_size=224, d_model=32, d_ff=64, num_layers=1, num_heads=2, d_kv=16))}
    problems = {}
    for name, model in models.items():
        model.save_pretrained(str(tmp_path / name))
        shutil.copy(tiny_encoder_dir / "tokenizer.json", tmp_path / name / "tokenizer.json")
        problems[name] = refused_encoder(tmp_path / name)
    assert problems["gpt2"].startswith("config.json: model_type \"gpt2\" builds GPT2Model, a decoder-only model whose tokens "
                                       "read only the tokens before them")
    assert problems["t5"].startswith("config.json: is_encoder_decoder is true: a sequence-to-sequence model (t5), not an encoder")


def test_an_encoders_weights_of_another_model_or_other_sizes_are_refused(tiny_encoder_dir, tmp_path):
    """Weights of another model trained a model on a random encoder without a word; weights of other sizes than
    config.json says ended in transformers' RuntimeError."""
    from transformers import GPT2Config, GPT2Model

    other = shutil.copytree(tiny_encoder_dir, tmp_path / "other")
    GPT2Model(GPT2Config(vocab_size=224, n_embd=32, n_layer=1, n_head=2, n_positions=64)).save_pretrained(str(tmp_path / "gpt2"))
    shutil.copy(tmp_path / "gpt2" / "model.safetensors", other / "model.safetensors")
    assert refused_encoder(other).startswith("model.safetensors: lacks 37 of the tensors BertModel builds from config.json "
                                             "(embeddings.word_embeddings.weight, ")
    resized = copy_with(tiny_encoder_dir, tmp_path / "resized", intermediate_size=48)  # 3 tensors a layer, 2 layers
    assert refused_encoder(resized) == ("model.safetensors: 6 tensors do not have the shapes config.json implies (e.g. "
                                        "encoder.layer.0.intermediate.dense.weight: [64, 32], config.json: [48, 32])")


def test_an_encoder_saved_with_a_pretraining_head_and_its_prefix_still_loads(tiny_encoder_dir, tmp_path):
    """A checkpoint of BertForMaskedLM names its encoder's tensors bert.*, and holds a head bio_mrc leaves out."""
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    config = BertConfig.from_pretrained(str(tiny_encoder_dir))
    BertForMaskedLM(config).save_pretrained(str(tmp_path / "mlm"))
    AutoTokenizer.from_pretrained(str(tiny_encoder_dir)).save_pretrained(str(tmp_path / "mlm"))
    assert resolve_encoder(str(tmp_path / "mlm")) == str(tmp_path / "mlm")


def test_an_encoder_whose_tokenizer_maps_past_its_embeddings_is_refused_naming_the_tokenizer(tiny_encoder_dir, tmp_path):
    """It was refused once the encoder ran, as an encoder that 'does not run on padded windows (IndexError)'."""
    from transformers import BertConfig, BertModel

    folder = shutil.copytree(tiny_encoder_dir, tmp_path / "encoder")
    BertModel(BertConfig.from_pretrained(str(tiny_encoder_dir), vocab_size=100)).save_pretrained(str(folder))
    assert refused_encoder(folder) == ("tokenizer.json: maps tokens to ids up to 223, past the encoder's vocab_size 100 "
                                       "(config.json): the tokenizer is not this model's")


def test_a_file_given_as_the_encoder_is_named_as_a_file(tmp_path):
    (tmp_path / "encoder").write_text("not a model", encoding="utf-8")
    assert refused_encoder(tmp_path / "encoder").startswith("is a file, not an encoder's folder")


def test_a_tokenizer_that_starts_a_window_with_no_special_token_is_refused(tiny_encoder_dir, tmp_path):
    """GPT-2's tokenizer frames a question and a context without [CLS]: the no-answer score was read at the
    question's first word, and train trained on it without a word."""
    folder = shutil.copytree(tiny_encoder_dir, tmp_path / "encoder")
    tokenizer = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    (folder / "tokenizer.json").write_text(json.dumps({**tokenizer, "post_processor": None}), encoding="utf-8")
    settings = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    (folder / "tokenizer_config.json").write_text(json.dumps({**settings, "tokenizer_class": "PreTrainedTokenizerFast"}),
                                                  encoding="utf-8")
    with pytest.raises(ModelFormatError, match=r"^its tokenizer starts a window \('Who wrote it\?', 'Ada wrote it.'\) as "
                                               r"'who w ##r ##o', not with a special token such as \[CLS\] or <s>"):
        load_tokenizer(str(folder))


def test_train_refuses_a_broken_encoder_before_reading_the_data(tiny_encoder_dir, tmp_path, capsys):
    """The data was read (and its errors named) first: a large training file was read whole before a decoder given as
    the encoder was refused. A file that is there but cut short after its start shows it is not read before the
    encoder is checked (a missing file is named at once, before either)."""
    encoder = copy_with(tiny_encoder_dir, tmp_path / "encoder", is_decoder=True)
    code = main(["train", "--train", str(data_cut_short(tmp_path)), "--output-dir", str(tmp_path / "out"), "--encoder", str(encoder),
                 *WINDOW_ARGS])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("error: config.json: is_decoder is true")


def saved_decoder(config_class: str, folder: Path, tiny_encoder_dir: Path, **options) -> Path:
    """A tiny random model of ``config_class`` saved with the tests' tokenizer."""
    import transformers
    from transformers import AutoModel

    AutoModel.from_config(getattr(transformers, config_class)(vocab_size=224, **options)).save_pretrained(str(folder))
    shutil.copy(tiny_encoder_dir / "tokenizer.json", folder / "tokenizer.json")
    return folder


def test_a_decoder_only_model_whose_config_does_not_say_causal_is_refused(tiny_encoder_dir, tmp_path):
    """BLOOM's attention marks itself causal nowhere and its config has no is_decoder: it was taken for an encoder and
    trained with each token reading only those before it. MPT and XGLM alike."""
    small = {"hidden_size": 32, "n_layer": 1, "n_head": 2}
    folders = {"bloom": saved_decoder("BloomConfig", tmp_path / "bloom", tiny_encoder_dir, **small),
               "mpt": saved_decoder("MptConfig", tmp_path / "mpt", tiny_encoder_dir, d_model=32, n_layers=1, n_heads=2),
               "xglm": saved_decoder("XGLMConfig", tmp_path / "xglm", tiny_encoder_dir, d_model=32, num_layers=1,
                                     attention_heads=2, ffn_dim=64)}
    built = {"bloom": "BloomModel", "mpt": "MptModel", "xglm": "XGLMModel"}
    for name, folder in folders.items():
        assert refused_encoder(folder) == (f"config.json: model_type {json.dumps(name)} builds {built[name]}, a decoder-only model "
                                           "whose tokens read only the tokens before them; bio_mrc reads the tokens of a "
                                           "bidirectional encoder (BERT, RoBERTa, DeBERTa, ...)")


def test_the_decoder_only_rule_keeps_every_encoder_family_and_names_the_decoders():
    from bio_mrc.model_folder import decoder_only

    encoders = ["bert", "roberta", "distilbert", "albert", "electra", "deberta", "deberta-v2", "mpnet", "xlm-roberta",
                "fnet", "modernbert", "longformer", "big_bird", "mobilebert", "convbert", "roformer", "squeezebert",
                "data2vec-text", "ernie", "rembert", "megatron-bert", "camembert", "xlm", "flaubert", "funnel",
                "bert-generation", "xlnet", "canine", "nystromformer"]
    decoders = ["bloom", "falcon", "gpt_neox", "opt", "llama", "mistral", "qwen2", "gemma", "gpt2", "mpt", "xglm", "mamba"]
    assert [name for name in encoders if decoder_only(name)] == []
    assert [name for name in decoders if not decoder_only(name)] == []


def test_an_encoders_pickled_weights_of_another_model_or_other_sizes_are_refused(tiny_encoder_dir, tmp_path):
    """pytorch_model.bin without model.safetensors had no weight check: GPT-2's weights trained a model on a random
    BERT without a word, and weights of other sizes ended in transformers' RuntimeError."""
    import torch
    from safetensors.torch import load_file
    from transformers import GPT2Config, GPT2Model

    def pickled(folder: Path, state: dict) -> Path:
        (folder / "model.safetensors").unlink()
        torch.save(state, folder / "pytorch_model.bin")
        return folder

    own = load_file(str(tiny_encoder_dir / "model.safetensors"))
    kept = pickled(shutil.copytree(tiny_encoder_dir, tmp_path / "kept"), own)
    assert resolve_encoder(str(kept)) == str(kept)
    gpt2 = GPT2Model(GPT2Config(vocab_size=224, n_embd=32, n_layer=1, n_head=2, n_positions=64)).state_dict()
    other = pickled(shutil.copytree(tiny_encoder_dir, tmp_path / "other"), gpt2)
    assert refused_encoder(other).startswith("pytorch_model.bin: lacks 37 of the tensors BertModel builds from config.json "
                                             "(embeddings.word_embeddings.weight, ")
    resized = pickled(copy_with(tiny_encoder_dir, tmp_path / "resized", intermediate_size=48), own)
    assert refused_encoder(resized) == ("pytorch_model.bin: 6 tensors do not have the shapes config.json implies (e.g. "
                                        "encoder.layer.0.intermediate.dense.weight: [64, 32], config.json: [48, 32])")
    (resized / "pytorch_model.bin").write_bytes(b"not a checkpoint")
    assert refused_encoder(resized).startswith("pytorch_model.bin: cannot be read as tensors alone (a corrupt file, or one "
                                               "pickling more than weights?): ")


def test_an_encoders_sharded_pickled_weights_are_checked_shard_by_shard(tiny_encoder_dir, tmp_path):
    import torch
    from safetensors.torch import load_file

    own = load_file(str(tiny_encoder_dir / "model.safetensors"))
    names = sorted(own)
    halves = {"pytorch_model-00001-of-00002.bin": names[::2], "pytorch_model-00002-of-00002.bin": names[1::2]}

    def sharded(folder: Path, weight_map: dict, dropped: str | None = None) -> Path:
        shutil.copytree(tiny_encoder_dir, folder)
        (folder / "model.safetensors").unlink()
        for shard, held in halves.items():
            if shard != dropped:
                torch.save({name: own[name] for name in held}, folder / shard)
        (folder / "pytorch_model.bin.index.json").write_text(json.dumps({"weight_map": weight_map}), encoding="utf-8")
        return folder

    weight_map = {name: shard for shard, held in halves.items() for name in held}
    kept = sharded(tmp_path / "kept", weight_map)
    assert resolve_encoder(str(kept)) == str(kept)
    first = next(iter(halves))
    partial = sharded(tmp_path / "partial", weight_map, dropped=first)
    assert refused_encoder(partial) == f"pytorch_model.bin.index.json: names a shard that is missing: {json.dumps(first)}"
    outside = sharded(tmp_path / "outside", {**weight_map, names[0]: "../elsewhere.bin"})
    assert refused_encoder(outside) == 'pytorch_model.bin.index.json: names a shard outside the folder: "../elsewhere.bin"'
    lacking = sharded(tmp_path / "lacking", {name: shard for name, shard in weight_map.items() if shard == first}, dropped=None)
    (lacking / list(halves)[1]).unlink()
    assert refused_encoder(lacking).startswith("pytorch_model.bin.index.json: lacks ")
    (kept / "pytorch_model.bin.index.json").write_text("[]", encoding="utf-8")
    assert refused_encoder(kept).startswith("pytorch_model.bin.index.json: ")


def test_a_model_saved_on_a_decoder_only_encoder_is_refused_at_load_before_its_weights(tiny_encoder_dir, tmp_path, capsys):
    """A model trained on BLOOM before such encoders were refused (its config has no is_decoder) loads no more: every
    door says why in one line naming the folder, before its weights are loaded."""
    from transformers import AutoTokenizer

    from bio_mrc.inference import AnswerExtractor
    from bio_mrc.model import BioMrcForQuestionAnswering
    from bio_mrc.model_folder import check_model_folder

    encoder = saved_decoder("BloomConfig", tmp_path / "bloom", tiny_encoder_dir, hidden_size=32, n_layer=1, n_head=2)
    folder = tmp_path / "model"
    BioMrcForQuestionAnswering.from_encoder(str(encoder), heads="span", max_seq_length=48, doc_stride=16,
                                            max_query_length=12).save_pretrained(str(folder))
    AutoTokenizer.from_pretrained(str(tiny_encoder_dir)).save_pretrained(str(folder))
    why = ("config.json: encoder.model_type \"bloom\" builds BloomModel, a decoder-only model whose tokens read only the "
           "tokens before them; bio_mrc reads the tokens of a bidirectional encoder (BERT, RoBERTa, DeBERTa, ...)")
    for load in (TrainedModel.load, AnswerExtractor, BioMrcForQuestionAnswering.from_pretrained,
                 lambda path: check_model_folder(path, onnx=True)):
        with pytest.raises(ModelFormatError) as refused:
            load(str(folder))
        assert str(refused.value) == f"{why} (in {folder})"
    data = tmp_path / "data.json"
    data.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": "Ada wrote.", "qas": [
        {"id": "q", "question": "Who?", "answers": [{"text": "Ada", "answer_start": 0}]}]}]}]}), encoding="utf-8")
    capsys.readouterr()
    assert main(["predict", "--model", str(folder), "--data", str(data), "--output", str(tmp_path / "out.json")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"error: {why} (in {folder})"]
    assert not (tmp_path / "out.json").exists()
