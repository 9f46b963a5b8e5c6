"""Unanswerable training questions made from answerable ones (SQuAD 2.0 style, without v2.0 train data)."""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import numpy as np

from ..types import Example


def add_unanswerable(examples: Sequence[Example], ratio: float = 0.5, seed: int = 0) -> list[Example]:
    """Return ``examples`` plus about ``ratio * len(examples)`` unanswerable copies.

    Procedure (seeded, deterministic): draw ``round(ratio * n)`` questions
    without replacement; pair each with a different paragraph of the same
    article (same title), drawn uniformly, which makes a hard negative: same
    topic, no answer. Questions whose article has a single paragraph are skipped
    and replaced by others while any remain. Made-up questions get the id
    ``<id>-unans`` and ``answers == ()``.
    """
    if not 0 <= ratio <= 1:  # NaN too; each question is paired at most once, so no ratio makes more
        raise ValueError(f"ratio is 0 to 1 (at most one made-up question per question), got {ratio}")
    rng = np.random.default_rng(seed)
    contexts: dict[str, list[str]] = defaultdict(list)
    for ex in examples:
        if ex.context not in contexts[ex.title]:
            contexts[ex.title].append(ex.context)
    eligible = [i for i, ex in enumerate(examples) if len(contexts[ex.title]) > 1]
    wanted = min(int(round(ratio * len(examples))), len(eligible))
    made = []
    for i in sorted(rng.choice(len(eligible), size=wanted, replace=False).tolist()):
        ex = examples[eligible[i]]
        others = [c for c in contexts[ex.title] if c != ex.context]
        context = others[int(rng.integers(len(others)))]
        made.append(Example(f"{ex.id}-unans", ex.question, context, (), ex.title))
    return [*examples, *made]
