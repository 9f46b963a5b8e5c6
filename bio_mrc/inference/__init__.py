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
* :mod:`.pipeline`: the same as transformers' ``pipeline("bio-mrc-qa", model=DIR)`` (registered on import).
"""

from .answers import apply_no_answer_threshold, decode_with_thresholds, no_answer_probability, threshold_key
from .during_training import TrainingEvaluator
from .extract import AnswerExtractor
from .files import write_prediction_files
from .forward import predict_windows, run_windows
from .loading import TrainedModel, check_model_dir
from .pipeline import BioMrcQuestionAnsweringPipeline, register_pipeline
from .sharding import Shard
from .streaming import StreamPlan, predict_to_files
from .tuning import save_tuned_settings, tune_settings, tuning_provenance

__all__ = [
    "AnswerExtractor", "BioMrcQuestionAnsweringPipeline", "Shard", "StreamPlan", "TrainedModel", "TrainingEvaluator",
    "apply_no_answer_threshold", "check_model_dir", "decode_with_thresholds", "no_answer_probability", "predict_to_files",
    "predict_windows", "register_pipeline",
    "run_windows", "save_tuned_settings", "threshold_key", "tune_settings", "tuning_provenance",
    "write_prediction_files",
]
