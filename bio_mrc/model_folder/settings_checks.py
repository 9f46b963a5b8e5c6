"""The heads', windows' and tuned settings of a model's ``config.json`` checked; a tuned setting no decoding reads
warned of."""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any, Mapping

from .. import registry
from ..arguments import MAX_COUNT
from ..errors import InputWarning
from ..json_syntax import json_value
from ..model_defaults import BIO_LOSS_REDUCTIONS, HEADS, MAX_SETTING, WORD_UNITS, WORD_UNITS_WHEN_ABSENT
from .config_reading import is_finite_number, is_plain_int
from .encoder_checks import SIZE_LIMITS
from .files import fail


WINDOW_FIELDS = ("max_seq_length", "doc_stride", "max_query_length")
WINDOW_MINIMUMS = {"max_seq_length": 1, "doc_stride": 0, "max_query_length": 1}  # as TrainConfig bounds them

TAG_LEVELS = ("word", "subword")  # as bio_mrc.features.windows reads them


def check_settings(config: Mapping[str, Any], encoder: Mapping[str, Any], folder: Path) -> None:
    """Heads, windows and tuned settings of the right kinds; windows that fit the encoder's positions."""
    if config.get("return_dict", True) is not True:  # bio_mrc reads the heads' outputs by name, never a tuple's places
        raise fail(folder, "config.json", f"return_dict must be true (the forward pass's outputs by name), got "
                                          f"{json_value(config['return_dict'])}: delete it")
    heads = config.get("heads", HEADS)
    if not isinstance(heads, str):  # named as written, not as the empty name it was checked as
        raise fail(folder, "config.json", f"heads must be one of {registry.head_choices()}, got {json_value(heads)}")
    try:
        registry.head_names(heads)
    except ValueError as err:
        raise fail(folder, "config.json", f"heads: {err}") from None
    windows = {name: config.get(name) for name in WINDOW_FIELDS}
    for name, value in windows.items():  # a doc_stride of 0 (windows without overlap) is one train makes
        least, most = WINDOW_MINIMUMS[name], SIZE_LIMITS["max_position_embeddings"]
        if value is not None and (not is_plain_int(value) or not least <= value <= most):
            raise fail(folder, "config.json", f"{name} must be an integer in [{least}, {most:,}], got {json_value(value)}")
    if config.get("tag_level", "word") not in TAG_LEVELS:
        raise fail(folder, "config.json", f"tag_level must be one of {TAG_LEVELS}, got {json_value(config.get('tag_level'))}")
    if config.get("word_units", WORD_UNITS_WHEN_ABSENT) not in WORD_UNITS:
        raise fail(folder, "config.json", f"word_units must be one of {WORD_UNITS}, got {json_value(config['word_units'])}")
    if None not in windows.values() and windows["doc_stride"] >= windows["max_seq_length"] - windows["max_query_length"] - 3:
        raise fail(folder, "config.json", f"doc_stride {windows['doc_stride']} leaves no new context in a window of "
                                          f"max_seq_length {windows['max_seq_length']} after max_query_length "
                                          f"{windows['max_query_length']} (it must be < max_seq_length - max_query_length - 3)")
    positions = encoder.get("max_position_embeddings")
    if windows["max_seq_length"] is not None and positions is not None and positions < windows["max_seq_length"]:
        raise fail(folder, "config.json", f"encoder.max_position_embeddings {positions} is less than max_seq_length "
                                          f"{windows['max_seq_length']}: the encoder cannot read its own windows")
    for key, value in _mapping(config, "no_answer_thresholds", folder).items():
        _check_threshold(value, f"no_answer_thresholds.{key}", folder)
    _check_decoding_settings(config, folder)
    check_head_settings(config, folder)
    for decoding, probability in _mapping(config, "min_span_probabilities", folder).items():
        if not (is_finite_number(probability) and 0 <= probability <= 1):
            raise fail(folder, "config.json", f"min_span_probabilities.{decoding} must be a probability in [0, 1], got {json_value(probability)}")
    for decoding, calibrator in _mapping(config, "calibration", folder).items():
        _check_calibrator(decoding, calibrator, folder)
    _check_tuned_on(_mapping(config, "tuned_on", folder), folder)  # tune reads it as an object when it saves new settings
    _warn_of_unknown_decodings(config, folder)


def _check_decoding_settings(config: Mapping[str, Any], folder: Path) -> None:
    """The BIO length prior and the answer-length limit saved in ``config``: each absent, or in the range a decoding takes."""
    prior = config.get("bio_length_prior")
    if prior is not None and not (is_finite_number(prior) and abs(prior) <= MAX_SETTING):
        raise fail(folder, "config.json", f"bio_length_prior must be a number in [-{MAX_SETTING:g}, {MAX_SETTING:g}], got {json_value(prior)}")
    limit = config.get("max_answer_length")
    if limit is not None and not (is_plain_int(limit) and 1 <= limit <= MAX_COUNT):
        raise fail(folder, "config.json", f"max_answer_length must be a whole number of tokens in [1, {MAX_COUNT:,}], got {json_value(limit)}")


def check_head_settings(config: Mapping[str, Any], folder: Path) -> None:
    """The settings the heads are built from, each named as ``config.json`` writes it (the heads' own errors name
    their arguments, or none: ``'int' object is not iterable``), and ``architectures``, which transformers' pipeline
    iterates over."""
    dropout = config.get("head_dropout", 0.0)
    if not (is_finite_number(dropout) and 0 <= dropout <= 1):
        raise fail(folder, "config.json", f"head_dropout must be a probability in [0, 1], got {json_value(dropout)}")
    if config.get("bio_loss_reduction", BIO_LOSS_REDUCTIONS[0]) not in BIO_LOSS_REDUCTIONS:
        raise fail(folder, "config.json", f"bio_loss_reduction must be one of {', '.join(BIO_LOSS_REDUCTIONS)}, "
                                          f"got {json_value(config['bio_loss_reduction'])}")
    for name in ("bio_prior", "bio_class_weights"):  # None: a uniform prior, the plain loss
        value = config.get(name)
        if value is not None and not (isinstance(value, list) and len(value) == 3
                                      and all(is_finite_number(v) and 0 < v <= MAX_SETTING for v in value)):
            raise fail(folder, "config.json", f"{name} must be null or three positive numbers (B, I, O), got {json_value(value)}")
    names = config.get("architectures")
    if names is not None and not (isinstance(names, list) and all(isinstance(name, str) for name in names)):
        raise fail(folder, "config.json", f"architectures must be a list of class names, got {json_value(names)}")


def _is_count(value: Any) -> bool:
    return is_plain_int(value) and value >= 0


def _is_reasons(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(reason, str) for reason in value.values())


# The fields of ``tuned_on``, what each holds and how to tell: tune writes the first three (and training_questions where the
# run record keeps a fingerprint, calibrators_not_fitted where it found one degenerate, the precision and device its
# scores were computed in), train --init-from adds for_model. The card, tune's lines and a comparison read them as such; another field is kept unread.
NOT_FITTED = "calibrators_not_fitted"  # of tuned_on: each decoding whose calibrator a tune there found degenerate, and why
_QUESTION_COUNT = ("a whole number of questions (0 or more)", _is_count)
_STRING = ("a string", lambda value: isinstance(value, str))
TUNED_ON_FIELDS = {"description": _STRING, "questions": _QUESTION_COUNT, "content_hash": _STRING, "for_model": _STRING,
                   "training_questions": _QUESTION_COUNT, "precision": _STRING, "device": _STRING,
                   NOT_FITTED: ("an object of decodings and reasons (strings)", _is_reasons)}


def _check_tuned_on(tuned_on: Mapping[str, Any], folder: Path) -> None:
    """Each field ``tuned_on`` holds is of its kind (:data:`TUNED_ON_FIELDS`)."""
    for name, (kind, fits) in TUNED_ON_FIELDS.items():
        if name in tuned_on and not fits(tuned_on[name]):
            raise fail(folder, "config.json", f"tuned_on.{name} must be {kind}, got {json_value(tuned_on[name])}")


def _check_calibrator(decoding: str, calibrator: Any, folder: Path) -> None:
    """A beta calibrator. The method is read first: an earlier version's isotonic knots (``x``, ``y``, no method) are
    refused as another method, with what to do (``tune`` loads the folder too, so the key goes by hand first)."""
    if isinstance(calibrator, dict) and calibrator.get("method") != "beta":  # the one method calibrate() reads
        raise fail(folder, "config.json", f"calibration.{decoding}.method must be 'beta' (a, b and c are read as beta "
                                          f"calibration), got {json_value(calibrator.get('method'))}: delete "
                                          "'calibration' from config.json, then bio-mrc tune fits them again")
    if not isinstance(calibrator, dict) or not all(is_finite_number(calibrator.get(key)) and abs(calibrator[key]) <= MAX_SETTING
                                                   for key in ("a", "b", "c")):
        raise fail(folder, "config.json", f"calibration.{decoding} must hold the numbers a, b and c, got {json_value(calibrator)}")
    if calibrator["a"] < 0 or calibrator["b"] < 0:  # fitted ones never are: the map keeps the raw ranking
        raise fail(folder, "config.json", f"calibration.{decoding}: a and b must be 0 or more (a negative one turns "
                                          f"the map from raw confidence to probability around), "
                                          f"got a={json_value(calibrator['a'])}, b={json_value(calibrator['b'])}")
    if "no_answer_threshold" in calibrator:  # the threshold it was fitted at scores its abstentions
        _check_threshold(calibrator["no_answer_threshold"], f"calibration.{decoding}.no_answer_threshold", folder)


class UnusedSettingWarning(InputWarning):
    """A tuned setting of ``config.json`` that no registered decoding reads: the model loads, without it."""


def _warn_of_unknown_decodings(config: Mapping[str, Any], folder: Path) -> None:
    """A tuned setting keyed by no registered decoding (a misspelt key in a hand-edited ``config.json``, or a plug-in
    decoding's, whose model still loads where the plug-in is not imported) is read by nothing: one warning each, as
    naming the file and the key, once a process (every loader checks the folder, some twice)."""
    scores = sorted({entry.threshold_key for entry in registry.DECODINGS.values()})
    keyed = {"no_answer_thresholds": ("is the no-answer score of no registered decoding", scores),
             "min_span_probabilities": ("names no registered decoding", sorted(registry.DECODINGS)),
             "calibration": ("names no registered decoding", sorted(registry.DECODINGS))}
    for name, (problem, known) in keyed.items():
        for key in _mapping(config, name, folder):
            message = (f"{folder / 'config.json'}: {name} key {json_value(key)} {problem} ({', '.join(known)}), so nothing uses "
                       "it: a misspelt key, or a plug-in decoding's not imported here?")
            if key not in known and message not in _WARNED:
                _WARNED.add(message)
                warnings.warn(UnusedSettingWarning(message), stacklevel=2)


_WARNED: set[str] = set()  # the unused settings already warned of


def _check_threshold(value: Any, name: str, folder: Path) -> None:
    """A saved no-answer threshold: a number within ±:data:`MAX_SETTING`, or ±Infinity (always or never abstain); NaN and
    the rest are refused."""
    if not (is_finite_number(value) and abs(value) <= MAX_SETTING or value in (math.inf, -math.inf)):
        raise fail(folder, "config.json", f"{name} must be a number in [-{MAX_SETTING:g}, {MAX_SETTING:g}] or ±Infinity, "
                   f"got {json_value(value)}")


def _mapping(config: Mapping[str, Any], name: str, folder: Path) -> dict[str, Any]:
    value = config.get(name)
    if value is not None and not isinstance(value, dict):
        raise fail(folder, "config.json", f"{name} must be an object, got {json_value(value)}")
    return value or {}
