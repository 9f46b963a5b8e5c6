"""Fine-tuning with transformers' ``Trainer`` (runs unchanged under ``torchrun``/``accelerate``)."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Sequence

import torch
from transformers import AutoTokenizer, Trainer, TrainingArguments, set_seed

from ..encoders import resolve_encoder
from ..features.windows import FeatureConfig, build_features
from ..model import BioMrcForQuestionAnswering
from ..types import Example
from .collator import WindowCollator

RUN_FILE = "bio_mrc_run.json"
BIO_ONLY_CLASS_WEIGHTS = (10.0, 10.0, 1.0)


@dataclass
class TrainConfig:
    """Everything that decides a trained model: saved beside it and in reports."""

    encoder: str = "default"
    heads: str = "span+bio"
    span_loss_weight: float = 1.0
    # The token-mean BIO loss pulls about 1/100 as hard as the span loss at weight 1; 10 gave the best
    # joint decoding with the BIO decoding past 53 F1 (benchmarks/RESULTS.md, BIO quality).
    bio_loss_weight: float = 10.0
    bio_targets: str = "soft"
    span_targets: str = "one-hot"
    bio_loss_reduction: str = "token_mean"
    bio_prior: tuple[float, float, float] | None = (0.01, 0.02, 0.97)  # about SQuAD's tag frequencies
    # (w_B, w_I, w_O) in the BIO loss; (1, 1, 1) is the plain loss. None chooses by heads: a BIO-only model
    # weighs B/I tokens 10x (F1 36.6 -> 51.1 at the reference budget), a model with a span head uses the
    # plain loss (there the weights cost the span decoding 2.9 F1); benchmarks/RESULTS.md, BIO quality.
    bio_class_weights: tuple[float, float, float] | None = None
    tag_level: str = "word"
    max_seq_length: int = 384
    doc_stride: int = 128
    max_query_length: int = 64
    epochs: float = 1.0
    learning_rate: float = 1e-4
    # The freshly initialised heads' rate (None = learning_rate). At the encoder's rate the BIO head
    # hardly leaves the tag prior in a CPU-sized run (benchmarks/RESULTS.md, head learning rate).
    head_learning_rate: float | None = 5e-3
    batch_size: int = 16
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    seed: int = 42
    init_from: str | None = None  # a trained bio_mrc model to continue from (e.g. SQuAD -> MultiSpanQA)

    @property
    def resolved_bio_class_weights(self) -> tuple[float, float, float] | None:
        """The class weights the BIO loss uses (see ``bio_class_weights``); the marginal likelihood takes none."""
        if self.bio_class_weights is not None:
            return tuple(self.bio_class_weights)
        return BIO_ONLY_CLASS_WEIGHTS if self.heads == "bio" and self.bio_targets != "marginal" else None

    @property
    def features(self) -> FeatureConfig:
        return FeatureConfig(
            self.max_seq_length, self.doc_stride, self.max_query_length, self.bio_targets, self.span_targets, self.tag_level
        )

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


class HeadRateTrainer(Trainer):
    """``Trainer`` whose optimizer gives the head parameters their own learning rate.

    Heads start from random weights on top of a pretrained encoder; at the
    encoder's rate a linear head moves at most ``lr`` per weight and step, too
    slowly for the BIO head to leave the tag prior in a few hundred steps.
    The optimizer class and weight-decay groups stay Trainer's own.
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


def _fresh_model(config: TrainConfig) -> tuple[BioMrcForQuestionAnswering, str]:
    """New heads on the configured encoder, or a trained bio_mrc model to continue from; returns (model, its path)."""
    heads_and_weights = {
        "heads": config.heads, "span_loss_weight": config.span_loss_weight, "bio_loss_weight": config.bio_loss_weight,
        "bio_loss_reduction": config.bio_loss_reduction, "bio_prior": list(config.bio_prior) if config.bio_prior else None,
        "bio_class_weights": list(config.resolved_bio_class_weights) if config.resolved_bio_class_weights else None,
        "tag_level": config.tag_level,
    }
    if config.init_from:
        return BioMrcForQuestionAnswering.from_pretrained(config.init_from, **heads_and_weights), config.init_from
    encoder = resolve_encoder(config.encoder)
    return BioMrcForQuestionAnswering.from_encoder(encoder, **heads_and_weights), encoder


def train_model(
    examples: Sequence[Example],
    config: TrainConfig,
    output_dir: str | Path,
    save_checkpoints: bool = True,
    progress: bool = True,
) -> TrainResult:
    """Train a fresh model on ``examples`` and save it (with its tokenizer and config) in ``output_dir``."""
    output_dir = Path(output_dir)
    set_seed(config.seed)
    model, encoder = _fresh_model(config)
    tokenizer = AutoTokenizer.from_pretrained(encoder, use_fast=True)
    positions = getattr(model.config.encoder, "max_position_embeddings", None)
    if positions is not None and config.max_seq_length > positions:
        raise ValueError(f"max_seq_length {config.max_seq_length} exceeds the {positions} positions of encoder {encoder}")
    started = time.perf_counter()
    features = build_features(examples, tokenizer, config.features, desc="training windows")
    features = features.remove_columns(["offset_mapping", "word_offsets", "example_index"])
    args = TrainingArguments(
        output_dir=str(output_dir / "checkpoints"),
        num_train_epochs=config.epochs,
        learning_rate=config.learning_rate,
        per_device_train_batch_size=config.batch_size,
        warmup_steps=config.warmup_ratio,
        weight_decay=config.weight_decay,
        lr_scheduler_type="linear",
        seed=config.seed,
        logging_steps=25,
        save_strategy="steps" if save_checkpoints else "no",
        save_steps=500,
        save_total_limit=1,
        report_to="none",
        remove_unused_columns=False,
        train_sampling_strategy="group_by_length",
        disable_tqdm=not progress,
        dataloader_num_workers=0,
        dataloader_pin_memory=torch.cuda.is_available(),
    )
    trainer = HeadRateTrainer(
        model=model,
        head_learning_rate=config.head_learning_rate,
        args=args,
        train_dataset=features,
        data_collator=WindowCollator(pad_token_id=tokenizer.pad_token_id or 0),
    )
    outcome = trainer.train()
    seconds = time.perf_counter() - started
    trainer.save_model(str(output_dir))
    tokenizer.save_pretrained(str(output_dir))
    result = TrainResult(output_dir, seconds, len(examples), len(features), outcome.training_loss)
    record = {
        "train": config.to_dict(),
        "encoder_path": encoder,
        "seconds": seconds,
        "n_examples": len(examples),
        "n_windows": len(features),
        "final_loss": outcome.training_loss,
        "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    (output_dir / RUN_FILE).write_text(json.dumps(record, indent=2))
    return result


def load_run_record(model_dir: str | Path) -> dict[str, Any] | None:
    path = Path(model_dir) / RUN_FILE
    return json.loads(path.read_text()) if path.exists() else None
