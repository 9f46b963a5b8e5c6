"""Fine-tuning with transformers' ``Trainer`` (runs unchanged under ``torchrun``/``accelerate``).

``train_model`` is the entry point; the pieces are its options (:mod:`.config`), the Trainer
(:mod:`.trainer`), checkpoints and resuming (:mod:`.checkpoints`) and the model folder (:mod:`.saving`).
"""

from __future__ import annotations

import functools
import random
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, TypeVar

from transformers import TrainerCallback, set_seed

from ..arguments import count_argument, given_type, instance_argument, path_argument
from ..encoders import starting_point_digest
from ..errors import ConfigError, a_type, argument
from ..features.windows_cache import cache_budget_bytes
from ..fp32_attention import train_attention_in_fp32
from ..io import check_folder_target, check_outputs_apart, home_expanded, writes_named
from ..hub import local_folder, snapshot_commit
from ..model import non_finite_weights
from ..progress import progress_bars
from ..question_fingerprint import fingerprint
from ..types import Example, content_hash
from .checkpoints import (
    CHECKPOINT_DIR, DEFAULT_CHECKPOINT_STEPS, INIT_FROM_COMMIT, INIT_FROM_DIGEST, CheckpointDigests, ResumeError, TrainingClock,
    check_resumable, checkpoint_step, checkpoint_to_resume, checkpoint_word_units, remove_checkpoints, scan_checkpoints,
)
from .config import BIO_ONLY_CLASS_WEIGHTS, TrainConfig
from .output_folder import training_alone
from .recorded_commit import start_at_recorded_commit
from .run_checks import check_best_metric, check_run_options
from .run_start import FinishedModelError, SharedHeldOutWarning, WindowsFittedWarning, finished_run, fit_default_windows, warn_shared_held_out
from .training_args import check_run_trackers
from .training_questions import check_training_questions
from .run_records import load_run_record, load_training_log
from .saving import TRAINING_LOG_FILE, check_output_folder, push_final_model, save_final_model
from .trainer import (
    Evaluator, HeadRateTrainer, UnheldAnswersWarning, build_trainer, fresh_model_and_tokenizer, starting_point,
    training_arguments,
)


@dataclass(frozen=True)
class TrainResult:
    """What :func:`train_model` returns: the folder the model is saved in, the training's wall-clock seconds, the
    questions and windows it trained on, the mean training loss (of this sitting's steps when resumed; None
    when it trained none), and the optimizer steps and epochs the run took."""

    model_dir: Path
    seconds: float
    n_examples: int
    n_windows: int
    final_loss: float | None
    steps: int | None = None  # optimizer steps taken, every sitting's
    epochs: float | None = None  # passes over the training windows the steps made (max_steps may stop short of the epochs asked)


Call = TypeVar("Call", bound=Callable[..., Any])


def keeps_random_state(train: Call) -> Call:
    """``train`` seeds Python's, numpy's and torch's generators with the run's seed; the caller's states are put back
    afterwards (CUDA's where the caller had started CUDA), so training leaves the program's random numbers as it found them."""

    @functools.wraps(train)
    def kept(*args: Any, **kwargs: Any) -> Any:
        import numpy as np
        import torch

        cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
        states = random.getstate(), np.random.get_state(), torch.get_rng_state()
        try:
            return train(*args, **kwargs)
        finally:
            random.setstate(states[0])
            np.random.set_state(states[1])
            torch.set_rng_state(states[2])
            if cuda is not None:
                torch.cuda.set_rng_state_all(cuda)

    return kept  # type: ignore[return-value]


@keeps_random_state
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
    evaluator: Evaluator | None = None,
    network_args: dict[str, Any] | None = None,
    data_name: str | None = None,
) -> TrainResult:
    """Train a fresh model on ``examples`` and save it (with its tokenizer and config) in ``output_dir``, as ``bio-mrc
    train`` does (:mod:`.run_start`): window settings left at their defaults fit an encoder of fewer positions (said in
    a ``WindowsFittedWarning``); an evaluator's questions shared with ``examples`` are a ``SharedHeldOutWarning``.

    ``output_dir`` is empty, new, or holds bio_mrc's checkpoints; a finished model there is refused unless ``overwrite``
    (``FinishedModelError``), which replaces another folder's files too (``check_output_folder``).

    Checkpoints go to ``output_dir/checkpoints`` every ``checkpoint_steps`` optimizer steps (default 500) while
    ``save_checkpoints``. ``resume=True`` continues from the last complete checkpoint there and ends with the weights an
    uninterrupted run would have; with no checkpoint it trains from the start (with a note); a run stopped while saving
    its model is completed, and its result returned. A run continuing a hub id whose branch or tag moved since it began
    continues from the commit it began from, read from the Hugging Face cache (a ``RecordedCommitNote``; a commit the
    cache lacks raises ``ResumeError``). A checkpoint of other training options or questions raises
    ``ResumeError``, and so does an unfinished run's checkpoint when ``resume`` is off and ``save_checkpoints`` on (the
    new run would overwrite it). The model appears atomically: its run record (``RUN_FILE``) is written last, once every
    file is in place, and the checkpoints are removed after it. ``callbacks`` go to the ``Trainer``.

    ``config.training_args`` are further ``TrainingArguments``. When their ``eval_strategy`` asks for
    evaluations, ``evaluator`` (e.g. ``bio_mrc.inference.TrainingEvaluator(questions)``) scores the model
    then; its scores join the log history, kept in the folder as ``training_log.json``. With ``progress``
    off nothing is printed; with it on, bars and log lines go to stderr.

    ``network_args``: the ``TrainingArguments`` that send data off the machine, which ``config.training_args`` may not
    hold, those ``train``'s flags fill: ``push_to_hub``, ``hub_model_id``, ``hub_strategy``, ``hub_private_repo`` and
    ``report_to`` (an uploading tracker); the push reads the token of ``hf auth login`` or ``HF_TOKEN``. Questions past
    ``max_query_length``, read as their first tokens, are one ``LongQuestionsNote`` naming ``data_name`` (the file read).
    Questions training cannot learn from are a ``DataFormatError`` naming ``data_name`` and the question, before any
    work (:func:`~.training_questions.check_training_questions`: a span outside its context, a repeated id, none with an
    answer, ...), or once the windows are cut where no window holds any question's answer.
    """
    _check_arguments(config, output_dir, checkpoint_steps, callbacks, network_args, data_name)
    # one training a folder, held from before any work as `bio-mrc train` holds it (which holds it already here)
    with training_alone(check_folder_target(Path(home_expanded(output_dir)))):
        return _train_alone(examples, config, output_dir, (save_checkpoints, progress, resume, checkpoint_steps),
                            callbacks, overwrite, evaluator, network_args, data_name)


def _train_alone(examples: Sequence[Example], config: TrainConfig, output_dir: str | Path, sitting: tuple[bool, bool, bool, int | None],
                 callbacks: Sequence[TrainerCallback] | None, overwrite: bool, evaluator: Evaluator | None,
                 network_args: dict[str, Any] | None, data_name: str | None) -> TrainResult:
    """:func:`train_model` once its output folder is held (``sitting``: its ``save_checkpoints``, ``progress``,
    ``resume`` and ``checkpoint_steps``)."""
    save_checkpoints, progress, resume, checkpoint_steps = sitting
    _check_examples(examples)  # before the precision measurement, the first work
    check_training_questions(examples, data_name)  # as a file's reader checks them
    if (finished := _finished_run(output_dir, resume, overwrite)) is not None:
        return finished
    config, choices, output_dir = _checked_run(examples, config, output_dir, overwrite, network_args,
                                               (evaluator, save_checkpoints, checkpoint_steps))
    args = training_arguments(config, output_dir, save_checkpoints, progress, checkpoint_steps, network_args)
    reading = start_at_recorded_commit(config, Path(args.output_dir), resume)  # a moved branch: the commit the run began from
    run_options = _run_options(examples, config, reading)
    last = check_resumable(Path(args.output_dir), run_options, resume, save_checkpoints)  # before the model loads
    resumed = last if resume else None
    model, tokenizer, encoder = _fresh_model(reading, choices, progress, resumed)
    clock = TrainingClock(time.perf_counter(), TrainingClock.seconds_saved_in(resumed) if resumed else 0.0)
    # The windows are cut (and a set whose answers no window holds refused) before the checkpoints' folder is written.
    trainer = build_trainer(model, tokenizer, examples, config, args, progress, [*(callbacks or []), clock, CheckpointDigests()], evaluator, data_name)
    checkpoint = checkpoint_to_resume(Path(args.output_dir), run_options, resume, save_checkpoints, args.should_save, progress)
    result = _train_sitting(trainer, checkpoint, clock, output_dir, len(examples), progress)
    if non_finite_weights(trainer.model):
        _refuse_diverged(trainer, config, output_dir, save_checkpoints)
    with writes_named(output_dir), progress_bars(progress):
        saved = save_final_model(trainer, tokenizer, output_dir, _run_record(result, config, encoder, clock.earlier_seconds, checkpoint,
                                                                             choices, _unanswerable(examples),
                                                                             {**_stages(examples, reading, data_name), **_scored(trainer, evaluator)}))
    _remove_checkpoints_and_push(trainer, output_dir, saved, save_checkpoints)
    return result


def _run_options(examples: Sequence[Example], config: TrainConfig, reading: TrainConfig) -> dict[str, Any]:
    """What makes a run's checkpoints its own, kept in their options record: its options, its questions, and the digest
    of the ``init_from`` model it continues (a path names the folder, not the weights in it) as ``reading`` reads it
    (:func:`~.recorded_commit.start_at_recorded_commit`), with its hub id's commit."""
    options = {"train": config.to_dict(), "questions": content_hash(examples)}
    if reading.init_from:
        folder = local_folder(reading.init_from, revision=reading.revision)
        options[INIT_FROM_DIGEST] = starting_point_digest(folder)
        if commit := snapshot_commit(reading.init_from, folder):
            options[INIT_FROM_COMMIT] = commit
    return options


def _train_sitting(trainer: HeadRateTrainer, checkpoint: Path | None, clock: TrainingClock, output_dir: Path,
                   n_examples: int, progress: bool) -> TrainResult:
    """Train from ``checkpoint`` (None: from the start); the result of the run, its loss this sitting's."""
    # writes_named: a full disk while saving a checkpoint is one line, the checkpoints so far kept
    with writes_named(output_dir), progress_bars(progress):
        outcome = trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    return TrainResult(output_dir, clock.seconds(), n_examples, len(trainer.train_dataset),
                       _sitting_loss(_mean_over_processes(trainer, outcome.training_loss), trainer.state.global_step, checkpoint),
                       trainer.state.global_step, round(float(trainer.state.epoch or 0.0), 4))


def _remove_checkpoints_and_push(trainer: HeadRateTrainer, output_dir: Path, saved: Sequence[str], save_checkpoints: bool) -> None:
    """Once the model is saved: its checkpoints are removed (by the first process alone), then it is pushed where asked."""
    if trainer.is_world_process_zero():
        remove_checkpoints(Path(trainer.args.output_dir), save_checkpoints)
    push_final_model(trainer, output_dir, saved)


def _fresh_model(config: TrainConfig, choices: dict[str, Any], progress: bool, resumed: Path | None):
    """The seeded fresh model, tokenizer and encoder name; ``resumed``: the checkpoint a resumed run continues, whose
    BIO head's words the training windows and the saved model then tag."""
    words = checkpoint_word_units(resumed) if resumed is not None else None  # a checkpoint's unknown words refused first
    set_seed(config.seed)
    with progress_bars(progress):
        model, tokenizer, encoder = fresh_model_and_tokenizer(config)
    model.config.word_units = words or model.config.word_units
    if config.precision == "bf16" and choices["training"].get("attention") == "fp32":  # auto measured it faster here
        train_attention_in_fp32(model)
    return model, tokenizer, encoder


def _check_examples(examples: Any) -> None:
    """A list or tuple of :class:`Example`, or a TypeError naming what was given (a loaded file: its ``.examples``)."""
    if not isinstance(examples, (list, tuple)) or not all(isinstance(example, Example) for example in examples):
        got = a_type(examples) if not isinstance(examples, (list, tuple)) else \
            f"{a_type(examples)} of {next(type(e).__name__ for e in examples if not isinstance(e, Example))}"
        raise TypeError(f"train_model takes a list of Example (a loaded file's .examples, e.g. load_squad(path).examples), got {got}")


def _check_arguments(config: Any, output_dir: Any, checkpoint_steps: Any, callbacks: Any, network_args: Any,
                     data_name: Any = None) -> None:
    """Before any work: each argument of :func:`train_model` of a type it takes."""
    call = "train_model"
    instance_argument(data_name, str, "data_name", call, optional=True)
    instance_argument(config, TrainConfig, "config", call, hint=" (e.g. TrainConfig(encoder=...))")
    path_argument(output_dir, "output_dir", call)
    count_argument(checkpoint_steps, "checkpoint_steps", call)
    instance_argument(network_args, dict, "network_args", call, optional=True)
    cache_budget_bytes()  # the windows cache's size, before the output folder is made
    if callbacks is None:
        return
    stray = callbacks if not isinstance(callbacks, (list, tuple)) else next(
        (c for c in callbacks if not (isinstance(c, TrainerCallback) or (isinstance(c, type) and issubclass(c, TrainerCallback)))), None)
    if stray is not None:
        raise TypeError(f"{call}: callbacks is a list of TrainerCallback (instances or classes), "
                        f"{'holding' if stray is not callbacks else 'got'} {given_type(stray)}")


def _sitting_loss(mean_loss: float, global_step: int, checkpoint: Path | None) -> float | None:
    """Trainer's mean loss over this sitting's steps; None when it trained none (resumed from the run's last step,
    e.g. after a kill while the final model was saved), where Trainer reports 0.0."""
    return mean_loss if global_step > (checkpoint_step(checkpoint) if checkpoint else 0) else None


def _mean_over_processes(trainer: HeadRateTrainer, mean_loss: float) -> float:
    """Trainer's mean loss over all the processes of a torchrun job: each process's own mean holds the losses logged
    so far (already averaged over the processes) and then only its own batches' losses since, so rank 0's alone
    would be the loss of its share of the data; the mean of the processes' means is that of every batch."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() <= 1:
        return mean_loss
    value = torch.tensor(float(mean_loss), dtype=torch.float64, device=trainer.args.device)
    dist.all_reduce(value)  # the process group torchrun made, whatever state accelerate holds
    return float(value) / dist.get_world_size()


def _checked_run(examples: Sequence[Example], config: TrainConfig, output_dir: str | Path, overwrite: bool,
                 network_args: dict[str, Any] | None, evaluation: tuple[Evaluator | None, bool, int | None],
                 ) -> tuple[TrainConfig, dict[str, Any], Path]:
    """The checks before any work of :func:`train_model` (``evaluation``: its evaluator, ``save_checkpoints`` and
    ``checkpoint_steps``); returns the options at the precision training runs in, the precision choices (per phase, as
    the run record keeps them) and the output folder."""
    config = fit_default_windows(config)  # before the precision measurement, which runs windows of its length
    check_run_trackers(config.training_args, network_args)
    evaluator, save_checkpoints, checkpoint_steps = evaluation
    output_dir = Path(home_expanded(output_dir))
    args = check_run_options(config, output_dir, evaluator is not None, save_checkpoints, checkpoint_steps)
    if hasattr(evaluator, "examples"):  # as train warns of its --eval questions, once the evaluations are checked
        warn_shared_held_out(examples, evaluator.examples, stacklevel=4)  # train_model's caller
    names = getattr(evaluator, "metric_names", None)
    check_best_metric(args, names(config.heads) if names else None)
    if config.init_from:  # a config.json transformers rejects is one line, not a traceback from reading its encoder
        starting_point(config)
    check_output_folder(output_dir, overwrite)
    check_outputs_apart([output_dir], model_dirs=[config.encoder, config.init_from])
    choices = config.precision_choices()
    return replace(config, precision=choices["training"]["precision"]), choices, output_dir


def _finished_run(output_dir: str | Path, resume: bool, overwrite: bool) -> TrainResult | None:
    """The result of a run that was stopped while saving its model, which ``resume`` completes (:func:`finished_run`),
    read from its record; None where training goes on."""
    output_dir = Path(home_expanded(output_dir))
    if (record := finished_run(output_dir, resume, overwrite)) is None:
        return None
    return TrainResult(output_dir, float(record.get("seconds") or 0.0), record.get("n_examples"), record.get("n_windows"),
                       record.get("final_loss"), record.get("steps"), record.get("epochs_trained"))


def _refuse_diverged(trainer: Any, config: TrainConfig, output_dir: Path, save_checkpoints: bool) -> None:
    """A diverged run (NaN or infinite weights) is never saved as a model: no run record, so nothing reuses it; its
    checkpoints (the last one kept) diverged too, and are removed."""
    if trainer.is_world_process_zero():
        remove_checkpoints(Path(trainer.args.output_dir), save_checkpoints)
    broken = non_finite_weights(trainer.model)
    raise TrainingDivergedError(
        f"training diverged: {len(broken)} weight tensor(s) hold NaN or infinity (first: {broken[0]}), so no model is "
        f"saved in {output_dir}; train again with a lower learning rate ({argument('learning_rate', config.learning_rate)}, "
        f"{argument('head_learning_rate', config.head_learning_rate or config.learning_rate)})")


class TrainingDivergedError(ConfigError):
    """The trained weights are not finite: the options made training diverge."""


def _unanswerable(examples: Sequence[Example]) -> int:
    """The training questions without an answer: none leaves the no-answer score ([CLS], all O) untrained on them."""
    return sum(1 for example in examples if example.is_labelled and not example.is_answerable)


def _stages(examples: Sequence[Example], config: TrainConfig, data_name: str | None) -> dict[str, Any]:
    """What the model learned from, in every stage: ``training_questions``, the fingerprint of ``examples`` whole (each
    process of a torchrun job holds them all, and Trainer's sampler shares them out) joined with that of the model
    ``init_from`` continues, so a model continued in stages knows each stage's questions (a resumed run trains on the
    same ones; one continuing a model whose record keeps none says its fingerprint is partial); and ``training_data``,
    each stage's file (``data_name``; None: questions given from Python) and question count, earliest first (an earlier
    stage its record does not name: its count, its file None)."""
    earlier = (load_run_record(local_folder(config.init_from, revision=config.revision)) if config.init_from else None) or {}
    stages = earlier.get("training_data") or ([{"data": None, "questions": earlier.get("n_examples"), "continued_from": None}]
                                              if config.init_from else [])
    return {"training_questions": fingerprint(examples, earlier.get("training_questions"), continued=bool(config.init_from)),
            "training_data": [*stages, {"data": data_name, "questions": len(examples), "continued_from": config.init_from}]}


def _scored(trainer: HeadRateTrainer, evaluator: Evaluator | None) -> dict[str, Any]:
    """``evaluated_during_training``: the scores ``evaluator`` gave the model saved (the best one where the run loads
    it at the end, else the last scored), the optimizer step they were taken at, the file and the count of the questions
    (None: not known); None where nothing was scored."""
    scored = [entry for entry in trainer.state.log_history if any(key.startswith("eval_") for key in entry)]
    best = trainer.state.best_global_step if trainer.args.load_best_model_at_end else None
    chosen = [entry for entry in scored if best is None or entry.get("step") == best]
    if evaluator is None or not chosen:
        return {"evaluated_during_training": None}
    entry, questions = chosen[-1], getattr(evaluator, "examples", None)
    return {"evaluated_during_training": {
        "data": getattr(evaluator, "data_name", None), "questions": len(questions) if questions is not None else None,
        "step": entry.get("step"), "scores": {key.removeprefix("eval_"): value for key, value in entry.items() if key.startswith("eval_")},
        **({"best": True} if best is not None else {})}}


def _versions() -> dict[str, str]:
    import torch
    import transformers

    from .. import __version__

    return {"bio_mrc": __version__, "transformers": transformers.__version__, "torch": torch.__version__}


def _run_record(
    result: TrainResult, config: TrainConfig, encoder: str, earlier_seconds: float | None, checkpoint: Path | None,
    precision_choices: dict[str, Any] | None = None, unanswerable: int | None = None, history: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Provenance: how the model came about (the model folder runs without it); ``history``: what it learned from, in
    every stage (:func:`_stages`), and what it scored during training (:func:`_scored`)."""
    return {
        "train": config.to_dict(),
        "encoder_path": encoder,
        # The weights and tokenizer trained from (the encoder's, or init_from's): a comparison reuses the model only while
        # they are unchanged (bio_mrc.harness.models).
        "starting_point_digest": starting_point_digest(encoder),
        "seconds": result.seconds,  # every sitting's when resumed, if its checkpoint kept the time (see earlier_seconds)
        # Resumed: the sittings before this one; None when the checkpoint predates the clock, so "seconds" is this sitting's only.
        "earlier_seconds": earlier_seconds,
        "n_examples": result.n_examples,
        "n_windows": result.n_windows,
        # 0: the model abstains only by a no-answer threshold bio-mrc tune fits for it (bio_mrc.inference.abstention)
        "unanswerable_questions": unanswerable,
        # Hashes of every question trained on, earlier stages' too (bio_mrc.question_fingerprint): tune refuses them.
        "training_questions": (history or {}).get("training_questions"),
        "training_data": (history or {}).get("training_data"),  # each stage's file and question count, earliest first
        "steps": result.steps,  # optimizer steps, and the epochs they made: max_steps may end a run before its epochs
        "epochs_trained": result.epochs,
        "evaluated_during_training": (history or {}).get("evaluated_during_training"),  # held-out scores of the model saved
        "versions": _versions(),  # of the packages it was trained with
        "final_loss": result.final_loss,  # the mean over this sitting's steps when resumed; None when it trained none
        "resumed_from": checkpoint.name if checkpoint else None,
        "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
        # How "precision" was decided: explicit, or auto's choice (with the rates it measured) for training and answering.
        "precision_choice": precision_choices,
    }


# The training API, importable from this module.
__all__ = ["BIO_ONLY_CLASS_WEIGHTS", "CHECKPOINT_DIR", "DEFAULT_CHECKPOINT_STEPS", "FinishedModelError", "HeadRateTrainer", "ResumeError",
           "SharedHeldOutWarning", "TrainingDivergedError", "WindowsFittedWarning", "finished_run",
           "TRAINING_LOG_FILE", "TrainConfig", "TrainResult", "UnheldAnswersWarning", "check_output_folder",
           "load_run_record", "load_training_log", "scan_checkpoints", "train_model"]
