"""The model to train, transformers' ``TrainingArguments`` the package sets, and the ``Trainer`` over the windows."""

from __future__ import annotations

import sys
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Sequence

import datasets  # noqa: F401 (loaded before a progress_bars block opens: the training windows' map bar follows it)
import torch
from transformers import AutoConfig, PrinterCallback, ProgressCallback, Trainer, TrainerCallback, TrainingArguments
from transformers.integrations import TensorBoardCallback
from transformers.trainer_pt_utils import LengthGroupedSampler, get_length_grouped_indices
from transformers.trainer_utils import HubStrategy

from ..config_schema import UnaskedFloat
from ..cpu_budget import cpu_budget
from ..encoders import as_data, load_tokenizer, resolve_encoder
from ..errors import ConfigError, DataFormatError, InputWarning
from ..features.collate import WindowBatches, WindowCollator
from ..features.long_questions import note_long_questions
from ..features.targets import answers_no_window_holds
from ..features.windows import build_features
from ..features.windows_cache import default_windows_cache
from ..hub import given_model_name, local_folder, named_as_given
from ..json_syntax import json_value
from ..model import (BioMrcConfig, BioMrcForQuestionAnswering, encoder_dropout_names, encoder_dropout_unset,
                     set_encoder_dropout)
from ..model_folder import check_model_folder
from ..precision import default_device, pinned_device
from ..launcher import launcher_number
from ..progress import progress_bars
from ..run_folder import HUB_PUSH_DIR
from ..qa_checkpoints import check_encoder_runs, usable_positions
from ..types import Example
from .answer_lengths import set_answer_length_limit
from .checkpoints import CHECKPOINT_DIR, DEFAULT_CHECKPOINT_STEPS, record_checkpoint_digests
from .config import TrainConfig
from .run_start import windows_past_positions
from .training_args import check_network_args, default_hub_id, hub_repository_refused
from .training_questions import ANSWERS_NOTHING
from .saving import LOG_DIR


# Scores of the model in training on held-out questions, by name (e.g. {"span_f1": 71.2}): called with the model and tokenizer.
Evaluator = Callable[[BioMrcForQuestionAnswering, Any], dict[str, float]]
# Trainer wants an evaluation set whenever eval_strategy asks for evaluations; an evaluator scores its own questions.
_SCORED_BY_EVALUATOR = ("the evaluator's questions",)

# AdamW's update in one fused kernel per parameter group: the same arithmetic as the per-tensor loop, 2-6% faster
# steps on a 2-core CPU (benchmarks/bench_training_speed.py).
OPTIMIZER = "adamw_torch_fused"
# Batch readers beside each training process on a GPU machine: a batch of 256 windows takes a worker a few ms.
GPU_LOADER_WORKERS = 4


# Why a window may hold no token of an answer, as the warning and the refusal of such answers say it.
_UNHELD_WHY = "(whitespace, characters the tokenizer drops, or longer than a window)"


def _first_ids(ids: list[str]) -> str:
    return ", ".join(repr(i) for i in ids[:5]) + (", …" if len(ids) > 5 else "")


class UnheldAnswersWarning(InputWarning):
    """Training questions whose answer no window holds as tokens: they train as unanswerable (``ids`` names them)."""

    def __init__(self, ids: list[str], answerable: int) -> None:
        super().__init__(f"{len(ids)} of {answerable} answerable training questions have an answer that no window holds as "
                         f"tokens {_UNHELD_WHY}: they train as unanswerable; {_first_ids(ids)}")
        self.ids = ids


def check_held_answers(missed: list[str], examples: Sequence[Example], data_name: str | None) -> None:
    """``missed``, the answerable questions of ``examples`` whose answer no window holds: said in one
    :class:`UnheldAnswersWarning`, or, where they are all of them (every question would train as unanswerable, a model
    that answers nothing), refused before training in one line naming ``data_name`` and the first few."""
    if not missed:
        return
    answerable = sum(example.is_answerable for example in examples)
    if len(missed) < answerable:
        warnings.warn(UnheldAnswersWarning(missed, answerable), stacklevel=4)
        return
    which = "the 1 answerable training question" if answerable == 1 else f"any of the {answerable:,} answerable training questions"
    raise DataFormatError(f"no window holds the answer of {which} {_UNHELD_WHY}: {ANSWERS_NOTHING}; {_first_ids(missed)}",
                          source=data_name)


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
    With an ``evaluator``, each evaluation is its scores of held-out questions (no evaluation dataset).
    """

    def __init__(self, *args: Any, head_learning_rate: float | None = None, evaluator: Evaluator | None = None,
                 evaluation_tokenizer: Any = None, **kwargs: Any) -> None:
        if evaluator is not None:
            kwargs["eval_dataset"] = _SCORED_BY_EVALUATOR
        super().__init__(*args, **kwargs)
        # Not Trainer's processing_class, which would add the tokenizer's files to every checkpoint.
        self.head_learning_rate, self.evaluator, self.evaluation_tokenizer = head_learning_rate, evaluator, evaluation_tokenizer

    def init_hf_repo(self, token: str | None = None, private: bool | None = None) -> None:
        """The push's hub repository, made or opened as Trainer is built: one the hub refuses is one line, not a traceback."""
        try:
            super().init_hf_repo(token, private)
        except Exception as err:  # an HTTP refusal, no route, a timeout: the push cannot happen alike
            raise hub_repository_refused(self.args.hub_model_id, err) from None

    def _push_from_checkpoint(self, checkpoint_folder: str) -> None:
        """Trainer's push during training, of the model's files alone, as the final push sends them: Trainer copies a
        checkpoint's config and weights into its output folder, saves its arguments there (``training_args.bin``) and
        uploads that folder, which is the run's checkpoints folder with its options record; here that folder is
        ``checkpoints/hub-push/``, which holds them and the run's tokenizer. The ``checkpoint`` and ``all_checkpoints``
        strategies' upload of the checkpoint itself (``last-checkpoint/``, ``checkpoint-N/``) is Trainer's own, with
        its file digests recorded first, as they are once it is saved, so every upload holds them."""
        checkpoints, pushed = self.args.output_dir, Path(self.args.output_dir) / HUB_PUSH_DIR
        running = getattr(self, "push_in_progress", None)  # set on the main process alone
        uploading = running is not None and not running.is_done()  # Trainer skips this push
        if self.is_world_process_zero() and self.args.hub_strategy != HubStrategy.END and not uploading:
            pushed.mkdir(exist_ok=True)
            if self.evaluation_tokenizer is not None:
                self.evaluation_tokenizer.save_pretrained(str(pushed))
            if self.args.hub_strategy in (HubStrategy.CHECKPOINT, HubStrategy.ALL_CHECKPOINTS):
                record_checkpoint_digests(Path(checkpoint_folder))
        self.args.output_dir = str(pushed)  # Trainer's copy and upload read it; restored before its checkpoint rotation
        try:
            super()._push_from_checkpoint(checkpoint_folder)
        finally:
            self.args.output_dir = checkpoints

    def evaluate(self, eval_dataset: Any = None, ignore_keys: Any = None, metric_key_prefix: str = "eval") -> dict[str, float]:
        """The evaluator's scores, logged (so in the log history and every tracker) as ``eval_<name>``."""
        if self.evaluator is None:
            return super().evaluate(eval_dataset, ignore_keys, metric_key_prefix)
        was_training = self.model.training
        scores = self.evaluator(self.model, self.evaluation_tokenizer)
        self.model.train(was_training)
        metrics = {f"{metric_key_prefix}_{name}": value for name, value in scores.items()}
        self.log(metrics)
        self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control, metrics)
        return metrics

    def floating_point_ops(self, inputs: dict[str, Any]) -> int:
        """Trainer's estimate of a step's floating-point operations, which it adds to ``total_flos`` at every step: 6 x
        the tokens fed x the model's non-embedding parameters, those counted once a model (Trainer's own counts them at
        every step, walking each module of the model on the host between two steps)."""
        main = getattr(self.model, "main_input_name", "input_ids")
        if main not in inputs or not hasattr(self.model, "num_parameters"):
            return super().floating_point_ops(inputs)
        counted = getattr(self, "_counted_parameters", None)
        if counted is None or counted[0] is not self.model:
            counted = self._counted_parameters = (self.model, self.model.num_parameters(exclude_embeddings=True))
        return 6 * inputs[main].numel() * counted[1]

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
        dataset = self.train_dataset if train_dataset is None else train_dataset
        seed = self.args.data_seed if self.args.data_seed is not None else self.args.seed
        if self.args.train_sampling_strategy == "group_by_length" and isinstance(dataset, WindowBatches):
            # The lengths from the Arrow offsets: Trainer's sampler would read every window row by row to count them.
            batch = self.args.train_batch_size * self.args.gradient_accumulation_steps
            return EpochSeededLengthGroupedSampler(batch, dataset.lengths, seed)
        sampler = super()._get_train_sampler(train_dataset)
        if type(sampler) is LengthGroupedSampler:
            return EpochSeededLengthGroupedSampler(sampler.batch_size, sampler.lengths, seed)
        return sampler


def continued_config(model_config: BioMrcConfig, init_from: str) -> BioMrcConfig:
    """The config of a model continued from ``init_from``: its decoding settings (β, thresholds, span-count rules) stay
    as starting values, marked as tuned for the model it continues (``tuned_on["for_model"]``), which a tuning of this
    one replaces; its calibrators go, since they map the earlier weights' confidence to P(right)."""
    model_config.calibration = None
    if model_config.tuned_on:
        model_config.tuned_on = {**model_config.tuned_on, "for_model": model_config.tuned_on.get("for_model", str(init_from))}
    return model_config


def starting_point(config: TrainConfig) -> str:
    """What a model is built from: the ``init_from`` model (its folder checked, weights left unread) or the encoder;
    a dropout rate asked that its encoder has no setting for is refused here, before any work (:func:`encoder_dropout`)."""
    if config.init_from:
        folder = local_folder(config.init_from, "model folder", config.revision)  # a missing one is one line naming it, not a hub error
        with named_as_given(config.init_from, folder):
            check_model_folder(folder, BioMrcForQuestionAnswering, tokenizer_required=False)  # a config it builds
        encoder_dropout(config, source_encoder_config(config, str(folder)))
        return str(folder)  # a hub id's snapshot: transformers' own lookups would ask the hub again
    source = resolve_encoder(config.encoder, config.encoder_revision)
    encoder_dropout(config, source_encoder_config(config, source))
    return source


def source_encoder_config(config: TrainConfig, source: str) -> Any:
    """The encoder config of ``source``, the model ``init_from`` continues (its config's encoder) or the encoder."""
    if config.init_from:
        return BioMrcConfig.from_pretrained(source).encoder
    with as_data(source):
        return AutoConfig.from_pretrained(source, trust_remote_code=False)


def encoder_dropout(config: TrainConfig, encoder_config: Any) -> dict[str, float | None]:
    """The encoder dropout rates ``config`` sets on ``encoder_config``. A rate left at the package's default (0,
    :data:`~bio_mrc.training.config.UNASKED_DROPOUT`) is set where the encoder has such a rate and left out where it
    has none (FNet has no attention, Ultrabert no hidden dropout rate): the encoder keeps its own. A rate given, 0 too,
    is asked for, and refused where there is no such rate: bio_mrc cannot tell an encoder without that dropout from one
    keeping it under a name of its own, which a 0 would leave on."""
    rates = {"attention": config.attention_dropout, "hidden": config.hidden_dropout}
    for kind, rate in rates.items():
        if rate is None or encoder_dropout_names(encoder_config, kind):
            rates[kind] = None if rate is None else float(rate)
            continue
        if not isinstance(rate, UnaskedFloat):
            raise ConfigError(encoder_dropout_unset(encoder_config, kind))
        rates[kind] = None
    return rates


def fresh_model(config: TrainConfig, source: str | None = None) -> tuple[BioMrcForQuestionAnswering, str]:
    """New heads on the configured encoder, or a trained bio_mrc model to continue from (``source``: their
    :func:`starting_point`, found here when not given); returns (model, its path).
    The model's config records the heads, losses and windows, so the saved folder runs on its own."""
    source = source or starting_point(config)
    settings = config.model_settings()
    if config.init_from:
        model_config = continued_config(BioMrcConfig.from_pretrained(source, **settings), config.init_from)
        set_encoder_dropout(model_config.encoder, **encoder_dropout(config, model_config.encoder))
        shown = given_model_name(config.init_from, config.revision)  # a hub id's note names the id, not its snapshot
        return BioMrcForQuestionAnswering.from_pretrained(source, config=model_config, shown_as=shown), source
    dropout = encoder_dropout(config, source_encoder_config(config, source))
    return BioMrcForQuestionAnswering.from_encoder(source, encoder_dropout=dropout, **settings), source


def fresh_model_and_tokenizer(config: TrainConfig) -> tuple[BioMrcForQuestionAnswering, Any, str]:
    """``fresh_model`` with its tokenizer; refuses windows longer than the encoder's positions."""
    source = starting_point(config)
    with named_as_given(config.init_from or config.encoder, source):  # a hub id's snapshot named by the id
        tokenizer = load_tokenizer(source)  # before any weights load: a broken tokenizer is refused at once
        model, encoder = fresh_model(config, source)
    positions = usable_positions(model.encoder)  # RoBERTa's kin number positions from after their padding id
    if positions is not None and config.max_seq_length > positions:
        raise ConfigError(windows_past_positions(config.max_seq_length, positions, encoder))
    check_encoder_runs(model, tokenizer, config.max_seq_length, encoder)
    return model, tokenizer, encoder


def build_trainer(
    model: BioMrcForQuestionAnswering, tokenizer: Any, examples: Sequence[Example], config: TrainConfig,
    args: TrainingArguments, progress: bool, callbacks: Sequence[TrainerCallback], evaluator: Evaluator | None = None,
    data_name: str | None = None,
) -> HeadRateTrainer:
    """The training windows (targets only; offsets are for decoding) and the Trainer over them, scoring held-out
    questions with ``evaluator`` when ``args.eval_strategy`` asks, its logs on stderr (progress) or nowhere; questions
    cut to ``max_query_length`` are said in one note naming ``data_name`` (None: the training questions)."""
    # The main process builds (or finds) the cached windows first; the others of a torchrun job then read them.
    with progress_bars(progress), args.main_process_first(desc="training windows"):
        windows = replace(config.features, word_units=model.config.word_units)  # a resumed run's: its checkpoint's
        features = build_features(examples, tokenizer, windows, desc="training windows",
                                  cache_dir=default_windows_cache(), heads=model.config.head_names)
    if args.process_index == 0:  # said once, however many processes train
        note_long_questions(features, examples, windows.max_query_length, data_name or "the training questions")
    check_held_answers(answers_no_window_holds(features, examples), examples, data_name)  # before the model trains
    parent_limit = model.config.max_answer_length if config.init_from else None  # the continued model's, kept where longer
    set_answer_length_limit(model, features, progress and args.process_index == 0, parent_limit)  # saved with the model
    features = features.remove_columns(["offset_mapping", "word_offsets", "example_index", "answer_in_window", "answer_lengths",
                                       "question_tokens"])
    trainer = HeadRateTrainer(
        model=model,
        head_learning_rate=config.head_learning_rate,
        evaluator=evaluator if args.eval_strategy != "no" else None,
        evaluation_tokenizer=tokenizer,
        args=args,
        train_dataset=WindowBatches(features),
        data_collator=WindowCollator(pad_token_id=tokenizer.pad_token_id or 0),
        callbacks=list(callbacks),
    )
    _route_logs(trainer, Path(args.output_dir).parent)
    return trainer


class _StderrProgressCallback(ProgressCallback):
    """Trainer's progress bars, with its log lines (loss, metrics) on stderr: stdout is for a command's result."""

    def on_log(self, args: TrainingArguments, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        if state.is_world_process_zero and self.training_bar is not None and logs:
            shown = {k: f"{v:.4g}" if isinstance(v, float) else v for k, v in logs.items() if k != "total_flos"}
            self.training_bar.write(str(shown), file=sys.stderr)


def _route_logs(trainer: Trainer, model_folder: Path) -> None:
    """Log lines to stderr, never stdout (PrinterCallback prints them when the bars are off); TensorBoard's
    event files into the model folder's logs/ (its default, the checkpoints folder, goes when training ends)."""
    trainer.remove_callback(PrinterCallback)
    if trainer.pop_callback(ProgressCallback) is not None:
        trainer.add_callback(_StderrProgressCallback())
    for callback in trainer.callback_handler.callbacks:
        if isinstance(callback, TensorBoardCallback) and callback.logging_dir is None:
            callback.logging_dir = str(model_folder / LOG_DIR)


def training_arguments(
    config: TrainConfig, output_dir: Path, save_checkpoints: bool, progress: bool, checkpoint_steps: int | None,
    network_args: dict[str, Any] | None = None,
) -> TrainingArguments:
    """The package's ``TrainingArguments`` (its options, checkpoints under ``output_dir/checkpoints``), with
    ``config.training_args`` over the values it merely defaults (those it owns are refused by ``TrainConfig``),
    and the command line's ``network_args`` (hub push, uploading trackers: the only way to turn them on)."""
    steps = DEFAULT_CHECKPOINT_STEPS if checkpoint_steps is None else checkpoint_steps
    if steps < 1:
        raise ValueError(f"checkpoint_steps must be a positive number of optimizer steps, not {checkpoint_steps}")
    values = {**_package_arguments(config, output_dir, save_checkpoints, progress, steps), **config.training_args}
    if network_args:
        check_network_args(network_args, output_dir)
        values.update(network_args)
        if values.get("push_to_hub") and not values.get("hub_model_id"):
            values["hub_model_id"] = default_hub_id(output_dir)
        if "report_to" in network_args:  # the trackers asked for on the command line join the config's local ones
            values["report_to"] = _reporters(config.training_args.get("report_to"), network_args["report_to"])
    try:
        return TrainingArguments(**values)
    except ValueError as err:  # training_args that do not fit the package's own (e.g. load_best_model_at_end without checkpoints)
        raise ConfigError(f"training_args {json_value(config.training_args)} with the package's own arguments: {err}") from None


def _reporters(*values: Any) -> list[str]:
    listed = [name for value in values if value is not None for name in ([value] if isinstance(value, str) else value)]
    return list(dict.fromkeys(name for name in listed if name != "none")) or ["none"]


def _package_arguments(config: TrainConfig, output_dir: Path, save_checkpoints: bool, progress: bool, steps: int) -> dict[str, Any]:
    return dict(
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
        **_loading_arguments(default_device(), config.training_args.get("dataloader_num_workers")),
        bf16=config.precision == "bf16",  # autocast: fp32 weights and optimizer state, bf16 matrix products
        use_cpu=_trains_on_cpu(config.precision),
        # Under torchrun on CPU transformers picks no backend, and every process would train alone on all the data.
        ddp_backend="gloo" if launcher_number("WORLD_SIZE") > 1 and not torch.cuda.is_available() else None,
    )


def _trains_on_cpu(precision: str) -> bool:
    """Trainer's ``use_cpu``: where the process was pinned to the CPU (Trainer takes an Apple GPU whenever it sees one,
    and hiding the CUDA GPUs does not hide it) and not where it was pinned to the Apple GPU; otherwise in bf16 where
    no CUDA GPU is seen (Trainer refuses bf16 without a GPU unless told)."""
    pinned = pinned_device()
    if pinned in ("cpu", "mps"):
        return pinned == "cpu"
    return precision == "bf16" and default_device() == "cpu"


def _loading_arguments(device: str, workers: int | None = None) -> dict[str, Any]:
    """How batches reach the model. On a GPU, worker processes read and pad the windows into pinned memory, copies
    do not wait, and the loss is not checked for NaN at each step (a GPU sync; a diverged run is refused when
    training ends): the CPU queues the next step while the GPU runs this one. One worker for two of the CPUs this
    process may use (its CPU quota, its affinity mask: :func:`~bio_mrc.cpu_budget.cpu_budget`), at most
    :data:`GPU_LOADER_WORKERS`, unless ``workers`` (the user's ``dataloader_num_workers``) says how many; with none,
    the settings of worker processes are left out. On the CPU one process does it all, since workers would take the
    cores the matrix products use."""
    if device != "cuda":
        return {"dataloader_num_workers": 0, "dataloader_pin_memory": False}
    if workers is None:
        workers = min(GPU_LOADER_WORKERS, max(1, cpu_budget().cpus // 2))
    kept = {"dataloader_persistent_workers": True, "dataloader_prefetch_factor": 4} if workers else {}
    return {"dataloader_num_workers": workers, **kept, "dataloader_pin_memory": True,
            "accelerator_config": {"non_blocking": True}, "logging_nan_inf_filter": False}


__all__ = ["OPTIMIZER", "HeadRateTrainer", "UnheldAnswersWarning", "build_trainer", "fresh_model",
           "fresh_model_and_tokenizer", "training_arguments"]
