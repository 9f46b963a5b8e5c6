"""``bio-mrc compare``: train (or reuse) every run, decode every way, score all on the same questions."""

from __future__ import annotations

import functools
import hashlib
import json
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..data.splits import question_set_hash, split_by_article
from ..data.squad import gold_texts, load_squad
from ..data.unanswerable import add_unanswerable
from ..decoding.postprocess import DecodeConfig, available_decodings, decode, merge_tag_log_probs
from ..decoding.windows import WindowOutputs
from ..metrics.tags import tag_scores
from ..errors import ConfigError
from ..io import atomic_write_json
from ..predict import (
    TrainedModel, apply_no_answer_threshold, save_tuned_settings, threshold_key, tuning_provenance, write_prediction_files,
)
from ..training.train import TrainConfig, load_run_record, train_model
from ..tuning import tune_bio_length_prior, tune_no_answer_threshold
from ..types import Example, Prediction, content_hash
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
    blob = json.dumps({"train": train.to_dict(), "questions": content_hash(train_split.examples)}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def obtain_model(run: RunSpec, seed: int, train_split: Split, models_dir: Path, progress: bool) -> tuple[Path, float, bool]:
    """Train the run, or reuse it when a model with the same key exists. Returns (dir, train seconds, reused)."""
    config = replace(run.train, seed=seed)
    model_dir = models_dir / f"{run.name}-seed{seed}-{model_key(config, train_split)}"
    record = load_run_record(model_dir)  # written last, so a model cut short by a crash is never reused
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


def run_comparison(config: CompareConfig, data_dir: str | Path, output_dir: str | Path, progress: bool = False) -> dict[str, Any]:
    """Everything the report needs, as plain data (arrays per question included).

    Finished work is reused: a model whose run record exists is not retrained, and the
    cells of a model already scored on the same questions with the same decoding options
    are read back from ``output_dir/cells``, so an interrupted comparison run again
    redoes only what was not finished.
    """
    data_dir, output_dir = Path(data_dir), Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    train_split = resolve_split(config.train, data_dir)
    eval_split = resolve_split(config.eval, data_dir)
    tune_split = resolve_split(config.tune, data_dir) if config.tune else None
    _check_disjoint(train_split, eval_split, tune_split)
    if eval_split.version == "2.0" and (tune_split is None or tune_split.version != "2.0"):
        raise ConfigError("a SQuAD 2.0 evaluation needs a SQuAD 2.0 'tune' split (other articles) to tune no-answer thresholds on")
    cells: list[dict[str, Any]] = []
    for seed in config.seeds:
        for run in config.runs:
            model_dir, train_seconds, reused = obtain_model(run, seed, train_split, output_dir / "models", progress)
            cache = output_dir / "cells" / f"{model_dir.name}-{_cells_key(config, eval_split, tune_split)}.json"
            model_cells = _read_cells(cache) if reused else None  # a model trained just now has no cells yet
            if model_cells is None:
                model_cells = _score_model(run, seed, model_dir, config.decode, eval_split, tune_split, output_dir, progress)
                cache.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_json(cache, model_cells)
            cells += [{**cell, "train_seconds": train_seconds, "reused_model": reused} for cell in model_cells]
    return {
        "config": config.to_dict(),
        "package_version": __version__,
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "train": _describe(train_split),
        "eval": {**_describe(eval_split), "version": eval_split.version},
        "tune": None if tune_split is None else _describe(tune_split),
        "eval_examples": eval_split.examples,
        "cells": [{**cell, "em": np.asarray(cell["em"]), "f1": np.asarray(cell["f1"])} for cell in cells],
    }


def _describe(split: Split) -> dict[str, Any]:
    return {"description": split.description, "questions": len(split.examples), "question_hash": question_set_hash(split.examples)}



def _cells_key(config: CompareConfig, eval_split: Split, tune_split: Split | None) -> str:
    """What a model's cells depend on besides the model: the questions, the decoding options and the
    package's code (features, decoders and metrics that change between versions change the cells)."""
    blob = json.dumps({
        "decode": config.decode.__dict__, "eval": content_hash(eval_split.examples),
        "tune": content_hash(tune_split.examples) if tune_split else None, "code": code_fingerprint(),
    }, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of the package's Python sources."""
    digest = hashlib.sha256()
    for source in sorted(Path(__file__).resolve().parents[1].rglob("*.py")):
        digest.update(source.read_bytes())
    return digest.hexdigest()[:12]


def _read_cells(path: Path) -> list[dict[str, Any]] | None:
    """The cached cells of one model, or None when there are none (a cache file is written whole or not at all)."""
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _score_model(
    run: RunSpec, seed: int, model_dir: Path, decode_options: DecodeConfig, eval_split: Split, tune_split: Split | None,
    output_dir: Path, progress: bool,
) -> list[dict[str, Any]]:
    """Every decoding of one trained model on the evaluation questions, tuned on the tuning questions."""
    trained = TrainedModel.load(model_dir, progress=progress)
    outputs, inference_seconds = timed_windows(trained, eval_split, progress)
    tune_outputs = timed_windows(trained, tune_split, progress)[0] if tune_split else None
    decode_config, tuned_prior = _tuned_decode_config(decode_options, run, tune_outputs, tune_split)
    thresholds: dict[str, float] = {}
    cells = []
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
            "inference_seconds": inference_seconds, "threshold": threshold,
            "bio_length_prior": decode_config.bio_length_prior if decoding in ("bio", "joint") else None,
            **cell, "em": cell["em"].tolist(), "f1": cell["f1"].tolist(),
        })
    if thresholds or tuned_prior is not None:
        tuned = {"bio_length_prior": tuned_prior} if tuned_prior is not None else {}
        saved = save_tuned_settings(model_dir, trained.model.config, thresholds, tuned, tuning_provenance(tune_split.description, tune_split.examples), overwrite=False)
        for cell in cells:
            cell["tuning_saved_with_model"] = saved
    return cells


def _check_disjoint(train: Split, evaluation: Split, tune: Split | None) -> None:
    named = [("train", train), ("eval", evaluation)] + ([("tune", tune)] if tune else [])
    for i, (name_a, a) in enumerate(named):
        for name_b, b in named[i + 1 :]:
            shared = {ex.id for ex in a.examples} & {ex.id for ex in b.examples}
            contexts = {ex.context for ex in a.examples} & {ex.context for ex in b.examples}
            if shared or contexts:
                raise ConfigError(
                    f"the {name_a} and {name_b} splits overlap ({len(shared)} questions, {len(contexts)} contexts): "
                    "split by article so no paragraph is seen in training and evaluation"
                )


def compare(config: CompareConfig, data_dir: str | Path, output_dir: str | Path, progress: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the comparison and write its report; returns (results, summary)."""
    from transformers import AutoTokenizer

    from .report import token_counts, write_report

    results = run_comparison(config, data_dir, output_dir, progress)
    tokenizer = AutoTokenizer.from_pretrained(results["cells"][0]["model_dir"])
    answer_tokens, context_tokens = token_counts(results["eval_examples"], tokenizer)
    summary = write_report(results, output_dir, answer_tokens, context_tokens)
    return results, summary
