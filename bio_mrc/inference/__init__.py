"""Running a saved model: the one layer ``predict``, ``tune``, ``extract`` and ``compare`` go through.

* :mod:`.loading`: a model folder -> model, tokenizer, window settings (``TrainedModel``);
* :mod:`.forward`: the forward pass over stride windows (``WindowOutputs``) through a runner;
* :mod:`.onnx_runner`: ONNX Runtime as a runner, for exported folders; :mod:`.onnx` writes those exports;
* :mod:`.answers`: decoding with the no-answer thresholds saved with the model;
* :mod:`.tuning`: tuning those settings on held-out questions and saving them;
* :mod:`.files`: official prediction, n-best and ``na_prob`` files, and the answers stream's lines;
* :mod:`.streaming`: prediction a chunk of questions at a time into the answers stream, resumable;
  :mod:`.sharding`: its share of the chunks for each process under ``torchrun``;
* :mod:`.extract`: ``AnswerExtractor``, question + context in, answer spans out;
* :mod:`.during_training`: ``TrainingEvaluator``, the official scores of a model while it trains;
* :mod:`.pipeline`: the same as transformers' ``pipeline("bio-mrc-qa", model=DIR)`` (transformers knows it from ``import bio_mrc`` on).
"""

from importlib import import_module
from typing import Any

# Each name loads its module on first use, so a light module of this package (.defaults) imports no torch.
_LAZY = {
    "apply_no_answer_threshold": ".answers", "decode_with_thresholds": ".answers", "no_answer_probability": ".answers",
    "threshold_key": ".answers",
    "TrainingEvaluator": ".during_training",
    "AnswerExtractor": ".extract",
    "write_prediction_files": ".files",
    "predict_windows": ".forward", "run_windows": ".forward",
    "TrainedModel": ".loading", "check_model_dir": ".loading",
    "BioMrcQuestionAnsweringPipeline": ".pipeline", "register_pipeline": ".pipeline",
    "Shard": ".sharding",
    "StreamPlan": ".streaming", "predict_to_files": ".streaming",
    "save_tuned_settings": ".tuning", "tune_settings": ".tuning", "tuning_provenance": ".tuning",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AnswerExtractor", "BioMrcQuestionAnsweringPipeline", "Shard", "StreamPlan", "TrainedModel", "TrainingEvaluator",
    "apply_no_answer_threshold", "check_model_dir", "decode_with_thresholds", "no_answer_probability", "predict_to_files",
    "predict_windows", "register_pipeline",
    "run_windows", "save_tuned_settings", "threshold_key", "tune_settings", "tuning_provenance",
    "write_prediction_files",
]
