"""Questions and contexts as data tools hold them: a tuple, a numpy array of strings, a pandas Series or Index, any
sequence, an iterator read once. Each is answered as its list is, by ``AnswerExtractor`` and the pipeline; a string
stays one question, and an item that is no string is refused naming its place."""

from collections.abc import Sequence

import numpy as np
import pytest

from bio_mrc.errors import DataFormatError, a_type
from bio_mrc.inference import AnswerExtractor

QUESTIONS = ["Who formulated the laws of motion?", "What did Newton formulate?"]
CONTEXTS = ["Isaac Newton formulated the laws of motion.", "Newton formulated the laws of motion in 1687."]


class Column(Sequence):
    """A minimal sequence of its own, as another library's column type is."""

    def __init__(self, items):
        self.items = list(items)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        return self.items[index]


def _shapes(pandas: bool):
    shapes = {"tuple": tuple, "Sequence": Column, "str array": np.array, "object array": lambda items: np.array(items, dtype=object),
              "generator": lambda items: (item for item in items), "iterator": iter}
    if pandas:
        pd = pytest.importorskip("pandas")
        shapes.update({"Series": lambda items: pd.Series(items, index=[10, 3]), "Index": pd.Index,
                       "string Series": lambda items: pd.Series(items, dtype="string")})
    return shapes


SHAPES = ["tuple", "Sequence", "str array", "object array", "generator", "iterator", "Series", "Index", "string Series"]


@pytest.fixture(scope="module")
def extractor(trained_dir):
    return AnswerExtractor.from_pretrained(trained_dir, decoding="span", precision="fp32", device="cpu")


@pytest.mark.parametrize("shape", SHAPES)
def test_a_sequence_of_questions_is_answered_as_its_list(extractor, shape):
    """A Series was refused ("got a Series"), a numpy array too ("got a ndarray")."""
    make = _shapes(pandas=shape in ("Series", "Index", "string Series"))[shape]
    expected = extractor(QUESTIONS, CONTEXTS)
    assert extractor(make(QUESTIONS), make(CONTEXTS)) == expected
    assert extractor(make(QUESTIONS), CONTEXTS[0]) == extractor(QUESTIONS, CONTEXTS[0])  # one context for them all
    assert extractor(QUESTIONS[0], make(CONTEXTS)).to_dict() == extractor(QUESTIONS[0], CONTEXTS).to_dict()  # documents


@pytest.mark.parametrize("shape", ["str array", "generator", "Series"])
def test_the_pipeline_answers_a_sequence_as_its_list(trained_dir, shape):
    from transformers import pipeline

    make = _shapes(pandas=shape == "Series")[shape]
    qa = pipeline("bio-mrc-qa", model=str(trained_dir), device="cpu", precision="fp32")
    assert qa(question=make(QUESTIONS), context=make(CONTEXTS)) == qa(question=QUESTIONS, context=CONTEXTS)


def test_the_items_are_plain_strings_and_a_string_stays_one_text():
    from bio_mrc.inference.text_inputs import text_input

    assert text_input(np.array(["ab", "c"])) == ["ab", "c"]
    assert [type(item) for item in text_input(np.array([np.str_("ab")], dtype=object))] == [str]
    assert text_input("Who?") == "Who?" and text_input(b"Who?") == b"Who?"
    matrix = np.array([["a", "b"]])
    assert text_input(matrix) is matrix and text_input({"a"}) == {"a"} and text_input({"q": "a"}) == {"q": "a"}


def test_an_item_that_is_no_string_is_refused_naming_its_place(extractor):
    with pytest.raises(DataFormatError, match=r"^empty or missing question \(got an int\) \(record 'input 1'\)$"):
        extractor(np.array(["Who?", 5], dtype=object), "Newton.")
    with pytest.raises(DataFormatError, match=r"^the context is bytes, not text .*\(record 'input 0'\)$"):
        extractor(("Who?",), (b"Newton.",))
    unordered = r"which has no order to answer in: give a list \(sorted\(\.\.\.\), or list\(\.\.\.\) in the order wanted\)$"
    with pytest.raises(DataFormatError, match=r"^the question is a string or a list of strings; got a set, " + unordered):
        extractor({"Who?"}, "Newton.")
    with pytest.raises(DataFormatError, match=r"^the context is a string or a list of strings; got a dict_keys, " + unordered):
        extractor("Who?", {"Newton.": 1, "Leibniz.": 2}.keys())
    with pytest.raises(DataFormatError, match=r"^the context is a string or a list of strings; got a dict, " + unordered):
        extractor("Who?", {"Newton.": 1})
    with pytest.raises(DataFormatError, match=r"^the question is a string or a list of strings; got an ndarray$"):
        extractor(np.array([["Who?"]]), "Newton.")


def test_a_type_names_its_article_by_sound():
    """"a ndarray", "a UUID" as "an UUID" would be: the article went by the first letter alone."""
    import uuid

    assert [a_type(value) for value in (np.zeros(1), 5, object(), "x", frozenset(), uuid.uuid4(), {}, np.uint8(3))] == [
        "an ndarray", "an int", "an object", "a str", "a frozenset", "a UUID", "a dict", "a uint8"]


def _open_files(tmp_path):
    """An open text file and an open binary file of two questions, one a line."""
    path = tmp_path / "questions.txt"
    path.write_text("\n".join(QUESTIONS) + "\n", encoding="utf-8")
    return {"text": lambda: open(path, encoding="utf-8"), "binary": lambda: open(path, "rb")}


@pytest.mark.parametrize("kind", ["text", "binary"])
def test_an_open_file_is_refused_with_a_hint(extractor, tmp_path, kind):
    """A file was read as an iterator: each line, its newline kept, was a question."""
    import io

    opened = _open_files(tmp_path)[kind]
    refusal = r"^the {} is an open file \(an? \w+\), whose lines, newlines and all, would each be read as one: give its " \
              r"text \(f.read\(\)\), or its lines as a list \(f.read\(\).splitlines\(\)\)$"
    with opened() as questions, pytest.raises(DataFormatError, match=refusal.format("question")):
        extractor(questions, CONTEXTS[0])
    with opened() as contexts, pytest.raises(DataFormatError, match=refusal.format("context")):
        extractor(QUESTIONS, contexts)
    with opened() as documents, pytest.raises(DataFormatError, match=refusal.format("context")):
        extractor(QUESTIONS[0], documents)  # one question over the lines as documents
    with opened() as documents, pytest.raises(DataFormatError, match=refusal.format("list of documents")):
        extractor.answer_documents(QUESTIONS[0], documents)
    with pytest.raises(DataFormatError, match=refusal.format("question")):
        extractor(io.StringIO("\n".join(QUESTIONS)), CONTEXTS[0])


def test_the_pipeline_refuses_an_open_file(trained_dir, tmp_path):
    from transformers import pipeline

    qa = pipeline("bio-mrc-qa", model=str(trained_dir), device="cpu", precision="fp32")
    with _open_files(tmp_path)["text"]() as questions, pytest.raises(DataFormatError, match=r"^the question is an open file"):
        qa(question=questions, context=CONTEXTS[0])


def test_a_batch_is_typed_as_what_is_answered_as_its_list(extractor):
    """The batch overloads said ``Sequence[str]``, so a type checker refused a Series, an array or an iterator that
    the call answers; a str stays one question (its overload comes first) and a set stays refused."""
    from typing import get_args, get_origin, get_overloads, get_type_hints

    pd = pytest.importorskip("pandas")
    first, documents, batch = (get_type_hints(o) for o in get_overloads(AnswerExtractor.__call__))
    assert first["question"] is str and first["context"] is str

    def typed(hint, value) -> bool:
        return any(isinstance(value, get_origin(member) or member) for member in get_args(hint))

    for value in (pd.Series(QUESTIONS), pd.Index(QUESTIONS), np.array(QUESTIONS), iter(QUESTIONS), (q for q in QUESTIONS),
                  Column(QUESTIONS), tuple(QUESTIONS), QUESTIONS):
        assert typed(batch["question"], value) and typed(batch["context"], value) and typed(documents["context"], value)
    assert not typed(batch["question"], {"Who?"}) and not typed(batch["question"], 5)
