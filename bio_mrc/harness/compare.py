"""``bio-mrc compare``: train (or reuse) every run, decode every way, score all on the same questions."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .. import __version__
from ..data.splits import question_set_hash, split_by_article
from ..data.squad import gold_texts, load_squad
from ..data.unanswerable import add_unanswerable
from ..decoding.postprocess import DecodeConfig, available_decodings, decode, merge_tag_log_probs
from ..decoding.windows import WindowOutputs
from ..metrics.tags import tag_scores
from ..predict import TrainedModel, apply_no_answer_threshold, threshold_key, write_prediction_files
from ..training.train import RUN_FILE, TrainConfig, load_run_record, train_model
from ..tuning import tune_bio_length_prior, tune_no_answer_threshold
from ..types import Example, Prediction
from .config import CompareConfig, DataSpec, RunSpec
from .scoring import per_question_scores, tag_sequences


@dataclass
class Split:
    examples: list[Example]
    version: str
    description: str

    @property
    def gold(self) -> dict[str, list[str]]:
        return gold_texts(self.examples)


def resolve_split(spec: DataSpec, data_dir: Path) -> Split:
    """The questions a data entry names; the same entry always gives the same questions."""
    path = Path(spec.path) if Path(spec.path).is_absolute() else data_dir / spec.path
    data = load_squad(path, limit=None if spec.split or spec.limit is None else spec.skip + spec.limit)
    examples = data.examples
    if spec.split:
        examples = split_by_article(examples, spec.split["fractions"], seed=spec.split.get("seed", 0))[spec.split["part"]]
    examples = examples[spec.skip : spec.skip + spec.limit if spec.limit else None]
    if spec.unanswerable_ratio:
        examples = add_unanswerable(examples, spec.unanswerable_ratio, seed=spec.split.get("seed", 0) if spec.split else 0)
    version = "2.0" if data.is_v2 or any(not ex.is_answerable for ex in examples) else "1.1"
    return Split(examples, version, spec.describe())


def model_key(train: TrainConfig, train_split: Split) -> str:
    """Same configuration on the same training questions -> same key -> the model is reused."""
    blob = json.dumps({"train": train.to_dict(), "questions": question_set_hash(train_split.examples)}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def obtain_model(run: RunSpec, seed: int, train_split: Split, models_dir: Path, progress: bool) -> tuple[Path, float, bool]:
    """Train the run, or reuse it when a model with the same key exists. Returns (dir, train seconds, reused)."""
    config = replace(run.train, seed=seed)
    model_dir = models_dir / f"{run.name}-seed{seed}-{model_key(config, train_split)}"
    record = load_run_record(model_dir)
    if record is not None and record.get("train") == config.to_dict():
        return model_dir, float(record["seconds"]), True
    result = train_model(train_split.examples, config, model_dir, save_checkpoints=False, progress=progress)
    return model_dir, result.seconds, False


def timed_windows(trained: TrainedModel, split: Split, progress: bool) -> tuple[WindowOutputs, float]:
    started = time.perf_counter()
    outputs = trained.windows(split.examples, progress=progress)
    return outputs, time.perf_counter() - started


def _tuned_decode_config(
    config: DecodeConfig, run: RunSpec, tune_outputs: WindowOutputs | None, tune_split: Split | None
) -> tuple[DecodeConfig, float | None]:
    """The comparison's decoding options with the BIO length prior tuned on the tuning split
    (when the config leaves it open, the model has a BIO head and there is a tuning split)."""
    if config.bio_length_prior is not None:
        return config, None
    if tune_outputs is None or "bio" not in run.train.heads.split("+"):
        return replace(config, bio_length_prior=0.0), None
    prior, _ = tune_bio_length_prior(tune_outputs, tune_split.examples, config)
    return replace(config, bio_length_prior=prior), prior


def evaluate_cell(
    outputs: WindowOutputs,
    split: Split,
    decoding: str,
    config: DecodeConfig,
    threshold: float | None,
) -> tuple[list[Prediction], dict[str, Any]]:
    """Decode one model one way and score every question."""
    decode_config = replace(config, require_answer=split.version == "1.1")
    started = time.perf_counter()
    predictions = apply_no_answer_threshold(decode(outputs, split.examples, decoding, decode_config), threshold)
    seconds = time.perf_counter() - started
    ids = [ex.id for ex in split.examples]
    answers = {p.id: p.answer for p in predictions}
    em, f1 = per_question_scores(split.gold, answers, ids, split.version)
    cell: dict[str, Any] = {"em": em, "f1": f1, "answers": [answers[i] for i in ids], "decode_seconds": seconds}
    if decoding == "bio":  # tag-level scores of the most probable tag sequence
        merged = merge_tag_log_probs(outputs, len(split.examples))
        tagged = decode(outputs, split.examples, "bio", replace(decode_config, multi_span=True))
        gold_tags, pred_tags = tag_sequences(merged, split.examples, apply_no_answer_threshold(tagged, threshold))
        cell["tag_scores"] = tag_scores(gold_tags, pred_tags, strict=True)
    return predictions, cell


def run_comparison(config: CompareConfig, data_dir: str | Path, output_dir: str | Path, progress: bool = True) -> dict[str, Any]:
    """Everything the report needs, as plain data (arrays per question included)."""
    data_dir, output_dir = Path(data_dir), Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    train_split = resolve_split(config.train, data_dir)
    eval_split = resolve_split(config.eval, data_dir)
    tune_split = resolve_split(config.tune, data_dir) if config.tune else None
    _check_disjoint(train_split, eval_split, tune_split)
    if eval_split.version == "2.0" and (tune_split is None or tune_split.version != "2.0"):
        raise ValueError("a SQuAD 2.0 evaluation needs a SQuAD 2.0 'tune' split (other articles) to tune no-answer thresholds on")

    cells: list[dict[str, Any]] = []
    for seed in config.seeds:
        for run in config.runs:
            model_dir, train_seconds, reused = obtain_model(run, seed, train_split, output_dir / "models", progress)
            trained = TrainedModel.load(model_dir)
            outputs, inference_seconds = timed_windows(trained, eval_split, progress)
            tune_outputs = timed_windows(trained, tune_split, progress)[0] if tune_split else None
            decode_config, tuned_prior = _tuned_decode_config(config.decode, run, tune_outputs, tune_split)
            thresholds: dict[str, float] = {}
            for decoding in available_decodings(run.train.heads):
                threshold = None
                if tune_outputs is not None and tune_split.version == "2.0":
                    tune_predictions = decode(tune_outputs, tune_split.examples, decoding, replace(decode_config, require_answer=False))
                    threshold, _ = tune_no_answer_threshold(tune_predictions, tune_split.gold)
                    thresholds[threshold_key(decoding, decode_config)] = threshold
                predictions, cell = evaluate_cell(outputs, eval_split, decoding, decode_config, threshold)
                write_prediction_files(
                    predictions, output_dir / "predictions" / f"{run.name}-seed{seed}-{decoding}.json",
                    with_na_probs=eval_split.version == "2.0",
                )
                cells.append({
                    "run": run.name, "decoding": decoding, "seed": seed, "model_dir": str(model_dir),
                    "train_seconds": train_seconds, "reused_model": reused,
                    "inference_seconds": inference_seconds, "threshold": threshold,
                    "bio_length_prior": decode_config.bio_length_prior if decoding in ("bio", "joint") else None, **cell,
                })
            if thresholds or tuned_prior is not None:  # saved with the model, so predict/extract apply the same values
                trained.model.config.no_answer_thresholds = {**trained.thresholds, **thresholds} or None  # -inf survives JSON as -Infinity
                if tuned_prior is not None:
                    trained.model.config.bio_length_prior = tuned_prior
                trained.model.config.save_pretrained(str(model_dir))

    return {
        "config": config.to_dict(),
        "package_version": __version__,
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "train": {"description": train_split.description, "questions": len(train_split.examples),
                  "question_hash": question_set_hash(train_split.examples)},
        "eval": {"description": eval_split.description, "questions": len(eval_split.examples), "version": eval_split.version,
                 "question_hash": question_set_hash(eval_split.examples)},
        "tune": None if tune_split is None else {"description": tune_split.description, "questions": len(tune_split.examples),
                                                 "question_hash": question_set_hash(tune_split.examples)},
        "eval_examples": eval_split.examples,
        "cells": cells,
    }


def _check_disjoint(train: Split, evaluation: Split, tune: Split | None) -> None:
    named = [("train", train), ("eval", evaluation)] + ([("tune", tune)] if tune else [])
    for i, (name_a, a) in enumerate(named):
        for name_b, b in named[i + 1 :]:
            shared = {ex.id for ex in a.examples} & {ex.id for ex in b.examples}
            contexts = {ex.context for ex in a.examples} & {ex.context for ex in b.examples}
            if shared or contexts:
                raise ValueError(
                    f"the {name_a} and {name_b} splits overlap ({len(shared)} questions, {len(contexts)} contexts): "
                    "split by article so no paragraph is seen in training and evaluation"
                )


def compare(config: CompareConfig, data_dir: str | Path, output_dir: str | Path, progress: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the comparison and write its report; returns (results, summary)."""
    from transformers import AutoTokenizer

    from .report import token_counts, write_report

    results = run_comparison(config, data_dir, output_dir, progress)
    tokenizer = AutoTokenizer.from_pretrained(results["cells"][0]["model_dir"])
    answer_tokens, context_tokens = token_counts(results["eval_examples"], tokenizer)
    summary = write_report(results, output_dir, answer_tokens, context_tokens)
    return results, summary
