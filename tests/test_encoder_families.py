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
from bio_mrc.inference.onnx import encoder_inputs, export_onnx
from bio_mrc.model import BioMrcForQuestionAnswering, set_encoder_dropout
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
    assert "token_type_ids" not in record["inputs"]
    spans = {backend: AnswerExtractor.from_pretrained(str(folder))("Who ruled Normandy?", CONTEXT).spans
             for backend, folder in (("torch", model_dir), ("onnx", tmp_path / "exported"))}
    assert [(s.start, s.end) for s in spans["torch"]] == [(s.start, s.end) for s in spans["onnx"]]
