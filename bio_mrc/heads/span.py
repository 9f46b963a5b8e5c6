"""The classic BERT start/end head."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from .base import (
    Head, as_loss_precision, check_batch_seq, check_distributions, check_dropout, check_hidden_size, check_hidden_states,
    check_indices, check_mask, check_not_bool, check_tensor, soft_cross_entropy, values_checked,
)


class SpanHead(Head):
    """Start and end vectors ``S, E ∈ R^H`` (one ``Linear(H, 2)``), softmax over positions.

    The loss is the mean of the start and end cross-entropies, averaged over
    the batch, as in BERT. Targets are integer positions (``[CLS]``, position 0,
    when the window does not hold the answer) or distributions over positions
    (soft targets from several annotators: non-negative, summing to 1, none on
    padding; a row of zeros is no label, left out of the mean as -100 is).
    Positions where ``attention_mask`` is 0 (padding) get no probability. ``hidden_size``: the width H of the
    encoder's states; ``dropout``: the rate applied to them before the layer.
    """

    if TYPE_CHECKING:  # forward's (nn.Module types every call as Any)
        def __call__(self, hidden_states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]: ...

    def __init__(self, hidden_size: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.dropout = nn.Dropout(check_dropout(dropout))
        self.qa_outputs = nn.Linear(check_hidden_size(hidden_size), 2)

    def forward(self, hidden_states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``hidden_states`` (batch, seq, hidden) -> ``(start_logits, end_logits)``, each (batch, seq)."""
        hidden_states = check_hidden_states(hidden_states, self.qa_outputs)
        start, end = self.qa_outputs(self.dropout(hidden_states)).unbind(-1)
        return start, end

    def loss(
        self,
        logits: tuple[torch.Tensor, torch.Tensor],
        start_positions: torch.Tensor,
        end_positions: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        tag_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``logits``: the ``(start_logits, end_logits)`` pair ``forward`` returned. ``start_positions`` and
        ``end_positions``, the answer's first and last token, are (batch,) integers or (batch, seq) distributions; a
        negative integer position (transformers' -100) is no label: left out of the loss and of its mean, as
        transformers' ignore index is; one past the window or on padding (``attention_mask`` 0) is a ValueError, as a
        distribution on padding is. ``tag_mask`` is taken for the common ``Head`` call and not read: every position of
        the window may start or end the answer."""
        self._check_loss_inputs(logits, start_positions, end_positions, attention_mask)
        losses = []
        for scores, target in zip(logits, (start_positions, end_positions)):
            scores = as_loss_precision(scores)
            if attention_mask is not None:
                scores = scores.masked_fill(~attention_mask.bool(), torch.finfo(scores.dtype).min)
            log_probs = torch.log_softmax(scores, dim=-1)
            if target.is_floating_point():  # a row of zeros is no label, as -100 is
                labelled = (target.sum(-1) > 0).to(log_probs.dtype)
                per_example = soft_cross_entropy(log_probs, target.to(log_probs.dtype))
            else:
                labelled = (target >= 0).to(log_probs.dtype)  # no .any() here: no device sync in the training step
                per_example = soft_cross_entropy(log_probs, target.clamp(min=0)) * labelled
            losses.append(per_example.sum() / labelled.sum().clamp(min=1))
        return (losses[0] + losses[1]) / 2

    @staticmethod
    def _check_loss_inputs(
        logits: tuple[torch.Tensor, torch.Tensor],
        start_positions: torch.Tensor,
        end_positions: torch.Tensor,
        attention_mask: torch.Tensor | None,
    ) -> None:
        """Shapes and dtypes up front: a clear error instead of an IndexError deep in the arithmetic."""
        if not isinstance(logits, (tuple, list)) or len(logits) != 2:
            raise TypeError(
                "logits must be the (start_logits, end_logits) pair SpanHead.forward returns, "
                f"got {type(logits).__name__}"
            )
        start = check_tensor("start_logits", logits[0], "(batch, seq)", 2)
        check_batch_seq("end_logits", logits[1], start.shape)
        if attention_mask is not None:
            check_mask("attention_mask", check_batch_seq("attention_mask", attention_mask, start.shape))
        expected = f"(batch,) = ({start.shape[0]},) integer positions or (batch, seq) = {tuple(start.shape)} distributions"
        for name, target in (("start_positions", start_positions), ("end_positions", end_positions)):
            check_tensor(name, target, expected, (1, 2))
            check_not_bool(name, target, expected)
            if target.shape != (start.shape if target.is_floating_point() else start.shape[:1]):
                raise ValueError(f"{name} must be {expected}, got {tuple(target.shape)} {target.dtype}")
            if target.is_floating_point():
                check_distributions(name, target, "the window's positions")
                on_padding = attention_mask is not None and values_checked(target, attention_mask) and (target * ~attention_mask.bool()).any()
                if on_padding:  # log 0 there: an infinite loss (checked where check_distributions checks)
                    raise ValueError(f"{name} puts probability on padding (attention_mask 0), which gets none")
            else:
                check_indices(name, target, start.shape[1], "positions of the window")
                if attention_mask is not None:
                    _check_positions_on_tokens(name, target, attention_mask)


def _check_positions_on_tokens(name: str, positions: torch.Tensor, attention_mask: torch.Tensor) -> None:
    """Integer positions on a padding position (attention_mask 0) refused: it gets no probability, so its loss would
    be about 1e38, not a label. Checked where the distributions are."""
    if not values_checked(positions, attention_mask):
        return
    labelled = positions >= 0
    on_token = attention_mask.bool().gather(1, positions.clamp(min=0).long().unsqueeze(-1)).squeeze(-1)
    if (bad := labelled & ~on_token).any():
        row = int(bad.nonzero()[0, 0])
        raise ValueError(f"{name}[{row}] is {int(positions[row])}, a padding position (attention_mask 0), which gets "
                         "no probability")


def build_span_head(config, hidden_size: int) -> SpanHead:
    """The span head a model config asks for (the registry's builder)."""
    return SpanHead(hidden_size, config.head_dropout)
