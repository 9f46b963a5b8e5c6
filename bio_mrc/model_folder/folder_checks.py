"""The checks every loader, export and conversion runs on a model folder, in their order (the package's docstring)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..errors import ModelFormatError
from ..model_defaults import MODEL_FORMAT
from ..precision import check_onnx_device, forward_precision
from ..run_folder import unfinished_run
from .backends import check_pytorch_folder, model_backend
from .config_reading import foreign_model, read_config, read_json_object, written_format_problem
from .encoder_checks import check_encoder_classes, check_model_type_named, check_plain_direction, check_plain_sizes
from .files import ONNX_FILE, TOKENIZER_FILE, WEIGHT_FILES, check_file_kinds, fail
from .onnx_checks import check_onnx
from .qa_files import check_qa_files, qa_architecture
from .records import check_records
from .settings_checks import check_settings
from .tokenizer_checks import TOKENIZER_MISSING, check_tokenizer
from .weights import check_weights_fit, check_weights_present, expected_shapes, weight_shapes


def check_model_folder(folder: str | Path, model_class: type | None = None, tokenizer_required: bool = True,
                       onnx: bool = False, read: dict[str, Any] | None = None) -> dict[str, Any]:
    """Check a model folder as :mod:`bio_mrc.model_folder` says; returns its ``config.json``. ``model_class``
    (a ``PreTrainedModel`` class) adds the check that the weights are exactly those it builds from the config;
    ``onnx`` checks ``model.onnx`` instead of PyTorch weights. ``read``: its ``config.json`` as the caller parsed it
    already (:func:`read_json_object`), which is then not read again."""
    return check_and_read_model_folder(folder, model_class, tokenizer_required, onnx, read).config


@dataclass(frozen=True)
class CheckedFolder:
    """What the checks of a model folder read, handed on so that loading reads none of it again: ``config``, its
    ``config.json``; ``shapes``, each saved tensor's :class:`~bio_mrc.model_folder.weights.Shape` from the safetensors
    headers (None for an ONNX export); ``tokenizer``, ``tokenizer.json`` as ``tokenizers`` parsed it (None where the
    folder has none), for :func:`~bio_mrc.model_folder.tokenizer_checks.check_window_frame`."""

    config: dict[str, Any]
    shapes: dict[str, tuple[int, ...]] | None
    tokenizer: Any


def check_and_read_model_folder(folder: str | Path, model_class: type | None = None, tokenizer_required: bool = True,
                                onnx: bool = False, read: dict[str, Any] | None = None) -> CheckedFolder:
    """:func:`check_model_folder`, returning what its checks read (:class:`CheckedFolder`): each file is read once."""
    folder = Path(folder)
    checked = _checked_files(folder, tokenizer_required, onnx, read)
    check_encoder_classes(checked.config["encoder"], folder)
    if onnx:
        check_onnx(folder, checked.config)
    elif model_class is not None:
        check_weights_fit(folder, checked.shapes, expected_shapes(model_class, checked.config, folder))
    return checked


def check_model_files(folder: Path, tokenizer_required: bool = True, onnx: bool = False,
                      read: dict[str, Any] | None = None) -> dict[str, Any]:
    """What :func:`check_model_folder` checks that needs neither torch nor transformers, so a command refuses it at once:
    the files' kinds, ``config.json`` (a bio_mrc model's, its encoder's type named and reading both ways, its sizes and
    settings), the records, the weights' safetensors headers (not for ``onnx``) and the tokenizer files
    (``tokenizer.json`` where one is ``tokenizer_required``). Returns the config."""
    return _checked_files(folder, tokenizer_required, onnx, read).config


def _checked_files(folder: Path, tokenizer_required: bool, onnx: bool, read: dict[str, Any] | None) -> CheckedFolder:
    """:func:`check_model_files`, returning what it read."""
    check_file_kinds(folder)
    config = read_config(folder, read)
    check_model_type_named(config["encoder"], folder)
    check_plain_direction(config["encoder"], folder)
    encoder = check_plain_sizes(config, folder)
    check_settings(config, encoder, folder)
    check_records(folder)
    if not onnx:
        check_weights_present(folder)
    if tokenizer_required and not (folder / TOKENIZER_FILE).is_file():
        raise fail(folder, TOKENIZER_FILE, TOKENIZER_MISSING)
    shapes = None if onnx else weight_shapes(folder)  # a cut-short or corrupt file, read from its header alone
    return CheckedFolder(config, shapes, check_tokenizer(folder, encoder["vocab_size"], tokenizer_required))


def check_loadable(folder: Path, name: str | Path, backend: str = "auto", precision: str | None = None,
                   device: str | None = None) -> None:
    """What loading the model ``name`` (``bio_mrc.inference.TrainedModel.load``, with ``backend``, ``precision`` and
    ``device``) refuses in its ``folder`` before torch is imported, in its order: an ONNX export's precision and device,
    then :func:`check_model_dir` and :func:`check_model_files`; transformers' own extractive QA model, its files
    (:func:`check_qa_files`), the rest left to its loading, whose checks build its classes."""
    if qa_architecture(folder) and backend != "onnx":
        check_qa_files(folder)
        return
    onnx = model_backend(folder, backend) == "onnx"
    forward_precision(precision, onnx, str(name))
    check_onnx_device(device, onnx, str(name))
    check_model_files(folder, onnx=onnx, read=check_model_dir(folder, (ONNX_FILE,) if onnx else WEIGHT_FILES))


def check_exportable(folder: Path, name: str | Path) -> None:
    """What an export (``bio-mrc export``) refuses in the model ``folder`` (``name``: as given) before torch is imported."""
    check_pytorch_folder(folder, name)
    check_loadable(folder, name, "torch", "fp32", "cpu")


def check_model_dir(model_dir: Path, weights: Sequence[str] = WEIGHT_FILES) -> dict:
    """Raise :class:`ModelFormatError` naming what makes ``model_dir`` unusable as a bio_mrc model
    (``weights``: the files one of which must hold the weights); returns its ``config.json`` as parsed, for
    :func:`check_model_folder` to check without reading it again."""
    source = str(model_dir)
    if not model_dir.is_dir():
        raise ModelFormatError("no such model folder", source)
    if problem := unfinished_run(model_dir):
        raise ModelFormatError(problem, source)
    check_file_kinds(model_dir)  # a folder or FIFO named config.json is that, not a missing file
    if not (model_dir / "config.json").is_file():
        raise ModelFormatError("not a saved model: no config.json (train one with `bio-mrc train`)", source)
    config = read_json_object(model_dir, "config.json")
    if problem := foreign_model(config):
        raise ModelFormatError(f"config.json: {problem}", source)
    if problem := written_format_problem(config.get("bio_mrc_format", 1), MODEL_FORMAT, "model"):
        raise ModelFormatError(f"config.json: bio_mrc_format: {problem}", source)
    if not any((model_dir / name).is_file() for name in weights):
        named = weights[::2] if weights == WEIGHT_FILES else weights
        raise ModelFormatError(f"no weights ({' or '.join(named)}): an unfinished or partial copy?", source)
    return config
