"""What ``tune`` checks before torch and the model load: the folder it saves in, the model it tunes (by its
``config.json``), the options against it, and the questions it fits on. Light on purpose: ``bio-mrc tune`` refuses
these at once."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..decoding.postprocess import DecodeConfig
from ..errors import ConfigError, DataFormatError, argument
from ..hub import local_folder
from ..io import check_folder_target, check_writable_folder, written_alone
from ..model_folder import qa_architecture
from ..plurals import counted
from ..types import Example
from .defaults import FEW_TUNING_QUESTIONS, FEWEST_CALIBRATION_QUESTIONS
from .held_out import check_held_out
from .saved_settings import check_saved_decodings, check_saved_length_prior


def few_tuning_questions(said: str, questions: int) -> str | None:
    """What ``bio-mrc tune`` and ``compare`` say of settings fitted on ``questions`` tuning questions (``said``: how
    they are named, ``tuned on 8 questions``); None from :data:`~bio_mrc.inference.defaults.FEW_TUNING_QUESTIONS` on."""
    if questions >= FEW_TUNING_QUESTIONS:
        return None
    return (f"{said}: settings fitted on fewer than {FEW_TUNING_QUESTIONS} follow the questions drawn; tune on a few "
            "hundred held-out questions, as the model will meet them, to rely on them")


@dataclass(frozen=True)
class TuningQuestions:
    """The questions a tuning fits on, checked (:func:`check_tuning_questions`): ``training_questions``, how many of them
    the model was trained on (None: its run record does not say); ``calibrate``, whether calibrators are fitted."""

    examples: list[Example]
    training_questions: int | None
    calibrate: bool


def check_tuning_questions(model: str | Path, examples: list[Example], options: DecodeConfig, task, name: str,
                           calibrate: bool, least: int, revision: str | None = None) -> TuningQuestions:
    """The checks of a tuning's questions ``examples`` (read from ``name``), before the model loads: a span-count rule
    given for single-span questions, none answered, questions the model trained on (its run record's fingerprint), too
    few for a calibrator (fewer than ``least`` with ``calibrate``)."""
    check_span_count_given(options, task, name)
    check_some_answered(examples, name)
    training_questions = check_held_out(model, examples, name, revision)  # no option makes them tunable: before the count
    return TuningQuestions(examples, training_questions, calibrates(calibrate, least, len(examples), task, name))


def check_saved_settings(model: str | Path, decodings: Sequence[str] | None, options: DecodeConfig | None) -> DecodeConfig:
    """The decodings asked and the BIO length prior given, checked against the model's saved ``config.json`` before the
    data is read; returns ``options`` (default: ``DecodeConfig(require_answer=False)``)."""
    check_saved_decodings(model, decodings or ())
    options = options if options is not None else DecodeConfig(require_answer=False)
    check_saved_length_prior(model, decodings, options.bio_length_prior)  # a prior none tuned reads
    return options


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
