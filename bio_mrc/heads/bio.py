"""Per-token dense softmax head tagging paragraph tokens as B, I or O."""

from __future__ import annotations

import torch
from torch import nn

from .base import Head, soft_cross_entropy


class BIOHead(Head):
    """``p_i = softmax(W h_i + b)`` with ``W ∈ R^{3×H}``, tags in the order B, I, O.

    The loss is ``L = -Σ_i Σ_j t_ij log p_ij`` summed over the paragraph tokens
    of an example (``mask``), where ``t_i`` is a gold distribution over B/I/O
    (soft, e.g. the average of several annotators' tags) or an integer tag
    (then ``L = -Σ_i log p_{i,r(i)}``). ``reduction`` says how examples are
    combined: ``"token_mean"`` (default) divides the total over the batch by
    the number of masked tokens, which keeps it on the scale of the span loss
    whatever the paragraph length; ``"mean"`` averages the per-example sums
    over the batch; ``"sum"`` adds them. Question tokens, special tokens and
    padding must be masked out and never contribute.

    ``prior`` initialises the bias to ``log prior`` so training starts from the
    tag frequencies (most tokens are O) instead of a uniform guess, whose large
    early O-token gradients would otherwise reshape the encoder first.
    """

    output_names = ("bio_logits",)
    label_names = ("bio_targets",)
    reductions = ("mean", "sum", "token_mean")

    def __init__(
        self, hidden_size: int, dropout: float = 0.0, reduction: str = "token_mean", prior: tuple[float, float, float] | None = None
    ) -> None:
        super().__init__()
        if reduction not in self.reductions:
            raise ValueError(f"reduction must be one of {self.reductions}, got {reduction!r}")
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(hidden_size, 3)
        self.reduction = reduction
        self.prior = prior
        self.reset_bias()

    def reset_bias(self) -> None:
        """Bias = log prior (zero, i.e. uniform, without a prior)."""
        with torch.no_grad():
            if self.prior is None:
                self.classifier.bias.zero_()
            else:
                prior = torch.tensor(self.prior, dtype=torch.float32)
                self.classifier.bias.copy_(torch.log(prior / prior.sum()))

    def forward(self, hidden_states: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"bio_logits": self.classifier(self.dropout(hidden_states))}

    def loss(
        self, logits: dict[str, torch.Tensor], bio_targets: torch.Tensor, paragraph_mask: torch.Tensor, **_: object
    ) -> torch.Tensor:
        """``bio_targets``: (batch, seq, 3) distributions or (batch, seq) integer tags."""
        log_probs = torch.log_softmax(logits["bio_logits"].float(), dim=-1)
        mask = paragraph_mask.bool()
        if bio_targets.dim() == 3:
            bio_targets = bio_targets.float()
            safe_targets = torch.where(mask.unsqueeze(-1), bio_targets, torch.zeros_like(bio_targets))
        else:
            safe_targets = torch.where(mask, bio_targets, torch.full_like(bio_targets, 2))
        token_loss = soft_cross_entropy(log_probs, safe_targets) * mask
        per_example = token_loss.sum(-1)
        if self.reduction == "sum":
            return per_example.sum()
        if self.reduction == "token_mean":
            return per_example.sum() / mask.sum().clamp(min=1)
        return per_example.mean()
