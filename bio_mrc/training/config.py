"""``TrainConfig``: everything that decides a trained model, saved beside it and in reports.

The model's own settings (heads, losses, tag level, windows) are defined once, in ``bio_mrc.model_defaults``
(``BioMrcConfig``'s defaults) and by the windows' config (``FeatureConfig``): a field here of the same name takes
its default from there, and the model and the windows are built from the fields they share with this config.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .. import model_defaults, registry
from ..config_schema import SEED_RANGE, UnaskedFloat, check_fields
from ..data.json_reader import loads
from ..errors import ConfigError
from ..io import home_expanded, special_file_kind
from ..json_syntax import decode_hint
from ..features.config import BIO_TARGET_KINDS, BIO_TARGETS, TAG_LEVELS, TAG_MENTIONS, TARGET_KINDS, FeatureConfig
from ..precision import DEFAULT_PRECISION, PRECISIONS, default_device, precision_choice
from .training_args import check_training_args

# Light on purpose: the command line builds its options from this module, so transformers (TrainingArguments,
# BioMrcConfig) loads only where a config is checked or a model built. Choices read from the registry (a callable in
# a field's metadata) are read when the options or the schema are built, so a head registered later is offered.

# A BIO-only model weighs B/I tokens 10x (F1 36.6 -> 51.1 at the reference budget); with a span head
# the weights cost the span decoding 2.9 F1; benchmarks/RESULTS.md, BIO quality.
BIO_ONLY_CLASS_WEIGHTS = (10.0, 10.0, 1.0)
DEFAULT_CHECKPOINT_STEPS = 500  # optimizer steps between resumable checkpoints


def json_object_argument(text: str) -> dict[str, Any]:
    """An option's value as a JSON object: written out (``{...}``) or the path of a JSON file holding one."""
    source = "the option's value"
    if text.lstrip()[:1] not in ("{", "["):  # else JSON written out (a list is refused below, as the wrong kind)
        source = text
        if kind := special_file_kind(text):
            raise argparse.ArgumentTypeError(f"{text} is {kind}, not a JSON file")
        try:
            with open(text, encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError) as err:
            raise argparse.ArgumentTypeError(f"neither a JSON object nor a readable JSON file: {err}") from None
    try:
        value = loads(text)  # a repeated key, NaN or a lone surrogate is refused, never a value lost
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{source} is not valid JSON: {err}{decode_hint(err)}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"{source} holds a JSON {type(value).__name__}, not an object")
    return value


# An encoder dropout rate left at the package's default, 0: set where the encoder has such a rate and left out where it
# has none (FNet has no attention), where a rate given, 0 too, is refused. Records, keys and cards write it as the 0 the
# model trains at, and a record's 0 reads back as it (TrainConfig.from_record): a rate was given only where the encoder
# took it, and there both train the same model.
UNASKED_DROPOUT = UnaskedFloat(0.0)
DROPOUT_FIELDS = ("attention_dropout", "hidden_dropout")


# Bounds on sizes no run needs more of; beyond them a typo (1e308) is refused instead of overflowing later.
MAX_EPOCHS = 1000
MAX_BATCH = 65_536
MAX_TOKENS = 65_536
MAX_WEIGHT = 1e6  # a loss or class weight past it overflows the loss (1e308 gave an infinite one) long before it means anything
# AdamW moves each weight by about the learning rate a step: past 1 a step throws an encoder's weights (median size 0.035
# in the default encoder) far from what they learned, and below 1e-10 it is under half of fp32's spacing for 97% of them,
# which then never move. The encoder's and the heads' rates share the bounds.
MIN_LEARNING_RATE = 1e-10
MAX_LEARNING_RATE = 1  # written whole, as the refusal and the schema say it


@dataclass
class TrainConfig:
    """Everything that decides a trained model: saved beside it and in reports. What each field means: its
    metadata's ``help`` (``dataclasses.fields(TrainConfig)``), the same text as ``bio-mrc train --help``."""

    # Each field's metadata gives its command-line help and choices (bio_mrc.config_options builds the options).
    encoder: str = field(default="default", metadata={  # min_length: "" would read as the current folder
        "help": "encoder folder or Hugging Face id ('default': the embedded all-MiniLM-L6-v2)", "min_length": 1})
    heads: str = field(default=model_defaults.HEADS, metadata={
        "help": registry.head_help, "choices": registry.head_choices})
    span_loss_weight: float = field(default=model_defaults.SPAN_LOSS_WEIGHT, metadata={
        "help": "weight of the span head's loss in the total loss", "minimum": 0, "maximum": MAX_WEIGHT})
    bio_loss_weight: float = field(default=model_defaults.BIO_LOSS_WEIGHT, metadata={
        "help": "weight of the BIO head's loss in the total loss", "minimum": 0, "maximum": MAX_WEIGHT})
    bio_targets: str = field(default=FeatureConfig.bio_targets, metadata={
        "help": "several annotators: soft = their mean tag distribution; marginal = log Σ_k P(tags_k); one-hot = the first",
        "choices": BIO_TARGET_KINDS})
    span_targets: str = field(default=FeatureConfig.span_targets, metadata={
        "help": "several annotators: soft = their mean start/end distribution; one-hot = the first",
        "choices": TARGET_KINDS})
    bio_loss_reduction: str = field(default=model_defaults.BIO_LOSS_REDUCTION, metadata={
        "help": "token_mean: averaged over paragraph tokens; mean: per-example sums averaged; sum",
        "choices": model_defaults.BIO_LOSS_REDUCTIONS})
    bio_prior: tuple[float, float, float] | None = field(default=model_defaults.BIO_PRIOR, metadata={
        "help": "initial tag probabilities of the BIO head (its bias is log prior)", "metavar": ("B", "I", "O"),
        "exclusive_minimum": 0, "maximum": 1})
    bio_class_weights: tuple[float, float, float] | None = field(default=None, metadata={
        "help": "weights of B/I/O tokens in the BIO loss, a departure from the plain loss (1 1 1); "
                "unset: 10 10 1 for a BIO-only model of one-hot or soft BIO targets, else 1 1 1",
        "metavar": ("B", "I", "O"), "exclusive_minimum": 0, "maximum": MAX_WEIGHT})
    tag_level: str = field(default=FeatureConfig.tag_level, metadata={
        "help": "word: tag the first piece of each word and decode on word boundaries; subword: tag every token",
        "choices": TAG_LEVELS})
    tag_mentions: str = field(default=FeatureConfig.tag_mentions, metadata={
        "help": "every: the BIO head learns every mention of the answer spans' texts (same characters, whole words) as an "
                "answer; annotated: the spans as given, the other mentions as O; ignored: the other mentions out of the loss",
        "choices": TAG_MENTIONS})
    # Attention dropout sends PyTorch's CPU attention from its fused kernel to the math path, which draws a
    # random mask for every attention weight. Without encoder dropout training runs faster and, in a 3-seed
    # ablation, F1 rose in every decoding (benchmarks/ablations/dropout.json); the heads keep their dropout.
    attention_dropout: float | None = field(default=UNASKED_DROPOUT, metadata={
        "help": "the encoder's attention dropout while training (none: the encoder's own, 0.1 for BERT-like models)",
        "minimum": 0, "exclusive_maximum": 1})
    hidden_dropout: float | None = field(default=UNASKED_DROPOUT, metadata={
        "help": "the encoder's hidden-state dropout while training (none: the encoder's own, 0.1 for BERT-like models)",
        "minimum": 0, "exclusive_maximum": 1})
    max_seq_length: int = field(default=FeatureConfig.max_seq_length, metadata={
        "help": "tokens per window: question, paragraph piece, special tokens; the default is cut to the encoder's positions "
                "where it holds fewer", "minimum": 8, "maximum": MAX_TOKENS})
    doc_stride: int = field(default=FeatureConfig.doc_stride, metadata={
        "help": "tokens of overlap between windows; the default is lowered where a window cut to the encoder's positions "
                "needs it", "minimum": 0, "maximum": MAX_TOKENS})
    max_query_length: int = field(default=FeatureConfig.max_query_length, metadata={
        "help": "question tokens kept; a longer question is cut; the default is lowered where a window cut to the encoder's "
                "positions needs it", "minimum": 1, "maximum": MAX_TOKENS})
    epochs: float = field(default=1.0, metadata={"help": "passes over the training windows (may be fractional)", "exclusive_minimum": 0,
        "maximum": MAX_EPOCHS})
    learning_rate: float = field(default=1e-4, metadata={"help": "peak learning rate of the encoder (linear warmup and decay), "
        "1e-10 to 1", "minimum": MIN_LEARNING_RATE, "maximum": MAX_LEARNING_RATE})
    # At the encoder's rate the BIO head hardly leaves the tag prior in a CPU-sized run
    # (benchmarks/RESULTS.md, head learning rate).
    head_learning_rate: float | None = field(default=5e-3, metadata={
        "help": "learning rate of the freshly initialised heads, 1e-10 to 1 (none: --learning-rate)", "minimum": MIN_LEARNING_RATE,
        "maximum": MAX_LEARNING_RATE})
    batch_size: int = field(default=16, metadata={"help": "training windows per batch (per process)", "minimum": 1,
        "maximum": MAX_BATCH})
    warmup_ratio: float = field(default=0.1, metadata={"help": "fraction of the steps over which the learning rates rise",
        "minimum": 0, "maximum": 1})
    weight_decay: float = field(default=0.01, metadata={"help": "AdamW weight decay", "minimum": 0, "maximum": 1})
    seed: int = field(default=42, metadata={"help": "random seed of the heads' initialisation and the data order",
        **SEED_RANGE})
    init_from: str | None = field(default=None, metadata={  # e.g. SQuAD -> MultiSpanQA
        "help": "continue from a trained bio_mrc model instead of a bare encoder", "min_length": 1})
    revision: str | None = field(default=None, metadata={  # recorded, so a run from a moving branch is reproducible
        "help": "the branch, tag or commit hash of init_from's Hugging Face hub id, else of the encoder's (none: the "
                "default branch); refused with a local folder", "min_length": 1})
    precision: str = field(default=DEFAULT_PRECISION, metadata={
        "help": "fp32; bf16: bfloat16 autocast (weights stay fp32); auto: fp32 where bf16 is not native; on a GPU "
                "with native bf16, bf16; on such a CPU, the faster of the two for this model, measured once and cached",
        "choices": PRECISIONS})
    training_args: dict[str, Any] = field(default_factory=dict, metadata={
        "schema": {"type": "object"}, "type": json_object_argument, "metavar": "JSON",
        "help": "further transformers TrainingArguments, a JSON object or a JSON file, e.g. "
                "'{\"gradient_accumulation_steps\": 2, \"report_to\": [\"tensorboard\"]}'"})

    def __post_init__(self) -> None:
        check_fields(self)
        self.encoder, self.init_from = _one_spelling(self.encoder), _one_spelling(self.init_from)
        self.features  # noqa: B018 (FeatureConfig refuses windows without room for the stride)
        self._check_loss_weights()
        if self.training_args:
            check_training_args(self.training_args)

    def _check_loss_weights(self) -> None:
        """A head of ``heads`` whose loss weighs 0 never learns: the model would answer with its random initialisation."""
        for name in registry.head_names(self.heads):
            entry = registry.head(name)
            if entry.weight(self) == 0:
                option = entry.loss_weight if isinstance(entry.loss_weight, str) else f"the {name} head's loss weight"
                raise ConfigError(f"TrainConfig: {option} is 0, so the {name} head (heads {self.heads!r}) would not train and "
                                  f"would answer from its random initialisation; give it a weight above 0, or leave the "
                                  f"head out of heads")

    @property
    def resolved_bio_class_weights(self) -> tuple[float, float, float] | None:
        """The class weights the BIO loss uses (see ``bio_class_weights``); the marginal likelihood takes none."""
        if self.bio_class_weights is not None:
            return tuple(self.bio_class_weights)
        weighed = registry.tags_alone(registry.head_names(self.heads)) and BIO_TARGETS[self.bio_targets].tag_distribution
        return BIO_ONLY_CLASS_WEIGHTS if weighed else None

    @property
    def encoder_revision(self) -> str | None:
        """The revision of the encoder's hub id: ``revision`` where the model is trained from the encoder; continued from
        ``init_from``, it is that model's."""
        return None if self.init_from else self.revision

    @property
    def features(self) -> FeatureConfig:
        """The window and target settings of this config, as the features layer takes them."""
        return FeatureConfig(**{f.name: getattr(self, f.name) for f in fields(FeatureConfig) if hasattr(self, f.name)})

    def model_settings(self) -> dict[str, Any]:
        """The model config's fields this config sets (heads, losses, tag level, windows), JSON-shaped."""
        from ..model import BioMrcConfig

        # "encoder" is the encoder's name here and its config there
        shared = {f.name for f in fields(BioMrcConfig)} & {f.name for f in fields(self)} - {"encoder"}
        settings = {name: getattr(self, name) for name in sorted(shared)}
        settings["bio_class_weights"] = self.resolved_bio_class_weights
        settings["word_units"] = self.features.word_units  # a continued model tags the words it trains on now
        return json.loads(json.dumps(settings))

    def with_resolved_precision(self) -> "TrainConfig":
        """This config with ``precision`` fp32 or bf16 as it trains on this machine (``auto`` resolved for
        the device Trainer picks), so a model's record and key say what it was trained in."""
        return replace(self, precision=self.precision_choices()["training"]["precision"])

    def precision_choices(self) -> dict[str, dict[str, Any]]:
        """How ``precision`` resolves here (:func:`bio_mrc.precision.precision_choice`): for ``training`` and,
        when it is ``auto``, for ``inference`` of the model (what a later ``auto`` answers in on this machine);
        ``auto`` on a CPU with native bf16 measures the encoder's shapes at this config's batches and windows."""
        device = default_device()
        if self.precision != "auto":
            return {"training": precision_choice(self.precision, device)}
        encoder = self.encoder_config()
        shapes = {"training": self.batch_size, "inference": model_defaults.INFERENCE_BATCH_SIZE}
        return {phase: precision_choice("auto", device, _shapes(encoder, batch, self.max_seq_length), phase)
                for phase, batch in shapes.items()}

    def encoder_config(self) -> Any:
        """The transformers config of the encoder this config trains (None where it cannot be read: training
        then says why, in one line, when it loads the encoder)."""
        from ..encoders import resolve_encoder
        from ..hub import cached_folder
        from ..model import BioMrcConfig

        try:
            if self.init_from:  # a hub id's cached snapshot: transformers' own lookups would ask the hub again
                folder = cached_folder(self.init_from, self.revision)
                return BioMrcConfig.from_pretrained(str(folder)).encoder if folder is not None else None
            from transformers import AutoConfig

            return AutoConfig.from_pretrained(resolve_encoder(self.encoder, self.encoder_revision))
        except (OSError, ValueError, ImportError, KeyError):
            return None

    def to_dict(self) -> dict[str, Any]:
        """JSON-shaped (lists, not tuples), so a saved record compares equal to a fresh config. A field of
        ``model_defaults.TRAIN_OPTIONS_WHEN_ABSENT`` is left out at the value a record without it means: the record,
        and the key of a model that does not use it, are those of a config without the field."""
        data = json.loads(json.dumps(asdict(self)))
        for name, absent in model_defaults.TRAIN_OPTIONS_WHEN_ABSENT.items():
            if data[name] == absent:
                del data[name]
        return data

    @classmethod
    def from_record(cls, train: dict[str, Any]) -> "TrainConfig":
        """The options a saved run record's ``train`` holds (``bio_mrc_run.json``): an option it leaves out has the
        value every model had before the option existed, not today's default."""
        rates = {name: UNASKED_DROPOUT for name in DROPOUT_FIELDS if _is_zero(train.get(name, 0))}
        return cls.from_dict({**model_defaults.TRAIN_OPTIONS_WHEN_ABSENT, **train, **rates})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TrainConfig":
        """The config of these keys, a key left out at today's default; an unknown key is a ValueError naming it.
        ``to_dict`` leaves out an option at the value a record without it means, not always today's default
        (``tag_mentions="annotated"``): :meth:`from_record` reads it back, equal to the config written."""
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown training options: {sorted(unknown)}; known: {sorted(known)}")
        for name in ("bio_prior", "bio_class_weights"):
            if data.get(name) is not None:
                data = {**data, name: tuple(data[name])}
        return cls(**data)


def _is_zero(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0


def _one_spelling(name: Any) -> Any:
    """A local folder's name spelt one way (``enc/``, ``./enc`` and ``enc`` are ``enc``), so the model a comparison
    keys by its options is trained once whichever way the folder was written; a hub id or a glob as it is."""
    name = home_expanded(name)
    try:
        return str(Path(name)) if isinstance(name, str) and Path(name).exists() else name
    except (OSError, ValueError):  # a name too long for a path, or holding a NUL: no folder, left to the loader
        return name


def _shapes(encoder: Any, batch: int, seq: int) -> Any:
    """The matrix shapes auto's choice is measured at (a ``MatrixShapes``), or None for a config without the usual
    size names: auto then keeps the hardware rule."""
    from ..precision_probe import MatrixShapes

    try:
        return MatrixShapes.of(encoder, batch, seq) if encoder is not None else None
    except (AttributeError, TypeError, ValueError):
        return None


__all__ = ["BIO_ONLY_CLASS_WEIGHTS", "DEFAULT_CHECKPOINT_STEPS", "MAX_LEARNING_RATE", "MIN_LEARNING_RATE", "UNASKED_DROPOUT",
           "TrainConfig", "json_object_argument"]
