"""Prediction files: the official ``{id: answer}`` file, the n-best file and the ``na_prob`` file."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ..io import atomic_write_json
from ..types import Prediction
from .answers import no_answer_probability


def write_prediction_files(
    predictions: Sequence[Prediction], output: str | Path, with_na_probs: bool = True, multi_span: bool = False
) -> dict[str, Path]:
    """Write ``output`` (official ``{id: answer}``, or MultiSpanQA's ``{id: [span texts]}`` with
    ``multi_span``), ``<stem>.nbest.json`` (every span with offsets and scores) and, when asked,
    ``<stem>.na_probs.json``; each atomically."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    paths = {"predictions": output, "nbest": output.with_suffix(".nbest.json")}
    answers = {p.id: p.answers if multi_span else p.answer for p in predictions}
    atomic_write_json(output, answers, ensure_ascii=False, indent=1)
    # No indent: json's C encoder only runs without one (3x faster on a full dev set's n-best lists).
    atomic_write_json(paths["nbest"], {p.id: p.to_dict() for p in predictions}, ensure_ascii=False)
    if with_na_probs:
        paths["na_probs"] = output.with_suffix(".na_probs.json")
        atomic_write_json(paths["na_probs"], {p.id: no_answer_probability(p.no_answer_score) for p in predictions})
    return paths
