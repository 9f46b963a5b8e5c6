"""What an application does with answers: every result of ``AnswerExtractor`` (one question, a batch, several spans,
one question over several documents, an abstention) is a dataclass of plain Python values that ``to_dict()`` writes as
strict JSON (no NaN, no numpy or torch scalar), that pickles, deep-copies and compares equal to itself, and whose
``repr`` names no context, and the bio-mrc-qa pipeline's dicts hold the same plain values; a question record's ``repr``
stays short however long its context; an extractor stopped by Ctrl+C in the middle of a batch answers the next call as
a fresh one."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import pickle

import numpy as np
import pytest

from bio_mrc.data.squad import SquadFile, load_squad
from bio_mrc.inference import AnswerExtractor
from bio_mrc.types import AnswerSpan, DocumentAnswer, Example, Prediction, RankedAnswers

from .conftest import SAMPLE_V1, untrained_model_folder

CONTEXT = "It was written by Jane in 1813, and read by many. The Normans came from Denmark, Iceland and Norway."
OTHER = "Jane was here."
PLAIN = (int, float, str, bool, type(None))


@pytest.fixture(scope="module")
def tuned_dir(tiny_encoder_dir, tmp_path_factory):
    """An untrained joint model with a no-answer threshold and a calibrator for each decoding, so answers carry a
    probability and some abstain (the BIO threshold 0 fires on any positive no-answer score)."""
    folder = untrained_model_folder(
        tiny_encoder_dir, tmp_path_factory.mktemp("values") / "model", heads="span+bio", max_seq_length=48, doc_stride=16, max_query_length=12
    )
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    thresholds = {"span": 50.0, "bio": 0.0, "joint": 50.0}
    config["no_answer_thresholds"] = {"span": 50.0, "bio/ratio": 0.0, "joint": 50.0}
    config["calibration"] = {
        name: {"method": "beta", "a": 1.2, "b": 0.3, "c": -0.5, "correct_if": "f1 > 0.5", "no_answer_threshold": threshold}
        for name, threshold in thresholds.items()
    }
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def extractor(tuned_dir):
    return AnswerExtractor.from_pretrained(tuned_dir, precision="fp32")


def plain_values(value, path="result"):
    """Every leaf of ``value`` (dataclasses, lists, dicts) that is not a plain finite Python value, by its path."""
    if dataclasses.is_dataclass(value):
        return [odd for f in dataclasses.fields(value) for odd in plain_values(getattr(value, f.name), f"{path}.{f.name}")]
    if isinstance(value, (list, tuple)):
        return [odd for k, item in enumerate(value) for odd in plain_values(item, f"{path}[{k}]")]
    if isinstance(value, dict):
        return [odd for key, item in value.items() for odd in plain_values(item, f"{path}[{key!r}]")]
    if type(value) not in PLAIN or (isinstance(value, float) and not math.isfinite(value)):
        return [f"{path}: {type(value).__name__} {value!r}"]
    return []


CALLS = {
    "one question": lambda ex, decoding: ex("Who wrote it?", CONTEXT, decoding=decoding),
    "its three best spans": lambda ex, decoding: ex("Who wrote it?", CONTEXT, decoding=decoding, top_k=3),
    "several spans": lambda ex, decoding: ex("Which countries?", CONTEXT, decoding=decoding, multi_span=True),
    "several spans, none required": lambda ex, decoding: ex("Which countries?", CONTEXT, decoding=decoding, multi_span=True, require_answer=False),
    "a batch": lambda ex, decoding: ex(["Who wrote it?", "When?"], [CONTEXT, OTHER], decoding=decoding),
    "several documents": lambda ex, decoding: ex("Who wrote it?", [CONTEXT, OTHER], decoding=decoding, top_k=3, names=["a", None]),
    "several documents, several spans": lambda ex, decoding: ex("Who?", [CONTEXT, OTHER], decoding=decoding, multi_span=True),
}


@pytest.mark.parametrize("decoding", ["span", "bio", "joint"])
@pytest.mark.parametrize("call", list(CALLS))
def test_every_result_is_plain_json_that_pickles_copies_and_compares(extractor, call, decoding):
    result = CALLS[call](extractor, decoding)
    results = result if isinstance(result, list) else [result]
    assert results and all(type(r) in (Prediction, RankedAnswers) for r in results)
    for one in results:
        assert plain_values(one) == []  # offsets int, scores and probabilities float, never NaN or infinity
        as_json = json.loads(json.dumps(one.to_dict(), allow_nan=False))
        assert as_json == one.to_dict()  # JSON's own types already: nothing changes on the way through
        assert json.loads(json.dumps(dataclasses.asdict(one), allow_nan=False)) == json.loads(json.dumps(dataclasses.asdict(one)))
        assert pickle.loads(pickle.dumps(one)) == one and copy.deepcopy(one) == one


def test_a_result_shows_its_spans_not_its_context(extractor):
    long = " ".join([CONTEXT] * 100)  # 10,000 characters over many windows
    for result in (extractor("Who wrote it?", long), extractor("Who wrote it?", [long, OTHER], top_k=2), extractor("Which countries?", long, multi_span=True)):
        assert len(repr(result)) < 6_000 and CONTEXT + " " + CONTEXT not in repr(result)


def test_an_abstention_and_a_probability_are_values_too(extractor):
    """The BIO decoding's threshold fires, so its answer abstains; every decoding has a calibrator, so a probability."""
    abstained = extractor("Who wrote it?", CONTEXT, decoding="bio")
    assert abstained.abstain and abstained.answer == "" and isinstance(abstained.probability, float)
    assert abstained.to_dict()["abstain"] is True and 0.0 <= abstained.to_dict()["probability"] <= 1.0
    ranked = extractor("Who wrote it?", [CONTEXT, OTHER], decoding="bio", top_k=2)
    assert ranked.answer == "" and all(answer.abstain for answer in ranked.answers)
    answered = extractor("Who wrote it?", CONTEXT, decoding="joint")
    assert not answered.abstain and type(answered.probability) is float and type(answered.spans[0].start) is int


def test_the_to_dict_of_each_result_type_by_hand():
    span = AnswerSpan("Jane", 18, 22, 1.5, probability=0.25)
    prediction = Prediction("q1", [span], no_answer_score=-2.0, confidence=0.5, probability=0.75)
    assert prediction.to_dict() == {
        "id": "q1",
        "answer": "Jane",
        "abstain": False,
        "no_answer_score": -2.0,
        "confidence": 0.5,
        "probability": 0.75,
        "spans": [{"text": "Jane", "start": 18, "end": 22, "score": 1.5, "probability": 0.25}],
    }
    ranked = RankedAnswers("Who?", [DocumentAnswer("Jane", 0, 4, 3.0, 1, "b.txt", 4.0)], [Prediction("0"), prediction], ["a.txt", "b.txt"])
    assert ranked.to_dict() == {
        "question": "Who?",
        "answer": "Jane",
        "answers": [
            {"text": "Jane", "start": 0, "end": 4, "score": 3.0, "document": 1, "name": "b.txt", "span_score": 4.0, "abstain": False, "probability": None}
        ],
        "documents": [
            {"document": 0, "name": "a.txt", "abstain": False, "no_answer_score": None, "confidence": None, "probability": None},
            {"document": 1, "name": "b.txt", "abstain": False, "no_answer_score": -2.0, "confidence": 0.5, "probability": 0.75},
        ],
    }
    assert pickle.loads(pickle.dumps(ranked)) == ranked and copy.deepcopy(ranked) == ranked


def test_a_question_record_shows_the_start_of_a_long_text():
    context = "The Normans came from Normandy. " * 40_000  # 1.28 million characters
    example = Example("q1", "Where did the Normans come from?", context, (((22, 30),),))
    shown = repr(example)
    assert len(shown) < 400
    assert shown.startswith("Example(id='q1', question='Where did the Normans come from?', context='The Normans came from Normandy.")
    assert "… (1,280,000 characters)" in shown and shown.endswith("answers=(((22, 30),),), title='')")
    short = Example("q2", "Who?", "Jane.", None)
    assert repr(short) == "Example(id='q2', question='Who?', context='Jane.', answers=None, title='')"  # as the dataclass wrote it
    assert pickle.loads(pickle.dumps(example)) == example


def test_a_loaded_file_shows_its_size_not_its_questions():
    data = load_squad(SAMPLE_V1)
    shown = repr(data)
    assert shown == f"SquadFile({str(SAMPLE_V1)!r}, {len(data.examples)} questions, version='1.1', format='squad')"
    assert data.examples[0].context not in shown
    assert pickle.loads(pickle.dumps(data)).examples == data.examples
    one = SquadFile([data.examples[0]], "1.1", "one.json", "squad")
    assert repr(one) == "SquadFile('one.json', 1 question, version='1.1', format='squad')"  # not "1 questions"


class _Unshowable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    def __len__(self) -> int:
        raise RuntimeError("no length")


@pytest.mark.parametrize(
    "fields, shown",
    [
        ((None, "1.1"), "SquadFile('', None, version='1.1', format='')"),  # examples not a list: shown as they are
        (([], None, None, None), "SquadFile(None, 0 questions, version=None, format=None)"),
        (
            ([], "2.0", "d.json", "squad", None, 3, np.array([1, 2])),
            "SquadFile('d.json', 0 questions, version='2.0', format='squad', skipped=None, fixed_offsets=3, found_offsets=2)",
        ),
        ((_Unshowable(), _Unshowable()), "SquadFile('', <_Unshowable>, version=<_Unshowable>, format='')"),
    ],
)
def test_the_repr_of_a_file_of_any_field_values_never_raises(fields, shown):
    """A SquadFile built by hand, its examples None (declared a list), or a field whose repr or length raises: its repr
    raised a TypeError, as a debugger or a log line shows one."""
    assert repr(SquadFile(*fields)) == shown


def test_the_repr_of_a_half_made_file_never_raises():
    """As a debugger shows an object its constructor has not filled yet: the fields of no default are missing."""
    assert repr(SquadFile.__new__(SquadFile)) == "SquadFile('', <no examples>, version=<no version>, format='')"


@pytest.mark.parametrize("call", ["a batch", "several documents", "several spans"])
def test_ctrl_c_in_the_middle_of_a_batch_leaves_the_extractor_answering(tuned_dir, call, monkeypatch):
    """As in a notebook: Ctrl+C (a KeyboardInterrupt) lands in the second forward pass of a call; the next call on the
    same extractor answers as an extractor that was never stopped."""
    questions, contexts = ["Who wrote it?", "When?", "Which countries?"] * 4, [CONTEXT, OTHER, CONTEXT] * 4
    asked = {
        "a batch": lambda ex: ex(questions, contexts),
        "several documents": lambda ex: ex("Who wrote it?", contexts, top_k=3),
        "several spans": lambda ex: ex(questions, contexts, multi_span=True),
    }[call]
    stopped = AnswerExtractor.from_pretrained(tuned_dir, precision="fp32", batch_size=2)
    fresh = AnswerExtractor.from_pretrained(tuned_dir, precision="fp32", batch_size=2)
    model = stopped.trained.model
    forward, passes = model.forward, []

    def interrupted(*args, **kwargs):
        passes.append(1)
        if len(passes) == 2:
            raise KeyboardInterrupt
        return forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", interrupted)
    with pytest.raises(KeyboardInterrupt):
        asked(stopped)
    assert len(passes) == 2
    monkeypatch.setattr(model, "forward", forward)
    assert asked(stopped) == asked(fresh)
    assert asked(stopped) == asked(stopped)  # and again


@pytest.mark.parametrize(
    "options",
    [{}, {"top_k": 3}, {"multi_span": True}, {"several": True}, {"several": True, "top_k": 2}, {"several": True, "multi_span": True}],
    ids=["one", "top 3", "several spans", "documents", "documents top 2", "documents several spans"],
)
def test_the_pipeline_gives_plain_json_values(tuned_dir, options):
    """transformers' pipelines answer in dicts: the bio-mrc-qa pipeline's hold plain values too, strict JSON as they are."""
    import bio_mrc  # noqa: F401 (registers the pipeline)
    from transformers import pipeline

    qa = pipeline("bio-mrc-qa", model=str(tuned_dir), device="cpu")
    options = dict(options)
    context = [CONTEXT, OTHER] if options.pop("several", False) else CONTEXT
    out = qa(question="Who wrote it?", context=context, decoding="joint", **options)
    assert out and plain_values(out) == []
    assert json.loads(json.dumps(out, allow_nan=False)) == out
    assert pickle.loads(pickle.dumps(out)) == out
