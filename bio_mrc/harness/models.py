"""The models of a comparison: trained once per (options, seed, training questions), then reused."""

from __future__ import annotations

import fnmatch
import glob
import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Callable, NamedTuple

from ..encoders import resolve_encoder, starting_point_digest
from ..errors import ConfigError, DataFormatError, ModelFormatError
from ..hub import local_folder
from ..json_syntax import json_value
from ..io import folders_escaped, names_a_pattern, written_alone
from ..model import BioMrcConfig, BioMrcForQuestionAnswering
from ..model_folder import RUN_FILE, check_model_folder
from ..qa_checkpoints import encoder_positions, windows_that_fit
from ..inference.during_training import TrainingEvaluator, metric_names
from ..model_card import training_time_is_partial
from ..training.checkpoints import seconds_trained
from ..training.train import TrainConfig, load_run_record, train_model
from ..training.run_checks import check_best_metric, check_run_options, check_windows_fit
from ..training.trainer import continued_config, encoder_dropout, source_encoder_config
from ..training.training_args import check_run_trackers
from .config import RunSpec
from .comparison_splits import Split


def model_key(train: TrainConfig, train_split: Split, chosen_on: Split | None = None) -> str:
    """Same configuration on the same training questions -> same key -> the model is reused. A model that keeps its
    best checkpoint by the scores on held-out questions (``chosen_on``: ``load_best_model_at_end``) is those questions' too."""
    content = {"train": train.to_dict(), "questions": train_split.content_hash}
    if chosen_on is not None:
        content["checkpoint_chosen_on"] = chosen_on.content_hash
    blob = json.dumps(content, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


class ObtainedModel(NamedTuple):
    """A comparison's model: its folder, its training time, whether it was there already, and whether that
    time is one sitting's only (resumed from a checkpoint that did not keep the earlier sittings' time)."""

    model_dir: Path
    train_seconds: float
    reused: bool
    train_seconds_partial: bool


def obtain_model(
    run: RunSpec, seed: int, train_split: Split, models_dir: Path, progress: bool, checkpoint_steps: int | None = None,
    held_out: Split | None = None,
) -> ObtainedModel:
    """Train the run, or reuse it when a model with the same key exists, or resume its interrupted training.
    Evaluation during training (the run's training_args eval_strategy) scores ``held_out``: the tuning split,
    never the evaluation questions, which a best-checkpoint choice would otherwise be made on."""
    asked = replace(run.train, seed=seed, init_from=resolve_init_from(run.train.init_from))
    config = asked.with_resolved_precision()  # auto's choice is memoised: train_model below resolves it alike and records how
    evaluates = held_out is not None and config.training_args.get("eval_strategy", "no") != "no"
    key = model_key(config, train_split, held_out if evaluates and config.training_args.get("load_best_model_at_end") else None)
    model_dir = models_dir / f"{run.name}-seed{seed}-{key}"
    if (finished := _finished_model(model_dir, models_dir, seed, key, config)) is not None:
        return finished
    # One process trains a model at a time: another comparison sharing the folder would remove its checkpoints. The
    # folder's one lock, so train_model below takes it as held.
    with written_alone(model_dir, "another process is training this model now; wait for it to end, then run again to reuse it"):
        if (finished := _finished_model(model_dir, models_dir, seed, key, config)) is not None:  # finished meanwhile
            return finished
        # A run cut short (a kill, the end of a session) continues from its last checkpoint.
        evaluator = TrainingEvaluator(held_out.examples, held_out.version, task=held_out.kind,  # as the report scores it
                                      precision=run.evaluation_precision, data_name=held_out.description) if evaluates else None
        # overwrite: a model of its own name left stale (its starting point changed since) is trained again in place
        train_model(train_split.examples, asked, model_dir, save_checkpoints=True, resume=True, progress=progress,
                    checkpoint_steps=checkpoint_steps, evaluator=evaluator, overwrite=load_run_record(model_dir) is not None,
                    data_name=train_split.description)
    return _obtained(model_dir, load_run_record(model_dir), False)


def _finished_model(model_dir: Path, models_dir: Path, seed: int, key: str, config: TrainConfig) -> ObtainedModel | None:
    """A finished model to reuse: its own folder first, then another run's with the same options and questions (a run
    that only evaluates differently, e.g. in another precision, shares the model); None when there is none."""
    for candidate in [model_dir, *sorted(models_dir.glob(f"*-seed{seed}-{key}"))]:
        record = load_run_record(candidate)  # written last, so a model cut short by a crash is never reused
        if record is not None and record.get("train") == config.to_dict() and same_starting_point(record, config):
            return _obtained(candidate, record, True)
    return None


def _obtained(model_dir: Path, record: dict, reused: bool) -> ObtainedModel:
    """The model and its run record's training time; a record whose ``seconds`` is no time (edited) is refused."""
    seconds = seconds_trained(record.get("seconds"))
    if seconds is None:
        raise DataFormatError(f"'seconds' holds {json_value(record.get('seconds'))}, not a number of seconds trained: a record bio_mrc "
                              "did not write as it is; train the model again (delete its folder)", source=str(model_dir / RUN_FILE))
    return ObtainedModel(model_dir, seconds, reused, training_time_is_partial(record))


def same_starting_point(record: dict, config: TrainConfig) -> bool:
    """Whether the weights and tokenizer the model was trained from (its encoder's, or ``init_from``'s) are still those
    of the folder the options name: an encoder or model edited or replaced in place makes its models stale. A record
    written before this was kept, or a starting point no longer on this machine, cannot tell: the model is reused."""
    if not record.get("starting_point_digest"):
        return True
    try:
        folder = config.init_from or resolve_encoder(config.encoder, config.encoder_revision)
    except (ModelFormatError, ImportError):
        return True
    current = starting_point_digest(folder)
    return current is None or current == record["starting_point_digest"]


def resolve_init_from(init_from: str | None) -> str | None:
    """The model a run continues from: a folder, or a glob pattern that matches exactly one complete
    model (another comparison's, e.g. ``runs/learning-curve/models/joint-all-seed42-*``, whose key
    suffix changes with its options). The key of the new model names the folder found. A folder of the very name
    (``reader [v1]``) is that folder, not a pattern (:func:`~bio_mrc.io.names_a_pattern`), and so is a folder of the
    pattern's way there (``exp [1]/models/joint-*``)."""
    if not names_a_pattern(init_from):
        return init_from
    complete = sorted(path for path in glob.glob(folders_escaped(init_from)) if load_run_record(path) is not None)
    if len(complete) != 1:
        found = f"{len(complete)} complete models ({', '.join(complete)})" if complete else "no complete model"
        raise ConfigError(f"init_from {json_value(init_from, whole=True)} must match exactly one trained model; it matches {found}. "
                          "Run the comparison that trains it first (see its config's description)")
    return complete[0]


def carried_settings(run: RunSpec) -> BioMrcConfig | None:
    """The config whose decoding settings a model of ``run`` carries from the model its ``init_from`` continues, as
    training carries them (:func:`~bio_mrc.training.trainer.continued_config`), read from that model's folder now, as a
    model trained in a fresh output folder would carry them; None for a run trained from an encoder."""
    init_from = resolve_init_from(run.train.init_from)
    if not init_from:
        return None
    return continued_config(BioMrcConfig.from_pretrained(str(local_folder(init_from, revision=run.train.revision))), init_from)


def check_model_sources(
    runs: list[RunSpec], all_runs: list[RunSpec], models_dir: Path, seeds: Callable[[RunSpec], list[int]] | None = None,
) -> None:
    """Before any training: the encoder of each of ``runs`` (or the trained model it continues from) is there and
    loadable and its trackers can start, else one :class:`ConfigError` naming the run's key (``runs[2].encoder``), not
    a traceback once earlier runs have trained. A glob ``init_from`` into this comparison's own models (a chain of its
    runs) is left to its turn, unless it matches the run's own models (``seeds``: each run's seeds)."""
    own = models_dir.resolve()
    for run in runs:
        where = f"runs[{[r.name for r in all_runs].index(run.name)}]"
        try:
            check_run_trackers(run.train.training_args)  # a tracker whose package is missing: before any run trains
        except ConfigError as err:
            raise ConfigError(f"{where}.training_args: {err}") from None
        init_from = run.train.init_from
        if names_a_pattern(init_from) and Path(init_from).parent.resolve() == own:
            check_not_from_itself(run, (seeds or (lambda r: list(r.seeds or ())))(run), init_from, where)
            continue
        try:
            if init_from:
                # with the model class: a config.json transformers rejects is refused here, as training refuses it
                folder = str(local_folder(resolve_init_from(init_from), "model folder", run.train.revision))
                check_model_folder(folder, BioMrcForQuestionAnswering, tokenizer_required=False)
            else:
                encoder = folder = resolve_encoder(run.train.encoder, run.train.encoder_revision)
            encoder_dropout(run.train, source_encoder_config(run.train, folder))  # a rate its encoder cannot take
        except (ConfigError, ModelFormatError) as err:
            raise ConfigError(f"{where}.{'init_from' if init_from else 'encoder'}: {err}") from None
        if not init_from:
            check_window_fits(run.train, encoder, where)
        else:
            try:
                check_windows_fit(run.train, folder)  # the windows of the model it continues
            except ConfigError as err:
                raise ConfigError(f"{where}.max_seq_length: {err}") from None


def check_run_trainings(runs: list[RunSpec], all_runs: list[RunSpec], models_dir: Path, checkpoint_steps: int | None,
                        held_out: Split | None) -> None:
    """Before any training: each of ``runs``' training_args with the package's own (``checkpoint_steps`` among them) and
    with the evaluation during training that scores ``held_out`` (the 'tune' split), as its turn would check them."""
    for run in runs:
        evaluates = held_out is not None and run.train.training_args.get("eval_strategy", "no") != "no"
        try:
            args = check_run_options(run.train, models_dir, evaluates, True, checkpoint_steps)
            check_best_metric(args, metric_names(held_out.kind, run.train.heads) if evaluates else None)
        except ConfigError as err:
            raise ConfigError(f"runs[{[r.name for r in all_runs].index(run.name)}]: {err}") from None


def check_not_from_itself(run: RunSpec, seeds: list[int], init_from: str, where: str) -> None:
    """Refuse a pattern into the comparison's own models that matches one of the run's own: the model it would start
    from is the one it trains (at its turn the pattern finds none complete; run again, the run's own model besides)."""
    for seed in seeds:
        if fnmatch.fnmatchcase(f"{run.name}-seed{seed}-{'0' * 12}", Path(init_from).name):  # any key: it is not known yet
            raise ConfigError(f"{where}.init_from: {json_value(init_from, whole=True)} matches this run's own model {run.name}-seed{seed}-...: a run "
                              "cannot continue from itself; name an earlier run's models (e.g. models/NAME-seed42-*) or a trained "
                              "model's folder")


def check_window_fits(train: TrainConfig, encoder: str, where: str) -> None:
    """Refuse a run whose windows are longer than its encoder's positions (RoBERTa's kin number them from after their
    padding id) before any run trains, as training itself refuses it (``fresh_model_and_tokenizer``) once its turn comes."""
    positions = encoder_positions(encoder)
    if positions is not None and train.max_seq_length > positions:
        raise ConfigError(f"{where}.max_seq_length: {train.max_seq_length} exceeds the {positions} positions a window of "
                          f"encoder {train.encoder} may fill: give the run windows that fit, e.g. {windows_that_fit(positions)}")
