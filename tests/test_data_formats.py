"""The formats of the format table: CSV, TSV, Parquet, a DataFrame, a list of dicts, MRQA shared-task files and
MultiSpanQA's layout each load to the same questions as the official SQuAD JSON they were written from, and a
bad record's error names the file, the record, the format it was read as and what that format expects."""

import csv
import gzip
import json

import pytest

from bio_mrc.cli import main
from bio_mrc.data.formats import FORMATS, detect_format
from bio_mrc.data.multispanqa import load_multispanqa
from bio_mrc.data.squad import load_squad, stream_squad
from bio_mrc.errors import ConfigError, DataFormatError

from .test_data_sources import as_squad_json, hf_rows, squad_json, write_jsonl

datasets = pytest.importorskip("datasets")
pandas = pytest.importorskip("pandas")
pyarrow_parquet = pytest.importorskip("pyarrow.parquet")
COLUMNS = ["id", "title", "context", "question", "answers"]


def write_delimited(path, rows, delimiter):
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter=delimiter)
        writer.writerow(COLUMNS)
        writer.writerows([*(row[c] for c in COLUMNS[:-1]), json.dumps(row["answers"], ensure_ascii=False)] for row in rows)
    return path


def as_csv(tmp_path, rows):
    return write_delimited(tmp_path / "dev.csv", rows, ",")


def as_tsv(tmp_path, rows):
    return write_delimited(tmp_path / "dev.tsv", rows, "\t")


def as_parquet(tmp_path, rows):
    import pyarrow

    pyarrow_parquet.write_table(pyarrow.Table.from_pylist(rows), tmp_path / "dev.parquet")
    return tmp_path / "dev.parquet"


def as_dataframe(tmp_path, rows):
    return pandas.DataFrame(rows)


def as_dataframe_from_parquet(tmp_path, rows):
    return pandas.read_parquet(as_parquet(tmp_path, rows))  # list cells come back as NumPy arrays


def as_list(tmp_path, rows):
    return rows


def as_csv_read_by_datasets(tmp_path, rows):
    """What a user gets from datasets.load_dataset("csv"): answers as a string column."""
    return datasets.load_dataset("csv", data_files=str(as_csv(tmp_path, rows)), split="train", cache_dir=str(tmp_path / "cache"))


TABLES = {"csv": as_csv, "tsv": as_tsv, "parquet": as_parquet, "dataframe": as_dataframe,
          "dataframe-from-parquet": as_dataframe_from_parquet, "records": as_list, "csv-via-datasets": as_csv_read_by_datasets}
DETECTED = {"csv": "csv", "tsv": "tsv", "parquet": "parquet", "dataframe": "dataframe", "dataframe-from-parquet": "dataframe",
            "records": "records", "csv-via-datasets": "datasets"}


@pytest.mark.parametrize("form", TABLES)
def test_tables_round_trip_to_the_official_json_questions(tmp_path, form):
    expected = load_squad(as_squad_json(tmp_path / "reference", squad_json()))
    data = load_squad(TABLES[form](tmp_path, hf_rows(squad_json())))
    assert data.examples == expected.examples and data.version == "2.0" and data.format == DETECTED[form]
    assert data.examples[0].answer_texts() == [["France"], ["capital of France"]] and data.examples[2].answers == ()


def test_a_parquet_file_is_decoded_once(tmp_path, monkeypatch):
    """The batches counted against the size limit were thrown away and the file decoded again by datasets' builder."""
    from bio_mrc.data import tables

    expected = load_squad(as_squad_json(tmp_path / "reference", squad_json())).examples
    path = as_parquet(tmp_path, hf_rows(squad_json()))
    monkeypatch.setattr(tables, "_load", lambda builder, *args, **kwargs: pytest.fail(f"{builder} decoded a second time"))
    assert load_squad(path).examples == expected


def test_csv_cells_stay_text_and_a_bad_answers_cell_names_its_row(tmp_path):
    rows = hf_rows(squad_json())
    rows[0] = {**rows[0], "id": "007"}
    assert load_squad(as_csv(tmp_path, rows)).examples[0].id == "007"  # not the number 7
    (tmp_path / "dev.csv.gz").write_bytes(gzip.compress((tmp_path / "dev.csv").read_bytes()))
    assert load_squad(tmp_path / "dev.csv.gz").examples == load_squad(tmp_path / "dev.csv").examples
    path = tmp_path / "bad.csv"
    path.write_text(as_csv(tmp_path, rows).read_text(encoding="utf-8").replace('{""text"": [""Spain""]', "{text: Spain"),
                    encoding="utf-8")
    with pytest.raises(DataFormatError) as info:
        load_squad(path)
    assert info.value.source == f"{path}, row 1" and info.value.record == "q2"
    assert info.value.problem.startswith("'answers' is text but not JSON")
    assert f"read as csv: {FORMATS['csv'].expects}" in info.value.problem
    without = tmp_path / "without.csv"
    without.write_text("id,question\nq1,Where?\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"the header row \(comma-separated\) lacks the SQuAD columns \['context'\].*read as csv"):
        load_squad(without)


@pytest.mark.parametrize("name", ["dev.tsv.gz", "dev.tab.gz", "DEV.TAB.GZ"])
def test_a_gzipped_tsv_reads_as_tsv_under_either_suffix(tmp_path, name):
    """docs/data.md: .tsv/.tab, gzipped too. A .tab.gz was read as JSON Lines, its header row 'not valid JSON'."""
    plain = as_tsv(tmp_path, hf_rows(squad_json()))
    (tmp_path / name).write_bytes(gzip.compress(plain.read_bytes()))
    data = load_squad(tmp_path / name)
    assert data.format == "tsv" and data.examples == load_squad(plain).examples


def mrqa_lines(raw):
    """The official layout as an MRQA shared-task file: one line per paragraph, inclusive char spans, normalised text."""
    contexts = [
        {"context": paragraph["context"], "qas": [
            {"qid": q["id"], "question": q["question"], "answers": [a["text"] for a in q["answers"]],
             "detected_answers": [{"text": a["text"].lower(), "char_spans": [[a["answer_start"], a["answer_start"] + len(a["text"]) - 1]],
                                   "token_spans": [[0, 0]]} for a in q["answers"]]}
            for q in paragraph["qas"]]}
        for article in raw["data"] for paragraph in article["paragraphs"]
    ]
    return [{"header": {"dataset": "SQuAD", "split": "dev"}}, *contexts]


@pytest.mark.parametrize("name, opener", [("dev.jsonl", open), ("SQuAD.jsonl.gz", gzip.open)])
def test_mrqa_files_round_trip(tmp_path, name, opener):
    expected = load_squad(as_squad_json(tmp_path, squad_json())).examples
    data = load_squad(write_jsonl(tmp_path / name, mrqa_lines(squad_json()), opener))
    assert data.format == "mrqa" and data.version == "2.0" and {ex.title for ex in data.examples} == {"SQuAD"}
    # the text is the context's characters at the span, not the normalised 'text'
    assert [(ex.id, ex.question, ex.context, ex.answers) for ex in data.examples] == [
        (ex.id, ex.question, ex.context, ex.answers) for ex in expected]



def test_mrqa_files_without_the_header_line(tmp_path):
    """The task's sample files start at the first context line (its scorer skips a header only where there is one)."""
    expected = load_squad(as_squad_json(tmp_path, squad_json())).examples
    lines = mrqa_lines(squad_json())[1:]
    lines[0]["qas"][0] |= {"id": "./cnn/stories/a.story#1", "is_impossible": False}  # the sample files' other keys
    data = load_squad(write_jsonl(tmp_path / "sample.jsonl", lines))
    assert data.format == "mrqa" and {ex.title for ex in data.examples} == {""}
    assert [(ex.id, ex.question, ex.context, ex.answers) for ex in data.examples] == [
        (ex.id, ex.question, ex.context, ex.answers) for ex in expected]
    path = write_jsonl(tmp_path / "second.jsonl", [lines[0], {"header": {"dataset": "SQuAD"}}])
    with pytest.raises(DataFormatError, match="line 2 needs a 'context' string and a 'qas' list; read as mrqa"):
        load_squad(path)
    paragraph = squad_json()["data"][0]["paragraphs"][0]  # a SQuAD paragraph a line, its questions with 'id': not MRQA
    with pytest.raises(DataFormatError, match="empty or missing question; read as jsonl"):
        load_squad(write_jsonl(tmp_path / "paragraphs.jsonl", [paragraph]))


def test_an_mrqa_question_without_detected_answers_is_one_to_predict(tmp_path):
    """Only an empty 'detected_answers' list says a question has no answer; without the key it is unlabelled (not
    unanswerable: the file would turn into SQuAD 2.0 data and evaluate would score it)."""
    lines = mrqa_lines(squad_json())
    del lines[1]["qas"][0]["detected_answers"]  # q1: 'answers' alone, no spans
    lines[1]["qas"][1] |= {"detected_answers": None, "is_impossible": False}
    lines[2]["qas"][1] |= {"detected_answers": None, "is_impossible": True}  # q4: said to have none
    path = write_jsonl(tmp_path / "ask.jsonl", lines)
    data = load_squad(path)
    assert [(ex.id, ex.answers) for ex in data.examples] == [("q1", None), ("q2", None), ("q3", ()), ("q4", ())]
    with pytest.raises(DataFormatError) as info:
        load_squad(path, needs_gold="bio-mrc evaluate")
    assert info.value.record == "q1" and info.value.problem.startswith("question without answers: bio-mrc evaluate needs")

def test_mrqa_errors_name_line_record_and_format(tmp_path):
    lines = mrqa_lines(squad_json())
    lines[1]["qas"][1]["detected_answers"][0]["char_spans"] = [[47, 99]]
    path = write_jsonl(tmp_path / "bad.jsonl", lines)
    with pytest.raises(DataFormatError) as info:
        load_squad(path)
    assert info.value.record == "q2" and info.value.source == f"{path}, line 2"
    assert info.value.problem.startswith("char span [47, 99] is not inside the context (53 characters; ends are inclusive); read as mrqa")
    path = write_jsonl(tmp_path / "no_qas.jsonl", [lines[0], {"context": "x"}])
    with pytest.raises(DataFormatError, match="line 2 needs a 'context' string and a 'qas' list; read as mrqa"):
        load_squad(path)



def test_mrqa_checks_every_char_span_of_a_detected_answer(tmp_path):
    """Each occurrence of an answer is listed: the alternative is the first, and a later malformed one is refused."""
    lines = mrqa_lines(squad_json())
    spans = lines[1]["qas"][0]["detected_answers"][0]["char_spans"]  # q1's "France" at [24, 29]
    spans.append([32, 37])  # its second occurrence ("France. France borders")
    data = load_squad(write_jsonl(tmp_path / "two.jsonl", lines))
    assert data.examples[0].answers == (((24, 30),), ((13, 30),))
    for second, problem in (([40, 60], "char span [40, 60] is not inside the context (53 characters; ends are inclusive)"),
                            ([5], "char span #2 [5] of a detected answer is not [start, end] of integers"),
                            ([30, 24], "char span [30, 24] is not inside the context")):
        spans[1] = second
        path = write_jsonl(tmp_path / "bad.jsonl", lines)
        with pytest.raises(DataFormatError) as info:
            load_squad(path)
        assert info.value.record == "q1" and info.value.source == f"{path}, line 2"
        assert info.value.problem.startswith(problem)

def test_a_bad_mrqa_span_is_one_question_skipped_under_skip_invalid(tmp_path):
    """A malformed span, one outside the context and a text that is no string are each that question's problem, met
    where every question is checked: skipped and counted as any other under --skip-invalid, the file's other questions
    read; without --skip-invalid the first is refused naming it."""
    lines = mrqa_lines(squad_json())
    lines[1]["qas"][0]["detected_answers"][0]["char_spans"] = [[24, 29], [5]]  # q1: a later span malformed
    lines[1]["qas"][1]["detected_answers"][0]["char_spans"] = [[47, 99]]  # q2: past the 53 characters
    lines[2]["qas"][1]["detected_answers"][0]["text"] = None  # q4: no text
    path = write_jsonl(tmp_path / "bad.jsonl", lines)
    data = load_squad(path, skip_invalid=True)
    assert [ex.id for ex in data.examples] == ["q3"] and data.version == "2.0"
    assert [(error.record, error.source) for error in data.skipped] == [
        ("q1", f"{path}, line 2"), ("q2", f"{path}, line 2"), ("q4", f"{path}, line 3")]
    assert data.skipped[1].problem.startswith("char span [47, 99] is not inside the context")
    streamed = stream_squad(path, skip_invalid=True)
    assert [ex.id for ex in streamed] == ["q3"] and len(streamed.skipped) == 3
    with pytest.raises(DataFormatError) as info:
        load_squad(path)
    assert info.value.record == "q1" and info.value.source == f"{path}, line 2"
    assert info.value.problem.startswith("char span #2 [5] of a detected answer is not [start, end] of integers; read as mrqa")


def test_a_bad_answers_cell_is_one_question_skipped_under_skip_invalid(tmp_path):
    """A table's 'answers' text that is not JSON stopped the whole load even under --skip-invalid."""
    rows = hf_rows(squad_json())
    path = tmp_path / "bad.csv"
    path.write_text(as_csv(tmp_path, rows).read_text(encoding="utf-8").replace('{""text"": [""Spain""]', "{text: Spain"),
                    encoding="utf-8")
    data = load_squad(path, skip_invalid=True)
    assert [ex.id for ex in data.examples] == ["q1", "q3", "q4"]
    assert [(error.record, error.source) for error in data.skipped] == [("q2", f"{path}, row 1")]
    assert data.skipped[0].problem.startswith("'answers' is text but not JSON")


def test_every_char_span_of_every_detected_answer_holds_its_text(tmp_path):
    """Only the first span's characters were compared with the text: a later span of other characters (a misaligned
    record) loaded without a word. Each is compared, spacing and case aside; --fix-offsets passes over it."""
    lines = mrqa_lines(squad_json())  # q1: "france" at [24, 29], "capital of france" at [13, 29]
    first, second = lines[1]["qas"][0]["detected_answers"]
    first["char_spans"].append([32, 37])  # "France" again: the text, its case aside
    second |= {"text": "Capital  of-France", "char_spans": [[13, 29], [13, 29], [0, 4]]}  # "Paris": misplaced
    path = write_jsonl(tmp_path / "moved.jsonl", lines)
    with pytest.raises(DataFormatError) as info:
        load_squad(path)
    assert info.value.record == "q1" and info.value.source == f"{path}, line 2"
    assert info.value.problem.startswith("char span #3 [0, 4] holds \"Paris\", not the detected answer's text "
                                         "\"Capital  of-France\"; fix_offsets=True reads the answer where its text is and "
                                         "passes over a misplaced occurrence; read as mrqa")
    fixed = load_squad(path, fix_offsets=True)
    assert fixed.examples[0].answers == (((24, 30),), ((13, 30),)) and fixed.fixed_offsets == ["q1"]
    assert fixed.examples[0].answer_texts()[1] == ["capital of France"]
    second["char_spans"][2] = [0, 52]  # the whole context
    with pytest.raises(DataFormatError, match=r'^char span #3 \[0, 52\] holds "Paris is the capital of France\. France borders Spain\.", not '):
        load_squad(write_jsonl(tmp_path / "long.jsonl", lines))
    lines[1]["qas"][0]["detected_answers"] = [first]
    assert load_squad(write_jsonl(tmp_path / "kept.jsonl", lines)).fixed_offsets == []


def test_an_mrqa_text_that_is_not_at_its_char_span_is_refused_as_a_squad_answer_start_is(tmp_path):
    """A detected answer's text must be the context's characters at its first span once both are normalised (the task
    lower-cases some datasets' texts); a misaligned record is refused naming line and question, as a SQuAD
    answer_start that misses its text is, and --fix-offsets moves it to the text's nearest occurrence alike."""
    lines = mrqa_lines(squad_json())  # q1's "France" at [24, 29] of "Paris is the capital of France. ..."
    answer = lines[1]["qas"][0]["detected_answers"][0]
    answer |= {"text": "France.", "char_spans": [[24, 30]]}  # normalised alike: the context's characters are read
    assert load_squad(write_jsonl(tmp_path / "dot.jsonl", lines)).examples[0].answer_texts()[0] == ["France."]
    answer |= {"text": "Capital-of france .", "char_spans": [[13, 30]]}  # cased and spaced as a tokenizer split it
    assert load_squad(write_jsonl(tmp_path / "split.jsonl", lines)).examples[0].answer_texts()[0] == ["capital of France."]
    answer |= {"text": "France", "char_spans": [[13, 18]]}  # "capita": a span moved off its text
    path = write_jsonl(tmp_path / "moved.jsonl", lines)
    with pytest.raises(DataFormatError) as info:
        load_squad(path)
    assert info.value.record == "q1" and info.value.source == f"{path}, line 2"
    assert info.value.problem.startswith("answer \"France\" is not at answer_start 13; the text does occur at 24 (fix_offsets=True")
    fixed = load_squad(path, fix_offsets=True)
    assert fixed.examples[0].answers[0] == ((24, 30),) and fixed.fixed_offsets == ["q1"]
    answer["text"] = "france"  # a lower-cased text as written is nowhere in the context
    with pytest.raises(DataFormatError, match='answer text "france" is not in the context; read as mrqa') as info:
        load_squad(write_jsonl(tmp_path / "lower.jsonl", lines))
    assert info.value.record == "q1"
    answer["text"] = None
    with pytest.raises(DataFormatError, match="a detected answer needs a 'text' string, got null; read as mrqa"):
        load_squad(write_jsonl(tmp_path / "none.jsonl", lines))


MULTISPAN = {"version": 1.0, "data": [
    {"id": "m1", "question": ["who", "sang", "?"], "context": ["Dave", "and", "Barbara", "sang", "."], "label": ["B", "O", "B", "O", "O"]},
    {"id": "m2", "question": ["none", "?"], "context": ["no", "answer", "here"], "label": ["O", "O", "O"]},
]}


def test_multispanqa_layout_loads_like_its_own_loader_and_refuses_other_layouts(tmp_path):
    path = tmp_path / "multispan.json"
    path.write_text(json.dumps(MULTISPAN), encoding="utf-8")
    data = load_squad(path)
    assert data.format == "multispanqa" and data.examples == load_multispanqa(path)
    assert data.examples[0].answer_texts() == [["Dave", "Barbara"]] and load_squad(path, limit=1).examples == data.examples[:1]
    squad = as_squad_json(tmp_path, squad_json())
    with pytest.raises(DataFormatError, match=r"^detected squad \(official SQuAD JSON.*\), expected multispanqa \(MultiSpanQA JSON"):
        load_squad(squad, data_format="multispanqa")
    broken = {"data": [{**MULTISPAN["data"][0], "label": ["B"]}]}
    path.write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(DataFormatError, match="'label' must have one tag per context word: 1 tags for 5 words; read as multispanqa") as info:
        load_squad(path)
    assert info.value.record == "m1" and info.value.source == str(path)
    with pytest.raises(ConfigError, match="unknown data format 'xml'"):
        detect_format(squad, expected="xml")
    with pytest.raises(TypeError, match="a pandas DataFrame or a list of dicts, got set"):
        load_squad({"q1"})


def test_a_bad_multispanqa_record_is_one_question_skipped_under_skip_invalid(tmp_path):
    """MultiSpanQA's records were validated whole, so one bad record (a tag that is not B/I/O, a repeated id) stopped
    the load even under --skip-invalid; each is now its question's problem, skipped and counted as in any form."""
    first, second = MULTISPAN["data"]
    records = [first, {**second, "id": "m3", "label": ["O", "X", "O"]}, second, {**first, "question": ["again", "?"]}]
    path = tmp_path / "multispan.json"
    path.write_text(json.dumps({"data": records}), encoding="utf-8")
    data = load_squad(path, skip_invalid=True)
    assert [ex.id for ex in data.examples] == ["m1", "m2"] and data.version == "2.0" and data.format == "multispanqa"
    assert [(error.record, error.problem.split(";")[0]) for error in data.skipped] == [
        ("m3", 'label "X" at word 1 is not one of B, I, O'), ("m1", "duplicate question id")]
    streamed = stream_squad(path, skip_invalid=True, limit=1)
    assert [ex.id for ex in streamed] == ["m1"] and streamed.version == "1.1"
    with pytest.raises(DataFormatError, match='label "X" at word 1 is not one of B, I, O; read as multispanqa') as info:
        load_squad(path)
    assert info.value.record == "m3" and info.value.source == str(path)


def test_multispanqa_with_an_integer_past_64_bits_in_its_first_record_is_recognised(tmp_path):
    """Recognising the layout reads the first record as predict reads official JSON, which refused such a number."""
    path = tmp_path / "multispan.json"
    path.write_text(json.dumps({"data": [{**MULTISPAN["data"][0], "num_span": 2**64}, MULTISPAN["data"][1]]}), encoding="utf-8")
    data = load_squad(path)
    assert data.format == "multispanqa" and data.examples[0].answer_texts() == [["Dave", "Barbara"]]


def test_comparison_data_recognises_multispanqa_without_a_format(tmp_path):
    from bio_mrc.harness.config import DataSpec
    from bio_mrc.harness.comparison_splits import resolve_split

    (tmp_path / "multispan.json").write_text(json.dumps(MULTISPAN), encoding="utf-8")
    split = resolve_split(DataSpec(path="multispan.json"), tmp_path)
    assert split.task == "multispanqa" and split.gold == {"m1": ["Dave", "Barbara"], "m2": []}
    as_csv(tmp_path, hf_rows(squad_json()))
    assert resolve_split(DataSpec(path="dev.csv", limit=2), tmp_path).ids == ["q1", "q2"]


def test_cli_trains_predicts_and_evaluates_multispanqa_and_csv(tiny_encoder_dir, tmp_path, capsys):
    path = tmp_path / "multispan.json"
    path.write_text(json.dumps(MULTISPAN), encoding="utf-8")
    model, preds = tmp_path / "model", tmp_path / "preds.json"
    window = ["--max-seq-length", "32", "--doc-stride", "8", "--max-query-length", "8"]
    assert main(["train", "--train", str(path), "--output-dir", str(model), "--encoder", str(tiny_encoder_dir),
                 "--heads", "span+bio", "--epochs", "1", *window]) == 0
    assert main(["predict", "--model", str(model), "--data", str(path), "--output", str(preds), "--decoding", "bio"]) == 0
    capsys.readouterr()
    spans = json.loads(preds.read_text())  # MultiSpanQA's own prediction layout: a list of span texts per question
    assert set(spans) == {"m1", "m2"} and all(isinstance(answer, list) for answer in spans.values())
    assert main(["evaluate", "--data", str(path), "--predictions", str(preds)]) == 0  # the layout picks the metric
    scores = json.loads(capsys.readouterr().out)
    assert set(scores) == {"em_precision", "em_recall", "em_f1", "pm_precision", "pm_recall", "pm_f1"}
    gold = {"q1": "France", "q2": "Spain", "q3": "", "q4": "9"}
    (tmp_path / "squad_preds.json").write_text(json.dumps(gold), encoding="utf-8")
    csv_path = as_csv(tmp_path, hf_rows(squad_json()))
    assert main(["evaluate", "--data", str(csv_path), "--predictions", str(tmp_path / "squad_preds.json")]) == 0
    assert json.loads(capsys.readouterr().out)["exact"] == 100.0
    assert main(["evaluate", "--data", str(csv_path), "--predictions", str(preds), "--metric", "multispan"]) == 2
    assert "detected csv" in capsys.readouterr().err


@pytest.mark.parametrize("header", [" id", "ID", "Answers", "title "])
def test_a_known_column_spelt_otherwise_is_refused_not_ignored(tmp_path, header):
    """' id' or 'Answers' was read as an unknown column and ignored: every id silently replaced by a generated one,
    every answer lost. Now one line naming the column and what to rename it."""
    columns = {"id": "q1", "title": "t", "context": "Paris is the capital of France.", "question": "Capital?",
               "answers": '{"text": ["France"], "answer_start": [24]}'}
    meant = header.strip().lower()
    path = tmp_path / "near.csv"
    with open(path, "w", newline="") as handle:
        csv.writer(handle).writerows([[header if c == meant else c for c in columns], list(columns.values())])
    with pytest.raises(DataFormatError, match=f'names the column "{header}", which is not "{meant}" as spelt'):
        load_squad(path)


def test_a_broken_or_looping_link_named_like_a_hub_id_is_named_as_such_not_looked_up(tmp_path, monkeypatch):
    import os

    def no_hub(*args, **kwargs):
        raise AssertionError("a local link was looked up on the hub")

    monkeypatch.setattr(datasets, "load_dataset", no_hub)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "org").mkdir()
    os.symlink(tmp_path / "gone.json", "org/name")
    os.symlink("loop", "org/loop")
    with pytest.raises(DataFormatError, match=r"^a broken symbolic link: its target \S+gone.json does not exist \(in org/name\)$"):
        load_squad("org/name")
    with pytest.raises(DataFormatError, match=r"^a symbolic link that loops .*\(in org/loop\)$"):
        load_squad("org/loop")
