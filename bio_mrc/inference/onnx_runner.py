"""ONNX Runtime as a :class:`~bio_mrc.inference.forward.WindowRunner`: the backend ``TrainedModel.load``
chooses for a folder written by ``bio-mrc export --format onnx``.

:class:`OnnxModel` runs an export's ``model.onnx`` with its ``config.json``, so windows, decoding,
thresholds and calibration are the PyTorch path's own code. Writing an export is
:mod:`bio_mrc.inference.onnx`'s job; it builds on this module and on ``TrainedModel``, never the
other way round, so that the loader and the exporter do not import each other.

onnxruntime is part of the optional ``onnx`` extra: this module imports it only when it loads a
model, and names ``pip install 'bio_mrc[onnx]'`` when it is missing.
"""

from __future__ import annotations

import copy
import importlib
import os
import warnings
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from .. import registry
from ..data.json_reader import read_json
from ..encoders import answering_digest
from ..errors import InputWarning, ModelFormatError, ProcessLocalError
from ..io import check_library_path
from ..model import BioMrcConfig
from ..model_folder import EXPORT_FILE, ONNX_FILE, check_model_folder, written_format_problem
from .onnx_threads import intra_op_num_threads, session_threads

EXPORT_FORMAT = 1
INSTALL_HINT = "pip install 'bio_mrc[onnx]'"  # quoted: zsh reads bare brackets as a glob
ORT_FATAL = 4  # ONNX Runtime's log severities: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal
# From its import on, onnxruntime's telemetry keeps a device id and an event store in the user's cache folder and a
# session file in the temporary folder; set before the import, this keeps them unwritten (a caller's own value stands).
QUIET_ENVIRONMENT = {"onnxruntime": {"ORT_DISABLE_TELEMETRY": "1"}}


def require(module: str, purpose: str, source: str | None = None) -> Any:
    """Import an optional dependency, or say how to install it (a :class:`ModelFormatError`)."""
    for name, value in QUIET_ENVIRONMENT.get(module, {}).items():
        os.environ.setdefault(name, value)
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ModelFormatError(f"{purpose} needs the '{module}' package ({err}): {INSTALL_HINT}", source) from None


def session_options(ort: Any, threads: int | None = None) -> Any:
    """ONNX Runtime's session options for the package: the intra-op threads
    :func:`~bio_mrc.inference.onnx_threads.session_threads` chooses (``threads`` where given; else torch's count where
    fewer than ONNX Runtime's own), and its own log lines held back below fatal: a failing run reaches the caller as an
    exception, which the package words in one line, so ONNX Runtime's own coloured ``[E:onnxruntime:...]`` line would
    only say it twice."""
    options = ort.SessionOptions()
    options.log_severity_level = ORT_FATAL
    options.intra_op_num_threads = intra_op_num_threads(session_threads(threads))
    return options


class OnnxModel:
    """An exported folder run by ONNX Runtime: a :class:`WindowRunner` with the folder's
    :class:`BioMrcConfig` as ``config``, so ``TrainedModel`` reads heads, windows and tuned
    settings exactly as it does from a PyTorch model."""

    def __init__(self, session: Any, config: BioMrcConfig, name_or_path: str = "") -> None:
        self.session, self.config, self.name_or_path = session, config, name_or_path
        self.heads = tuple(config.head_names)
        self.input_names = [i.name for i in session.get_inputs()]
        self.output_names = registry.head_outputs(self.heads)
        missing = sorted(set(self.output_names) - {o.name for o in session.get_outputs()})
        if missing or "input_ids" not in self.input_names:
            lacking = missing or ["input_ids"]
            raise ModelFormatError(f"{ONNX_FILE} lacks the inputs or outputs of its heads ({lacking})", name_or_path)

    @classmethod
    def load(cls, model_dir: str | Path, providers: Sequence[str] | None = None, threads: int | None = None,
             checked: dict[str, Any] | None = None) -> "OnnxModel":
        """Open an exported folder's ``model.onnx`` with ONNX Runtime (CPU unless ``providers`` say otherwise).
        ``threads``: its intra-op threads, a positive whole number; None: torch's count in this process where fewer than
        ONNX Runtime's own (:mod:`bio_mrc.inference.onnx_threads`: a program fits both with
        :func:`~bio_mrc.cpu_budget.fit_torch_threads` before it loads), unless ``ORT_INTRA_OP_NUM_THREADS`` is set.
        ``checked``: the ``config.json`` :func:`~bio_mrc.model_folder.check_model_folder` returned where the caller has
        run it on the folder (parsing a large graph and reading its weights again would double the load's cost); the
        config is built from it, not read again."""
        model_dir = Path(model_dir)
        require("onnxruntime", "running an ONNX model", str(model_dir))
        session_threads(threads)  # a malformed threads or ORT_INTRA_OP_NUM_THREADS: refused before the folder is read
        marker = check_export_marker(model_dir)
        if checked is None:
            checked = check_model_folder(model_dir, onnx=True)
        config = BioMrcConfig.from_dict(checked)
        try:
            model = cls.from_file(model_dir / ONNX_FILE, config, providers, threads)
        except ModelFormatError:
            raise
        except Exception as err:  # noqa: BLE001 - onnxruntime's own exception types (Fail, InvalidGraph, ...)
            raise unrunnable_graph(model_dir, err) from None
        warn_changed_source(marker)
        return model

    @classmethod
    def from_file(
        cls, path: Path, config: BioMrcConfig, providers: Sequence[str] | None = None, threads: int | None = None,
    ) -> "OnnxModel":
        """A session on one ONNX file with the config it was exported from (export checks its graph this way);
        ``threads`` as :meth:`load` takes them."""
        ort = require("onnxruntime", "running an ONNX model", str(path))
        options = session_options(ort, threads)
        check_library_path(path)  # ONNX Runtime opens the file by a UTF-8 name
        session = ort.InferenceSession(str(path), options, providers=list(providers or ["CPUExecutionProvider"]))
        return cls(session, config, str(path.parent))

    @classmethod
    def from_pretrained(cls, model_dir: str | Path, **_: Any) -> "OnnxModel":
        """What transformers' ``pipeline()`` calls on a model path: an exported folder, run on the CPU
        (its loading options, e.g. ``dtype``, mean nothing to an exported graph)."""
        return cls.load(model_dir)

    # The little of a PreTrainedModel that transformers' Pipeline reads: where the model runs.
    device = torch.device("cpu")

    def to(self, device: Any) -> "OnnxModel":
        if torch.device(device).type != "cpu":
            raise ModelFormatError(f"this ONNX model runs on the CPU provider, not on {device}", self.name_or_path)
        return self

    def eval(self) -> "OnnxModel":
        return self

    def can_generate(self) -> bool:
        return False

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Refused: an ONNX Runtime session does not pickle, so a worker process (``multiprocessing``,
        ``ProcessPoolExecutor``) builds its own extractor; said in one line, not as ONNX Runtime's ``cannot pickle``."""
        raise ProcessLocalError(
            "an ONNX export's model cannot be pickled (its ONNX Runtime session lives in this process), so it cannot be "
            f"sent to another process: build one in each process, AnswerExtractor.from_pretrained({self.name_or_path!r}) in "
            "the worker (a ProcessPoolExecutor's initializer), and send it the questions", self.name_or_path)

    def __copy__(self) -> "OnnxModel":
        return type(self)(self.session, self.config, self.name_or_path)

    def __deepcopy__(self, memo: dict[int, Any]) -> "OnnxModel":
        """A copy with a config of its own (thresholds, calibration) that shares the session: ONNX Runtime's session
        cannot be copied, and it holds only the graph, which nothing changes, and runs from several threads at once."""
        return type(self)(self.session, copy.deepcopy(self.config, memo), self.name_or_path)

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, np.ndarray]:
        ids = np.asarray(batch["input_ids"], dtype=np.int64)
        feed = {name: np.asarray(batch[name], dtype=np.int64) if name in batch else np.zeros_like(ids)
                for name in self.input_names}  # a graph with token types gets zeros from windows without them
        return dict(zip(self.output_names, self.session.run(self.output_names, feed)))


def unrunnable_graph(model_dir: Path, err: Exception) -> ModelFormatError:
    """A graph that passed the folder's checks but that the installed ONNX Runtime cannot open (an opset newer than it
    runs, where the export's onnx knew a newer one), in one line naming the graph's opset and ONNX Runtime's words."""
    import onnx

    ort = importlib.import_module("onnxruntime")
    graph = onnx.load(str(model_dir / ONNX_FILE), load_external_data=False)
    opsets = [entry.version for entry in graph.opset_import if entry.domain in ("", "ai.onnx")]
    detail = " ".join(str(err).split()) or type(err).__name__
    return ModelFormatError(f"{ONNX_FILE}: ONNX Runtime {ort.__version__} cannot run its graph (opset "
                            f"{opsets[0] if opsets else '?'}): export the PyTorch model again at an opset it runs "
                            f"({detail})", str(model_dir))


class ExportSourceChangedWarning(InputWarning):
    """The model an ONNX export was made from has changed in its folder since (tuned in place, or trained again): the
    export answers with the weights and settings it was made with."""


def warn_changed_source(marker: Mapping[str, Any]) -> None:
    """One :class:`ExportSourceChangedWarning` where the export's ``marker`` names the local folder it was made from (by
    its full path, with its ``source_digest``; a hub id has none) and the files that folder's answers depend on
    (:func:`~bio_mrc.encoders.answering_digest`) differ from those exported. A source gone (moved away, or the export
    copied to another machine) is not said: nothing is known of it."""
    source, exported = marker.get("source"), marker.get("source_digest")
    if not (isinstance(source, str) and isinstance(exported, str) and os.path.isabs(source)):
        return
    try:
        now = answering_digest(source)
    except OSError:  # a file of it unreadable, or gone while read (the source being written): nothing to compare
        return
    if now is not None and now != exported:
        warnings.warn(ExportSourceChangedWarning(
            f"the model this export was made from ({source}) has changed since it was exported (tuned or trained again): "
            "the export answers with the weights and settings of its export; export it again to answer with the model "
            "as it is now"), stacklevel=3)


def check_export_marker(model_dir: Path) -> dict[str, Any]:
    """The export's marker, or a :class:`ModelFormatError` saying why the folder cannot be run."""
    marker = model_dir / EXPORT_FILE
    if not marker.is_file():
        raise ModelFormatError(f"{ONNX_FILE} without {EXPORT_FILE}: an unfinished export? (run bio-mrc export again)",
                               str(model_dir))
    record = read_json(marker)
    if not isinstance(record, dict) or record.get("format") != "onnx":
        raise ModelFormatError(f"{EXPORT_FILE} does not describe an ONNX export", str(model_dir))
    if problem := written_format_problem(record.get("export_format"), EXPORT_FORMAT, "export"):
        raise ModelFormatError(f"{EXPORT_FILE}: export_format: {problem}", str(model_dir))
    return record
