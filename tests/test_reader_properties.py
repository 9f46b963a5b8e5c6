"""Properties of the data readers, over generated questions written in every form ``load_squad`` reads: valid
questions read back as the same examples in each form; one bad field of one question is refused in one line
naming the file and the question (never another exception), and under ``skip_invalid`` only that question is
left out, counted."""

import copy
import csv
import gzip
import io
import json
import re

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from bio_mrc.data.squad import load_squad
from bio_mrc.errors import BioMrcError, DataFormatError
from bio_mrc.types import Example

from .conftest import property_examples

pandas = pytest.importorskip("pandas")
pyarrow_parquet = pytest.importorskip("pyarrow.parquet")

# Fixed seed and no example database: every run tries the same examples.
PROPERTY = settings(
    max_examples=property_examples(25), deadline=None, derandomize=True, database=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                           HealthCheck.function_scoped_fixture],
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
)
COLUMNS = ["id", "title", "context", "question", "answers"]

# Letters, and the characters a writer must quote or escape: delimiters, quotes, line breaks of every kind, a
# byte-order mark and a no-break space inside a text, words a reader might take for a missing value. No "q".
_WORD = st.text(alphabet="abcdefXYZé0", min_size=1, max_size=6)
_ODD = st.sampled_from(list(" .,;'\"\t\\{[#") + ["\r\n", "\n", "\r", "\u00a0", "\u2028", "\x85", "\ufeff", "NaN", "null"])
TEXT = st.lists(st.one_of(_WORD, _ODD), min_size=1, max_size=8).map("".join).filter(lambda s: any(c.isalnum() for c in s))


@st.composite
def question(draw, number):
    context = draw(TEXT)
    answers = {"text": [], "answer_start": []}
    for _ in range(draw(st.integers(0, 2))):
        start = draw(st.integers(0, len(context) - 1))
        text = context[start : draw(st.integers(start + 1, len(context)))]
        if any(c.isalnum() for c in text):
            answers["text"].append(text)
            answers["answer_start"].append(start)
    return {"id": f"q{number}-{draw(_WORD)}", "title": draw(st.one_of(st.just(""), _WORD)), "context": context,
            "question": draw(TEXT), "answers": answers}


QUESTIONS = st.integers(1, 4).flatmap(lambda n: st.tuples(*(question(i) for i in range(n))).map(list))


def examples_of(rows, title=None):
    return [Example(row["id"], row["question"], row["context"],
                    tuple(((start, start + len(text)),) for text, start in zip(row["answers"]["text"], row["answers"]["answer_start"])),
                    row["title"] if title is None else title) for row in rows]


def as_official(folder, rows):
    articles = []
    for row in rows:
        qa = {key: value for key, value in row.items() if key not in ("title", "context")}
        answers = qa.get("answers")
        texts, starts = (answers.get("text"), answers.get("answer_start")) if isinstance(answers, dict) else (None, None)
        if isinstance(texts, list) and isinstance(starts, list) and len(texts) == len(starts):  # else as the columns
            qa["is_impossible"] = not answers["text"]
            qa["answers"] = [{"text": text, "answer_start": start} for text, start in zip(answers["text"], answers["answer_start"])]
        articles.append({**({"title": row["title"]} if "title" in row else {}), "paragraphs": [{"context": row.get("context"), "qas": [qa]}]})
    path = folder / "dev.json"
    path.write_text(json.dumps({"version": "v2.0", "data": articles}), encoding="utf-8")
    return path


def as_jsonl(folder, rows, compressed=False):
    """CRLF line ends and a byte-order mark when ``compressed``, the raw characters (not escapes) otherwise."""
    end, bom = ("\r\n", "\ufeff") if compressed else ("\n", "")
    text = bom + "".join(json.dumps(row, ensure_ascii=compressed) + end for row in rows)
    path = folder / ("dev.jsonl.gz" if compressed else "dev.jsonl")
    path.write_bytes(gzip.compress(text.encode("utf-8")) if compressed else text.encode("utf-8"))
    return path


def as_delimited(folder, rows, delimiter, compressed=False):
    """Every cell quoted, or (when ``compressed``) only those that need it, with CRLF line ends and a byte-order mark."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\r\n" if compressed else "\n",
                        quoting=csv.QUOTE_MINIMAL if compressed else csv.QUOTE_ALL)
    writer.writerow(COLUMNS)
    writer.writerows([row.get(c, "") if c != "answers" else json.dumps(row["answers"], ensure_ascii=False) for c in COLUMNS]
                     for row in rows)
    data = (("\ufeff" if compressed else "") + buffer.getvalue()).encode("utf-8")
    path = folder / f"dev.{'tsv' if delimiter == chr(9) else 'csv'}{'.gz' if compressed else ''}"
    path.write_bytes(gzip.compress(data) if compressed else data)
    return path


def as_parquet(folder, rows):
    """``answers`` as Arrow structs, or as JSON text in a string column where one type cannot hold them all (Arrow
    would make every start a float for one NaN)."""
    import pyarrow

    def struct(answers):
        return isinstance(answers, dict) and set(answers) == {"text", "answer_start"} and all(
            type(start) is int and abs(start) < 2**63 for start in answers["answer_start"]) and all(
            type(text) is str for text in answers["text"])

    if not all(struct(row["answers"]) for row in rows):
        rows = [{**row, "answers": json.dumps(row["answers"])} for row in rows]
    table = pyarrow.Table.from_pylist(rows)
    pyarrow_parquet.write_table(table, folder / "dev.parquet")
    return folder / "dev.parquet"


def as_mrqa(folder, rows):
    lines = [{"header": {"dataset": "Fuzz", "split": "dev"}}]
    for row in rows:
        answers = row["answers"]
        detected = [{"text": text, "char_spans": [[start, start + len(text) - 1]]} for text, start in zip(answers["text"], answers["answer_start"])]
        lines.append({"context": row["context"], "qas": [{"qid": row["id"], "question": row["question"], "detected_answers": detected}]})
    path = folder / "dev.mrqa.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


# Forms that hold any JSON value in a field; the tables (every cell text) are tried with the mutations a cell can hold.
JSON_FORMS = {
    "squad": as_official,
    "jsonl": as_jsonl,
    "jsonl.gz": lambda folder, rows: as_jsonl(folder, rows, compressed=True),
    "records": lambda folder, rows: rows,
}
TABLE_FORMS = {
    "csv": lambda folder, rows: as_delimited(folder, rows, ","),
    "tsv.gz": lambda folder, rows: as_delimited(folder, rows, "\t", compressed=True),
    "parquet": as_parquet,
    "dataframe": lambda folder, rows: pandas.DataFrame(rows),
}


def written(form, folder, rows):
    folder.mkdir()
    return {**JSON_FORMS, **TABLE_FORMS, "mrqa": as_mrqa}[form](folder, copy.deepcopy(rows))


@settings(PROPERTY, max_examples=property_examples(60))
@given(rows=QUESTIONS)
def test_valid_questions_read_back_alike_in_every_json_form(tmp_path_factory, rows):
    for form in (*JSON_FORMS, "dataframe", "mrqa"):
        data = load_squad(written(form, tmp_path_factory.mktemp(form) / "d", rows))
        assert data.examples == examples_of(rows, "Fuzz" if form == "mrqa" else None), form


@pytest.mark.slow
@PROPERTY
@given(rows=QUESTIONS)
def test_valid_questions_read_back_alike_in_every_table_file(tmp_path_factory, rows):
    for form in ("csv", "tsv.gz", "parquet"):
        data = load_squad(written(form, tmp_path_factory.mktemp(form) / "d", rows))
        assert data.examples == examples_of(rows), form


_MISSING = object()
# (field, bad value): each makes the question invalid in every form that can hold it.
ANY_FORM = [
    *((field, value) for field in ("context", "question") for value in ("", "   ", "\u200b")),
    ("id", "   "), ("id", "\u200b"), ("id", "duplicate"),
    *(("answer_start", value) for value in (-1, "past the context", 10**30, "elsewhere")),
    *(("answer_text", value) for value in ("  ", "\u00a0", "qqq")),
    *(("answers", value) for value in ({"text": ["a"]}, {"text": ["a", "b"], "answer_start": [0]}, [], "x", 5)),
]
# NaN in a JSON file makes the file, or its line, no JSON: refused whole, naming the line. In a table it is one question's.
TABLE_ONLY = [("answer_start", float("nan")), ("answer_start", float("inf"))]
JSON_ONLY = [
    *((field, value) for field in ("context", "question") for value in (_MISSING, None, 7, ["x"], [["x"]], {"a": 1})),
    *(("id", value) for value in (7, 10**30, True, ["x"], [["x"]], {"a": 1})),
    ("title", 7), ("title", ["x"]), ("title", [["x"]]),
    *(("answer_start", value) for value in (1.0, "0", None, True, [0], _MISSING)),
    *(("answer_text", value) for value in ("", 5, None, ["a"], _MISSING)),
]


def mutated(rows, index, field, value):
    """``rows`` with the ``index``-th question's ``field`` set to ``value`` (its first answer's, for an answer's field)."""
    rows = copy.deepcopy(rows)
    row = rows[index]
    if field == "id" and value == "duplicate":
        row["id"] = rows[index - 1]["id"]
    elif field in ("answer_start", "answer_text"):
        answers, context = row["answers"], row["context"]
        if not answers["text"]:
            answers["text"], answers["answer_start"] = [context], [0]
        key = "text" if field == "answer_text" else "answer_start"
        if value == "elsewhere":  # the context after a run of "q", which no text holds: the start points into the run
            row["context"] = "q" * (len(context) + 1) + " " + context
        elif value is _MISSING:
            del answers[key]
        else:
            answers[key][0] = len(context) + 3 if value == "past the context" else value
    elif value is _MISSING:
        del row[field]
    else:
        row[field] = value
    return rows


_NAMES_QUESTION = re.compile(r"record '|, line \d+|, row \d+")


def assert_refused_naming_it(source, path, rows):
    with pytest.raises(BioMrcError) as refused:
        load_squad(source)
    message = str(refused.value)
    assert isinstance(refused.value, DataFormatError) and "\n" not in message, message
    assert (path is None or str(path) in message) and _NAMES_QUESTION.search(message), message
    kept = load_squad(source, skip_invalid=True)
    assert (len(kept.examples), len(kept.skipped)) == (len(rows) - 1, 1)


@st.composite
def one_bad_question(draw, mutations):
    rows = draw(QUESTIONS)
    field, value = draw(st.sampled_from(mutations))
    if value == "duplicate" and len(rows) == 1:
        rows = [*rows, {**rows[0], "id": "q9-z"}]
    index = draw(st.integers(1 if value == "duplicate" else 0, len(rows) - 1))
    return mutated(rows, index, field, value)


# An id no string names, under an article without a title: the official file's error named no question.
UNTITLED = {"title": "", "context": "Paris is nice.", "question": "Where?", "answers": {"text": ["Paris"], "answer_start": [0]}}


@settings(PROPERTY, max_examples=property_examples(100))
@given(case=one_bad_question(ANY_FORM + JSON_ONLY))
@example(case=[{**UNTITLED, "id": "q0-a"}, {**UNTITLED, "id": 7}])
@example(case=[{**UNTITLED, "id": "   "}])
def test_one_bad_field_of_one_question_is_refused_naming_it_in_every_json_form(tmp_path_factory, case):
    rows = case
    for form in JSON_FORMS:
        source = written(form, tmp_path_factory.mktemp(form) / "d", rows)
        assert_refused_naming_it(source, None if form == "records" else source, rows)


@pytest.mark.slow
@PROPERTY
@given(case=one_bad_question(ANY_FORM + TABLE_ONLY))
def test_one_bad_field_of_one_question_is_refused_naming_it_in_every_table(tmp_path_factory, case):
    rows = case
    for form in TABLE_FORMS:
        source = written(form, tmp_path_factory.mktemp(form) / "d", rows)
        assert_refused_naming_it(source, None if form == "dataframe" else source, rows)


def test_an_official_question_without_a_usable_id_in_an_untitled_article_is_named_by_its_place(tmp_path):
    """An id of spaces (or a number) under an article with no title was refused naming the file alone: in a file of
    thousands of questions, no way to find it. Now its article, paragraph and question are named."""
    good = {"id": "a", "question": "Where?", "answers": [{"text": "Paris", "answer_start": 0}]}
    for bad_id in ("   ", 7):
        articles = [{"title": "", "paragraphs": [{"context": "Paris is nice.", "qas": [good, {**good, "id": bad_id}]}]}]
        path = tmp_path / "dev.json"
        path.write_text(json.dumps({"data": articles}), encoding="utf-8")
        with pytest.raises(DataFormatError, match=r"\(in .*dev\.json, record 'article #1, paragraph 0, question 1'\)$"):
            load_squad(path)


@pytest.mark.parametrize("header", ["\ufeffid", "\u200bid", "answers\u200b"])
def test_a_known_column_behind_an_invisible_character_is_refused_not_ignored(tmp_path, header):
    """A second byte-order mark (a file saved with one twice) or a zero-width space made 'id' an unknown column,
    silently ignored: every id replaced by a generated one, or every answer lost. Now refused as a column spelt
    otherwise is."""
    meant = header.strip("\ufeff\u200b")
    columns = {"id": "q1", "context": "Paris is the capital of France.", "question": "Capital?",
               "answers": '{"text": ["France"], "answer_start": [24]}'}
    path = tmp_path / "dev.csv"
    path.write_bytes(("\ufeff" + ",".join(header if c == meant else c for c in columns) + "\n"
                      + ",".join(json.dumps(v) if c == "answers" else v for c, v in columns.items()) + "\n").encode("utf-8"))
    with pytest.raises(DataFormatError, match=f'names the column {re.escape(json.dumps(header))}, which is not "{meant}" as spelt'):
        load_squad(path)


@pytest.mark.parametrize("entry", [None, 5, "x", ["a"]])
def test_an_mrqa_question_that_is_no_object_is_refused_as_such(tmp_path, entry):
    """A 'qas' entry that is not an object was read as an empty question: "empty or missing question". Now it says
    what it is and which entry of the line."""
    line = {"context": "Paris is nice.", "qas": [{"qid": "a", "question": "Where?"}, entry]}
    path = tmp_path / "dev.jsonl"
    path.write_text(json.dumps({"header": {"dataset": "D"}}) + "\n" + json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"^'qas' entry 2 is .*, not a question object .*line 2\)$"):
        load_squad(path)
    kept = load_squad(path, skip_invalid=True)
    assert [example.id for example in kept.examples] == ["a"] and len(kept.skipped) == 1


def test_a_multispanqa_id_of_spaces_is_refused_as_in_every_other_layout(tmp_path):
    """MultiSpanQA alone took an id of spaces, which a prediction file then keyed its answer by."""
    record = {"id": "   ", "question": ["who", "?"], "context": ["Dave", "sang"], "label": ["B", "O"]}
    path = tmp_path / "multispan.json"
    path.write_text(json.dumps({"data": [record]}), encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"^empty or missing id; .*record 'record #1'\)$"):
        load_squad(path)
