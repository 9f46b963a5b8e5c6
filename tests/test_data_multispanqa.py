"""MultiSpanQA loader: a hand-written sample, bad input, and the real validation split."""

from __future__ import annotations

import json
import warnings

import pytest

from bio_mrc.cli import main
from bio_mrc.data.json_reader import DataFormatError
from bio_mrc.data.multispanqa import IAfterOWarning, detokenize, label_spans, load_multispanqa, multispan_gold_texts
from bio_mrc.errors import InputWarning
from bio_mrc.metrics.multispan_official import multispan_metrics
from bio_mrc.types import Example

from .conftest import require_data

CONTEXT = ["In", "1981", ",", "Dave", "Stewart", "and", "Barbara", "Gaskin", "sang", "."]
RECORDS = [
    {"id": "r1", "question": ["who", "sang", "?"], "context": CONTEXT,
     "label": ["O", "O", "O", "B", "I", "O", "B", "I", "O", "O"], "num_span": 2, "type": "HUM", "structure": "Conjunction"},
    # spans at both ends of the context and two adjacent spans (B B I)
    {"id": "r2", "question": ["letters"], "context": ["x", "y", "z", "w", "v"], "label": ["B", "B", "I", "O", "B"]},
    {"id": "r3", "question": ["none"], "context": ["no", "answer"], "label": ["O", "O"]},
]


def write(tmp_path, records, name="sample.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"version": 1.0, "data": records}), encoding="utf-8")
    return path


def test_detokenize_offsets_map_back_to_every_word():
    text, offsets = detokenize(CONTEXT)
    assert text == "In 1981 , Dave Stewart and Barbara Gaskin sang ."
    assert [text[s:e] for s, e in offsets] == CONTEXT
    assert offsets[:4] == [(0, 2), (3, 7), (8, 9), (10, 14)]


def test_sample_file(tmp_path):
    examples = load_multispanqa(write(tmp_path, RECORDS))
    assert [ex.id for ex in examples] == ["r1", "r2", "r3"]
    r1, r2, r3 = examples
    assert r1 == Example("r1", "who sang ?", "In 1981 , Dave Stewart and Barbara Gaskin sang .", (((10, 22), (27, 41)),))
    assert r1.answer_texts() == [["Dave Stewart", "Barbara Gaskin"]]
    assert r2.answers == (((0, 1), (2, 5), (8, 9)),)  # one alternative holding every span, in order
    assert r2.answer_texts() == [["x", "y z", "v"]]
    assert r3.answers == () and not r3.is_answerable
    assert multispan_gold_texts(examples) == {"r1": ["Dave Stewart", "Barbara Gaskin"], "r2": ["x", "y z", "v"], "r3": []}


def test_i_after_o_starts_a_span_in_a_warning_from_python_too(tmp_path):
    """Spans starting with an I after an O were counted in a log line, which a Python caller's logging set-up could
    drop; they are counted in an ``InputWarning`` of their own, naming the file and the question."""
    record = {"id": "orphan", "question": ["q"], "context": ["a", "b", "c", "d", "e"], "label": ["I", "O", "I", "I", "B"]}
    path = write(tmp_path, [record])
    with pytest.warns(InputWarning) as caught:
        [example] = load_multispanqa(path)
    assert example.answer_texts() == [["a", "c d", "e"]]
    assert [(type(w.message), str(w.message)) for w in caught] == [(IAfterOWarning, (
        f"2 spans in {path} start with I after O (not IOB2); read as span starts, as the official evaluation reads them, "
        "e.g. in 'orphan'"))]
    assert label_spans(["I", "O", "I", "I", "B"]) == ([(0, 1), (2, 4), (4, 5)], 2)


def test_i_after_o_is_one_warning_line_of_the_command_line(tmp_path, capsys):
    """``evaluate`` on such a file printed the log line bare; it prints one ``warning:`` line, once."""
    records = [{"id": "one", "question": ["q"], "context": ["a", "b"], "label": ["O", "I"]}, *RECORDS]
    path = write(tmp_path, records)
    predictions = tmp_path / "preds.json"
    predictions.write_text(json.dumps({"one": ["b"], "r1": [], "r2": [], "r3": []}), encoding="utf-8")
    assert main(["evaluate", "--data", str(path), "--predictions", str(predictions)]) == 0
    assert capsys.readouterr().err == (f"warning: 1 span in {path} starts with I after O (not IOB2); read as span starts, "
                                       "as the official evaluation reads them, e.g. in 'one'\n")


def test_iob2_input_warns_nothing(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_multispanqa(write(tmp_path, RECORDS))


def broken(**changes):
    record = {"id": "bad-1", "question": ["q"], "context": ["a", "b"], "label": ["B", "O"]}
    record.update(changes)
    return {k: v for k, v in record.items() if v is not None}


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (broken(label=["B", "O", "O"]), "3 tags for 2 words"),
        (broken(label=["B"]), "1 tags for 2 words"),
        (broken(label=["B", "X"]), 'label "X" at word 1 is not one of B, I, O'),
        (broken(label=["b", "O"]), 'label "b" at word 0'),
        (broken(label=["B-PER", "O"]), 'label "B-PER" at word 0'),
        (broken(context=None, question=None), r"missing key\(s\) \['question', 'context'\]"),
        (broken(context="a b"), "'context' must be a list of word strings"),
        (broken(context=[], label=[]), "'context' is empty"),
        (broken(question=[]), "'question' is empty"),
    ],
)
def test_bad_records_name_the_problem_and_the_record(tmp_path, record, message):
    with pytest.raises(DataFormatError, match=message) as err:
        load_multispanqa(write(tmp_path, [RECORDS[0], record]))
    assert "bad-1" in str(err.value) and "sample.json" in str(err.value)
    assert isinstance(err.value, ValueError)


def test_bad_files(tmp_path):
    with pytest.raises(DataFormatError, match="missing key.*'id'"):
        load_multispanqa(write(tmp_path, [{"question": ["q"], "context": ["a"], "label": ["O"]}]))
    with pytest.raises(DataFormatError, match="duplicate question id.*r1"):
        load_multispanqa(write(tmp_path, [RECORDS[0], RECORDS[0]]))
    with pytest.raises(DataFormatError, match="'data' list"):
        (tmp_path / "list.json").write_text("[]")
        load_multispanqa(tmp_path / "list.json")
    with pytest.raises(DataFormatError, match="truncated"):
        (tmp_path / "broken.json").write_text("{")
        load_multispanqa(tmp_path / "broken.json")
    with pytest.raises(DataFormatError, match="file not found"):
        load_multispanqa(tmp_path / "absent.json")


def test_gold_texts_refuse_several_alternatives():
    with pytest.raises(ValueError, match="2 alternative"):
        multispan_gold_texts([Example("s", "q", "ab", (((0, 1),), ((1, 2),)))])


@pytest.mark.real_data
@pytest.mark.slow  # real data
def test_real_validation_split():
    path = require_data("multispanqa/valid.json")
    records = json.loads(path.read_text(encoding="utf-8"))["data"]
    examples = load_multispanqa(path)
    assert len(examples) == len(records) == 653
    for record, example in zip(records, examples):
        assert example.id == record["id"]
        assert example.question == " ".join(record["question"])
        # gold texts rebuilt from the labels on their own: a B and the I's after it
        words, labels = record["context"], record["label"]
        starts = [i for i, tag in enumerate(labels) if tag == "B"]
        expected = []
        for s in starts:
            e = s + 1
            while e < len(labels) and labels[e] == "I":
                e += 1
            expected.append(" ".join(words[s:e]))
        assert len(example.answers) == 1 and len(example.answers[0]) == record["num_span"] >= 2
        assert example.answer_texts() == [expected]
    gold = multispan_gold_texts(examples)
    assert multispan_metrics(gold, gold) == {k: 100.0 for k in
                                             ("em_precision", "em_recall", "em_f1", "pm_precision", "pm_recall", "pm_f1")}


def test_a_question_without_spans_makes_the_file_squad_2(tmp_path):
    """r3 tags no span: an unanswerable question, so the file is SQuAD 2.0 as any other form with one would be. Read
    as 1.1, the evaluation during training (``train --eval``) scored it with the v1.1 scorer, which raised
    ``ValueError: question 'r3' has no gold answer`` with a traceback."""
    from bio_mrc.data.squad import gold_texts, load_squad, stream_squad
    from bio_mrc.metrics.squad_official import squad_metrics

    path = write(tmp_path, RECORDS)
    data, stream = load_squad(path), stream_squad(path)
    assert [example.answers for example in stream] and stream.version == data.version == "2.0"
    assert load_squad(path, limit=2).version == "1.1"  # r1 and r2 both have spans
    scores = squad_metrics(gold_texts(data.examples), {"r1": "Dave Stewart", "r2": "x", "r3": ""}, data.version)
    assert scores["NoAns_exact"] == 100.0 and scores["total"] == 3


def test_a_record_without_labels_is_a_question_to_predict(tmp_path):
    """MultiSpanQA's test file has no ``label``: its questions are to predict, as an unlabelled question of any other form.
    It was read as official SQuAD JSON (``article without a 'paragraphs' list``), so ``predict`` refused it; ``train``,
    ``tune`` and ``evaluate`` refuse it in one line naming the question."""
    from bio_mrc.data.squad import load_squad, stream_squad

    test = {"id": "t1", "question": ["who", "sang", "?"], "context": ["Dave", "and", "Barbara", "sang", "."]}
    path = write(tmp_path, [test, {**test, "id": "t2"}], name="test.json")
    data = load_squad(path, data_format="multispanqa")
    assert [(example.id, example.context, example.answers) for example in data.examples] == [
        ("t1", "Dave and Barbara sang .", None), ("t2", "Dave and Barbara sang .", None)]
    assert data.version == "1.1" and [example.id for example in stream_squad(path)] == ["t1", "t2"]
    for read in (load_squad, lambda *a, **k: list(stream_squad(*a, **k))):
        with pytest.raises(DataFormatError, match=r"bio-mrc train needs labelled questions.*test.json, record 't1'"):
            read(path, needs_gold="bio-mrc train")
    mixed = load_squad(write(tmp_path, [RECORDS[0], test], name="mixed.json"), needs_gold=None)
    assert [example.answers is None for example in mixed.examples] == [False, True]
