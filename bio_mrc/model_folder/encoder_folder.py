"""An encoder folder (``train --encoder``) checked: what a model is built from."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..errors import argument
from ..plurals import counted, number_form
from .config_reading import BIO_MRC_MODEL_TYPE, read_json_object, special_floats
from .encoder_checks import (
    _check_activation, _check_heads_divide, check_bidirectional, check_model_type_named, check_plain_direction,
    check_plain_sizes
)
from .files import PICKLED_WEIGHTS, SAFETENSORS_FILE, SAFETENSORS_INDEX, TOKENIZER_FILE, TOKENIZER_JSON_FILES, check_file_kinds, fail
from .tokenizer_checks import _check_token_ids, _read_tokenizer
from .weights import _pickled_weight_shapes, pickled_weight_files, weight_shapes


# A tokenizer's vocabulary is read from one of these; without any, transformers builds a tokenizer of the special
# tokens alone (5 tokens for a BERT), which reads every word as [UNK] and trains a model on nothing without a word.
VOCABULARY_FILES = (TOKENIZER_FILE, "vocab.txt", "vocab.json", "*.model")


def check_encoder_folder(folder: str | Path) -> None:
    """An encoder folder (``train --encoder``, a comparison's ``encoder``) holds what a model is built from: the files
    :func:`check_encoder_files` checks, an encoder transformers builds from its ``config.json`` that reads both ways, and
    each tensor it builds saved with its shape (pickled ``pytorch_model.bin`` or its shards read as tensors only,
    :mod:`bio_mrc.pickled_weights`)."""
    folder = Path(folder)
    config, shapes = _checked_encoder_files(folder)
    _check_activation(config, folder, "")
    _check_heads_divide(config, folder, "")
    model = check_bidirectional(config, folder)
    if shapes is not None:  # the safetensors headers, as the files' check read them
        file = SAFETENSORS_FILE
    else:
        file, shapes = _pickled_weight_shapes(folder)
    if model is not None:
        _check_encoder_weights(folder, shapes, model, file)


def check_encoder_files(folder: str | Path) -> dict[str, Any]:
    """What :func:`check_encoder_folder` checks that needs neither torch nor transformers, so ``train`` refuses it at
    once: a folder, a ``config.json`` object of an encoder (no trained bio_mrc model) naming its ``model_type`` and
    reading both ways, its sizes, weights (``model.safetensors`` or its shards, their headers read as a model's are;
    pickled weights, or the shards their index names, present), tokenizer files that parse, a tokenizer's vocabulary
    (:data:`VOCABULARY_FILES`) and ``tokenizer.json``'s ids within ``vocab_size``. Returns the config."""
    return _checked_encoder_files(Path(folder))[0]


def _checked_encoder_files(folder: Path) -> tuple[dict[str, Any], dict[str, tuple[int, ...]] | None]:
    """:func:`check_encoder_files`' config, with each tensor's shape from the safetensors headers it read (None for
    pickled weights, which it finds present without reading them)."""
    if folder.exists() and not folder.is_dir():
        raise fail(folder, None, "is a file, not an encoder's folder (its config.json, weights and tokenizer files)")
    check_file_kinds(folder)
    config = special_floats(read_json_object(folder, "config.json"))
    if config.get("model_type") == BIO_MRC_MODEL_TYPE:  # its encoder is nested in it
        raise fail(folder, "config.json", f"a trained bio_mrc model, not an encoder: {argument('init_from')} continues "
                                          "it on its own encoder")
    check_model_type_named(config, folder, where="")
    check_plain_direction(config, folder, where="")
    check_plain_sizes({"encoder": config}, folder, where="")  # as a model's encoder is checked: a size would end in a traceback
    shapes = None
    if (folder / SAFETENSORS_FILE).is_file() or (folder / SAFETENSORS_INDEX).is_file():
        shapes = weight_shapes(folder)
    elif any((folder / name).is_file() for name in PICKLED_WEIGHTS):
        pickled_weight_files(folder)
    else:
        raise fail(folder, None, f"no weights ({SAFETENSORS_FILE} or {PICKLED_WEIGHTS[0]}): an unfinished or partial copy?")
    for name in TOKENIZER_JSON_FILES:  # named here, not as the tokenizer's loading failing
        if (folder / name).is_file():
            read_json_object(folder, name)
    if not any(path.is_file() for pattern in VOCABULARY_FILES for path in folder.glob(pattern)):
        raise fail(folder, None, "no tokenizer vocabulary (tokenizer.json, vocab.txt, vocab.json or a SentencePiece .model "
                                 f"file): {_without_vocabulary(folder)}")
    if (folder / TOKENIZER_FILE).is_file() and "vocab_size" in config:  # one left out takes its class's default
        _check_token_ids(folder, _read_tokenizer(folder), config["vocab_size"])
    return config, shapes


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
