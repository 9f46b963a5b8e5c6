"""A model folder's decodings, BIO length prior and answer-length limit read from its ``config.json`` alone, and the options checked against
them before the data is read or the model loads. Light on purpose (no torch): ``tune`` checks them at once."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, Sequence

from .. import registry
from ..arguments import MAX_COUNT
from ..decoding.postprocess import available_decodings
from ..errors import ConfigError, ModelFormatError, argument
from ..model_defaults import HEADS, MAX_ANSWER_LENGTH
from ..model_folder import QA_HEADS, is_finite_number, is_plain_int, qa_architecture, read_json_object
from ..plurals import number_form
from ..registry import head_names, resolve_decoding
from ..transformers_registration import MODEL_TYPE


class SavedSettings(NamedTuple):
    """What a model folder's ``config.json`` settles before the model loads (:func:`saved_settings`)."""

    decodings: list[str]
    bio_length_prior: float
    max_answer_length: int
    heads: list[str]


def saved_settings(model_dir: Path) -> SavedSettings | None:
    """The decodings, the BIO length prior and the answer-length limit :meth:`TrainedModel.load` gives the model of
    ``model_dir``, read from its ``config.json`` alone (no weight loads); None where that config is none load reads so
    (load refuses it, or reads it as something else)."""
    if qa_architecture(model_dir):
        return SavedSettings(available_decodings(QA_HEADS), 0.0, MAX_ANSWER_LENGTH, head_names(QA_HEADS))
    try:
        config = read_json_object(model_dir, "config.json")
        heads = config.get("heads", HEADS)
        names = head_names(heads) if isinstance(heads, str) else []
    except (ModelFormatError, ValueError):
        return None
    prior, limit = config.get("bio_length_prior"), config.get("max_answer_length")
    if config.get("model_type") != MODEL_TYPE or not names or not (prior is None or is_finite_number(prior)) \
            or not (limit is None or (is_plain_int(limit) and 1 <= limit <= MAX_COUNT)):
        return None
    return SavedSettings(available_decodings(names), prior or 0.0, limit or MAX_ANSWER_LENGTH, names)


def check_saved_decodings(model: str | Path, decodings: Sequence[str]) -> None:
    """Each of ``decodings`` one the heads of the model folder ``model`` can do, read from its ``config.json`` alone,
    so a command refuses it before reading its data (:meth:`TrainedModel.load` refuses it alike; a folder it cannot
    read so is left to the load)."""
    settings = saved_settings(Path(model)) if Path(model).is_dir() else None
    for decoding in decodings if settings else ():
        resolve_decoding(settings.decodings, decoding, heads=settings.heads)


def settled_decodings(model: str | Path, decodings: Sequence[str]) -> list[str]:
    """``decodings`` each once, ``auto`` as the model folder's ``config.json`` settles it (:func:`saved_settings`), so
    the files a run writes are named before the model loads; as given where no config at hand settles it."""
    settings = saved_settings(Path(model)) if Path(model).is_dir() else None
    auto = registry.preferred_decoding(settings.decodings) if settings is not None else registry.AUTO_DECODING
    return list(dict.fromkeys(auto if decoding == registry.AUTO_DECODING else decoding for decoding in decodings))


def check_length_prior(available: Sequence[str], decodings: Sequence[str], prior: float | None) -> None:
    """A BIO span-length ``prior`` given where none of ``decodings`` (``auto``: the preferred of ``available``, the
    model's) reads it: refused in one line naming the argument (``bio_length_prior``, ``--bio-length-prior``), not ignored."""
    if prior is None:
        return
    readers = registry.length_prior_decodings()
    resolved = list(dict.fromkeys(resolve_decoding(available, decoding) for decoding in decodings))
    if any(decoding in readers for decoding in resolved):
        return
    offered = [decoding for decoding in available if decoding in readers]
    fix = f"decode with {' or '.join(offered)}, or leave it out" if offered else "the model has no BIO head: leave it out"
    raise ConfigError(f"{argument('bio_length_prior')} sets the length prior of the BIO head's spans, which the {' and '.join(resolved)} "
                      f"{number_form(len(resolved), 'decoding never reads', 'decodings never read')}; {fix}")


def check_saved_length_prior(model: str | Path, decodings: Sequence[str] | None, prior: float | None) -> None:
    """:func:`check_length_prior` before the model loads: ``auto`` and ``decodings`` None (every decoding the model
    has: ``bio-mrc tune``'s default) settled by the model folder's ``config.json`` (:func:`saved_settings`); a named
    decoding needs no file. What neither settles is left to the loaded model."""
    settings = saved_settings(Path(model)) if Path(model).is_dir() else None
    if settings is not None:
        check_length_prior(settings[0], settings[0] if decodings is None else decodings, prior)
    elif decodings is not None and registry.AUTO_DECODING not in decodings:
        check_length_prior(registry.decoding_names(), decodings, prior)
