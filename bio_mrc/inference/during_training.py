"""Scores while a model trains: the official SQuAD F1 and exact match of every decoding its heads allow,
on held-out questions, whenever ``TrainingArguments.eval_strategy`` asks (``train_model(evaluator=...)``)."""

from __future__ import annotations

from typing import Any, Sequence

from datasets import Dataset

from .. import registry
from ..data.squad import gold_texts
from ..decoding.postprocess import DecodeConfig, available_decodings
from ..features.windows import FeatureConfig, build_features
from ..metrics.squad_official import squad_metrics
from ..model import BioMrcForQuestionAnswering
from ..types import Example
from .answers import decode_with_thresholds
from .forward import INFERENCE_BATCH_SIZE, run_windows


class TrainingEvaluator:
    """Called with the model in training and its tokenizer, returns ``{"<decoding>_f1": …, "<decoding>_exact": …}``
    (percent) on ``examples``, scored as SQuAD ``version`` scores them; windows are built once, at the first call."""

    def __init__(self, examples: Sequence[Example], version: str = "1.1", batch_size: int = INFERENCE_BATCH_SIZE) -> None:
        if not examples:
            raise ValueError("evaluation during training needs questions to evaluate on; got none")
        self.examples, self.task, self.batch_size = list(examples), registry.squad_task(version.removeprefix("v")), batch_size
        self.gold = gold_texts(self.examples)
        self._features: Dataset | None = None

    def __call__(self, model: BioMrcForQuestionAnswering, tokenizer: Any) -> dict[str, float]:
        config = model.config
        if self._features is None:
            windows = FeatureConfig(max_seq_length=config.max_seq_length, doc_stride=config.doc_stride,
                                    max_query_length=config.max_query_length, tag_level=config.tag_level)
            self._features = build_features(self.examples, tokenizer, windows, with_targets=False)
        outputs = run_windows(model, self._features, tokenizer.pad_token_id or 0, self.batch_size, progress=False)
        decode = self.task.decode_config(DecodeConfig())
        scores = {}
        for decoding in available_decodings(config.heads):
            predictions = decode_with_thresholds(outputs, self.examples, decoding, decode)
            official = squad_metrics(self.gold, {p.id: p.answer for p in predictions}, self.task.squad_version)
            scores[f"{decoding}_f1"] = official["f1"]
            scores[f"{decoding}_exact"] = official.get("exact_match", official.get("exact"))
        return scores

    @staticmethod
    def metric_names(heads: str) -> list[str]:
        """The names of the scores it gives a model with ``heads`` (``span_f1``, ``span_exact``, ...)."""
        return [f"{decoding}_{score}" for decoding in available_decodings(heads) for score in ("f1", "exact")]


__all__ = ["TrainingEvaluator"]
