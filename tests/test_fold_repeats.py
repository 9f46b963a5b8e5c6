"""Cross-validation holds a question out with its every repeat (the same text and context under another id or
spacing), and an article with every article that shares one of its paragraphs; folds of data without repeats are
the ones drawn before repeats were grouped, so earlier reports' folds stay as they were."""

import pytest

from bio_mrc.data.article_splits import kfold_by_article
from bio_mrc.errors import ConfigError
from bio_mrc.harness.comparison_splits import Split, cross_validation_folds, joined_split
from bio_mrc.types import Example

EIGHT = [Example(f"q{n}", f"Who is {n}?", f"Context {n} holds names.") for n in range(8)]  # a context each
FIVE_ARTICLES = [Example(f"a{a}-{n}", f"Question {n} on {a}?", f"Paragraph of article {a}.", title=f"article {a}")
                 for a in range(5) for n in range(2)]


def held_out(split, folds, seed):
    pairs = cross_validation_folds(split, folds, seed)
    for train, test in pairs:  # each fold's training part is every other question, nothing dropped or doubled
        assert sorted(ex.id for ex in train.examples + test.examples) == sorted(split.ids)
    return [[ex.id for ex in test.examples] for _, test in pairs]


@pytest.mark.parametrize(("folds", "seed", "expected"), [
    (2, 0, [["q1", "q2", "q6", "q7"], ["q0", "q3", "q4", "q5"]]),
    (3, 0, [["q1", "q2", "q6"], ["q0", "q3", "q7"], ["q4", "q5"]]),
    (3, 1, [["q1", "q2", "q7"], ["q0", "q4", "q6"], ["q3", "q5"]]),
])
def test_folds_without_repeats_or_shared_contexts_are_as_drawn_by_question_before(folds, seed, expected):
    """MultiSpanQA's folds, now by context, are those it drew by question where no two questions share a context."""
    assert held_out(Split(EIGHT, "multispanqa", "eight"), folds, seed) == expected


@pytest.mark.parametrize(("folds", "seed", "expected"), [
    (2, 0, [["a0-0", "a0-1", "a1-0", "a1-1", "a2-0", "a2-1"], ["a3-0", "a3-1", "a4-0", "a4-1"]]),
    (3, 0, [["a0-0", "a0-1", "a2-0", "a2-1"], ["a1-0", "a1-1", "a3-0", "a3-1"], ["a4-0", "a4-1"]]),
    (3, 1, [["a1-0", "a1-1", "a2-0", "a2-1"], ["a0-0", "a0-1", "a4-0", "a4-1"], ["a3-0", "a3-1"]]),
])
def test_folds_by_article_without_shared_paragraphs_are_as_drawn_before(folds, seed, expected):
    assert held_out(Split(FIVE_ARTICLES, "squad-v1.1", "five articles"), folds, seed) == expected


def test_a_question_asked_again_under_another_id_or_spacing_is_held_out_with_its_first():
    again = [Example("again-1", "Who  is 1?", " Context 1 holds\nnames."), Example("again-4", "Who is 4?", "Context 4 holds names.")]
    folds = held_out(Split(EIGHT + again, "multispanqa", "eight and two repeats"), 3, 0)
    # the eight questions' folds of the test above, each repeat beside its first
    assert folds == [["q1", "q2", "q6", "again-1"], ["q0", "q3", "q7"], ["q4", "q5", "again-4"]]
    assert held_out(Split(EIGHT + again, "multispanqa", "again"), 3, 0) == folds  # the same seed, the same folds


def test_articles_sharing_a_paragraph_are_held_out_together():
    shared = [Example("copy-1", "Another question?", " Paragraph  of article 1.", title="a copy of article 1"),
              Example("copy-3", "Question 0 on 3?", "Paragraph of article 3.\n", title="mirror")]
    folds = held_out(Split(FIVE_ARTICLES + shared, "squad-v1.1", "five articles and two copies"), 3, 0)
    assert folds == [["a0-0", "a0-1", "a2-0", "a2-1"], ["a1-0", "a1-1", "a3-0", "a3-1", "copy-1", "copy-3"], ["a4-0", "a4-1"]]


def test_articles_sharing_a_paragraph_count_as_one_article():
    examples = [Example("x", "Who?", "One paragraph.", title="first"), Example("y", "What?", "One  paragraph.", title="second")]
    with pytest.raises(ValueError, match=r"2 folds need at least 2 articles; the questions have 1 \(2 articles, those sharing a paragraph counted as one\)"):
        kfold_by_article(examples, 2)


def test_more_folds_than_distinct_questions_is_refused():
    three = Split([*EIGHT[:2], Example("again-0", "Who is 0?", "Context 0  holds names.")], "multispanqa", "three questions")
    with pytest.raises(ConfigError, match=r"3 folds need at least 3 questions; three questions has 2 distinct ones of its 3"):
        cross_validation_folds(three, 3, seed=0)


def test_a_question_in_two_evaluation_data_sets_is_refused_in_cross_validation():
    quoref = [Example(f"r{n}", f"Which {n}?", f"Story {n}.", title=f"story {n}") for n in range(3)]
    copied = Example("r-copy", "Who is 5?", "Context 5 holds names.", title="story 9")  # q5 under another id
    split = joined_split([Split(EIGHT, "multispanqa", "eight"), Split([*quoref, copied], "quoref", "stories")])
    with pytest.raises(ConfigError, match=r"cross_validation: 1 question of stories is in eight too \(the same text and context"):
        cross_validation_folds(split, 2, seed=0)
