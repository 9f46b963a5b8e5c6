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
    with pytest.raises(DataFormatError, match=r"^the question is a string or a list of strings; got a set$"):
        extractor({"Who?"}, "Newton.")
    with pytest.raises(DataFormatError, match=r"^the question is a string or a list of strings; got an ndarray$"):
        extractor(np.array([["Who?"]]), "Newton.")


def test_a_type_names_its_article_by_sound():
    """"a ndarray", "a UUID" as "an UUID" would be: the article went by the first letter alone."""
    import uuid

    assert [a_type(value) for value in (np.zeros(1), 5, object(), "x", frozenset(), uuid.uuid4(), {})] == [
        "an ndarray", "an int", "an object", "a str", "a frozenset", "a UUID", "a dict"]
