"""Multi-span question sets in the layouts they are published in: DROP's own JSON and Quoref's JSON are read with each
question's spans the parts of one answer and scored with MultiSpanQA's metrics; other sets' layouts that cannot be
read as meant (DROP's Hugging Face columns, NewsQA's CSV, BioASQ's JSON) are refused in one line saying what to give.
Every sample below is made up, in the published layout."""

import json

import pyarrow
import pyarrow.parquet
import pytest

from bio_mrc.cli import main
from bio_mrc.data.squad import load_squad, stream_squad
from bio_mrc.data.drop import NumericAnswersWarning
from bio_mrc.errors import DataFormatError, InputWarning
from bio_mrc.harness.comparison_splits import resolve_split
from bio_mrc.harness.config import DataSpec

NO_DATE = {"day": "", "month": "", "year": ""}
NFL_1 = "Robbie Gould kicked a field goal. Later Matt Forte ran in."
NFL_2 = "Gouldsby and Gould scored."


def drop_answer(spans=(), number=""):
    return {"number": number, "date": NO_DATE, "spans": list(spans)}


def write_drop(tmp_path, extra=()) -> str:
    """DROP's layout: passages by id, each with its qa_pairs; a number answer among them."""
    drop = {
        "nfl_1": {"passage": NFL_1, "qa_pairs": [
            {"question": "Who scored?", "answer": drop_answer(["Matt Forte", "Robbie Gould"]), "query_id": "d1",
             "validated_answers": [drop_answer(["Robbie Gould"])]},
            {"question": "How many scores?", "answer": drop_answer(number="2"), "query_id": "d2", "validated_answers": []},
            *extra], "wiki_url": "https://example.org/nfl_1"},
        "nfl_2": {"passage": NFL_2, "qa_pairs": [
            {"question": "Who scored?", "answer": drop_answer(["Gould"]), "query_id": "d4", "validated_answers": []}],
            "wiki_url": "https://example.org/nfl_2"},
    }
    path = tmp_path / "drop_dataset_dev.json"
    path.write_text(json.dumps(drop, indent=2), encoding="utf-8")
    return str(path)


def write_quoref(tmp_path) -> str:
    """Quoref's layout: SQuAD JSON whose paragraphs have a context_id and whose listed answers are one answer's parts."""
    quoref = {"data": [{"title": "A Story", "url": "https://example.org/story", "paragraphs": [
        {"context": "Ada and Bob met Carol in Paris.", "context_id": "c1", "qas": [
            {"question": "Who met Carol?", "id": "q1", "answers": [{"text": "Bob", "answer_start": 8}, {"text": "Ada", "answer_start": 0}]},
            {"question": "Where?", "id": "q2", "answers": [{"text": "Paris", "answer_start": 25}]}]}]}]}
    path = tmp_path / "quoref-dev-v0.1.json"
    path.write_text(json.dumps(quoref), encoding="utf-8")
    return str(path)


def test_drop_span_questions_are_one_answer_of_parts_and_number_answers_are_left_out_in_a_warning(tmp_path):
    with pytest.warns(NumericAnswersWarning, match=r"^left out 1 question of 3 in .*: their answers are numbers or dates"):
        data = load_squad(write_drop(tmp_path))
    assert data.format == "drop" and data.version == "1.1"
    assert [(ex.id, ex.title, ex.context, ex.answers) for ex in data.examples] == [
        ("d1", "nfl_1", NFL_1, (((0, 12), (40, 50)),)),  # one answer, its parts in context order; validated_answers unread
        ("d4", "nfl_2", NFL_2, (((13, 18),),)),  # the whole word, not the start of Gouldsby
    ]
    assert data.examples[0].answer_texts() == [["Robbie Gould", "Matt Forte"]]
    with pytest.warns(NumericAnswersWarning, match=r"^left out 1 question of 3 in "):
        assert [ex.answers for ex in stream_squad(data.source)] == [ex.answers for ex in data.examples]


def test_a_drop_file_of_number_answers_alone_is_empty_with_the_warning_from_python_too(tmp_path, capsys):
    """``load_squad`` of a DROP file whose questions are all answered by numbers or dates returned an empty list without a
    word (the count was a log line, which a Python caller's logging may drop); it is empty, as any format's file of no
    questions is from Python, with an ``InputWarning`` saying how many were left out; the command line prints it as its
    ``warning:`` line before refusing the empty read."""
    drop = {"nfl_1": {"passage": NFL_1, "qa_pairs": [
        {"question": "How many scores?", "answer": drop_answer(number="2"), "query_id": "d1"},
        {"question": "When?", "answer": {"number": "", "date": {"day": "1", "month": "May", "year": "2001"}, "spans": []},
         "query_id": "d2"}]}}
    path = tmp_path / "drop_dataset_dev.json"
    path.write_text(json.dumps(drop), encoding="utf-8")
    with pytest.warns(InputWarning) as caught:
        data = load_squad(str(path))
    assert data.examples == [] and data.format == "drop"
    assert [(type(w.message), str(w.message)) for w in caught] == [(NumericAnswersWarning, (
        f"left out 2 questions of 2 in {path}: their answers are numbers or dates, not spans of the passage"))]
    assert main(["predict", "--model", str(tmp_path / "model"), "--data", str(path), "--output", str(tmp_path / "p.json")]) == 2
    assert capsys.readouterr().err == (f"warning: left out 2 questions of 2 in {path}: their answers are numbers or dates, "
                                       f"not spans of the passage\nerror: no questions to use in {path}\n")


def test_a_drop_number_answer_of_zero_written_as_a_json_number_is_a_number_answer(tmp_path):
    """`"number": 0` was read as no number: `the answer holds no spans, number or date`, where "0" was left out."""
    path = write_drop(tmp_path, [{"question": "How many misses?", "answer": drop_answer(number=0), "query_id": "d3"}])
    with pytest.warns(NumericAnswersWarning, match=r"^left out 2 questions of 4 in "):
        assert [ex.id for ex in load_squad(path).examples] == ["d1", "d4"]


@pytest.mark.filterwarnings("ignore::bio_mrc.data.drop.NumericAnswersWarning")  # its number answer
def test_a_drop_span_the_passage_lacks_is_refused_naming_it_or_skipped(tmp_path):
    path = write_drop(tmp_path, [{"question": "Who?", "answer": drop_answer(["the Bears"]), "query_id": "d3"}])
    with pytest.raises(DataFormatError) as refused:
        load_squad(path)
    message = str(refused.value)
    assert 'answer span "the Bears" is not in the passage' in message and "read as drop" in message
    assert "d3" in message and "passage nfl_1" in message and "drop_dataset_dev.json" in message
    skipped = load_squad(path, skip_invalid=True)
    assert [ex.id for ex in skipped.examples] == ["d1", "d4"] and len(skipped.skipped) == 1


@pytest.mark.filterwarnings("ignore::bio_mrc.data.drop.NumericAnswersWarning")  # its number answer
@pytest.mark.parametrize("span", ["", " \u200b"])
def test_a_drop_span_of_no_text_is_refused_as_one(tmp_path, span):
    """An empty span was found at the passage's start and refused as an answer needing an integer 'answer_start',
    a key DROP's layout has not."""
    path = write_drop(tmp_path, [{"question": "Who?", "answer": drop_answer(["Robbie Gould", span]), "query_id": "d3"}])
    with pytest.raises(DataFormatError) as refused:
        load_squad(path)
    message = str(refused.value)
    assert message.startswith(f"answer span 2 ({json.dumps(span)}) holds no readable text; read as drop")
    assert "answer_start" not in message and "record 'd3'" in message and "passage nfl_1" in message


def test_quoref_json_reads_its_listed_answers_as_one_answers_parts(tmp_path):
    data = load_squad(write_quoref(tmp_path))
    assert data.format == "quoref"
    assert [(ex.id, ex.answers) for ex in data.examples] == [("q1", (((0, 3), (8, 11)),)), ("q2", (((25, 30),),))]
    assert [ex.answers for ex in stream_squad(data.source)] == [ex.answers for ex in data.examples]
    plain = json.loads((tmp_path / "quoref-dev-v0.1.json").read_text())
    del plain["data"][0]["paragraphs"][0]["context_id"]  # SQuAD's layout: listed answers stay alternatives
    (tmp_path / "squad.json").write_text(json.dumps(plain), encoding="utf-8")
    assert load_squad(str(tmp_path / "squad.json")).examples[0].answers == (((8, 11),), ((0, 3),))  # as listed


FLU = "Flu spreads fast. Rest helps. Drink water often. See a doctor."


def write_mashqa(tmp_path, ranges=((18, 11), (49, 13))) -> str:
    """MASH-QA's layout: SQuAD 2.0 JSON whose answers list their sentences as answer_starts [[start, length], ...] and
    whose text joins them; an unanswerable question among them."""
    mash = {"version": "2.0", "data": [{"title": "flu", "paragraphs": [{
        "context": FLU, "sent_starts": [[0, 17], [18, 11], [30, 18], [49, 13]], "qas": [
            {"id": "m1", "question": "How is flu treated?", "is_impossible": False,
             "answers": [{"text": "Rest helps. See a doctor.", "answer_start": 18, "answer_starts": [list(r) for r in ranges]}]},
            {"id": "m2", "question": "Who found flu?", "is_impossible": True, "answers": []}]}]}]}
    path = tmp_path / "val_webmd_squad_v2_full.json"
    path.write_text(json.dumps(mash), encoding="utf-8")
    return str(path)


def test_mashqa_answers_are_their_sentences_as_one_answers_parts(tmp_path, capsys):
    """Hand-computed: gold m1 {rest helps, see a doctor}, m2 {} (unanswerable); predicted m1 {rest helps}, m2 {}:
    2 right of 2 predicted and 3 gold, EM P 100, R 66.67, F1 80."""
    data = load_squad(write_mashqa(tmp_path))
    assert data.format == "mash-qa" and data.is_v2
    assert [(ex.id, ex.answers) for ex in data.examples] == [("m1", (((18, 29), (49, 62)),)), ("m2", ())]
    assert data.examples[0].answer_texts() == [["Rest helps.", "See a doctor."]]
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({"m1": ["Rest helps."], "m2": []}), encoding="utf-8")
    assert main(["evaluate", "--data", data.source, "--predictions", str(preds)]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert (scores["em_precision"], scores["em_recall"], scores["em_f1"]) == pytest.approx((100.0, 200 / 3, 80.0))
    with pytest.raises(DataFormatError, match=r"range \[49, 14\] is not inside the context \(62 characters\).*'m1'"):
        load_squad(write_mashqa(tmp_path, ranges=((18, 11), (49, 14))))


def test_a_mashqa_file_opening_with_an_unanswerable_question_is_read_as_mashqa(tmp_path):
    """The first question has no answers, so it cannot tell the layout: the first answer does (read as SQuAD, m1's
    joined text is no span of the context, and the file was refused)."""
    path = write_mashqa(tmp_path)
    with open(path, encoding="utf-8") as handle:
        mash = json.load(handle)
    mash["data"][0]["paragraphs"][0]["qas"].reverse()
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(mash, handle)
    data = load_squad(path)
    assert data.format == "mash-qa" and [(ex.id, ex.answers) for ex in data.examples] == [("m2", ()), ("m1", (((18, 29), (49, 62)),))]


def test_drop_and_quoref_files_are_scored_with_multispanqa_metrics_as_read(tmp_path, capsys):
    """Hand-computed. DROP: gold d1 {robbie gould, matt forte}, d4 {gould}; predicted d1 {robbie gould, later}, d4
    {gould}: 2 right of 3 predicted and 3 gold, EM P = R = F1 = 66.67. Quoref: every part given, EM 100."""
    preds = tmp_path / "drop-preds.json"
    preds.write_text(json.dumps({"d1": ["Robbie Gould", "Later"], "d4": ["Gould"]}), encoding="utf-8")
    assert main(["evaluate", "--data", write_drop(tmp_path), "--predictions", str(preds)]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert scores["em_precision"] == scores["em_recall"] == scores["em_f1"] == pytest.approx(200 / 3)
    preds.write_text(json.dumps({"q1": ["Ada", "Bob"], "q2": ["Paris"]}), encoding="utf-8")
    assert main(["evaluate", "--data", write_quoref(tmp_path), "--predictions", str(preds)]) == 0
    assert json.loads(capsys.readouterr().out)["em_f1"] == 100.0
    assert main(["evaluate", "--data", write_quoref(tmp_path), "--format", "squad", "--predictions", str(preds)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("give --format quoref") and len(err.splitlines()) == 1


@pytest.mark.filterwarnings("ignore::bio_mrc.data.drop.NumericAnswersWarning")  # its number answer
def test_a_comparison_and_the_cli_take_drop_as_published(tiny_encoder_dir, tmp_path, capsys):
    path = write_drop(tmp_path)
    split = resolve_split(DataSpec(path=path), tmp_path)
    assert split.task == "drop" and split.gold == {"d1": ["Robbie Gould", "Matt Forte"], "d4": ["Gould"]}
    assert resolve_split(DataSpec(path=write_quoref(tmp_path)), tmp_path).task == "quoref"
    model, preds = tmp_path / "model", tmp_path / "preds.json"
    window = ["--max-seq-length", "32", "--doc-stride", "8", "--max-query-length", "8"]
    assert main(["train", "--train", path, "--output-dir", str(model), "--encoder", str(tiny_encoder_dir), "--epochs", "1",
                 *window]) == 0
    assert json.loads(capsys.readouterr().out)["questions"] == 2
    assert main(["predict", "--model", str(model), "--data", path, "--multi-span", "--output", str(preds)]) == 0
    answers = json.loads(preds.read_text())
    assert set(answers) == {"d1", "d4"} and all(isinstance(spans, list) for spans in answers.values())
    capsys.readouterr()
    assert main(["evaluate", "--data", path, "--format", "drop", "--predictions", str(preds)]) == 0
    assert {"em_f1", "pm_f1"} <= set(json.loads(capsys.readouterr().out))


def test_a_format_that_insists_on_drop_refuses_another_layout(tmp_path):
    with pytest.raises(DataFormatError, match=r"detected quoref \(.*\), expected drop \(DROP JSON"):
        load_squad(write_quoref(tmp_path), data_format="drop")


def foreign_files(tmp_path) -> dict[str, str]:
    drop_row = {"section_id": "nfl_1", "query_id": "d1", "passage": NFL_1, "question": "Who scored?",
                "answers_spans": {"spans": ["Robbie Gould", "Matt Forte"], "types": ["span", "span"]}}
    (tmp_path / "drop.jsonl").write_text(json.dumps(drop_row) + "\n", encoding="utf-8")
    pyarrow.parquet.write_table(pyarrow.Table.from_pylist([drop_row]), tmp_path / "drop.parquet")
    (tmp_path / "newsqa.csv").write_text("story_id,story_text,question,answer_token_ranges\n"
                                         "./cnn/stories/a.story,Ada met Bob.,Who met?,\"0:1,2:3\"\n", encoding="utf-8")
    bioasq = {"questions": [{"body": "Which genes?", "id": "b1", "type": "list", "exact_answer": [["BRCA1"], ["TP53"]],
                             "snippets": [{"text": "BRCA1 and TP53 are genes.", "document": "http://example.org/1",
                                           "offsetInBeginSection": 0, "offsetInEndSection": 25}]}]}
    (tmp_path / "bioasq.json").write_text(json.dumps(bioasq), encoding="utf-8")
    return {"drop.jsonl": "give DROP's own drop_dataset_dev.json", "drop.parquet": "give DROP's own drop_dataset_dev.json",
            "newsqa.csv": "give MRQA's NewsQA file", "bioasq.json": "give --format answer-parts"}


def test_other_published_layouts_are_refused_in_one_line_saying_what_to_give(tmp_path, capsys):
    for name, remedy in foreign_files(tmp_path).items():
        assert main(["evaluate", "--data", str(tmp_path / name), "--predictions", str(tmp_path / "p.json")]) == 2, name
        err = capsys.readouterr().err.strip()
        assert remedy in err and name in err and len(err.splitlines()) == 1, err
