"""The classic BERT start/end head."""

from __future__ import annotations

import torch
from torch import nn

from .base import Head, soft_cross_entropy


class SpanHead(Head):
    """Start and end vectors ``S, E ∈ R^H`` (one ``Linear(H, 2)``), softmax over positions.

    The loss is the mean of the start and end cross-entropies, averaged over
    the batch, as in BERT. Targets are integer positions (``[CLS]``, position 0,
    when the window does not hold the answer) or distributions over positions
    (soft targets from several annotators). Positions where ``attention_mask``
    is 0 (padding) get no probability.
    """

    output_names = ("start_logits", "end_logits")
    label_names = ("start_positions", "end_positions")

    def __init__(self, hidden_size: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.qa_outputs = nn.Linear(hidden_size, 2)

    def forward(self, hidden_states: torch.Tensor) -> dict[str, torch.Tensor]:
        start, end = self.qa_outputs(self.dropout(hidden_states)).unbind(-1)
        return {"start_logits": start, "end_logits": end}

    def loss(
        self,
        logits: dict[str, torch.Tensor],
        start_positions: torch.Tensor,
        end_positions: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        **_: object,
    ) -> torch.Tensor:
        losses = []
        for name, target in (("start_logits", start_positions), ("end_logits", end_positions)):
            scores = logits[name].float()
            if attention_mask is not None:
                scores = scores.masked_fill(~attention_mask.bool(), torch.finfo(scores.dtype).min)
            losses.append(soft_cross_entropy(torch.log_softmax(scores, dim=-1), target).mean())
        return (losses[0] + losses[1]) / 2
