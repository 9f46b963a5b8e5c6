"""``BioMrcForQuestionAnswering``: any ``AutoModel`` encoder with a span head, a BIO head, or both."""

from __future__ import annotations

import functools
import inspect
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import AutoConfig, AutoModel, AutoModelForQuestionAnswering, PreTrainedConfig, PreTrainedModel
from transformers.configuration_utils import SubConfigSpec
from transformers.utils import ModelOutput

from . import model_defaults, registry
from .encoders import as_data
from .errors import ConfigError, InputNote, InputWarning, ModelFormatError
from .fp32_attention import ATTENTION_NAME as TRAINING_ATTENTION
from .model_defaults import MODEL_FORMAT  # noqa: F401 (the layout of a saved model folder; imported from here too)
from .model_folder import MAX_WEIGHT_MAGNITUDE, RUN_FILE, check_model_folder  # noqa: F401 (RUN_FILE imported from here too)
from .model_folder import building_on_meta, one_build
from .plurals import counted, first_few, number_form
from .progress import progress_bars, transformers_quiet

WINDOW_SETTINGS = ("max_seq_length", "doc_stride", "max_query_length")
# Where encoder configs keep their dropout rates, by the names transformers' model families use
# (BERT, RoBERTa, ELECTRA, MiniLM: *_prob; DistilBERT: attention_dropout and dropout; ModernBERT: its embedding
# and MLP dropout).
ENCODER_DROPOUT_ATTRIBUTES = {
    "attention": ("attention_probs_dropout_prob", "attention_dropout"),
    "hidden": ("hidden_dropout_prob", "dropout", "hidden_dropout", "embedding_dropout", "mlp_dropout"),
}


class BioMrcConfig(PreTrainedConfig):
    """Configuration is data: which heads, how their losses are weighted, the windows the model
    reads, tuned decoding settings; ``from_pretrained`` alone can run a saved model.

    ``max_seq_length``, ``doc_stride`` and ``max_query_length`` are the window
    settings it was trained with (and is run with); ``tag_level`` says which
    tokens its BIO head tags, ``word_units`` which words (a config without it: the
    tokenizer's words, as every model had before the setting; a fresh model: punctuation apart).

    ``no_answer_thresholds`` maps a no-answer score (``threshold_key``: ``"span"``,
    ``"bio/ratio"``, ``"joint"``) to the threshold tuned on held-out questions and
    ``bio_length_prior`` is the BIO decoding's tuned span-length prior; both are
    saved with the model so that ``predict``, ``compare`` and ``AnswerExtractor``
    apply the same values; ``max_answer_length`` is the decodings' answer-length limit in tokens, set at training to
    the length 99% of the training answer spans fit, at least 30 (None: trained before it was saved; the decodings
    read 30); ``calibration`` maps each decoding's raw confidence to the
    probability that its answer is right (``bio_mrc.inference.calibrators``); ``min_span_probabilities`` maps a
    decoding to the probability a span after the first needs to join its multi-span answer, tuned on multi-span
    questions (``bio_mrc.inference.span_count``). ``tuned_on`` says on which questions they were tuned
    (``{"description", "questions", "content_hash"}``, and ``"for_model"`` where they were tuned for a model this one
    continues, ``init_from``). ``bio_mrc_format`` is the folder
    layout's version.
    """

    model_type = "bio_mrc"
    sub_configs_defaults = {"encoder": SubConfigSpec(config_class=AutoConfig, model_type="bert")}

    encoder: PreTrainedConfig | dict | None = None
    heads: str = model_defaults.HEADS
    span_loss_weight: float = model_defaults.SPAN_LOSS_WEIGHT
    bio_loss_weight: float = model_defaults.BIO_LOSS_WEIGHT
    bio_loss_reduction: str = model_defaults.BIO_LOSS_REDUCTION
    bio_prior: tuple | list | None = model_defaults.BIO_PRIOR
    bio_class_weights: list | None = None  # (w_B, w_I, w_O) in the BIO loss; None = the plain loss
    # Which tokens the BIO head tags: "word" (first piece of each word) or "subword" (every token).
    tag_level: str = "word"
    # Which words "word" tags live on (bio_mrc.features.words.context_words); absent: the rule before the setting.
    word_units: str = model_defaults.WORD_UNITS_WHEN_ABSENT
    head_dropout: float = 0.1
    max_seq_length: int | None = None
    doc_stride: int | None = None
    max_query_length: int | None = None
    no_answer_thresholds: dict | None = None
    bio_length_prior: float | None = None  # the BIO decoding's span-length prior, tuned on held-out questions
    max_answer_length: int | None = None  # the decodings' answer-length limit in tokens, from the training answers
    calibration: dict | None = None  # per decoding: the beta calibration of raw confidence to P(answer right)
    min_span_probabilities: dict | None = None  # per decoding: its multi-span answers' span-count rule, tuned on multi-span questions
    tuned_on: dict | None = None
    bio_mrc_format: int = MODEL_FORMAT

    @property
    def head_names(self) -> list[str]:
        """The registered heads ``heads`` names (``span+bio``: span, bio)."""
        return registry.head_names(self.heads)

    @property
    def keys_to_ignore_at_inference(self) -> list[str]:
        """What ``Trainer`` leaves out of its predictions: each head's loss, so that they are the heads' logits alone
        (``start_logits``, ``end_logits``, ``bio_logits``), not a scalar per batch in front of them."""
        return [f"{name}_loss" for name in registry.HEADS]


@dataclass(init=False)
class BioMrcOutput(ModelOutput):
    """The weighted loss, each head's loss and logits, and what the encoder was asked to return.

    Each head's logits are named as its registry entry's ``outputs`` name them (``start_logits``,
    ``end_logits``, ``bio_logits``), and its loss ``<head>_loss`` (``span_loss``, ``bio_loss``): read them
    as attributes or keys. A name a registered head declares but this model lacks reads None, as a
    missing field does. ``hidden_states`` and ``attentions`` are the encoder's, per layer, when
    ``output_hidden_states``/``output_attentions`` ask for them. ``to_tuple()`` holds what is set, in the
    order loss, each head's loss, each head's logits, hidden states, attentions.
    """

    loss: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None

    def __init__(self, loss: torch.Tensor | None = None, hidden_states: tuple[torch.Tensor, ...] | None = None,
                 attentions: tuple[torch.Tensor, ...] | None = None, **heads_outputs: torch.Tensor | None) -> None:
        super().__init__()
        if isinstance(loss, Mapping):  # type(output)(mapping): how accelerate and pytrees rebuild a ModelOutput
            values = dict(loss)
            loss, hidden_states, attentions = (values.pop(name, None) for name in ("loss", "hidden_states", "attentions"))
            heads_outputs = {**values, **heads_outputs}
        for name, value in (("loss", loss), *heads_outputs.items(), ("hidden_states", hidden_states), ("attentions", attentions)):
            if value is not None:
                self[name] = value  # a key and an attribute, as ModelOutput's fields are
        for name in ("loss", "hidden_states", "attentions"):
            object.__setattr__(self, name, self.get(name))

    def __getattr__(self, name: str) -> Any:
        if name in _declared_names():
            return None
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    @property
    def head_losses(self) -> dict[str, torch.Tensor]:
        """Each head's own loss (before its weight), by head name."""
        return {name: self[f"{name}_loss"] for name in registry.HEADS if f"{name}_loss" in self}

    @property
    def logits(self) -> dict[str, torch.Tensor]:
        """Every head's logits, by the names their entries give them."""
        return {name: self[name] for name in registry.head_outputs() if name in self}


def _declared_names() -> set[str]:
    """The output and loss names of every registered head."""
    return {*registry.head_outputs(), *(f"{name}_loss" for name in registry.HEADS)}


class FreshHeadsNote(InputNote):
    """A model loaded with a head its saved weights hold none of (``heads=``; ``bio-mrc train --init-from`` a model of
    other heads): that head starts from fresh weights, as on a new encoder."""


def note_fresh_heads(model: "BioMrcForQuestionAnswering", missing: Sequence[str], source: str) -> None:
    """One :class:`FreshHeadsNote` naming the heads of ``model`` whose weights are among ``missing`` (the keys
    transformers found no saved weights for), in the caller's line; nothing where none is."""
    fresh = [name for name in model.heads if name in registry.HEADS and any(_weight_of(name, key) for key in missing)]
    if fresh:
        heads, count = " and ".join(fresh), len(fresh)
        warnings.warn(FreshHeadsNote(f"{source} has no {heads} {number_form(count, 'head')}: "
                                     f"{number_form(count, 'it starts', 'they start')} from fresh weights"), stacklevel=3)


def _weight_of(head: str, key: str) -> bool:
    """Whether ``key`` names a weight of the registered head ``head``."""
    return key.startswith(f"{registry.HEADS[head].attribute}.")


def _head_weight(model: "BioMrcForQuestionAnswering", key: str) -> bool:
    """Whether ``key`` names a weight of one of ``model``'s heads."""
    return any(_weight_of(name, key) for name in model.heads if name in registry.HEADS)


def check_missing_weights(model: "BioMrcForQuestionAnswering", missing: Sequence[str], checked: bool, source: str) -> None:
    """Refuse a load whose saved weights lack what the model needs: anything at all where the folder was ``checked``
    to fit (another process changed it since), else a weight of no head (a head may start fresh; the encoder's would
    answer from random values, and a hub id has no folder check before the load)."""
    if checked and missing:
        raise ModelFormatError(f"its saved weights lack {', '.join(sorted(missing)[:3])}, which they held when checked: "
                               "its files changed while they were read", source)
    unsaved = sorted(key for key in missing if not _head_weight(model, key))
    if unsaved:
        raise ModelFormatError(f"its saved weights lack {counted(len(unsaved), 'tensor')} the config implies "
                               f"({first_few(unsaved)}): they would start from random values", source)


class UnsavedEncoderWeightsWarning(InputWarning):
    """An encoder checkpoint holds no saved values for some of its encoder's weights (a pooler aside, which the heads
    never read): those start from random values."""


def warn_unsaved_encoder_weights(missing: Sequence[str], source: str) -> None:
    """One :class:`UnsavedEncoderWeightsWarning` naming the first few of ``missing`` that are not the pooler's."""
    unsaved = sorted(key for key in missing if "pooler" not in key)
    if unsaved:
        warnings.warn(UnsavedEncoderWeightsWarning(
            f"encoder {source} holds no saved values for {counted(len(unsaved), 'weight')} ({first_few(unsaved)}): "
            f"{number_form(len(unsaved), 'it starts', 'they start')} from random values"), stacklevel=3)


class BioMrcForQuestionAnswering(PreTrainedModel):
    """Encoder + heads (each registered head the config's ``heads`` names, under its entry's ``attribute``).
    ``forward`` computes each head's loss when its labels are given, weighted by its entry's ``loss_weight``.

    Labels are those the heads' registry entries name: ``start_positions``/``end_positions`` (integers or
    distributions over positions) for the span head; ``bio_targets`` ((batch, seq, 3) distributions,
    (batch, seq) integer tags or (batch, seq, K) tags of K annotators) for the BIO
    head, which is scored on ``tag_mask`` (the tokens that carry a tag: the first
    piece of each paragraph word at word level), or on ``paragraph_mask`` when
    no ``tag_mask`` is given.
    """

    config_class = BioMrcConfig
    base_model_prefix = "encoder"
    supports_gradient_checkpointing = True
    accepts_loss_kwargs = False  # forward's keywords are the heads' labels: Trainer passes no num_items_in_batch

    def __init__(self, config: BioMrcConfig) -> None:
        super().__init__(config)
        names = config.head_names  # heads that cannot go together are refused before the encoder is built
        # On the meta device (from_pretrained's build, the folder checks') no init function draws a value: none runs.
        with one_build(skip_init=building_on_meta()):
            self.encoder = _encoder_from_config(config.encoder)
            hidden = config.encoder.hidden_size
            for name, entry in registry.HEADS.items():  # each under its registered attribute: the weights' names
                if hasattr(self, entry.attribute):  # "encoder", "config": the model's own, which the head would replace
                    raise ValueError(f"head {name!r}: its attribute {entry.attribute!r} is the model's own; give its "
                                     "registry entry another attribute")
                setattr(self, entry.attribute, registry.resolve(entry.build)(config, hidden) if name in names else None)
            self.post_init()
        BioMrcForQuestionAnswering.forward.__signature__ = forward_signature()  # a head registered since import too
        for head in self.heads.values():
            head.reset_bias()  # post_init zeroed it; loaded checkpoints overwrite it anyway

    # The heads hold no attention of their own: the model runs whichever attention kernels its encoder runs,
    # so from_pretrained(..., attn_implementation="sdpa" | "eager" | ...) reaches the encoder through its sub-config.
    @property
    def _supports_sdpa(self) -> bool:
        return _encoder_class(self.config.encoder)._supports_sdpa

    @property
    def _supports_flash_attn(self) -> bool:
        return _encoder_class(self.config.encoder)._supports_flash_attn

    @property
    def _supports_flex_attn(self) -> bool:
        return _encoder_class(self.config.encoder)._supports_flex_attn

    # Plain init for the heads; the encoder's own modules keep their pretrained weights.
    def _init_weights(self, module: torch.nn.Module) -> None:
        if isinstance(module, torch.nn.Linear):
            std = getattr(self.config.encoder, "initializer_range", 0.02)
            module.weight.data.normal_(0.0, std)
            if module.bias is not None:
                module.bias.data.zero_()
            for head in self.heads.values():  # a head's layer the checkpoint lacks (from_pretrained(..., heads=...)):
                if any(layer is module for layer in head.modules()):  # the head starts at its bias, as a fresh one does
                    head.reset_bias()
        elif hasattr(self.encoder, "_init_weights") and module is not self:
            self.encoder._init_weights(module)

    @classmethod
    def from_encoder(
        cls, encoder_name_or_path: str, encoder_dropout: dict[str, float | None] | None = None, **config_kwargs: Any
    ) -> "BioMrcForQuestionAnswering":
        """Fresh heads on a pretrained encoder (``encoder_name_or_path``: a local folder or a hub id), in fp32 whatever the
        saved weights' dtype: an fp16 copy of an encoder (half the bytes to carry) trains in fp32 or under bf16 autocast.
        ``encoder_dropout`` sets the encoder's ``attention``/``hidden`` dropout rates (see ``set_encoder_dropout``).
        Quiet: transformers' bar of the encoder's weights and its load report (a pretraining head left out, a pooler
        the heads never read) stay hidden, and the caller's settings of them are kept; encoder weights the checkpoint
        lacks are one :class:`UnsavedEncoderWeightsWarning`."""
        with as_data(encoder_name_or_path), progress_bars(False), transformers_quiet(), one_build():  # a library call
            encoder, info = AutoModel.from_pretrained(encoder_name_or_path, dtype=torch.float32, trust_remote_code=False,
                                                      output_loading_info=True)
        warn_unsaved_encoder_weights(info["missing_keys"], str(encoder_name_or_path))
        set_encoder_dropout(encoder.config, **(encoder_dropout or {}))
        config = BioMrcConfig(encoder=encoder.config.to_dict(), **{"word_units": model_defaults.WORD_UNITS_NOW, **config_kwargs})
        model = cls(config)
        missing, unexpected = model.encoder.load_state_dict(encoder.state_dict(), strict=False)
        if [k for k in missing if "pooler" not in k] or [k for k in unexpected if "pooler" not in k]:
            raise ValueError(f"encoder weights of {encoder_name_or_path} do not fit: {missing[:5]} {unexpected[:5]}")
        return model

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: Any, *args: Any, checked: Mapping[str, Any] | None = None,
                        shown_as: str | None = None, **kwargs: Any) -> "BioMrcForQuestionAnswering":
        """``PreTrainedModel.from_pretrained`` that treats the folder as data (:func:`bio_mrc.encoders.as_data`),
        checks a local folder first (:func:`bio_mrc.model_folder.check_model_folder`: sizes, weights that fit the
        config, a tokenizer that fits the vocabulary) and refuses NaN or infinite weights, which would answer "" to every question without a word.
        ``checked``: the ``config.json`` that check returned where the caller has run it (with this class): the folder
        is not checked again, and the config is built from it, not read again (weights lacking what it names are a folder
        changed since, refused). transformers' load report stays hidden: a head asked for (``heads=``, a ``config``)
        that the saved model has none of is one :class:`FreshHeadsNote`, a saved head left out is what was asked, and
        saved weights lacking any other tensor (a hub id's, which no folder check reads first) are refused. ``shown_as``:
        the model's name in that note (a hub id as given, where the path is its cached snapshot); None: the path."""
        folder = Path(str(pretrained_model_name_or_path))
        if folder.is_dir() and checked is None:  # a local folder is checked whole before anything is built (a hub id's weights once loaded)
            check_model_folder(folder, cls, tokenizer_required=False)
        try:
            if checked is not None:  # built here: a config transformers refuses is named as when it reads the file
                kwargs["config"] = cls.config_class.from_dict(dict(checked))
            asked_info = kwargs.pop("output_loading_info", False)
            with as_data(pretrained_model_name_or_path), transformers_quiet(), one_build():  # built on meta: no init
                model, info = super().from_pretrained(pretrained_model_name_or_path, *args, output_loading_info=True, **kwargs)
        except (RuntimeError, ValueError, TypeError, KeyError, AttributeError) as err:
            if not folder.is_dir() or isinstance(err, ModelFormatError):
                raise
            first = (str(err).strip().splitlines() or [type(err).__name__])[0]
            raise ModelFormatError(f"transformers could not load it: {first[:300]}", str(folder)) from None
        check_missing_weights(model, info["missing_keys"], checked is not None, str(folder))
        check_weight_values(model, str(pretrained_model_name_or_path))
        note_fresh_heads(model, info["missing_keys"], shown_as or str(pretrained_model_name_or_path))
        return (model, info) if asked_info else model

    @functools.cached_property
    def takes_token_types(self) -> bool:
        """Whether the encoder reads token types: its forward takes them and it has more than one type. A tokenizer
        may make types 0 and 1 for an encoder of a single type (a RoBERTa model paired with a BERT tokenizer),
        whose embedding has no row for type 1. An encoder whose config counts no types reads them only where it has a
        table of them: XLM's and FlauBERT's forward takes ``token_type_ids`` but looks them up in the word embeddings.
        Read once: every forward pass asks."""
        accepted = "token_type_ids" in inspect.signature(self.encoder.forward).parameters
        types = getattr(self.encoder.config, "type_vocab_size", None)
        if types is None:  # no count: a table of its own says the encoder has segments (XLM has none)
            return accepted and any(name.endswith("token_type_embeddings") for name, _ in self.encoder.named_modules())
        return accepted and types > 1

    @property
    def heads(self) -> dict[str, torch.nn.Module]:
        """The model's heads by name."""
        present = ((name, getattr(self, entry.attribute, None)) for name, entry in registry.HEADS.items())
        return {name: head for name, head in present if head is not None}

    def resize_token_embeddings(self, *args: Any, **kwargs: Any) -> torch.nn.Embedding:
        """transformers' resize, with the new size written where the model is rebuilt from: ``config.encoder``'s
        ``vocab_size`` (transformers writes it at the top of the config, which builds no encoder), so the saved
        folder loads back."""
        embeddings = super().resize_token_embeddings(*args, **kwargs)
        self.config.encoder.vocab_size = self.get_input_embeddings().weight.shape[0]
        return embeddings

    def head_parameters(self) -> list[torch.nn.Parameter]:
        """Parameters of the heads (not the encoder), e.g. for their own learning rate."""
        return [p for head in self.heads.values() for p in head.parameters()]

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        paragraph_mask: torch.Tensor | None = None,
        tag_mask: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **labels: torch.Tensor | None,
    ) -> BioMrcOutput | tuple[torch.Tensor, ...]:
        """Logits, and the losses of the heads whose labels are given.

        ``input_ids``: (batch, seq) token ids of the windows; ``attention_mask``: 1 on real tokens, 0 on padding (None:
        every token); ``token_type_ids``: the segment ids, passed on where the encoder reads them
        (:attr:`takes_token_types`). ``paragraph_mask``: the context tokens, ``tag_mask``: those that carry a tag (the first piece of each
        paragraph word at word level); the BIO head's loss is scored on ``tag_mask``, else ``paragraph_mask``.
        ``labels``: those the registered heads' entries name (``start_positions``, ``end_positions``,
        ``bio_targets``, ...); any other keyword is a TypeError, so a misspelled label (``bio_target=``) is
        refused, not a loss silently left out, and so is a head given part of its labels (and Trainer passes no ``num_items_in_batch``:
        ``accepts_loss_kwargs``). As in transformers, ``output_attentions``/``output_hidden_states`` go to the
        encoder, unset they are the model config's, and ``return_dict=False`` returns ``BioMrcOutput.to_tuple()`` (what is set).
        """
        if unknown := sorted(set(labels) - set(registry.head_labels())):
            raise TypeError(f"forward() got unexpected keyword arguments {unknown}; "
                            f"the registered heads' labels are {sorted(registry.head_labels())}")
        encoder_inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None and self.takes_token_types:
            encoder_inputs["token_type_ids"] = token_type_ids
        encoded = self.encoder(  # unset: the model's config (from_pretrained(..., output_hidden_states=True)), else the encoder's
            **encoder_inputs, return_dict=True,
            output_attentions=output_attentions if output_attentions is not None else self.config.output_attentions or None,
            output_hidden_states=output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states or None,
        )
        head_logits, outputs = {}, {}
        for name, head in self.heads.items():  # span head first, then BIO: the dropout draws of every earlier run
            head_logits[name] = head(encoded.last_hidden_state)
            outputs.update(registry.head(name).named_outputs(head_logits[name]))
        losses = self._head_losses(head_logits, labels, attention_mask, tag_mask if tag_mask is not None else paragraph_mask)
        weighted = [registry.head(name).weight(self.config) * loss for name, loss in losses.items()]
        output = BioMrcOutput(
            loss=torch.stack(weighted).sum() if weighted else None,
            hidden_states=encoded.hidden_states,
            attentions=encoded.attentions,
            **{f"{name}_loss": loss for name, loss in losses.items()},
            **outputs,
        )
        return output if (self.config.return_dict if return_dict is None else return_dict) else output.to_tuple()

    def _head_losses(
        self, head_logits: dict[str, Any], labels: dict[str, torch.Tensor | None],
        attention_mask: torch.Tensor | None, tagged: torch.Tensor | None,
    ) -> dict[str, torch.Tensor]:
        """Each head's loss, through the one ``Head.loss`` interface, for the heads whose every label is given."""
        losses = {}
        for name, head in self.heads.items():
            entry = registry.head(name)
            targets = {key: labels.get(key) for key in entry.targets}
            missing = [key for key, value in targets.items() if value is None]
            if missing and len(missing) < len(targets):  # a loss left out for a forgotten label would pass unseen
                raise TypeError(f"forward() got {sorted(set(targets) - set(missing))} but not {missing}: "
                                f"the {name} head's loss needs all of {list(targets)}")
            if missing:
                continue
            entry.check_tag_mask(tagged)
            losses[name] = head.loss(head_logits[name], attention_mask=attention_mask, tag_mask=tagged, **targets)
        return losses


# forward's own parameters, but **labels: each registered head's labels are named in its signature (forward_signature).
_FORWARD_PARAMETERS = tuple(parameter for parameter in inspect.signature(BioMrcForQuestionAnswering.forward).parameters.values()
                            if parameter.kind is not inspect.Parameter.VAR_KEYWORD)
_FORWARD_RETURN = inspect.signature(BioMrcForQuestionAnswering.forward).return_annotation  # kept: help() and IDEs show it


def forward_signature() -> inspect.Signature:
    """``forward``'s signature as transformers' ``Trainer`` reads it: each registered head's label a keyword of its
    own, so that it finds ``start_positions`` and ``end_positions`` (the labels it reads of a question-answering
    model) and ``remove_unused_columns`` keeps every head's columns. ``**labels`` would read as one label named
    ``labels``, which no batch holds: no evaluation loss, no label ids, and the heads' targets dropped."""
    labels = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None) for name in registry.head_labels()]
    return inspect.Signature([*_FORWARD_PARAMETERS, *labels], return_annotation=_FORWARD_RETURN)


BioMrcForQuestionAnswering.forward.__signature__ = forward_signature()


def set_encoder_dropout(encoder_config: PreTrainedConfig, attention: float | None = None, hidden: float | None = None) -> None:
    """Set an encoder config's attention and hidden dropout rates in place (None keeps the encoder's own).
    Attention dropout 0 lets PyTorch's fused attention kernels run on the CPU (benchmarks/RESULTS.md).
    A rate the config has no setting for is refused (:func:`encoder_dropout_unset`)."""
    for kind, rate in (("attention", attention), ("hidden", hidden)):
        if rate is None:
            continue
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"{kind} dropout must be in [0, 1), got {rate}")
        if not (names := encoder_dropout_names(encoder_config, kind)):
            raise ConfigError(encoder_dropout_unset(encoder_config, kind))
        for name in names:
            setattr(encoder_config, name, rate)


def encoder_dropout_names(encoder_config: PreTrainedConfig, kind: str) -> list[str]:
    """The settings of ``encoder_config`` holding its ``kind`` (attention or hidden) dropout rate; none where its
    family keeps no such rate under a name of :data:`ENCODER_DROPOUT_ATTRIBUTES` (FNet has no attention)."""
    return [name for name in ENCODER_DROPOUT_ATTRIBUTES[kind] if hasattr(encoder_config, name)]


def encoder_dropout_unset(encoder_config: PreTrainedConfig, kind: str) -> str:
    """Why a ``kind`` dropout rate cannot be set on ``encoder_config``, in one line naming its model_type."""
    model_type = getattr(encoder_config, "model_type", None) or type(encoder_config).__name__
    return (f"the encoder (model_type {model_type!r}) has no {kind} dropout setting bio_mrc can set (none of "
            f"{', '.join(ENCODER_DROPOUT_ATTRIBUTES[kind])}); leave {kind}_dropout unset (its default) or none, "
            "which keeps the encoder's own")


def check_weight_values(model: torch.nn.Module, where: str) -> None:
    """Refuse weights holding NaN or infinite values (they answer "" to every question without a word) or values no
    trained encoder holds (a corrupt file). One reduction of each tensor (:func:`value_range`) answers both."""
    reduced = _reduced_once()
    if broken := _non_finite(model, reduced):
        raise ModelFormatError(f"its weights hold NaN or infinite values ({first_few(broken)})", where)
    floats = [(name, tensor) for name, tensor in model.state_dict().items() if tensor.is_floating_point() and tensor.numel()]
    if huge := [name for name, tensor in floats if max(map(abs, reduced(tensor))) > MAX_WEIGHT_MAGNITUDE]:
        raise ModelFormatError(f"its weights hold values beyond ±{MAX_WEIGHT_MAGNITUDE:g} ({', '.join(huge[:3])}), which no "
                               "trained encoder holds: a corrupt file?", where)


def non_finite_weights(model: torch.nn.Module) -> list[str]:
    """The names of the parameters and buffers holding NaN or infinity (a diverged training run), in order."""
    return _non_finite(model, value_range)


def _non_finite(model: torch.nn.Module, reduced: Callable[[torch.Tensor], tuple[float, float]]) -> list[str]:
    named = [*model.named_parameters(), *model.named_buffers()]
    return [name for name, tensor in named if tensor.is_floating_point() and not all(map(math.isfinite, reduced(tensor)))]


def _reduced_once() -> Callable[[torch.Tensor], tuple[float, float]]:
    """:func:`value_range`, each tensor's kept by the values it views (a parameter, its detached copy in the state dict
    and a tied weight's other names read the same): every tensor of a model is reduced once however often it is asked."""
    ranges: dict[tuple, tuple[float, float]] = {}

    def reduced(tensor: torch.Tensor) -> tuple[float, float]:
        key = (tensor.device, tensor.data_ptr(), tensor.dtype, tuple(tensor.shape), tensor.stride())
        if key not in ranges:
            ranges[key] = value_range(tensor)
        return ranges[key]

    return reduced


def value_range(tensor: torch.Tensor) -> tuple[float, float]:
    """A floating tensor's least and greatest values, read in one pass: NaN where it holds a NaN (the reduction
    propagates it), ±inf where it holds an infinity; (0.0, 0.0) for an empty tensor. One pass of ``aminmax`` costs a
    fraction of ``isfinite(...).all()`` or ``abs().max()``, each of which writes a whole tensor of its own first."""
    if not tensor.numel():
        return 0.0, 0.0
    with torch.no_grad():
        low, high = torch.aminmax(tensor.detach())
    return float(low), float(high)


def _encoder_class(encoder_config: PreTrainedConfig) -> type[PreTrainedModel]:
    """The class ``AutoModel`` builds for an encoder config (``BertModel`` for a ``BertConfig``); of a config that
    maps to several (Funnel: ``FunnelModel`` and ``FunnelBaseModel``), the one its ``architectures`` names, else the first."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING

    found = MODEL_MAPPING[type(encoder_config)]
    if not isinstance(found, (tuple, list)):
        return found
    named = set(getattr(encoder_config, "architectures", None) or ())
    return next((cls for cls in found if cls.__name__ in named), found[0])


def attention_kernels(encoder_config: PreTrainedConfig) -> tuple[type[PreTrainedModel], list[str]]:
    """The class of the encoder ``encoder_config`` describes and the attention kernels (transformers' names for
    ``attn_implementation``) it runs on this machine: those its class supports, flash attention only with a device its
    builds run on and its package or transformers' kernels, flex attention where torch has it. The package's own
    training kernel (:mod:`bio_mrc.fp32_attention`), registered once a process has trained with it, is none of them."""
    from transformers.modeling_flash_attention_utils import FLASH_ATTENTION_COMPATIBILITY_MATRIX
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    from transformers.utils import is_kernels_available, is_torch_flex_attn_available

    found = _encoder_class(encoder_config)

    def flash(version: str) -> bool:
        entry = FLASH_ATTENTION_COMPATIBILITY_MATRIX.get(int(version)) if version.isdigit() else None
        return (entry is not None and found._supports_flash_attn and any(here() for here, _ in entry["supported_devices"])
                and (entry["general_availability_check"]() or is_kernels_available()))

    # each family of transformers' kernel names, with whether this encoder runs it here; any other (eager) runs anywhere
    families = {"flash_attention_": flash, "flex_attention": lambda _: found._supports_flex_attn and is_torch_flex_attn_available(),
                "sdpa": lambda _: found._supports_sdpa}

    def runs(name: str) -> bool:
        family = next((prefix for prefix in families if name.removeprefix("paged|").startswith(prefix)), None)
        return family is None or families[family](name.removeprefix("paged|").removeprefix(family))

    names = [name for name in ALL_ATTENTION_FUNCTIONS.valid_keys() if name.removeprefix("paged|") != TRAINING_ATTENTION]
    return found, [name for name in ["eager", *names] if runs(name)]


def _encoder_from_config(encoder_config: PreTrainedConfig) -> PreTrainedModel:
    """BERT-like encoders build a pooler we never use; skip it where the class allows."""
    try:
        return AutoModel.from_config(encoder_config, add_pooling_layer=False, trust_remote_code=False)
    except TypeError:
        return AutoModel.from_config(encoder_config, trust_remote_code=False)


def register_auto_classes() -> None:
    """Make the Auto classes know bio_mrc models: ``AutoConfig`` reads saved folders, and ``AutoModel`` and
    ``AutoModelForQuestionAnswering`` ``.from_pretrained(folder)`` return :class:`BioMrcForQuestionAnswering`
    (the heads are the model; there is no headless base model to return).

    Importing this module calls it, and after ``import bio_mrc`` transformers imports this module the first time it
    looks the ``bio_mrc`` model type up (:mod:`bio_mrc.transformers_registration`). transformers 5 reads no entry
    points: it looks an unknown ``model_type`` up only in ``CONFIG_MAPPING``, which this fills, or in the config's
    ``auto_map`` as remote code, which this package refuses (:func:`bio_mrc.encoders.as_data`)."""
    AutoConfig.register(BioMrcConfig.model_type, BioMrcConfig, exist_ok=True)
    AutoModel.register(BioMrcConfig, BioMrcForQuestionAnswering, exist_ok=True)
    AutoModelForQuestionAnswering.register(BioMrcConfig, BioMrcForQuestionAnswering, exist_ok=True)


register_auto_classes()

__all__ = ["BioMrcConfig", "BioMrcForQuestionAnswering", "BioMrcOutput", "FreshHeadsNote", "UnsavedEncoderWeightsWarning",
           "attention_kernels", "encoder_dropout_names", "encoder_dropout_unset", "forward_signature", "non_finite_weights", "register_auto_classes",
           "set_encoder_dropout"]
