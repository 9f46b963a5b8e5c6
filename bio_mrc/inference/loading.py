"""A saved model folder -> model, tokenizer and window settings, checked before anything runs."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Mapping
from typing import Any, Iterable, Sequence

import torch
from transformers import PreTrainedTokenizerBase

from ..arguments import count_at_most, given_type, instance_argument
from ..config_schema import whole_number
from ..data.text import check_context_length, check_text
from ..decoding.postprocess import DecodeConfig, available_decodings, with_saved_settings
from ..decoding.window_outputs import WindowOutputs, check_finite_scores
from ..encoders import load_tokenizer
from ..errors import ConfigError, ModelFormatError, a_type
from ..features.pair_windows import ContextsAlone
from ..features.windows import FeatureConfig
from ..model_defaults import HEADS
from ..model_folder import (BACKENDS, WEIGHT_FILES, check_and_read_model_folder, check_model_dir, check_model_folder,  # noqa: F401 (by name)
                            check_pytorch_folder, check_window_frame, model_backend, warn_export_beside_weights)
from ..model import WINDOW_SETTINGS, BioMrcConfig, BioMrcForQuestionAnswering
from ..hub import cached_folder, check_name_given, local_folder, named_as_given, shown_model_name
from ..io import READ_TRIES, files_state, read_in_one_state
from ..qa_checkpoints import QA_HEADS, check_qa_folder, qa_architecture, span_model_from_qa_checkpoint, usable_positions
from ..precision import DEFAULT_PRECISION, check_onnx_device, check_precision, forward_precision, resolve_device  # noqa: F401 (by name)
from ..progress import WindowBars, progress_bars
from ..registry import resolve_decoding
from ..types import Example
from .defaults import GPU_INFERENCE_BATCH_SIZE, INFERENCE_BATCH_SIZE
from .forward import forward_pass_precision, predict_windows
from .onnx_runner import ONNX_FILE, OnnxModel  # the runner only: the exporter (.onnx) builds on this module
from .onnx_threads import ort_thread_variable
from .saved_settings import SavedSettings, check_length_prior, check_saved_decodings, check_saved_length_prior, saved_settings  # noqa: F401 (by name)



@dataclass(repr=False)
class TrainedModel:
    """A model with its tokenizer and the window settings its config names.

    ``model`` is a PyTorch :class:`BioMrcForQuestionAnswering` or, for a folder written by
    ``bio-mrc export --format onnx``, an :class:`OnnxModel` (ONNX Runtime); both carry the
    folder's ``config`` and both run through the same ``run_windows``.
    """

    model: BioMrcForQuestionAnswering | OnnxModel
    tokenizer: PreTrainedTokenizerBase
    features: FeatureConfig
    path: str = ""
    precision: str = DEFAULT_PRECISION  # of the forward pass (bio_mrc.precision); auto resolves on the model's device
    name: str = field(default="", compare=False)  # the folder or hub id as given to load (path: the folder read)

    @classmethod
    def load(
        cls, model_dir: str | Path, progress: bool = False, backend: str = "auto", precision: str | None = None,
        device: str | None = None, decodings: Sequence[str] = (), revision: str | None = None,
    ) -> "TrainedModel":
        """Load a saved bio_mrc model folder, or an ONNX export of one (``backend``: ``auto`` finds
        which); a folder that is not one raises :class:`ModelFormatError`. ``model_dir`` may be a Hugging
        Face hub id, read from the hub cache first (:func:`bio_mrc.hub.local_folder`). ``precision`` (fp32, bf16,
        auto; default auto) is that of every forward pass; an ONNX model computes in its own. A PyTorch
        model runs on ``device``: ``cpu``, ``cuda``, ``cuda:1``, ``mps`` or ``auto`` (default: the GPU when
        there is one, else the CPU); one this machine lacks raises :class:`ConfigError`, as does a GPU asked of an ONNX
        model, which runs on ONNX Runtime's CPU provider (``cpu`` or ``auto``). ``decodings``: those the caller
        will ask of it, one its heads cannot do refused (:func:`bio_mrc.registry.resolve_decoding`) before the weights load.
        ``revision``: a hub id's branch, tag or commit hash, or a short hash of a cached commit (None: its default branch);
        given with a local folder, refused. ``progress``: transformers' bar for the weights loading, on stderr."""
        check_load_arguments(model_dir, backend, decodings)
        check_name_given(model_dir)  # "" would be the current folder
        name = str(model_dir)
        check_precision(precision or DEFAULT_PRECISION)  # options first: refused before any file is read or fetched
        asked, device = device, resolve_device(device)
        model_dir = local_folder(model_dir, revision=revision)  # a hub id: its snapshot in the Hugging Face cache
        with named_as_given(name, model_dir):
            return cls._load_folder(model_dir, name, progress, backend, precision, device, decodings, asked)

    @classmethod
    def _load_folder(cls, model_dir: Path, name: str, *args: Any) -> "TrainedModel":
        """:meth:`_read_folder`, read again where another process wrote the folder's files meanwhile (``train`` moving a
        new model in, file by file), so the config, weights and tokenizer are one model's: the config read before a new
        model moved in and the weights after it were a model of neither."""
        changing = ModelFormatError(f"its files changed while they were read, each of {READ_TRIES} times: another process "
                                    "is writing a model there; load it once that process is done", name)
        return read_in_one_state(lambda: files_state(model_dir), lambda: cls._read_folder(model_dir, name, *args), changing,
                                 retried=(ModelFormatError,))

    @classmethod
    def _read_folder(
        cls, model_dir: Path, name: str, progress: bool, backend: str, precision: str | None, device: str,
        decodings: Sequence[str] = (), asked_device: str | None = None,
    ) -> "TrainedModel":
        """:meth:`load` of the local folder ``model_dir`` (``name``: the folder or hub id as given; ``asked_device``:
        the device as given, before ``auto`` resolved to ``device``)."""
        if qa_architecture(model_dir) and backend != "onnx":  # transformers' own extractive QA model: its span head
            _check_decodings(QA_HEADS, decodings)
            return cls.from_qa_checkpoint(model_dir, name, precision, device, progress)
        warn_export_beside_weights(model_dir, backend, name)
        backend = model_backend(model_dir, backend)
        precision = forward_precision(precision, backend == "onnx", name)
        check_onnx_device(asked_device, backend == "onnx", name)
        if backend == "onnx":
            ort_thread_variable()  # a malformed ORT_INTRA_OP_NUM_THREADS: refused before the graph is parsed
        read = check_model_dir(model_dir, (ONNX_FILE,) if backend == "onnx" else WEIGHT_FILES)
        # sizes, weights (that the config builds: on the meta device), tokenizer, positions; before any allocation
        checked = check_and_read_model_folder(model_dir, None if backend == "onnx" else BioMrcForQuestionAnswering,
                                       onnx=backend == "onnx", read=read)
        config = checked.config
        _check_decodings(config.get("heads", HEADS), decodings)  # before a weight (and its progress bar) loads
        tokenizer = load_tokenizer(str(model_dir))  # before any weights load: a broken tokenizer is refused at once
        check_window_frame(model_dir, tokenizer, checked.tokenizer)  # tokenizer.json as the check parsed it
        if backend == "onnx":
            model = OnnxModel.load(model_dir, checked=config)
        else:
            with progress_bars(progress):
                # fp32 weights whatever the folder holds (saved in bf16 or fp16 too): precision decides each forward pass
                model = BioMrcForQuestionAnswering.from_pretrained(str(model_dir), dtype=torch.float32, checked=config).to(device)
        features = window_settings(model.config, model_dir)
        if backend == "torch":
            check_window_positions(model, features, model_dir)
        return cls(model, tokenizer, features, str(model_dir), precision, name)

    @classmethod
    def from_qa_checkpoint(
        cls, model_dir: Path, name: str, precision: str | None = None, device: str = "cpu", progress: bool = False,
    ) -> "TrainedModel":
        """The span-only bio_mrc model of transformers' extractive QA model in ``model_dir``
        (:func:`bio_mrc.qa_checkpoints.span_model_from_qa_checkpoint`), with its tokenizer, for answering as it is.
        ``name``: the folder or hub id as given, which errors and answers name. ``precision``: of every forward pass,
        fp32, bf16 or auto (None: auto). ``device``: where the model runs, a device already resolved (:meth:`load`
        resolves ``auto``). ``progress``: transformers' bar for the weights loading, on stderr."""
        precision = forward_precision(precision, False, name)
        with progress_bars(progress):
            model, tokenizer = span_model_from_qa_checkpoint(model_dir, name)
        model = model.to(device)
        return cls(model, tokenizer, window_settings(model.config, model_dir), str(model_dir), precision, name)

    def __repr__(self) -> str:
        return f"TrainedModel({self.description()})"

    def description(self) -> str:
        """The model in one line: where it came from, backend, decodings, device and precision (no tensors)."""
        if isinstance(self.model, OnnxModel):
            device = ",".join(self.model.session.get_providers())
        else:
            device = str(getattr(self.model, "device", "?"))
        return (f"{self.name or self.path!r}, backend={self.backend!r}, decodings={self.decodings}, device={device!r}, "
                f"precision={self.precision!r}")

    @property
    def shown_name(self) -> str:
        """The model's name in answers and pages: a hub id's with the commit of its snapshot (``org/name@1a2b3c4``), a
        folder's own name."""
        return shown_model_name(self.name, self.path)

    @property
    def backend(self) -> str:
        """What runs the forward: ``onnx`` (ONNX Runtime) or ``torch``."""
        return "onnx" if isinstance(self.model, OnnxModel) else "torch"

    def answering_settings(self) -> dict[str, str]:
        """How the forward passes run here: ``precision``, fp32 or bf16 (``auto`` resolved as they resolve it, on this
        machine for this model's sizes), and ``device``, the kind of device (cpu, cuda, mps); an ONNX export computes in
        fp32 on the CPU."""
        if self.backend == "onnx":
            return {"precision": "fp32", "device": "cpu"}
        return {"precision": forward_pass_precision(self.model, self.precision), "device": self.model.device.type}

    @property
    def decodings(self) -> list[str]:
        """The decodings the model's heads allow."""
        return available_decodings(self.model.config.heads)

    @property
    def heads(self) -> str:
        """The model's heads, as its config names them (``"span+bio"``)."""
        return self.model.config.heads

    @property
    def thresholds(self) -> dict[str, float]:
        """The no-answer thresholds saved with the model, by decoding (none before ``tune``)."""
        return dict(self.model.config.no_answer_thresholds or {})

    @property
    def calibrators(self) -> dict[str, dict]:
        """Per decoding, the map from raw confidence to P(answer right) fitted on held-out questions."""
        return dict(self.model.config.calibration or {})

    @property
    def span_count_rules(self) -> dict[str, float]:
        """Per decoding, the span-count threshold tuned on multi-span questions (``min_span_probability``)."""
        return dict(getattr(self.model.config, "min_span_probabilities", None) or {})

    def decode_config(self, config: DecodeConfig) -> DecodeConfig:
        """``config`` with the settings saved with this model where it leaves them open: the tuned BIO length prior
        and the answer-length limit of its training answers (:func:`~bio_mrc.decoding.postprocess.with_saved_settings`)."""
        saved = self.model.config
        return with_saved_settings(config, saved.bio_length_prior, getattr(saved, "max_answer_length", None))

    @property
    def batch_size(self) -> int:
        """Windows a forward pass unless told otherwise: :data:`GPU_INFERENCE_BATCH_SIZE` for a model on a GPU,
        :data:`INFERENCE_BATCH_SIZE` elsewhere (the CPU, ONNX Runtime)."""
        device = getattr(self.model, "device", None)
        return GPU_INFERENCE_BATCH_SIZE if getattr(device, "type", None) == "cuda" else INFERENCE_BATCH_SIZE

    def windows(self, examples: Sequence[Example], batch_size: int | None = None, progress: bool = False,
                bars: WindowBars | None = None, data_name: str | None = None, *,
                alone: ContextsAlone | None = None) -> WindowOutputs:
        """Every window's outputs, ``batch_size`` windows a forward pass (default: :attr:`batch_size`); scores no
        decoding can read (NaN, infinity) raise :class:`~bio_mrc.errors.ModelOutputError` naming the question.
        ``progress`` shows a bar for the questions cut into windows and one for the windows run; ``bars``
        (:func:`bio_mrc.progress.window_bars`) are bars a caller holds over several calls, one chunk of a list each.
        With ``data_name`` (the file ``examples`` were read from), the questions of more tokens than ``max_query_length``,
        read as their first tokens, are said in one
        :class:`~bio_mrc.features.long_questions.LongQuestionsNote` naming it. ``alone``
        (:class:`~bio_mrc.features.pair_windows.ContextsAlone`): the contexts tokenized alone, kept by a caller from call
        to call, so a context the slices of a chunk share is tokenized once (None: once a call)."""
        examples = check_examples(examples, "TrainedModel.windows")
        instance_argument(data_name, str, "data_name", "TrainedModel.windows", optional=True)
        instance_argument(alone, ContextsAlone, "alone", "TrainedModel.windows", optional=True)
        precision = self.precision if self.backend == "torch" else None
        batch_size = self.batch_size if batch_size is None else check_batch_size(batch_size)  # 0 or -1 ran no window
        outputs = predict_windows(self.model, self.tokenizer, examples, self.features, batch_size,
                                  progress, precision, bars, data_name, alone)
        check_finite_scores(outputs, examples, self.name or self.path)
        return outputs


def check_load_arguments(model_dir: Any, backend: Any, decodings: Any) -> None:
    """:meth:`TrainedModel.load`'s arguments of the wrong kind, refused in one line before any file is read: pathlib's
    own error names no argument, and a string of decodings was read a character a decoding (``got 's'``)."""
    if not isinstance(model_dir, (str, os.PathLike)):
        raise TypeError(f"TrainedModel.load takes a model folder or a hub id (a str or a Path), got {a_type(model_dir)}")
    if backend not in BACKENDS:
        raise ConfigError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if isinstance(decodings, (str, bytes)) or not isinstance(decodings, Iterable):
        given = f"the string {decodings!r}: give [{decodings!r}]" if isinstance(decodings, str) else a_type(decodings)
        raise ConfigError(f"decodings is a list of decoding names, got {given}")


def check_examples(examples: Any, call: str) -> Sequence[Example]:
    """``examples`` if it is a list of :class:`Example` whose texts the windows can read (as the loaders and
    ``AnswerExtractor`` check them); else one TypeError or DataFormatError naming the call or the question, before
    any window is cut: a string read as windows failed deep in the tokenizer."""
    if isinstance(examples, (str, bytes, Mapping)) or not isinstance(examples, Sequence):
        raise TypeError(f"{call}: examples is a list of Example (a loaded file's .examples), got {given_type(examples)}")
    for place, example in enumerate(examples):
        if not isinstance(example, Example):
            raise TypeError(f"{call}: examples holds {given_type(example)}, not an Example (at {place})")
        record = f"question {example.id!r}"
        check_text(example.question, "question", record)
        check_context_length(check_text(example.context, "context", record), record)
    return examples


def check_batch_size(batch_size: Any) -> int:
    """``batch_size`` if it is a positive whole number of windows a forward pass; else a ConfigError."""
    if not whole_number(batch_size) or batch_size < 1:
        raise ConfigError(f"batch_size is a positive number of windows a forward pass, got {batch_size!r}")
    return int(count_at_most(batch_size, "batch_size"))


def window_settings(config: BioMrcConfig, model_dir: Path) -> FeatureConfig:
    """The windows the model was trained with, from its config; a config without them is refused."""
    values = {name: getattr(config, name, None) for name in WINDOW_SETTINGS}
    missing = [name for name, value in values.items() if value is None]
    if missing:
        raise ModelFormatError(f"config.json lacks the window settings {missing}: set them in config.json "
                               "(the values the model was trained with, in its bio_mrc_run.json)", str(model_dir))
    return FeatureConfig(**values, tag_level=config.tag_level, word_units=config.word_units)


def check_window_positions(model: BioMrcForQuestionAnswering, features: FeatureConfig, model_dir: Path) -> None:
    """Refuse windows longer than the positions the encoder numbers: RoBERTa and its kin start numbering after their
    padding id, so 514 ``max_position_embeddings`` hold windows of 512 tokens."""
    positions = usable_positions(model.encoder)
    if positions is not None and features.max_seq_length > positions:
        raise ModelFormatError(f"config.json: max_seq_length {features.max_seq_length} exceeds the {positions} positions "
                               "a window of its encoder may fill: the encoder cannot read its own windows", str(model_dir))


def is_onnx_export(model: str | Path, revision: str | None = None) -> bool:
    """Whether ``model`` (a folder, or a hub id at ``revision`` already in the local cache) is an ONNX export, which runs
    on ONNX Runtime's CPU provider: ``auto`` is the CPU for it, not the GPU a process of several would take."""
    folder = cached_folder(model, revision)
    return folder is not None and folder.is_dir() and model_backend(folder) == "onnx"


def check_pytorch_model(model_dir: str | Path, revision: str | None = None) -> None:
    """An export reads a PyTorch model: an ONNX export of one (no PyTorch weights, which would otherwise read as a
    partial copy) is refused, naming what to give instead."""
    check_pytorch_folder(local_folder(model_dir, revision=revision), model_dir)


def check_folder_to_load(model_dir: Path) -> None:
    """What :meth:`TrainedModel.load` refuses in the local folder ``model_dir`` before it reads a weight, for a door that
    loads the folder through transformers (the pipeline): a folder that holds no bio_mrc model, export of one or
    transformers' extractive QA model is one :class:`ModelFormatError`, and so is a bio_mrc folder that
    :func:`~bio_mrc.model_folder.check_model_folder` refuses (transformers would otherwise wrap the refusal in its own
    ``Could not load model … with any of the following classes``, or end in a traceback of its own)."""
    if qa_architecture(model_dir):
        check_qa_folder(model_dir)
        return
    onnx = model_backend(model_dir) == "onnx"
    read = check_model_dir(model_dir, (ONNX_FILE,) if onnx else WEIGHT_FILES)
    check_model_folder(model_dir, None if onnx else BioMrcForQuestionAnswering, onnx=onnx, read=read)


def _check_decodings(heads: str, decodings: Sequence[str]) -> None:
    """Each of ``decodings`` one that ``heads`` (a model's, as its config names them) can do."""
    for decoding in decodings:
        resolve_decoding(available_decodings(heads), decoding, heads=heads)
