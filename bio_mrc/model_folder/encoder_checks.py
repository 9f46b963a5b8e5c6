"""The encoder's config checked: sizes within bounds, heads that divide, padding id, activation, a bidirectional
encoder of a model type transformers knows."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..errors import ModelFormatError
from ..json_syntax import json_value
from .config_reading import is_finite_number, is_plain_int
from .files import fail
from .weights import built_on_meta


# Encoder sizes past these are refused before anything is built; the largest BERT-style encoders stay well
# inside (some 48 layers of 4,096, vocabularies of some 250,000 tokens).
SIZE_LIMITS = {
    "num_hidden_layers": 96, "hidden_size": 16384, "intermediate_size": 65536, "num_attention_heads": 256,
    "vocab_size": 1_000_000, "max_position_embeddings": 131072, "type_vocab_size": 1024, "embedding_size": 16384,
    "n_layers": 96, "dim": 16384, "n_heads": 256, "hidden_dim": 65536,  # DistilBERT's names
}

ENCODER_RATES = ("attention_probs_dropout_prob", "hidden_dropout_prob", "attention_dropout", "dropout", "hidden_dropout",
                 "embedding_dropout", "mlp_dropout")
DTYPES = (None, "float32", "float16", "bfloat16")


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


# What an encoder's config says when it is no bidirectional encoder: each window's question, context and no-answer
# position are read together, and a decoder's causal attention lets no token see those after it.
BIDIRECTIONAL_ONLY = "bio_mrc reads the tokens of a bidirectional encoder (BERT, RoBERTa, DeBERTa, ...)"


def check_reads_both_ways(encoder: Mapping[str, Any], folder: Path, where: str = "encoder.") -> None:
    """The encoder's config says it reads both ways (:func:`check_plain_direction`), and is no decoder-only language
    model's (:func:`decoder_only`), which a model saved before training refused them holds."""
    check_plain_direction(encoder, folder, where)
    model_type = encoder.get("model_type")
    if where:  # a model's encoder; an encoder folder's own unknown model_type is named when it loads
        _check_known_model_type(model_type, folder, where)
    if isinstance(model_type, str) and decoder_only(model_type):
        raise _decoder_only_model(folder, model_type, _base_model_name(model_type), where)


def check_plain_direction(encoder: Mapping[str, Any], folder: Path, where: str = "encoder.") -> None:
    """What :func:`check_reads_both_ways` checks without transformers' tables: the config is no decoder's
    (``is_decoder``: causal attention, each token reading only those before it) nor an encoder-decoder model's (T5,
    BART: a model of two stacks, whose forward pass needs decoder inputs), and has no cross-attention."""
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


def check_sizes(config: Mapping[str, Any], folder: Path, where: str = "encoder.") -> dict[str, Any]:
    """The encoder's config, its sizes integers in [1, SIZE_LIMITS] (token types from 0): checked before anything is built;
    a size the config leaves out takes its class's default, which the weights' shapes then check. ``where`` names
    the encoder's config in the file (an encoder folder's is the file itself: ``""``)."""
    encoder = check_plain_sizes(config, folder, where)
    _check_activation(encoder, folder, where)
    _check_heads_divide(encoder, folder, where)
    return encoder


def check_plain_sizes(config: Mapping[str, Any], folder: Path, where: str = "encoder.") -> dict[str, Any]:
    """What :func:`check_sizes` checks without transformers' classes: the sizes, rates, dtypes, padding id, and heads
    that divide the hidden size where the config gives both (one left out takes its class's default, read there)."""
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
    _check_heads_divide(encoder, folder, where, class_defaults=False)
    return encoder


def _check_heads_divide(encoder: Mapping[str, Any], folder: Path, where: str, class_defaults: bool = True) -> None:
    """``hidden_size`` is a multiple of ``num_attention_heads``, either left out taking its class's default (BERT's
    768 and 12): named here, as transformers names neither field nor that one fell to a default. Without
    ``class_defaults``, only a config giving both is checked: the defaults are read from transformers' config classes,
    which import torch."""
    names = ("hidden_size", "num_attention_heads")
    both = all(name in encoder for name in names)
    if not any(name in encoder for name in names) or (not class_defaults and not both):
        return
    defaults = {} if both else _config_defaults(encoder.get("model_type"))
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
