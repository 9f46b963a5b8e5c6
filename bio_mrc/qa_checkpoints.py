"""Extractive question-answering models of transformers (``BertForQuestionAnswering`` and its kin: an encoder and
one ``qa_outputs`` layer of start and end logits) as span-only bio_mrc models.

Such a model's ``qa_outputs`` is the span head's ``Linear(H, 2)`` exactly, start logits first, on the same encoder
output; so the bio_mrc model built here from its encoder and that layer computes the same logits, and every door of
the package (``predict``, ``extract``, ``serve``, :class:`~bio_mrc.inference.extract.AnswerExtractor`, ONNX export)
answers with it through the span decoding: n-best, a maximum answer length, several documents, multi-span n-best.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn
from transformers import AutoConfig, AutoModel, AutoModelForQuestionAnswering, PreTrainedModel

from .encoders import as_data, load_tokenizer
from .errors import ConfigError, ModelFormatError
from .json_syntax import json_value
from .model import BioMrcConfig, BioMrcForQuestionAnswering, check_weight_values
from .model_defaults import QA_WINDOWS, qa_windows, window_positions, windows_that_fit  # noqa: F401 (by name)
from .model_folder import (QA_HEADS, check_bidirectional, check_file_kinds, check_model_type_named,
                           check_qa_files, check_sizes, check_weights_fit, expected_shapes, meta_build, one_build,
                           qa_architecture, read_json_object, saved_config, weight_shapes)
from .progress import transformers_quiet

QA_LAYER = "qa_outputs"
ENCODER_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# A question and context whose logits must be the same through the QA model's own forward pass and the bio_mrc model's.
CHECK_QUESTION, CHECK_CONTEXT = "Who wrote the first program?", "The first program was written by Ada Lovelace in 1843."
LOGIT_TOLERANCE = 1e-3
# Saved tensors a QA class does not build and never reads: a pooler saved with the encoder, position ids buffers.
IGNORED_WEIGHTS = ("pooler.", "position_ids")


def check_qa_folder(folder: Path) -> dict[str, Any]:
    """The checks every model folder gets before anything is built (:mod:`bio_mrc.model_folder`), for a QA model's:
    its config's sizes within bounds; weights that are exactly those its QA class builds from the config, with their
    shapes (transformers would fill a missing one with random values); tokenizer files; a bidirectional encoder, not a
    decoder (GPT-2's QA model) or an encoder-decoder (T5's). Returns its config."""
    check_file_kinds(folder)
    config = read_json_object(folder, "config.json")
    check_model_type_named(config, folder, where="")
    check_sizes({"encoder": config}, folder, where="")  # the file is the encoder's config, as convert names it
    check_bidirectional(config, folder)  # a GPT-2 or T5 QA model: its encoder reads no window as bio_mrc's do
    read = [weight_shapes(folder), expected_shapes(_qa_class(config, folder), config, folder)]
    found, expected = ({name: shape for name, shape in shapes.items() if not any(part in name for part in IGNORED_WEIGHTS)}
                       for shapes in read)
    check_weights_fit(folder, found, expected)
    check_qa_files(folder, headers_read=True)  # its tokenizer, as convert checks it before torch loads
    return config


def _qa_class(config: dict, folder: Path) -> type:
    """The class transformers builds for the config's ``model_type`` as an extractive QA model."""
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES

    name = MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES.get(str(config.get("model_type")))
    if name is None or not hasattr(transformers, name):
        raise ModelFormatError(f"config.json: transformers {transformers.__version__} has no extractive QA model for "
                               f"model_type {json_value(config.get('model_type'))}", str(folder))
    return getattr(transformers, name)


def span_model_from_qa_checkpoint(folder: Path, name: str | None = None, **windows: int | None) -> tuple[BioMrcForQuestionAnswering, Any]:
    """The span-only bio_mrc model of the extractive QA model saved in ``folder`` (:func:`span_model_from_qa_model`)
    and its fast tokenizer, the folder checked first (:func:`check_qa_folder`); ``name``: how its user named it (a hub
    id), which the config records as the encoder's source."""
    vocab_size = check_qa_folder(folder)["vocab_size"]
    tokenizer = load_tokenizer(str(folder))
    if max(tokenizer.get_vocab().values(), default=0) >= vocab_size:
        raise ModelFormatError(f"its tokenizer maps tokens to ids up to {max(tokenizer.get_vocab().values())}, past the "
                               f"encoder's vocab_size {vocab_size} (config.json): the tokenizer is not this model's", str(folder))
    try:
        with as_data(str(folder)), transformers_quiet(), one_build():  # its load report names the pooler it leaves out, which is checked
            source = AutoModelForQuestionAnswering.from_pretrained(str(folder), dtype=torch.float32, trust_remote_code=False)
    except (OSError, RuntimeError, ValueError, TypeError, KeyError, AttributeError) as err:
        if isinstance(err, ModelFormatError):
            raise
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise ModelFormatError(f"transformers could not load it: {first[:300]}", str(folder)) from None
    source.config._name_or_path = name or str(folder)
    return span_model_from_qa_model(source, tokenizer, **windows), tokenizer


def span_model_from_qa_model(source: PreTrainedModel, tokenizer, **windows: int | None) -> BioMrcForQuestionAnswering:
    """The span-only bio_mrc model of an extractive QA model of transformers, in fp32 and eval mode: its encoder, and
    its ``qa_outputs`` layer as the span head; its window settings those :func:`qa_windows` gives. A model whose start and end
    logits are not one such layer on the encoder's output is refused, and so is one whose logits on a question and
    context read with ``tokenizer`` are not the bio_mrc model's (:func:`check_same_logits`)."""
    where = str(source.config._name_or_path or type(source).__name__)
    layer = getattr(source, QA_LAYER, None)
    encoder = getattr(source, source.base_model_prefix, None)
    hidden = getattr(source.config, "hidden_size", None)
    if not isinstance(layer, nn.Linear) or (layer.out_features, layer.in_features) != (2, hidden) or encoder is None:
        raise ModelFormatError(
            f"a {type(source).__name__}, whose start and end logits are not one {QA_LAYER} layer on the encoder's "
            "output; bio_mrc answers with models of that form (BERT, RoBERTa, DistilBERT, ALBERT, ELECTRA, DeBERTa and "
            "their kin) or trains one: bio-mrc train --encoder PATH", where)
    settings = qa_windows(source.config, _tokenizer_limit(getattr(tokenizer, "model_max_length", None)),
                          positions=usable_positions(encoder), **windows)
    config = BioMrcConfig(encoder=source.config.to_dict(), heads=QA_HEADS, **settings)
    model = BioMrcForQuestionAnswering(config)
    missing, unexpected = model.encoder.load_state_dict(encoder.state_dict(), strict=False)
    unexpected = [name for name in unexpected if not any(part in name for part in IGNORED_WEIGHTS)]  # FNet's QA pooler
    if missing or unexpected:
        raise ModelFormatError(f"its encoder's weights do not fit a {type(encoder).__name__} "
                               f"(missing {missing[:3]}, unexpected {unexpected[:3]})", where)
    model.span_head.qa_outputs.load_state_dict(layer.state_dict())
    model = model.float().eval()
    check_weight_values(model, where)
    check_same_logits(source, model, tokenizer, where)
    check_encoder_runs(model, tokenizer, model.config.max_seq_length, where, refuse=lambda problem: ModelFormatError(
        f"its encoder ({type(model.encoder).__name__}) {problem}; bio_mrc cannot answer with it", where))
    return model


def _tokenizer_limit(length: Any) -> int | None:
    """A tokenizer's ``model_max_length`` where it is a limit (transformers writes 10**30 for none)."""
    return length if isinstance(length, int) and not isinstance(length, bool) and 0 < length < 10**6 else None


def check_qa_windows(folder: Path, **windows: int | None) -> None:
    """:func:`qa_windows` of the QA model saved in ``folder`` from its config and tokenizer settings alone (no weight
    read), so window settings it cannot take are refused before any work; the conversion checks them again."""
    try:
        saved = read_json_object(folder, "tokenizer_config.json").get("model_max_length")
    except ModelFormatError:  # none, or one the load names itself
        saved = None
    qa_windows(None, _tokenizer_limit(saved), positions=encoder_positions(str(folder)), **windows)


def usable_positions(encoder: nn.Module) -> int | None:
    """The positions a window may fill: ``max_position_embeddings``, less the ids below the first position in
    encoders that number positions from after their padding id (RoBERTa and its kin, MPNet: their position table has
    that padding id; XLM's ``embeddings``, its word table, has a padding id of its own). None: no limit known."""
    positions = getattr(encoder.config, "max_position_embeddings", None)
    if not isinstance(positions, int) or positions < 1:
        return None
    table = getattr(getattr(encoder, "embeddings", None), "position_embeddings", None)
    padding = getattr(table, "padding_idx", None)
    return window_positions(positions, padding)  # the rule config_window_positions reads from config.json


def encoder_positions(encoder: str) -> int | None:
    """:func:`usable_positions` of the encoder saved in the folder ``encoder``, built from its config on the meta
    device (no weights read, nothing allocated), so windows it cannot fill are refused before any work. None where
    its config cannot be built so (the encoder's own load says why, later)."""
    try:
        with as_data(encoder):
            config = AutoConfig.from_pretrained(encoder, trust_remote_code=False)
    except Exception:  # noqa: BLE001 - a check ahead of the load, which reports the folder's problem itself
        return None
    return config_positions(config)


def config_positions(config: Any) -> int | None:
    """:func:`usable_positions` of an encoder built from ``config`` on the meta device (no weight initialised); None
    where it cannot be built so."""
    try:
        with meta_build():
            return usable_positions(AutoModel.from_config(config))
    except Exception:  # noqa: BLE001 - a check ahead of the load, which reports the encoder's problem itself
        return None


def check_encoder_runs(model: BioMrcForQuestionAnswering, tokenizer, length: int, where: str,
                       refuse: Callable[[str], Exception] | None = None) -> None:
    """Refuse an encoder that cannot run on the windows training makes: two windows, a whole one of ``length`` tokens
    and a short one padded to it (an encoder that needs inputs of one fixed length, or whose attention does not take a
    padding mask, such as a Nystromformer with fewer landmarks than its segment length), or whose logits for the short
    window change with the tokens of its padding (:func:`check_padding_unread`), before any window is cut. ``refuse`` makes the
    error of a problem (default: a ConfigError, as training refuses the encoder)."""
    named = f"encoder {where} ({type(model.encoder).__name__})"
    refuse = refuse or (lambda problem: ConfigError(f"{named} {problem}; bio_mrc cannot train it"))
    context = " ".join([CHECK_CONTEXT] * (length // 4 + 1))
    try:
        batch = tokenizer([CHECK_QUESTION] * 2, [context, CHECK_CONTEXT.split()[0]], truncation="only_second",
                          max_length=length, padding=True, return_tensors="pt")
    except Exception:  # noqa: BLE001 - a window too short for the question is refused by the window checks, in their words
        return
    inputs = {key: value.to(model.device) for key, value in batch.items() if key in ENCODER_INPUTS}
    training = model.training
    try:
        with torch.inference_mode():
            outputs = model.eval()(**_padding_refilled(inputs))
    except (IndexError, RuntimeError, AssertionError, ValueError, TypeError) as err:
        raise refuse(f"does not run on padded windows of {length} tokens "
                     f"({type(err).__name__}: {(str(err).strip().splitlines() or [''])[0][:200]})") from None
    finally:
        model.train(training)
    if "attention_mask" in inputs:
        check_padding_unread(outputs, inputs["attention_mask"][1].bool(), refuse)


def _padding_refilled(inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The two windows and a third: the short one with the whole one's tokens in place of its padding, its mask and
    length unchanged (an encoder that changes its attention with the length, as BigBird does, runs all alike); the two
    alone where the tokenizer makes no attention mask."""
    if "attention_mask" not in inputs:
        return inputs
    refilled = {key: torch.cat([value, value[1:2]]) for key, value in inputs.items()}
    refilled["input_ids"][2] = torch.where(inputs["attention_mask"][1].bool(), inputs["input_ids"][1], inputs["input_ids"][0])
    return refilled


def check_padding_unread(outputs: Any, real: torch.Tensor, refuse: Callable[[str], Exception]) -> None:
    """Refuse an encoder whose logits for the batch's short window (its tokens ``real``) change with the tokens of the
    padding after it, the third window (FNet mixes every position and takes no attention mask): its answers would
    depend on the batch."""
    differences = [float((value[1, real] - value[2, real]).abs().max())
                   for name, value in outputs.items() if name.endswith("_logits")]
    if max(differences, default=0.0) > LOGIT_TOLERANCE:
        raise refuse(f"reads the padding after a window: a window of {int(real.sum())} tokens padded to {len(real)} has "
                     f"logits up to {max(differences):.3g} apart as its padding's tokens change (the padding mask is not "
                     "applied), so an answer would depend on the windows batched with it")


def check_same_logits(source: PreTrainedModel, model: BioMrcForQuestionAnswering, tokenizer, where: str) -> None:
    """Refuse a QA model whose own forward pass computes its start and end logits otherwise than its encoder and
    ``qa_outputs`` do (attention it sets itself, masks, another head), on one question and a context of real tokens
    filling a whole window (so a window its positions do not hold is refused here too). ``source`` is left as it was."""
    length = model.config.max_seq_length
    try:
        batch = tokenizer([CHECK_QUESTION], [" ".join([CHECK_CONTEXT] * (length // 4 + 1))], truncation="only_second",
                          max_length=length, return_tensors="pt")
    except Exception as err:  # noqa: BLE001 - tokenizers raises its own Exception when a window cannot hold the question
        raise ModelFormatError(f"a window of {length} tokens cannot hold a question and context ({str(err).strip()[:200]}); "
                               "give a longer max_seq_length", where) from None
    reference = source if source.dtype == torch.float32 and not source.training else copy.deepcopy(source).float().eval()
    inputs = {key: value.to(source.device) for key, value in batch.items() if key in ENCODER_INPUTS}
    try:
        with torch.inference_mode():
            expected, got = reference(**inputs), model.to(source.device)(**inputs)
    except (IndexError, RuntimeError, AssertionError, ValueError, TypeError) as err:
        raise ModelFormatError(f"a question and context of a whole window ({length} tokens) do not run through it "
                               f"({type(err).__name__}: {str(err).strip()[:200]}); a window it holds, a tokenizer that "
                               "reads pairs as it was trained to, or a model of another class", where) from None
    differences = [float((getattr(expected, name) - getattr(got, name)).abs().max()) for name in ("start_logits", "end_logits")]
    if max(differences) > LOGIT_TOLERANCE:
        raise ModelFormatError(
            f"a {type(source).__name__}, whose start and end logits differ from its encoder's and {QA_LAYER}' by up to "
            f"{max(differences):.3g}: its own forward pass computes them otherwise, which bio_mrc does not follow", where)


def qa_model_from_span_model(model: BioMrcForQuestionAnswering, tokenizer, where: str) -> PreTrainedModel:
    """transformers' ``...ForQuestionAnswering`` of ``model``'s encoder, its ``qa_outputs`` the span head, in eval mode;
    its logits checked against ``model``'s (:func:`check_same_logits`). An encoder of a class transformers has no
    such model for, or whose QA model has no ``qa_outputs`` layer, is refused."""
    encoder_config = copy.deepcopy(model.config.encoder)
    try:
        with one_build():
            qa = AutoModelForQuestionAnswering.from_config(encoder_config)
    except ValueError as err:
        raise ConfigError(f"transformers has no extractive QA model for a {type(encoder_config).__name__} encoder "
                          f"({str(err).strip().splitlines()[0][:200]})") from None
    layer, encoder = getattr(qa, QA_LAYER, None), getattr(qa, qa.base_model_prefix, None)
    if not isinstance(layer, nn.Linear) or encoder is None:
        raise ConfigError(f"{where}: transformers' {type(qa).__name__} computes its start and end logits otherwise than "
                          f"with one {QA_LAYER} layer on its encoder, so the span head has no place in it; an ONNX "
                          "export serves runtimes without bio_mrc")
    missing, unexpected = encoder.load_state_dict(model.encoder.state_dict(), strict=False)
    if [k for k in missing if "pooler" not in k] or unexpected:
        raise ConfigError(f"the encoder's weights do not fit {type(qa).__name__} (missing {missing[:3]}, unexpected {unexpected[:3]})")
    layer.load_state_dict(model.span_head.qa_outputs.state_dict())
    qa = qa.float().eval()
    check_same_logits(qa, model, tokenizer, where)
    return qa


def reading_inputs(model: BioMrcForQuestionAnswering, tokenizer):
    """``tokenizer`` making only the inputs ``model``'s encoder reads (a shallow copy where it makes more): a tokenizer
    that makes token types 0 and 1 for an encoder of one type (``type_vocab_size`` 1, a RoBERTa model with a BERT
    tokenizer), which bio_mrc's model leaves out, would send type 1 into transformers' QA model of that encoder, whose
    type embedding has no row for it. Saved with the export, so every tool that tokenizes for it makes no types."""
    names = list(tokenizer.model_input_names)
    if model.takes_token_types or "token_type_ids" not in names:
        return tokenizer
    tokenizer = copy.copy(tokenizer)
    tokenizer.model_input_names = [name for name in names if name != "token_type_ids"]
    tokenizer.init_kwargs = {**tokenizer.init_kwargs, "model_input_names": tokenizer.model_input_names}
    return tokenizer


def is_qa_model(model: object) -> bool:
    """Whether ``model`` is one of transformers' extractive QA models (not a bio_mrc one)."""
    return isinstance(model, PreTrainedModel) and not isinstance(model, BioMrcForQuestionAnswering) \
        and type(model).__name__.endswith("ForQuestionAnswering")


__all__ = ["QA_WINDOWS", "check_qa_folder", "check_qa_windows", "check_same_logits", "encoder_positions", "is_qa_model",
           "qa_architecture", "qa_windows", "saved_config", "qa_model_from_span_model", "reading_inputs",
           "span_model_from_qa_checkpoint", "span_model_from_qa_model"]
