"""The one interface every head implements.

A head maps encoder hidden states to logits and computes its own loss from
targets and a mask. It knows nothing of data or decoding, so anyone can put it
on their own encoder.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class Head(nn.Module):
    """Base class: ``forward(hidden) -> dict of logits``; ``loss(logits, **targets, attention_mask, paragraph_mask)``.

    The model calls every head the same way: it passes the batch tensors named
    in ``label_names`` plus both masks, and each head takes the mask it needs.
    """

    #: names of the logits this head adds to the model output
    output_names: tuple[str, ...] = ()
    #: names of the label tensors ``loss`` takes from a batch (besides the masks)
    label_names: tuple[str, ...] = ()

    def forward(self, hidden_states: torch.Tensor) -> dict[str, torch.Tensor]:  # pragma: no cover - abstract
        raise NotImplementedError

    def loss(self, logits: dict[str, torch.Tensor], **targets: Any) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError


def soft_cross_entropy(log_probs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``-Σ_j t_j log p_j`` along the last axis; integer targets are treated as one-hot."""
    if targets.dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8):
        return -log_probs.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1)
    # 0 * log(0) must be 0, not nan, for masked or impossible positions.
    return -(targets * log_probs.masked_fill(targets == 0, 0.0)).sum(-1)
