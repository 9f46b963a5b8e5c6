"""Dynamic padding for windows of different lengths."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch

from .. import registry
from .targets import MISSING_ANNOTATOR

MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids", "paragraph_mask", "tag_mask")


@dataclass
class WindowCollator:
    """Pads every per-token field to the longest window of the batch.

    Input ids pad with the tokenizer's pad id; masks and soft targets pad with
    0, so padded positions never carry probability mass or loss. Annotator tags
    for the marginal likelihood ((seq, K) integers) are also padded to the
    batch's largest K with ``MISSING_ANNOTATOR``. Other columns
    (offsets, example indices) are dropped: they are for decoding, not the model.
    """

    pad_token_id: int = 0
    pad_to_multiple_of: int | None = 8

    def __call__(self, features: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        length = max(len(f["input_ids"]) for f in features)
        if self.pad_to_multiple_of:
            length = -(-length // self.pad_to_multiple_of) * self.pad_to_multiple_of
        batch: dict[str, torch.Tensor] = {}
        targets = {key: kind for entry in registry.HEADS.values() for key, kind in entry.targets.items()}
        for key in (*MODEL_INPUTS, *targets):
            if key not in features[0]:
                continue
            values = [f[key] for f in features]
            kind = targets.get(key)
            if kind == registry.POSITION_TARGET and not isinstance(values[0], list):
                batch[key] = torch.tensor(values, dtype=torch.long)
                continue
            fill = self.pad_token_id if key == "input_ids" else 0
            tensors = [torch.as_tensor(v) for v in values]
            if kind == registry.TOKEN_TARGET and not tensors[0].is_floating_point():  # (seq, K) tags of K annotators
                annotators = max(t.shape[1] for t in tensors)
                tensors = [self._pad(t.T, annotators, MISSING_ANNOTATOR).T for t in tensors]
                fill = MISSING_ANNOTATOR
            elif kind == registry.TOKEN_TARGET or tensors[0].is_floating_point():
                tensors = [t.float() for t in tensors]
            batch[key] = torch.stack([self._pad(t, length, fill) for t in tensors])
        return batch

    @staticmethod
    def _pad(tensor: torch.Tensor, length: int, fill: float) -> torch.Tensor:
        missing = length - tensor.shape[0]
        if missing <= 0:
            return tensor
        pad = torch.full((missing, *tensor.shape[1:]), fill, dtype=tensor.dtype)
        return torch.cat([tensor, pad])
