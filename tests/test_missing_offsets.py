"""Hand-written questions without ``answer_start``: under ``fix_offsets`` (``--fix-offsets``) an answer whose text
occurs exactly once in its context is read there, in every form; a text that occurs several times or never is refused
in one line naming the file, the record and the count; without it the refusal says where the flag finds one."""

import json
import unicodedata

import datasets
import pytest

from bio_mrc.cli import main
from bio_mrc.data.answer_parts import load_answer_parts
from bio_mrc.data.squad import as_written, load_squad, stream_squad
from bio_mrc.errors import DataFormatError

from .test_data_formats import TABLES
from .test_data_sources import FORMS, Q2_SOURCE, write_jsonl

ADA = "The letters were written by Ada Lovelace in 1843."
TWICE = "Paris is in France. Paris is big."
NAMES = "Denmark, Iceland and Norway sent raiders."


def official(*qas, context=ADA):
    return {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": list(qas)}]}]}


def asked(qid, *answers):
    """A question whose answers are ``{"text": ...}`` objects with what each gives of ``answer_start`` (absent: no key)."""
    return {"id": qid, "question": "Who?", "answers": list(answers)}


def row(qid, texts, starts=..., context=ADA):
    """A question in the Hugging Face columns; ``starts`` left out: no ``answer_start`` key at all."""
    answers = {"text": texts} if starts is ... else {"text": texts, "answer_start": starts}
    return {"id": qid, "title": "t", "context": context, "question": "Who?", "answers": answers}


def squad_like(answer):
    """The four questions of test_data_sources' ``squad_json``, its q2 answered by ``answer`` (an answer object) with
    a null ``answer_start``, as every form can hold it."""
    from .test_data_sources import squad_json

    raw = squad_json()
    raw["data"][0]["paragraphs"][0]["qas"][1]["answers"] = [{**answer, "answer_start": None}]
    return raw


def write_official(tmp_path, raw, name="mine.json"):
    path = tmp_path / name
    path.write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    return path


# --- every form -----------------------------------------------------------------------------------

@pytest.mark.parametrize("form", FORMS)
def test_a_missing_start_of_a_text_there_once_is_found_in_every_form(tmp_path, form):
    data = load_squad(FORMS[form](tmp_path, squad_like({"text": "Spain"})), fix_offsets=True)  # "Spain" is at 47, once
    assert data.examples[1].answers == (((47, 52),),) and data.fixed_offsets == ["q2"] and data.found_offsets == ["q2"]


@pytest.mark.parametrize("form", FORMS)
def test_a_missing_start_of_a_text_there_twice_is_refused_in_every_form(tmp_path, form):
    with pytest.raises(DataFormatError) as info:  # "France" is at 24 and at 32
        load_squad(FORMS[form](tmp_path, squad_like({"text": "France"})), fix_offsets=True)
    assert info.value.problem.startswith('answer "France" has no answer_start and its text occurs 2 times in the context '
                                         "(at 24, 32): give its answer_start")
    assert info.value.record == "q2" and info.value.source == Q2_SOURCE[form].format(tmp=tmp_path)


@pytest.mark.parametrize("form", TABLES)
@pytest.mark.parametrize("starts", [..., [None], None, []], ids=["no-key", "null", "null-list", "empty-list"])
def test_tables_read_a_missing_start_as_the_texts_one_place(tmp_path, form, starts):
    rows = [row("q1", ["Ada Lovelace"], starts), row("q2", ["1843"], [44])]
    if starts is ... and form in ("parquet", "dataframe-from-parquet"):
        rows = [row("q1", ["Ada Lovelace"], [None]), rows[1]]  # a Parquet struct holds every row's fields: null, not absent
    data = load_squad(TABLES[form](tmp_path, rows), fix_offsets=True)
    assert [example.answers for example in data.examples] == [(((28, 40),),), (((44, 48),),)]
    assert data.found_offsets == ["q1"] and data.fixed_offsets == ["q1"]


def test_an_empty_start_in_a_csv_answers_cell_is_a_missing_one(tmp_path):
    path = tmp_path / "my.csv"
    path.write_text('id,question,context,answers\n'
                    f'q1,Who wrote them?,{ADA},"{{""text"": [""Ada Lovelace""], ""answer_start"": [""""]}}"\n'
                    f'q2,When?,{ADA},"{{""text"": [""1843""]}}"\n', encoding="utf-8")
    data = load_squad(path, fix_offsets=True)
    assert [example.answers for example in data.examples] == [(((28, 40),),), (((44, 48),),)]
    with pytest.raises(DataFormatError) as info:
        load_squad(path)
    assert info.value.source == f"{path}, row 0" and info.value.record == "q1"


def test_a_jsonl_file_names_the_line_of_a_text_found_twice(tmp_path):
    path = write_jsonl(tmp_path / "mine.jsonl", [row("q1", ["1843"], [None]), row(None, ["Paris"], context=TWICE)])
    with pytest.raises(DataFormatError) as info:
        load_squad(path, fix_offsets=True)
    assert info.value.source == f"{path}, line 2" and info.value.record.startswith("q2-")
    assert info.value.problem.startswith('answer "Paris" has no answer_start and its text occurs 2 times in the context (at 0, 20)')


# --- the rule ---------------------------------------------------------------------------------------

def test_a_text_the_context_lacks_is_refused_with_its_count(tmp_path):
    path = write_official(tmp_path, official(asked("q1", {"text": "Babbage"})))
    with pytest.raises(DataFormatError) as info:
        load_squad(path, fix_offsets=True)
    assert info.value.problem.startswith('answer "Babbage" has no answer_start and its text occurs 0 times in the context: give '
                                  "the answer as the context writes it, with its answer_start")
    assert str(info.value).endswith(f"(in {path}, record 'q1')")


def test_a_text_in_another_unicode_normalisation_never_matches(tmp_path):
    """The context writes "é" as one code point, the answer as "e" and U+0301: they look alike and are not found."""
    context = unicodedata.normalize("NFC", "Le café est ouvert.")
    text = unicodedata.normalize("NFD", "café")
    path = write_official(tmp_path, official(asked("q1", {"text": text}), context=context))
    with pytest.raises(DataFormatError) as info:
        load_squad(path, fix_offsets=True)
    assert "occurs 0 times in the context" in info.value.problem
    assert "once both are in one Unicode normalisation form" in info.value.problem


def test_a_text_that_would_cut_an_accent_off_its_letter_is_not_found(tmp_path):
    """ "cafe" is the first four code points of "café" written as "e" and U+0301: a span there cuts the accent off."""
    context = unicodedata.normalize("NFD", "Le café est ouvert.")
    path = write_official(tmp_path, official(asked("q1", {"text": "cafe"}), context=context))
    with pytest.raises(DataFormatError, match="occurs 0 times in the context"):
        load_squad(path, fix_offsets=True)
    decomposed = write_official(tmp_path, official(asked("q1", {"text": unicodedata.normalize("NFD", "café")}), context=context),
                                "nfd.json")
    assert load_squad(decomposed, fix_offsets=True).examples[0].answers == (((3, 8),),)


def test_a_missing_start_is_never_found_inside_a_user_perceived_character(tmp_path):
    """ "👍" inside "👍🏽" and "하" written as jamo inside "학" are parts of one character, not mentions of the text: the
    text occurs whole once, where it is read, and where a misplaced start beside the part is relocated to."""
    for k, (context, text) in enumerate([("👍🏽 then 👍 again", "👍"),
                                         (unicodedata.normalize("NFD", "학생 하나"), unicodedata.normalize("NFD", "하"))]):
        for start in (None, 1):
            path = write_official(tmp_path, official(asked("q1", {"text": text, "answer_start": start}), context=context),
                                  f"{k}-{start}.json")
            ((span,),) = load_squad(path, fix_offsets=True).examples[0].answers
            assert context[span[0]:span[1]] == text and span[0] == context.rindex(text)


@pytest.mark.parametrize("context, text, cut", [
    (unicodedata.normalize("NFD", "Le café est ouvert."), "cafe", "e\u0301"),  # a letter from its accent
    ("Rollo 👍🏽 ok", "👍", "👍🏽"),  # an emoji from its skin tone
    (unicodedata.normalize("NFD", "학생"), unicodedata.normalize("NFD", "하"), unicodedata.normalize("NFD", "학")),
])
def test_a_text_found_only_inside_a_longer_character_is_refused_saying_so(tmp_path, context, text, cut):
    """Not "once both are in one Unicode normalisation form", which no form makes true of "👍" in "👍🏽": the line
    names the character the text is part of, with or without a start to relocate."""
    at = context.index(text)
    for k, start in enumerate((None, at + 2)):
        path = write_official(tmp_path, official(asked("q1", {"text": text, "answer_start": start}), context=context), f"{k}.json")
        with pytest.raises(DataFormatError) as info:
            load_squad(path, fix_offsets=True)
        assert f"as a whole: it occurs only as part of a longer character (at {at}, inside {json.dumps(cut, ensure_ascii=False)})" in info.value.problem
        assert "normalisation" not in info.value.problem


@pytest.mark.parametrize("context, text, start, cut", [
    (unicodedata.normalize("NFD", "Le café est ouvert."), "cafe", 3, "e\u0301"),  # a letter from its accent
    ("Rollo 👍🏽 ok", "👍", 6, "👍🏽"),  # an emoji from its skin tone
    (unicodedata.normalize("NFD", "학생"), unicodedata.normalize("NFD", "하"), 0, unicodedata.normalize("NFD", "학")),
])
def test_an_answer_start_that_cuts_a_user_perceived_character_is_read_as_given(tmp_path, context, text, start, cut):
    """A given start is honoured even where its text ends inside a character: the official scorers read the text
    alone, and a file with such a gold (a variation selector or skin tone the annotation lost) still loads whole."""
    path = write_official(tmp_path, official(asked("q1", {"text": text, "answer_start": start}), context=context))
    for fix_offsets in (False, True):
        assert load_squad(path, fix_offsets=fix_offsets).examples[0].answers == (((start, start + len(text)),),)
    assert cut in context


def test_a_blank_edge_of_a_character_is_no_cut(tmp_path):
    """ "Paris\r" of a line ending in CR LF ends inside that one character, at a blank every answer loses: read as
    given, and found where its start is missing."""
    context = "He lives in Paris\r\nand works there."
    for k, start in enumerate((12, None)):
        path = write_official(tmp_path, official(asked("q1", {"text": "Paris\r", "answer_start": start}), context=context), f"{k}.json")
        assert load_squad(path, fix_offsets=True).examples[0].answers == (((12, 18),),)


def test_overlapping_occurrences_count_apart(tmp_path):
    path = write_official(tmp_path, official(asked("q1", {"text": "aa"}), context="The cry was aaa."))
    with pytest.raises(DataFormatError, match=r"occurs 2 times in the context \(at 12, 13\)"):
        load_squad(path, fix_offsets=True)


def test_several_annotators_each_found_alone(tmp_path):
    path = write_official(tmp_path, official(asked("q1", {"text": "Ada Lovelace"}, {"text": "Lovelace", "answer_start": None},
                                                   {"text": "Ada Lovelace", "answer_start": 28})))
    data = load_squad(path, fix_offsets=True)
    assert data.examples[0].answers == (((28, 40),), ((32, 40),), ((28, 40),)) and data.found_offsets == ["q1"]
    twice = write_official(tmp_path, official(asked("q1", {"text": "Ada"}, {"text": "Paris"}), context=TWICE + " Ada."), "b.json")
    with pytest.raises(DataFormatError, match='answer "Paris" has no answer_start and its text occurs 2 times'):
        load_squad(twice, fix_offsets=True)


def test_the_parts_of_one_answer_each_found_alone(tmp_path):
    path = write_jsonl(tmp_path / "parts.jsonl", [row("q1", ["Denmark", "Iceland", "Norway"], context=NAMES)])
    assert load_answer_parts(path, fix_offsets=True)[0].answers == (((0, 7), (9, 16), (21, 27)),)
    # "and" inside "Iceland" too: the whole word is its one mention
    word = write_jsonl(tmp_path / "word.jsonl", [row("q1", ["Denmark", "raiders", "and"], [0, None, None], context=NAMES)])
    assert load_answer_parts(word, fix_offsets=True)[0].answers == (((0, 7), (17, 20), (33, 40)),)
    twice = "Denmark and Iceland and Norway sent raiders."
    again = write_jsonl(tmp_path / "again.jsonl", [row("q1", ["Denmark", "and"], [0, None], context=twice)])
    with pytest.raises(DataFormatError, match=r'answer "and" has no answer_start and its text occurs 2 times in the context \(at 8, 20\)'):
        load_answer_parts(again, fix_offsets=True)


def test_a_relocated_start_and_a_found_one_are_both_listed(tmp_path):
    path = write_official(tmp_path, official(asked("q1", {"text": "1843", "answer_start": 3}), asked("q2", {"text": "1843"}),
                                             asked("q3", {"text": "1843", "answer_start": 44})))
    data = load_squad(path, fix_offsets=True)
    assert data.fixed_offsets == ["q1", "q2"] and data.found_offsets == ["q2"]
    streamed = stream_squad(path, fix_offsets=True)
    assert [example.answers for example in streamed] == [example.answers for example in data.examples]
    assert streamed.fixed_offsets == ["q1", "q2"] and streamed.found_offsets == ["q2"]


def test_skip_invalid_skips_a_text_found_twice(tmp_path):
    path = write_official(tmp_path, official(asked("q1", {"text": "Paris"}), asked("q2", {"text": "big"}), context=TWICE))
    data = load_squad(path, fix_offsets=True, skip_invalid=True)
    assert [example.id for example in data.examples] == ["q2"] and [error.record for error in data.skipped] == ["q1"]


# --- without fix_offsets ----------------------------------------------------------------------------

def test_without_fix_offsets_the_refusal_says_the_flag_finds_a_text_there_once(tmp_path):
    path = write_official(tmp_path, official(asked("q1", {"text": "Ada Lovelace"})))
    with pytest.raises(DataFormatError) as info:
        load_squad(path)
    assert info.value.problem.startswith('answer "Ada Lovelace" has no answer_start; its text occurs once in the context, at 28 '
                                  "(fix_offsets=True finds it there)")
    assert as_written(info.value.marked_problem).startswith('answer "Ada Lovelace" has no answer_start; its text occurs once in the '
                                                     "context, at 28 (give its answer_start in the file: a comparison reads "
                                                     "its data as written)")


@pytest.mark.parametrize("text, context", [("Paris", TWICE), ("Babbage", ADA)])
def test_without_fix_offsets_a_text_not_there_once_keeps_its_refusal(tmp_path, text, context):
    path = write_official(tmp_path, official(asked("q1", {"text": text}), context=context))
    with pytest.raises(DataFormatError) as info:
        load_squad(path)
    assert info.value.problem.startswith("answer needs a non-empty 'text' and an integer 'answer_start'; read as squad")


def test_bad_starts_that_are_given_keep_their_refusals(tmp_path):
    for start in ("28", 28.0, True, [28]):
        path = write_official(tmp_path, official(asked("q1", {"text": "Ada Lovelace", "answer_start": start})))
        with pytest.raises(DataFormatError, match="answer needs a non-empty 'text' and an integer 'answer_start'"):
            load_squad(path, fix_offsets=True)
    columns = write_jsonl(tmp_path / "short.jsonl", [row("q1", ["Ada Lovelace", "1843"], [28])])
    with pytest.raises(DataFormatError, match="'answers' needs lists 'text' and 'answer_start' of the same length"):
        load_squad(columns, fix_offsets=True)


# --- an empty list of starts --------------------------------------------------------------------------

# Each form of the Hugging Face columns: (tmp_path, rows) -> what load_squad takes.
COLUMN_FORMS = {"jsonl": lambda tmp_path, rows: str(write_jsonl(tmp_path / "mine.jsonl", rows)),
                "dataset": lambda tmp_path, rows: datasets.Dataset.from_list(rows), **TABLES}


@pytest.mark.parametrize("form", COLUMN_FORMS)
def test_an_empty_list_of_starts_beside_texts_gives_no_start_in_every_form(tmp_path, form):
    rows = [row("q1", ["Ada Lovelace", "1843"], []), row("q2", ["1843"], [44]), row("q3", [], [])]
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    data = load_squad(COLUMN_FORMS[form](tmp_path / "a", rows), fix_offsets=True)
    assert [example.answers for example in data.examples] == [(((28, 40),), ((44, 48),)), (((44, 48),),), ()]
    assert data.found_offsets == ["q1"] and data.fixed_offsets == ["q1"]
    with pytest.raises(DataFormatError) as info:
        load_squad(COLUMN_FORMS[form](tmp_path / "b", rows))
    assert info.value.problem.startswith('answer "Ada Lovelace" has no answer_start; its text occurs once in the context, at 28 '
                                         "(fix_offsets=True finds it there)")
    assert info.value.record == "q1"


def test_an_empty_list_as_an_answer_objects_start_gives_no_start(tmp_path):
    path = write_official(tmp_path, official(asked("q1", {"text": "Ada Lovelace", "answer_start": []})))
    assert load_squad(path, fix_offsets=True).examples[0].answers == (((28, 40),),)
    with pytest.raises(DataFormatError, match=r'answer "Ada Lovelace" has no answer_start; .* \(fix_offsets=True finds it there\)'):
        load_squad(path)


def test_an_empty_list_of_starts_beside_no_texts_is_a_question_without_an_answer(tmp_path):
    path = write_jsonl(tmp_path / "mine.jsonl", [row("q1", [], []), row("q2", ["1843"], [44])])
    for fix_offsets in (False, True):
        data = load_squad(path, fix_offsets=fix_offsets)
        assert [example.answers for example in data.examples] == [(), (((44, 48),),)] and data.found_offsets == []
