"""The batch sizes and tuning minimum of a model run, in a module with no heavy imports: the command line shows them as its
options' defaults without loading torch."""

from __future__ import annotations

from ..model_defaults import GPU_INFERENCE_BATCH_SIZE, INFERENCE_BATCH_SIZE
# Questions per chunk: large enough that windows batch well by length, small enough to hold at once.
DEFAULT_CHUNK_SIZE = 1000
# Windows a chunk runs and decodes at once, estimated at a token a character (features.config.estimated_windows): a
# chunk past it runs in slices of its questions, each slice's windows and logits let go before the next is cut. SQuAD's
# chunks (about 4,000 estimated) run whole; a question over a 4.8M-character context (25,000) is a slice alone.
SLICE_WINDOWS = 16_384
# Questions of a slice decoded at once by ``bio-mrc predict``, its questions bar advanced after each block: the bar moves
# while a chunk is decoded, and a block is large enough that decoding it costs what decoding the slice whole does.
DECODE_BLOCK_QUESTIONS = 100

# Fewest tuning questions ``bio-mrc tune`` fits a calibrator on (--min-calibration-questions lowers it): about 100
# answers are what a three-parameter fit needs for its ECE to mean something (on 20, every answer may be wrong).
MIN_CALIBRATION_QUESTIONS = 100
# Fewest questions any calibrator is fitted on, whatever --min-calibration-questions says: one answer calibrates nothing.
FEWEST_CALIBRATION_QUESTIONS = 2

# Below this many tuning questions ``bio-mrc tune`` warns that what it fits (length prior, span-count rules, thresholds)
# follows the questions drawn: even 1,000 SQuAD questions leave the length prior a grid step of noise (RESULTS.md).
FEW_TUNING_QUESTIONS = 100

__all__ = ["DEFAULT_CHUNK_SIZE", "DECODE_BLOCK_QUESTIONS", "SLICE_WINDOWS", "FEW_TUNING_QUESTIONS", "GPU_INFERENCE_BATCH_SIZE", "INFERENCE_BATCH_SIZE",
           "MIN_CALIBRATION_QUESTIONS", "FEWEST_CALIBRATION_QUESTIONS"]
