"""Fine-tuning with transformers' ``Trainer`` (runs unchanged under ``torchrun``/``accelerate``)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Sequence

import torch
from transformers import Trainer, TrainerCallback, TrainingArguments, set_seed
from transformers.trainer_callback import ExportableState
from transformers.trainer import TRAINER_STATE_NAME
from transformers.trainer_pt_utils import LengthGroupedSampler, get_length_grouped_indices
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from .. import registry
from ..config_schema import SEED_RANGE, check_fields
from ..encoders import load_tokenizer, resolve_encoder
from ..errors import BioMrcError, ConfigError
from ..features.windows import (
    BIO_TARGET_KINDS, TAG_LEVELS, TARGET_KINDS, FeatureConfig, answers_no_window_holds, build_features, default_windows_cache,
)
from ..io import atomic_move_files, atomic_write_json, check_folder_target, writes_named
from ..heads import BIOHead
from ..model import HEAD_CHOICES, RUN_FILE, BioMrcConfig, BioMrcForQuestionAnswering, set_encoder_dropout
from ..model_card import clear_model_card, write_model_card
from ..precision import DEFAULT_PRECISION, PRECISIONS, default_device, resolve_precision
from ..progress import progress_bars
from ..types import Example, content_hash
from ..features.collate import WindowCollator

CHECKPOINT_DIR = "checkpoints"  # under the output folder; removed once the model is complete
TRAIN_CONFIG_FILE = "bio_mrc_train_config.json"  # in CHECKPOINT_DIR: the options (and questions) of its checkpoints
STAGING_DIR = ".bio_mrc-saving"  # under the output folder while the final model is written
DEFAULT_CHECKPOINT_STEPS = 500
BIO_ONLY_CLASS_WEIGHTS = (10.0, 10.0, 1.0)
# AdamW's update in one fused kernel per parameter group: the same arithmetic as the per-tensor loop, 2-6% faster
# steps on a 2-core CPU (benchmarks/bench_training_speed.py).
OPTIMIZER = "adamw_torch_fused"


class UnheldAnswersWarning(UserWarning):
    """Training questions whose answer no window holds as tokens: they train as unanswerable (``ids`` names them)."""

    def __init__(self, ids: list[str], answerable: int) -> None:
        shown = ", ".join(repr(i) for i in ids[:5]) + (", …" if len(ids) > 5 else "")
        super().__init__(f"{len(ids)} of {answerable} answerable training questions have an answer that no window holds as "
                         f"tokens (whitespace, characters the tokenizer drops, or longer than a window): they train as "
                         f"unanswerable; {shown}")
        self.ids = ids


@dataclass
class TrainConfig:
    """Everything that decides a trained model: saved beside it and in reports."""

    # Each field's metadata gives its command-line help and choices (bio_mrc.config_options builds the options).
    encoder: str = field(default="default", metadata={
        "help": "encoder folder or Hugging Face id ('default': the embedded all-MiniLM-L6-v2)"})
    heads: str = field(default="span+bio", metadata={
        "help": "span: start/end head; bio: B/I/O tagging head; span+bio: both on one encoder", "choices": HEAD_CHOICES})
    span_loss_weight: float = field(default=1.0, metadata={"help": "weight of the span head's loss in the total loss", "minimum": 0})
    # The token-mean BIO loss pulls about 1/100 as hard as the span loss at weight 1; 10 gave the best
    # joint decoding with the BIO decoding past 53 F1 (benchmarks/RESULTS.md, BIO quality).
    bio_loss_weight: float = field(default=10.0, metadata={"help": "weight of the BIO head's loss in the total loss", "minimum": 0})
    bio_targets: str = field(default="soft", metadata={
        "help": "several annotators: soft = their mean tag distribution; marginal = log Σ_k P(tags_k); one-hot = the first",
        "choices": BIO_TARGET_KINDS})
    span_targets: str = field(default="one-hot", metadata={
        "help": "several annotators: soft = their mean start/end distribution; one-hot = the first",
        "choices": TARGET_KINDS})
    bio_loss_reduction: str = field(default="token_mean", metadata={
        "help": "token_mean: averaged over paragraph tokens; mean: per-example sums averaged; sum",
        "choices": BIOHead.reductions})
    bio_prior: tuple[float, float, float] | None = field(default=(0.01, 0.02, 0.97), metadata={  # ~SQuAD's tag frequencies
        "help": "initial tag probabilities of the BIO head (its bias is log prior)", "metavar": ("B", "I", "O"),
        "exclusive_minimum": 0, "maximum": 1})
    # A BIO-only model weighs B/I tokens 10x (F1 36.6 -> 51.1 at the reference budget); with a span head
    # the weights cost the span decoding 2.9 F1; benchmarks/RESULTS.md, BIO quality.
    bio_class_weights: tuple[float, float, float] | None = field(default=None, metadata={
        "help": "weights of B/I/O tokens in the BIO loss, a departure from the plain loss (1 1 1); "
                "none: 10 10 1 for a BIO-only model, 1 1 1 with a span head", "metavar": ("B", "I", "O"), "minimum": 0})
    tag_level: str = field(default="word", metadata={
        "help": "word: tag the first piece of each word and decode on word boundaries; subword: tag every token",
        "choices": TAG_LEVELS})
    # Attention dropout sends PyTorch's CPU attention from its fused kernel to the math path, which draws a
    # random mask for every attention weight. Without encoder dropout training runs faster and, in a 3-seed
    # ablation, F1 rose in every decoding (benchmarks/ablations/dropout.json); the heads keep their dropout.
    attention_dropout: float | None = field(default=0.0, metadata={
        "help": "the encoder's attention dropout while training (none: the encoder's own, 0.1 for BERT-like models)",
        "minimum": 0, "exclusive_maximum": 1})
    hidden_dropout: float | None = field(default=0.0, metadata={
        "help": "the encoder's hidden-state dropout while training (none: the encoder's own, 0.1 for BERT-like models)",
        "minimum": 0, "exclusive_maximum": 1})
    max_seq_length: int = field(default=384, metadata={"help": "tokens per window: question, paragraph piece, special tokens",
        "minimum": 8})
    doc_stride: int = field(default=128, metadata={"help": "tokens of overlap between windows", "minimum": 0})
    max_query_length: int = field(default=64, metadata={"help": "question tokens kept; a longer question is cut", "minimum": 1})
    epochs: float = field(default=1.0, metadata={"help": "passes over the training windows (may be fractional)", "exclusive_minimum": 0})
    learning_rate: float = field(default=1e-4, metadata={"help": "peak learning rate of the encoder (linear warmup and decay)", "exclusive_minimum": 0})
    # At the encoder's rate the BIO head hardly leaves the tag prior in a CPU-sized run
    # (benchmarks/RESULTS.md, head learning rate).
    head_learning_rate: float | None = field(default=5e-3, metadata={
        "help": "learning rate of the freshly initialised heads (none: --learning-rate)", "exclusive_minimum": 0})
    batch_size: int = field(default=16, metadata={"help": "training windows per batch (per process)", "minimum": 1})
    warmup_ratio: float = field(default=0.1, metadata={"help": "fraction of the steps over which the learning rates rise",
        "minimum": 0, "maximum": 1})
    weight_decay: float = field(default=0.01, metadata={"help": "AdamW weight decay", "minimum": 0})
    seed: int = field(default=42, metadata={"help": "random seed of the heads' initialisation and the data order",
        **SEED_RANGE})
    init_from: str | None = field(default=None, metadata={  # e.g. SQuAD -> MultiSpanQA
        "help": "continue from a trained bio_mrc model instead of a bare encoder"})
    precision: str = field(default=DEFAULT_PRECISION, metadata={
        "help": "fp32; bf16: bfloat16 autocast (weights stay fp32); auto: bf16 where the CPU or GPU computes it "
                "natively (AMX-BF16, AVX512-BF16, CUDA compute capability >= 8), else fp32",
        "choices": PRECISIONS})

    def __post_init__(self) -> None:
        check_fields(self)
        self.features  # noqa: B018 (FeatureConfig refuses windows without room for the stride)

    @property
    def resolved_bio_class_weights(self) -> tuple[float, float, float] | None:
        """The class weights the BIO loss uses (see ``bio_class_weights``); the marginal likelihood takes none."""
        if self.bio_class_weights is not None:
            return tuple(self.bio_class_weights)
        tagging_only = all(registry.head(name).needs_tag_mask for name in registry.head_names(self.heads))
        return BIO_ONLY_CLASS_WEIGHTS if tagging_only and self.bio_targets != "marginal" else None

    @property
    def features(self) -> FeatureConfig:
        return FeatureConfig(
            self.max_seq_length, self.doc_stride, self.max_query_length, self.bio_targets, self.span_targets, self.tag_level
        )

    def with_resolved_precision(self) -> "TrainConfig":
        """This config with ``precision`` fp32 or bf16 as it trains on this machine (``auto`` resolved for
        the device Trainer picks), so a model's record and key say what it was trained in."""
        return replace(self, precision=resolve_precision(self.precision, default_device()))

    def to_dict(self) -> dict[str, Any]:
        """JSON-shaped (lists, not tuples), so a saved record compares equal to a fresh config."""
        return json.loads(json.dumps(asdict(self)))

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


@dataclass
class TrainResult:
    model_dir: Path
    seconds: float
    n_examples: int
    n_windows: int
    final_loss: float | None


class ResumeError(BioMrcError, ValueError):
    """Training cannot continue (or start over) in a checkpoint folder as asked without mixing two runs."""


class EpochSeededLengthGroupedSampler(LengthGroupedSampler):
    """Trainer's length-grouped order, shuffled by a generator seeded with (seed, epoch).

    Trainer's own sampler shuffles with the global torch RNG at each epoch start. A run resumed
    in a later epoch gets there without replaying the earlier ones, so with another RNG state,
    and would see other batches than the uninterrupted run; this order depends on the epoch alone.
    """

    def __init__(self, batch_size: int, lengths: list[int], seed: int) -> None:
        super().__init__(batch_size, lengths=lengths)
        self.seed, self.epoch = seed, 0

    def set_epoch(self, epoch: int) -> None:  # called by Trainer (through accelerate) before each epoch
        self.epoch = epoch

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.seed + int(self.epoch))
        return iter(get_length_grouped_indices(self.lengths, self.batch_size, generator=generator))


class HeadRateTrainer(Trainer):
    """``Trainer`` whose optimizer gives the head parameters their own learning rate.

    Heads start from random weights on top of a pretrained encoder; at the
    encoder's rate a linear head moves at most ``lr`` per weight and step, too
    slowly for the BIO head to leave the tag prior in a few hundred steps.
    The optimizer class and weight-decay groups stay Trainer's own. Length-grouped
    batches come in an order a resumed run reproduces (``EpochSeededLengthGroupedSampler``).
    """

    def __init__(self, *args: Any, head_learning_rate: float | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.head_learning_rate = head_learning_rate

    def create_optimizer(self, model: torch.nn.Module | None = None) -> torch.optim.Optimizer:
        fresh = self.optimizer is None
        optimizer = super().create_optimizer(model)
        if fresh and self.head_learning_rate is not None:
            head_params = {id(p) for p in (model or self.model).head_parameters()}
            for group in list(optimizer.param_groups):
                heads = [p for p in group["params"] if id(p) in head_params]
                if heads:
                    group["params"] = [p for p in group["params"] if id(p) not in head_params]
                    options = {k: v for k, v in group.items() if k != "params"}
                    optimizer.add_param_group({**options, "params": heads, "lr": self.head_learning_rate})
            optimizer.param_groups[:] = [g for g in optimizer.param_groups if g["params"]]
        return optimizer

    def _get_train_sampler(self, train_dataset: Any = None) -> torch.utils.data.Sampler | None:
        sampler = super()._get_train_sampler(train_dataset)
        if type(sampler) is LengthGroupedSampler:
            seed = self.args.data_seed if self.args.data_seed is not None else self.args.seed
            return EpochSeededLengthGroupedSampler(sampler.batch_size, sampler.lengths, seed)
        return sampler


def _fresh_model(config: TrainConfig) -> tuple[BioMrcForQuestionAnswering, str]:
    """New heads on the configured encoder, or a trained bio_mrc model to continue from; returns (model, its path).
    The model's config records the heads, losses and windows, so the saved folder runs on its own."""
    heads_and_weights = {
        "heads": config.heads, "span_loss_weight": config.span_loss_weight, "bio_loss_weight": config.bio_loss_weight,
        "bio_loss_reduction": config.bio_loss_reduction, "bio_prior": list(config.bio_prior) if config.bio_prior else None,
        "bio_class_weights": list(config.resolved_bio_class_weights) if config.resolved_bio_class_weights else None,
        "tag_level": config.tag_level, "max_seq_length": config.max_seq_length, "doc_stride": config.doc_stride,
        "max_query_length": config.max_query_length,
    }
    dropout = {"attention": config.attention_dropout, "hidden": config.hidden_dropout}
    if config.init_from:
        model_config = BioMrcConfig.from_pretrained(config.init_from, **heads_and_weights)
        set_encoder_dropout(model_config.encoder, **dropout)
        return BioMrcForQuestionAnswering.from_pretrained(config.init_from, config=model_config), config.init_from
    encoder = resolve_encoder(config.encoder)
    return BioMrcForQuestionAnswering.from_encoder(encoder, encoder_dropout=dropout, **heads_and_weights), encoder


def _fresh_model_and_tokenizer(config: TrainConfig) -> tuple[BioMrcForQuestionAnswering, Any, str]:
    model, encoder = _fresh_model(config)
    tokenizer = load_tokenizer(encoder)
    positions = getattr(model.config.encoder, "max_position_embeddings", None)
    if positions is not None and config.max_seq_length > positions:
        raise ConfigError(f"max_seq_length {config.max_seq_length} exceeds the {positions} positions of encoder {encoder}")
    return model, tokenizer, encoder


def train_model(
    examples: Sequence[Example],
    config: TrainConfig,
    output_dir: str | Path,
    save_checkpoints: bool = True,
    progress: bool = False,
    resume: bool = False,
    checkpoint_steps: int | None = None,
    callbacks: Sequence[TrainerCallback] | None = None,
    overwrite: bool = False,
) -> TrainResult:
    """Train a fresh model on ``examples`` and save it (with its tokenizer and config) in ``output_dir``.

    ``output_dir`` is empty, new, or holds bio_mrc's own work (a model, its checkpoints); another folder's
    files are replaced only with ``overwrite`` (see ``check_output_folder``).

    Checkpoints go to ``output_dir/checkpoints`` every ``checkpoint_steps`` optimizer steps (default
    500) while ``save_checkpoints``. ``resume=True`` continues from the last complete checkpoint there
    and ends with the weights an uninterrupted run would have; with no checkpoint it trains from the
    start (with a note). A checkpoint of other training options or questions raises ``ResumeError``,
    and so does an unfinished run's checkpoint when ``resume`` is off and ``save_checkpoints`` on (the
    new run would overwrite it).
    The model appears atomically: its run record (``RUN_FILE``) is written last, once every file is in
    place, and the checkpoints are removed after it. ``callbacks`` go to the ``Trainer``.
    """
    output_dir, config = Path(output_dir), config.with_resolved_precision()
    check_output_folder(output_dir, overwrite)
    set_seed(config.seed)
    with progress_bars(progress):
        model, tokenizer, encoder = _fresh_model_and_tokenizer(config)
    started = time.perf_counter()
    args = _training_arguments(config, output_dir, save_checkpoints, progress, checkpoint_steps)
    # Before the windows are built: a run that cannot resume as asked fails at once.
    run_options = {"train": config.to_dict(), "questions": content_hash(examples)}
    checkpoint = _checkpoint_to_resume(Path(args.output_dir), run_options, resume, save_checkpoints, args.should_save, progress)
    earlier_seconds = TrainingClock.seconds_saved_in(checkpoint) if checkpoint else 0.0
    clock = TrainingClock(started, earlier_seconds)
    trainer = _trainer(model, tokenizer, examples, config, args, progress, [*(callbacks or []), clock])
    with writes_named(output_dir):  # a full disk while saving a checkpoint: one line, the checkpoints so far kept
        outcome = trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    seconds = clock.seconds()
    n_windows = len(trainer.train_dataset)
    record = {  # provenance: how the model came about (the model folder runs without it)
        "train": config.to_dict(),
        "encoder_path": encoder,
        "seconds": seconds,  # every sitting's when resumed, if its checkpoint kept the time (see earlier_seconds)
        # Resumed: the sittings before this one; None when the checkpoint predates the clock, so "seconds" is this sitting's only.
        "earlier_seconds": earlier_seconds,
        "n_examples": len(examples),
        "n_windows": n_windows,
        "final_loss": outcome.training_loss,  # the mean over this process's steps when resumed
        "resumed_from": checkpoint.name if checkpoint else None,
        "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    with writes_named(output_dir):
        _save_final_model(trainer, tokenizer, output_dir, record)
    if trainer.is_world_process_zero():
        _remove_checkpoints(Path(args.output_dir), save_checkpoints)
    return TrainResult(output_dir, seconds, len(examples), n_windows, outcome.training_loss)


def check_output_folder(folder: Path, overwrite: bool) -> None:
    """Before any work: train only into a folder that is new, empty or holds bio_mrc's own work, or, with
    ``overwrite``, replace another folder's files of the same names; never into a checkpoints folder bio_mrc
    did not write (a finished run removes its checkpoints folder)."""
    check_folder_target(folder)
    if not folder.is_dir():
        return
    checkpoints = folder / CHECKPOINT_DIR
    strangers = sorted(p.name for p in checkpoints.iterdir() if p.name != TRAIN_CONFIG_FILE and _checkpoint_step(p) is None) \
        if checkpoints.is_dir() else []
    if strangers:
        raise ConfigError(f"{checkpoints} holds files bio_mrc did not write ({', '.join(strangers[:4])}), and training removes "
                          "its checkpoints folder when it ends; choose another output folder")
    others = sorted(p.name for p in folder.iterdir() if p.name not in (CHECKPOINT_DIR, STAGING_DIR))
    if others and not overwrite and not _holds_bio_mrc_model(folder):
        raise ConfigError(f"{folder} is not empty ({', '.join(others[:4])}) and holds no bio_mrc model; choose another "
                          "output folder or pass --overwrite (overwrite=True) to replace its files")


def _holds_bio_mrc_model(folder: Path) -> bool:
    if (folder / RUN_FILE).is_file():
        return True
    try:
        return json.loads((folder / "config.json").read_text(encoding="utf-8")).get("model_type") == BioMrcConfig.model_type
    except (OSError, ValueError, AttributeError):
        return False


class TrainingClock(TrainerCallback, ExportableState):
    """The training time of every sitting so far, kept in each checkpoint's ``trainer_state.json`` (written
    with it, and last), so that a resumed run reports the whole run's time rather than its last sitting's."""

    def __init__(self, started: float = 0.0, earlier_seconds: float | None = 0.0):
        self.started, self.earlier_seconds = started, earlier_seconds

    def seconds(self) -> float:
        return (self.earlier_seconds or 0.0) + time.perf_counter() - self.started

    def on_train_begin(self, args: TrainingArguments, state: Any, control: Any, **kwargs: Any) -> None:
        # A state resumed from a checkpoint saved without the clock has no slot for it, and Trainer saves only into slots.
        state.stateful_callbacks.setdefault(type(self).__name__, {})

    def state(self) -> dict[str, Any]:
        known = self.earlier_seconds is not None
        return {"args": {}, "attributes": {"trained_seconds": self.seconds() if known else None}}

    @classmethod
    def seconds_saved_in(cls, checkpoint: Path) -> float | None:
        """The time a checkpoint's run had trained when it was saved; None for one saved without the clock."""
        state = json.loads((checkpoint / TRAINER_STATE_NAME).read_text(encoding="utf-8"))
        saved = state.get("stateful_callbacks", {}).get(cls.__name__)
        return saved.get("attributes", {}).get("trained_seconds") if isinstance(saved, dict) else None


def _trainer(
    model: BioMrcForQuestionAnswering, tokenizer: Any, examples: Sequence[Example], config: TrainConfig,
    args: TrainingArguments, progress: bool, callbacks: Sequence[TrainerCallback],
) -> "HeadRateTrainer":
    """The training windows (targets only; offsets are for decoding) and the Trainer over them."""
    # The main process builds (or finds) the cached windows first; the others of a torchrun job then read them.
    with progress_bars(progress), args.main_process_first(desc="training windows"):
        features = build_features(examples, tokenizer, config.features, desc="training windows", cache_dir=default_windows_cache())
    if missed := answers_no_window_holds(features, examples):
        warnings.warn(UnheldAnswersWarning(missed, sum(example.is_answerable for example in examples)), stacklevel=3)
    features = features.remove_columns(["offset_mapping", "word_offsets", "example_index", "answer_in_window"])
    return HeadRateTrainer(
        model=model,
        head_learning_rate=config.head_learning_rate,
        args=args,
        train_dataset=features,
        data_collator=WindowCollator(pad_token_id=tokenizer.pad_token_id or 0),
        callbacks=list(callbacks),
    )


def _training_arguments(
    config: TrainConfig, output_dir: Path, save_checkpoints: bool, progress: bool, checkpoint_steps: int | None
) -> TrainingArguments:
    steps = DEFAULT_CHECKPOINT_STEPS if checkpoint_steps is None else checkpoint_steps
    if steps < 1:
        raise ValueError(f"checkpoint_steps must be a positive number of optimizer steps, not {checkpoint_steps}")
    return TrainingArguments(
        output_dir=str(output_dir / CHECKPOINT_DIR),
        num_train_epochs=config.epochs,
        learning_rate=config.learning_rate,
        per_device_train_batch_size=config.batch_size,
        warmup_steps=config.warmup_ratio,
        weight_decay=config.weight_decay,
        optim=OPTIMIZER,
        lr_scheduler_type="linear",
        seed=config.seed,
        logging_steps=25,
        save_strategy="steps" if save_checkpoints else "no",
        save_steps=steps,
        save_total_limit=1,
        report_to="none",
        remove_unused_columns=False,
        train_sampling_strategy="group_by_length",
        disable_tqdm=not progress,
        dataloader_num_workers=0,
        dataloader_pin_memory=torch.cuda.is_available(),
        bf16=config.precision == "bf16",  # autocast: fp32 weights and optimizer state, bf16 matrix products
        use_cpu=config.precision == "bf16" and default_device() == "cpu",  # Trainer refuses bf16 without a GPU unless told
        # Under torchrun on CPU transformers picks no backend, and every process would train alone on all the data.
        ddp_backend="gloo" if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not torch.cuda.is_available() else None,
    )


def _note(progress: bool, message: str) -> None:
    if progress:
        print(message, file=sys.stderr)


def _checkpoint_to_resume(
    folder: Path, run_options: dict[str, Any], resume: bool, save_checkpoints: bool, main_process: bool, progress: bool
) -> Path | None:
    """The checkpoint to continue from (None: from the start), after the checks that keep a resumed run exact."""
    complete, incomplete = scan_checkpoints(folder)
    last = complete[-1] if complete else None
    if last is not None and not resume and save_checkpoints:
        raise ResumeError(
            f"{folder} holds the checkpoints of an unfinished run (last: {last.name}); resume it "
            "(resume=True, --resume) or delete that folder to start over"
        )
    if last is not None and resume:
        _check_same_run(folder, run_options, last)
    if main_process and save_checkpoints:
        for partial in incomplete:  # cut short by a kill; rotation could keep one and delete our newest good one
            shutil.rmtree(partial, ignore_errors=True)
    if last is not None and resume:
        _note(progress, f"resuming training from {last} (step {_checkpoint_step(last)})")
        return last
    if resume:
        _note(progress, f"nothing to resume in {folder}: training from the start")
    if save_checkpoints and main_process:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_json(folder / TRAIN_CONFIG_FILE, run_options, indent=2)
    return None


def _check_same_run(folder: Path, run_options: dict[str, Any], checkpoint: Path) -> None:
    """Refuse a checkpoint made with other training options or questions: the result would be neither run."""
    path = folder / TRAIN_CONFIG_FILE
    if not path.exists():
        raise ResumeError(f"cannot resume from {checkpoint}: {path} is missing, so its training options are unknown")
    saved = json.loads(path.read_text(encoding="utf-8"))
    old, new = saved.get("train", {}), run_options["train"]
    changed = [f"{k}: {old.get(k)!r} then, {new.get(k)!r} now" for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    if changed:
        raise ResumeError(f"cannot resume from {checkpoint}: it was trained with other options ({'; '.join(changed)})")
    if saved.get("questions") != run_options["questions"]:
        raise ResumeError(f"cannot resume from {checkpoint}: it was trained on other questions (or in another order)")


def scan_checkpoints(folder: str | Path) -> tuple[list[Path], list[Path]]:
    """(complete, incomplete) ``checkpoint-N`` folders, by step. Trainer writes ``trainer_state.json`` last,
    so a checkpoint is complete when that file reads as JSON; a kill while saving leaves it missing or cut."""
    folder = Path(folder)
    if not folder.is_dir():
        return [], []
    found = sorted((p for p in folder.iterdir() if p.is_dir() and _checkpoint_step(p) is not None), key=_checkpoint_step)
    complete = [p for p in found if _reads_as_json(p / TRAINER_STATE_NAME)]
    return complete, [p for p in found if p not in complete]


def _checkpoint_step(path: Path) -> int | None:
    match = re.fullmatch(rf"{PREFIX_CHECKPOINT_DIR}-(\d+)", path.name)
    return int(match.group(1)) if match else None


def _reads_as_json(path: Path) -> bool:
    try:
        json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return True


def _remove_checkpoints(folder: Path, ours: bool) -> None:
    """Once the model is complete nothing is left to resume: remove this run's checkpoints. A run that saved
    none leaves another run's alone and removes only the empty folder Trainer made."""
    if ours:
        shutil.rmtree(folder, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            folder.rmdir()


def _save_final_model(trainer: Trainer, tokenizer: Any, output_dir: Path, record: dict[str, Any]) -> None:
    """Save into a staging folder, move the files into ``output_dir``, then write the run record
    and the model card (README.md, made from the folder's files).

    The record is the "complete" marker (the harness reuses a folder that has one), so the old
    record goes first and the new one comes only once every file of the new model is in place;
    the old model's scores and card go with the old record.
    """
    staging = output_dir / STAGING_DIR
    if trainer.is_world_process_zero():
        shutil.rmtree(staging, ignore_errors=True)  # left by a save that was killed
    trainer.save_model(str(staging))  # every process: sharded (FSDP/DeepSpeed) saves gather on all of them
    if not trainer.is_world_process_zero():
        return
    try:
        tokenizer.save_pretrained(str(staging))
        (output_dir / RUN_FILE).unlink(missing_ok=True)
        clear_model_card(output_dir)
        atomic_move_files(staging, output_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    atomic_write_json(output_dir / RUN_FILE, record, indent=2)
    write_model_card(output_dir)


def load_run_record(model_dir: str | Path) -> dict[str, Any] | None:
    """The run record of a complete model in ``model_dir``, or None (no model, or one still being saved)."""
    path = Path(model_dir) / RUN_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
