"""What a run settles before it trains, as ``train_model`` and ``bio-mrc train`` alike settle it: windows fitted to an
encoder of fewer positions, a finished model already in its folder, and held-out questions that are training ones.
Light on purpose (torch loads inside the checks that build an encoder): ``bio-mrc train`` settles its windows at once."""

from __future__ import annotations

import warnings
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, Collection, Mapping, Sequence

from ..encoders import encoder_folder, is_default_encoder, resolve_encoder
from ..errors import BioMrcError, ConfigError, InputWarning, argument
from ..features.config import stride_leaves_new_context
from ..hub import folder_at_hand
from ..model_defaults import config_window_positions, qa_windows, windows_that_fit
from ..model_folder import checked_record, read_json_object
from ..model_records import RUN_FILE
from ..plurals import counted
from ..types import Example
from .config import TrainConfig
from .run_records import load_run_record

WINDOW_FIELDS = ("max_seq_length", "doc_stride", "max_query_length")


def fitted_windows(encoder: str | None, init_from: str | None, windows: Mapping[str, int],
                   given: Collection[str], revision: str | None = None) -> tuple[dict[str, int], int | None]:
    """The window settings a run takes where not all of ``windows`` were ``given`` (the others are the defaults): a
    window of the encoder's positions where it has fewer than ``windows``' length, and, where the stride and question
    then leave no new context, those ``qa_windows`` fits to it. A given value is kept (one that does not fit is refused
    later). Returns the settings that change and the positions read (None: a window given, an ``init_from`` model, or
    an encoder whose config cannot be read ahead, whose own load says why); ``revision``: the encoder hub id's."""
    given = set(given) & set(WINDOW_FIELDS)
    if given == set(WINDOW_FIELDS):
        return {}, None
    fitted = {name: windows[name] for name in WINDOW_FIELDS}
    positions = None if "max_seq_length" in given or init_from else _positions(encoder, revision, fitted["max_seq_length"])
    if positions is not None and positions < fitted["max_seq_length"]:
        fitted["max_seq_length"] = positions
    if not stride_leaves_new_context(**fitted):
        fitted = qa_windows(None, **{name: fitted[name] if name in given or name == "max_seq_length" else None
                                     for name in WINDOW_FIELDS})
    return {name: value for name, value in fitted.items() if value != windows[name]}, positions


def _positions(encoder: str | None, revision: str | None = None, needed: int = 0) -> int | None:
    """The positions a window of ``encoder`` may fill; where its ``config.json`` holds ``needed`` of them whatever its
    family numbers them from (:func:`position_bounds`), that count, read without torch."""
    try:
        bounds = position_bounds(read_json_object(Path(encoder_folder(encoder, revision)), "config.json"))
        if bounds is not None and bounds[0] >= needed:
            return bounds[0]
        from ..qa_checkpoints import encoder_positions  # the encoder built on the meta device

        return encoder_positions(resolve_encoder(encoder, revision))
    except BioMrcError:
        return None


def position_bounds(encoder_config: Mapping[str, Any]) -> tuple[int, int] | None:
    """The fewest and the most positions a window of the encoder of ``encoder_config`` (its ``config.json`` as read) may
    fill: its ``max_position_embeddings``, less the ids up to ``pad_token_id`` where its family numbers positions after
    the padding id (RoBERTa's kin), which only the built encoder tells. None where it holds no such count."""
    most, pad = encoder_config.get("max_position_embeddings"), encoder_config.get("pad_token_id")
    if type(most) is not int or most < 1:
        return None
    return max(0, most - (pad + 1 if type(pad) is int and pad >= 0 else 0)), most


def windows_past_positions(max_seq_length: int, positions: int, source: str) -> str:
    """The refusal of windows longer than the ``positions`` of the encoder ``source``, with windows that fit."""
    return (f"max_seq_length {max_seq_length} exceeds the {positions} positions a window of encoder {source} may fill: "
            f"train with windows that fit, e.g. {windows_that_fit(positions)}")


def check_windows_held(config: TrainConfig) -> None:
    """Windows longer than the positions the ``config.json`` of the run's starting point (``init_from``'s model, or
    the encoder) gives its encoder, refused before torch loads as training refuses them once the encoder is built
    (:func:`~bio_mrc.training.run_checks.check_windows_fit`); a hub id not at hand, or a config that cannot be read,
    is left to that check. A family that numbers positions after the padding id holds fewer, counted as that check
    counts them (:func:`~bio_mrc.model_defaults.config_window_positions`)."""
    try:
        if config.init_from:
            folder = folder_at_hand(config.init_from, "model folder", config.revision)
            encoder = read_json_object(folder, "config.json").get("encoder") if folder else None
        else:
            folder = Path(encoder_folder(None)) if is_default_encoder(config.encoder) else \
                folder_at_hand(config.encoder, "encoder", config.encoder_revision)
            encoder = read_json_object(folder, "config.json") if folder else None
    except BioMrcError:
        return
    positions = config_window_positions(encoder) if isinstance(encoder, dict) else None
    if positions is not None and config.max_seq_length > positions:
        raise ConfigError(windows_past_positions(config.max_seq_length, positions, str(folder)))


class WindowsFittedWarning(InputWarning):
    """``train_model`` trains with windows other than the config's defaults, which its encoder cannot fill."""


def fit_default_windows(config: TrainConfig) -> TrainConfig:
    """``config`` with the window settings left at their defaults fitted to its encoder (:func:`fitted_windows`), said
    in a :class:`WindowsFittedWarning`; a setting other than its default counts as given."""
    defaults = {field.name: field.default for field in fields(TrainConfig) if field.name in WINDOW_FIELDS}
    windows = {name: getattr(config, name) for name in WINDOW_FIELDS}
    given = {name for name in WINDOW_FIELDS if windows[name] != defaults[name]}
    changed, positions = fitted_windows(config.encoder, config.init_from, windows, given, config.encoder_revision)
    if not changed:
        return config
    chosen = ", ".join(f"{name}={value}" for name, value in {**windows, **changed}.items() if name not in given)
    warnings.warn(WindowsFittedWarning(f"encoder {config.encoder} holds {positions} positions, fewer than the default "
                                       f"window of {windows['max_seq_length']} tokens: training with {chosen} (give them "
                                       "to choose others)"), stacklevel=5)  # train_model's caller
    return replace(config, **changed)


class FinishedModelError(ConfigError):
    """The output folder holds a finished model, which a run replaces only with ``overwrite``."""


def finished_run(output_dir: str | Path, resume: bool, overwrite: bool) -> dict[str, Any] | None:
    """Before any work: the run record of a run that was stopped while saving its finished model, which ``resume``
    completes (:func:`~bio_mrc.training.saving.finish_stopped_save`) rather than training again; None where there is
    none. A folder holding another finished model is refused unless ``overwrite``, which replaces even a damaged one."""
    from .saving import finish_stopped_save  # it imports torch

    if resume and not overwrite:
        checked_record(Path(output_dir), RUN_FILE)  # refused as a model's loading refuses it, before the card is written
        if finish_stopped_save(output_dir):
            return load_run_record(output_dir)
    if not overwrite and load_run_record(output_dir) is not None:
        raise FinishedModelError(f"{output_dir} holds a finished model; choose another output folder or pass "
                                 f"{argument('overwrite', True)}")
    return None


class SharedHeldOutWarning(InputWarning):
    """The questions scored during training share questions or contexts with the training questions."""


def warn_shared_held_out(examples: Sequence[Example], held_out: Sequence[Example],
                         name: str = "the evaluator's questions", stacklevel: int = 2) -> None:
    """A :class:`SharedHeldOutWarning` where ``held_out`` (``name``) shares questions or contexts with ``examples``:
    their scores during training would overstate the model (``stacklevel``: the caller it names, as ``warnings.warn``)."""
    from ..data.article_splits import shared_questions_and_contexts

    if held_out and any(shared := shared_questions_and_contexts(examples, held_out)):
        warnings.warn(SharedHeldOutWarning(
            f"{name} share {counted(shared[0], 'question')} and {counted(shared[1], 'context')} (under any id or spacing) "
            "with the training questions: their scores during training overstate the model (hold out whole articles)"), stacklevel=stacklevel + 1)


__all__ = ["WINDOW_FIELDS", "FinishedModelError", "SharedHeldOutWarning", "WindowsFittedWarning", "check_windows_held",
           "finished_run", "fit_default_windows", "fitted_windows", "position_bounds", "warn_shared_held_out",
           "windows_past_positions"]
