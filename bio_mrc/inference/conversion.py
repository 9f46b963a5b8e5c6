"""Between transformers' extractive QA models (``...ForQuestionAnswering``) and bio_mrc's: ``bio-mrc convert`` saves
one as a bio_mrc model folder, which ``tune`` can then fit a no-answer threshold and a calibrator into;
``bio-mrc export --format transformers`` saves a bio_mrc model's encoder and span head as one, for any tool that
runs transformers' QA models."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..arguments import path_argument
from ..errors import ConfigError
from ..hub import check_name_given, local_folder
from ..io import (atomic_write_json, check_folder_free, check_folder_target, check_library_path, check_outputs_apart, staged_folder,
                  written_alone)
from ..model_defaults import QA_WINDOWS
from ..model_records import RUN_FILE
from ..model_card import clear_model_card, write_exported_card, write_model_card
from ..model_folder import CONVERT_STAGING_DIR, EXPORT_STAGING_DIR, check_bidirectional, qa_model_architecture, remove_replaced_model_files
from ..progress import progress_bars, progress_note
from ..qa_checkpoints import (QA_HEADS, check_qa_windows, qa_architecture, qa_model_from_span_model, reading_inputs, saved_config,
                              span_model_from_qa_checkpoint)
from .loading import check_pytorch_model
from .onnx import load_with_source

STAGING_DIR = CONVERT_STAGING_DIR


@dataclass(frozen=True)
class QaCheckpointConversion:
    """What :func:`convert_qa_checkpoint` wrote: the bio_mrc model folder ``output``, converted from ``source`` (as
    given) at ``revision`` (a hub id's; None: its default branch, or a local folder), a transformers ``architecture``,
    into a model of ``heads`` with the windows it saved (``max_seq_length``, ``doc_stride``, ``max_query_length``).
    :meth:`to_dict` is what ``bio-mrc convert`` prints."""

    output: Path
    source: str
    architecture: str
    heads: str
    max_seq_length: int
    doc_stride: int
    max_query_length: int
    revision: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """What ``bio-mrc convert`` prints: the output folder, the source model, its architecture, heads and windows."""
        windows = {"max_seq_length": self.max_seq_length, "doc_stride": self.doc_stride, "max_query_length": self.max_query_length}
        # "revision" as the run record's converted_from names it
        return {"output": str(self.output), "source": self.source, "revision": self.revision, "architecture": self.architecture,
                "heads": self.heads, "windows": windows}


@dataclass(frozen=True)
class QaCheckpointExport:
    """What :func:`export_qa_checkpoint` wrote: transformers' ``architecture`` (``BertForQuestionAnswering``, ...) of
    the bio_mrc model ``source``, and the heads ``left_out`` (the BIO head, which transformers has no class for).
    :meth:`to_dict` is what ``bio-mrc export --format transformers`` prints after its output folder."""

    architecture: str
    source: str
    left_out: tuple[str, ...]
    format: str = "transformers"

    def to_dict(self) -> dict[str, Any]:
        """What ``bio-mrc export --format transformers`` prints."""
        return {"format": self.format, "architecture": self.architecture, "source": self.source, "left_out": list(self.left_out)}


def convert_qa_checkpoint(model: str | Path, output_dir: str | Path, progress: bool = False, overwrite: bool = False,
                          revision: str | None = None, **windows: int | None) -> QaCheckpointConversion:
    """Save the span-only bio_mrc model of the extractive QA model ``model`` (a folder, or a hub id at ``revision``) in ``output_dir``,
    a new or empty folder (with ``overwrite``, one whose model files it replaces; any other file stays): config,
    weights, tokenizer and model card. ``windows`` (``max_seq_length``, ``doc_stride``, ``max_query_length``) override
    :data:`bio_mrc.qa_checkpoints.QA_WINDOWS`; ``progress`` shows transformers' bars. Returns what was written
    (:class:`QaCheckpointConversion`)."""
    path_argument(model, "model", "convert_qa_checkpoint")
    path_argument(output_dir, "output_dir", "convert_qa_checkpoint")
    if unknown := sorted(set(windows) - set(QA_WINDOWS)):  # a misspelt window would be dropped unread
        raise TypeError(f"convert_qa_checkpoint: unknown window setting {unknown[0]!r}; the window settings are "
                        f"{', '.join(QA_WINDOWS)}")
    check_name_given(model)
    name, output_dir = str(model), check_library_path(check_folder_target(output_dir))
    folder = local_folder(model, revision=revision)
    architecture = qa_model_architecture(folder, name)
    check_bidirectional(saved_config(folder), folder)  # a GPT-2 or T5 QA model, before the output folder is made
    check_outputs_apart([output_dir], model_dirs=[folder])
    check_qa_windows(folder, **windows)  # settings the model cannot take, before its weights load
    with progress_bars(progress), staged_folder(output_dir, overwrite, STAGING_DIR) as staging:  # refused before any work
        progress_note(progress, f"converting {model} into a bio_mrc model in {output_dir}")
        source = _source_name(model, folder)
        converted, tokenizer = span_model_from_qa_checkpoint(folder, source, **windows)
        converted.save_pretrained(str(staging))
        tokenizer.save_pretrained(str(staging))
        atomic_write_json(staging / RUN_FILE, conversion_record(source, revision, folder, architecture), indent=2)
        write_model_card(staging, staged_for=output_dir)
        replace_model_files(output_dir, staging)  # the card moves in with the files: a stop after the move leaves it
    saved = converted.config
    return QaCheckpointConversion(output_dir, name, architecture, saved.heads, saved.max_seq_length, saved.doc_stride,
                                  saved.max_query_length, revision)


def conversion_record(source: str, revision: str | None, folder: Path, architecture: str) -> dict[str, Any]:
    """The run record of a converted model: what it was converted from, the hub id's ``revision`` (None: its default
    branch, or a local folder) and the ``folder`` read (a hub id's snapshot, named by its commit), so the conversion can
    be repeated on the same weights."""
    return {"converted_from": {"model": source, "revision": revision, "snapshot": str(folder.resolve()),
                               "architecture": architecture}}


def _source_name(model: str | Path, folder: Path) -> str:
    """How a converted model names its source: a hub id as given, a local folder by its absolute path (a relative
    one reads as a hub id once the working folder changes, and the card would claim it as its base model)."""
    return str(folder.resolve()) if Path(os.path.expanduser(model)).exists() else str(model)


def export_qa_checkpoint(model_dir: str | Path, output_dir: str | Path, overwrite: bool = False,
                         progress: bool = False, revision: str | None = None) -> QaCheckpointExport:
    """Save the encoder and span head of the bio_mrc model in ``model_dir`` (a folder, or a hub id at ``revision``) as transformers'
    ``...ForQuestionAnswering`` of its encoder in ``output_dir`` (new or empty, or replaced with ``overwrite``), with
    its tokenizer; its logits are checked against the bio_mrc model's first. A BIO head, which transformers has no class
    for, is left out, and so are the windows and tuned settings (transformers' QA models keep none). Returns what was
    written (:class:`QaCheckpointExport`)."""
    path_argument(model_dir, "model_dir", "export_qa_checkpoint")
    path_argument(output_dir, "output_dir", "export_qa_checkpoint")
    check_name_given(model_dir)  # before Path reads "" as the current folder
    model_dir, output_dir = Path(model_dir), check_library_path(check_folder_target(output_dir))
    check_outputs_apart([output_dir], model_dirs=[model_dir])
    check_pytorch_model(model_dir, revision)
    with written_alone(output_dir):  # before the model is loaded
        return _export_qa_into(model_dir, output_dir, overwrite, progress, revision)


def _export_qa_into(model_dir: Path, output_dir: Path, overwrite: bool, progress: bool,
                    revision: str | None = None) -> QaCheckpointExport:
    """:func:`export_qa_checkpoint` once its output folder is checked and held."""
    check_folder_free(output_dir, overwrite, EXPORT_STAGING_DIR)  # before the model loads
    trained, _, records = load_with_source(model_dir, revision)  # the card reads the records of the state loaded
    if trained.model.span_head is None:
        raise ConfigError(f"{model_dir} has no span head (heads {trained.model.config.heads!r}); transformers' "
                          "extractive QA models are start/end models")
    tokenizer = reading_inputs(trained.model, trained.tokenizer)  # no token types for an encoder of one type
    with progress_bars(progress), staged_folder(output_dir, overwrite, EXPORT_STAGING_DIR) as staging:
        progress_note(progress, f"exporting {model_dir} to transformers in {output_dir}")
        qa = qa_model_from_span_model(trained.model, tokenizer, str(model_dir))
        qa.save_pretrained(str(staging))
        tokenizer.save_pretrained(str(staging))
        left_out = [name for name in trained.model.config.head_names if name != QA_HEADS]
        config = None if qa_architecture(Path(trained.path)) else trained.model.config  # transformers' own QA model: no card
        write_exported_card(staging, Path(trained.path), type(qa).__name__, left_out, staged_for=output_dir, config=config,
                            run_record=records.get(RUN_FILE))
        replace_model_files(output_dir, staging)  # the card moves in with the files: a stop after the move leaves it
    return QaCheckpointExport(type(qa).__name__, str(model_dir), tuple(left_out))


def replace_model_files(folder: Path, staging: Path) -> None:
    """The files of the model a folder held that the new one in ``staging`` does not write (weights of another layout,
    an ONNX graph, bio_mrc's records) and its generated card go before the new files move in: beside the new model
    they would be read as part of it."""
    remove_replaced_model_files(folder, [path.name for path in staging.iterdir()])
    clear_model_card(folder)


__all__ = ["QaCheckpointConversion", "QaCheckpointExport", "convert_qa_checkpoint", "export_qa_checkpoint"]
