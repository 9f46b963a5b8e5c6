"""Per-token dense softmax head tagging paragraph tokens as B, I or O."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from ..model_defaults import BIO_LOSS_REDUCTIONS
from .base import (
    Head, as_loss_precision, check_batch_seq, check_distributions, check_dropout, check_hidden_size, check_hidden_states,
    check_indices, check_mask, check_not_bool, check_tensor, soft_cross_entropy, three_positive_numbers,
)


class BIOHead(Head):
    """``p_i = softmax(W h_i + b)`` with ``W ∈ R^{3×H}``, tags in the order B, I, O.

    The loss is ``L = -Σ_i Σ_j t_ij log p_ij`` summed over the paragraph tokens
    of an example (``tag_mask``), where ``t_i`` is a gold distribution over B/I/O
    (soft, e.g. the average of several annotators' tags) or an integer tag
    (then ``L = -Σ_i log p_{i,r(i)}``). ``reduction`` says how examples are
    combined: ``"token_mean"`` (default) divides the total over the batch by
    the number of masked tokens, which keeps it on the scale of the span loss
    whatever the paragraph length; ``"mean"`` averages the per-example sums
    over the batch; ``"sum"`` adds them. Question tokens, special tokens and
    padding must be masked out and never contribute.

    Several annotators can be trained on two ways: their mean tag distribution
    as soft targets (the formula above), or, given (batch, seq, K) integer tags
    (one column per annotator, ``-1`` for a missing one), the marginal
    likelihood ``-log Σ_k Π_i p_{i,r_k(i)}`` of TASE: the head must reproduce
    some annotator's whole tag sequence rather than their average. With one
    annotator both equal the one-hot loss.

    ``class_weights`` (w_B, w_I, w_O), off by default, is a departure from the
    plain loss: token ``i`` counts ``-Σ_j w_j t_ij log q_ij`` with
    ``q_i = softmax(W h_i + b)``, so the rare B/I tokens weigh more against the
    many O tokens. Its minimiser is ``q_ij ∝ w_j p_ij``, so the head outputs the
    prior-corrected logits ``W h_i + b - log w`` (``p_i`` again, calibrated as far
    as the plain loss would be) and every decoder reads them unchanged.

    ``hidden_size``: the width H of the encoder's states; ``dropout``: the rate applied to them before the layer.

    ``prior`` initialises the bias to ``log prior`` so training starts from the
    tag frequencies (most tokens are O) instead of a uniform guess, whose large
    early O-token gradients would otherwise reshape the encoder first. Under
    ``class_weights`` that is the weighted loss's own distribution ``softmax(W h + b)``;
    the output ``W h + b - log w`` starts below the prior on the weighted tags, and
    the weighted loss's gradient lifts them first (a bias of ``log prior + log w``,
    the output at the prior, trained BIO-only models 1.5 and 7.9 F1 worse on two
    seeds: benchmarks/RESULTS.md).
    """

    reductions = BIO_LOSS_REDUCTIONS

    if TYPE_CHECKING:  # forward's (nn.Module types every call as Any)
        def __call__(self, hidden_states: torch.Tensor) -> torch.Tensor: ...

    def __init__(
        self,
        hidden_size: int,
        dropout: float = 0.0,
        reduction: str = "token_mean",
        prior: tuple[float, float, float] | None = None,
        class_weights: tuple[float, float, float] | None = None,
    ) -> None:
        super().__init__()
        if reduction not in self.reductions:
            raise ValueError(f"reduction must be one of {self.reductions}, got {reduction!r}")
        self.dropout = nn.Dropout(check_dropout(dropout))
        self.classifier = nn.Linear(check_hidden_size(hidden_size), 3)
        self.reduction = reduction
        self.prior = three_positive_numbers("prior", prior) if prior is not None else None
        self.class_weights = three_positive_numbers("class_weights", class_weights) if class_weights is not None else None
        self._class_weight_tensors: dict[tuple, torch.Tensor] = {}
        self.reset_bias()

    def extra_repr(self) -> str:
        """The settings that change the logits or the loss, beside the layers ``repr`` lists."""
        return f"reduction={self.reduction!r}, prior={self.prior}, class_weights={self.class_weights}"

    def reset_bias(self) -> None:
        """Bias = log prior (zero, i.e. uniform, without a prior), with or without ``class_weights``."""
        with torch.no_grad():
            if self.prior is None:
                self.classifier.bias.zero_()
            else:
                prior = torch.tensor(self.prior, dtype=torch.float32)
                self.classifier.bias.copy_(torch.log(prior / prior.sum()))

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        """``hidden_states`` (batch, seq, hidden) -> (batch, seq, 3) B/I/O logits, prior-corrected under ``class_weights``."""
        logits = self.classifier(self.dropout(check_hidden_states(hidden_states, self.classifier)))
        if self.class_weights is not None:
            logits = logits - self._class_weight_tensor(logits).log()
        return logits

    def _class_weight_tensor(self, like: torch.Tensor) -> torch.Tensor:
        """``class_weights`` on ``like``'s device in its dtype, made once for each: a tensor made from Python numbers on an
        accelerator is a copy the host waits for, which every training step would otherwise pay two or three times."""
        if torch.jit.is_tracing():  # made afresh: a trace must record the same graph on every call
            return like.new_tensor(self.class_weights)
        key = (self.class_weights, like.device, like.dtype)
        if key not in self._class_weight_tensors:
            self._class_weight_tensors[key] = like.new_tensor(self.class_weights)
        return self._class_weight_tensors[key]

    def loss(
        self,
        logits: torch.Tensor,
        bio_targets: torch.Tensor,
        tag_mask: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``logits``: what ``forward`` returned. ``bio_targets``: (batch, seq, 3) distributions,
        (batch, seq) integer tags, or (batch, seq, K) integer tags of K annotators (marginal
        likelihood). ``tag_mask`` marks the tokens that carry a tag; a tagged token whose distribution is a row of
        zeros or whose integer tag is negative (transformers' -100) carries none either: it is left out of the loss
        and of ``token_mean``'s count, as is a token of the K annotators' tags that none tags, and an example none
        tags adds 0. Distributions must be non-negative and sum to 1, and integer tags of ``tag_mask``'s tokens below 3
        (ValueError otherwise). ``attention_mask`` is taken for the common ``Head`` call and not read, as ``tag_mask``
        already leaves padding out."""
        self._check_loss_inputs(logits, bio_targets, tag_mask)
        scores = as_loss_precision(logits)
        if self.class_weights is not None:  # back to the weighted loss's own logits (see the class docstring)
            scores = scores + self._class_weight_tensor(scores).log()
        log_probs = torch.log_softmax(scores, dim=-1)
        mask = tag_mask.bool()
        if bio_targets.dim() == 2:  # a negative tag (transformers' -100) is no tag: left out as an untagged token is
            mask = mask & (bio_targets >= 0)
        elif bio_targets.is_floating_point():  # so is a row of zeros (no distribution), from token_mean's count too
            mask = mask & (bio_targets.sum(-1) > 0)
        else:  # and a token no annotator tags
            mask = mask & (bio_targets >= 0).any(-1)
        if bio_targets.dim() == 3 and not bio_targets.is_floating_point():
            per_example = self._marginal_loss(log_probs, bio_targets.long(), mask)
        else:
            if bio_targets.dim() == 3:
                targets = torch.where(mask.unsqueeze(-1), bio_targets.to(scores.dtype), torch.zeros_like(bio_targets, dtype=scores.dtype))
            else:
                targets = torch.nn.functional.one_hot(torch.where(mask, bio_targets.long(), 2), 3).to(scores.dtype)
            if self.class_weights is not None:
                targets = targets * self._class_weight_tensor(targets)
            per_example = (soft_cross_entropy(log_probs, targets) * mask).sum(-1)
        if self.reduction == "sum":
            return per_example.sum()
        if self.reduction == "token_mean":
            return per_example.sum() / mask.sum().clamp(min=1)
        return per_example.mean() if per_example.numel() else per_example.sum()  # an empty batch adds 0, not the nan of an empty mean

    @staticmethod
    def _check_loss_inputs(logits: torch.Tensor, bio_targets: torch.Tensor, tag_mask: torch.Tensor) -> None:
        """Shapes and dtypes up front: a clear error instead of an IndexError deep in the arithmetic."""
        check_tensor("logits", logits, "(batch, seq, 3)", 3)
        if logits.shape[-1] != 3:
            raise ValueError(f"logits must have shape (batch, seq, 3), got {tuple(logits.shape)}")
        batch_seq = logits.shape[:2]
        expected = (
            f"(batch, seq) = {tuple(batch_seq)} integer tags, (batch, seq, 3) distributions "
            "or (batch, seq, K) integer tags of K annotators"
        )
        check_tensor("bio_targets", bio_targets, expected, (2, 3))
        check_not_bool("bio_targets", bio_targets, expected)
        if bio_targets.dim() == 2 and bio_targets.is_floating_point():  # .long() would truncate 0.5 to B, 1.7 to I
            raise TypeError(f"bio_targets must be {expected}, got {tuple(bio_targets.shape)} {bio_targets.dtype}")
        distributions = bio_targets.dim() == 3 and bio_targets.is_floating_point()
        if bio_targets.shape[:2] != batch_seq or (distributions and bio_targets.shape[-1] != 3):
            raise ValueError(f"bio_targets must be {expected}, got {tuple(bio_targets.shape)} {bio_targets.dtype}")
        check_mask("tag_mask", check_batch_seq("tag_mask", tag_mask, batch_seq))
        if distributions:
            check_distributions("bio_targets", bio_targets, "B, I, O")
        else:
            tagged = tag_mask.unsqueeze(-1) if bio_targets.dim() == 3 else tag_mask  # untagged tokens are never read
            check_indices("bio_targets", bio_targets, 3, "tags (B = 0, I = 1, O = 2)", where=tagged)

    def _marginal_loss(self, log_probs: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``-log Σ_{s ∈ S} exp(Σ_i log p_{i,s(i)})`` per example, ``S`` the set of tag sequences the annotators
        present gave (TASE's marginal likelihood of the gold set): an annotator repeating another's sequence adds
        nothing, so where the annotators tag the same tokens the loss is the negative log of a probability, never
        below 0. A negative tag of a present annotator leaves that token out of its sequence (a partial sequence, whose
        event holds the longer ones it agrees with), and an example without any annotator adds 0."""
        if self.class_weights is not None and self.class_weights != (1.0, 1.0, 1.0):
            raise ValueError("class_weights apply to distribution targets, not to the marginal likelihood")
        tagged = (tags >= 0) & mask.unsqueeze(-1)  # (batch, seq, K)
        present = tagged.any(dim=1)  # (batch, K)
        distinct = present & ~_repeats_an_earlier_sequence(torch.where(tagged, tags, -1), present)
        picked = log_probs.gather(-1, torch.where(tagged, tags, 0)).masked_fill(~tagged, 0.0)  # (batch, seq, K)
        sequence_log_prob = picked.sum(1).masked_fill(~distinct, float("-inf"))
        loss = -torch.logsumexp(sequence_log_prob, dim=-1)
        return loss.masked_fill(~present.any(-1), 0.0)  # -log of an empty sum is +inf: no annotator, no label


def _repeats_an_earlier_sequence(sequences: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
    """(batch, K): whether annotator k's sequence (``sequences[:, :, k]``, -1 where it tags nothing) equals that of
    a present annotator before it."""
    same = (sequences.unsqueeze(-1) == sequences.unsqueeze(-2)).all(dim=1)  # (batch, K, K)
    annotators = sequences.shape[-1]
    earlier = torch.ones(annotators, annotators, dtype=torch.bool, device=sequences.device).tril(-1)  # [k, j]: j < k
    return (same & earlier & present.unsqueeze(1)).any(-1)


def build_bio_head(config, hidden_size: int) -> BIOHead:
    """The BIO head a model config asks for (the registry's builder): reduction, tag prior and class weights."""
    return BIOHead(
        hidden_size, config.head_dropout, config.bio_loss_reduction,
        tuple(config.bio_prior) if config.bio_prior else None,
        tuple(config.bio_class_weights) if config.bio_class_weights else None,
    )
