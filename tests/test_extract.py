"""AnswerExtractor and the span head's n-best multi-span baseline."""

import dataclasses
import math

import pytest

from bio_mrc.errors import DataFormatError
from bio_mrc.decoding.nbest_spans import nbest_multi_span
from bio_mrc.inference import AnswerExtractor
from bio_mrc.types import AnswerSpan, Prediction



def test_nbest_multi_span_keeps_probable_non_overlapping_spans():
    # scores 2, 2, 1.9, -5: e^2 = 7.389, e^1.9 = 6.686, e^-5 = 0.0067, sum 21.471 -> (0.3441, 0.3441, 0.3114, 0.0003)
    spans = [AnswerSpan("x y", 0, 3, 2.0), AnswerSpan("y", 2, 3, 2.0), AnswerSpan("c", 4, 5, 1.9), AnswerSpan("d", 6, 7, -5.0)]
    (out,) = nbest_multi_span([Prediction("q", spans)], min_probability=0.1)
    assert [s.text for s in out.spans] == ["x y", "c"]  # "y" overlaps "x y"; "d" is improbable
    assert out.spans[0].score == pytest.approx(7.389 / 21.471, abs=1e-3)
    (empty,) = nbest_multi_span([Prediction("q", [])])
    assert empty.spans == []


def test_the_mentions_of_one_text_are_one_nbest_answer():
    # shares .35, .3, .25, .1: "Tom" twice (.3 + .25 = .55) is one answer, likelier than "Mary", the best single span
    spans = [AnswerSpan("Mary", 0, 4, math.log(0.35)), AnswerSpan("Tom", 9, 12, math.log(0.3)), AnswerSpan("tom.", 20, 24, math.log(0.25)),
             AnswerSpan("Ann", 30, 33, math.log(0.1))]
    (out,) = nbest_multi_span([Prediction("q", spans)], min_probability=0.2)
    assert [(s.text, s.start) for s in out.spans] == [("Mary", 0), ("Tom", 9)]  # the single answer first; each text once
    assert [s.probability for s in out.spans] == pytest.approx([0.35, 0.55])
    (alone,) = nbest_multi_span([Prediction("q", spans)], min_probability=0.6)
    assert [s.text for s in alone.spans] == ["Mary"]
    spans.append(AnswerSpan("Zoe", 40, 43, math.log(0.3)))  # shares now .27, .23, .19, .08, .23 ("Tom" .42)
    (ordered,) = nbest_multi_span([Prediction("q", spans)], min_probability=0.05)
    assert [s.text for s in ordered.spans] == ["Mary", "Tom", "Zoe", "Ann"]  # after the first, by their answers' probability


def test_a_small_n_best_limits_the_candidates_not_the_shares():
    # shares .35, .3, .25, .1 of four spans: with n_best 2 the candidates are the first two spans' answers, "Mary" and
    # "Tom", each with its share of all four ("Tom" .3 + .25 = .55 with its third-ranked mention), not of two (.54, .46)
    spans = [AnswerSpan("Mary", 0, 4, math.log(0.35)), AnswerSpan("Tom", 9, 12, math.log(0.3)), AnswerSpan("tom.", 20, 24, math.log(0.25)),
             AnswerSpan("Ann", 30, 33, math.log(0.1))]
    (two,) = nbest_multi_span([Prediction("q", spans)], min_probability=0.0, n_best=2)
    assert [(s.text, s.start) for s in two.spans] == [("Mary", 0), ("Tom", 9)]  # "Ann", the fourth, is no candidate
    assert [s.probability for s in two.spans] == pytest.approx([0.35, 0.55])
    (one,) = nbest_multi_span([Prediction("q", spans)], min_probability=0.0, n_best=1)
    assert [(s.text, s.probability) for s in one.spans] == [("Mary", pytest.approx(0.35))]



def test_the_call_overloads_type_what_the_call_takes_and_returns():
    """A type checker reads the overloads: each names every option of the call (a misspelt one is an error there
    too), and one question over a tuple (or a Series, or an iterator) of documents is RankedAnswers, as it is at run time."""
    import inspect
    from collections.abc import Sequence
    from typing import get_args, get_origin, get_overloads, get_type_hints

    from bio_mrc.inference.text_inputs import TextBatch
    from bio_mrc.types import RankedAnswers

    options = list(inspect.signature(AnswerExtractor.__call__).parameters)
    overloads = get_overloads(AnswerExtractor.__call__)
    assert [list(inspect.signature(o).parameters) for o in overloads] == [options] * 3
    documents = get_type_hints(overloads[1])
    assert documents["return"] is RankedAnswers and documents["context"] == TextBatch
    # a document may go unnamed (None) among named ones, as the call takes it: Sequence[str] refused [None, "b"]
    for hints in (documents, get_type_hints(AnswerExtractor.answer_documents)):
        sequence, none = get_args(hints["names"])
        assert none is type(None) and get_origin(sequence) is Sequence and get_args(sequence) == (str | None,)

def test_extractor_single_and_batched(trained_dir):  # noqa: F811
    extractor = AnswerExtractor.from_pretrained(trained_dir)
    context = "Isaac Newton formulated the laws of motion and universal gravitation in 1687."
    one = extractor("Who formulated the laws of motion?", context)
    assert len(one.spans) == 1
    span = one.spans[0]
    assert context[span.start: span.end] == span.text == one.answer
    many = extractor(["Who formulated the laws of motion?", "When were the laws published?"], context)
    assert len(many) == 2 and many[0].answer == one.answer


NORMANS = " ".join(["The Normans were famed for their martial spirit."] * 8)  # several 48-token windows
CHUNKED_QUESTIONS = [("Who formulated the laws of motion?", "Isaac Newton formulated the laws of motion in 1687."),
                     ("What were the Normans famed for?", NORMANS), ("When were the laws published?", "They were published in 1687."),
                     ("Who were famed?", NORMANS), ("What did Newton formulate?", "Isaac Newton formulated the laws of motion."),
                     ("Where is Normandy?", "Normandy is a region in the north of France."), ("Who?", "Ada Lovelace wrote it.")]


def windows_asked(monkeypatch, trained) -> list[int]:
    """The number of questions of each call of ``trained.windows`` from now on."""
    asked, windows = [], trained.windows
    monkeypatch.setattr(trained, "windows", lambda examples, **options: asked.append(len(examples)) or windows(examples, **options))
    return asked


def floats_apart(value) -> tuple:
    """Answers (dataclasses, dicts, lists) with each float taken out, and those floats in order."""
    floats = []

    def walk(item):
        if dataclasses.is_dataclass(item):
            return walk(dataclasses.asdict(item))
        if isinstance(item, dict):
            return {key: walk(part) for key, part in item.items()}
        if isinstance(item, (list, tuple)):
            return [walk(part) for part in item]
        if isinstance(item, float):
            floats.append(item)
            return float
        return item

    return walk(value), floats


def assert_same_answers(got, expected, **tolerance) -> None:
    """The same spans, offsets and decisions; scores to float32 rounding, as a window's logits move in their last
    bits with the windows padded and batched beside it (``tolerance``: :func:`pytest.approx`'s ``rel`` and ``abs``,
    by default a hundred-thousandth of the score or a millionth)."""
    (shape, scores), (expected_shape, expected_scores) = floats_apart(got), floats_apart(expected)
    assert shape == expected_shape
    assert scores == pytest.approx(expected_scores, **(tolerance or {"rel": 1e-5, "abs": 1e-6}))


@pytest.mark.parametrize("decoding", ["span", "bio", "joint"])
def test_a_list_of_questions_is_answered_a_chunk_at_a_time_as_in_one(trained_dir, monkeypatch, decoding):  # noqa: F811
    extractor = AnswerExtractor.from_pretrained(trained_dir, precision="fp32", device="cpu", decoding=decoding)
    questions, contexts = map(list, zip(*CHUNKED_QUESTIONS))
    whole = {multi_span: extractor(questions, contexts, multi_span=multi_span) for multi_span in (False, True)}
    asked = windows_asked(monkeypatch, extractor.trained)
    monkeypatch.setattr(extractor, "chunk_size", 3)
    for multi_span in (False, True):
        assert_same_answers(extractor(questions, contexts, multi_span=multi_span), whole[multi_span])
    assert asked == [3, 3, 1, 3, 3, 1]  # 7 questions: two chunks of 3, then 1, each call


def test_the_model_and_the_extractor_say_what_they_are_in_one_line(trained_dir):  # noqa: F811
    extractor = AnswerExtractor.from_pretrained(trained_dir, device="cpu", decoding="bio", multi_span=True, batch_size=8)
    model = f"{str(trained_dir)!r}, backend='torch', decodings=['span', 'bio', 'joint'], device='cpu', precision='auto'"
    assert repr(extractor.trained) == f"TrainedModel({model})"
    assert repr(extractor) == f"AnswerExtractor({model}, decoding='bio', multi_span=True, batch_size=8)"


def test_extractor_takes_a_model_folder_as_from_pretrained_does(trained_dir):  # noqa: F811
    """``AnswerExtractor("folder")`` loads the folder as ``from_pretrained`` does; anything else is refused by name."""
    from pathlib import Path

    context = "Isaac Newton formulated the laws of motion and universal gravitation in 1687."
    question = "Who formulated the laws of motion?"
    expected = AnswerExtractor.from_pretrained(trained_dir)(question, context).spans
    assert AnswerExtractor(str(trained_dir))(question, context).spans == expected
    first = AnswerExtractor(Path(trained_dir), multi_span=True)(question, context).spans[0]
    assert (first.text, first.start, first.end) == (expected[0].text, expected[0].start, expected[0].end)
    with pytest.raises(TypeError, match="a TrainedModel, a model folder or a hub id, got int"):
        AnswerExtractor(42)


def test_from_pretrained_refuses_a_misspelt_keyword_and_a_missing_head_before_the_weights_load(trained_dir, monkeypatch):  # noqa: F811
    """Both loaded the whole model first (seconds for a real one), then the constructor refused them."""
    from bio_mrc.errors import ConfigError
    from bio_mrc.inference import TrainedModel
    from bio_mrc.model import BioMrcForQuestionAnswering

    def loaded(*args, **kwargs):
        raise AssertionError("the weights were loaded")

    monkeypatch.setattr(BioMrcForQuestionAnswering, "from_pretrained", loaded)
    with pytest.raises(TypeError, match="unexpected keyword argument 'multispan'"):
        AnswerExtractor.from_pretrained(trained_dir, multispan=True)
    with pytest.raises(ConfigError, match='decoding must be one of .*got "crf"'):
        AnswerExtractor.from_pretrained(trained_dir, decoding="crf")
    monkeypatch.setattr(TrainedModel, "load", loaded)
    with pytest.raises(TypeError, match="unexpected keyword argument 'topk'"):
        AnswerExtractor.from_pretrained(trained_dir, decoding="span", topk=3)

@pytest.mark.parametrize("decoding", ["bio", "span", "joint"])
def test_extractor_multi_span_on_a_long_context(trained_dir, decoding):  # noqa: F811
    # Longer than one window (48 tokens): stride windows are merged back into character offsets.
    context = " ".join(["The Normans were famed for their martial spirit."] * 8)
    extractor = AnswerExtractor.from_pretrained(trained_dir, multi_span=True, decoding=decoding)
    result = extractor("What were the Normans famed for?", context, require_answer=True)
    assert result.spans
    for span in result.spans:
        assert context[span.start: span.end] == span.text
    starts = sorted((s.start, s.end) for s in result.spans)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(starts, starts[1:]))  # no overlaps


def test_inputs_become_examples_in_one_place():
    # AnswerExtractor and the bio-mrc-qa pipeline both go through this function.
    from bio_mrc.inference.extract import question_context_examples
    from bio_mrc.registry import resolve_decoding

    examples, single = question_context_examples(["a?", "b?"], "shared context")
    assert not single and [(e.id, e.question, e.context) for e in examples] == [("0", "a?", "shared context"), ("1", "b?", "shared context")]
    assert question_context_examples("a?", "c")[1]
    assert question_context_examples([], "shared context") == ([], False)  # an empty batch: no answers, as with []
    assert resolve_decoding(["span", "bio", "joint"], "auto") == "joint"
    assert resolve_decoding(["span"], "auto") == "span"


def test_predict_keeps_the_n_best_and_takes_per_call_settings(trained_dir):  # noqa: F811
    extractor = AnswerExtractor.from_pretrained(trained_dir, decoding="span")
    examples, _ = extractor.examples("Who formulated the laws of motion?", "Isaac Newton formulated the laws of motion.")
    outputs = extractor.trained.windows(examples)
    (nbest,) = extractor.predict(outputs, examples, n_best=5)
    (short,) = extractor.predict(outputs, examples, n_best=5, max_answer_length=1)
    assert len(nbest.spans) == 5 and nbest.spans[0] == extractor(examples[0].question, examples[0].context).spans[0]
    assert len(short.spans) == 5 and all(" " not in s.text for s in short.spans)


def test_predict_refuses_examples_other_than_those_the_windows_were_cut_from(trained_dir):  # noqa: F811
    from bio_mrc.types import Example

    extractor = AnswerExtractor.from_pretrained(trained_dir, decoding="span")
    examples, _ = extractor.examples("Who formulated the laws?", "Isaac Newton formulated the laws of motion.")  # 43 characters
    outputs = extractor.trained.windows(examples)
    other = Example("7", "Who?", "Newton.", None)
    # an extra example got no answer and an infinite no-answer score; a shorter context an IndexError in the decoding
    with pytest.raises(DataFormatError, match=r"this question has no window in the outputs: .* \(record '7'\)"):
        extractor.predict(outputs, [*examples, other])
    with pytest.raises(DataFormatError, match=r"windows ending at character 43, past its context's 7: .*\(record '7'\)"):
        extractor.predict(outputs, [other])
    with pytest.raises(DataFormatError, match=r"windows of question 0 \(numbered from 0\), but 0 examples were given"):
        extractor.predict(outputs, [])


def test_a_window_of_no_example_is_named_by_its_own_number():
    """Windows numbered -1 and 0 of one example: the window out of range is -1 (the largest number, 0, was named)."""
    import numpy as np

    from bio_mrc.decoding.window_outputs import WindowOutputs, check_examples_of
    from bio_mrc.types import Example

    offsets = np.array([[[0, 3]], [[0, 3]]])
    outputs = WindowOutputs(np.array([-1, 0]), offsets, np.ones((2, 1), dtype=bool))
    with pytest.raises(DataFormatError, match=r"windows of question -1 \(numbered from 0\), but 1 example was given"):
        check_examples_of(outputs, [Example("q", "Who?", "Ada.", None)])


def test_extractor_rejects_bad_input(trained_dir):  # noqa: F811
    extractor = AnswerExtractor.from_pretrained(trained_dir)
    with pytest.raises(ValueError, match="empty or missing context \\(record 'input 0'\\)"):
        extractor("Who?", "   ")
    with pytest.raises(DataFormatError, match="the question is bytes, not text"):
        extractor(b"Who?", "Newton.")
    with pytest.raises(DataFormatError, match="the question is a string or a list of strings; got an int"):
        extractor(5, "Newton.")
    with pytest.raises(DataFormatError, match="the context holds U\\+D800.*\\(record 'input 1'\\)"):
        extractor(["Who?", "Who?"], ["Newton.", "New\ud800ton."])
    with pytest.raises(ValueError, match="2 questions but 3 contexts"):
        extractor(["a?", "b?"], ["x", "y", "z"])
    with pytest.raises(ValueError, match="decoding must be one of"):
        AnswerExtractor(extractor.trained, decoding="crf")("Who?", "Newton.")


def test_extract_command_prints_spans_with_offsets(trained_dir, tmp_path, capsys):  # noqa: F811
    import json

    from bio_mrc.cli import main

    context = "Isaac Newton formulated the laws of motion and universal gravitation in 1687."
    context_file = tmp_path / "context.txt"
    context_file.write_text(context, encoding="utf-8")
    capsys.readouterr()
    assert main(["extract", "--model", str(trained_dir), "--question", "Who formulated the laws of motion?",
                 "--context-file", str(context_file), "--multi-span", "--decoding", "joint"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["spans"] and result["no_answer_score"] is not None
    for span in result["spans"]:
        assert context[span["start"]: span["end"]] == span["text"]


def test_extract_names_its_answer_as_predict_names_the_question_alone_in_a_file(trained_dir, tmp_path, capsys):  # noqa: F811
    import hashlib
    import json

    from bio_mrc.cli import main

    question, context = "Who formulated the laws of motion?", "Isaac Newton formulated the laws of motion in 1687."
    capsys.readouterr()
    assert main(["extract", "--model", str(trained_dir), "--question", question, "--context", context]) == 0
    result = json.loads(capsys.readouterr().out)
    digest = hashlib.sha256(f"{question}\n{context}".encode("utf-8")).hexdigest()[:8]
    assert result["id"] == f"q1-{digest}"  # was "0", the extractor's position of its one input
    data = tmp_path / "ask.jsonl"
    data.write_text(json.dumps({"question": question, "context": context}) + "\n", encoding="utf-8")
    assert main(["predict", "--model", str(trained_dir), "--data", str(data), "--output", str(tmp_path / "preds.json")]) == 0
    line = json.loads((tmp_path / "preds.answers.jsonl").read_text(encoding="utf-8"))
    assert (line["id"], line["answer"], line["decoding"]) == (result["id"], result["answer"], "joint")
    assert AnswerExtractor(str(trained_dir))(question, context).id == "0"  # the Python call numbers its inputs as before


FOREIGN = [
    ("Wer war das?", "Das Buch wurde von Johann Wolfgang von Goethe geschrieben."),
    ("מי כתב את הספר?", "את הספר כתב חיים נחמן ביאליק בשנת 1908."),
    ("谁写了这本书？", "这本书是鲁迅在一九二一年写的。"),
]


@pytest.mark.parametrize("decoding", ["auto", "bio", "span", "joint"])
def test_multi_span_answers_plain_questions_on_short_foreign_contexts(trained_dir, decoding):  # noqa: F811
    # The caller's DecodeConfig decides: with the default (require_answer=True) every question gets a span,
    # even where the most probable tag sequence is all O; "no answer" is a threshold's decision.
    extractor = AnswerExtractor.from_pretrained(trained_dir, multi_span=True, decoding=decoding)
    results = extractor([q for q, _ in FOREIGN], [c for _, c in FOREIGN])
    assert len(results) == len(FOREIGN)
    for (_question, context), result in zip(FOREIGN, results):
        assert result.spans and not result.abstain
        assert all(context[s.start: s.end] == s.text for s in result.spans)


def test_the_extractors_decode_config_is_not_overridden(trained_dir):  # noqa: F811
    from bio_mrc.decoding.postprocess import DecodeConfig

    question, context = FOREIGN[0]
    allowed_empty = AnswerExtractor.from_pretrained(
        trained_dir, multi_span=True, decoding="bio", decode_config=DecodeConfig(require_answer=False)
    )
    required = allowed_empty(question, context, require_answer=True)  # a per-call option still wins over both
    assert required.spans
    free = allowed_empty(question, context)
    assert all(s.score >= 0 for s in free.spans)  # only spans the tags prefer to all-O


def test_library_calls_are_quiet(trained_dir, capfd):  # noqa: F811
    capfd.readouterr()
    extractor = AnswerExtractor.from_pretrained(trained_dir)
    extractor("Who formulated the laws of motion?", "Isaac Newton formulated the laws of motion.")
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""


def test_a_threshold_saved_for_another_no_answer_score_is_not_applied(trained_dir):  # noqa: F811
    extractor = AnswerExtractor.from_pretrained(trained_dir, decoding="bio")
    question, context = "Who formulated the laws of motion?", "Isaac Newton formulated the laws of motion."
    # "bio" is where versions before the tag log-likelihood ratio saved their (mean-score) BIO threshold
    extractor.trained.model.config.no_answer_thresholds = {"bio": -1e9}
    assert not extractor(question, context).abstain
    extractor.trained.model.config.no_answer_thresholds = {"bio/ratio": -1e9}
    assert extractor(question, context).abstain


def test_extract_prints_an_answers_8_bit_terminal_controls_escaped(trained_dir, capsys):  # noqa: F811
    import json

    from bio_mrc.cli import main

    context = "Is\u009baac New\u009bton for\u009bmulated the la\u009bws of mo\u009btion."  # every word holds U+009B (CSI)
    capsys.readouterr()
    assert main(["extract", "--model", str(trained_dir), "--question", "Who formulated the laws?", "--context", context,
                 "--decoding", "span"]) == 0
    out = capsys.readouterr().out
    result = json.loads(out)
    assert "\u009b" in result["answer"] and context[result["spans"][0]["start"]:result["spans"][0]["end"]] == result["spans"][0]["text"]
    assert "\\u009b" in out and not any("\x7f" <= ch <= "\x9f" for ch in out)  # before: U+009B itself reached the terminal


@pytest.mark.parametrize("decoding", ["span", "bio", "joint"])
def test_a_small_n_best_keeps_the_answers_confidence(trained_dir, decoding):  # noqa: F811
    from bio_mrc.decoding.postprocess import DecodeConfig

    question, context = "Who formulated the laws?", "Isaac Newton formulated the laws of motion and universal gravitation in 1687."
    full = AnswerExtractor.from_pretrained(trained_dir)(question, context, decoding=decoding, top_k=20)
    best = full.spans[0].score
    share = 1.0 / sum(math.exp(span.score - best) for span in full.spans)  # the best span's share of the 20 best
    assert len(full.spans) > 1 and share < 1.0
    for n_best in (1, 2):
        small = AnswerExtractor.from_pretrained(trained_dir, decode_config=DecodeConfig(n_best=n_best))
        one = small(question, context, decoding=decoding)
        assert one.confidence == pytest.approx(share)  # it was 1.0 with n_best 1: the share of a list of one
        examples, _ = small.examples(question, context)
        (kept,) = small.predict(small.trained.windows(examples), examples, decoding=decoding)
        assert kept.spans == full.spans[:n_best] and kept.confidence == pytest.approx(share)


@pytest.mark.parametrize("decoding", ["span", "joint"])
def test_a_small_n_best_keeps_a_multi_span_answers_confidence_and_shares(trained_dir, decoding):  # noqa: F811
    from bio_mrc.answer_text import normalize_answer
    from bio_mrc.decoding.postprocess import DecodeConfig

    question, context = "Who formulated the laws?", "Isaac Newton formulated the laws of motion and universal gravitation in 1687."
    full = AnswerExtractor.from_pretrained(trained_dir)(question, context, decoding=decoding, top_k=20)
    weights = [math.exp(span.score - full.spans[0].score) for span in full.spans]
    first = normalize_answer(full.spans[0].text)
    share = sum(w for w, span in zip(weights, full.spans) if normalize_answer(span.text) == first) / sum(weights)
    assert len(full.spans) > 1 and share < 1.0
    wide = AnswerExtractor.from_pretrained(trained_dir)(question, context, decoding=decoding, multi_span=True)
    small = AnswerExtractor.from_pretrained(trained_dir, decode_config=DecodeConfig(n_best=1))
    one = small(question, context, decoding=decoding, multi_span=True)
    assert one.confidence == pytest.approx(1.0 / sum(weights)) and one.confidence == wide.confidence  # it was 1.0
    assert one.probability == wide.probability
    assert [(s.start, s.end) for s in one.spans] == [(full.spans[0].start, full.spans[0].end)]  # still one candidate
    assert one.spans[0].probability == pytest.approx(share)  # its answer's share of the 20 best, not of one (1.0)
