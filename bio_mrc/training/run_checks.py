"""A training run's options checked together before any work (no data read, no model built): evaluations and the
questions they score, the ``TrainingArguments`` they make with the package's own, and windows the encoder can fill."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from transformers import TrainingArguments

from ..errors import ConfigError, argument
from ..json_syntax import json_value
from ..qa_checkpoints import config_positions
from .config import TrainConfig
from .run_start import windows_past_positions
from .trainer import source_encoder_config, training_arguments


def check_run_options(config: TrainConfig, output_dir: str | Path, evaluating: bool, save_checkpoints: bool = True,
                      checkpoint_steps: int | None = None) -> TrainingArguments:
    """The run's ``TrainingArguments`` as training builds them (its ``training_args`` over the package's own, with
    ``checkpoint_steps``), refused in one line where they do not fit together or with ``evaluating`` (questions to
    evaluate on are given)."""
    args = training_arguments(config, Path(output_dir), save_checkpoints, False, checkpoint_steps)
    check_evaluation(args.eval_strategy.value, evaluating)
    return args


def check_evaluation(eval_strategy: str, evaluating: bool) -> None:
    """Evaluations need questions, and questions to evaluate on need evaluations (never silently unused)."""
    if eval_strategy != "no" and not evaluating:
        raise ConfigError(f"training_args eval_strategy {json_value(eval_strategy)} needs questions to evaluate on "
                          f"({argument('evaluator')})")
    if eval_strategy == "no" and evaluating:
        raise ConfigError(f"questions to evaluate on during training ({argument('evaluator')}) need evaluations: add "
                          "'{\"eval_strategy\": \"steps\", \"eval_steps\": N}' (or \"epoch\") to the training args")


def check_best_metric(args: TrainingArguments, names: Sequence[str] | None) -> None:
    """``load_best_model_at_end`` picks by ``metric_for_best_model`` (``loss`` unless set): refused when it names no
    score of ``names`` (those the evaluation gives, where known), which Trainer would find at the first evaluation."""
    if not args.load_best_model_at_end or names is None:
        return
    if args.metric_for_best_model.removeprefix("eval_") not in names:
        raise ConfigError(f"training_args metric_for_best_model {json_value(args.metric_for_best_model)} is no score of the "
                          f"evaluation during training, which gives {', '.join(names)}")


def check_windows_fit(config: TrainConfig, source: str) -> None:
    """Windows longer than the positions of the encoder ``source`` holds (the one ``init_from`` continues, or the
    encoder), read from its config alone: training refuses them alike once the model is built."""
    try:
        encoder_config = source_encoder_config(config, source)
    except (OSError, ValueError):  # the model's own load says why
        return
    positions = config_positions(encoder_config)
    if positions is not None and config.max_seq_length > positions:
        raise ConfigError(windows_past_positions(config.max_seq_length, positions, source))


__all__ = ["check_best_metric", "check_evaluation", "check_run_options", "check_windows_fit"]
