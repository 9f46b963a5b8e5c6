"""The attention alone in fp32 while the rest of the encoder trains under bf16 autocast.

PyTorch's fused CPU attention can train slower in bf16 than in fp32 while the linear layers gain from bf16: on an
Intel Xeon with AMX, one layer's attention took 55 ms forward and backward in bf16 against 37 ms in fp32.
``precision: auto`` times one encoder layer both ways (:mod:`bio_mrc.precision_probe`), and where the attention in
fp32 trains faster, training runs the encoder with :data:`ATTENTION_NAME`: transformers' SDPA attention with
autocast off and its inputs in fp32, registered in transformers' ``AttentionInterface`` (with SDPA's masks).
Nothing of it is saved: transformers keeps no attention implementation in a model's config, so a trained model
answers with the encoder's own attention, where bf16 is the faster (a forward pass alone gains from it).
"""

from __future__ import annotations

from typing import Any

import torch

ATTENTION_NAME = "bio_mrc_sdpa_fp32"


def sdpa_in_fp32(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                 attention_mask: torch.Tensor | None, **kwargs: Any) -> tuple[torch.Tensor, Any]:
    """transformers' SDPA attention with autocast off and its inputs in fp32; the output in the inputs' dtype."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if attention_mask is not None and attention_mask.is_floating_point():
        attention_mask = attention_mask.float()
    with torch.autocast(query.device.type, enabled=False):
        output, weights = sdpa_attention_forward(module, query.float(), key.float(), value.float(), attention_mask, **kwargs)
    return output.to(query.dtype), weights


def train_attention_in_fp32(model: Any) -> bool:
    """Sets ``model.encoder`` to :data:`ATTENTION_NAME` when it runs transformers' SDPA attention (an encoder on
    another attention implementation keeps it); whether it did."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

    if getattr(model.encoder.config, "_attn_implementation", None) != "sdpa":
        return False
    AttentionInterface.register(ATTENTION_NAME, sdpa_in_fp32)
    AttentionMaskInterface.register(ATTENTION_NAME, ALL_MASK_ATTENTION_FUNCTIONS["sdpa"])  # SDPA's own masks, so its kernels
    model.encoder.set_attn_implementation(ATTENTION_NAME)
    return True


__all__ = ["ATTENTION_NAME", "sdpa_in_fp32", "train_attention_in_fp32"]
