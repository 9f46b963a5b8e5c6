"""Score one trained model: its forward pass over the evaluation questions, its decoding settings tuned on
the tuning questions, and a cell per decoding (scored, with its prediction files). What a model's cached
cells depend on in the code is what this module imports (:func:`cells_code_fingerprint`)."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from .. import registry
from ..code_fingerprint import sources_fingerprint
from ..decoding.postprocess import DecodeConfig, available_decodings
from ..decoding.window_outputs import WindowOutputs
from ..inference import TrainedModel, save_tuned_settings, threshold_key, tuning_provenance, write_prediction_files
from ..inference.tuning import TunedSettings, tune_for_model
from ..io import FolderBusyError, remove_file, written_alone
from ..model_card import record_evaluation
from ..model_folder import read_config
from ..progress import stage_bar
from .browser_data import ModelBrowserData, model_browser_data
from .cells import DecodedCell, calibration_cell, decode_cell, score_cell
from .prediction_set import prediction_file_names, staged_predictions

if TYPE_CHECKING:  # types only: the configuration and the splits do not change how a model scores
    from ..model import BioMrcConfig
    from .config import RunSpec
    from .comparison_splits import Split, Splits


def cells_code_fingerprint() -> str:
    """A hash of the package sources a model's cells are computed by: this module and all it imports."""
    return sources_fingerprint((__name__,))


def timed_windows(trained: TrainedModel, split: Split, progress: bool) -> tuple[WindowOutputs, float]:
    started = time.perf_counter()
    outputs = trained.windows(split.examples, progress=progress, data_name=split.description)
    return outputs, time.perf_counter() - started


def tuned_decoding(
    trained: TrainedModel, options: DecodeConfig, tune_split: Split | None, progress: bool, carried: BioMrcConfig | None = None,
) -> tuple[TunedSettings, bool | None]:
    """The comparison's decoding options with what is tuned on the tuning split, by the package's one
    policy (:func:`bio_mrc.inference.tuning.tune_for_model`). Without a tuning split, the prior and
    calibrators the model holds from its training, or those it carries from the model it continues (``carried``)
    (:func:`_without_own_tuning`). Returns (tuned settings, whether the model now stores them: None when nothing was tuned)."""
    if tune_split is None:
        _without_own_tuning(trained, carried)
        return TunedSettings(trained.decode_config(options), calibration=trained.calibrators), None
    tune_outputs = timed_windows(trained, tune_split, progress)[0]
    tuned = tune_for_model(trained, tune_outputs, tune_split.examples, options, tune_split.kind, data_sets=tune_split.data_sets,
                           progress=progress)
    if not (tuned.thresholds or tuned.settings):
        return tuned, None
    return tuned, _saved_with_model(trained, tuned, tune_split)


def _without_own_tuning(trained: TrainedModel, carried: BioMrcConfig | None = None) -> None:
    """Forget, in memory, the settings a tuning of this model saved in its folder (an earlier comparison's tuning
    split, which this one does not name and may evaluate on): scored again without a tuning split, the model decodes
    as in a fresh output folder. Settings carried from the model it continues (``tuned_on["for_model"]``) are kept;
    where a tuning replaced them, those of ``carried`` (:func:`bio_mrc.harness.models.carried_settings`) take their place."""
    config = trained.model.config
    if config.tuned_on and "for_model" not in config.tuned_on:
        for name in ("bio_length_prior", "no_answer_thresholds", "min_span_probabilities", "calibration", "tuned_on"):
            setattr(config, name, getattr(carried, name, None))


def _saved_with_model(trained: TrainedModel, tuned: TunedSettings, tune_split: Split) -> bool:
    """Save ``tuned`` in the model's folder, holding it as ``tune`` does, unless other settings are kept there
    (:func:`save_tuned_settings` without overwrite). Another process writing the folder now (a user's ``tune`` of
    the model), or one that saved settings since the model was read, keeps the folder as it is: the comparison
    scores with the values tuned here all the same, and False says the model does not hold them."""
    try:
        with written_alone(trained.path):
            if read_config(Path(trained.path)).get("tuned_on") != trained.model.config.tuned_on:
                return False
            return save_tuned_settings(trained.path, trained.model.config, tuned.thresholds, tuned.settings,
                                       tuning_provenance(tune_split.description, tune_split.examples, calibrators_not_fitted=tuned.skipped_calibrators,
                                                         answering=trained.answering_settings()),
                                       overwrite=False)
    except FolderBusyError:
        return False


def score_model(
    trained: TrainedModel, run: RunSpec, seed: int, options: DecodeConfig, splits: Splits, eval_split: Split,
    output_dir: Path, progress: bool, carried: BioMrcConfig | None = None,
) -> tuple[list[dict[str, Any]], ModelBrowserData]:
    """Every decoding of one trained model on the evaluation questions, tuned on the tuning questions (without them,
    with the settings it carries: ``carried``, :func:`tuned_decoding`); and the model's browser data. The cells are kept
    in the model's evaluation record apart (:func:`record_model_evaluation`), once the report they agree with is in."""
    outputs, inference_seconds = timed_windows(trained, eval_split, progress)
    tuned, saved = tuned_decoding(trained, options, splits.tune, progress, carried)
    decode_config = tuned.decode_config
    rules = {**trained.span_count_rules, **tuned.min_span_probabilities}
    cells, predictions = [], {}
    for decoding in stage_bar(available_decodings(run.train.heads), "scoring", "decoding", progress):
        threshold = tuned.thresholds.get(threshold_key(decoding))
        decoded = decode_cell(outputs, eval_split, decoding, decode_config, threshold, rules, run.train.features)
        predictions[decoding] = decoded.predictions
        cell = finish_cell(run, seed, decoding, decoded, eval_split, output_dir, trained.path)
        cells.append({**cell, "inference_seconds": inference_seconds, "threshold": threshold, "precision": trained.precision,
                      "bio_length_prior": registry.decoding(decoding).length_prior(decode_config.bio_length_prior),
                      "min_span_probability": decoded.min_span_probability,
                      **calibration_cell(decoded, eval_split, decoding, tuned.calibration.get(decoding), threshold)})
        if saved is not None:
            cells[-1]["tuning_saved_with_model"] = saved
        if (reason := tuned.skipped_calibrators.get(decoding)) is not None:
            cells[-1]["calibration_skipped"] = reason
    return cells, model_browser_data(outputs, eval_split.examples, predictions)


def record_model_evaluation(model_dir: str | Path, cells: list[dict[str, Any]], splits: Mapping[str, Any], options: DecodeConfig) -> None:
    """Keep a model's cells in its evaluation record, which its card (README.md) shows; the folder is kept as it is while
    another process writes it."""
    with contextlib.suppress(FolderBusyError), written_alone(model_dir):
        record_evaluation(model_dir, cells, splits, vars(options))


def remove_other_files(folder: Path, prefix: str, decoding: str, kept: list[str]) -> None:
    """Remove the cell's prediction files in ``folder`` but ``kept``: the same names' files of an earlier sitting (its
    SQuAD 2.0 questions' ``.na_probs.json`` beside a v1.1 cell's answers) would read as this cell's."""
    for name in prediction_file_names(prefix, decoding):
        if name not in kept:
            remove_file(folder / name, folder)


def finish_cell(
    run: RunSpec, seed: int, decoding: str, decoded: DecodedCell, split: Split, output_dir: Path, model: str
) -> dict[str, Any]:
    """Write the cell's prediction files (aside: :func:`~bio_mrc.harness.prediction_set.staged_predictions`) and score it."""
    folder = staged_predictions(output_dir)
    written = write_prediction_files(
        decoded.predictions, folder / f"{run.name}-seed{seed}-{decoding}.json",
        with_na_probs=split.kind.no_answer, multi_span=split.kind.multi_span_answers,
    )
    remove_other_files(folder, f"{run.name}-seed{seed}-", decoding, [path.name for path in written.paths()])
    return {"run": run.name, "decoding": decoding, "seed": seed, "model_dir": model, **score_cell(split, decoded)}
