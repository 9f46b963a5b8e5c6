"""Reproducible splits that never separate questions of one article (nor one question asked twice), and what two sets
of questions share."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..question_fingerprint import normalised, question_hashes
from ..types import Example


def shared_questions_and_contexts(a: Sequence[Example], b: Sequence[Example]) -> tuple[int, int]:
    """How many questions of ``b`` are in ``a`` (by text and context under any id or spacing, as the question
    fingerprint matches them) and how many paragraphs the two share (as the fingerprint normalises a context): a
    paragraph in both leaks its answers from one to the other. An id alone matches nothing: two data sets built apart
    may both number their questions ``q1, q2, ...``, and each is read, predicted and scored by its own ids."""
    paragraphs_a, paragraphs_b = paragraphs(a), paragraphs(b)
    shared = set(paragraphs_a.values()) & set(paragraphs_b.values())
    if not shared:  # a question in both has its paragraph in both: only those are hashed
        return 0, 0
    in_a = [ex for ex in a if paragraphs_a[ex.context] in shared]
    in_b = [ex for ex in b if paragraphs_b[ex.context] in shared]
    hashes = set(question_hashes(in_a).tolist())
    return len({ex.id for ex, h in zip(in_b, question_hashes(in_b).tolist()) if h in hashes}), len(shared)


def paragraphs(examples: Sequence[Example]) -> dict[str, bytes]:
    """Each distinct context of ``examples``, as the question fingerprint normalises it."""
    contexts: dict[str, bytes] = {}
    for ex in examples:
        if ex.context not in contexts:
            contexts[ex.context] = normalised(ex.context)
    return contexts


def split_by_article(
    examples: Sequence[Example], fractions: Sequence[float], seed: int = 0
) -> list[list[Example]]:
    """Split into ``len(fractions)`` parts by article (title, else context; never by question).

    Questions of one article share paragraphs, so a question-level split leaks
    contexts between train and test; articles that share a paragraph (up to
    spacing) are one article here. Fractions are of articles, drawn with
    scikit-learn's ``GroupShuffleSplit`` in turn; the result is fixed by ``seed``.
    """
    from sklearn.model_selection import GroupShuffleSplit  # here, not at import: scikit-learn costs every command a second to load

    if not np.isclose(sum(fractions), 1.0):
        raise ValueError(f"fractions must sum to 1, got {list(fractions)}")
    groups = np.array(article_keys(examples))
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
    questions are held out together, so no paragraph is both trained on and scored; articles that share a
    paragraph (up to spacing) are one article here."""
    groups, articles = article_groups(examples)
    count = max(groups, default=-1) + 1
    if k > count:
        joined = f" ({articles} articles, those sharing a paragraph counted as one)" if count < articles else ""
        raise ValueError(f"{k} folds need at least {k} articles; the questions have {count}{joined}")
    from sklearn.model_selection import KFold

    fold_of = {}
    for fold, (_, test) in enumerate(KFold(n_splits=k, shuffle=True, random_state=seed).split(np.arange(count))):
        fold_of.update({group: fold for group in test})
    return [([ex for ex, g in zip(examples, groups) if fold_of[g] != fold], [ex for ex, g in zip(examples, groups) if fold_of[g] == fold])
            for fold in range(k)]


def article_groups(examples: Sequence[Example]) -> tuple[list[int], int]:
    """Each question's group, numbered by first appearance, and how many articles (title, else context) there are: a
    group is an article, joined with every article that holds one of its paragraphs, as the question fingerprint
    normalises a paragraph (so a question filed under two titles, or a context spaced two ways, stays in one group)."""
    parent: dict[tuple[str, Any], tuple[str, Any]] = {}

    def root(node: tuple[str, Any]) -> tuple[str, Any]:
        while parent.setdefault(node, node) != node:
            parent[node] = parent[parent[node]]  # halves the path to the root
            node = parent[node]
        return node

    contexts = paragraphs(examples)
    for ex in examples:
        article, paragraph = root(("article", ex.title or ex.context)), root(("context", contexts[ex.context]))
        if article != paragraph:
            parent[paragraph] = article
    number: dict[tuple[str, Any], int] = {}
    groups = [number.setdefault(root(("article", ex.title or ex.context)), len(number)) for ex in examples]
    return groups, len({ex.title or ex.context for ex in examples})


def article_keys(examples: Sequence[Example]) -> list[str]:
    """Each question's article key (title, else context), every article of a group (:func:`article_groups`) under the
    key of its group that sorts first: questions without such a group keep their own key, so their splits stay as drawn."""
    groups, _ = article_groups(examples)
    first: dict[int, str] = {}
    for ex, group in zip(examples, groups):
        key = ex.title or ex.context
        if group not in first or key < first[group]:
            first[group] = key
    return [first[group] for group in groups]


def folds_of_distinct_questions(draw: Callable[..., Any], examples: Sequence[Example], k: int,
                                seed: int) -> list[tuple[list[Example], list[Example]]]:
    """``draw``'s ``k`` folds over the distinct questions of ``examples``, each repeat (the same question and context
    under another id or spacing, by its fingerprint) on the side of the fold its first is: trained on and scored at
    once, it would be scored as a question its model has seen. Without repeats, ``draw``'s folds as it draws them."""
    first: dict[int, int] = {}
    firsts = [first.setdefault(int(h), n) for n, h in enumerate(question_hashes(examples))]
    if len(first) == len(examples):
        return draw(examples, k, seed=seed)
    pairs = draw([examples[n] for n in first.values()], k, seed=seed)

    def following(part: Sequence[Example]) -> list[Example]:  # in the questions' order, each with its first
        drawn = {id(ex) for ex in part}
        return [ex for ex, n in zip(examples, firsts) if id(examples[n]) in drawn]

    folds = [(following(train), following(test)) for train, test in pairs]
    if (held := sum(len(test) for _, test in folds)) != len(examples):  # a drawer that returns copies of the questions
        raise ValueError(f"the fold drawer holds out {held} of the {len(examples)} questions, not each of those it is given once")
    return folds


def distinct_questions(examples: Sequence[Example]) -> int:
    """How many questions ``examples`` holds, a repeat (by its fingerprint) counted once."""
    return len(np.unique(question_hashes(examples)))


def question_set_hash(examples: Sequence[Example]) -> str:
    """A short fingerprint of the evaluated question ids, in order, for reports."""
    return hashlib.sha256("\n".join(ex.id for ex in examples).encode()).hexdigest()[:16]


def id_set_hash(ids: Iterable[str]) -> str:
    """A short fingerprint of a set of question ids, whatever their order (a cross-validation fold's held-out ones)."""
    return hashlib.sha256(json.dumps(sorted(ids)).encode("ascii")).hexdigest()[:16]
