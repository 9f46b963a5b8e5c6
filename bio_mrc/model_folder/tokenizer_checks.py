"""A model folder's tokenizer files checked: ``tokenizer.json`` read and within the vocabulary, the special tokens and
settings of the others."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from ..json_syntax import json_value
from .config_reading import is_finite_number, read_json_object
from .files import TOKENIZER_FILE, TOKENIZER_JSON_FILES, fail


MAX_TOKENIZER_BYTES = 256 * 2**20

TOKENIZER_MISSING = "missing: a model folder carries its fast tokenizer's file (copy it from the encoder the model was trained from)"
# The special tokens transformers' tokenizer classes read from the tokenizer files; of them, those its BERT, RoBERTa and
# most other classes rebuild a window's template from (``[CLS] question [SEP] context [SEP]``), whatever tokenizer.json says.
SPECIAL_TOKEN_KEYS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
TEMPLATE_TOKEN_KEYS = ("cls_token", "sep_token")
FRAME_PROBE = ("Who wrote it?", "Ada wrote it.")  # a question and a context, as a window frames them


def check_tokenizer(folder: Path, vocab_size: int, required: bool = True) -> Any:
    """``tokenizer.json`` exists (where required), parses and maps only to ids the encoder has; the special
    tokens the other tokenizer files name are token texts in it (one that is not would be added past the vocabulary),
    and their ``cls_token`` and ``sep_token`` those its post-processor puts in every window. Returns ``tokenizer.json``
    as ``tokenizers`` parsed it (a ``tokenizers.Tokenizer``, for :func:`check_window_frame`), or None where there is none."""
    settings = {name: read_json_object(folder, name) for name in TOKENIZER_JSON_FILES if (folder / name).is_file()}
    _check_model_max_length(settings.get("tokenizer_config.json", {}), folder)
    _check_tokenizer_settings(settings.get("tokenizer_config.json", {}), folder)
    path = folder / TOKENIZER_FILE
    if not path.is_file():
        if required:
            raise fail(folder, TOKENIZER_FILE, TOKENIZER_MISSING)
        return None
    tokenizer = _read_tokenizer(folder)
    vocabulary = _check_token_ids(folder, tokenizer, vocab_size)
    template = _template_tokens(tokenizer)
    for name, values in settings.items():
        for key, token in _special_tokens(values):
            if token not in vocabulary:
                raise fail(folder, name, f"{key} {json_value(token)} is not in {TOKENIZER_FILE}'s vocabulary "
                                         "(it would be added with an id past the model's)")
        _check_special_values(folder, name, values, template)
    return tokenizer


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


def check_window_frame(folder: str | Path, tokenizer: Any, saved: Any = None) -> None:
    """The tokenizer transformers builds from ``folder`` frames a question and a context with the special tokens
    ``tokenizer.json``'s post-processor places, those the model was trained with: its tokenizer classes rebuild the
    frame from ``tokenizer_config.json``'s ``cls_token`` and ``sep_token``, so two swapped there (each still one of
    the frame's tokens) put ``[SEP]`` where the no-answer score is read and every answer moves. ``saved``:
    ``tokenizer.json`` as :func:`check_tokenizer` parsed it already, which is then not read again (its padding and
    truncation are turned off here)."""
    folder = Path(folder)
    if not (folder / TOKENIZER_FILE).is_file():
        return
    if saved is None:
        saved = _read_tokenizer(folder)
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
