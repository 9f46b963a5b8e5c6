"""Careless calls of the public reading and answering calls: refused in one line before any work, or answered right."""

import numpy as np
import pytest

from bio_mrc.data.squad import load_squad, stream_squad
from bio_mrc.errors import ConfigError
from bio_mrc.inference import AnswerExtractor
from bio_mrc.types import Example

from .conftest import untrained_model_folder

QUESTION, CONTEXT = "Who formulated the laws of motion?", "Isaac Newton formulated the laws of motion."
RECORDS = [{"id": "good", "question": QUESTION, "context": CONTEXT}, {"id": "bad", "question": "", "context": CONTEXT}]


@pytest.fixture
def unread(monkeypatch):
    """Reading any data fails the test: what is refused must be refused before it."""
    def forbidden(*_args, **_kwargs):
        raise AssertionError("the data was read")

    monkeypatch.setattr("bio_mrc.data.squad.detect_format", forbidden)


@pytest.mark.parametrize("read", [load_squad, stream_squad])
@pytest.mark.parametrize("option, value", [("skip_invalid", "no"), ("skip_invalid", 1), ("fix_offsets", "false"),
                                           ("fix_offsets", None)])
def test_a_reading_flag_that_is_no_boolean_is_refused_before_reading(unread, read, option, value):
    # skip_invalid="no" was true: the bad question was left out without a word
    with pytest.raises(ConfigError, match=f"^{option} is true or false, got {value!r}$"):
        read(RECORDS, **{option: value})


@pytest.mark.parametrize("read", [load_squad, stream_squad])
@pytest.mark.parametrize("limit", [0, -1, 2.5, True, "3"])
def test_a_limit_that_is_no_count_is_refused_before_reading(unread, read, limit):
    # stream_squad took it and refused at the first question read; load_squad read the source first
    with pytest.raises(ConfigError, match="^limit is a positive number of questions"):
        read(RECORDS, limit=limit)


def test_numpy_bools_are_taken_as_the_reading_flags_they_hold():
    assert [e.id for e in load_squad(RECORDS, skip_invalid=np.True_).examples] == ["good"]
    assert [e.id for e in stream_squad(RECORDS, skip_invalid=np.True_)] == ["good"]
    with pytest.raises(Exception, match="empty or missing question"):
        load_squad(RECORDS, skip_invalid=np.False_)


@pytest.fixture(scope="module")
def extractor(tiny_encoder_dir, tmp_path_factory):
    folder = untrained_model_folder(tiny_encoder_dir, tmp_path_factory.mktemp("model"), max_seq_length=48,
                                    doc_stride=16, max_query_length=12)
    return AnswerExtractor.from_pretrained(folder, precision="fp32", device="cpu")


def test_the_windows_of_no_questions_are_none(extractor):
    # a KeyError ('input_ids') from deep inside the forward pass
    outputs = extractor.trained.windows([])
    assert len(outputs.example_index) == 0
    assert extractor.predict(outputs, []) == []


@pytest.mark.parametrize("examples, words", [
    (["who?"], r"^TrainedModel.windows: examples holds a str, not an Example \(at 0\)"),
    ((e for e in []), r"^TrainedModel.windows: examples is a list of Example .*got a generator"),
    ([Example("q", 5, CONTEXT, None)], r"^the question is a string or a list of strings; got an int|empty or missing question"),
    ([Example("q", QUESTION, "a\ud800", None)], r"the context holds U\+D800"),
    ([Example("q", QUESTION, None, None)], r"empty or missing context"),
])
def test_windows_of_examples_that_are_no_questions_are_refused_in_one_line(extractor, monkeypatch, examples, words):
    monkeypatch.setattr("bio_mrc.inference.loading.predict_windows", lambda *a, **k: pytest.fail("a window was cut"))
    with pytest.raises((TypeError, ValueError), match=words):
        extractor.trained.windows(examples)
