"""A model folder checked before anything is built from it: every loader (PyTorch, ONNX, the pipeline,
``serve``) calls :func:`check_model_folder`, so a broken folder is one :class:`ModelFormatError` naming the
folder, the file and the problem, never a traceback, a random layer or a 5-token tokenizer.

What is checked, in this order, before any tensor is allocated:

* each file loading reads is a regular file (or a link to one) where present: a folder or FIFO under its name is
  named as such;
* ``config.json``: there (a run's folder holding only ``checkpoints/`` is named as unfinished), a bio_mrc model's
  (a bare encoder's or transformers' QA model's is named as such, with the way to make one), a JSON object; the
  encoder's sizes are integers within :data:`SIZE_LIMITS`, and it is no decoder (``is_decoder``), no decoder-only
  language model (GPT-2, BLOOM) nor an encoder-decoder model; the window settings
  are positive integers and fit the encoder's ``max_position_embeddings``; tuned settings are numbers; the heads'
  settings (``bio_prior``, ``bio_class_weights``, ``bio_loss_reduction``, ``head_dropout``) are of their kinds;
  ``return_dict`` is not turned off; the encoder has no cross-attention and a ``model_type`` transformers knows;
* the run and evaluation records: of the kinds the card reads, no NaN, and no infinity outside a ``threshold``;
* the weights: pickled checkpoints (``pytorch_model.bin``) are refused; ``model.safetensors`` (or each shard
  of its index) has a header that parses and tensors that tile the file exactly (an empty, cut short or
  corrupt file is refused; so is a ``__metadata__`` safetensors cannot read); given the model class, every tensor
  the config implies is there with its shape, saved as floating point numbers where the model's is, and none other
  (built on the ``meta`` device: no memory);
* ``tokenizer.json``: present where required, at most :data:`MAX_TOKENIZER_BYTES`, read by ``tokenizers``
  (whose parser limits nesting), and every token id below the encoder's ``vocab_size``; the other tokenizer
  files parse as JSON objects, ``tokenizer_config.json``'s flags and sides are of their kinds
  (:data:`TOKENIZER_SETTINGS`), and their special tokens are texts of its vocabulary (``cls_token`` and ``sep_token``
  those its post-processor puts in every window, which loading rebuilds the windows from);
* an ONNX export's ``model.onnx``: parses, its external data lies inside the folder, its inputs are
  ``(batch, sequence)`` and its outputs those of the config's heads, and no float initializer holds NaN (nor infinity
  beside values other than 0; a mask holds only zeros and infinities).
"""

from __future__ import annotations

import functools
import json
import math
import numbers
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from . import __version__, registry
from .arguments import MAX_COUNT
from .config_schema import whole_number
from .errors import ConfigError, InputWarning, ModelFormatError, argument
from .evaluation_record import EVAL_FILE
from .io import is_temporary_of, non_utf8_byte, remove_file, remove_temporaries_of, special_file_kind
from .json_syntax import decode_hint, json_value
from .model_defaults import BIO_LOSS_REDUCTIONS, HEADS, MODEL_FORMAT, WORD_UNITS, WORD_UNITS_WHEN_ABSENT
from .model_records import RECORD_SCHEMAS, RUN_FILE, record_problem
from .pickled_weights import pickled_shapes
from .plurals import counted, number_form
from .precision import check_onnx_device, forward_precision
from .run_folder import unfinished_run
from .transformers_registration import MODEL_TYPE

QA_HEADS = "span"  # the heads of transformers' extractive QA model read as a bio_mrc model
BIO_MRC_QA_CLASS = "BioMrcForQuestionAnswering"  # bio_mrc's own class (tests/test_qa_checkpoints.py ties them)

# Encoder sizes past these are refused before anything is built; the largest BERT-style encoders stay well
# inside (some 48 layers of 4,096, vocabularies of some 250,000 tokens).
SIZE_LIMITS = {
    "num_hidden_layers": 96, "hidden_size": 16384, "intermediate_size": 65536, "num_attention_heads": 256,
    "vocab_size": 1_000_000, "max_position_embeddings": 131072, "type_vocab_size": 1024, "embedding_size": 16384,
    "n_layers": 96, "dim": 16384, "n_heads": 256, "hidden_dim": 65536,  # DistilBERT's names
}
WINDOW_FIELDS = ("max_seq_length", "doc_stride", "max_query_length")
WINDOW_MINIMUMS = {"max_seq_length": 1, "doc_stride": 0, "max_query_length": 1}  # as TrainConfig bounds them
ENCODER_RATES = ("attention_probs_dropout_prob", "hidden_dropout_prob", "attention_dropout", "dropout", "hidden_dropout",
                 "embedding_dropout", "mlp_dropout")
DTYPES = (None, "float32", "float16", "bfloat16")
TAG_LEVELS = ("word", "subword")  # as bio_mrc.features.windows reads them
# Trained encoders' weights stay within a few hundred (all-MiniLM-L6-v2: 7.9); a flipped exponent bit makes ~1e38.
MAX_WEIGHT_MAGNITUDE = 1e6
MAX_SETTING = 1e6  # tuned thresholds, priors and calibrators are far smaller; larger ones overflow the decoding
MAX_CONFIG_BYTES = 16 * 2**20
MAX_TOKENIZER_BYTES = 256 * 2**20
MAX_SAFETENSORS_HEADER = 100 * 2**20  # safetensors' own limit
TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_MISSING = "missing: a model folder carries its fast tokenizer's file (copy it from the encoder the model was trained from)"
# The special tokens transformers' tokenizer classes read from the tokenizer files; of them, those its BERT, RoBERTa and
# most other classes rebuild a window's template from (``[CLS] question [SEP] context [SEP]``), whatever tokenizer.json says.
SPECIAL_TOKEN_KEYS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
TEMPLATE_TOKEN_KEYS = ("cls_token", "sep_token")
FRAME_PROBE = ("Who wrote it?", "Ada wrote it.")  # a question and a context, as a window frames them
TOKENIZER_JSON_FILES = ("tokenizer_config.json", "special_tokens_map.json", "added_tokens.json")
PICKLED_WEIGHTS = ("pytorch_model.bin", "pytorch_model.bin.index.json")
SAFETENSORS_FILE, SAFETENSORS_INDEX = "model.safetensors", "model.safetensors.index.json"
ONNX_FILE = "model.onnx"
EXPORT_FILE = "bio_mrc_export.json"  # an ONNX export's format marker, written last: an export without it is unfinished
CARD_FILE = "README.md"  # the model card (bio_mrc.model_card)
# Written last into a model folder by training (provenance: options, data, time); its presence marks a complete model.
TRAINING_LOG_FILE = "training_log.json"  # Trainer's log history: loss, learning rate and evaluations by step
# The names of a saved model's files, as train, export, convert and transformers' save_pretrained write them: weights in
# every layout, an ONNX graph, the tokenizer, bio_mrc's records (run, evaluations, training log). A model replacing
# another removes those of them it does not write itself (replaced_model_files), and no other file.
MODEL_FILE_NAMES = (SAFETENSORS_FILE, SAFETENSORS_INDEX, "model-?????-of-?????.safetensors", *PICKLED_WEIGHTS,
                    "pytorch_model-?????-of-?????.bin", ONNX_FILE, f"{ONNX_FILE}.data", EXPORT_FILE, RUN_FILE,
                    EVAL_FILE, TRAINING_LOG_FILE, "training_args.bin", TOKENIZER_FILE, *TOKENIZER_JSON_FILES,
                    "vocab.txt", "vocab.json", "merges.txt")
# The folders an export and a conversion write a model in before it moves into their output folder: a killed run's is
# none of the user's files, so the output folder's emptiness is checked without it.
EXPORT_STAGING_DIR = ".export-staging"
CONVERT_STAGING_DIR = ".convert-staging"
DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1,
               "U16": 2, "U32": 4, "U64": 8, "F8_E4M3": 1, "F8_E5M2": 1}
FLOAT_DTYPES = frozenset({"F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2"})


# The files bio_mrc writes atomically in a model folder, each through a temporary file beside it (bio_mrc.io): a kill
# mid-write leaves that file, which no door reads, copies or uploads, and the folder's next training removes.
ATOMIC_MODEL_FILES = (RUN_FILE, CARD_FILE, EVAL_FILE, TRAINING_LOG_FILE, "config.json", EXPORT_FILE)


def is_model_temporary(name: str) -> bool:
    """Whether ``name`` is the temporary file of an atomic write of one of :data:`ATOMIC_MODEL_FILES`."""
    return any(is_temporary_of(name, target) for target in ATOMIC_MODEL_FILES)


def remove_model_temporaries(folder: str | Path) -> None:
    """Remove from ``folder`` the temporary files of its atomic writes that a kill left (plain files alone)."""
    remove_temporaries_of(folder, ATOMIC_MODEL_FILES)


# The files loading a model or an encoder reads, each a regular file (or a link to one) where present.
READ_FILES = ("config.json", SAFETENSORS_FILE, SAFETENSORS_INDEX, *PICKLED_WEIGHTS, ONNX_FILE, EXPORT_FILE, TOKENIZER_FILE,
              *TOKENIZER_JSON_FILES, "vocab.txt", "vocab.json", "merges.txt")


def check_file_kinds(folder: str | Path) -> None:
    """A folder, FIFO, socket or device under the name of a file loading reads is named as what it is, not reported
    missing or passed over (nor opened: reading a FIFO waits for a writer); a folder whose name is not UTF-8 is
    refused, as safetensors and tokenizers open its files by a UTF-8 name alone."""
    folder = Path(folder)
    if byte := non_utf8_byte(folder):
        raise fail(folder, None, f"its name holds the byte {byte}, which is not UTF-8 and which safetensors and tokenizers "
                                 "cannot name a file by (a name written in Latin-1?): rename the folder in UTF-8")
    for name in READ_FILES:
        if problem := not_a_file(folder / name):
            raise fail(folder, name, problem)


def not_a_file(path: Path) -> str | None:
    """What ``path`` is where it is there but not a regular file (``is a folder, not a file``); else None."""
    kind = "a folder" if path.is_dir() else special_file_kind(path)
    return f"is {kind}, not a file" if kind else None


def remove_replaced_model_files(folder: str | Path, new_files: Iterable[str]) -> list[str]:
    """Before a new model's files (``new_files``: their names) move into ``folder``, remove the files of
    :data:`MODEL_FILE_NAMES` there that the new model does not write, which would otherwise sit beside it and be read
    as part of it (an old ``model.onnx`` beside new weights, old weights beside a new export, which loading prefers).
    Any other file stays, and so does a link. Returns the names removed."""
    folder, kept = Path(folder), set(new_files)
    stale = sorted({path.name for pattern in MODEL_FILE_NAMES for path in folder.glob(pattern)} - kept)
    return [name for name in stale if (folder / name).is_file() and not (folder / name).is_symlink()
            and remove_file(folder / name, folder)]


def check_model_folder(folder: str | Path, model_class: type | None = None, tokenizer_required: bool = True,
                       onnx: bool = False, read: dict[str, Any] | None = None) -> dict[str, Any]:
    """Check a model folder as the module docstring says; returns its ``config.json``. ``model_class``
    (a ``PreTrainedModel`` class) adds the check that the weights are exactly those it builds from the config;
    ``onnx`` checks ``model.onnx`` instead of PyTorch weights. ``read``: its ``config.json`` as the caller parsed it
    already (:func:`read_json_object`), which is then not read again."""
    folder = Path(folder)
    config = check_model_files(folder, tokenizer_required, onnx, read)
    encoder = config["encoder"]
    check_encoder_classes(encoder, folder)
    if onnx:
        check_onnx(folder, config)
    elif model_class is not None:
        check_weights_fit(folder, weight_shapes(folder), expected_shapes(model_class, config, folder))
    return config


def check_model_files(folder: Path, tokenizer_required: bool = True, onnx: bool = False,
                      read: dict[str, Any] | None = None) -> dict[str, Any]:
    """What :func:`check_model_folder` checks that needs neither torch nor transformers, so a command refuses it at once:
    the files' kinds, ``config.json`` (a bio_mrc model's, its encoder's type named, its sizes and settings), the records,
    the weights' safetensors headers (not for ``onnx``) and the tokenizer files (``tokenizer.json`` where one is
    ``tokenizer_required``). Returns the config."""
    check_file_kinds(folder)
    config = read_config(folder, read)
    check_model_type_named(config["encoder"], folder)
    encoder = check_plain_sizes(config, folder)
    check_settings(config, encoder, folder)
    check_records(folder)
    if not onnx:
        check_weights_present(folder)
    if tokenizer_required and not (folder / TOKENIZER_FILE).is_file():
        raise fail(folder, TOKENIZER_FILE, TOKENIZER_MISSING)
    if not onnx:
        weight_shapes(folder)  # a cut-short or corrupt file, read from its header alone
    check_tokenizer(folder, encoder["vocab_size"], tokenizer_required)
    return config


def check_model_type_named(encoder: Mapping[str, Any], folder: Path, where: str = "encoder.") -> None:
    """The encoder's config names its ``model_type``, a string: transformers looks it up in its tables, and one missing
    ends in ``Unrecognized model``. Whether transformers knows it needs its classes
    (:func:`check_reads_both_ways`, :func:`bio_mrc.encoders.as_data`)."""
    model_type = encoder.get("model_type")
    if model_type is None:
        raise fail(folder, "config.json", f"{where}model_type is missing: give the encoder's (\"bert\")")
    if not isinstance(model_type, str):
        raise fail(folder, "config.json", f"{where}model_type must be a string (\"bert\"), got {json_value(model_type)}")


def check_encoder_classes(encoder: Mapping[str, Any], folder: Path, where: str = "encoder.") -> None:
    """The checks of a model's encoder config against transformers' classes: its activation, its sizes' defaults, and a
    model type that reads both ways (:func:`check_reads_both_ways`)."""
    _check_activation(encoder, folder, where)
    _check_heads_divide(encoder, folder, where)
    check_reads_both_ways(encoder, folder, where)


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


def check_pytorch_folder(folder: Path, name: str | Path) -> None:
    """An export reads a PyTorch model: an ONNX export of one (no PyTorch weights, which would otherwise read as a
    partial copy) is refused, naming what to give instead."""
    if model_backend(folder) == "onnx":
        raise ConfigError(f"{name} is an ONNX export; export the PyTorch model it was made from")


WEIGHT_FILES = (SAFETENSORS_FILE, SAFETENSORS_INDEX, *PICKLED_WEIGHTS)
BACKENDS = ("auto", "torch", "onnx")


def model_backend(model_dir: Path, backend: str = "auto") -> str:
    """``auto``: PyTorch when the folder has PyTorch weights (the reference), else ONNX when it holds
    an export's ``model.onnx``; ``torch`` and ``onnx`` choose."""
    if backend not in BACKENDS:
        raise ConfigError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend != "auto":
        return backend
    has_weights = any((model_dir / name).is_file() for name in WEIGHT_FILES)
    return "onnx" if not has_weights and (model_dir / ONNX_FILE).is_file() else "torch"


class ExportBesideWeightsWarning(InputWarning):
    """PyTorch weights and an ONNX export's ``model.onnx`` side by side in one folder: ``backend="auto"`` runs the
    weights."""


def warn_export_beside_weights(model_dir: Path, backend: str, name: str) -> None:
    """One :class:`ExportBesideWeightsWarning` where ``backend`` ``auto`` finds PyTorch weights beside a ``model.onnx``
    in ``model_dir`` (``name``: as given): the weights answer, and the export beside them, which may be another
    model's, never does; a loader asked for a backend by name runs that one unsaid."""
    if backend == "auto" and model_backend(model_dir) == "torch" and (model_dir / ONNX_FILE).is_file():
        warnings.warn(ExportBesideWeightsWarning(
            f"{name} holds PyTorch weights and an ONNX export ({ONNX_FILE}) side by side: the PyTorch weights answer; "
            "an export answers from a folder of its own (the one bio-mrc export writes)"), stacklevel=3)


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


def qa_model_architecture(folder: Path, name: str | Path) -> str:
    """The ``...ForQuestionAnswering`` class of transformers' extractive QA model in ``folder`` (``name``: as given), which
    a conversion reads; a bio_mrc model, or another kind of model, is refused."""
    if architecture := qa_architecture(folder):
        return architecture
    kind = "already a bio_mrc model" if saved_config(folder).get("model_type") == BIO_MRC_MODEL_TYPE else \
        "not an extractive question-answering model of transformers (its config.json names no ...ForQuestionAnswering class)"
    raise ModelFormatError(f"{kind}; convert reads transformers' extractive question-answering models only", str(name))


def check_convertible(folder: Path, name: str | Path) -> str:
    """What a conversion (``bio-mrc convert``) refuses in the QA model ``folder`` (``name``: as given) before torch is
    imported, in the conversion's words: a ``config.json`` that cannot be read, no ``...ForQuestionAnswering`` class,
    and what :func:`check_qa_files` finds. Returns the class."""
    check_file_kinds(folder)
    read_json_object(folder, "config.json")  # missing or broken: named as such, not as a model of another kind
    architecture = qa_model_architecture(folder, name)
    check_qa_files(folder)
    return architecture


# Files a QA model's tokenizer is read from (a fast one, or the vocabulary a fast one is built from).
QA_TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model", "tokenizer.model")


def check_qa_files(folder: Path) -> None:
    """A QA model folder holds the files a conversion reads, checked without torch: a ``config.json`` naming its
    ``model_type`` with sizes in bounds, safetensors weights whose headers parse, and a tokenizer of its own whose files
    parse (``tokenizer.json``'s ids within ``vocab_size``)."""
    config = special_floats(read_json_object(folder, "config.json"))
    check_model_type_named(config, folder, where="")
    check_plain_sizes({"encoder": config}, folder, where="")
    check_weights_present(folder)
    if not any((folder / name).is_file() for name in QA_TOKENIZER_FILES):
        raise ModelFormatError(f"no tokenizer ({', '.join(QA_TOKENIZER_FILES)}): a QA model is read with its own", str(folder))
    weight_shapes(folder)
    check_tokenizer(folder, config.get("vocab_size", SIZE_LIMITS["vocab_size"]), required=False)


# A tokenizer's vocabulary is read from one of these; without any, transformers builds a tokenizer of the special
# tokens alone (5 tokens for a BERT), which reads every word as [UNK] and trains a model on nothing without a word.
VOCABULARY_FILES = (TOKENIZER_FILE, "vocab.txt", "vocab.json", "*.model")


BIO_MRC_MODEL_TYPE = "bio_mrc"  # BioMrcConfig.model_type, which this module sits below


def check_records(folder: Path) -> None:
    """The run and evaluation records, where the folder keeps them, hold what the model card reads
    (:mod:`bio_mrc.model_records`): an edited or foreign one is refused here, not in a traceback once the work is done."""
    for name in RECORD_SCHEMAS:
        checked_record(folder, name)


def checked_record(folder: Path, name: str) -> dict[str, Any] | None:
    """The record ``name`` (one of :data:`~bio_mrc.model_records.RECORD_SCHEMAS`) of the folder, read and checked as
    :func:`check_records` checks it; None where the folder keeps none."""
    path = folder / name
    if not path.is_file():
        return None
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise fail(folder, name, f"{path.stat().st_size:,} bytes, more than the {MAX_CONFIG_BYTES:,} a model folder's file may hold")
    try:  # as bio_mrc writes it: an always-abstaining threshold as -Infinity
        record = special_floats(json.loads(path.read_bytes().decode("utf-8-sig")))
    except (UnicodeDecodeError, RecursionError, ValueError) as err:
        raise fail(folder, name, f"cannot be read as JSON ({type(err).__name__}: {str(err)[:120]}{decode_hint(err)}); delete "
                                 "it, and the model card leaves out what it said") from None
    if problem := record_problem(name, record) or _non_finite_field(record):
        raise fail(folder, name, f"{problem}; a record bio_mrc did not write as it is: delete it, and the model card "
                                 "leaves out what it said")
    return record


def _non_finite_field(value: Any, where: str = "") -> str | None:
    """The first NaN in a record, or infinity outside a no-answer ``threshold`` (where it always or never abstains),
    named by its field (``evaluations.0.results.joint.f1 must be a finite number, got NaN``): the card would show
    ``nan`` for a score, a loss or a time; None where every number is one."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(item, float) and (math.isnan(item) or math.isinf(item) and key != "threshold"):
            kind = "a number or ±Infinity" if key == "threshold" else "a finite number"
            return f"{where}{key} must be {kind}, got {non_finite_as(item, str)}"
        if problem := _non_finite_field(item, f"{where}{key}."):
            return problem
    return None


def check_encoder_folder(folder: str | Path) -> None:
    """An encoder folder (``train --encoder``, a comparison's ``encoder``) holds what a model is built from: the files
    :func:`check_encoder_files` checks, an encoder transformers builds from its ``config.json`` that reads both ways, and
    each tensor it builds saved with its shape (pickled ``pytorch_model.bin`` or its shards read as tensors only,
    :mod:`bio_mrc.pickled_weights`)."""
    folder = Path(folder)
    config = check_encoder_files(folder)
    _check_activation(config, folder, "")
    _check_heads_divide(config, folder, "")
    model = check_bidirectional(config, folder)
    if (folder / SAFETENSORS_FILE).is_file() or (folder / SAFETENSORS_INDEX).is_file():
        file, shapes = SAFETENSORS_FILE, weight_shapes(folder)
    else:
        file, shapes = _pickled_weight_shapes(folder)
    if model is not None:
        _check_encoder_weights(folder, shapes, model, file)


def check_encoder_files(folder: str | Path) -> dict[str, Any]:
    """What :func:`check_encoder_folder` checks that needs neither torch nor transformers, so ``train`` refuses it at
    once: a folder, a ``config.json`` object of an encoder (no trained bio_mrc model) naming its ``model_type``, its
    sizes, weights (``model.safetensors`` or its shards, their headers read as a model's are; pickled weights present),
    tokenizer files that parse, a tokenizer's vocabulary (:data:`VOCABULARY_FILES`) and ``tokenizer.json``'s ids within
    ``vocab_size``. Returns the config."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise fail(folder, None, "is a file, not an encoder's folder (its config.json, weights and tokenizer files)")
    check_file_kinds(folder)
    config = special_floats(read_json_object(folder, "config.json"))
    if config.get("model_type") == BIO_MRC_MODEL_TYPE:  # its encoder is nested in it
        raise fail(folder, "config.json", f"a trained bio_mrc model, not an encoder: {argument('init_from')} continues "
                                          "it on its own encoder")
    check_model_type_named(config, folder, where="")
    check_plain_sizes({"encoder": config}, folder, where="")  # as a model's encoder is checked: a size would end in a traceback
    if (folder / SAFETENSORS_FILE).is_file() or (folder / SAFETENSORS_INDEX).is_file():
        weight_shapes(folder)
    elif not any((folder / name).is_file() for name in PICKLED_WEIGHTS):
        raise fail(folder, None, f"no weights ({SAFETENSORS_FILE} or {PICKLED_WEIGHTS[0]}): an unfinished or partial copy?")
    for name in TOKENIZER_JSON_FILES:  # named here, not as the tokenizer's loading failing
        if (folder / name).is_file():
            read_json_object(folder, name)
    if not any(path.is_file() for pattern in VOCABULARY_FILES for path in folder.glob(pattern)):
        raise fail(folder, None, "no tokenizer vocabulary (tokenizer.json, vocab.txt, vocab.json or a SentencePiece .model "
                                 f"file): {_without_vocabulary(folder)}")
    if (folder / TOKENIZER_FILE).is_file() and "vocab_size" in config:  # one left out takes its class's default
        _check_token_ids(folder, _read_tokenizer(folder), config["vocab_size"])
    return config


# What an encoder's config says when it is no bidirectional encoder: each window's question, context and no-answer
# position are read together, and a decoder's causal attention lets no token see those after it.
BIDIRECTIONAL_ONLY = "bio_mrc reads the tokens of a bidirectional encoder (BERT, RoBERTa, DeBERTa, ...)"


def check_reads_both_ways(encoder: Mapping[str, Any], folder: Path, where: str = "encoder.") -> None:
    """The encoder's config is no decoder's (``is_decoder``: causal attention, each token reading only those before it)
    nor an encoder-decoder model's (T5, BART: a model of two stacks, whose forward pass needs decoder inputs), nor that
    of a decoder-only language model (:func:`decoder_only`), which a model saved before training refused them holds."""
    if encoder.get("is_encoder_decoder"):
        raise fail(folder, "config.json", f"{where}is_encoder_decoder is true: a sequence-to-sequence model "
                                          f"({encoder.get('model_type')}), not an encoder; {BIDIRECTIONAL_ONLY}")
    if encoder.get("is_decoder"):
        raise fail(folder, "config.json", f"{where}is_decoder is true: the encoder would read each token with only the "
                                          f"tokens before it (causal attention); {BIDIRECTIONAL_ONLY} (set it to false "
                                          "where the encoder was trained as one)")
    if encoder.get("add_cross_attention", False) is not False:  # transformers builds its layers for a decoder only
        raise fail(folder, "config.json", f"{where}add_cross_attention must be false (cross-attention reads a decoder's "
                                          f"other stack, which an encoder has none of), got {json_value(encoder['add_cross_attention'])}")
    model_type = encoder.get("model_type")
    if model_type is not None and not isinstance(model_type, str):  # transformers looks it up as a key of its tables
        raise fail(folder, "config.json", f"{where}model_type must be a string (\"bert\"), got {json_value(model_type)}")
    if where:  # a model's encoder; an encoder folder's own unknown model_type is named when it loads
        _check_known_model_type(model_type, folder, where)
    if isinstance(model_type, str) and decoder_only(model_type):
        raise _decoder_only_model(folder, model_type, _base_model_name(model_type), where)


def _check_known_model_type(model_type: str | None, folder: Path, where: str) -> None:
    """A model's encoder names a ``model_type`` transformers builds: otherwise building it ends in ``Cannot resolve
    `encoder``` or a list of every type transformers knows."""
    from transformers import CONFIG_MAPPING

    if model_type is None:
        raise fail(folder, "config.json", f"{where}model_type is missing: give the encoder's (\"bert\")")
    if model_type not in CONFIG_MAPPING:
        raise fail(folder, "config.json", f"{where}model_type {json_value(model_type)} is no model type transformers "
                                          f"{_transformers_version()} knows (a newer transformers', or another library's?)")


def _transformers_version() -> str:
    import transformers

    return transformers.__version__


def check_bidirectional(config: Mapping[str, Any], folder: Path) -> Any:
    """A folder's own ``config.json`` (an encoder's, a QA model's) describes a bidirectional encoder: neither a decoder
    nor an encoder-decoder (:func:`check_reads_both_ways`), nor a decoder-only model; returns what
    :func:`_encoder_built` builds of it."""
    check_reads_both_ways(config, folder, where="")
    return _encoder_built(dict(config), folder)


def _encoder_built(config: dict[str, Any], folder: Path) -> Any:
    """The encoder its config builds (on the meta device: no memory), as a model's is checked: a value transformers
    refuses (``use_cache: "x"``) would end in a traceback; one whose attention is causal is refused (a decoder-only
    language model, :func:`decoder_only`, is refused before, by :func:`check_reads_both_ways`). None where a
    ``model_type`` transformers does not know, or code of its own (``auto_map``), leaves it to loading to name
    (:func:`bio_mrc.encoders.as_data`)."""
    from transformers import CONFIG_MAPPING, AutoModel

    model_type = config.get("model_type")
    if model_type not in CONFIG_MAPPING or "auto_map" in config:
        return None
    model = built_on_meta(lambda: AutoModel.from_config(CONFIG_MAPPING[model_type].from_dict(config)), folder)
    if any(getattr(module, "is_causal", False) is True for module in model.modules()):
        raise _decoder_only_model(folder, model_type, type(model).__name__)
    return model


def _decoder_only_model(folder: Path, model_type: str, built: str, where: str = "") -> ModelFormatError:
    return fail(folder, "config.json", f"{where}model_type {json_value(model_type)} builds {built}, a decoder-only model whose tokens "
                                       f"read only the tokens before them; {BIDIRECTIONAL_ONLY}")


def _base_model_name(model_type: str) -> str:
    """The class ``AutoModel`` builds for ``model_type`` (``BloomModel``), named without importing it."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    found = MODEL_MAPPING_NAMES.get(model_type, f"a {model_type} model")
    return found if isinstance(found, str) else found[0]


# Families transformers gives a causal language-model head and no masked one whose base model still reads both ways:
# BertGeneration's encoder (a decoder only with is_decoder, checked above) and XLNet's permutations (its tokenizer is
# refused, framing no [CLS] first).
BIDIRECTIONAL_CAUSAL_LM_TYPES = frozenset({"bert-generation", "xlnet"})


def decoder_only(model_type: str) -> bool:
    """Whether transformers knows ``model_type`` as a decoder-only language model: one with a causal language-model
    head and no masked one (BLOOM, MPT, XGLM, Mamba). Their configs need not say so (BLOOM's attention marks itself
    causal nowhere); BERT-style families have both heads, and their ``is_decoder`` says which way they read."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, MODEL_FOR_MASKED_LM_MAPPING_NAMES

    return (model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES
            and model_type not in BIDIRECTIONAL_CAUSAL_LM_TYPES)


def _check_encoder_weights(folder: Path, found: Mapping[str, tuple], model: Any, file: str = SAFETENSORS_FILE) -> None:
    """Every tensor the encoder's class builds from ``config.json`` (a pooler aside, which bio_mrc does not use) is
    saved with its shape, under its own name or its class's prefix (``bert.``: a checkpoint with a pretraining head):
    transformers would start a missing one at random, and end a wrong shape in a traceback."""
    prefix = getattr(model, "base_model_prefix", "")
    missing, wrong = [], []
    for name, tensor in model.state_dict().items():
        saved = next((found[key] for key in _saved_names(name, prefix) if key in found), None)
        if saved is None and "pooler" not in name:
            missing.append(name)
        elif saved is not None and tuple(saved) != tuple(tensor.shape):
            wrong.append(f"{name}: {list(saved)}, config.json: {list(tensor.shape)}")
    if missing:
        raise fail(folder, file, f"lacks {len(missing)} of the tensors {type(model).__name__} builds from config.json "
                                 f"({', '.join(missing[:3])}): weights of another model?")
    if wrong:
        raise fail(folder, file, f"{counted(len(wrong), 'tensor')} {number_form(len(wrong), 'does', 'do')} not have the shapes "
                                 f"config.json implies (e.g. {wrong[0]})")


def _saved_names(name: str, prefix: str) -> list[str]:
    """The names a checkpoint may keep a tensor under: its own, after the base model's prefix, and earlier
    checkpoints' ``gamma`` and ``beta`` for a layer norm's weight and bias (which transformers renames on loading)."""
    names = [name, f"{prefix}.{name}"] if prefix else [name]
    legacy = {".weight": ".gamma", ".bias": ".beta"}
    return names + [n[: -len(end)] + old for n in names for end, old in legacy.items() if n.endswith(end)]


def _without_vocabulary(folder: Path) -> str:
    """What to do about an encoder folder without a vocabulary: copy the files in, unless its tokenizer_config.json
    names a tokenizer of no vocabulary file (Canine reads characters), which has no fast form to give offsets."""
    named = read_json_object(folder, "tokenizer_config.json").get("tokenizer_class") \
        if (folder / "tokenizer_config.json").is_file() else None
    needs = _vocabulary_files_of(named) if isinstance(named, str) else None
    if needs is None:
        return "copy the encoder's tokenizer files into it"
    if needs:  # BertTokenizer reads vocab.txt or tokenizer.json: the files are missing, not the tokenizer's kind wrong
        return (f"its tokenizer_config.json names {named}, whose vocabulary file is missing (it looks for "
                f"{', '.join(needs)}): copy the encoder's tokenizer files into it")
    return (f"its tokenizer_config.json names {named}, a tokenizer without one, which gives no offset mappings to map "
            "tokens back to characters; bio_mrc needs an encoder with a fast tokenizer (a tokenizer.json)")


def _vocabulary_files_of(tokenizer_class: str) -> list[str] | None:
    """The files transformers' tokenizer class of that name reads its vocabulary from (none for Canine, which reads
    characters); None for a name transformers does not know."""
    from transformers.models.auto.tokenization_auto import tokenizer_class_from_name

    try:
        found = tokenizer_class_from_name(tokenizer_class)
    except (ImportError, AttributeError, ValueError):  # a class whose optional package is missing
        return None
    files = getattr(found, "vocab_files_names", None)
    return None if not isinstance(files, dict) else list(dict.fromkeys(str(name) for name in files.values()))


def fail(folder: Path, file: str | None, problem: str) -> ModelFormatError:
    return ModelFormatError(f"{file}: {problem}" if file else problem, str(folder))


def written_format_problem(value: Any, newest: int, kind: str) -> str | None:
    """None for a format number bio_mrc has written (1 to ``newest``; never a bool); else the problem in one line."""
    if whole_number(value) and 1 <= value <= newest:
        return None
    if whole_number(value) and value > newest:
        return (f"written by a newer bio_mrc ({kind} format {value}); this bio_mrc {__version__} reads formats up to "
                f"{newest}: upgrade bio_mrc")
    return f"{kind} format {json_value(value)} is not one bio_mrc writes (a whole number from 1 to {newest})"


def read_json_object(folder: Path, name: str, limit: int = MAX_CONFIG_BYTES) -> dict[str, Any]:
    """A JSON object file of the folder, or one error saying what is wrong with it."""
    path = folder / name
    if not path.is_file():
        raise fail(folder, name, "missing")
    if path.stat().st_size > limit:
        raise fail(folder, name, f"{path.stat().st_size:,} bytes, more than the {limit:,} a model folder's file may hold")
    try:
        value = json.loads(path.read_bytes().decode("utf-8-sig"), parse_constant=_no_constant)
    except UnicodeDecodeError as err:
        raise fail(folder, name, f"not UTF-8 text ({err.reason} at byte {err.start})") from None
    except RecursionError:
        raise fail(folder, name, "nested too deeply to be a model file") from None
    except (json.JSONDecodeError, ValueError) as err:
        raise fail(folder, name, f"not valid JSON (a truncated or corrupt file?): {err}{decode_hint(err)}") from None
    if not isinstance(value, dict):
        raise fail(folder, name, f"expected a JSON object, got {type(value).__name__}")
    return value


def saved_config(folder: Path) -> dict:
    """A model folder's ``config.json`` as a dict (empty where there is none, or it is not a JSON object of a sane size)."""
    try:
        return read_json_object(folder, "config.json")
    except ModelFormatError:
        return {}


def qa_architecture(folder: Path) -> str | None:
    """The ``...ForQuestionAnswering`` class a model folder's ``config.json`` names, or None (a bio_mrc model,
    another kind of model, or no readable config)."""
    config = saved_config(folder)
    names = config.get("architectures")
    if config.get("model_type") == MODEL_TYPE or not isinstance(names, list):
        return None
    # bio_mrc's own class names a bio_mrc model whose model_type was edited: read as one, and refused as such
    return next((name for name in names if isinstance(name, str) and name.endswith("ForQuestionAnswering")
                 and name != BIO_MRC_QA_CLASS), None)


def _no_constant(name: str) -> float:
    """``Infinity`` stands for a threshold that always (or never) fires; ``NaN`` is no number at all."""
    if name == "NaN":
        raise ValueError("NaN is no number")
    return float(name)


def read_config(folder: Path, read: dict[str, Any] | None = None) -> dict[str, Any]:
    """``config.json`` (or ``read``, the object it parsed to already) with transformers' ``{"__float__": "Infinity"}``
    read as the float it stands for; a run's folder without its model yet, and another kind of model, are named as such."""
    if problem := unfinished_run(folder):
        raise fail(folder, None, problem)
    config = special_floats(read_json_object(folder, "config.json") if read is None else read)
    if problem := foreign_model(config):
        raise fail(folder, "config.json", problem)
    if not isinstance(config.get("encoder"), dict):
        raise fail(folder, "config.json", "has no 'encoder' object (the encoder's config)")
    return config


def foreign_model(config: Mapping[str, Any]) -> str | None:
    """What a ``config.json`` of another kind of model holds, and how a bio_mrc model is made from it; None for
    a bio_mrc model's."""
    model_type = config.get("model_type")
    if model_type == BIO_MRC_MODEL_TYPE:
        return None
    names = config.get("architectures") if isinstance(config.get("architectures"), list) else []
    qa = next((name for name in names if isinstance(name, str) and name.endswith("ForQuestionAnswering")
               and name != "BioMrcForQuestionAnswering"), None)  # bio_mrc's own, its model_type edited: no QA model
    how = (f"`bio-mrc convert` saves transformers' extractive QA model ({qa}) as one" if qa else
           "a bare encoder is trained into one with `bio-mrc train --encoder PATH`")
    return f"a {model_type or 'non-bio_mrc'} model, not a bio_mrc model (model_type {json_value(model_type)}); {how}"


def special_floats(value: Any) -> Any:
    """transformers writes infinities (an always-abstaining threshold) and NaN as ``{"__float__": "-Infinity"}``."""
    if isinstance(value, dict):
        return special_float({key: special_floats(item) for key, item in value.items()})
    return [special_floats(item) for item in value] if isinstance(value, list) else value


def special_float(value: dict[str, Any]) -> Any:
    """One JSON object as :func:`special_floats` reads it, its members already read: ``json.loads``'s
    ``object_hook``, which restores them while decoding rather than walking every value after."""
    if len(value) == 1 and value.get("__float__") in ("Infinity", "-Infinity", "NaN"):
        return float(value["__float__"])
    return value


def non_finite_as(value: Any, spell: Callable[[str], Any]) -> Any:
    """``value`` (dicts and lists of it) with each non-finite float, numpy's too, as ``spell("Infinity")``,
    ``spell("-Infinity")`` or ``spell("NaN")``: JSON has no such numbers, and ``jq`` or another language's reader refuses
    Python's bare ``-Infinity`` (an always-abstaining threshold). ``spell`` is ``str`` for the command line's JSON,
    ``transformers_float`` for transformers' form, which :func:`special_floats` reads back."""
    if isinstance(value, dict):
        return {key: non_finite_as(item, spell) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [non_finite_as(item, spell) for item in value]
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral) and not math.isfinite(value):
        return spell("NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity"))
    return value


def transformers_float(name: str) -> dict[str, str]:
    """A non-finite float as transformers writes it in a ``config.json``: ``{"__float__": "-Infinity"}``."""
    return {"__float__": name}


def is_plain_int(value: Any) -> bool:
    """A JSON integer as ``json`` reads one: an int, never a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_sizes(config: Mapping[str, Any], folder: Path, where: str = "encoder.") -> dict[str, Any]:
    """The encoder's config, its sizes integers in [1, SIZE_LIMITS] (token types from 0): checked before anything is built;
    a size the config leaves out takes its class's default, which the weights' shapes then check. ``where`` names
    the encoder's config in the file (an encoder folder's is the file itself: ``""``)."""
    encoder = check_plain_sizes(config, folder, where)
    _check_activation(encoder, folder, where)
    _check_heads_divide(encoder, folder, where)
    return encoder


def check_plain_sizes(config: Mapping[str, Any], folder: Path, where: str = "encoder.") -> dict[str, Any]:
    """What :func:`check_sizes` checks without transformers' classes: the sizes, rates, dtypes and padding id."""
    encoder = config["encoder"]
    for name, limit in SIZE_LIMITS.items():
        if name not in encoder and (name != "vocab_size" or not where):  # a model's tokenizer is checked against it
            continue
        value, least = encoder.get(name), 0 if name == "type_vocab_size" else 1
        if not is_plain_int(value) or not least <= value <= limit:
            raise fail(folder, "config.json", f"{where}{name} must be an integer in [{least}, {limit:,}], got {json_value(value)}")
    for name in ENCODER_RATES:
        if name in encoder and encoder[name] is not None and not (is_finite_number(encoder[name]) and 0 <= encoder[name] < 1):
            raise fail(folder, "config.json", f"{where}{name} must be a number in [0, 1), got {json_value(encoder[name])}")
    if "layer_norm_eps" in encoder and not (is_finite_number(encoder["layer_norm_eps"]) and 0 < encoder["layer_norm_eps"] < 1):
        raise fail(folder, "config.json", f"{where}layer_norm_eps must be a number in (0, 1), got {json_value(encoder['layer_norm_eps'])}")
    for place, settings in (("", config), (where, encoder)):
        if settings.get("dtype") not in DTYPES:
            raise fail(folder, "config.json", f"{place}dtype must be one of {[d for d in DTYPES if d]}, got {json_value(settings['dtype'])}")
    _check_padding_id(encoder, folder, where)
    return encoder


def _check_heads_divide(encoder: Mapping[str, Any], folder: Path, where: str) -> None:
    """``hidden_size`` is a multiple of ``num_attention_heads``, either left out taking its class's default (BERT's
    768 and 12): named here, as transformers names neither field nor that one fell to a default."""
    names = ("hidden_size", "num_attention_heads")
    if not any(name in encoder for name in names):
        return
    defaults = {} if all(name in encoder for name in names) else _config_defaults(encoder.get("model_type"))
    size, heads = (encoder.get(name, defaults.get(name)) for name in names)
    if not (is_plain_int(size) and is_plain_int(heads)) or size % heads == 0:
        return
    shown = [f"{name} {value}" if name in encoder else f"{name} {value} ({encoder.get('model_type')}'s default: "
             f"{where}{name} is missing)" for name, value in zip(names, (size, heads))]
    raise fail(folder, "config.json", f"{where}{shown[0]} is not a multiple of {shown[1]}"
               + ("" if all(name in encoder for name in names) else ": give the encoder's own"))


def _config_defaults(model_type: Any) -> dict[str, Any]:
    """The sizes transformers' config class of ``model_type`` falls to where a config leaves them out."""
    from transformers import CONFIG_MAPPING

    if not isinstance(model_type, str) or model_type not in CONFIG_MAPPING:
        return {}
    config = CONFIG_MAPPING[model_type]()
    return {name: getattr(config, name, None) for name in ("hidden_size", "num_attention_heads")}


def _check_padding_id(encoder: Mapping[str, Any], folder: Path, where: str) -> None:
    """The padding token's id is a row of the embeddings: otherwise building the encoder ends in ``Padding_idx must be
    within num_embeddings``."""
    pad, vocab_size = encoder.get("pad_token_id"), encoder.get("vocab_size")
    if pad is not None and not (is_plain_int(pad) and 0 <= pad < (vocab_size if is_plain_int(vocab_size) else SIZE_LIMITS["vocab_size"])):
        raise fail(folder, "config.json", f"{where}pad_token_id must be null or a token id below vocab_size {vocab_size}, "
                                          f"got {json_value(pad)}")


def _check_activation(encoder: Mapping[str, Any], folder: Path, where: str) -> None:
    """The activation is one transformers knows: otherwise building the encoder ends in a bare ``KeyError: '7'``."""
    if "hidden_act" in encoder:
        from transformers.activations import ACT2FN

        if not isinstance(encoder["hidden_act"], str) or encoder["hidden_act"] not in ACT2FN:
            raise fail(folder, "config.json", f"{where}hidden_act must be one of transformers' activations "
                                              f"({', '.join(sorted(ACT2FN)[:6])}, …), got {json_value(encoder['hidden_act'])}")


def check_settings(config: Mapping[str, Any], encoder: Mapping[str, Any], folder: Path) -> None:
    """Heads, windows and tuned settings of the right kinds; windows that fit the encoder's positions."""
    if config.get("return_dict", True) is not True:  # bio_mrc reads the heads' outputs by name, never a tuple's places
        raise fail(folder, "config.json", f"return_dict must be true (the forward pass's outputs by name), got "
                                          f"{json_value(config['return_dict'])}: delete it")
    heads = config.get("heads", HEADS)
    if not isinstance(heads, str):  # named as written, not as the empty name it was checked as
        raise fail(folder, "config.json", f"heads must be one of {registry.head_choices()}, got {json_value(heads)}")
    try:
        registry.head_names(heads)
    except ValueError as err:
        raise fail(folder, "config.json", f"heads: {err}") from None
    windows = {name: config.get(name) for name in WINDOW_FIELDS}
    for name, value in windows.items():  # a doc_stride of 0 (windows without overlap) is one train makes
        least, most = WINDOW_MINIMUMS[name], SIZE_LIMITS["max_position_embeddings"]
        if value is not None and (not is_plain_int(value) or not least <= value <= most):
            raise fail(folder, "config.json", f"{name} must be an integer in [{least}, {most:,}], got {json_value(value)}")
    if config.get("tag_level", "word") not in TAG_LEVELS:
        raise fail(folder, "config.json", f"tag_level must be one of {TAG_LEVELS}, got {json_value(config.get('tag_level'))}")
    if config.get("word_units", WORD_UNITS_WHEN_ABSENT) not in WORD_UNITS:
        raise fail(folder, "config.json", f"word_units must be one of {WORD_UNITS}, got {json_value(config['word_units'])}")
    if None not in windows.values() and windows["doc_stride"] >= windows["max_seq_length"] - windows["max_query_length"] - 3:
        raise fail(folder, "config.json", f"doc_stride {windows['doc_stride']} leaves no new context in a window of "
                                          f"max_seq_length {windows['max_seq_length']} after max_query_length "
                                          f"{windows['max_query_length']} (it must be < max_seq_length - max_query_length - 3)")
    positions = encoder.get("max_position_embeddings")
    if windows["max_seq_length"] is not None and positions is not None and positions < windows["max_seq_length"]:
        raise fail(folder, "config.json", f"encoder.max_position_embeddings {positions} is less than max_seq_length "
                                          f"{windows['max_seq_length']}: the encoder cannot read its own windows")
    for key, value in _mapping(config, "no_answer_thresholds", folder).items():
        _check_threshold(value, f"no_answer_thresholds.{key}", folder)
    _check_decoding_settings(config, folder)
    check_head_settings(config, folder)
    for decoding, probability in _mapping(config, "min_span_probabilities", folder).items():
        if not (is_finite_number(probability) and 0 <= probability <= 1):
            raise fail(folder, "config.json", f"min_span_probabilities.{decoding} must be a probability in [0, 1], got {json_value(probability)}")
    for decoding, calibrator in _mapping(config, "calibration", folder).items():
        _check_calibrator(decoding, calibrator, folder)
    _check_tuned_on(_mapping(config, "tuned_on", folder), folder)  # tune reads it as an object when it saves new settings
    _warn_of_unknown_decodings(config, folder)


def _check_decoding_settings(config: Mapping[str, Any], folder: Path) -> None:
    """The BIO length prior and the answer-length limit saved in ``config``: each absent, or in the range a decoding takes."""
    prior = config.get("bio_length_prior")
    if prior is not None and not (is_finite_number(prior) and abs(prior) <= MAX_SETTING):
        raise fail(folder, "config.json", f"bio_length_prior must be a number in [-{MAX_SETTING:g}, {MAX_SETTING:g}], got {json_value(prior)}")
    limit = config.get("max_answer_length")
    if limit is not None and not (is_plain_int(limit) and 1 <= limit <= MAX_COUNT):
        raise fail(folder, "config.json", f"max_answer_length must be a whole number of tokens in [1, {MAX_COUNT:,}], got {json_value(limit)}")


def check_head_settings(config: Mapping[str, Any], folder: Path) -> None:
    """The settings the heads are built from, each named as ``config.json`` writes it (the heads' own errors name
    their arguments, or none: ``'int' object is not iterable``), and ``architectures``, which transformers' pipeline
    iterates over."""
    dropout = config.get("head_dropout", 0.0)
    if not (is_finite_number(dropout) and 0 <= dropout <= 1):
        raise fail(folder, "config.json", f"head_dropout must be a probability in [0, 1], got {json_value(dropout)}")
    if config.get("bio_loss_reduction", BIO_LOSS_REDUCTIONS[0]) not in BIO_LOSS_REDUCTIONS:
        raise fail(folder, "config.json", f"bio_loss_reduction must be one of {', '.join(BIO_LOSS_REDUCTIONS)}, "
                                          f"got {json_value(config['bio_loss_reduction'])}")
    for name in ("bio_prior", "bio_class_weights"):  # None: a uniform prior, the plain loss
        value = config.get(name)
        if value is not None and not (isinstance(value, list) and len(value) == 3
                                      and all(is_finite_number(v) and 0 < v <= MAX_SETTING for v in value)):
            raise fail(folder, "config.json", f"{name} must be null or three positive numbers (B, I, O), got {json_value(value)}")
    names = config.get("architectures")
    if names is not None and not (isinstance(names, list) and all(isinstance(name, str) for name in names)):
        raise fail(folder, "config.json", f"architectures must be a list of class names, got {json_value(names)}")


def _is_count(value: Any) -> bool:
    return is_plain_int(value) and value >= 0


def _is_reasons(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(reason, str) for reason in value.values())


# The fields of ``tuned_on``, what each holds and how to tell: tune writes the first three (and training_questions where the
# run record keeps a fingerprint, calibrators_not_fitted where it found one degenerate, the precision and device its
# scores were computed in), train --init-from adds for_model. The card, tune's lines and a comparison read them as such; another field is kept unread.
NOT_FITTED = "calibrators_not_fitted"  # of tuned_on: each decoding whose calibrator a tune there found degenerate, and why
_QUESTION_COUNT = ("a whole number of questions (0 or more)", _is_count)
_STRING = ("a string", lambda value: isinstance(value, str))
TUNED_ON_FIELDS = {"description": _STRING, "questions": _QUESTION_COUNT, "content_hash": _STRING, "for_model": _STRING,
                   "training_questions": _QUESTION_COUNT, "precision": _STRING, "device": _STRING,
                   NOT_FITTED: ("an object of decodings and reasons (strings)", _is_reasons)}


def _check_tuned_on(tuned_on: Mapping[str, Any], folder: Path) -> None:
    """Each field ``tuned_on`` holds is of its kind (:data:`TUNED_ON_FIELDS`)."""
    for name, (kind, fits) in TUNED_ON_FIELDS.items():
        if name in tuned_on and not fits(tuned_on[name]):
            raise fail(folder, "config.json", f"tuned_on.{name} must be {kind}, got {json_value(tuned_on[name])}")


def _check_calibrator(decoding: str, calibrator: Any, folder: Path) -> None:
    """A beta calibrator. The method is read first: an earlier version's isotonic knots (``x``, ``y``, no method) are
    refused as another method, with what to do (``tune`` loads the folder too, so the key goes by hand first)."""
    if isinstance(calibrator, dict) and calibrator.get("method") != "beta":  # the one method calibrate() reads
        raise fail(folder, "config.json", f"calibration.{decoding}.method must be 'beta' (a, b and c are read as beta "
                                          f"calibration), got {json_value(calibrator.get('method'))}: delete "
                                          "'calibration' from config.json, then bio-mrc tune fits them again")
    if not isinstance(calibrator, dict) or not all(is_finite_number(calibrator.get(key)) and abs(calibrator[key]) <= MAX_SETTING
                                                   for key in ("a", "b", "c")):
        raise fail(folder, "config.json", f"calibration.{decoding} must hold the numbers a, b and c, got {json_value(calibrator)}")
    if calibrator["a"] < 0 or calibrator["b"] < 0:  # fitted ones never are: the map keeps the raw ranking
        raise fail(folder, "config.json", f"calibration.{decoding}: a and b must be 0 or more (a negative one turns "
                                          f"the map from raw confidence to probability around), "
                                          f"got a={json_value(calibrator['a'])}, b={json_value(calibrator['b'])}")
    if "no_answer_threshold" in calibrator:  # the threshold it was fitted at scores its abstentions
        _check_threshold(calibrator["no_answer_threshold"], f"calibration.{decoding}.no_answer_threshold", folder)


class UnusedSettingWarning(InputWarning):
    """A tuned setting of ``config.json`` that no registered decoding reads: the model loads, without it."""


def _warn_of_unknown_decodings(config: Mapping[str, Any], folder: Path) -> None:
    """A tuned setting keyed by no registered decoding (a misspelt key in a hand-edited ``config.json``, or a plug-in
    decoding's, whose model still loads where the plug-in is not imported) is read by nothing: one warning each, as
    naming the file and the key, once a process (every loader checks the folder, some twice)."""
    scores = sorted({entry.threshold_key for entry in registry.DECODINGS.values()})
    keyed = {"no_answer_thresholds": ("is the no-answer score of no registered decoding", scores),
             "min_span_probabilities": ("names no registered decoding", sorted(registry.DECODINGS)),
             "calibration": ("names no registered decoding", sorted(registry.DECODINGS))}
    for name, (problem, known) in keyed.items():
        for key in _mapping(config, name, folder):
            message = (f"{folder / 'config.json'}: {name} key {json_value(key)} {problem} ({', '.join(known)}), so nothing uses "
                       "it: a misspelt key, or a plug-in decoding's not imported here?")
            if key not in known and message not in _WARNED:
                _WARNED.add(message)
                warnings.warn(UnusedSettingWarning(message), stacklevel=2)


_WARNED: set[str] = set()  # the unused settings already warned of


def _check_threshold(value: Any, name: str, folder: Path) -> None:
    """A saved no-answer threshold: a number, or ±Infinity (always or never abstain); NaN and the rest are refused."""
    if not (is_finite_number(value) and abs(value) <= MAX_SETTING or value in (math.inf, -math.inf)):
        raise fail(folder, "config.json", f"{name} must be a number, got {json_value(value)}")


def is_finite_number(value: Any) -> bool:
    """A finite JSON number as ``json`` reads one: an int or a float, never a bool, NaN or an infinity."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _mapping(config: Mapping[str, Any], name: str, folder: Path) -> dict[str, Any]:
    value = config.get(name)
    if value is not None and not isinstance(value, dict):
        raise fail(folder, "config.json", f"{name} must be an object, got {json_value(value)}")
    return value or {}


def weight_shapes(folder: Path) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape by name, from the safetensors headers (one file or the shards of an index)."""
    check_weights_present(folder)
    if not (folder / SAFETENSORS_INDEX).is_file():
        return safetensors_shapes(folder, SAFETENSORS_FILE)
    weight_map = _index_weight_map(folder, SAFETENSORS_INDEX)
    shapes: dict[str, tuple[int, ...]] = {}
    for shard in sorted(set(weight_map.values())):
        shapes.update(safetensors_shapes(folder, shard))
    if missing := sorted(set(weight_map) - set(shapes)):
        raise fail(folder, SAFETENSORS_INDEX, f"names tensors no shard holds: {', '.join(missing[:3])}")
    return shapes


def check_weights_present(folder: Path) -> None:
    """``model.safetensors`` or its index is there: pickled weights and an ONNX export alone are named as such."""
    if not (folder / SAFETENSORS_FILE).is_file() and not (folder / SAFETENSORS_INDEX).is_file():
        pickled = [name for name in PICKLED_WEIGHTS if (folder / name).is_file()]
        if pickled:
            raise fail(folder, pickled[0], "pickled weights are never loaded (unpickling can run code); "
                                           "save the weights as model.safetensors")
        if (folder / ONNX_FILE).is_file():
            raise fail(folder, None, f"an ONNX export ({ONNX_FILE}), which holds no PyTorch weights: give the PyTorch "
                                     "model it was made from")
        raise fail(folder, None, f"no weights ({SAFETENSORS_FILE}): an unfinished or partial copy?")


def _pickled_weight_shapes(folder: Path) -> tuple[str, dict[str, tuple[int, ...]]]:
    """(the file named in errors, every tensor's shape by name) of an encoder folder's pickled weights: the one file,
    or the shards of its index, each read as tensors only (:mod:`bio_mrc.pickled_weights`)."""
    single, index = PICKLED_WEIGHTS
    if (folder / single).is_file():
        return single, pickled_shapes(folder, single)
    shards = sorted(set(_index_weight_map(folder, index).values()))
    if missing := [shard for shard in shards if not (folder / shard).is_file()]:
        raise fail(folder, index, f"names a shard that is missing: {json_value(missing[0])}")
    shapes: dict[str, tuple[int, ...]] = {}
    for shard in shards:
        shapes.update(pickled_shapes(folder, shard))
    return index, shapes


def _index_weight_map(folder: Path, index: str) -> dict[str, str]:
    """A sharded checkpoint's ``weight_map`` (tensor name -> shard file), each shard a file of the folder itself."""
    weight_map = read_json_object(folder, index).get("weight_map")
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise fail(folder, index, "has no 'weight_map' of tensor names to shard files")
    if outside := sorted(shard for shard in set(weight_map.values()) if Path(shard).name != shard):
        raise fail(folder, index, f"names a shard outside the folder: {json_value(outside[0])}")
    return weight_map


def safetensors_shapes(folder: Path, name: str) -> dict[str, tuple[int, ...]]:
    """One safetensors file's tensor shapes; its header must parse and its tensors tile the data exactly."""
    path = folder / name
    if not path.is_file():
        raise fail(folder, name, "missing")
    size = path.stat().st_size
    with open(path, "rb") as file:
        prefix = file.read(8)
        length = int.from_bytes(prefix, "little") if len(prefix) == 8 else -1
        if length < 2 or length > min(size - 8, MAX_SAFETENSORS_HEADER):
            raise fail(folder, name, f"not a safetensors file, or cut short ({size:,} {number_form(size, 'byte')})")
        header_bytes = file.read(length)
    try:
        header = json.loads(header_bytes.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise fail(folder, name, "its header is not valid JSON (a corrupt file?)") from None
    if not isinstance(header, dict):
        raise fail(folder, name, "its header is not a JSON object (a corrupt file?)")
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values())):
        raise fail(folder, name, "its header's __metadata__ is not an object of text values, as safetensors reads it "
                                 "(a corrupt file?)")
    return _tiled_shapes(folder, name, header, size - 8 - length)


def _tiled_shapes(folder: Path, name: str, header: Mapping[str, Any], data_bytes: int) -> dict[str, tuple[int, ...]]:
    """Each tensor's shape; a :class:`Shape`, which also carries the tensor's safetensors dtype."""
    shapes, spans = {}, []
    for tensor, entry in header.items():
        entry = entry if isinstance(entry, dict) else {}
        dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if (dtype not in DTYPE_BYTES or not isinstance(shape, list) or not all(is_plain_int(d) and d >= 0 for d in shape)
                or not isinstance(offsets, list) or len(offsets) != 2 or not all(is_plain_int(o) for o in offsets)):
            raise fail(folder, name, f"tensor {json_value(tensor)} has a corrupt header entry")
        if offsets[1] - offsets[0] != math.prod(shape) * DTYPE_BYTES[dtype]:
            raise fail(folder, name, f"tensor {json_value(tensor)}: its bytes do not match its shape {shape} (a corrupt file?)")
        shapes[tensor] = Shape(shape, dtype)
        spans.append((offsets[0], offsets[1]))
    end = 0
    for start, stop in sorted(spans):
        if start != end:
            raise fail(folder, name, "its tensors overlap or leave gaps (a corrupt file?)")
        end = stop
    if end != data_bytes:
        problem = "cut short" if end > data_bytes else "longer than its tensors"
        raise fail(folder, name, f"{problem}: the header names {end:,} {number_form(end, 'byte')} of tensors, the file holds {data_bytes:,}")
    return shapes


class Shape(tuple):
    """A saved tensor's shape (a tuple of its sizes) and, as ``dtype``, its safetensors dtype (``F32``, ``BOOL``, …);
    a shape the model builds has the dtype of its own tensor's kind (``F32`` for a floating point one)."""

    dtype: str

    def __new__(cls, sizes: Iterable[int], dtype: str) -> Shape:
        shape = super().__new__(cls, sizes)
        shape.dtype = dtype
        return shape


def expected_shapes(model_class: type, config: Mapping[str, Any], folder: Path) -> dict[str, tuple[int, ...]]:
    """The weights ``model_class`` builds from ``config``, built on the meta device (no memory is taken); each a
    :class:`Shape`, of dtype ``F32`` where the model's tensor is floating point."""
    return dict(built_on_meta(lambda: _built_shapes(model_class, json.dumps(config, sort_keys=True)), folder))


@functools.lru_cache(maxsize=16)
def _built_shapes(model_class: type, config_text: str) -> Mapping[str, tuple[int, ...]]:
    """:func:`expected_shapes` of a config as JSON text, kept for the process: a model loaded again (a server's, a
    comparison's runs scored and tuned) is not built a second time to be checked."""
    model = model_class(model_class.config_class.from_dict(json.loads(config_text)))
    return {name: Shape(tensor.shape, "F32" if tensor.is_floating_point() else str(tensor.dtype))
            for name, tensor in model.state_dict().items()}


def built_on_meta(build: Callable[[], Any], folder: Path) -> Any:
    """What ``build`` makes of a folder's ``config.json``, on the meta device (no memory is taken); any failure to
    build is one line naming the file."""
    import torch

    try:
        with torch.device("meta"):
            return build()
    except Exception as err:  # noqa: BLE001 - any failure to build is the config file's fault
        lines = [line.strip() for line in str(err).strip().splitlines()] or [type(err).__name__]
        first = " ".join(lines[:2]) if lines[0].endswith(":") else lines[0]  # a heading line, then what it heads
        raise fail(folder, "config.json", f"describes no model this version can build: {first}") from None


def check_weights_fit(folder: Path, found: Mapping[str, tuple], expected: Mapping[str, tuple]) -> None:
    """The saved tensors are exactly those the config implies, each with its shape."""
    missing, extra = sorted(set(expected) - set(found)), sorted(set(found) - set(expected))
    if missing or extra:
        parts = [f"lacks {counted(len(missing), 'tensor')} the config implies ({', '.join(missing[:3])})" if missing else "",
                 f"holds {len(extra)} the config does not ({', '.join(extra[:3])})" if extra else ""]
        raise fail(folder, SAFETENSORS_FILE, " and ".join(p for p in parts if p) + ": config.json and the weights disagree "
                                             "(layer count or heads edited?)")
    if wrong := [name for name in expected if tuple(found[name]) != tuple(expected[name])]:
        name = wrong[0]
        raise fail(folder, SAFETENSORS_FILE, f"{counted(len(wrong), 'tensor')} {number_form(len(wrong), 'does', 'do')} not have the shapes config.json implies "
                                             f"(e.g. {name}: {list(found[name])}, config.json: {list(expected[name])})")
    check_floating_weights(folder, found, expected)


def check_floating_weights(folder: Path, found: Mapping[str, tuple], expected: Mapping[str, tuple]) -> None:
    """A tensor the model holds as floating point numbers is saved as such (``F32``, ``BF16``, …): one saved as
    integers or booleans (``I32``, ``BOOL``) holds no trained weights, and loading would cast it silently."""
    if wrong := [name for name, shape in expected.items() if getattr(shape, "dtype", None) == "F32"
                 and getattr(found[name], "dtype", "F32") not in FLOAT_DTYPES]:
        name = wrong[0]
        raise fail(folder, SAFETENSORS_FILE, f"{counted(len(wrong), 'tensor')} {number_form(len(wrong), 'holds', 'hold')} {found[name].dtype} "
                                             f"values where the model has floating point weights (e.g. {name}): a corrupt or hand-edited file?")


def check_tokenizer(folder: Path, vocab_size: int, required: bool = True) -> None:
    """``tokenizer.json`` exists (where required), parses and maps only to ids the encoder has; the special
    tokens the other tokenizer files name are token texts in it (one that is not would be added past the vocabulary),
    and their ``cls_token`` and ``sep_token`` those its post-processor puts in every window."""
    settings = {name: read_json_object(folder, name) for name in TOKENIZER_JSON_FILES if (folder / name).is_file()}
    _check_model_max_length(settings.get("tokenizer_config.json", {}), folder)
    _check_tokenizer_settings(settings.get("tokenizer_config.json", {}), folder)
    path = folder / TOKENIZER_FILE
    if not path.is_file():
        if required:
            raise fail(folder, TOKENIZER_FILE, TOKENIZER_MISSING)
        return
    tokenizer = _read_tokenizer(folder)
    vocabulary = _check_token_ids(folder, tokenizer, vocab_size)
    template = _template_tokens(tokenizer)
    for name, values in settings.items():
        for key, token in _special_tokens(values):
            if token not in vocabulary:
                raise fail(folder, name, f"{key} {json_value(token)} is not in {TOKENIZER_FILE}'s vocabulary "
                                         "(it would be added with an id past the model's)")
        _check_special_values(folder, name, values, template)


def _read_tokenizer(folder: Path) -> Any:
    """``tokenizer.json`` as ``tokenizers`` reads it, at most :data:`MAX_TOKENIZER_BYTES`; one error where it cannot."""
    path = folder / TOKENIZER_FILE
    if path.stat().st_size > MAX_TOKENIZER_BYTES:
        raise fail(folder, TOKENIZER_FILE, f"{path.stat().st_size:,} bytes, more than {MAX_TOKENIZER_BYTES:,}")
    from tokenizers import Tokenizer

    try:
        return Tokenizer.from_str(path.read_bytes().decode("utf-8"))
    except Exception as err:  # noqa: BLE001 - tokenizers raises its own Exception for every malformed file
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise fail(folder, TOKENIZER_FILE, f"not a tokenizer file tokenizers can read (a truncated or corrupt file?): "
                                           f"{first[:200]}") from None


def _check_token_ids(folder: Path, tokenizer: Any, vocab_size: int) -> dict[str, int]:
    """The tokenizer's vocabulary (added tokens too), every id of it a row of the encoder's embeddings."""
    vocabulary = tokenizer.get_vocab(with_added_tokens=True)
    if not vocabulary:
        raise fail(folder, TOKENIZER_FILE, "holds no tokens")
    if max(vocabulary.values()) >= vocab_size:
        raise fail(folder, TOKENIZER_FILE, f"maps tokens to ids up to {max(vocabulary.values())}, past the encoder's "
                                           f"vocab_size {vocab_size} (config.json): the tokenizer is not this model's")
    return vocabulary


def _check_special_values(folder: Path, name: str, settings: Mapping[str, Any], template: frozenset[str]) -> None:
    """Each special token a tokenizer file sets is a token's text (or an added token's object with its ``content``);
    ``cls_token`` and ``sep_token``, which transformers' tokenizer classes rebuild a window's ``[CLS] question [SEP]
    context [SEP]`` from on loading, name tokens ``tokenizer.json``'s post-processor places there (where it places any):
    a ``null`` there put another id at the no-answer position (BERT's id 2), ``{}`` the unknown token's."""
    for key in SPECIAL_TOKEN_KEYS:
        if key not in settings:
            continue
        value = settings[key]
        token = value.get("content") if isinstance(value, dict) else value
        if value is not None and not isinstance(token, str):
            raise fail(folder, name, f"{key} must be a token's text or an added token's object with its 'content', "
                                     f"got {json_value(value)}")
        if key in TEMPLATE_TOKEN_KEYS and template and token not in template:
            raise fail(folder, name, f"{key} {json_value(token)} is not one of the special tokens {TOKENIZER_FILE} puts "
                                     f"in every window ({', '.join(sorted(template))}): the model was not trained with it there")


def _template_tokens(tokenizer: Any) -> frozenset[str]:
    """The special tokens' texts a tokenizer's post-processor adds to each encoding (a template's, BERT's or RoBERTa's
    ``cls`` and ``sep``, those of a sequence of processors); none where it has no post-processor."""
    processor = tokenizer.post_processor
    return frozenset(_processor_tokens(json.loads(processor.__getstate__()))) if processor is not None else frozenset()


def _processor_tokens(processor: Any) -> list[str]:
    if not isinstance(processor, dict):
        return []
    if isinstance(processor.get("processors"), list):
        return [token for step in processor["processors"] for token in _processor_tokens(step)]
    specials = processor.get("special_tokens")
    found = [token for entry in specials.values() if isinstance(entry, dict) for token in entry.get("tokens", [])] \
        if isinstance(specials, dict) else []
    return found + [pair[0] for pair in (processor.get("cls"), processor.get("sep")) if isinstance(pair, list) and pair]


def check_window_frame(folder: str | Path, tokenizer: Any) -> None:
    """The tokenizer transformers builds from ``folder`` frames a question and a context with the special tokens
    ``tokenizer.json``'s post-processor places, those the model was trained with: its tokenizer classes rebuild the
    frame from ``tokenizer_config.json``'s ``cls_token`` and ``sep_token``, so two swapped there (each still one of
    the frame's tokens) put ``[SEP]`` where the no-answer score is read and every answer moves."""
    folder = Path(folder)
    if not (folder / TOKENIZER_FILE).is_file():
        return
    from tokenizers import Tokenizer

    # read here, not by tokenizers: it opens a path as UTF-8, not in the locale's file-name encoding
    saved = Tokenizer.from_str((folder / TOKENIZER_FILE).read_bytes().decode("utf-8"))
    saved.no_padding()
    saved.no_truncation()
    trained = saved.encode(*FRAME_PROBE).ids
    built = list(tokenizer(*FRAME_PROBE)["input_ids"])
    if built != trained:
        def shown(ids: list[int]) -> str:
            return " ".join(str(saved.id_to_token(i)) for i in ids)

        raise fail(folder, "tokenizer_config.json", f"its special tokens frame a question and a context as "
                                                    f"{json_value(shown(built), whole=True)}, where {TOKENIZER_FILE}, which the model "
                                                    f"was trained with, frames them as {json_value(shown(trained), whole=True)} "
                                                    "(cls_token and sep_token swapped or changed?)")


def _check_model_max_length(settings: Mapping[str, Any], folder: Path) -> None:
    """transformers compares every text's token count with ``model_max_length``: one that is no number (a string
    ``"512"`` in a hand-edited file) would end the first question in a ``TypeError``."""
    length = settings.get("model_max_length")
    if length is not None and not (is_finite_number(length) and length >= 0):
        raise fail(folder, "tokenizer_config.json", f"model_max_length must be a number of tokens (0 or more), got {json_value(length)}")


# The settings of tokenizer_config.json transformers' tokenizer classes pass on to ``tokenizers`` or check themselves, as
# (what each holds, the values it may take): another kind ends the loading in ``'None' is not an instance of 'bool'``.
FLAG = ("true or false", (True, False))
FLAG_OR_NULL = ("null, true or false", (None, True, False))  # null: the tokenizer class's own default
TOKENIZER_SETTINGS = {"do_lower_case": FLAG, "tokenize_chinese_chars": FLAG, "split_special_tokens": FLAG,
                      "trim_offsets": FLAG, "add_prefix_space": FLAG_OR_NULL, "clean_up_tokenization_spaces": FLAG_OR_NULL,
                      "strip_accents": FLAG_OR_NULL,
                      "padding_side": ("'left' or 'right'", ("left", "right")),
                      "truncation_side": ("'left' or 'right'", ("left", "right"))}


def _check_tokenizer_settings(settings: Mapping[str, Any], folder: Path) -> None:
    """Each setting of :data:`TOKENIZER_SETTINGS` holds one of its values, ``tokenizer_class`` is a class's name and
    ``model_input_names`` a list of names, each named in the line."""
    for name, (kind, values) in TOKENIZER_SETTINGS.items():
        # by identity: 1 == True, and a 1 ends the loading as "'int' object is not an instance of 'bool'"
        if name in settings and not any(settings[name] is value or settings[name] == value and isinstance(value, str)
                                        for value in values):
            raise fail(folder, "tokenizer_config.json", f"{name} must be {kind}, got {json_value(settings[name])}")
    if settings.get("tokenizer_class") is not None and not isinstance(settings["tokenizer_class"], str):
        raise fail(folder, "tokenizer_config.json", f"tokenizer_class must be a tokenizer class's name (\"BertTokenizer\"), "
                                                    f"got {json_value(settings['tokenizer_class'])}")
    names = settings.get("model_input_names", [])
    if not (isinstance(names, list) and all(isinstance(name, str) for name in names)):
        raise fail(folder, "tokenizer_config.json", f"model_input_names must be a list of input names, got {json_value(names)}")


def _special_tokens(settings: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(key, token text) of each special token a tokenizer file names (a string, or an added token's ``content``)."""
    found = []
    for key, value in settings.items():
        values = value if key in ("additional_special_tokens", "extra_special_tokens") and isinstance(value, list) else [value]
        if key.endswith("_token") or key in ("additional_special_tokens", "extra_special_tokens"):
            found += [(key, v.get("content") if isinstance(v, dict) else v) for v in values  # add_bos_token: a flag
                      if isinstance(v, str) or isinstance(v, dict) and isinstance(v.get("content"), str)]
    return found


def check_onnx(folder: Path, config: Mapping[str, Any]) -> None:
    """``model.onnx`` parses, keeps its external data inside the folder, has the inputs and outputs its heads need, and
    finite weights."""
    onnx = _import_onnx(folder)
    path = folder / ONNX_FILE
    if not path.is_file():
        raise fail(folder, ONNX_FILE, "missing")
    try:
        graph = onnx.load(str(path), load_external_data=False).graph
    except Exception as err:  # noqa: BLE001 - protobuf raises DecodeError and others for a corrupt file
        raise fail(folder, ONNX_FILE, f"not an ONNX model (a truncated or corrupt file?): {str(err)[:200]}") from None
    root = folder.resolve()
    for tensor in graph.initializer:
        location = {entry.key: entry.value for entry in tensor.external_data}.get("location")
        if location is not None and not _inside(root, root / location):
            raise fail(folder, ONNX_FILE, f"its external data {location!r} lies outside the folder")
        if location is not None and not (root / location).is_file():
            raise fail(folder, ONNX_FILE, f"its external data {location!r} is missing")
    _check_onnx_signature(folder, graph, config)
    for tensor in graph.initializer:
        if problem := _initializer_problem(onnx, tensor, root):
            raise fail(folder, ONNX_FILE, f"its initializer {tensor.name!r} {problem}")


def _initializer_problem(onnx: Any, tensor: Any, root: Path) -> str | None:
    """Why a float initializer cannot be run (it holds NaN, or infinity beside values other than 0), else None. NaN
    weights answer every question with scores no decoding reads; a tensor of infinities and zeros alone (a lone
    fill value, a mask of 0 and -inf) is an attention mask's, not a weight."""
    if tensor.data_type not in _onnx_float_types(onnx):
        return None
    held = tensor
    if tensor.data_location == onnx.TensorProto.EXTERNAL:  # read into a copy: one tensor's data held at a time
        held = onnx.TensorProto()
        held.CopyFrom(tensor)
    try:
        values = onnx.numpy_helper.to_array(held, base_dir=str(root))
    except (OSError, ValueError) as err:
        return f"cannot be read ({str(err)[:200]})"
    values = values if values.dtype.kind == "f" else values.astype(np.float32)  # bfloat16, float8: ml_dtypes' types
    if np.isfinite(values).all():
        return None
    nan, inf = int(np.isnan(values).sum()), int(np.isinf(values).sum())
    mask_like = not nan and bool(np.all(np.isinf(values) | (values == 0)))
    if not mask_like:
        shape = "x".join(map(str, values.shape)) or "scalar"
        return (f"({shape}) holds {nan:,} NaN and {inf:,} infinite values of {values.size:,}: the model's weights "
                "were not finite when it was exported (a diverged training run or a corrupt file)")
    return None


def _onnx_float_types(onnx: Any) -> set[int]:
    names = ("FLOAT", "FLOAT16", "DOUBLE", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ")
    return {getattr(onnx.TensorProto, name) for name in names if hasattr(onnx.TensorProto, name)}


def _inside(root: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except ValueError:
        return False
    return True


def _import_onnx(folder: Path):
    try:
        import onnx
    except ImportError as err:
        raise fail(folder, ONNX_FILE, f"checking an ONNX model needs the 'onnx' package ({err}): pip install 'bio_mrc[onnx]'") from None
    return onnx


def _dims(value_info: Any) -> list[int | str]:
    return [d.dim_value if d.HasField("dim_value") else d.dim_param for d in value_info.type.tensor_type.shape.dim]


def _check_onnx_signature(folder: Path, graph: Any, config: Mapping[str, Any]) -> None:
    inputs = {value.name: _dims(value) for value in graph.input}
    outputs = {value.name: _dims(value) for value in graph.output}
    for name, dims in inputs.items():
        if len(dims) != 2:
            raise fail(folder, ONNX_FILE, f"input {name!r} has shape {dims}, not (batch, sequence)")
        if any(isinstance(d, int) for d in dims):  # a graph traced for one shape fails on every other batch
            longest = config.get("max_seq_length")
            shape = ", ".join(str(d) if d != "" else "?" for d in dims)
            raise fail(folder, ONNX_FILE, f"input {name!r} has the fixed shape [{shape}]: windows are batched and padded to "
                       f"their batch's longest{f', up to max_seq_length {longest}' if longest else ''}, so an export takes "
                       "any number of windows of any length (dynamic batch and sequence axes); export the PyTorch model "
                       "again with bio-mrc export")
    if "input_ids" not in inputs:
        raise fail(folder, ONNX_FILE, "has no input_ids input")
    heads = registry.head_names(config.get("heads", HEADS))
    for head in heads:
        entry = registry.head(head)
        for output, extra in zip(entry.outputs, entry.output_dims):
            if output not in outputs:
                raise fail(folder, ONNX_FILE, f"lacks the output {output!r} of its {head} head")
            dims = outputs[output]
            if len(dims) != 2 + len(extra) or any(isinstance(d, int) and d != e for d, e in zip(dims[2:], extra)):
                raise fail(folder, ONNX_FILE, f"output {output!r} has shape {dims}, not (batch, sequence{''.join(f', {e}' for e in extra)})")
