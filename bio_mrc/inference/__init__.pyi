"""Type hints of ``bio_mrc.inference``'s exports, which ``__init__.py`` loads on first use (tests/test_packaging.py
keeps the two in step)."""

from bio_mrc.model_folder.folder_checks import check_model_dir as check_model_dir

from .answers import (
    apply_no_answer_threshold as apply_no_answer_threshold,
    decode_with_thresholds as decode_with_thresholds,
    no_answer_probability as no_answer_probability,
    threshold_key as threshold_key,
)
from .conversion import (
    QaCheckpointConversion as QaCheckpointConversion,
    QaCheckpointExport as QaCheckpointExport,
    convert_qa_checkpoint as convert_qa_checkpoint,
    export_qa_checkpoint as export_qa_checkpoint,
)
from .during_training import TrainingEvaluator as TrainingEvaluator
from .evaluation import Evaluation as Evaluation, evaluate_predictions as evaluate_predictions
from .extract import AnswerExtractor as AnswerExtractor
from .files import DecodingFiles as DecodingFiles, write_prediction_files as write_prediction_files
from .forward import predict_windows as predict_windows, run_windows as run_windows
from .held_out import check_held_out as check_held_out
from .loading import TrainedModel as TrainedModel
from .model_tuning import ModelTuning as ModelTuning, tune_model as tune_model
from .onnx import OnnxExport as OnnxExport, export_onnx as export_onnx
from .pipeline import BioMrcQuestionAnsweringPipeline as BioMrcQuestionAnsweringPipeline, register_pipeline as register_pipeline
from .sharding import Shard as Shard
from .streaming import (
    PredictionFiles as PredictionFiles,
    StreamPlan as StreamPlan,
    predict_to_files as predict_to_files,
)
from .tuning import save_tuned_settings as save_tuned_settings, tune_settings as tune_settings, tuning_provenance as tuning_provenance
