"""Reproducible splits that never separate questions of one article, and what two sets of questions share."""

from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np

from ..types import Example


def shared_questions_and_contexts(a: Sequence[Example], b: Sequence[Example]) -> tuple[int, int]:
    """How many question ids and how many contexts two sets of questions share: a context in both leaks its answers
    from one to the other."""
    return len({ex.id for ex in a} & {ex.id for ex in b}), len({ex.context for ex in a} & {ex.context for ex in b})


def split_by_article(
    examples: Sequence[Example], fractions: Sequence[float], seed: int = 0
) -> list[list[Example]]:
    """Split into ``len(fractions)`` parts by article title (never by question).

    Questions of one article share paragraphs, so a question-level split leaks
    contexts between train and test. Fractions are of articles, drawn with
    scikit-learn's ``GroupShuffleSplit`` in turn; the result is fixed by ``seed``.
    """
    from sklearn.model_selection import GroupShuffleSplit  # here, not at import: scikit-learn costs every command a second to load

    if not np.isclose(sum(fractions), 1.0):
        raise ValueError(f"fractions must sum to 1, got {list(fractions)}")
    groups = np.array([ex.title or ex.context for ex in examples])
    remaining = np.arange(len(examples))
    parts: list[list[Example]] = []
    left = 1.0
    for fraction in fractions[:-1]:
        share = fraction / left
        if len(np.unique(groups[remaining])) < 2:
            raise ValueError("not enough articles to split")
        if not 0 < 1.0 - share < 1:  # a fraction so small or so large beside the rest that rounding leaves a part no share
            raise ValueError(f"fraction {fraction} of {list(fractions)} leaves a part no share of the articles")
        splitter = GroupShuffleSplit(n_splits=1, test_size=1.0 - share, random_state=seed)
        taken, rest = next(splitter.split(remaining, groups=groups[remaining]))
        parts.append([examples[i] for i in sorted(remaining[taken])])
        remaining = remaining[rest]
        left -= fraction
    parts.append([examples[i] for i in sorted(remaining)])
    return parts


def kfold_by_question(examples: Sequence[Example], k: int = 5, seed: int = 0) -> list[tuple[list[Example], list[Example]]]:
    """``k`` (train, test) folds over questions, shuffled with ``seed``."""
    from sklearn.model_selection import KFold

    folds = KFold(n_splits=k, shuffle=True, random_state=seed).split(np.arange(len(examples)))
    return [([examples[i] for i in tr], [examples[i] for i in te]) for tr, te in folds]


def kfold_by_article(examples: Sequence[Example], k: int = 5, seed: int = 0) -> list[tuple[list[Example], list[Example]]]:
    """``k`` (train, test) folds over articles (title, else context), shuffled with ``seed``: an article's
    questions are held out together, so no paragraph is both trained on and scored."""
    groups = [ex.title or ex.context for ex in examples]
    articles = list(dict.fromkeys(groups))
    if k > len(articles):
        raise ValueError(f"{k} folds need at least {k} articles; the questions have {len(articles)}")
    from sklearn.model_selection import KFold

    fold_of = {}
    for fold, (_, test) in enumerate(KFold(n_splits=k, shuffle=True, random_state=seed).split(np.arange(len(articles)))):
        fold_of.update({articles[i]: fold for i in test})
    return [([ex for ex, g in zip(examples, groups) if fold_of[g] != fold], [ex for ex, g in zip(examples, groups) if fold_of[g] == fold])
            for fold in range(k)]


def question_set_hash(examples: Sequence[Example]) -> str:
    """A short fingerprint of the evaluated question ids, in order, for reports."""
    return hashlib.sha256("\n".join(ex.id for ex in examples).encode()).hexdigest()[:16]
