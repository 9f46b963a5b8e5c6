"""Dynamic padding for windows of different lengths, from rows or from one Arrow table per batch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import torch
from torch.utils.data import Dataset as TorchDataset

from .. import registry
from ..errors import DataFormatError
from .ragged import RaggedColumn
from .targets import MISSING_ANNOTATOR

MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids", "paragraph_mask", "tag_mask")


@dataclass
class WindowCollator:
    """Pads every per-token field to the longest window of the batch.

    Input ids pad with the tokenizer's pad id; masks and soft targets pad with
    0, so padded positions never carry probability mass or loss. Integer tags
    ((seq,), or (seq, K) of K annotators for the marginal likelihood, also padded
    to the batch's largest K) pad with ``MISSING_ANNOTATOR``. Other columns
    (offsets, example indices) are dropped: they are for decoding, not the model.

    A batch comes as rows (dicts of lists) or as one ``pyarrow.Table`` of its rows (:class:`WindowBatches`),
    which pads each column in one numpy gather; both give the same tensors (integers int64, floats float32).
    """

    pad_token_id: int = 0
    pad_to_multiple_of: int | None = 8

    def __call__(self, features: Sequence[dict[str, Any]] | pa.Table) -> dict[str, torch.Tensor]:
        if isinstance(features, pa.Table):
            return self._collate_table(features)
        length = self.padded_width(max(len(f["input_ids"]) for f in features))
        batch: dict[str, torch.Tensor] = {}
        for key, kind in self._columns(features[0]):
            batch[key] = self._collate_rows(key, kind, [f[key] for f in features], length)
        return _positions_checked(batch, np.array([len(f["input_ids"]) for f in features]))

    def padded_width(self, longest: int) -> int:
        """The length a batch whose longest window has ``longest`` tokens is padded to."""
        if self.pad_to_multiple_of:
            return -(-longest // self.pad_to_multiple_of) * self.pad_to_multiple_of
        return longest

    @staticmethod
    def _columns(present: Any) -> list[tuple[str, str | None]]:
        """(name, target kind or None for a model input) of every column the model takes that ``present`` holds."""
        targets = {key: kind for entry in registry.HEADS.values() for key, kind in entry.targets.items()}
        return [(key, targets.get(key)) for key in (*MODEL_INPUTS, *targets) if key in present]

    def _collate_rows(self, key: str, kind: str | None, values: list[Any], length: int) -> torch.Tensor:
        if kind == registry.POSITION_TARGET and not isinstance(values[0], (list, np.ndarray)):
            return torch.tensor(values, dtype=torch.long)
        fill = self.pad_token_id if key == "input_ids" else 0
        tensors = [torch.as_tensor(v) for v in values]
        if kind == registry.TOKEN_TARGET and not tensors[0].is_floating_point():  # (seq,) tags, or (seq, K) of K annotators
            if tensors[0].dim() == 2:
                annotators = max(t.shape[1] for t in tensors)
                tensors = [self._pad(t.T, annotators, MISSING_ANNOTATOR).T for t in tensors]
            fill = MISSING_ANNOTATOR
        elif kind == registry.TOKEN_TARGET or tensors[0].is_floating_point():
            tensors = [t.float() for t in tensors]
        return torch.stack([self._pad(t, length, fill) for t in tensors])

    def _collate_table(self, table: pa.Table) -> dict[str, torch.Tensor]:
        lengths = RaggedColumn.from_arrow(table.column("input_ids"), "input_ids").lengths
        length = self.padded_width(int(lengths.max(initial=0)))
        batch: dict[str, torch.Tensor] = {}
        for key, kind in self._columns(table.column_names):
            column = table.column(key)
            if not pa.types.is_list(column.type):  # one position per window
                batch[key] = torch.from_numpy(column.to_numpy().astype(np.int64))
                continue
            try:
                ragged = RaggedColumn.from_arrow(column, key)
            except ValueError:  # items of different lengths: K annotators' tags, K varying across windows
                batch[key] = self._collate_rows(key, kind, column.to_pylist(), length)
                continue
            floating = np.issubdtype(ragged.values.dtype, np.floating)
            if kind == registry.TOKEN_TARGET and not floating:  # (seq, K) tags, K the same in every window
                fill, dtype = MISSING_ANNOTATOR, np.int64
            else:
                fill = self.pad_token_id if key == "input_ids" else 0
                dtype = np.float32 if floating or kind == registry.TOKEN_TARGET else np.int64
            batch[key] = torch.from_numpy(ragged.padded(width=length, fill=fill, dtype=dtype))
        return _positions_checked(batch, lengths)

    @staticmethod
    def _pad(tensor: torch.Tensor, length: int, fill: float) -> torch.Tensor:
        missing = length - tensor.shape[0]
        if missing <= 0:
            return tensor
        pad = torch.full((missing, *tensor.shape[1:]), fill, dtype=tensor.dtype)
        return torch.cat([tensor, pad])


def _positions_checked(batch: dict[str, torch.Tensor], lengths: np.ndarray) -> dict[str, torch.Tensor]:
    """``batch``, once every integer gold position (``start_positions``, ...) is a token the window attends to, or
    negative (no label): one on padding or past the window would be scored against a logit masked to the float's
    least value, a loss near 1.7e38 that ruins the step, and one past the batch's width fails deep in the loss. The
    windows the package builds never hold one (a span the window lacks is ``[CLS]``); checked here, on the CPU, before
    a batch reaches the device, so a window built elsewhere is refused naming itself."""
    mask = batch.get("attention_mask")
    for key, kind in WindowCollator._columns(batch):
        target = batch[key]
        if kind != registry.POSITION_TARGET or target.is_floating_point():
            continue
        positions = target.numpy()
        inside = (positions >= 0) & (positions < lengths) & (positions < (mask.shape[1] if mask is not None else np.inf))
        if mask is not None:
            inside[inside] = mask.numpy()[np.flatnonzero(inside), positions[inside]] != 0
        if bad := np.flatnonzero((positions >= 0) & ~inside).tolist():
            raise DataFormatError(f"{key} {int(positions[bad[0]])} of the batch's window {bad[0]} is no token the window "
                                  f"attends to (it has {int(lengths[bad[0]])} tokens; padding and positions past them "
                                  f"hold no answer): {len(bad)} such window(s) in the batch; a gold position is a token "
                                  "of the window, or negative for none")
    return batch


class WindowBatches(TorchDataset):
    """Training windows (a ``datasets.Dataset``) read a batch at a time, as one Arrow table of the batch's rows.

    A ``DataLoader`` asks for a batch's rows together (``__getitems__``); reading them row by row builds a
    Python list per token and caps training at about 1,500 windows/s on one core, below what a GPU takes.
    ``lengths`` (tokens per window, from the Arrow offsets) is what the length-grouped sampler groups by.
    """

    def __init__(self, windows: Any) -> None:
        self.windows = windows
        self._arrow = windows.with_format("arrow")

    def __len__(self) -> int:
        return len(self.windows)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.windows[index]

    def __getitems__(self, indices: Sequence[int]) -> pa.Table:
        return self._arrow[list(indices)]

    @property
    def lengths(self) -> list[int]:
        return RaggedColumn.from_dataset(self.windows, "input_ids").lengths.tolist()
