"""Encoders of transformers' other BERT-style families train, answer and export as BERT does: each a tiny random
model of its family with the tests' WordPiece tokenizer, trained one epoch on the sample, then answering with
exact character offsets (the slow tier: each trains a model of its own). The family-specific cases that broke once
are checked in the fast tier too, without training: a single-type encoder (RoBERTa) paired with a tokenizer that makes
types 0 and 1, and ModernBERT, whose dropout rates have other names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import transformers
from transformers import AutoModel, AutoTokenizer

from bio_mrc import AnswerExtractor
from bio_mrc.data.squad import load_squad
from bio_mrc.errors import ConfigError
from bio_mrc.inference.onnx import encoder_inputs, export_onnx
from bio_mrc.model import BioMrcForQuestionAnswering, set_encoder_dropout
from bio_mrc.model_defaults import POSITIONS_AFTER_PADDING, config_window_positions
from bio_mrc.training.train import TrainConfig, train_model

from .conftest import SAMPLE_V1

SMALL = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}
FAMILIES = {  # name: (config class, its options, whether its tokenizer makes token types)
    "distilbert": ("DistilBertConfig", {"dim": 32, "n_layers": 2, "n_heads": 2, "hidden_dim": 64, "max_position_embeddings": 64}, False),
    "albert": ("AlbertConfig", {"embedding_size": 16, "max_position_embeddings": 64, **SMALL}, True),
    "electra": ("ElectraConfig", {"embedding_size": 16, "max_position_embeddings": 64, **SMALL}, True),
    "deberta-v2": ("DebertaV2Config", {"max_position_embeddings": 64, "type_vocab_size": 0, "relative_attention": True,
                                       "position_buckets": 32, "pos_att_type": ["p2c", "c2p"], **SMALL}, True),
    "roberta": ("RobertaConfig", {"max_position_embeddings": 66, "type_vocab_size": 1, "pad_token_id": 0, **SMALL}, False),
    "roberta-with-token-types": ("RobertaConfig", {"max_position_embeddings": 66, "type_vocab_size": 1, "pad_token_id": 0, **SMALL}, True),
    "xlm-roberta": ("XLMRobertaConfig", {"max_position_embeddings": 66, "type_vocab_size": 1, "pad_token_id": 0, **SMALL}, False),
    "mpnet": ("MPNetConfig", {"max_position_embeddings": 66, "pad_token_id": 0, **SMALL}, False),
    "longformer": ("LongformerConfig", {"max_position_embeddings": 66, "type_vocab_size": 1, "pad_token_id": 0, "attention_window": 16,
                                        **SMALL}, False),
    "modernbert": ("ModernBertConfig", {"max_position_embeddings": 64, "pad_token_id": 0, "global_attn_every_n_layers": 2,
                                        "local_attention": 16, **SMALL}, False),
}
CONTEXT = "Rollo ruled Normandy. Later, William ruled England and Normandy."


def build_encoder(family: str, tokenizer_dir: Path, folder: Path) -> Path:
    """A tiny random encoder of ``family`` saved with the tests' WordPiece tokenizer, making token types or not."""
    config_class, options, token_types = FAMILIES[family]
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir), use_fast=True)
    torch.manual_seed(0)
    AutoModel.from_config(getattr(transformers, config_class)(vocab_size=len(tokenizer), **options)).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    names = ["input_ids", "attention_mask", *(["token_type_ids"] if token_types else [])]
    settings = folder / "tokenizer_config.json"
    settings.write_text(json.dumps({**json.loads(settings.read_text()), "model_input_names": names}))
    return folder


def trained_family(family: str, tiny_encoder_dir: Path, tmp_path: Path) -> Path:
    encoder = build_encoder(family, tiny_encoder_dir, tmp_path / "encoder")
    config = TrainConfig(encoder=str(encoder), heads="span+bio", max_seq_length=48, doc_stride=16, max_query_length=12,
                         epochs=1, batch_size=4, seed=1)
    return train_model(load_squad(SAMPLE_V1).examples, config, tmp_path / "model").model_dir


@pytest.mark.slow
@pytest.mark.parametrize("family", list(FAMILIES))
def test_an_encoder_family_trains_and_answers_with_exact_offsets(family, tiny_encoder_dir, tmp_path):
    model_dir = trained_family(family, tiny_encoder_dir, tmp_path)
    extractor = AnswerExtractor.from_pretrained(str(model_dir), multi_span=True)
    result = extractor("Who ruled Normandy?", CONTEXT)
    assert result.spans and all(CONTEXT[s.start:s.end] == s.text for s in result.spans)


def test_a_single_type_encoder_reads_no_token_types_its_tokenizer_makes(tiny_encoder_dir, tmp_path):
    """A RoBERTa encoder has one token type; a BERT tokenizer beside it makes type 1 for the context, for which the
    type embedding has no row: the model leaves the types out, and so does its ONNX graph."""
    encoder = build_encoder("roberta-with-token-types", tiny_encoder_dir, tmp_path / "encoder")
    model = BioMrcForQuestionAnswering.from_encoder(str(encoder), heads="span+bio", max_seq_length=48, doc_stride=16,
                                                    max_query_length=12)
    tokenizer = AutoTokenizer.from_pretrained(str(encoder))
    assert not model.takes_token_types and encoder_inputs(model, tokenizer) == ["input_ids", "attention_mask"]
    batch = tokenizer("who ruled?", "rollo ruled normandy", return_tensors="pt")
    assert batch["token_type_ids"].max() == 1
    model.eval()
    with torch.no_grad():
        with_types, without = model(**batch), model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    torch.testing.assert_close(with_types.start_logits, without.start_logits)


def test_xlm_reads_no_token_types_which_it_would_look_up_as_words(tiny_encoder_dir, tmp_path):
    """XLM's forward takes ``token_type_ids`` but adds the embedding of the word whose id is the type: with a
    tokenizer making types, every context token had word 1's embedding added (outputs differ by whole units). The model
    leaves the types out, so its windows read as the encoder reads the words alone, and so does its ONNX graph."""
    folder = tmp_path / "encoder"
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_encoder_dir))
    torch.manual_seed(0)
    AutoModel.from_config(transformers.XLMConfig(vocab_size=len(tokenizer), emb_dim=32, n_layers=2, n_heads=2,
                                                 max_position_embeddings=64)).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    model = BioMrcForQuestionAnswering.from_encoder(str(folder), heads="span", max_seq_length=48, doc_stride=16,
                                                    max_query_length=12).eval()
    assert not model.takes_token_types and encoder_inputs(model, tokenizer) == ["input_ids", "attention_mask"]
    batch = tokenizer("who ruled?", "rollo ruled normandy", return_tensors="pt")
    assert batch["token_type_ids"].max() == 1
    with torch.no_grad():
        words_alone = model.encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
        assert not torch.allclose(model.encoder(**batch).last_hidden_state, words_alone, atol=1e-3)  # the types shift it
        torch.testing.assert_close(model(**batch).start_logits,
                                   model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).start_logits)


# A family of each numbering rule, and every family numbering after its padding id; the slow tier sweeps them all.
COUNTED_FAMILIES = sorted({"bert", "xlm", "distilbert", "electra", "deberta-v2", "modernbert", *POSITIONS_AFTER_PADDING})


def meta_built(model_type: str):
    """A default encoder of ``model_type`` and its config, built on the meta device (no weights allocated)."""
    config = transformers.AutoConfig.for_model(model_type)
    with torch.device("meta"):
        return AutoModel.from_config(config), config


@pytest.mark.parametrize("model_type", COUNTED_FAMILIES)
def test_config_json_counts_a_windows_positions_as_the_built_encoder_does(model_type):
    """train's check before torch reads the count from config.json; training's, from the built position table."""
    from bio_mrc.qa_checkpoints import usable_positions

    encoder, config = meta_built(model_type)
    assert config_window_positions(config.to_dict()) == usable_positions(encoder)
    if model_type in POSITIONS_AFTER_PADDING:  # the families the rule is for: fewer positions than the table's rows
        assert usable_positions(encoder) == config.max_position_embeddings - config.pad_token_id - 1


@pytest.mark.slow
def test_every_extractive_qa_family_counts_its_positions_from_config_json_alike():
    """A family transformers adds that numbers positions after its padding id is named in POSITIONS_AFTER_PADDING: the
    count read from config.json is the built encoder's wherever config.json holds one."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES

    from bio_mrc.qa_checkpoints import usable_positions

    differ = []
    for model_type in sorted(set(MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES) - {"lxmert"}):  # LXMERT reads images too
        try:
            encoder, config = meta_built(model_type)
        except Exception:  # noqa: BLE001 - a family whose default config builds no model alone (it needs more packages)
            continue
        early = config_window_positions(config.to_dict())  # None: no max_position_embeddings (GPT-2's n_positions)
        if early is not None and early != usable_positions(encoder):  # None leaves the count to training's check
            differ.append(model_type)
    assert differ == []


def test_a_window_fills_every_position_of_an_encoder_numbering_from_zero(tiny_encoder_dir):
    """XLM's ``embeddings`` is its word table, whose padding id is not the first position: its 64 positions hold
    windows of 64 tokens (they held 63), while RoBERTa's, numbered from after padding id 1, hold 66 - 2."""
    from bio_mrc.qa_checkpoints import usable_positions

    xlm = AutoModel.from_config(transformers.XLMConfig(vocab_size=50, emb_dim=32, n_layers=1, n_heads=2,
                                                       max_position_embeddings=64, pad_index=2))
    roberta = AutoModel.from_config(transformers.RobertaConfig(vocab_size=50, max_position_embeddings=66, pad_token_id=1,
                                                               **{**SMALL, "num_hidden_layers": 1}))
    assert (usable_positions(xlm), usable_positions(roberta)) == (64, 64)
    ids = torch.full((1, 64), 5)
    with torch.no_grad():
        assert xlm(input_ids=ids).last_hidden_state.shape == (1, 64, 32)


def test_bert_reads_its_token_types(tiny_encoder_dir):
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span")
    assert model.takes_token_types


def test_modernbert_dropout_rates_are_set_by_their_own_names():
    config = transformers.ModernBertConfig(embedding_dropout=0.2, mlp_dropout=0.2, attention_dropout=0.2)
    set_encoder_dropout(config, attention=0.0, hidden=0.05)
    assert (config.attention_dropout, config.embedding_dropout, config.mlp_dropout) == (0.0, 0.05, 0.05)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["roberta-with-token-types", "deberta-v2", "modernbert"])
def test_an_encoder_family_exports_to_onnx(family, tiny_encoder_dir, tmp_path):
    model_dir = trained_family(family, tiny_encoder_dir, tmp_path)
    record = export_onnx(model_dir, tmp_path / "exported")
    assert "token_type_ids" not in record.inputs
    spans = {backend: AnswerExtractor.from_pretrained(str(folder))("Who ruled Normandy?", CONTEXT).spans
             for backend, folder in (("torch", model_dir), ("onnx", tmp_path / "exported"))}
    assert [(s.start, s.end) for s in spans["torch"]] == [(s.start, s.end) for s in spans["onnx"]]


@pytest.mark.slow
def test_an_encoder_whose_graph_runs_at_its_traced_shape_alone_is_refused_in_one_line(tiny_encoder_dir, tmp_path, capsys):
    """Longformer's windowed attention is traced for the export's one window length: ONNX Runtime fails on the check's
    other shapes. ``export`` says so in one line and leaves no folder (before: onnxruntime's traceback)."""
    from bio_mrc.cli import main

    model_dir = trained_family("longformer", tiny_encoder_dir, tmp_path)
    assert main(["export", "--model", str(model_dir), "--output", str(tmp_path / "exported")]) == 2
    assert "error: the exported graph does not run in ONNX Runtime on windows of 29 tokens (batch 3)" in capsys.readouterr().err
    assert not (tmp_path / "exported").exists()


def test_a_roberta_window_holds_the_positions_after_the_padding_id(tiny_encoder_dir, tmp_path):
    """RoBERTa numbers positions from pad_token_id + 1: its 66 positions with padding id 0 hold windows of 65 tokens.
    A window of 66 is refused in training and in a saved model folder, instead of an index error at the first long
    context."""
    from bio_mrc.errors import ModelFormatError
    from bio_mrc.inference.loading import TrainedModel
    from bio_mrc.training.trainer import fresh_model_and_tokenizer

    encoder = build_encoder("roberta", tiny_encoder_dir, tmp_path / "encoder")
    windows = {"doc_stride": 16, "max_query_length": 12}
    with pytest.raises(ConfigError, match="exceeds the 65 positions"):
        fresh_model_and_tokenizer(TrainConfig(encoder=str(encoder), max_seq_length=66, **windows))
    model, tokenizer, _ = fresh_model_and_tokenizer(TrainConfig(encoder=str(encoder), max_seq_length=65, **windows))
    model.config.max_seq_length = 66  # as a folder saved before the check was right
    model.save_pretrained(str(tmp_path / "model"))
    tokenizer.save_pretrained(str(tmp_path / "model"))
    with pytest.raises(ModelFormatError, match="max_seq_length 66 exceeds the 65 positions"):
        TrainedModel.load(tmp_path / "model")


def test_a_tokenizer_saved_to_cut_or_pad_on_the_left_makes_windows_from_the_start(tiny_encoder_dir, tmp_path):
    """A folder's tokenizer_config may say truncation_side or padding_side "left" (XLNet pads left): windows still
    run from the context's first character on, in order, as the model was trained (before: padding left was refused
    mid-training, and truncation left made the windows from the end, so the same model answered otherwise)."""
    from bio_mrc.encoders import load_tokenizer
    from bio_mrc.features.windows import FeatureConfig, tokenize_windows
    from bio_mrc.types import Example

    AutoTokenizer.from_pretrained(str(tiny_encoder_dir)).save_pretrained(str(tmp_path))
    settings = tmp_path / "tokenizer_config.json"
    settings.write_text(json.dumps({**json.loads(settings.read_text()), "truncation_side": "left", "padding_side": "left"}))
    context = " ".join(["rollo ruled normandy."] * 20)
    windows = tokenize_windows([Example("q", "who ruled?", context)], load_tokenizer(str(tmp_path)),
                               FeatureConfig(max_seq_length=24, doc_stride=4, max_query_length=8))
    firsts = [int(offsets[offsets[:, 0] >= 0][0, 0]) for offsets in windows["offset_mapping"]]
    assert firsts[0] == 0 and firsts == sorted(firsts) and len(firsts) > 2


def test_the_pipeline_reads_a_left_cutting_tokenizer_as_the_model_was_trained(tiny_encoder_dir):
    """transformers' pipeline loads the folder's tokenizer itself: the windows it makes are cut on the right too, with
    the caller's tokenizer left as it was (before: a folder saved with truncation_side left answered otherwise)."""
    from bio_mrc.encoders import right_sided

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_encoder_dir))
    tokenizer.truncation_side = tokenizer.padding_side = "left"
    windows = right_sided(tokenizer)
    assert (windows.truncation_side, windows.padding_side, tokenizer.truncation_side) == ("right", "right", "left")
    batch = windows("who?", "normandy was ruled by rollo", truncation="only_second", max_length=6)
    assert batch.tokens() == ["[CLS]", "who", "?", "[SEP]", "normandy", "[SEP]"]  # the context's start kept, its end cut


def test_an_encoder_that_cannot_run_on_padded_windows_is_refused_before_training(tiny_encoder_dir, tmp_path):
    """A Nystromformer with fewer landmarks than its segment length reshapes every input to that one length, and its
    attention cannot add a padding mask: training is refused in one line naming the encoder (before: a RuntimeError
    traceback in the first training step, after the windows were cut)."""
    from bio_mrc.training.trainer import fresh_model_and_tokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_encoder_dir))
    tokenizer.save_pretrained(str(tmp_path / "encoder"))
    config = transformers.NystromformerConfig(vocab_size=len(tokenizer), max_position_embeddings=66, num_landmarks=4,
                                              segment_means_seq_len=48, **SMALL)
    AutoModel.from_config(config).save_pretrained(str(tmp_path / "encoder"))
    windows = {"max_seq_length": 48, "doc_stride": 16, "max_query_length": 12}
    with pytest.raises(ConfigError, match=r"\(NystromformerModel\) does not run on padded windows of 48 tokens"):
        fresh_model_and_tokenizer(TrainConfig(encoder=str(tmp_path / "encoder"), **windows))
    model, _, _ = fresh_model_and_tokenizer(TrainConfig(encoder=str(tiny_encoder_dir), **windows))
    assert model.training  # the check leaves a model that runs as it was


def test_a_character_level_encoder_without_a_vocabulary_is_refused_naming_its_tokenizer(tmp_path):
    """Canine reads characters: its tokenizer has no vocabulary file and no fast form. The refusal says so, naming
    the tokenizer class (before: it asked to copy tokenizer files that were already there)."""
    from bio_mrc.encoders import resolve_encoder
    from bio_mrc.errors import ModelFormatError

    transformers.CanineTokenizer().save_pretrained(str(tmp_path))
    config = transformers.CanineConfig(num_hash_buckets=16, max_position_embeddings=64, **SMALL)
    AutoModel.from_config(config).save_pretrained(str(tmp_path))
    with pytest.raises(ModelFormatError, match=r"names CanineTokenizer, a tokenizer without one, which gives no offset "):
        resolve_encoder(str(tmp_path))


def test_an_encoder_config_of_several_auto_classes_builds_the_one_it_names(tiny_encoder_dir, tmp_path):
    """transformers maps a FunnelConfig to two classes (FunnelModel, FunnelBaseModel): the model asks the one its
    encoder's ``architectures`` names which attention it supports (before: an AttributeError traceback building it)."""
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_encoder_dir))
    tokenizer.save_pretrained(str(tmp_path))
    config = transformers.FunnelConfig(vocab_size=len(tokenizer), d_model=32, n_head=2, d_head=16, d_inner=64,
                                       block_sizes=[1, 1], num_decoder_layers=1)
    transformers.FunnelModel(config).save_pretrained(str(tmp_path))
    model = BioMrcForQuestionAnswering.from_encoder(str(tmp_path), heads="span+bio")
    assert type(model.encoder).__name__ == "FunnelModel"
    batch = tokenizer("who ruled?", "rollo ruled normandy", return_tensors="pt")
    assert model(**batch).start_logits.shape == batch["input_ids"].shape


@pytest.mark.slow
def test_an_encoder_without_max_position_embeddings_is_checked_in_its_onnx_export(tiny_encoder_dir, tmp_path):
    """A Funnel config has no ``max_position_embeddings``: the export checks windows of the model's own length, and
    Funnel's graph, traced at one shape, is refused in one line as Longformer's is (before: an AttributeError
    traceback after the graph was written)."""
    from bio_mrc.errors import BioMrcError

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_encoder_dir))
    tokenizer.save_pretrained(str(tmp_path / "encoder"))
    config = transformers.FunnelConfig(vocab_size=len(tokenizer), d_model=32, n_head=2, d_head=16, d_inner=64,
                                       block_sizes=[1, 1], num_decoder_layers=1)
    transformers.FunnelModel(config).save_pretrained(str(tmp_path / "encoder"))
    model = BioMrcForQuestionAnswering.from_encoder(str(tmp_path / "encoder"), heads="span+bio", max_seq_length=48,
                                                    doc_stride=16, max_query_length=12)
    model.save_pretrained(str(tmp_path / "model"))
    tokenizer.save_pretrained(str(tmp_path / "model"))
    with pytest.raises(BioMrcError, match=r"the encoder \(FunnelModel\) does not export to ONNX; not exported"):
        export_onnx(tmp_path / "model", tmp_path / "exported")
    assert not (tmp_path / "exported").exists()


def test_an_encoder_that_reads_its_padding_is_refused_before_training(tiny_encoder_dir, tmp_path, capsys):
    """FNet mixes every position, padding included, and takes no attention mask: a window's logits changed with the
    padding its batch gave it, so one question answered otherwise beside a longer context. ``train`` says so in one
    line before any window is cut (before: it trained, and answers depended on the batch)."""
    from bio_mrc.cli import main

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_encoder_dir))
    tokenizer.save_pretrained(str(tmp_path / "encoder"))
    torch.manual_seed(0)
    transformers.FNetModel(transformers.FNetConfig(vocab_size=len(tokenizer), max_position_embeddings=64, **SMALL)
                           ).save_pretrained(str(tmp_path / "encoder"))
    args = ["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "model"), "--encoder", str(tmp_path / "encoder"),
            "--max-seq-length", "48", "--doc-stride", "16", "--max-query-length", "12"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"error: encoder {tmp_path / 'encoder'} (FNetModel) reads the padding after a window: ")
    assert "bio_mrc cannot train it" in err[-1] and len([line for line in err if line.startswith("error")]) == 1
    assert not (tmp_path / "model").exists() or not any((tmp_path / "model").iterdir())


def test_a_qa_model_whose_encoder_reads_its_padding_is_refused_not_answered_with(tiny_encoder_dir, tmp_path, capsys):
    """transformers' FNetForQuestionAnswering keeps a pooler beside its encoder, which its start and end logits never
    read: the pooler is passed over as in any QA folder, and the model is refused for what it does, reading the padding
    (before: a line blaming the pooler's weights)."""
    from bio_mrc.cli import main

    folder = tmp_path / "fnet-qa"
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_encoder_dir))
    torch.manual_seed(0)
    transformers.FNetForQuestionAnswering(transformers.FNetConfig(vocab_size=len(tokenizer), max_position_embeddings=64,
                                                                  **SMALL)).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    assert main(["extract", "--model", str(folder), "--question", "Who ruled?", "--context", CONTEXT]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("error: its encoder (FNetModel) reads the padding after a window: ")
    assert err.endswith(f"bio_mrc cannot answer with it (in {folder})")


def test_an_export_to_a_qa_class_with_a_head_of_its_own_names_the_model_and_what_works(tiny_encoder_dir, tmp_path, capsys):
    """ModernBERT's QA class reads the encoder through a head of its own before its classifier, which the span head
    cannot fill: the line names the model and the export that does work, and no folder is left."""
    from bio_mrc.cli import main

    encoder = build_encoder("modernbert", tiny_encoder_dir, tmp_path / "encoder")
    model = tmp_path / "model"
    BioMrcForQuestionAnswering.from_encoder(str(encoder), heads="span", max_seq_length=48, doc_stride=16,
                                            max_query_length=12).save_pretrained(str(model))
    AutoTokenizer.from_pretrained(str(encoder)).save_pretrained(str(model))
    assert main(["export", "--model", str(model), "--output", str(tmp_path / "qa"), "--format", "transformers"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: {model}: transformers' ModernBertForQuestionAnswering computes its start and end logits otherwise than "
        "with one qa_outputs layer on its encoder, so the span head has no place in it; an ONNX export serves runtimes "
        "without bio_mrc")
    assert not (tmp_path / "qa").exists()
