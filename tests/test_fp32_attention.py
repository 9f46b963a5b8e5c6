"""The attention alone in fp32 inside bf16 training: the same attention, its products in fp32, never saved."""

import pytest
import torch

from bio_mrc import fp32_attention, precision_probe
from bio_mrc import precision as precision_module
from bio_mrc.fp32_attention import ATTENTION_NAME, train_attention_in_fp32
from bio_mrc.model import BioMrcForQuestionAnswering
from bio_mrc.precision_probe import FP32_ATTENTION
from bio_mrc.training.train import TrainConfig, load_run_record, train_model


pytestmark = pytest.mark.usefixtures("fresh_precision_choices")


def batch() -> dict[str, torch.Tensor]:
    input_ids = torch.randint(5, 30, (2, 12), generator=torch.Generator().manual_seed(0))
    attention_mask = torch.ones(2, 12, dtype=torch.long)
    attention_mask[1, -4:] = 0  # padding: the attention takes a mask
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def test_it_computes_the_encoders_own_attention(tiny_encoder_dir):
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio").eval()
    assert model.encoder.config._attn_implementation == "sdpa"
    with torch.no_grad():
        before = model(**batch())
        assert train_attention_in_fp32(model) and model.encoder.config._attn_implementation == ATTENTION_NAME
        after = model(**batch())
    for name in ("start_logits", "end_logits", "bio_logits"):
        assert torch.allclose(before[name], after[name], atol=1e-5), name


def test_under_bf16_autocast_the_attention_multiplies_fp32_and_gradients_flow(tiny_encoder_dir, monkeypatch):
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span").train()
    train_attention_in_fp32(model)
    seen = []
    original = torch.nn.functional.scaled_dot_product_attention

    def spy(query, *args, **kwargs):
        seen.append((query.dtype, torch.is_autocast_enabled("cpu")))
        return original(query, *args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", spy)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        output = model(**batch(), start_positions=torch.tensor([3, 4]), end_positions=torch.tensor([5, 6]))
    output.loss.backward()
    assert seen and all(entry == (torch.float32, False) for entry in seen)  # each layer's attention, in fp32
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.encoder.encoder.parameters() if p.requires_grad)


def test_an_encoder_on_other_attention_keeps_it(tiny_encoder_dir):
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span")
    model.encoder.set_attn_implementation("eager")
    assert not train_attention_in_fp32(model) and model.encoder.config._attn_implementation == "eager"


def test_training_runs_it_where_measured_faster_and_saves_no_trace(tiny_encoder_dir, tmp_path, sample_v1, monkeypatch):
    from bio_mrc.model_card import write_model_card

    monkeypatch.setattr(precision_module, "cpu_features", lambda: {"amx_bf16": True, "avx512_bf16": True})
    rates = {"fp32": 1000.0, "bf16": 2000.0, FP32_ATTENTION: 2600.0}
    monkeypatch.setattr(precision_probe, "measure_rate", lambda shapes, phase, precision: rates[precision])
    calls = []
    original = fp32_attention.sdpa_in_fp32
    monkeypatch.setattr(fp32_attention, "sdpa_in_fp32", lambda *args, **kwargs: calls.append(1) or original(*args, **kwargs))
    config = TrainConfig(encoder=str(tiny_encoder_dir), heads="span", max_seq_length=48, doc_stride=16, max_query_length=12,
                         epochs=1, batch_size=8, precision="auto")
    model_dir = train_model(sample_v1.examples[:8], config, tmp_path / "m").model_dir
    training = load_run_record(model_dir)["precision_choice"]["training"]
    assert (training["precision"], training["attention"], training["bf16_fp32_attention_tokens_per_s"]) == ("bf16", "fp32", 2600.0)
    assert calls  # the training steps ran it
    assert BioMrcForQuestionAnswering.from_pretrained(model_dir).encoder.config._attn_implementation != ATTENTION_NAME
    assert "; the attention in fp32, 2,600 tokens/s with it" in write_model_card(model_dir).read_text()
