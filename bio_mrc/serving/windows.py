"""A question's windows as the server schedules them: tokenized once, split into chunks of a bounded number of
windows, filled chunk by chunk by forward passes that may mix the chunks of several questions, then decoded once.

Each window's logits are computed exactly as :func:`~bio_mrc.inference.forward.run_windows` computes them (the
same inputs, sorted by length and run in ``batch_size`` windows at a time) and land in the question's own arrays,
padded to its longest window: the arrays :class:`~bio_mrc.inference.AnswerExtractor` decodes, whichever chunks and
whichever other questions shared the forward passes (up to the last bits of a float: a window padded beside a
longer one sums its attention over more zeros).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Sequence

import numpy as np

from .. import registry
from ..decoding.window_outputs import WindowOutputs
from ..features.question_columns import DECODED_COLUMNS, ENCODER_INPUTS, window_columns
from ..features.ragged import RaggedColumn
from ..inference.forward import WindowRunner, as_runner, input_logits
from ..inference.loading import TrainedModel
from ..types import Example

# Reads questions' windows in one call: (questions' examples) -> each question's (example_index, columns).
ColumnReader = Callable[[Sequence[Sequence[Example]]], list[tuple[np.ndarray, dict[str, RaggedColumn]]]]


@dataclass(eq=False)
class QuestionWindows:
    """The windows of one question's examples (``example_index`` into ``examples``), their logits as forward passes
    fill them, and ``request``: what the asker wants done with the answers."""

    examples: list[Example]
    example_index: np.ndarray
    columns: dict[str, RaggedColumn]
    logits: dict[str, np.ndarray]
    request: Any = None
    filled: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.filled = np.zeros(len(self.example_index), dtype=bool)

    def __len__(self) -> int:
        return len(self.example_index)

    @property
    def complete(self) -> bool:
        return bool(self.filled.all())

    def chunks(self, size: int) -> list["Chunk"]:
        """The windows in order, ``size`` at a time."""
        return [Chunk(self, range(begin, min(begin + size, len(self)))) for begin in range(0, len(self), size)]

    def outputs(self, width: int | None = None) -> WindowOutputs:
        """The filled windows as decoding reads them, padded to ``width`` (default: the longest window)."""
        width = width or self.width
        arrays = {name: self.columns[name].padded(width=width, fill=fill, dtype=dtype)
                  for name, (fill, dtype) in DECODED_COLUMNS.items()}
        logits = {name: _pad_width(array, width, _pad_value(name)) for name, array in self.logits.items()}
        return WindowOutputs(self.example_index, arrays["offset_mapping"], arrays["paragraph_mask"],
                             word_offsets=arrays["word_offsets"], tag_mask=arrays["tag_mask"], **logits)

    @property
    def width(self) -> int:
        return int(self.columns["input_ids"].lengths.max(initial=1))


@dataclass(frozen=True, eq=False)
class Chunk:
    """Some consecutive windows of one question: what one forward pass may take of it."""

    windows: QuestionWindows
    rows: range

    def __len__(self) -> int:
        return len(self.rows)


def question_windows(trained: TrainedModel, questions: Sequence[Sequence[Example]], requests: Sequence[Any] = (),
                     read: ColumnReader | None = None) -> list[QuestionWindows]:
    """Each question's (its examples') windows, tokenized together in one call (by ``read``; default: here, with
    ``trained``'s tokenizer), with empty logits for the model's heads; ``requests`` ride along, one per question."""
    read = read or partial(window_columns, trained.tokenizer, trained.features)
    heads = [registry.head(head) for head in trained.model.config.head_names]
    found = []
    for question, (example_index, columns), request in zip(questions, read(questions), [*requests] + [None] * len(questions)):
        width = int(columns["input_ids"].lengths.max(initial=1))
        logits = {name: np.full((len(example_index), width, *dims), entry.pad, dtype=np.float32)
                  for entry in heads for name, dims in zip(entry.outputs, entry.output_dims)}
        found.append(QuestionWindows(list(question), example_index, columns, logits, request))
    return found


def window_runner(trained: TrainedModel) -> WindowRunner:
    """What runs ``trained``'s forward passes, in its precision (as :meth:`TrainedModel.windows` runs them)."""
    return as_runner(trained.model, trained.precision if trained.backend == "torch" else None)


def run_chunks(runner: WindowRunner, chunks: Sequence[Chunk], pad_token_id: int, batch_size: int) -> None:
    """Fill the logits of every chunk's windows: one :func:`input_logits` call over all of them."""
    names = [name for name in ENCODER_INPUTS if name in chunks[0].windows.columns]
    inputs = {name: RaggedColumn.concat([chunk.windows.columns[name].take(chunk.rows) for chunk in chunks])
              for name in names}
    logits = input_logits(runner, inputs, pad_token_id, batch_size)
    begin = 0
    for chunk in chunks:
        rows, end = np.asarray(chunk.rows), begin + len(chunk)
        for name, array in chunk.windows.logits.items():
            width = min(array.shape[1], logits[name].shape[1])
            array[rows, :width] = logits[name][begin:end, :width]
        chunk.windows.filled[rows] = True
        begin = end


def _pad_width(array: np.ndarray, width: int, fill: float) -> np.ndarray:
    if array.shape[1] >= width:
        return array[:, :width]
    padding = np.full((array.shape[0], width - array.shape[1], *array.shape[2:]), fill, dtype=array.dtype)
    return np.concatenate([array, padding], axis=1)


def _pad_value(output: str) -> float:
    return next(entry.pad for entry in registry.HEADS.values() if output in entry.outputs)
