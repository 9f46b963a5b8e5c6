"""A model's evaluation record, ``bio_mrc_eval.json``: what comparisons measured on the model (official
EM/F1 per decoding, the questions, the tuning questions and decoding options), kept beside it.
:mod:`bio_mrc.model_card` renders it into the model's card.

A core module: it writes JSON and imports nothing above the core.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from . import __version__
from .io import atomic_write_json

EVAL_FILE = "bio_mrc_eval.json"  # what comparisons measured on the model, kept beside it
EVAL_FORMAT = 1


def save_evaluation(
    model_dir: str | Path,
    cells: Sequence[Mapping[str, Any]],
    splits: Mapping[str, Any],
    decode: Mapping[str, Any] | None = None,
) -> Path | None:
    """Keep the official EM/F1 a comparison measured on a model in its evaluation record; returns
    the record's path (None when no cell has SQuAD scores).

    ``cells``: the harness's cells of one model (``decoding``, per-question ``em``/``f1`` in 0..100,
    ``threshold``, ``bio_length_prior``); ``splits``: the ``eval``, ``train`` and ``tune`` questions
    (None, the harness's splits, or their ``describe()`` dicts: ``description``, ``questions``,
    ``question_hash``, ``version``).
    The same evaluation again (same questions, tuning questions, decoding options) replaces the old one; with the same
    results it is kept as it is, its date too (a comparison keeps the cells it reads back, as well as those it scores).
    """
    results = {cell["decoding"]: _scores(cell) for cell in cells if cell.get("em") is not None and len(cell["em"])}
    if not results:
        return None
    entry = {"evaluated_on": _described(splits["eval"]), "tuned_on": _described(splits.get("tune")),
             "decode": _plain(decode), "results": results, "date": time.strftime("%Y-%m-%d %H:%M:%S"),
             "package_version": __version__}
    path = Path(model_dir) / EVAL_FILE
    saved = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    kept = [old for old in saved.get("evaluations", []) if _evaluation_key(old) != _evaluation_key(entry)]
    trained_on = _described(splits.get("train")) or saved.get("trained_on")
    same = [old for old in saved.get("evaluations", []) if _evaluation_key(old) == _evaluation_key(entry)]
    if same and same[-1].get("results") == results and saved.get("trained_on") == trained_on:
        return path
    record = {"bio_mrc_eval_format": EVAL_FORMAT, "trained_on": trained_on, "evaluations": kept + [entry]}
    atomic_write_json(path, record, indent=2)
    return path


def _plain(mapping: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return dict(mapping) if mapping is not None else None


def _described(split: Any) -> dict[str, Any] | None:
    """A split's description as plain data (a harness ``Split`` is described, a mapping copied)."""
    if split is None or isinstance(split, Mapping):
        return _plain(split)
    return {**split.describe(), "version": split.version}


def _scores(cell: Mapping[str, Any]) -> dict[str, Any]:
    """The official EM and F1 (the means of the per-question scores) and the settings they were decoded with."""
    em, f1 = [float(x) for x in cell["em"]], [float(x) for x in cell["f1"]]
    scores = {"exact_match": round(sum(em) / len(em), 4), "f1": round(sum(f1) / len(f1), 4), "questions": len(f1)}
    for name in ("threshold", "bio_length_prior"):
        if cell.get(name) is not None:
            scores[name] = float(cell[name])
    return scores


def _evaluation_key(entry: Mapping[str, Any]) -> str:
    """What makes two evaluations the same: the questions, the tuning questions, the decoding options."""
    blob = json.dumps([(entry.get("evaluated_on") or {}).get("question_hash"),
                       (entry.get("tuned_on") or {}).get("question_hash"), entry.get("decode")], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()
