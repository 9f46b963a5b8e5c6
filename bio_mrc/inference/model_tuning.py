"""A model's decoding settings fitted on held-out questions and saved with it, in its folder or in a tuned copy:
what ``bio-mrc tune`` does (:func:`tune_model`)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from .. import registry
from ..arguments import (checked_limit, count_argument, instance_argument, names_argument, path_argument, task_argument,
                         warn_limit_past)
from ..data.squad import SquadFile, read_squad
from ..decoding.postprocess import DecodeConfig
from ..errors import ConfigError, DataFormatError, argument
from ..hub import check_name_given
from ..io import check_folder_target, check_outputs_apart, check_writable_folder, staged_folder, written_alone
from ..model import BioMrcConfig
from ..plurals import counted
from ..types import Example
from .defaults import FEW_TUNING_QUESTIONS, FEWEST_CALIBRATION_QUESTIONS, MIN_CALIBRATION_QUESTIONS
from .tuning import TunedSettings

TUNE_STAGING_DIR = ".tune-staging"  # under tune's output folder while the tuned copy is written


@dataclass(frozen=True)
class ModelTuning:
    """What :func:`tune_model` did: ``tuned``, the settings fitted (``report``: how each scored, as ``bio-mrc tune``
    prints it); ``folder``, the model folder whose ``config.json`` now holds them (the model's own, or the tuned copy);
    ``config``, that config as saved; ``lines``, what the command prints of them on standard error, one line each
    (each setting with the value it replaces, the warnings, where they were saved)."""

    tuned: TunedSettings
    folder: Path
    config: BioMrcConfig
    lines: list[str]

    @property
    def report(self) -> dict[str, Any]:
        """How each fitted setting scored, as ``bio-mrc tune`` prints it."""
        return self.tuned.report


def tune_model(
    model: str | Path, data: str | Path | SquadFile, *, output_dir: str | Path | None = None,
    decodings: Sequence[str] | None = None, options: DecodeConfig | None = None, task: Any = None,
    limit: int | None = None, calibrate: bool = True, min_calibration_questions: int = MIN_CALIBRATION_QUESTIONS,
    batch_size: int | None = None, precision: str | None = None, device: str | None = None, name: str | None = None,
    before_saving: Callable[[TunedSettings], None] | None = None, progress: bool = False, revision: str | None = None,
) -> ModelTuning:
    """Fit the decoding settings of the bio_mrc model ``model`` (a folder, or a hub id at ``revision`` with ``output_dir``) on the
    held-out labelled questions ``data`` (a file, or what :func:`~bio_mrc.data.squad.load_squad` returned) and save
    them in its ``config.json``, or in a copy of it made in ``output_dir`` (a new or empty folder), as
    ``bio-mrc tune`` does: the length prior, span-count rules, no-answer thresholds and calibrators
    (:func:`~bio_mrc.inference.tuning.tune_for_model`). ``decodings``: those tuned (None: the model's); ``options``:
    the decoding options (default: ``DecodeConfig(require_answer=False)``, the command's; a ``bio_length_prior`` or
    ``min_span_probability`` given is saved, not fitted); ``task``: a :mod:`bio_mrc.registry` task or a scorer's name
    (None: the data's own); ``limit``: the first questions alone; ``calibrate`` False keeps the saved calibrators, which
    are fitted on at least ``min_calibration_questions``. ``name`` names the data in messages and in the saved
    ``tuned_on``; ``before_saving`` is called with the settings fitted before they are saved; ``progress`` shows the
    bars the command shows. Each refusal comes before the weights load, as the command's do."""
    _check_arguments(model, data, output_dir, decodings, options, task, limit)
    count_argument(batch_size, "batch_size", "tune_model")
    count_argument(min_calibration_questions, "min_calibration_questions", "tune_model", optional=False)
    check_name_given(model)  # "" would tune the current folder
    target = tuning_folder(model, output_dir)
    check_outputs_apart([output_dir], [] if isinstance(data, SquadFile) else [data], [model])
    check_tunable(model, revision)
    with held_for_tuning(target, output_dir):
        options = check_saved_settings(model, decodings, options)  # before the data is read
        if not isinstance(data, SquadFile):
            data = read_squad(data, limit=limit, needs_gold="tune_model")  # a limit past it is said below, by name
        warn_limit_past(limit, len(data.examples), str(name or data.source), len(data.skipped))
        task = registry.scorer(task, data.is_v2) if isinstance(task, str) else task or registry.task_of_data(data.format, data.is_v2)
        plan = TuningPlan(model, target, decodings, options, task, str(name or data.source), limit, batch_size, precision,
                          device, progress, revision)
        return tune_read_questions(plan, data.examples[:limit] if limit else data.examples, calibrate,
                                   min_calibration_questions, before_saving)


def _check_arguments(model: Any, data: Any, output_dir: Any, decodings: Any, options: Any, task: Any, limit: Any) -> None:
    """Before any file is read: each argument of :func:`tune_model` of a type it takes."""
    call = "tune_model"
    path_argument(model, "model", call)
    if not isinstance(data, SquadFile):
        path_argument(data, "data", call)
    path_argument(output_dir, "output_dir", call, optional=True)
    names_argument(decodings, "decodings", call)
    instance_argument(options, DecodeConfig, "options", call, optional=True)
    task_argument(task, call)
    checked_limit(limit)


def check_saved_settings(model: str | Path, decodings: Sequence[str] | None, options: DecodeConfig | None) -> DecodeConfig:
    """The decodings asked and the BIO length prior given, checked against the model's saved ``config.json`` before the
    data is read; returns ``options`` (default: ``DecodeConfig(require_answer=False)``)."""
    from .loading import check_saved_decodings, check_saved_length_prior

    check_saved_decodings(model, decodings or ())
    options = options if options is not None else DecodeConfig(require_answer=False)
    check_saved_length_prior(model, decodings, options.bio_length_prior)  # a prior none tuned reads
    return options


@dataclass
class TuningPlan:
    """A tuning's model, folder (:func:`tuning_folder`), settings and data, checked and held as :func:`tune_model`
    checks and holds them."""

    model: str | Path
    target: Path
    decodings: Sequence[str] | None
    options: DecodeConfig
    task: registry.TaskEntry
    name: str
    limit: int | None
    batch_size: int | None
    precision: str | None
    device: str | None
    progress: bool
    revision: str | None = None  # of a hub id's model


def tune_read_questions(plan: TuningPlan, examples: list[Example], calibrate: bool, least: int,
                        before_saving: Callable[[TunedSettings], None] | None) -> ModelTuning:
    """:func:`tune_model` once its folder is checked and held and its questions ``examples`` are read (``bio-mrc tune``
    reads them with its own options): the questions' checks, the run record's, the model's pass, the tuning and the
    saving."""
    import copy

    from .held_out import check_held_out
    from .loading import TrainedModel, check_length_prior
    from .tuning import tune_for_model, tuning_provenance

    check_span_count_given(plan.options, plan.task, plan.name)
    check_some_answered(examples, plan.name)
    # from the run record, before the model loads and before the count of questions: no option makes them tunable
    training_questions = check_held_out(plan.model, examples, plan.name, plan.revision)
    calibrate = calibrates(calibrate, least, len(examples), plan.task, plan.name)
    trained = TrainedModel.load(plan.model, progress=plan.progress, precision=plan.precision, device=plan.device,
                                decodings=plan.decodings or (), revision=plan.revision)
    check_length_prior(trained.decodings, plan.decodings or trained.decodings, plan.options.bio_length_prior)  # a hub id's, settled now
    before = copy.deepcopy(trained.model.config)
    outputs = trained.windows(examples, batch_size=plan.batch_size, progress=plan.progress)
    tuned = tune_for_model(trained, outputs, examples, plan.options, plan.task, decodings=plan.decodings,
                           calibrate=calibrate, progress=plan.progress)
    if before_saving is not None:
        before_saving(tuned)
    cut = plan.limit and len(examples) == plan.limit  # a limit past the data's questions takes them all: no first N
    description = plan.name + (f" (first {counted(plan.limit, 'question')})" if cut else "")
    _save(plan.model, plan.target, trained, tuned, tuning_provenance(description, examples, training_questions))
    lines = _tuning_lines(tuned, before, trained.model.config, plan.task, calibrate, outputs, examples)
    lines.append(f"saved in {plan.target / 'config.json'}"
                 + (" (in place)" if plan.target == Path(plan.model) else f" (a tuned copy of {plan.model})"))
    return ModelTuning(tuned, plan.target, trained.model.config, lines)


def _tuning_lines(tuned: TunedSettings, before: BioMrcConfig, after: BioMrcConfig, task, calibrate: bool, outputs,
                  examples: Sequence[Example]) -> list[str]:
    """What a tuning prints of itself, one line each: each setting fitted with the value it replaces, those dropped,
    the answers no window holds, too few questions, and the calibrators kept where none was fitted."""
    from .tuning import dropped_settings, past_windows_line, stale_calibrator_lines, tuning_summary

    lines = tuning_summary(tuned, before, task) + dropped_settings(before, after, tuned.settings) + past_windows_line(outputs, examples)
    if len(examples) < FEW_TUNING_QUESTIONS:
        lines.append(f"warning: tuned on {counted(len(examples), 'question')}: settings fitted on fewer than "
                     f"{FEW_TUNING_QUESTIONS} follow the questions drawn; tune on a few hundred held-out questions, as "
                     "the model will meet them, to rely on them")
    if not calibrate:
        lines += stale_calibrator_lines(before, after)
        kept = after.calibration or {}
        lines.append(f"calibrators: none fitted; kept as saved ({', '.join(kept) or 'none'})")
    return lines


def _save(model: str | Path, target: Path, trained: Any, tuned: TunedSettings, provenance: dict[str, Any]) -> None:
    """The tuned settings into the model's ``config.json``, or into a copy of the folder ``trained`` was read from (a
    hub id's snapshot in the cache) made whole in a staging folder in ``target``, so a full disk leaves no model that
    looks complete but is not."""
    from .tuning import save_tuned_settings

    config = trained.model.config
    if target == Path(model):  # predict, compare and AnswerExtractor apply them from now on
        save_tuned_settings(target, config, tuned.thresholds, tuned.settings, provenance)
        return
    with staged_folder(target, False, TUNE_STAGING_DIR) as staging:
        copy_model(Path(trained.path), staging)  # the snapshot of the revision read
        save_tuned_settings(staging, config, tuned.thresholds, tuned.settings, provenance, staged_for=target)


def copy_model(model: Path, target: Path) -> None:
    """The model folder's files (its top level: a model's files; a link is copied as the file it names) into
    ``target``, each copy raising the OSError of a full disk as it comes (shutil.copytree gathers them into one
    shutil.Error without an errno)."""
    import shutil

    for file in sorted(model.iterdir()):
        if file.is_file():
            shutil.copy2(file, target / file.name)


def tuning_folder(model: str | Path, output_dir: str | Path | None = None) -> Path:
    """Where a tuning saves: the model folder itself, or ``output_dir``, a new (or empty) folder the model is copied to
    (a hub id's model only there: its snapshot in the cache is not the user's folder)."""
    from ..hub import is_hub_id

    if not output_dir:
        if Path(model).is_dir():  # a missing folder is the loader's to name
            check_writable_folder(model, f"tune saves the tuned settings in its config.json ({argument('output_dir')}: "
                                         "in a copy elsewhere)")
        elif is_hub_id(str(model)) and not Path(model).is_symlink():  # a broken link is the loader's to name
            # a mistyped or not yet trained folder reads as a hub id too: say which was assumed
            raise ConfigError(f"{model} is no folder here, so it names a Hugging Face hub id, whose cached snapshot "
                              f"tune does not change; give the model's folder, or {argument('output_dir', 'DIR')} to save a tuned copy "
                              "of the hub model there")
        return Path(model)
    target = check_folder_target(output_dir)
    if target.exists() and (target.resolve() == Path(model).resolve() or any(target.iterdir())):
        raise ConfigError(f"{argument('output_dir', str(target))} is not empty; give a new folder (the tuned copy of the model goes there)")
    return target


def held_for_tuning(target: Path, output_dir: str | Path | None):
    """The tuning's folder held from the model's reading to the settings' saving: a tune or train writing the folder
    meanwhile would have its config replaced by one made from the model as it was read (a model folder not here is
    the loader's to name)."""
    return written_alone(target) if output_dir or target.is_dir() else contextlib.nullcontext()


def check_tunable(model: str | Path, revision: str | None = None) -> None:
    """tune writes into a bio_mrc model folder: transformers' own QA model is converted into one first."""
    from ..hub import local_folder
    from ..qa_checkpoints import qa_architecture

    if architecture := qa_architecture(local_folder(model, revision=revision)):
        raise ConfigError(f"{model} is a {architecture}, which tune cannot save settings into; convert it into a bio_mrc "
                          f"model first (bio-mrc convert --model {model} --output DIR), then tune DIR")


def check_some_answered(examples: Sequence[Example], name: str) -> None:
    """Every setting tune fits needs questions with an answer: on none, tune would fit nothing after the model's whole
    pass (a calibrator would learn only how often the model abstains) and, in place, drop the thresholds saved."""
    if not any(example.is_answerable for example in examples):
        raise DataFormatError(f"none of its {counted(len(examples), 'question')} has an answer: tune fits the length prior and "
                              "span-count rules on answered questions, no-answer thresholds on answered and unanswerable "
                              "ones, and calibrators on the answers given; tune on held-out questions with and without "
                              "answers", source=name)


def check_span_count_given(options: DecodeConfig, task, name: str) -> None:
    """A given ``min_span_probability`` is saved as the span-count rule, which tune sets on questions answered with span
    lists alone: refused, not ignored, on single-span questions."""
    if options.min_span_probability is not None and not task.answers_as_span_lists():
        raise ConfigError(f"{argument('min_span_probability')} sets the span-count rule of multi-span answers, which tune saves "
                          f"from multi-span questions (MultiSpanQA's layout, {argument('data_format', 'answer-parts')} or "
                          f"quoref); {name} is read "
                          "as single-span questions: leave it out, or name the format its answers have")


def calibrates(calibrate: bool, least: int, questions: int, task, name: str) -> bool:
    """Whether a tuning fits calibrators: not for a task without a single answer to be right (multi-span gold) nor
    unless ``calibrate``; fewer questions than ``least`` are refused."""
    if not calibrate or task.right is None:
        return False
    least = max(least, FEWEST_CALIBRATION_QUESTIONS)  # one question calibrates nothing
    if questions < least:
        anyway = f", {argument('min_calibration_questions', questions)} fits one anyway" if questions >= FEWEST_CALIBRATION_QUESTIONS else ""
        raise ConfigError(f"{name}: {questions} question{'s are' if questions != 1 else ' is'} too few to fit a "
                          f"calibrator (at least {least}); {argument('calibrate', False)} tunes the rest{anyway}")
    return True


# What the package documents (bio_mrc.inference exports it); tune's command imports its helpers by name.
__all__ = ["ModelTuning", "tune_model"]
