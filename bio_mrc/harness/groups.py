"""Questions in groups, for the report's breakdowns and the question browser's filters: by question word and
by length bins (labels ordered as a reader expects), and each group's mean score with its bootstrap interval."""

from __future__ import annotations

import re
from typing import Mapping, Sequence

import numpy as np

from ..plurals import counted
from ..progress import resamples_done, resamples_planned
from ..metrics.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, as_scores

__all__ = ["QUESTION_WORDS", "SMALL_GROUP", "bin_labels", "breakdown", "group_order", "length_bins", "question_word"]

QUESTION_WORDS: tuple[str, ...] = ("what", "which", "who", "whom", "whose", "when", "where", "why", "how", "other")
_WH_RE = re.compile(r"\b(" + "|".join(w for w in QUESTION_WORDS if w != "other") + r")\b")


def question_word(question: str) -> str:
    """The first wh-word (by position) of the lowercased question, whole words only.

    "In what year ..." -> "what"; "How many/much ..." -> "how"; none -> "other".
    The literal word "other" in a question is not a match.
    """
    m = _WH_RE.search(question.lower())
    return m.group(1) if m else "other"


def bin_labels(edges: Sequence[int]) -> list[str]:
    """Ordered labels of the bins defined by ``edges`` (see :func:`length_bins`)."""
    e = [int(x) for x in edges]
    if not e:
        raise ValueError("edges must not be empty")
    if any(lo >= hi for lo, hi in zip(e, e[1:])):
        raise ValueError(f"edges must be strictly increasing: {e}")
    labels = [f"<{e[0]}"]
    for lo, hi in zip(e, e[1:]):
        labels.append(str(lo) if hi - 1 == lo else f"{lo}-{hi - 1}")
    labels.append(f"{e[-1]}+")
    return labels


def length_bins(values: np.ndarray, edges: Sequence[int]) -> np.ndarray:
    """String bin label for each value; ``edges`` are the inclusive lower bounds.

    Bin ``i`` holds ``edges[i] <= v < edges[i+1]`` and is labelled ``"lo"`` when it
    holds one integer, else ``"lo-hi"`` (inclusive); the last bin is ``"last+"``
    and values below ``edges[0]`` get ``"<first"``. E.g. edges ``(1, 2, 3, 5, 9)``
    give ``"<1", "1", "2", "3-4", "5-8", "9+"``.
    """
    labels = np.asarray(bin_labels(edges), dtype=object)
    v = np.asarray(values)
    pos = np.searchsorted(np.asarray(edges, dtype=np.float64), v.astype(np.float64), side="right")
    return labels[pos].astype(str)


_BIN_RE = re.compile(r"^(?:<(-?\d+)|(-?\d+)(?:-(-?\d+))?|(-?\d+)\+)$")


def _bin_key(label: str) -> float | None:
    m = _BIN_RE.match(label)
    if m is None:
        return None
    below, lo, _, plus = m.groups()
    if below is not None:
        return int(below) - 0.5
    return float(lo if lo is not None else plus)


def group_order(labels: Sequence[str]) -> list[str]:
    """Distinct labels in report order.

    Length-bin labels (of the form ``"<k"``, ``"k"``, ``"a-b"``, ``"k+"``) first, ordered by
    their lower bound; then anything else (SQuAD 2.0's ``"no answer"`` beside the answer-length
    bins, question words) alphabetically with ``"other"`` last.
    """
    distinct = sorted({str(x) for x in labels})
    bins = sorted((key, x) for x in distinct if (key := _bin_key(x)) is not None)
    rest = [x for x in distinct if _bin_key(x) is None]
    return [x for _, x in bins] + sorted(rest, key=lambda x: (x == "other", x))


SMALL_GROUP = 50  # a breakdown group with fewer questions is marked: its interval is wide and its mean unsteady


def breakdown(
    scores: Mapping[str, np.ndarray], groups: np.ndarray, order: Sequence[str] | None = None,
    n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED,
) -> dict[str, dict[str, dict]]:
    """Per decoding and group: ``{"n": count, "mean": mean score, "ci_low", "ci_high"}``, the interval a 95%
    percentile bootstrap of the group's mean over its questions (the same draws for every decoding).

    ``groups`` holds one label per question. Groups appear in ``order`` when
    given (labels absent from ``groups`` are skipped), else :func:`group_order`. The resamples join the open resample
    bar (:func:`bio_mrc.progress.resample_bar`), a group at a time.
    """
    g = np.asarray(groups).astype(str)
    if g.ndim != 1:
        raise ValueError("groups must be one-dimensional")
    present = sorted(set(g.tolist()))
    ordered = [x for x in order if x in present] if order is not None else group_order(present)
    missing = set(present).difference(ordered)
    if missing:
        raise ValueError(f"order lacks group labels: {sorted(missing)}")
    arrays = {}
    for name, s in scores.items():
        arrays[name] = as_scores(s, f"scores[{name!r}]")
        if arrays[name].shape != g.shape:
            raise ValueError(f"scores[{name!r}] has {counted(arrays[name].shape[0], 'value')} for {counted(g.shape[0], 'group')}")
    out: dict[str, dict[str, dict]] = {name: {} for name in arrays}
    rng = np.random.default_rng(seed)
    resamples_planned(len(ordered) * n_resamples)
    for label in ordered:
        members = np.flatnonzero(g == label)
        draws = members[rng.integers(0, members.size, size=(n_resamples, members.size), dtype=np.int32)]
        for name, arr in arrays.items():
            low, high = np.percentile(arr[draws].mean(axis=1), [2.5, 97.5])
            out[name][label] = {"n": int(members.size), "mean": float(arr[members].mean()),
                                "ci_low": float(low), "ci_high": float(high)}
        resamples_done(n_resamples)
    return out
