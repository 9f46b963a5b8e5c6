"""Run a model over windows and collect its outputs as padded numpy arrays.

One code path for every backend: :func:`run_windows` pads, sorts windows by length, batches them
and fills the output arrays; a *runner* only turns one padded batch into logits. A PyTorch model
is wrapped in :class:`TorchRunner`; an exported ONNX model (:class:`~bio_mrc.inference.onnx_runner.OnnxModel`)
is a runner itself, so both give the same :class:`WindowOutputs` and decoding needs no change.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Collection, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import PreTrainedTokenizerBase

from .. import registry
from ..decoding.window_outputs import WindowOutputs
from ..features.long_questions import note_long_questions
from ..features.pair_windows import ContextsAlone
from ..features.question_columns import ENCODER_INPUTS
from ..features.ragged import RaggedColumn
from ..features.window_table import WindowTable, window_columns
from ..features.windows import FeatureConfig, windows_in_table
from ..model import BioMrcForQuestionAnswering
from ..precision import autocast, resolve_precision
from ..precision_probe import MatrixShapes
from ..progress import WindowBars, window_bars
from ..types import Example
from .defaults import INFERENCE_BATCH_SIZE
from .forked_threads import register_fork_handler

if TYPE_CHECKING:  # windows from training and tuning; an answer's are a WindowTable, and import no datasets
    from datasets import Dataset

# A child forked after a forward pass here would hang in its own first one with more than one thread.
register_fork_handler()


@runtime_checkable
class WindowRunner(Protocol):
    """What :func:`run_windows` needs from a model: its head names and a batch -> logits call.

    ``__call__`` gets one padded batch (``input_ids``, ``attention_mask`` and, when the windows
    have them, ``token_type_ids``; int64 tensors of shape (batch, seq)) and returns numpy float32
    arrays named as the registry's heads name their outputs, for every head in ``heads``.
    """

    heads: Collection[str]

    def __call__(self, batch: Mapping[str, torch.Tensor]) -> Mapping[str, np.ndarray]: ...


class TorchRunner:
    """A :class:`BioMrcForQuestionAnswering` as a runner: eval mode, on the model's device, in
    ``precision`` (:mod:`bio_mrc.precision`; ``auto`` resolved for that device)."""

    def __init__(self, model: BioMrcForQuestionAnswering, precision: str | None = None) -> None:
        self.model = model.eval()
        self.heads = tuple(model.heads)
        self.device = next(model.parameters()).device
        self.precision = forward_pass_precision(model, precision)

    @torch.inference_mode()
    def __call__(self, batch: Mapping[str, torch.Tensor]) -> dict[str, np.ndarray]:
        with autocast(self.precision, self.device):
            out = self.model(**{k: v.to(self.device) for k, v in batch.items()})
        return {name: getattr(out, name).float().cpu().numpy() for name in registry.head_outputs(self.heads)}


def forward_pass_precision(model: BioMrcForQuestionAnswering, precision: str | None = None) -> str:
    """fp32 or bf16: what ``precision`` (``auto`` by default) runs the model's forward passes in on its device, for its
    sizes (``auto`` by this machine's measurement)."""
    return resolve_precision(precision, next(model.parameters()).device, _shapes(model), "inference")


def _shapes(model: BioMrcForQuestionAnswering) -> MatrixShapes | None:
    """The matrix shapes ``auto`` measures for this model's forward passes (None: a config without the usual sizes)."""
    try:
        return MatrixShapes.of(model.config.encoder, INFERENCE_BATCH_SIZE, model.config.max_seq_length)
    except (AttributeError, TypeError, ValueError):
        return None


def as_runner(model: BioMrcForQuestionAnswering | WindowRunner, precision: str | None = None) -> WindowRunner:
    """A PyTorch model wrapped in :class:`TorchRunner`; anything else must already be a runner
    (which computes in its own precision: asking it for bf16 is an error)."""
    if isinstance(model, torch.nn.Module):
        return TorchRunner(model, precision)
    if not isinstance(model, WindowRunner):
        raise TypeError(f"run_windows needs a BioMrcForQuestionAnswering or a WindowRunner, got {type(model).__name__}")
    if precision == "bf16":
        raise ValueError(f"precision bf16 is for PyTorch models; a {type(model).__name__} computes in its own precision")
    return model


def run_windows(
    model: BioMrcForQuestionAnswering | WindowRunner,
    features: Dataset | WindowTable,
    pad_token_id: int = 0,
    batch_size: int = INFERENCE_BATCH_SIZE,
    progress: bool = True,
    precision: str | None = None,
    bar: tqdm | None = None,
) -> WindowOutputs:
    """Forward every window of ``features`` (the windows as :mod:`bio_mrc.features` makes them: ``input_ids``, offsets
    and masks, ``example_index``; a ``Dataset`` of them, or a :class:`~bio_mrc.features.window_table.WindowTable`);
    windows are batched by length so padding costs little, ``batch_size`` windows a
    forward pass, each padded with ``pad_token_id`` (the tokenizer's) to the longest of its batch.
    ``model`` is a PyTorch model (run in ``precision``, default auto) or any :class:`WindowRunner`
    (an ONNX Runtime session). ``bar`` counts the windows run (None: a bar of the call's own, shown with ``progress``)."""
    runner = as_runner(model, precision)
    return window_outputs(features, window_logits(runner, features, pad_token_id, batch_size, progress, bar))


def window_logits(
    runner: WindowRunner, features: Dataset | WindowTable, pad_token_id: int, batch_size: int, progress: bool,
    bar: tqdm | None = None,
) -> dict[str, np.ndarray]:
    """Each head's logits of every window, padded to the longest window (-inf / 0 past a window's end)."""
    inputs = window_columns(features, [name for name in ENCODER_INPUTS if name in features.column_names])
    return input_logits(runner, inputs, pad_token_id, batch_size, progress, bar)


def input_logits(
    runner: WindowRunner, inputs: Mapping[str, RaggedColumn], pad_token_id: int, batch_size: int, progress: bool = False,
    bar: tqdm | None = None,
) -> dict[str, np.ndarray]:
    """:func:`window_logits` of windows given as their encoder inputs (``input_ids`` and the others of
    :data:`ENCODER_INPUTS` they have): batched by length, longest first; ``bar`` as :func:`run_windows` takes it."""
    lengths = inputs["input_ids"].lengths
    n, width = len(lengths), int(lengths.max(initial=1))
    entries = [registry.head(head) for head in runner.heads]
    arrays = {name: np.full((n, width, *dims), entry.pad, dtype=np.float32)
              for entry in entries for name, dims in zip(entry.outputs, entry.output_dims)}
    order = np.argsort(-lengths, kind="stable")
    own = tqdm(total=n, desc="inference", unit="window", disable=not progress) if bar is None else contextlib.nullcontext(bar)
    with own as bar:
        for begin in range(0, n, batch_size):
            rows = order[begin : begin + batch_size]
            batch = {name: torch.from_numpy(column.padded(rows, fill=pad_token_id if name == "input_ids" else 0, dtype=np.int64))
                     for name, column in inputs.items()}
            length = batch["input_ids"].shape[1]
            for name, logits in runner(batch).items():
                if name in arrays:
                    arrays[name][rows, :length] = logits
            bar.update(len(rows))
    return arrays


def window_outputs(features: Dataset | WindowTable, logits: Mapping[str, np.ndarray]) -> WindowOutputs:
    """The windows' offsets and masks, padded to the logits' width, around the logits of the model's heads
    (named as their registry entries name them; a head the model lacks is absent)."""
    some = next(iter(logits.values()), None)
    width = some.shape[1] if some is not None else 1
    columns = window_columns(features, ["offset_mapping", "paragraph_mask", "word_offsets", "tag_mask"])

    def padded(name: str, fill: int, dtype) -> np.ndarray:
        return columns[name].padded(width=width, fill=fill, dtype=dtype)

    return WindowOutputs(
        np.asarray(features["example_index"]), padded("offset_mapping", -1, np.int64), padded("paragraph_mask", 0, bool),
        word_offsets=padded("word_offsets", -1, np.int64), tag_mask=padded("tag_mask", 0, bool), **logits,
    )


def predict_windows(
    model: BioMrcForQuestionAnswering | WindowRunner,
    tokenizer: PreTrainedTokenizerBase,
    examples: Sequence[Example],
    feature_config: FeatureConfig,
    batch_size: int = INFERENCE_BATCH_SIZE,
    progress: bool = True,
    precision: str | None = None,
    bars: WindowBars | None = None,
    data_name: str | None = None,
    alone: ContextsAlone | None = None,
) -> WindowOutputs:
    """Tokenize ``examples`` with ``tokenizer`` into the windows ``feature_config`` sets (its ``max_seq_length``,
    ``doc_stride`` and ``max_query_length``: the model's own) and run ``model`` over them, as :func:`run_windows` runs
    it (``batch_size`` windows a forward pass, in ``precision``). ``model``: a PyTorch model or any
    :class:`WindowRunner` (an ONNX Runtime session). ``bars`` count the questions cut
    and the windows run (None: bars of the call's own, shown with ``progress``): a list answered in chunks passes
    the same bars to each chunk's call, so they run once over the whole list. With ``data_name`` (the file the
    questions were read from), those cut to ``max_query_length`` are said in one ``LongQuestionsNote`` naming it.
    ``alone``: the contexts tokenized alone that a caller keeps from call to call (a chunk's slices over one context)."""
    if not examples:  # no window to cut or run: the tokenizer and the dataset have no columns for none
        return no_windows(model.heads)
    with contextlib.ExitStack() as held:
        if bars is None:
            bars = held.enter_context(window_bars(len(examples), progress))
        # numpy columns, not a datasets.Dataset: no datasets or pandas imported to answer (the windows bar counts the questions)
        features = windows_in_table(examples, tokenizer, feature_config, advance=bars.windows.update, alone=alone)
        if data_name is not None:
            note_long_questions(features, examples, feature_config.max_query_length, data_name)
        inference = bars.cut(len(features))
        return run_windows(model, features, tokenizer.pad_token_id or 0, batch_size, progress, precision, inference)


def no_windows(heads: Collection[str]) -> WindowOutputs:
    """The outputs of no windows, as :func:`predict_windows` gives them for no questions: every array without rows."""
    logits = {name: np.zeros((0, 1, *dims), dtype=np.float32)
              for entry in map(registry.head, heads) for name, dims in zip(entry.outputs, entry.output_dims)}
    return WindowOutputs(np.zeros(0, dtype=np.int64), np.full((0, 1, 2), -1, dtype=np.int64), np.zeros((0, 1), dtype=bool),
                         word_offsets=np.full((0, 1, 2), -1, dtype=np.int64), tag_mask=np.zeros((0, 1), dtype=bool), **logits)
