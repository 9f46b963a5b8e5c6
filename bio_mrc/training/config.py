"""``TrainConfig``: everything that decides a trained model, saved beside it and in reports.

The model's own settings (heads, losses, tag level, windows) are defined once, in ``bio_mrc.model_defaults``
(``BioMrcConfig``'s defaults) and by the windows' config (``FeatureConfig``): a field here of the same name takes
its default from there, and the model and the windows are built from the fields they share with this config.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import types
import typing
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .. import model_defaults, registry
from ..config_schema import SEED_RANGE, check_fields
from ..data.json_reader import loads
from ..errors import ConfigError
from ..io import home_expanded, special_file_kind
from ..features.config import BIO_TARGET_KINDS, TAG_LEVELS, TAG_MENTIONS, TARGET_KINDS, FeatureConfig
from ..precision import DEFAULT_PRECISION, PRECISIONS, default_device, precision_choice

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
        raise argparse.ArgumentTypeError(f"{source} is not valid JSON: {err}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"{source} holds a JSON {type(value).__name__}, not an object")
    return value


# The TrainingArguments fields the package sets from its own options (or owns outright), each with why.
OWNED_TRAINING_ARGS = {
    "output_dir": "the model folder is the output folder (--output-dir); checkpoints go to its checkpoints/ folder",
    "num_train_epochs": "set epochs (--epochs)",
    "learning_rate": "set learning_rate (--learning-rate); the heads' own rate is head_learning_rate",
    "per_device_train_batch_size": "set batch_size (--batch-size)",
    "warmup_steps": "set warmup_ratio (--warmup-ratio), the fraction of the steps",
    "weight_decay": "set weight_decay (--weight-decay)",
    "seed": "set seed (--seed); data_seed may differ from it",
    "bf16": "set precision (--precision): fp32, bf16 or auto",
    "fp16": "set precision (--precision): fp32, bf16 or auto (no fp16 training: it needs a loss scaler the package does not tune)",
    "fp16_full_eval": "set precision (--precision): evaluation during training answers in the run's precision, fp32 or bf16 (no fp16)",
    "bf16_full_eval": "set precision (--precision): evaluation during training answers in the run's precision, fp32 or bf16",
    "use_cpu": "the device follows precision and the machine; hide the GPUs (CUDA_VISIBLE_DEVICES='') to train on the CPU",
    "save_strategy": "checkpoints are the package's (save_checkpoints, checkpoint_steps / --checkpoint-steps): resuming relies on them",
    "save_steps": "set checkpoint_steps (--checkpoint-steps)",
    "resume_from_checkpoint": "set resume (--resume): it checks the checkpoint is this run's",
    "remove_unused_columns": "the windows hold only the model's inputs and targets, which forward takes by name",
    "label_names": "each head names its own targets",
    "label_smoothing_factor": "Trainer smooths a 'labels' input, which the model has none of: each head computes its own loss "
                              "(bio_targets and span_targets soften the targets)",
    "disable_tqdm": "set progress (train_model(progress=...); the CLI shows bars)",
}


# The TrainingArguments fields that send data off the machine (a hub push, an uploading tracker), each with the
# command-line flag that alone turns it on: a config file never does.
NETWORK_TRAINING_ARGS = {
    "push_to_hub": "--push-to-hub", "hub_model_id": "--hub-model-id", "hub_strategy": "--hub-strategy",
    "hub_private_repo": "--hub-private-repo", "hub_always_push": "--push-to-hub", "hub_revision": "--hub-revision",
    "hub_token": "--push-to-hub, with the token of `hf auth login` or HF_TOKEN",
    "report_to": "--report-to",
}
LOCAL_REPORTERS = ("none", "tensorboard")  # report_to values that keep everything in the model folder
TRACKER_EXTRAS = {"tensorboard": "bio_mrc[tensorboard]"}  # the package's extra that installs a tracker


def check_trackers_installed(reporters: list[str]) -> None:
    """Refuse, before any work, a ``report_to`` tracker transformers does not know or cannot start here (its package
    is not installed): Trainer would raise it in a traceback once the model is built, leaving the output folder made."""
    from transformers.integrations import integration_utils as trackers

    available = trackers.get_available_reporting_integrations()
    for name in (r for r in reporters if r not in ("none", "all") and r not in available):
        callback = trackers.INTEGRATION_TO_CALLBACK.get(name)
        if callback is None:
            raise ConfigError(f"report_to {name!r} is no tracker transformers knows (known: {', '.join(trackers.INTEGRATION_TO_CALLBACK)})")
        try:
            callback()
        except (ImportError, RuntimeError) as err:
            why = (str(err).strip().splitlines() or [type(err).__name__])[0]
            hint = f": pip install '{TRACKER_EXTRAS[name]}'" if name in TRACKER_EXTRAS else ""
            raise ConfigError(f"report_to {name!r} cannot run here, its package is not installed ({why}){hint}") from None


def check_stays_local(values: dict[str, Any], source: str = "training_args") -> None:
    """Refuse options in ``values`` (a config's training_args) that would send data off the machine, naming the
    command-line flag that asks for them."""
    for name, value in values.items():
        if name == "report_to":
            reporters = [value] if isinstance(value, str) else value if isinstance(value, list) else [value]
            uploading = [r for r in reporters if r not in LOCAL_REPORTERS]
            if uploading:
                raise ConfigError(f"{source}: report_to {uploading[0]!r} can send the run off this machine, which only the "
                                  f"command line asks for: bio-mrc train --report-to {uploading[0]} (local here: "
                                  f"{', '.join(LOCAL_REPORTERS)})")
        elif name in NETWORK_TRAINING_ARGS or name.startswith(("hub_", "push_to_hub")):
            flag = NETWORK_TRAINING_ARGS.get(name, "--push-to-hub")
            raise ConfigError(f"{source}: {name!r} publishes the model, which only the command line asks for: "
                              f"bio-mrc train {flag}")


def check_network_args(values: dict[str, Any]) -> None:
    """The command line's off-machine options (see :data:`NETWORK_TRAINING_ARGS`): known names that TrainingArguments
    takes; a hub option other than the push itself needs the push."""
    unknown = sorted(set(values) - set(NETWORK_TRAINING_ARGS))
    if unknown:
        raise ConfigError(f"{unknown[0]!r} is no option that sends data off the machine; give it in training_args")
    if any(name.startswith("hub_") for name in values) and not values.get("push_to_hub"):
        raise ConfigError("--hub-model-id, --hub-strategy, --hub-private-repo and --hub-revision need --push-to-hub")
    if values.get("push_to_hub"):
        _check_hub_reachable()
    from transformers import TrainingArguments

    try:
        TrainingArguments(output_dir="network-args-check", **{"report_to": "none", **values})
    except (ValueError, TypeError, ImportError, RuntimeError) as err:
        raise ConfigError(f"{values}: {err}") from None


def _check_hub_reachable() -> None:
    """A push that cannot happen, refused before any work: Trainer creates the hub repository when it is built, and
    offline mode or a missing token would end there in a traceback, the output folder begun."""
    from huggingface_hub import constants, get_token

    if constants.HF_HUB_OFFLINE:
        raise ConfigError("--push-to-hub needs the Hugging Face Hub, which offline mode (HF_HUB_OFFLINE or "
                          "TRANSFORMERS_OFFLINE) turns off; unset it or leave out --push-to-hub")
    if get_token() is None:
        raise ConfigError("--push-to-hub needs a Hugging Face token: run `hf auth login` or set HF_TOKEN")


# Counts TrainingArguments takes unchecked that Trainer divides by or hands to a DataLoader: below these, a run
# would end in a ZeroDivisionError or ValueError traceback once the model is built, instead of one line first.
TRAINING_ARGS_MINIMUMS = {"gradient_accumulation_steps": 1, "eval_accumulation_steps": 1, "per_device_eval_batch_size": 1,
                          "dataloader_num_workers": 0, "dataloader_prefetch_factor": 1}

OPTIONAL_TRAINING_COUNTS = {"eval_accumulation_steps", "dataloader_prefetch_factor"}  # None: TrainingArguments' default


# The optimizer's own ranges (torch's AdamW refuses values outside them once the model is built and training begins):
# name -> (least, bound, whether the bound itself is allowed).
TRAINING_ARGS_RANGES = {"adam_beta1": (0.0, 1.0, False), "adam_beta2": (0.0, 1.0, False), "adam_epsilon": (0.0, math.inf, True)}


def _check_training_ranges(values: dict[str, Any]) -> None:
    for name, (least, bound, inclusive) in TRAINING_ARGS_RANGES.items():
        value = values.get(name, least)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not (
                least <= value and (value <= bound if inclusive else value < bound)):
            span = f"at least {least:g}" if math.isinf(bound) else f"from {least:g} up to, not including, {bound:g}"
            raise ConfigError(f"training_args: {name} is {span}, got {value!r}")


def _check_compile_names(values: dict[str, Any]) -> None:
    """A compile mode or backend torch does not know, or kernels not installed, refused here: torch.compile and Trainer
    refuse them once training has begun."""
    if isinstance(mode := values.get("torch_compile_mode"), str):
        from torch._inductor import list_mode_options

        if mode not in list_mode_options():
            raise ConfigError(f"training_args: torch_compile_mode is one of {', '.join(list_mode_options())}, got {mode!r}")
    if values.get("use_liger_kernel") is True:
        from transformers.utils import is_liger_kernel_available

        if not is_liger_kernel_available():  # Trainer raised ImportError once the model was built
            raise ConfigError("training_args: use_liger_kernel needs the liger-kernel package, which is not installed")
    if isinstance(backend := values.get("torch_compile_backend"), str):
        from torch._dynamo import list_backends

        if backend not in (known := list_backends(exclude_tags=())):
            raise ConfigError(f"training_args: torch_compile_backend is one of {', '.join(known)}, got {backend!r}")


def _check_training_counts(values: dict[str, Any]) -> None:
    for name, least in TRAINING_ARGS_MINIMUMS.items():
        value = values.get(name, least)
        # TrainingArguments takes any type unchecked: a string or a fraction ends in a TypeError once a model has trained
        if value is None and name in OPTIONAL_TRAINING_COUNTS:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ConfigError(f"training_args: {name} is a count of at least {least}, got {value!r}")


# TrainingArguments' plain field types and the JSON values each takes: it keeps any value unchecked, and a string
# for a number (max_grad_norm "1") ends in a TypeError traceback once the model is training.
_PLAIN_TYPES = {float: ((int, float), "a number"), int: ((int,), "a whole number"), bool: ((bool,), "true or false"),
                str: ((str,), "a string")}


def _check_training_types(values: dict[str, Any]) -> None:
    from transformers import TrainingArguments

    hints = typing.get_type_hints(TrainingArguments)
    for name, value in values.items():
        hint, optional = hints.get(name), False
        if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint):
            inner = [arg for arg in typing.get_args(hint) if arg is not type(None)]
            hint, optional = (inner[0] if len(inner) == 1 else None), True
        if hint not in _PLAIN_TYPES or (value is None and optional):
            continue
        kinds, what = _PLAIN_TYPES[hint]
        if not isinstance(value, kinds) or (isinstance(value, bool) and hint is not bool):
            raise ConfigError(f"training_args: {name} is {what}, got {value!r}")


def check_training_args(values: dict[str, Any]) -> None:
    """Refuse a name that is no TrainingArguments field (with the field it most likely misspells), one
    the package owns (with the option to use instead) or one that sends data off the machine (with the flag
    that asks for it), then values TrainingArguments itself refuses."""
    from transformers import TrainingArguments

    known = [f.name for f in fields(TrainingArguments) if f.init]
    check_stays_local({name: value for name, value in values.items() if name in known or name.startswith(("hub_", "push_to_hub"))})
    for name in values:
        if name in OWNED_TRAINING_ARGS:
            raise ConfigError(f"training_args: {name!r} is the package's own: {OWNED_TRAINING_ARGS[name]}")
        if name not in known:
            guess = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {guess[0]!r}?)" if guess else ""
            raise ConfigError(f"training_args: {name!r} is not a TrainingArguments field{hint}")
    _check_training_counts(values)
    _check_training_types(values)
    _check_training_ranges(values)
    _check_compile_names(values)
    try:
        arguments = TrainingArguments(output_dir="training-args-check", **{"report_to": "none", **values})
    except (ValueError, TypeError, ImportError, RuntimeError) as err:
        raise ConfigError(f"training_args {values}: {err}") from None
    if "optim" in values:
        _check_optimizer_installed(arguments)


def _check_optimizer_installed(arguments: Any) -> None:
    """An ``optim`` whose package is not installed (bitsandbytes, GaLore, ...): Trainer looks for it, and raises
    ImportError, only once the model is built."""
    from transformers import Trainer

    try:
        Trainer.get_optimizer_cls_and_kwargs(arguments)
    except ImportError as err:
        raise ConfigError(f"training_args: optim {arguments.optim.value!r}: {err}") from None


# Bounds on sizes no run needs more of; beyond them a typo (1e308) is refused instead of overflowing later.
MAX_EPOCHS = 1000
MAX_BATCH = 65_536
MAX_TOKENS = 65_536
MAX_WEIGHT = 1e6  # a loss or class weight past it overflows the loss (1e308 gave an infinite one) long before it means anything


@dataclass
class TrainConfig:
    """Everything that decides a trained model: saved beside it and in reports."""

    # Each field's metadata gives its command-line help and choices (bio_mrc.config_options builds the options).
    encoder: str = field(default="default", metadata={  # min_length: "" would read as the current folder
        "help": "encoder folder or Hugging Face id ('default': the embedded all-MiniLM-L6-v2)", "min_length": 1})
    heads: str = field(default=model_defaults.HEADS, metadata={
        "help": "span: start/end head; bio: B/I/O tagging head; span+bio: both on one encoder", "choices": registry.head_choices})
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
                "none: 10 10 1 for a BIO-only model, 1 1 1 with a span head", "metavar": ("B", "I", "O"), "exclusive_minimum": 0,
        "maximum": MAX_WEIGHT})
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
    attention_dropout: float | None = field(default=0.0, metadata={
        "help": "the encoder's attention dropout while training (none: the encoder's own, 0.1 for BERT-like models)",
        "minimum": 0, "exclusive_maximum": 1})
    hidden_dropout: float | None = field(default=0.0, metadata={
        "help": "the encoder's hidden-state dropout while training (none: the encoder's own, 0.1 for BERT-like models)",
        "minimum": 0, "exclusive_maximum": 1})
    max_seq_length: int = field(default=FeatureConfig.max_seq_length, metadata={
        "help": "tokens per window: question, paragraph piece, special tokens", "minimum": 8, "maximum": MAX_TOKENS})
    doc_stride: int = field(default=FeatureConfig.doc_stride, metadata={"help": "tokens of overlap between windows", "minimum": 0,
        "maximum": MAX_TOKENS})
    max_query_length: int = field(default=FeatureConfig.max_query_length, metadata={
        "help": "question tokens kept; a longer question is cut", "minimum": 1, "maximum": MAX_TOKENS})
    epochs: float = field(default=1.0, metadata={"help": "passes over the training windows (may be fractional)", "exclusive_minimum": 0,
        "maximum": MAX_EPOCHS})
    learning_rate: float = field(default=1e-4, metadata={"help": "peak learning rate of the encoder (linear warmup and decay)", "exclusive_minimum": 0})
    # At the encoder's rate the BIO head hardly leaves the tag prior in a CPU-sized run
    # (benchmarks/RESULTS.md, head learning rate).
    head_learning_rate: float | None = field(default=5e-3, metadata={
        "help": "learning rate of the freshly initialised heads (none: --learning-rate)", "exclusive_minimum": 0})
    batch_size: int = field(default=16, metadata={"help": "training windows per batch (per process)", "minimum": 1,
        "maximum": MAX_BATCH})
    warmup_ratio: float = field(default=0.1, metadata={"help": "fraction of the steps over which the learning rates rise",
        "minimum": 0, "maximum": 1})
    weight_decay: float = field(default=0.01, metadata={"help": "AdamW weight decay", "minimum": 0, "maximum": 1})
    seed: int = field(default=42, metadata={"help": "random seed of the heads' initialisation and the data order",
        **SEED_RANGE})
    init_from: str | None = field(default=None, metadata={  # e.g. SQuAD -> MultiSpanQA
        "help": "continue from a trained bio_mrc model instead of a bare encoder", "min_length": 1})
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
        tagging_only = all(registry.head(name).needs_tag_mask for name in registry.head_names(self.heads))
        return BIO_ONLY_CLASS_WEIGHTS if tagging_only and self.bio_targets != "marginal" else None

    @property
    def features(self) -> FeatureConfig:
        return FeatureConfig(**{f.name: getattr(self, f.name) for f in fields(FeatureConfig)})

    def model_settings(self) -> dict[str, Any]:
        """The model config's fields this config sets (heads, losses, tag level, windows), JSON-shaped."""
        from ..model import BioMrcConfig

        # "encoder" is the encoder's name here and its config there
        shared = {f.name for f in fields(BioMrcConfig)} & {f.name for f in fields(self)} - {"encoder"}
        settings = {name: getattr(self, name) for name in sorted(shared)}
        settings["bio_class_weights"] = self.resolved_bio_class_weights
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
        from ..model import BioMrcConfig

        try:
            if self.init_from:
                return BioMrcConfig.from_pretrained(self.init_from).encoder
            from transformers import AutoConfig

            return AutoConfig.from_pretrained(resolve_encoder(self.encoder))
        except (OSError, ValueError, ImportError, KeyError):
            return None

    def to_dict(self) -> dict[str, Any]:
        """JSON-shaped (lists, not tuples), so a saved record compares equal to a fresh config. The fields added
        after the first models were saved are left out at the value a record without them means: the record, and
        the key of a model that does not use them, are those of a config that had no such field."""
        data = json.loads(json.dumps(asdict(self)))
        for name, absent in model_defaults.TRAIN_OPTIONS_WHEN_ABSENT.items():
            if data[name] == absent:
                del data[name]
        return data

    @classmethod
    def from_record(cls, train: dict[str, Any]) -> "TrainConfig":
        """The options a saved run record's ``train`` holds (``bio_mrc_run.json``): an option it leaves out has the
        value every model had before the option existed, not today's default."""
        return cls.from_dict({**model_defaults.TRAIN_OPTIONS_WHEN_ABSENT, **train})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TrainConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown training options: {sorted(unknown)}; known: {sorted(known)}")
        for name in ("bio_prior", "bio_class_weights"):
            if data.get(name) is not None:
                data = {**data, name: tuple(data[name])}
        return cls(**data)


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


__all__ = ["BIO_ONLY_CLASS_WEIGHTS", "DEFAULT_CHECKPOINT_STEPS", "LOCAL_REPORTERS", "NETWORK_TRAINING_ARGS", "OWNED_TRAINING_ARGS", "TRACKER_EXTRAS",
           "TrainConfig", "check_network_args", "check_stays_local", "check_trackers_installed", "check_training_args"]
