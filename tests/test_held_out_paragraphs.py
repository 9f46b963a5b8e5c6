"""A comparison never trains on a paragraph it scores: an article split keeps articles that share a paragraph (up to
spacing, as the question fingerprint reads it) on one side, the splits' check finds a paragraph or question in two
splits under any id or spacing, and cross-validation refuses a paragraph in two of its data sets. Data without such
cases keeps the splits and folds drawn before."""

import pytest

from bio_mrc.data.article_splits import shared_questions_and_contexts, split_by_article
from bio_mrc.errors import ConfigError
from bio_mrc.harness.comparison_splits import Split, check_disjoint, cross_validation_folds, joined_split
from bio_mrc.types import Example

SIX = [Example(f"{a}{n}", f"Question {n} on {a}?", f"Paragraph of article {a}.", title=f"article {a}") for a in "ABCDEF" for n in range(2)]
UNTITLED = [Example(f"u{n}", f"Question {n}?", f"Paragraph {n}.") for n in range(6)]
SIX_HALVES = [["A0", "A1", "D0", "D1", "E0", "E1"], ["B0", "B1", "C0", "C1", "F0", "F1"]]  # seed 0, as drawn before
UNTITLED_HALVES = [["u0", "u3", "u4"], ["u1", "u2", "u5"]]


def halves(examples, seed=0):
    return [[ex.id for ex in part] for part in split_by_article(examples, [0.5, 0.5], seed=seed)]


def test_an_article_split_without_shared_paragraphs_is_as_drawn_before():
    assert halves(SIX) == SIX_HALVES
    assert halves(UNTITLED) == UNTITLED_HALVES


def test_a_paragraph_filed_under_a_second_title_falls_beside_its_first():
    """``mirror`` holds article A's paragraph re-spaced: it joins A's group under A's key, so every article falls where it
    fell without it and ``mirror`` beside A (it fell on the other half, with D moved over)."""
    mirror = Example("mirror", "Another question?", " Paragraph  of article A.", title="mirror")
    assert halves(SIX + [mirror]) == [SIX_HALVES[0] + ["mirror"], SIX_HALVES[1]]


def test_a_title_less_paragraph_spaced_two_ways_falls_beside_its_first():
    again = Example("again", "Asked again?", "Paragraph 0.\n")
    assert halves(UNTITLED + [again]) == [UNTITLED_HALVES[0] + ["again"], UNTITLED_HALVES[1]]


def test_shared_questions_and_paragraphs_are_counted_under_any_id_or_spacing():
    a = [Example("x", "Who?", "One paragraph."), Example("y", "What?", "One paragraph."), Example("z", "Why?", "Two.")]
    b = [Example("x2", "Who ?", "One paragraph."), Example("y2", "What?", " One\nparagraph. "), Example("z", "How?", "Three.")]
    # y2 is y re-spaced (x2's question text differs); z is one id in both, of another question and paragraph: no question
    # of a is in b twice over; one paragraph ("One paragraph.") in both
    assert shared_questions_and_contexts(a, b) == (1, 1)
    assert shared_questions_and_contexts(a, [Example("w", "When?", "Four.")]) == (0, 0)
    composed, decomposed = [Example("c", "Where?", "Caf\u00e9.")], [Example("d", "Where?", "Cafe\u0301.")]  # NFC and NFD
    assert shared_questions_and_contexts(composed, decomposed) == (1, 1)


def test_two_splits_sharing_a_paragraph_up_to_spacing_are_refused():
    train = Split(SIX[:4], "squad-v1.1", "train")
    respaced = Example("other", "A question never asked?", "Paragraph of\tarticle B.", title="B again")
    evaluation = Split([*SIX[4:], respaced], "squad-v1.1", "eval")
    with pytest.raises(ConfigError, match=r"^the train and eval splits overlap \(0 questions, 1 context, under any id or spacing\)"):
        check_disjoint([("train", train), ("eval", evaluation)])
    check_disjoint([("train", train), ("eval", Split(SIX[4:], "squad-v1.1", "eval"))])  # no paragraph in both


def test_a_question_copied_under_another_id_and_spacing_is_counted_as_shared():
    train = Split(SIX[:2], "squad-v1.1", "train")
    copy = Example("copy", "Question  0 on A?", "Paragraph of article A. ", title="another title")
    with pytest.raises(ConfigError, match=r"^the train and eval splits overlap \(1 question, 1 context, under any id or spacing\)"):
        check_disjoint([("train", train), ("eval", Split([copy], "squad-v1.1", "eval"))])


NUMBERED = {"train": ("Who wrote letter {n}?", "Letter {n} was written by Ada."), "tune": ("Where is town {n}?", "Town {n} is in Kent."),
            "eval": ("When did war {n} end?", "War {n} ended in 1815.")}


def numbered(name):
    """Three questions of a data set built apart from the others, numbered q1, q2, q3 as each of them is."""
    question, context = NUMBERED[name]
    return Split([Example(f"q{n}", question.format(n=n), context.format(n=n)) for n in (1, 2, 3)], "squad-v1.1", name)


def test_splits_that_number_different_questions_alike_are_not_refused():
    """Each split's questions are predicted, tuned on and scored apart, by the ids of that split alone: ids that name
    other questions and paragraphs in two splits leak nothing. They were refused as an overlap of 3 questions and 0
    contexts, with the advice to split by article."""
    splits = [(name, numbered(name)) for name in NUMBERED]
    assert shared_questions_and_contexts(splits[0][1].examples, splits[2][1].examples) == (0, 0)
    check_disjoint(splits)
    check_disjoint(splits[1:])


@pytest.mark.parametrize("question, shared", [("Who wrote letter 2?", 1), ("Who read letter 2?", 0)])
def test_a_paragraph_in_two_splits_is_refused_and_its_questions_counted_by_text_and_context(question, shared):
    """q2 over the same paragraph in both: refused, as the same paragraph is under any id, the question counted where its
    text is the same; q1, another question in each split, is not counted (it was: 2 questions)."""
    repeated = Split([Example("q2", question, "Letter 2 was written by Ada."), *numbered("eval").examples[:1]], "squad-v1.1", "eval")
    questions = "1 question" if shared else "0 questions"
    with pytest.raises(ConfigError, match=rf"^the train and eval splits overlap \({questions}, 1 context, under any id or spacing\): split by"):
        check_disjoint([("train", numbered("train")), ("eval", repeated)])


EIGHT = [Example(f"q{n}", f"Who is {n}?", f"Context {n} holds names.") for n in range(8)]  # a context each
FIVE_ARTICLES = [Example(f"a{a}-{n}", f"Question {n} on {a}?", f"Paragraph of article {a}.", title=f"article {a}")
                 for a in range(5) for n in range(2)]


def test_two_data_sets_without_a_shared_paragraph_fold_as_each_alone():
    """Fold k of each set as it is drawn alone (tests/test_fold_repeats.py's two folds, seed 0), held out together."""
    split = joined_split([Split(EIGHT, "multispanqa", "eight"), Split(FIVE_ARTICLES, "quoref", "stories")])
    held_out = [[ex.id for ex in test.examples] for _, test in cross_validation_folds(split, 2, seed=0)]
    assert held_out == [["q1", "q2", "q6", "q7", "a0-0", "a0-1", "a1-0", "a1-1", "a2-0", "a2-1"],
                        ["q0", "q3", "q4", "q5", "a3-0", "a3-1", "a4-0", "a4-1"]]


@pytest.mark.parametrize("context", ["Context 2 holds names.", "Context  2 holds\nnames."])
def test_a_paragraph_in_two_cross_validation_data_sets_is_refused(context):
    """A question of its own on a paragraph of ``eight``: each set's folds are drawn apart, so the paragraph could be
    trained on in one and its questions scored in the other."""
    stories = Split([*FIVE_ARTICLES, Example("r-new", "Which names?", context, title="story 9")], "quoref", "stories")
    split = joined_split([Split(EIGHT, "multispanqa", "eight"), stories])
    with pytest.raises(ConfigError, match=r"^cross_validation: 1 paragraph of stories is in eight too \(up to spacing\): each "
                                          r"data set's folds are drawn apart"):
        cross_validation_folds(split, 2, seed=0)


@pytest.mark.parametrize("second, key", [(1, "eval_also[0]"), (2, "eval_also[1]")])
def test_a_question_id_in_two_evaluation_data_sets_is_named_with_both_keys(second, key):
    """eval_also naming eval's own file: the line names the id and the two entries that hold it."""
    parts = [Split(SIX[:2], "squad-v1.1", "dev.json"), Split(SIX[2:4], "squad-v1.1", "other.json"), Split(SIX[4:6], "squad-v1.1", "more.json")]
    parts[second] = Split(SIX[1:3], "squad-v1.1", "dev.json")
    with pytest.raises(ConfigError) as refused:
        joined_split(parts)
    assert str(refused.value) == (f'{key}: the question id "A1" is in eval too; each question is scored once, so the '
                                  "evaluation data sets hold different questions")
