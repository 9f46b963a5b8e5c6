"""Running a saved model: the one layer ``predict``, ``tune``, ``extract`` and ``compare`` go through.

* :mod:`.loading`: a model folder -> model, tokenizer, window settings (``TrainedModel``);
* :mod:`.forward`: the forward pass over stride windows (``WindowOutputs``) through a runner;
* :mod:`.onnx_runner`: ONNX Runtime as a runner, for exported folders; :mod:`.onnx` writes those exports;
* :mod:`.conversion`: transformers' extractive QA models read into bio_mrc models and written from them;
* :mod:`.answers`: decoding with the no-answer thresholds saved with the model;
* :mod:`.tuning`: tuning those settings on held-out questions and saving them; :mod:`.held_out`: whether they are held out;
  :mod:`.model_tuning`: a model tuned and saved, in place or as a copy (``tune_model``);
* :mod:`.evaluation`: a predictions file scored with the official metrics (``evaluate_predictions``);
* :mod:`.files`: official prediction, n-best and ``na_prob`` files, and the answers stream's lines;
* :mod:`.streaming`: prediction a chunk of questions at a time into the answers stream, resumable;
  :mod:`.sharding`: its share of the chunks for each process under ``torchrun``;
* :mod:`.extract`: ``AnswerExtractor``, question + context in, answer spans out;
* :mod:`.long_questions`: a question past the model's ``max_query_length``, answered as its first tokens, said (``LongQuestionWarning``);
* :mod:`.during_training`: ``TrainingEvaluator``, the official scores of a model while it trains;
* :mod:`.pipeline`: the same as transformers' ``pipeline("bio-mrc-qa", model=DIR)`` (transformers knows it from ``import bio_mrc`` on).
"""

from importlib import import_module
from typing import Any

# Each name loads its module on first use, so a light module of this package (.defaults) imports no torch.
# Written as "module:attribute" so the code fingerprint of a cache (bio_mrc.code_fingerprint) follows them.
_LAZY = dict(reversed(reference.split(":")) for reference in (
    "bio_mrc.inference.answers:apply_no_answer_threshold", "bio_mrc.inference.answers:decode_with_thresholds",
    "bio_mrc.inference.answers:no_answer_probability", "bio_mrc.inference.answers:threshold_key",
    "bio_mrc.inference.conversion:QaCheckpointConversion", "bio_mrc.inference.conversion:QaCheckpointExport",
    "bio_mrc.inference.conversion:convert_qa_checkpoint", "bio_mrc.inference.conversion:export_qa_checkpoint",
    "bio_mrc.inference.during_training:TrainingEvaluator",
    "bio_mrc.inference.evaluation:Evaluation", "bio_mrc.inference.evaluation:evaluate_predictions",
    "bio_mrc.inference.extract:AnswerExtractor",
    "bio_mrc.inference.files:DecodingFiles", "bio_mrc.inference.files:write_prediction_files",
    "bio_mrc.inference.forward:predict_windows", "bio_mrc.inference.forward:run_windows",
    "bio_mrc.inference.held_out:check_held_out",
    "bio_mrc.inference.loading:TrainedModel", "bio_mrc.model_folder:check_model_dir",
    "bio_mrc.inference.model_tuning:ModelTuning", "bio_mrc.inference.model_tuning:tune_model",
    "bio_mrc.inference.onnx:OnnxExport", "bio_mrc.inference.onnx:export_onnx",
    "bio_mrc.inference.pipeline:BioMrcQuestionAnsweringPipeline", "bio_mrc.inference.pipeline:register_pipeline",
    "bio_mrc.inference.sharding:Shard",
    "bio_mrc.inference.streaming:PredictionFiles",
    "bio_mrc.inference.streaming:StreamPlan", "bio_mrc.inference.streaming:predict_to_files",
    "bio_mrc.inference.tuning:save_tuned_settings", "bio_mrc.inference.tuning:tune_settings",
    "bio_mrc.inference.tuning:tuning_provenance",
))


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})  # the lazy names too, as bio_mrc's own


__all__ = [
    "AnswerExtractor", "BioMrcQuestionAnsweringPipeline", "DecodingFiles", "Evaluation", "ModelTuning", "OnnxExport",
    "PredictionFiles", "QaCheckpointConversion", "QaCheckpointExport", "Shard", "StreamPlan", "TrainedModel", "TrainingEvaluator",
    "apply_no_answer_threshold", "check_held_out", "check_model_dir", "convert_qa_checkpoint", "decode_with_thresholds",
    "evaluate_predictions", "export_onnx", "export_qa_checkpoint", "no_answer_probability", "predict_to_files",
    "predict_windows", "register_pipeline",
    "run_windows", "save_tuned_settings", "threshold_key", "tune_model", "tune_settings", "tuning_provenance",
    "write_prediction_files",
]
