"""MultiSpanQA's cross-validation holds out the questions of one context together, as SQuAD's and Quoref's hold out
an article's: its records carry no title, so a context is the article; alone and beside the Quoref part."""

import json

import pytest

from bio_mrc.errors import ConfigError
from bio_mrc.harness.comparison_splits import cross_validation_folds, joined_split, resolve_split
from bio_mrc.harness.config import DataSpec

from .test_multispan_reader import quoref_file


def multispan_sharing_a_context(tmp_path):
    """Eight questions, each on its own context but ``s0`` and ``s1`` (first and sixth in the file), which share one."""
    records = []
    for n, key in enumerate(["s0", "o1", "o2", "o3", "o4", "s1", "o6", "o7"]):
        context = ["Ann", "met", "Bob", "in", "town", "shared" if key.startswith("s") else str(n), "."]
        label = ["B"] + ["O"] * (len(context) - 1)
        records.append({"id": key, "question": ["who", "met", "Bob", str(n), "?"], "context": context, "label": label})
    path = tmp_path / "multispan.json"
    path.write_text(json.dumps({"data": records}), encoding="utf-8")
    return path


def sides(pairs, ids=("s0", "s1")):
    """For each fold, whether each of ``ids`` is held out."""
    return [[qid in {ex.id for ex in test.examples} for qid in ids] for _, test in pairs]


@pytest.mark.parametrize("folds", [2, 3, 5])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_questions_sharing_a_context_are_held_out_together(tmp_path, folds, seed):
    split = resolve_split(DataSpec(str(multispan_sharing_a_context(tmp_path)), format="multispanqa"), tmp_path)
    assert split.task == "multispanqa" and not any(ex.title for ex in split.examples)  # grouped by context
    pairs = cross_validation_folds(split, folds, seed)
    assert sorted(ex.id for _, test in pairs for ex in test.examples) == sorted(split.ids)  # each held out once
    assert all(a == b for a, b in sides(pairs))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_beside_the_quoref_part_a_shared_context_and_an_article_stay_on_one_side(tmp_path, seed):
    multispan = resolve_split(DataSpec(str(multispan_sharing_a_context(tmp_path)), format="multispanqa"), tmp_path)
    quoref = resolve_split(DataSpec(str(quoref_file(tmp_path)), format="quoref"), tmp_path)
    split = joined_split([multispan, quoref])
    pairs = cross_validation_folds(split, 3, seed)
    assert sorted(ex.id for _, test in pairs for ex in test.examples) == sorted(split.ids)
    assert all(a == b for a, b in sides(pairs))
    assert all(a == b for a, b in sides(pairs, ("a0-one", "a0-two")))  # Quoref by article, as before
    for _, test in pairs:  # fold k of each data set held out together
        assert [part.task for part in test.parts] == ["multispanqa", "quoref"] and all(part.examples for part in test.parts)


def test_more_folds_than_contexts_is_refused_before_any_work(tmp_path):
    split = resolve_split(DataSpec(str(multispan_sharing_a_context(tmp_path)), format="multispanqa"), tmp_path)
    cross_validation_folds(split, 7, seed=0)  # seven contexts: one a fold
    with pytest.raises(ConfigError, match=r"^cross_validation\.folds: .*multispan\.json.*: 8 folds need at least 8 articles; "
                                          r"the questions have 7$"):
        cross_validation_folds(split, 8, seed=0)
