"""The one interface every head implements, and the input checks the heads share.

A head maps encoder hidden states to logits and computes its own loss from
those logits, targets and a mask. It knows nothing of data or decoding, so
anyone can put it on their own encoder.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import torch
from torch import nn


class Head(nn.Module):
    """Base class: ``forward(hidden_states) -> logits``; ``loss(logits, ...) -> scalar``.

    ``forward`` returns a tensor or a tuple of tensors; ``loss`` takes exactly what
    ``forward`` returned. The model calls every head the same way,
    ``head.loss(logits, attention_mask=..., tag_mask=..., **labels)`` with the
    batch tensors its registry entry names in ``targets``: each head accepts both
    masks as keywords and reads the one it needs. The names of its logits and
    labels, how its labels are made from a window and how its loss is weighted
    are declared once, in its registry entry (:class:`bio_mrc.registry.HeadEntry`).
    """

    if TYPE_CHECKING:  # nn.Module types every call as Any: a type checker reads a head's call as its forward
        def __call__(self, hidden_states: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]: ...

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:  # pragma: no cover
        """``hidden_states``: (batch, seq, hidden) states -> the head's logits, each (batch, seq, ...)."""
        raise NotImplementedError

    def reset_bias(self) -> None:
        """Set the initial bias the head starts training from (after the model's plain init); none by default."""

    def loss(
        self,
        logits: Any,
        *,
        attention_mask: torch.Tensor | None = None,
        tag_mask: torch.Tensor | None = None,
        **labels: torch.Tensor,
    ) -> torch.Tensor:  # pragma: no cover - abstract
        """The scalar loss of ``logits``, what ``forward`` returned, against the ``labels`` its registry entry names;
        ``attention_mask`` (the window's tokens) and ``tag_mask`` (the tokens that carry a tag), each (batch, seq), are
        taken by every head, which reads the one it needs."""
        raise NotImplementedError


def check_hidden_size(hidden_size: Any) -> int:
    """The width of the states a head reads: a positive integer (H = 0 would build a head whose logits are all 0)."""
    if isinstance(hidden_size, bool) or not isinstance(hidden_size, Integral):
        raise TypeError(f"hidden_size must be a positive integer, got {hidden_size!r}")
    if hidden_size < 1:
        raise ValueError(f"hidden_size must be a positive integer, got {hidden_size!r}")
    return int(hidden_size)


def check_dropout(dropout: Any) -> float:
    """A dropout rate in [0, 1]: torch takes a NaN and fails on it at the first training step."""
    if isinstance(dropout, bool) or not isinstance(dropout, Real):
        raise TypeError(f"dropout must be a probability in [0, 1], got {dropout!r}")
    if not 0 <= dropout <= 1:
        raise ValueError(f"dropout must be a probability in [0, 1], got {dropout!r}")
    return float(dropout)


def three_positive_numbers(name: str, values: Any) -> tuple[float, float, float]:
    """``values`` (a sequence, array or tensor) as three finite positive floats, one for each of B, I, O, or a
    ValueError: a 0 is a tag never predicted, an infinity or a NaN makes every logit NaN."""
    try:  # a string is no sequence of numbers, though "123" reads as one
        numbers = () if isinstance(values, (str, bytes)) else tuple(float(value) for value in values)
    except (TypeError, ValueError):
        numbers = ()
    if len(numbers) != 3 or not all(0 < number < math.inf for number in numbers):
        shown = tuple(values.tolist()) if hasattr(values, "tolist") else values
        raise ValueError(f"{name} must be three positive numbers (B, I, O), got {shown!r}")
    return numbers


def values_checked(*tensors: torch.Tensor | None) -> bool:
    """Whether the values of labels are checked: where every tensor given is on the CPU, outside compiled code. On an
    accelerator the answer would cost a device sync every training step, and a branch on values would break a
    compiled graph (``torch.compile(..., fullgraph=True)`` refuses it)."""
    if torch.compiler.is_compiling():
        return False
    return all(tensor is None or tensor.device.type == "cpu" for tensor in tensors)


def as_loss_precision(logits: torch.Tensor) -> torch.Tensor:
    """Logits in the precision a loss is computed in: fp16 and bf16 raised to fp32, fp64 kept (so a loss of
    double-precision logits is exact, as ``torch.autograd.gradcheck`` checks it)."""
    return logits.to(torch.promote_types(logits.dtype, torch.float32))


def soft_cross_entropy(log_probs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``-Σ_j t_j log p_j`` along the last axis; integer targets are treated as one-hot."""
    if targets.dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8):
        return -log_probs.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1)
    # 0 * log(0) must be 0, not nan, for masked or impossible positions.
    return -(targets * log_probs.masked_fill(targets == 0, 0.0)).sum(-1)


def check_tensor(name: str, value: Any, expected: str, dims: int | tuple[int, ...]) -> torch.Tensor:
    """``value`` as a tensor of ``dims`` dimensions, or a TypeError/ValueError saying ``expected``."""
    if not isinstance(value, torch.Tensor):
        hint = " (a dict or model output: pass the tensor itself)" if isinstance(value, Mapping) else ""
        raise TypeError(f"{name} must be a tensor of shape {expected}, got {type(value).__name__}{hint}")
    if value.is_complex():  # no head reads a complex number: torch would fail deep in the arithmetic
        raise TypeError(f"{name} must be a real tensor of shape {expected}, got {value.dtype}")
    if value.dim() not in ((dims,) if isinstance(dims, int) else dims):
        raise ValueError(f"{name} must have shape {expected}, got {tuple(value.shape)}")
    return value


def check_distributions(name: str, targets: torch.Tensor, over: str) -> None:
    """Floating ``targets`` as distributions along the last axis: every entry finite and non-negative, every row
    summing to 1 (a row of zeros, no label, too), else a ValueError naming the first bad row. A NaN row would
    otherwise be read as no label and a negative entry make the loss unbounded below. Checked where the targets
    are on the CPU: on an accelerator the answer would cost a device sync every training step (the package's own
    targets are means of annotators' one-hot rows, distributions by construction); not in compiled code."""
    if not values_checked(targets):
        return
    totals = targets.sum(-1)
    tolerance = max(1e-4, 3 * torch.finfo(targets.dtype).eps)
    bad = ~torch.isfinite(targets).all(-1) | (targets < 0).any(-1) | (((totals - 1).abs() > tolerance) & (totals != 0))
    if bad.any():
        row = tuple(int(i) for i in bad.nonzero()[0])
        values = [round(float(v), 4) for v in targets[row].flatten()[:8]]
        raise ValueError(f"{name}{list(row)} must be a distribution over {over} (non-negative, summing to 1, or all "
                         f"0 for no label), got {values}{'...' if targets[row].numel() > 8 else ''}")


def check_indices(name: str, targets: torch.Tensor, size: int, over: str, where: torch.Tensor | None = None) -> None:
    """Integer ``targets`` as indices below ``size`` (a negative one is no label), else a ValueError naming the first
    index past the end: ``one_hot`` and ``gather`` would fail with a bare RuntimeError, or a device-side assert on an
    accelerator. ``where`` (a mask broadcast to ``targets``) limits the check to the labels read. Checked where the
    targets are on the CPU, as :func:`check_distributions` is."""
    if not values_checked(targets) or targets.is_floating_point():
        return
    bad = targets >= size
    if where is not None and values_checked(where):
        bad = bad & where.bool()
    if bad.any():
        index = tuple(int(i) for i in bad.nonzero()[0])
        raise ValueError(f"{name}{list(index)} is {int(targets[index])}, past the {size} {over} "
                         "(a negative value, such as -100, is no label)")


def check_hidden_states(hidden_states: Any, layer: nn.Linear) -> torch.Tensor:
    """Hidden states as a (batch, seq, hidden) tensor that ``layer`` (the head's) reads: its width, device and dtype,
    with a hint when an encoder output is passed whole."""
    hidden_size = layer.in_features
    if isinstance(hidden_states, Mapping) and "last_hidden_state" in hidden_states:
        raise TypeError("hidden_states must be a tensor: pass the encoder output's .last_hidden_state")
    check_tensor("hidden_states", hidden_states, f"(batch, seq, {hidden_size})", 3)
    if not hidden_states.is_floating_point():  # token ids or a mask passed by mistake: the Linear layer's error names neither
        raise TypeError(f"hidden_states must be a floating-point tensor, got {hidden_states.dtype}")
    if hidden_states.shape[-1] != hidden_size:
        raise ValueError(f"hidden_states must have shape (batch, seq, {hidden_size}), got {tuple(hidden_states.shape)}")
    check_like_weights(hidden_states, layer.weight)
    return hidden_states


def check_like_weights(hidden_states: torch.Tensor, weight: torch.Tensor) -> None:
    """States on the weights' device, in their dtype (or under autocast, which casts both but a float64): torch's own error
    (``mat1 and mat2 must have the same dtype``) names neither the argument nor the fix. Weights on the meta device
    are left alone: an offloading hook on the layer loads them after this check."""
    if weight.device.type == "meta":
        return
    if hidden_states.device != weight.device:
        raise ValueError(f"hidden_states are on {hidden_states.device}, the head's weights on {weight.device}: move the "
                         f"head to the states' device (head.to({str(hidden_states.device)!r}))")
    casts = torch.is_autocast_enabled(hidden_states.device.type) and torch.float64 not in (hidden_states.dtype, weight.dtype)
    if hidden_states.dtype != weight.dtype and not casts:  # autocast casts every float but float64
        autocast = "" if torch.float64 in (hidden_states.dtype, weight.dtype) else ", or run both under torch.autocast"
        raise TypeError(f"hidden_states are {hidden_states.dtype}, the head's weights {weight.dtype}: cast the head "
                        f"(head.to({hidden_states.dtype})) or the states (hidden_states.to({weight.dtype})){autocast}")


def check_not_bool(name: str, targets: torch.Tensor, expected: str) -> None:
    """Labels that are no booleans: torch reads False and True as 0 and 1, a tag or a position nobody gave (a mask
    passed as the labels by mistake)."""
    if targets.dtype == torch.bool:
        raise TypeError(f"{name} must be {expected}, got {tuple(targets.shape)} torch.bool: True and False are no labels")


def check_mask(name: str, mask: torch.Tensor) -> None:
    """A mask of 0s and 1s (or booleans): a NaN or a 0.5 was read as 1, a token in, without a word. Checked where the
    mask is on the CPU, as :func:`check_distributions` is."""
    if mask.dtype == torch.bool or not values_checked(mask):
        return
    bad = (mask != 0) & (mask != 1)
    if bad.any():
        at = tuple(int(i) for i in bad.nonzero()[0])
        raise ValueError(f"{name}{list(at)} is {mask[at].item()}: a mask holds 0 and 1 (or False and True) alone")


def check_batch_seq(name: str, value: Any, shape: torch.Size) -> torch.Tensor:
    """A (batch, seq) tensor (a mask, end logits) of the same shape as the logits it goes with."""
    check_tensor(name, value, f"(batch, seq) = {tuple(shape)}", 2)
    if value.shape != shape:
        raise ValueError(f"{name} must have shape (batch, seq) = {tuple(shape)}, got {tuple(value.shape)}")
    return value
