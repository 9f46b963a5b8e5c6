"""A model's decoding settings fitted on held-out questions and saved with it, in its folder or in a tuned copy:
what ``bio-mrc tune`` does (:func:`tune_model`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from .. import registry
from ..arguments import (checked_limit, count_argument, first_questions, instance_argument, names_argument, path_argument,
                         task_argument, warn_limit_past)
from ..data.squad import SquadFile, read_squad
from ..decoding.postprocess import DecodeConfig
from ..hub import check_name_given
from ..errors import OutputError
from ..io import check_outputs_apart, files_state, staged_folder
from ..model import BioMrcConfig
from ..model_folder import is_model_temporary
from ..plurals import counted
from ..types import Example
from .defaults import MIN_CALIBRATION_QUESTIONS
from .tuning_checks import (TuningQuestions, calibrates, check_saved_settings, check_tunable,  # noqa: F401 (tune's helpers, by name)
                            check_tuning_questions, few_tuning_questions, held_for_tuning, tuning_folder)
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
    are fitted on at least ``min_calibration_questions``. ``batch_size``: windows a forward pass (None: the model's,
    :attr:`~bio_mrc.inference.loading.TrainedModel.batch_size`); ``precision``: of the forward passes, fp32, bf16 or auto
    (None: auto); ``device``: where the model runs, ``cpu``, ``cuda``, ``cuda:N``, ``mps`` or ``auto`` (None: auto, the
    GPU when there is one). ``name`` names the data in messages and in the saved
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
        questions = check_tuning_questions(model, data.examples[:limit] if limit else data.examples, options, task,
                                           plan.name, calibrate, min_calibration_questions, revision)
        return tune_read_questions(plan, questions, before_saving)


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


def tune_read_questions(plan: TuningPlan, questions: TuningQuestions,
                        before_saving: Callable[[TunedSettings], None] | None) -> ModelTuning:
    """:func:`tune_model` once its folder is checked and held and its ``questions`` are read and checked
    (:func:`~bio_mrc.inference.tuning_checks.check_tuning_questions`; ``bio-mrc tune`` reads them with its own options,
    before torch loads): the model's pass, the tuning and the saving."""
    import copy

    from .loading import TrainedModel, check_length_prior
    from .tuning import tune_for_model, tuning_provenance

    examples, calibrate = questions.examples, questions.calibrate
    read = files_state(plan.model) if Path(plan.model).is_dir() else None  # a hub snapshot is never rewritten
    trained = TrainedModel.load(plan.model, progress=plan.progress, precision=plan.precision, device=plan.device,
                                decodings=plan.decodings or (), revision=plan.revision)
    check_length_prior(trained.decodings, plan.decodings or trained.decodings, plan.options.bio_length_prior)  # a hub id's, settled now
    before = copy.deepcopy(trained.model.config)
    outputs = trained.windows(examples, batch_size=plan.batch_size, progress=plan.progress, data_name=str(plan.name))
    tuned = tune_for_model(trained, outputs, examples, plan.options, plan.task, decodings=plan.decodings,
                           calibrate=calibrate, progress=plan.progress)
    if before_saving is not None:
        before_saving(tuned)
    description = first_questions(plan.name, plan.limit, len(examples))
    provenance = tuning_provenance(description, examples, questions.training_questions, tuned.skipped_calibrators,
                                   trained.answering_settings())
    _save(plan.model, plan.target, trained, tuned, provenance, read)
    lines = _tuning_lines(tuned, before, trained.model.config, plan.task, calibrate, outputs, examples)
    lines += unkept_options_lines(plan.options, trained.decode_config(DecodeConfig()), plan.task)
    lines.append(f"saved in {plan.target / 'config.json'}"
                 + (" (in place)" if plan.target == Path(plan.model) else f" (a tuned copy of {plan.model})"))
    return ModelTuning(tuned, plan.target, trained.model.config, lines)


def _tuning_lines(tuned: TunedSettings, before: BioMrcConfig, after: BioMrcConfig, task, calibrate: bool, outputs,
                  examples: Sequence[Example]) -> list[str]:
    """What a tuning prints of itself, one line each: each setting fitted with the value it replaces, those dropped,
    the answers no window holds, too few questions, and the calibrators kept where none was fitted."""
    from .tuning import dropped_settings, past_windows_line, stale_calibrator_lines, tuning_summary

    lines = tuning_summary(tuned, before, task) + dropped_settings(before, after, tuned.settings) + past_windows_line(outputs, examples)
    if few := few_tuning_questions(f"tuned on {counted(len(examples), 'question')}", len(examples)):
        lines.append(f"warning: {few}")
    if not calibrate:
        lines += stale_calibrator_lines(before, after)
        kept = after.calibration or {}
        lines.append(f"calibrators: none fitted; kept as saved ({', '.join(kept) or 'none'})")
    return lines


def unkept_options_lines(given: DecodeConfig, answered: DecodeConfig, task: registry.TaskEntry) -> list[str]:
    """A ``warning:`` line where an option ``given`` to the tuning shaped what it fitted but is no setting saved with the
    model: every door answers with ``answered`` (the model's answer-length limit, the default n-best count) unless given
    the same, so the settings would meet other answers than they were fitted on. The n-best count shapes the span-count
    rules of multi-span answers alone (single answers' confidences are shares of the best 20 whatever it is)."""
    differ = []
    if given.max_answer_length is not None and given.max_answer_length != answered.max_answer_length:
        differ.append(f"an answer-length limit of {given.max_answer_length} tokens (the model's is {answered.max_answer_length})")
    if task.answers_as_span_lists() and given.n_best != answered.n_best:
        differ.append(f"{given.n_best} n-best candidates (by default {answered.n_best})")
    if not differ:
        return []
    return [f"warning: the settings were fitted with {' and '.join(differ)}, which the model does not keep: predict, "
            "extract and serve answer with its own unless given the same"]


def _save(model: str | Path, target: Path, trained: Any, tuned: TunedSettings, provenance: dict[str, Any],
          read: tuple | None = None) -> None:
    """The tuned settings into the model's ``config.json``, or into a copy of the folder ``trained`` was read from (a
    hub id's snapshot in the cache) made whole in a staging folder in ``target``, so a full disk leaves no model that
    looks complete but is not. ``read``: the folder's :func:`~bio_mrc.io.files_state` before the model was read; a copy
    of a folder written since (a ``train`` into it) is refused: its files beside this config would be two models."""
    from .tuning import save_tuned_settings

    config = trained.model.config
    if target == Path(model):  # predict, compare and AnswerExtractor apply them from now on
        save_tuned_settings(target, config, tuned.thresholds, tuned.settings, provenance)
        return
    with staged_folder(target, False, TUNE_STAGING_DIR) as staging:
        copy_model(Path(trained.path), staging)  # the snapshot of the revision read
        if read is not None and files_state(trained.path) != read:
            raise OutputError(f"{model} changed while it was tuned (another process wrote a model there): no copy is saved; "
                              "tune again once that process is done", str(target))
        save_tuned_settings(staging, config, tuned.thresholds, tuned.settings, provenance, staged_for=target)


def copy_model(model: Path, target: Path) -> None:
    """The model folder's files (its top level: a model's files; a link is copied as the file it names; not the
    temporary file a kill mid-write left) into ``target``, each copy raising the OSError of a full disk as it comes
    (shutil.copytree gathers them into one shutil.Error without an errno)."""
    import shutil

    for file in sorted(model.iterdir()):
        if file.is_file() and not is_model_temporary(file.name):
            shutil.copy2(file, target / file.name)


# What the package documents (bio_mrc.inference exports it); tune's command imports its helpers by name.
__all__ = ["ModelTuning", "tune_model"]
