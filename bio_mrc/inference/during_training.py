"""Scores while a model trains: the official scores of every decoding its heads allow on held-out questions (SQuAD's
F1 and exact match; MultiSpanQA's EM and PM F1 for multi-span questions), whenever ``TrainingArguments.eval_strategy``
asks (``train_model(evaluator=...)``)."""

from __future__ import annotations

from typing import Any, Sequence

from datasets import Dataset

from .. import registry
from ..decoding.postprocess import DecodeConfig, available_decodings
from ..arguments import instance_argument
from ..features.long_questions import note_long_questions
from ..features.windows import FeatureConfig, build_features
from ..model import BioMrcForQuestionAnswering
from ..precision import DEFAULT_PRECISION, check_precision
from ..types import Example
from .answers import decode_answers
from .forward import INFERENCE_BATCH_SIZE, run_windows


class TrainingEvaluator:
    """Called with the model in training and its tokenizer, returns ``{"<decoding>_<score>": …}`` (percent) on
    ``examples``, answered as ``predict`` answers them (span lists, each further span kept by the model's span-count
    rule, where the task's answers are span lists) and scored as ``task`` (a registered task or its name; None: SQuAD
    ``version``'s) scores them: SQuAD's ``f1`` and ``exact``, a multi-span task's span lists with MultiSpanQA's ``em_f1`` and
    ``pm_f1`` (the task's ``training_scores``; a task of its own without them: its ``metrics``); windows are built once, at the first call.
    ``precision``: of the forward passes (:mod:`bio_mrc.precision`; None: auto, as ``predict`` answers by default); the
    CLI and a comparison pass the run's own, so a run pinned to fp32 is scored in fp32 during training too.
    ``data_name``: the file the questions were read from, named in the one note of those cut to ``max_query_length``
    (None: not said)."""

    def __init__(self, examples: Sequence[Example], version: str | None = "1.1", batch_size: int = INFERENCE_BATCH_SIZE,
                 task: registry.TaskEntry | str | None = None, precision: str | None = None,
                 data_name: str | None = None) -> None:
        if not examples:
            raise ValueError("evaluation during training needs questions to evaluate on; got none")
        self.examples, self.batch_size, self.precision = list(examples), batch_size, check_precision(precision or DEFAULT_PRECISION)
        self.data_name = instance_argument(data_name, str, "data_name", "TrainingEvaluator", optional=True)
        self.task = registry.task(task) if isinstance(task, str) else task or registry.squad_task(str(version).removeprefix("v"))
        self.gold = registry.resolve(self.task.gold)(self.examples)
        self._features: Dataset | None = None

    def __call__(self, model: BioMrcForQuestionAnswering, tokenizer: Any) -> dict[str, float]:
        config = model.config
        if self._features is None:
            windows = FeatureConfig(max_seq_length=config.max_seq_length, doc_stride=config.doc_stride,
                                    max_query_length=config.max_query_length, tag_level=config.tag_level,
                                    word_units=config.word_units)
            self._features = build_features(self.examples, tokenizer, windows, with_targets=False)
            if self.data_name is not None:
                note_long_questions(self._features, self.examples, windows.max_query_length, self.data_name)
        outputs = run_windows(model, self._features, tokenizer.pad_token_id or 0, self.batch_size, progress=False,
                              precision=self.precision)
        decode = self.task.decode_config(DecodeConfig(max_answer_length=getattr(config, "max_answer_length", None)))  # set as training began
        scores = {}
        for decoding in available_decodings(config.heads):
            predictions = decode_answers(outputs, self.examples, decoding, decode, multi_span=decode.multi_span,
                                         span_count_rules=getattr(config, "min_span_probabilities", None))
            answers = {p.id: self.task.answer(p) for p in predictions}
            official = registry.resolve(self.task.official)(self.task, self.gold, answers, None)
            for name in self.task.scores_during_training():
                scores[f"{decoding}_{name}"] = self.task.training_score(name, official)
        return scores

    def metric_names(self, heads: str) -> list[str]:
        """The names of the scores it gives a model with ``heads`` (``span_f1``, ``span_exact``, ...)."""
        return metric_names(self.task, heads)


def metric_names(task: registry.TaskEntry, heads: str) -> list[str]:
    """The scores evaluation during training gives a model with ``heads`` on questions of ``task``."""
    return [f"{decoding}_{score}" for decoding in available_decodings(heads) for score in task.scores_during_training()]


__all__ = ["TrainingEvaluator", "metric_names"]
