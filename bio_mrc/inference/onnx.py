"""ONNX export of a bio_mrc model (running an export is :mod:`bio_mrc.inference.onnx_runner`'s job).

``export_onnx`` writes a folder that describes itself as a bio_mrc model folder does: ``model.onnx``
(encoder inputs in, each head's logits out; batch and sequence axes dynamic), the tokenizer, the
``config.json`` (heads, windows, tag level, tuned thresholds, length prior, calibration, span-count rules) and, last,
``bio_mrc_export.json``, the format marker (exporter, opset, inputs, outputs, the logit differences
measured against PyTorch at export). ``TrainedModel.load`` finds ``model.onnx`` and runs it through
:class:`~bio_mrc.inference.onnx_runner.OnnxModel`, a :class:`~bio_mrc.inference.forward.WindowRunner`,
so windows, decoding, thresholds and calibration are the PyTorch path's own code.

The arrows go one way: this module loads the PyTorch model through ``TrainedModel`` and checks
the graph with the runner; the loader imports only the runner, never the exporter.

onnx, onnxruntime and onnxscript are the optional ``onnx`` extra: this module imports them only
when it exports, and names ``pip install 'bio_mrc[onnx]'`` when they are missing.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import logging
import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import torch

from .. import __version__, registry
from ..arguments import path_argument
from ..errors import BioMrcError, InputWarning, ModelFormatError, argument
from ..encoders import answering_digest
from ..hub import check_name_given, checked_local_path
from ..features.question_columns import ENCODER_INPUTS
from ..io import (READ_TRIES, atomic_write_bytes, atomic_write_json, atomic_write_text, check_folder_free, check_library_path, check_outputs_apart, remove_file,
                  is_write_failure, read_in_one_state, staged_folder, written_alone)
from ..model import RUN_FILE, WINDOW_SETTINGS, BioMrcConfig, BioMrcForQuestionAnswering
from ..model_card import EVAL_FILE, write_model_card
from ..model_folder import EXPORT_STAGING_DIR, remove_replaced_model_files
from ..progress import progress_note
from .export_options import DEFAULT_OPSET, MIN_OPSET, TOLERANCE, check_export_options  # noqa: F401 (importable from here)
from .loading import TrainedModel, check_pytorch_model
# OnnxModel and the file names are importable from here too: this is the module users import for ONNX.
from .onnx_runner import EXPORT_FILE, EXPORT_FORMAT, ONNX_FILE, OnnxModel, require

EXTERNAL_DATA_BYTES = 1_500_000_000  # weights above this go to model.onnx.data (one protobuf holds < 2 GB)
STAGING_DIR = EXPORT_STAGING_DIR


@dataclass(frozen=True)
class OnnxExport:
    """What :func:`export_onnx` wrote, as its marker ``bio_mrc_export.json`` records it (:meth:`to_dict`, which
    ``bio-mrc export --format onnx`` prints): the graph ``file`` of the marker's ``export_format``, its ``inputs`` and
    ``outputs`` with their ``dynamic_axes``, the ``opset`` and ``exporter`` (``dynamo_error``: why the dynamo exporter
    failed, where the TorchScript one wrote it), the ``checked_shapes`` (batch, length) and the
    ``max_abs_logit_difference`` from PyTorch per output within ``tolerance``, the package ``versions``, when it was
    ``created``, and the ``source`` model: a local folder by its full path at export (the same folder from any working
    folder), with ``source_digest``, the digest of the files its answers depend on
    (:func:`~bio_mrc.encoders.answering_digest`), by which loading the export says when that model has changed since;
    a hub id as given, with none."""

    format: str
    export_format: int
    file: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    dynamic_axes: dict[str, int]
    opset: int
    exporter: str
    checked_shapes: tuple[tuple[int, int], ...]
    max_abs_logit_difference: dict[str, float]
    tolerance: float
    versions: dict[str, str]
    created: str
    source: str
    dynamo_error: str | None = None
    source_digest: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The marker's record, its keys in the marker's order (``dynamo_error`` and ``source_digest`` only where there
        is one)."""
        failed = {} if self.dynamo_error is None else {"dynamo_error": self.dynamo_error}
        digest = {} if self.source_digest is None else {"source_digest": self.source_digest}
        return {
            "format": self.format, "export_format": self.export_format, "file": self.file, "inputs": list(self.inputs),
            "outputs": list(self.outputs), "dynamic_axes": dict(self.dynamic_axes), "opset": self.opset,
            "exporter": self.exporter, **failed, "checked_shapes": [list(shape) for shape in self.checked_shapes],
            "max_abs_logit_difference": dict(self.max_abs_logit_difference), "tolerance": self.tolerance,
            "versions": dict(self.versions), "created": self.created, "source": self.source, **digest,
        }


class LogitsModule(torch.nn.Module):
    """The model as the exported graph sees it: encoder inputs in, a tuple of logits out
    (no ModelOutput, no losses, no optional outputs), so the graph returns plain tensors."""

    def __init__(self, model: BioMrcForQuestionAnswering) -> None:
        super().__init__()
        self.model = model
        self.output_names = registry.head_outputs(list(model.heads))
        self.eval()  # exported in eval mode: no dropout in the graph

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids, return_dict=True)
        return tuple(getattr(out, name) for name in self.output_names)


def encoder_inputs(model: BioMrcForQuestionAnswering, tokenizer) -> list[str]:
    """``input_ids``, ``attention_mask`` and ``token_type_ids`` where the tokenizer makes them
    (the windows carry them) and the encoder reads them (``takes_token_types``); the graph has exactly these inputs."""
    return [name for name in ENCODER_INPUTS if name in ("input_ids", "attention_mask")
            or (name == "token_type_ids" and name in tokenizer.model_input_names and model.takes_token_types)]


def random_inputs(config: BioMrcConfig, names: Sequence[str], batch: int, length: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """Random windows of one shape: random token ids, padded tails of random lengths, and token
    types 0 (question) then 1 (context) on the real tokens, as windows have them."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, config.encoder.vocab_size, (batch, length), generator=generator)
    real = torch.randint(max(1, length // 2), length + 1, (batch,), generator=generator)
    real[0] = length  # one window without padding
    positions = torch.arange(length)
    mask = (positions[None, :] < real[:, None]).long()
    types = ((positions[None, :] >= length // 3).long() * mask)
    values = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    return {name: values[name] for name in names}


class ExporterFallbackWarning(InputWarning):
    """The dynamo ONNX exporter failed on the model, so the TorchScript exporter wrote the graph; the export's
    ``dynamo_error`` keeps the reason."""


def export_graph(module: LogitsModule, inputs: Mapping[str, torch.Tensor], path: Path, opset: int) -> dict[str, Any]:
    """``torch.onnx.export`` with dynamic batch and sequence axes: the dynamo exporter first (the
    supported one), the TorchScript exporter if it fails on this model (the reason is returned)."""
    names, outputs = list(inputs), module.output_names
    large = sum(p.numel() * p.element_size() for p in module.parameters()) > EXTERNAL_DATA_BYTES
    batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence")
    try:
        with warnings.catch_warnings(), _exporter_logs_quiet():
            warnings.simplefilter("ignore")  # the exporter's notes on axis names and deprecations
            torch.onnx.export(
                module, tuple(inputs.values()), str(path), dynamo=True, input_names=names, output_names=outputs,
                dynamic_shapes={name: {0: batch, 1: sequence} for name in names}, opset_version=opset,
                external_data=large, verbose=False,
            )
        return {"exporter": "torch.onnx.export(dynamo=True)"}
    except Exception as err:  # noqa: BLE001 - any exporter failure falls back, and is recorded
        if is_write_failure(err):  # a full disk or a refused write is the folder's, not the exporter's: no fallback
            raise
        reason = f"{type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}"[:500]
        warnings.warn(ExporterFallbackWarning(f"the dynamo ONNX exporter failed ({reason}); using the TorchScript exporter"),
                      stacklevel=2)
    for leftover in path.parent.glob(f"{path.name}*"):
        remove_file(leftover, path.parent)
    axes = {name: {0: "batch", 1: "sequence"} for name in (*names, *outputs)}
    with warnings.catch_warnings():
        # its deprecation notice and shape checks traced as constants: the check against PyTorch runs other shapes
        warnings.simplefilter("ignore")
        torch.onnx.export(module, tuple(inputs.values()), str(path), dynamo=False, input_names=names, output_names=outputs,
                          dynamic_axes=axes, opset_version=opset)
    return {"exporter": "torch.onnx.export(dynamo=False) (TorchScript)", "dynamo_error": reason}


EXPORTER_LOGGERS = ("torch.onnx", "onnxscript", "onnx_ir")


@contextlib.contextmanager
def _exporter_logs_quiet() -> Iterator[None]:
    """The dynamo exporter's own log lines below errors held back (on every export, ``torchvision is not installed.
    Skipping torchvision::nms`` and three more on standard error, about operators no bio_mrc model has), and those of
    the graph optimizer it runs (onnxscript's and onnx_ir's: some seventy INFO records of removed nodes and folded
    constants in the log of a program whose logging is at INFO)."""
    loggers = [logging.getLogger(name) for name in EXPORTER_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def logit_differences(module: LogitsModule, runner: OnnxModel, inputs: Mapping[str, torch.Tensor]) -> dict[str, float]:
    """Per output, the largest absolute difference between PyTorch's and ONNX Runtime's logits
    over the real (unpadded) tokens; padded positions are never read by the decoders."""
    with torch.inference_mode():
        expected = dict(zip(module.output_names, module(**inputs)))
    actual = runner(inputs)
    real = inputs["attention_mask"].numpy().astype(bool)
    return {name: float(np.abs(expected[name].numpy()[real] - actual[name][real]).max()) for name in module.output_names}


def export_onnx(
    model_dir: str | Path, output_dir: str | Path, opset: int = DEFAULT_OPSET, atol: float = TOLERANCE, overwrite: bool = False,
    progress: bool = False, revision: str | None = None,
) -> OnnxExport:
    """Export a saved bio_mrc model (``model_dir``: a folder, or a hub id at ``revision``) to a self-describing ONNX
    folder, ``output_dir`` (new or empty, another than the model's own); returns its marker record (:class:`OnnxExport`).

    ``opset``: the ONNX opset version the graph is written in, from 7 to the installed onnx's newest. The graph is
    checked against PyTorch on random windows of two shapes other than the traced one; a logit difference above
    ``atol`` (a number above 0) is an error and leaves no export behind. ``overwrite``: replace the files of an
    ``output_dir`` that is not empty. ``progress`` says when the export begins, once every check has passed."""
    path_argument(model_dir, "model_dir", "export_onnx")
    path_argument(output_dir, "output_dir", "export_onnx")
    check_name_given(model_dir)  # before Path reads "" as the current folder
    check_export_options(opset, atol)
    model_dir, output_dir = Path(model_dir), check_library_path(output_dir)
    if output_dir.resolve() == model_dir.resolve():
        raise BioMrcError(f"the export must go to another folder than the model's own ({model_dir})")
    check_outputs_apart([output_dir], model_dirs=[model_dir])
    check_pytorch_model(model_dir, revision)
    for module in ("onnx", "onnxruntime"):  # after the arguments' checks: importing them takes a second
        require(module, "ONNX export")
    with written_alone(output_dir):  # before any work, until the marker is written
        check_folder_free(output_dir, overwrite, STAGING_DIR)  # before the model loads
        trained, source, provenance = load_with_source(model_dir, revision)  # what the graph computes, and its records
        trained.model.float()  # weights saved in bf16 or fp16 too: ONNX Runtime's CPU provider has no bf16 Add or MatMul
        with staged_folder(output_dir, overwrite, STAGING_DIR) as staging:  # a failed export leaves no folder of its making
            progress_note(progress, f"exporting {model_dir} to onnx in {output_dir}")
            record = write_export(trained, staging, opset, atol)
            for name, content in provenance.items():  # provenance: how the model was trained and what it scored
                atomic_write_bytes(staging / name, content)
            # moves in with the files: the marker is then all that is left
            write_model_card(staging, staged_for=output_dir, export={**record, **source})
            # the marker first (the old export is unfinished from here on), then the old model's other files, its
            # PyTorch weights included, which loading would otherwise run in place of the new graph
            remove_file(output_dir / EXPORT_FILE, output_dir)
            remove_replaced_model_files(output_dir, [path.name for path in staging.iterdir()])
        export = OnnxExport(**record, **source)
        atomic_write_json(output_dir / EXPORT_FILE, export.to_dict(), indent=2)
    return export


def load_with_source(model_dir: Path, revision: str | None = None) -> tuple[TrainedModel, dict[str, Any], dict[str, bytes]]:
    """The PyTorch model in ``model_dir``, its marker record (:func:`source_record`) and its provenance files
    (:func:`provenance_files`), of one state of the folder: the record and the files read before and after the load,
    and the load read again where they differ, so that a ``tune`` or ``train`` of the source between them never leaves
    the export one state's weights and settings beside another's digest or run record."""
    changing = ModelFormatError(f"its files changed while they were exported, each of {READ_TRIES} times: another process "
                                "is writing a model there; export it once that process is done", str(model_dir))
    states = []  # the last one taken is that of the state the load was read in

    def state() -> tuple[dict[str, Any], dict[str, bytes]]:
        states.append((source_record(model_dir, revision), provenance_files(checked_local_path(model_dir, revision=revision))))
        return states[-1]

    trained = read_in_one_state(state, lambda: TrainedModel.load(model_dir, backend="torch", precision="fp32", device="cpu",
                                                                 revision=revision), changing)
    source, provenance = states[-1]
    if checked_local_path(model_dir, revision=revision) is None:  # a hub id: its snapshot, fixed by its revision
        provenance = provenance_files(Path(trained.path))
    return trained, source, provenance


def provenance_files(folder: Path | None) -> dict[str, bytes]:
    """The bytes of the model folder's run record and scores, by name, those it holds (none for no folder)."""
    held = {}
    for name in (RUN_FILE, EVAL_FILE) if folder is not None else ():
        with contextlib.suppress(FileNotFoundError):  # not written, or removed meanwhile: the state differs then
            held[name] = (folder / name).read_bytes()
    return held


def source_record(model_dir: str | Path, revision: str | None = None) -> dict[str, Any]:
    """The marker's ``source`` (and ``source_digest``) of the model ``model_dir``, a folder or a hub id (:class:`OnnxExport`)."""
    folder = checked_local_path(model_dir, revision=revision)
    if folder is None:  # a hub id: its snapshot is the hub's to change, under the same id
        return {"source": str(model_dir)}
    return {"source": os.path.abspath(folder), "source_digest": answering_digest(folder)}


def checked_runner(path: Path, config: BioMrcConfig, opset: int) -> OnnxModel:
    """A session on the exported graph; a graph ONNX Runtime cannot run (an opset newer than it knows) is one line."""
    try:
        return OnnxModel.from_file(path, config)
    except BioMrcError:
        raise
    except Exception as err:  # noqa: BLE001 - onnxruntime's own exception types (InvalidGraph, Fail, ...)
        first = str(err).strip().splitlines()[0][:300] if str(err).strip() else type(err).__name__
        raise BioMrcError(f"ONNX Runtime cannot run the graph exported at opset {opset} (choose another {argument('opset')}, e.g. "
                          f"{DEFAULT_OPSET}): {first}") from None


def checked_differences(module: LogitsModule, runner: OnnxModel, config: BioMrcConfig, names: list[str],
                        shapes: list[tuple[int, int]]) -> dict[str, float]:
    """Per output, the largest logit difference from PyTorch over random windows of each (batch, length) in ``shapes``.
    A graph that ONNX Runtime cannot run at another shape than the traced one (an encoder whose attention the exporter
    traced for that shape alone, as Longformer's windowed attention) is one line naming the shape, not exported."""
    differences: dict[str, float] = {}
    for seed, (batch, length) in enumerate(shapes, 1):
        try:
            found = logit_differences(module, runner, random_inputs(config, names, batch, length, seed))
        except Exception as err:  # noqa: BLE001 - onnxruntime's own exception types (Fail, RuntimeException, ...)
            first = str(err).strip().splitlines()[0][:300] if str(err).strip() else type(err).__name__
            raise BioMrcError(f"the exported graph does not run in ONNX Runtime on windows of {length} tokens (batch "
                              f"{batch}), a shape other than the one it was traced at: the encoder "
                              f"({type(module.model.encoder).__name__}) does not export to ONNX; not exported ({first})") from None
        for name, value in found.items():
            differences[name] = max(differences.get(name, 0.0), value)
    return differences


def write_export(trained: TrainedModel, staging: Path, opset: int, atol: float) -> dict[str, Any]:
    """The graph, its check against PyTorch, the tokenizer, the config with its windows written
    out, and the provenance files, all in ``staging``; returns the marker record's fields but its source."""
    model, config = trained.model.eval(), trained.model.config
    module, names = LogitsModule(model), encoder_inputs(model, trained.tokenizer)
    exported = export_graph(module, random_inputs(config, names, 2, 16), staging / ONNX_FILE, opset)
    runner = checked_runner(staging / ONNX_FILE, config, opset)
    positions = getattr(config.encoder, "max_position_embeddings", None)  # none: relative positions (Funnel)
    longest = min(trained.features.max_seq_length, positions if isinstance(positions, int) else trained.features.max_seq_length)
    shapes = [(3, 29), (1, longest)]
    differences = checked_differences(module, runner, config, names, shapes)
    if max(differences.values()) > atol:
        raise BioMrcError(f"the exported graph's logits differ from PyTorch's by up to {differences} (> {atol}): not exported")
    trained.tokenizer.save_pretrained(str(staging))
    saved = copy.deepcopy(config)
    for name in WINDOW_SETTINGS:  # written out, so the folder never needs the run record to be read
        setattr(saved, name, getattr(trained.features, name))
    atomic_write_text(staging / "config.json", saved.to_json_string())
    return {
        "format": "onnx", "export_format": EXPORT_FORMAT, "file": ONNX_FILE, "inputs": tuple(names),
        "outputs": tuple(module.output_names), "dynamic_axes": {"batch": 0, "sequence": 1}, "opset": opset, **exported,
        "checked_shapes": tuple(shapes), "max_abs_logit_difference": differences, "tolerance": atol,
        "versions": {"bio_mrc": __version__, "torch": torch.__version__, **_versions("onnx", "onnxruntime", "onnxscript")},
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _versions(*modules: str) -> dict[str, str]:
    found = {}
    for name in modules:
        try:
            found[name] = importlib.import_module(name).__version__
        except ImportError:
            continue
    return found
