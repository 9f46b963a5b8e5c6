"""Per-question official scores, so that decodings can be compared question by question."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ..metrics.squad import compute_exact_v2, compute_f1_v2, exact_match_score, f1_score, normalize_answer


def per_question_scores(
    gold: Mapping[str, Sequence[str]], predictions: Mapping[str, str], ids: Sequence[str], version: str
) -> tuple[np.ndarray, np.ndarray]:
    """Exact match and F1 (0..100) of every question in ``ids``, with the official v1.1 or v2.0 rules.

    Their means are exactly the official ``exact_match``/``f1`` (v1.1) or
    ``exact``/``f1`` (v2.0, before any threshold) over these questions.
    """
    em, f1 = np.zeros(len(ids)), np.zeros(len(ids))
    for k, qid in enumerate(ids):
        prediction = predictions[qid]
        if version == "2.0":
            answers = [a for a in gold[qid] if normalize_answer(a)] or [""]
            em[k] = max(compute_exact_v2(a, prediction) for a in answers)
            f1[k] = max(compute_f1_v2(a, prediction) for a in answers)
        else:
            em[k] = max(float(exact_match_score(prediction, a)) for a in gold[qid])
            f1[k] = max(f1_score(prediction, a) for a in gold[qid])
    return 100.0 * em, 100.0 * f1


def spans_to_tags(offsets: np.ndarray, n_tokens: int, spans: Sequence[tuple[int, int]]) -> list[str]:
    """B/I/O tags of ``n_tokens`` tokens (character ``offsets``) for character spans."""
    tags = np.full(n_tokens, "O", dtype="<U1")
    for start, end in spans:
        inside = np.flatnonzero((offsets[:n_tokens, 0] < end) & (offsets[:n_tokens, 1] > start))
        if len(inside):
            tags[inside] = "I"
            tags[inside[0]] = "B"
    return tags.tolist()


def tag_sequences(merged, examples: Sequence, predictions: Sequence) -> tuple[list[list[str]], list[list[str]]]:
    """Gold (first annotator) and predicted (every predicted span) tags over each example's paragraph tokens."""
    gold, pred = [], []
    for row, (example, prediction) in enumerate(zip(examples, predictions)):
        n_tokens = int(merged.mask[row].sum())
        offsets = merged.offsets[row]
        gold.append(spans_to_tags(offsets, n_tokens, example.answers[0] if example.answers else ()))
        predicted = [] if prediction.abstain else [(s.start, s.end) for s in prediction.spans]
        pred.append(spans_to_tags(offsets, n_tokens, predicted))
    return gold, pred
