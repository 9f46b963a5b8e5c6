"""Loading SQuAD files: the data model, validation errors that name the record, splits."""

import json

import pytest

from bio_mrc.data.json_reader import DataFormatError
from bio_mrc.data.article_splits import kfold_by_question, question_set_hash, split_by_article
from bio_mrc.data.squad import examples_to_squad_json, load_squad, parse_squad
from bio_mrc.data.unanswerable import add_unanswerable

from .conftest import SAMPLE_V1, require_data


def squad(qas, context="Paris is the capital of France."):
    return {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}


def test_sample_maps_to_the_data_model(sample_v1):
    assert sample_v1.version == "1.1" and len(sample_v1.examples) == 8
    n1 = next(ex for ex in sample_v1.examples if ex.id == "n1")
    assert n1.answer_texts() == [["France"], ["France"], ["in France"]]  # alternatives, one per annotator
    assert all(len(alt) == 1 for alt in n1.answers)
    p3 = next(ex for ex in sample_v1.examples if ex.id == "p3")
    assert p3.answer_texts() == [["the father of physics"]]  # odd Unicode around it keeps offsets exact


@pytest.mark.parametrize(
    "qas, message",
    [
        ([{"id": "q1", "question": "What?", "answers": [{"text": "Berlin", "answer_start": 0}]}], "not in the context"),
        ([{"id": "q1", "question": "What?", "answers": [{"text": "France", "answer_start": 3}]}], "does occur at 24"),
        ([{"id": "q1", "question": " ", "answers": [{"text": "Paris", "answer_start": 0}]}], "empty or missing question"),
        ([{"id": "q1", "question": "What?", "answers": [{"text": "", "answer_start": 0}]}], "non-empty 'text'"),
        ([{"id": "q1", "question": "What?", "answers": []}], "not marked is_impossible"),
        ([{"id": "q1", "question": "What?", "answers": [{"text": "Paris", "answer_start": 0}]}] * 2, "duplicate"),
        ([{"id": 1, "question": "What?", "answers": []}], "'id' must be a string"),
    ],
)
def test_bad_records_are_named(qas, message):
    with pytest.raises(DataFormatError, match=message) as info:
        parse_squad(squad(qas), source="x.json")
    assert "x.json" in str(info.value)


def test_empty_context_and_bad_files(tmp_path):
    with pytest.raises(DataFormatError, match="empty or missing context.*'q1'"):
        parse_squad(squad([{"id": "q1", "question": "?", "answers": []}], context=""))
    with pytest.raises(DataFormatError, match="'data' list"):
        parse_squad({"version": "1.1"})
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(DataFormatError, match="not valid JSON"):
        load_squad(broken)
    with pytest.raises(DataFormatError, match="file not found"):
        load_squad(tmp_path / "missing.json")


def test_a_misplaced_answer_text_is_looked_for_once_in_its_paragraph(monkeypatch):
    # Each answer at a wrong answer_start searched its whole context again: 10,000 such answers of one text (in one
    # question's list, or one each of a paragraph's questions) searched a 5,000,000-character context 10,000 times.
    # A text's places are found once for the paragraph's one string; the nearest is the same.
    from bio_mrc.data import squad as squad_module

    searched, mentions = [], squad_module.mentions
    monkeypatch.setattr(squad_module, "mentions", lambda context, text: searched.append(text) or mentions(context, text))
    context = "the dog ran, hotdog, a dog sat"  # "dog" a whole word at 4 and 23; inside "hotdog" at 16
    starts = [0, 17, 14, 9] * 250
    qas = [{"id": f"q{i}", "question": "Which?", "answers": [{"text": "dog", "answer_start": start}] * 3}
           for i, start in enumerate(starts)]
    read = parse_squad({"data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}, fix_offsets=True)
    assert [example.answers[0] for example in read.examples[:4]] == [((4, 7),), ((23, 26),), ((23, 26),), ((4, 7),)]
    assert len(read.fixed_offsets) == 1_000 and searched == ["dog"]
    tie = {"data": [{"title": "t", "paragraphs": [{"context": "dog x dog", "qas": [{**qas[0], "answers": [
        {"text": "dog", "answer_start": 3}]}]}]}]}
    assert parse_squad(tie, fix_offsets=True).examples[0].answers == (((0, 3),),)  # as near: the earlier


def test_a_paragraphs_context_is_read_whole_once_for_all_its_questions(monkeypatch):
    # Each question read its paragraph's context whole again (its characters, its length), so 10,000 questions of one
    # 5,000,000-character context took minutes to read; the paragraph's one string is checked with its first question.
    from bio_mrc.data import squad as squad_module

    contexts, check_text = [], squad_module.check_text

    def counted(value, what, *rest):
        if what == "context":
            contexts.append(value)
        return check_text(value, what, *rest)

    monkeypatch.setattr(squad_module, "check_text", counted)
    qas = [{"id": f"q{i}", "question": "Where?", "answers": [{"text": "Paris", "answer_start": 0}]} for i in range(3)]
    raw = {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": "Paris is big.", "qas": qas},
                                                                    {"context": "Paris is old.", "qas": [{**qas[0], "id": "q9"}]}]}]}
    assert len(parse_squad(raw).examples) == 4
    assert contexts == ["Paris is big.", "Paris is old."]  # once each, for the first of their questions
    with pytest.raises(DataFormatError, match="empty or missing context.*'q0'"):
        parse_squad({"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": " ", "qas": qas}]}]})


def test_unanswerable_questions_make_a_v2_file():
    raw = squad([{"id": "q1", "question": "What?", "answers": [], "is_impossible": True}])
    data = parse_squad(raw)
    assert data.version == "2.0" and data.examples[0].answers == ()
    assert data.gold_texts() == {"q1": []}


def test_round_trip_through_official_layout(sample_v1):
    again = parse_squad(json.loads(json.dumps(examples_to_squad_json(sample_v1.examples))))
    assert [ex.id for ex in again.examples] == [ex.id for ex in sample_v1.examples]
    assert [ex.answers[0] for ex in again.examples] == [ex.answers[0] for ex in sample_v1.examples]


def test_article_split_never_splits_an_article(sample_v1):
    first, second = split_by_article(sample_v1.examples, [0.5, 0.5], seed=0)
    assert {ex.title for ex in first}.isdisjoint({ex.title for ex in second})
    assert len(first) + len(second) == len(sample_v1.examples)
    again = split_by_article(sample_v1.examples, [0.5, 0.5], seed=0)
    assert question_set_hash(again[0]) == question_set_hash(first)


def test_kfold_covers_every_question_once(sample_v1):
    folds = kfold_by_question(sample_v1.examples, k=4, seed=1)
    tested = [ex.id for _, test in folds for ex in test]
    assert sorted(tested) == sorted(ex.id for ex in sample_v1.examples)


@pytest.mark.parametrize("task", ["squad-v1.1", "squad-v2.0"])
def test_squad_cross_validation_holds_each_article_out_whole(sample_v1, task):
    """Folds by question put one paragraph's questions on both sides of a fold: a model trained on a paragraph, then
    scored on another question of it (the leak the splits' own disjointness check refuses)."""
    from bio_mrc.harness.comparison_splits import Split, cross_validation_folds

    folds = cross_validation_folds(Split(sample_v1.examples, task, "the sample"), 2, seed=0)
    for train, test in folds:
        assert {ex.title for ex in train.examples}.isdisjoint({ex.title for ex in test.examples})
        assert {ex.context for ex in train.examples}.isdisjoint({ex.context for ex in test.examples})
    assert sorted(ex.id for _, test in folds for ex in test.examples) == sorted(ex.id for ex in sample_v1.examples)


def test_unanswerable_pairs_use_another_paragraph_of_the_article(sample_v1):
    out = add_unanswerable(sample_v1.examples, ratio=0.5, seed=3)
    made = out[len(sample_v1.examples):]
    # Only the Normans article has two paragraphs, so only its 5 questions are eligible.
    assert len(made) == 4
    originals = {ex.id: ex for ex in sample_v1.examples}
    for ex in made:
        source = originals[ex.id.removesuffix("-unans")]
        assert ex.answers == () and ex.title == source.title and ex.context != source.context
    assert add_unanswerable(sample_v1.examples, ratio=0.5, seed=3) == out


@pytest.mark.parametrize("ratio", [-0.5, 1.5, 1e308, float("nan"), float("inf")])
def test_an_unanswerable_ratio_past_one_per_question_is_refused(sample_v1, ratio):
    """Each question is paired at most once, so a ratio above 1 asks for more than can be made (1e308 overflowed)."""
    with pytest.raises(ValueError, match=r"ratio is 0 to 1 \(at most one made-up question per question\), got "):
        add_unanswerable(sample_v1.examples, ratio=ratio)


@pytest.mark.slow  # real data
def test_real_squad_files_load():
    for name, count in (("squad-v1.1/dev.json", 10570), ("squad-v2.0/dev.json", 11873)):
        data = load_squad(require_data(name))
        assert len(data.examples) == count
    assert load_squad(require_data("squad-v2.0/dev.json")).is_v2
