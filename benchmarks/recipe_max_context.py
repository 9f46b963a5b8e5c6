"""BERT's maximum-context rule on the recipe's own windows, independent of bio_mrc, and the test of whether it
explains a difference between the recipe's answer and ours.

Ours reads each span only in the window where its first token has the most context among the windows holding the
whole span; the recipe (``prepare_validation_features`` makes no ``token_is_max_context``) reads every span in every
window. ``bench_inference.py`` and ``bench_postprocess.py`` tell that rule apart from the recipe's pruning with what
is here: the rule computed on the recipe's windows (:func:`max_context_of`), a brute-force search over every pair of a
question's windows on the recipe's logits, and the recipe's own top candidate found again (:func:`search`).
"""

from __future__ import annotations

import collections
import dataclasses

import numpy as np

from reference_recipe import MAX_ANSWER_LENGTH, N_BEST, _reference_window_candidates

MAX_CONTEXT = "max context"
MAX_CONTEXT_REASON = (f"{MAX_CONTEXT}: the recipe's span starts on a token with more context in another window that "
                      "holds it whole; ours is the best span read where its first token has the most context among "
                      "those (BERT's rule)")


def max_context_rule(offsets_of_windows: list[list]) -> list[np.ndarray]:
    """Per window of one question, per position: the first position a span starting there is read to, the window's
    length where none is. BERT's rule among the windows that hold the whole span: a span is read in the window where
    its first token has the most context (``_check_is_max_context``: ``min(left, right) + 0.01 * the window's context
    length``, the earlier window where two tie) among those holding both its tokens. So a window reads a start unless
    a later one gives it more context, and reads only the ends that the last earlier window giving it as much context
    lacks. A token is known across windows by its characters and its rank among the window's tokens of the same
    characters; positions outside the context (offsets ``None``) start nothing."""
    keys_of_windows, scores = [], []
    for offsets in offsets_of_windows:
        positions = [p for p, o in enumerate(offsets) if o is not None]
        seen: collections.Counter = collections.Counter()
        keys, score = {}, {}
        for k, p in enumerate(positions):
            chars = tuple(offsets[p])
            keys[p] = (*chars, seen[chars])
            seen[chars] += 1
            score[keys[p]] = min(k, len(positions) - 1 - k) + 0.01 * len(positions)
        keys_of_windows.append(keys)
        scores.append(score)
    return [_first_ends(window, offsets, keys_of_windows, scores) for window, offsets in enumerate(offsets_of_windows)]


def _first_ends(window: int, offsets: list, keys_of_windows: list[dict], scores: list[dict]) -> np.ndarray:
    """:func:`max_context_rule` of one window."""
    first_end = np.full(len(offsets), len(offsets), dtype=np.int64)
    keys = keys_of_windows[window]
    position_of = {key: p for p, key in keys.items()}
    for p, key in keys.items():
        mine = scores[window][key]
        if any(scores[later].get(key, -np.inf) > mine for later in range(window + 1, len(scores))):
            continue
        behind = [w for w in range(window) if scores[w].get(key, -np.inf) >= mine]
        if not behind:
            first_end[p] = p
            continue
        earlier = keys_of_windows[behind[-1]]
        last = earlier[max(earlier)]  # the last token the earlier window holds: ends up to it are read there
        first_end[p] = position_of[last] + 1 if last in position_of else len(offsets)
    return first_end


def rows_by_question(ref_features) -> dict[str, list[int]]:
    """The recipe's window rows of each question, in file order."""
    rows_of = collections.defaultdict(list)
    for row, qid in enumerate(ref_features["example_id"]):
        rows_of[qid].append(row)
    return rows_of


def max_context_of(ref_features) -> list[np.ndarray]:
    """:func:`max_context_rule` of every window, question by question (windows in file order)."""
    offsets = ref_features["offset_mapping"]
    held: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * len(offsets)
    for rows in rows_by_question(ref_features).values():
        for row, first_end in zip(rows, max_context_rule([offsets[row] for row in rows])):
            held[row] = first_end
    return held


def rule_window_candidates(start_logits, end_logits, offset_mapping, first_end: np.ndarray, n_best_size, max_answer_length):
    """The recipe's candidates of one window with the rule (:func:`max_context_rule`): its own
    ``token_is_max_context`` check marks the starts read, and a start's ends before its first end are dropped."""
    check = {str(p): bool(q < len(first_end)) for p, q in enumerate(first_end)}
    candidates = _reference_window_candidates(start_logits, end_logits, offset_mapping, check, n_best_size, max_answer_length)
    return [c for c in candidates if rule_reads(offset_mapping, first_end, *c["offsets"])]


def rule_reads(offsets: list, first_end: np.ndarray, first: int, last: int) -> bool:
    """Whether the rule reads the span of characters ``first..last`` in this window (its first token starting at
    ``first``): its start is read here and its end lies at or past the start's first end."""
    position = next(p for p, o in enumerate(offsets) if o is not None and o[0] == first)
    q = int(first_end[position])
    return q < len(offsets) and (q <= position or last > offsets[q - 1][1])


@dataclasses.dataclass(frozen=True)
class Searched:
    """A question's spans on the reference's logits. By a brute-force search of every (i, j) of its windows (both
    in the context, 0 <= j - i < 30): the best span, and the best the rule reads in its window (``held``:
    :func:`max_context_rule`, which ours applies). By the recipe's own candidates: the span it answers with, its
    score and whether the rule reads it in its window (-inf and None where it has none)."""

    best_text: str
    best: float
    held_text: str
    held_best: float
    ref_text: str
    ref_score: float
    ref_held: bool | None


def pair_scores(offsets: list, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """One window's ``s_i + e_j`` (float64) at ``[i, j]`` over every pair, -inf where the pair is no span."""
    valid = np.array([o is not None for o in offsets])
    length = len(offsets)
    s, e = start[:length].astype(np.float64), end[:length].astype(np.float64)
    i, j = np.meshgrid(np.arange(length), np.arange(length), indexing="ij")
    ok = valid[i] & valid[j] & (j >= i) & (j - i < MAX_ANSWER_LENGTH)
    return np.where(ok, s[:, None] + e[None, :], -np.inf)


def brute_force(ref_features, rows: list[int], start: np.ndarray, end: np.ndarray, context: str,
                held: list[np.ndarray]) -> dict[str, tuple[str, float]]:
    """The best span of the windows ``rows`` of one question, and the best the rule reads in its window (``held[row]``:
    :func:`max_context_of`): ``{"best": (text, score), "held": (text, score)}``."""
    found = {"best": ("", -np.inf), "held": ("", -np.inf)}
    for row in rows:
        offsets = ref_features[row]["offset_mapping"]
        scores = pair_scores(offsets, start[row], end[row])
        read = np.arange(len(offsets))[None, :] >= held[row][: len(offsets), None]
        for name, allowed in (("best", scores), ("held", np.where(read, scores, -np.inf))):
            k = int(np.argmax(allowed))
            if allowed.flat[k] > found[name][1]:
                i, j = divmod(k, len(offsets))
                found[name] = (context[offsets[i][0] : offsets[j][1]], float(allowed.flat[k]))
    return found


def recipe_choice(ref_features, rows: list[int], start: np.ndarray, end: np.ndarray, context: str,
                  held: list[np.ndarray], rule: bool) -> tuple[str, float, bool | None]:
    """The span the recipe answers one question with (the first of its candidates by score, as it ranks them; with
    the rule applied where ``rule``: :func:`rule_window_candidates`): its text, its score and whether the rule reads it
    in its window; ``("", -inf, None)`` where it has no candidate."""
    chosen = None
    for row in rows:
        offsets = ref_features[row]["offset_mapping"]
        candidates = (rule_window_candidates(start[row], end[row], offsets, held[row], N_BEST, MAX_ANSWER_LENGTH) if rule
                      else _reference_window_candidates(start[row], end[row], offsets, None, N_BEST, MAX_ANSWER_LENGTH))
        for candidate in candidates:
            if chosen is None or candidate["score"] > chosen[0]:
                chosen = (candidate["score"], row, candidate["offsets"])
    if chosen is None:
        return "", -np.inf, None
    score, row, (first, last) = chosen
    return context[first:last], float(score), rule_reads(ref_features[row]["offset_mapping"], held[row], first, last)


def search(ref_features, rows: list[int], logits: tuple[np.ndarray, np.ndarray], context: str,
           held: list[np.ndarray], rule: bool = False) -> Searched:
    """:class:`Searched` of one question: the brute force's spans and the recipe's choice (with the rule where ``rule``)."""
    found = brute_force(ref_features, rows, *logits, context, held)
    return Searched(*found["best"], *found["held"], *recipe_choice(ref_features, rows, *logits, context, held, rule))


def held_best(ours: str, exact_text: str, searched: Searched) -> bool:
    """Whether ``ours`` is the brute force's best span under the rule, its unrestricted best being ``exact_text`` (the
    exact band search's on the same logits)."""
    return ours == searched.held_text and searched.best_text == exact_text


def rule_explains(ref: str, ours: str, exact_text: str, searched: Searched) -> bool:
    """Whether the rule explains the recipe answering ``ref`` and ours ``ours``: ours is the best span under the rule
    (:func:`held_best`), ``ref`` is the recipe's own top candidate and the rule does not read it in its window."""
    return held_best(ours, exact_text, searched) and searched.ref_text == ref and searched.ref_held is False
