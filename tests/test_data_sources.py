"""The data forms users have: official SQuAD JSON, JSON Lines in the Hugging Face columns, a
datasets.Dataset in memory and a DatasetDict saved to disk all load to the same questions, with
the same validation and the same errors. The hub is never reached: load_dataset is replaced."""

import gzip
import json

import pytest

from bio_mrc.cli import main
from bio_mrc.data import sources
from bio_mrc.data.sources import is_hub_id, locate, split_spec
from bio_mrc.data.squad import load_squad
from bio_mrc.errors import DataFormatError

datasets = pytest.importorskip("datasets")

PARIS = "Paris is the capital of France. France borders Spain."
CAFE = "Café ☕ opens at 9, شكرا, 東京."


def qa(qid, question, *answers, impossible=None):
    extra = {} if impossible is None else {"is_impossible": impossible}
    return {"id": qid, "question": question, "answers": [{"text": t, "answer_start": s} for t, s in answers], **extra}


def squad_json(q2_answer=("Spain", 47)):
    """Four questions: two annotators, an unanswerable one (v2.0), odd Unicode; ``q2_answer`` varies q2."""
    return {"version": "v2.0", "data": [
        {"title": "Paris", "paragraphs": [
            {"context": PARIS, "qas": [qa("q1", "Capital of?", ("France", 24), ("capital of France", 13), impossible=False),
                                       qa("q2", "Borders?", q2_answer, impossible=False)]}]},
        {"title": "Café", "paragraphs": [
            {"context": CAFE, "qas": [qa("q3", "Closes when?", impossible=True), qa("q4", "Opens at?", ("9", 16), impossible=False)]}]},
    ]}


def hf_rows(raw):
    """The official layout as Hugging Face SQuAD rows: answers as columns, unanswerable = empty lists."""
    return [
        {"id": q["id"], "title": article["title"], "context": paragraph["context"], "question": q["question"],
         "answers": {"text": [a["text"] for a in q["answers"]], "answer_start": [a["answer_start"] for a in q["answers"]]}}
        for article in raw["data"] for paragraph in article["paragraphs"] for q in paragraph["qas"]
    ]


def write_jsonl(path, rows, opener=open):
    with opener(path, "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    return path


# Each form: (tmp_path, official JSON object) -> what load_squad takes, and where a record's error points.
def as_squad_json(tmp_path, raw):
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "dev.json").write_text(json.dumps(raw), encoding="utf-8")
    return str(tmp_path / "dev.json")


def as_jsonl(tmp_path, raw):
    tmp_path.mkdir(parents=True, exist_ok=True)
    return str(write_jsonl(tmp_path / "dev.jsonl", hf_rows(raw)))


def as_dataset(tmp_path, raw):
    return datasets.Dataset.from_list(hf_rows(raw))


def as_saved_dataset_dict(tmp_path, raw):
    datasets.DatasetDict({"validation": datasets.Dataset.from_list(hf_rows(raw))}).save_to_disk(str(tmp_path / "saved"))
    return str(tmp_path / "saved")


FORMS = {"squad-json": as_squad_json, "jsonl": as_jsonl, "dataset": as_dataset, "saved-dataset-dict": as_saved_dataset_dict}
# Where the second question's error points, after "in ": the file, plus the line or row of the row forms.
Q2_SOURCE = {"squad-json": "{tmp}/dev.json", "jsonl": "{tmp}/dev.jsonl, line 2", "dataset": "datasets.Dataset, row 1",
             "saved-dataset-dict": "{tmp}/saved:validation, row 1"}


@pytest.mark.parametrize("form", FORMS)
def test_every_form_loads_the_same_questions(tmp_path, form):
    expected = load_squad(as_squad_json(tmp_path / "reference", squad_json()))
    data = load_squad(FORMS[form](tmp_path, squad_json()))
    assert data.examples == expected.examples and len(data.examples) == 4
    assert data.version == "2.0" and data.examples[2].answers == () and data.examples[0].answer_texts() == [["France"], ["capital of France"]]
    assert load_squad(FORMS[form](tmp_path / "again", squad_json()), limit=2).examples == expected.examples[:2]


def test_jsonl_by_content_and_gzipped(tmp_path):
    expected = load_squad(as_squad_json(tmp_path, squad_json())).examples
    rows = hf_rows(squad_json())
    # datasets' to_json writes JSON Lines into a .json file: the content says which it is
    assert load_squad(write_jsonl(tmp_path / "exported.json", rows)).examples == expected
    assert load_squad(write_jsonl(tmp_path / "dev.jsonl.gz", rows, gzip.open)).examples == expected
    one_line = tmp_path / "one.json"
    one_line.write_text(json.dumps(squad_json()), encoding="utf-8")  # an official file on one line stays official
    assert load_squad(one_line).examples == expected
    answerable = [row for row in rows if row["answers"]["text"]]
    assert load_squad(write_jsonl(tmp_path / "v1.jsonl", answerable)).version == "1.1"


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(
    "answer, problem",
    [(("Berlin", 47), 'answer text "Berlin" is not in the context'),
     (("Spain", 3), 'answer "Spain" is not at answer_start 3; the text does occur at 47 (fix_offsets=True relocates it')],
)
def test_a_bad_record_gives_the_same_error_in_every_form(tmp_path, form, answer, problem):
    with pytest.raises(DataFormatError) as info:
        load_squad(FORMS[form](tmp_path, squad_json(q2_answer=answer)))
    error = info.value
    assert error.problem.startswith(problem) and error.record == "q2"
    assert error.source == Q2_SOURCE[form].format(tmp=tmp_path)
    assert str(error) == f"{error.problem} (in {error.source}, record 'q2')"


@pytest.mark.parametrize("form", FORMS)
def test_fix_offsets_and_skip_invalid_behave_the_same_in_every_form(tmp_path, form):
    fixed = load_squad(FORMS[form](tmp_path / "a", squad_json(q2_answer=("Spain", 3))), fix_offsets=True)
    assert fixed.fixed_offsets == ["q2"] and fixed.examples[1].answers == (((47, 52),),)
    skipped = load_squad(FORMS[form](tmp_path / "b", squad_json(q2_answer=("Berlin", 47))), skip_invalid=True)
    assert [ex.id for ex in skipped.examples] == ["q1", "q3", "q4"]
    assert [(e.record, e.problem) for e in skipped.skipped] == [("q2", 'answer text "Berlin" is not in the context')]


def test_row_forms_check_ids_and_is_impossible_like_the_official_layout(tmp_path):
    rows = hf_rows(squad_json())
    bad = [
        ({**rows[0], "id": 7}, "Paris", "'id' must be a string, got 7"),
        ({**rows[0], "question": " "}, "q1", "empty or missing question"),
        ({**rows[0], "is_impossible": True}, "q1", "question marked is_impossible has answers"),
        ({**rows[2], "is_impossible": False}, "q3", "question has no answers and is not marked is_impossible"),
        ({**rows[0], "answers": {"text": ["France"], "answer_start": [24, 32]}}, "q1", "'answers' needs lists 'text' and 'answer_start'"),
        (rows[0], "q1", "duplicate question id"),
    ]
    for row, record, problem in bad:
        path = write_jsonl(tmp_path / "bad.jsonl", [rows[0], row])
        with pytest.raises(DataFormatError, match=problem) as info:
            load_squad(path)
        assert info.value.record == record and info.value.source == f"{path}, line 2"


def test_bad_json_lines_are_named_by_line(tmp_path):
    good = json.dumps(hf_rows(squad_json())[0])
    cases = [
        (f"{good}\n\n{good[:-9]}", r"the JSON ends early \(a truncated file\?\): Expecting value \(line 3, column"),  # blank line 2 still counts
        (f"{good}\n{{'id': 1}}\n", r"not valid JSON: .* \(line 2, column 2\)"),
        (f"{good}\n[1, 2]\n", "line 2 is a JSON list, not an object"),
        (json.dumps(squad_json()) + "\n", "line 1 is an official SQuAD JSON object"),
    ]
    for text, match in cases:
        path = tmp_path / "broken.jsonl"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(DataFormatError, match=match) as info:
            load_squad(path, skip_invalid=True)  # a damaged file is never skipped over
        assert info.value.source == str(path)
    gzipped = tmp_path / "official.json.gz"  # official JSON is read uncompressed: the line says how to read it
    gzipped.write_bytes(gzip.compress(json.dumps(squad_json()).encode()))
    with pytest.raises(DataFormatError, match=r"official SQuAD JSON object, not one question .*: decompress it first \(gunzip\)"):
        load_squad(gzipped)
    (tmp_path / "latin1.jsonl").write_bytes(good.encode() + b'\n{"id": "caf\xe9"}\n')
    with pytest.raises(DataFormatError, match="not UTF-8 text .invalid continuation byte at line 2"):
        load_squad(tmp_path / "latin1.jsonl")
    many = "".join(json.dumps({**hf_rows(squad_json())[0], "id": f"q{n}"}) + "\n" for n in range(50))
    cut = gzip.compress(many.encode())[:-20]
    (tmp_path / "cut.jsonl.gz").write_bytes(cut)
    with pytest.raises(DataFormatError, match="gzip stream ends early"):
        load_squad(tmp_path / "cut.jsonl.gz")


def test_choosing_a_split_of_a_dataset_dict(tmp_path):
    rows = hf_rows(squad_json())
    both = datasets.DatasetDict({"train": datasets.Dataset.from_list(rows[:2]), "validation": datasets.Dataset.from_list(rows[2:])})
    both.save_to_disk(str(tmp_path / "both"))
    with pytest.raises(DataFormatError, match=r"several splits in this DatasetDict \(it has \['train', 'validation'\]\); name one as .*both:SPLIT"):
        load_squad(tmp_path / "both")
    assert [ex.id for ex in load_squad(f"{tmp_path}/both:validation").examples] == ["q3", "q4"]
    assert [ex.id for ex in load_squad(tmp_path / "both", split="train").examples] == ["q1", "q2"]
    assert [ex.id for ex in load_squad(both, split="train").examples] == ["q1", "q2"]  # in memory
    with pytest.raises(DataFormatError, match="no split 'test'"):
        load_squad(f"{tmp_path}/both:test")
    with pytest.raises(DataFormatError, match="picks a split of a saved DatasetDict or a hub dataset, not of a file"):
        load_squad(f"{as_squad_json(tmp_path, squad_json())}:train")
    with pytest.raises(DataFormatError, match="lacks the SQuAD columns \\['question'\\]"):
        load_squad(datasets.Dataset.from_list([{k: v for k, v in row.items() if k != "question"} for row in rows]))
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "single"))  # a Dataset, not a DatasetDict
    assert [ex.id for ex in load_squad(tmp_path / "single").examples] == ["q1", "q2", "q3", "q4"]
    with pytest.raises(DataFormatError, match="':train' picks a split of a DatasetDict; this is a single Dataset"):
        load_squad(f"{tmp_path}/single:train")
    (tmp_path / "plain").mkdir()
    with pytest.raises(DataFormatError, match="found a folder without dataset_dict.json or state.json"):
        load_squad(tmp_path / "plain")


def test_a_dataset_dict_in_memory_is_told_to_pass_split():
    """An object passed to load_squad has no path to add ':SPLIT' to: the line named 'datasets.DatasetDict:SPLIT'."""
    rows = hf_rows(squad_json())
    both = datasets.DatasetDict({"train": datasets.Dataset.from_list(rows[:2]), "validation": datasets.Dataset.from_list(rows[2:])})
    with pytest.raises(DataFormatError, match=r"several splits in this DatasetDict \(it has \['train', 'validation'\]\); "
                                              r"pass split=, e\.g\. split='train'; read as datasets: .* \(in datasets\.DatasetDict\)$"):
        load_squad(both)
    with pytest.raises(DataFormatError, match=r"no split 'test' in this DatasetDict .*; pass split=, e\.g\. split='train'"):
        load_squad(both, split="test")
    with pytest.raises(DataFormatError, match=r"^split='train' picks a split of a DatasetDict; this is a single Dataset"):
        load_squad(both["train"], split="train")


def test_hub_ids_go_to_load_dataset_and_fail_clearly_without_a_network(monkeypatch, tmp_path, capsys):
    rows = hf_rows(squad_json())
    calls = []

    def offline(name, split=None, **kwargs):
        calls.append((name, split))
        raise ConnectionError(f"Couldn't reach '{name}' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.setattr(sources, "hub_dataset_problem", lambda dataset_id: None)  # the hub answers; datasets fails
    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DataFormatError, match="hub dataset could not be loaded .ConnectionError: Couldn't reach .*without a network") as info:
        load_squad("rajpurkar/squad:validation")
    assert calls == [("rajpurkar/squad", "validation")] and info.value.source == "rajpurkar/squad:validation"
    preds = tmp_path / "p.json"
    preds.write_text("{}")
    assert main(["evaluate", "--data", "rajpurkar/squad:validation", "--predictions", str(preds)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "without a network" in err and "Traceback" not in err
    with pytest.raises(DataFormatError, match="file not found"):
        load_squad(tmp_path / "missing.jsonl")  # a missing local file is never looked up on the hub
    monkeypatch.setattr(datasets, "load_dataset", lambda name, split=None: datasets.Dataset.from_list(rows))
    assert load_squad("rajpurkar/squad_v2:validation[:4]").examples == load_squad(as_squad_json(tmp_path, squad_json())).examples


def test_a_missing_name_fails_at_once_when_the_hub_is_out_of_reach(monkeypatch, tmp_path):
    """A hub-shaped name is looked up once (no retries) and refused naming it; a path-shaped one never reaches the
    hub; offline mode leaves the name to datasets' cache."""
    from huggingface_hub import HfApi

    looked_up, loaded = [], []

    def unreachable(self, repo_id, **kwargs):
        looked_up.append((repo_id, kwargs.get("timeout")))
        raise OSError("[Errno -2] Name or service not known")

    monkeypatch.setattr(HfApi, "dataset_info", unreachable)
    def cache_only(*args, **kwargs):
        loaded.append(args)
        raise ConnectionError(f"Couldn't reach '{args[0]}' on the Hub (OfflineModeIsEnabled)")

    monkeypatch.setattr(datasets, "load_dataset", cache_only)
    with pytest.raises(DataFormatError, match="^no such file or folder: dev; and the Hugging Face hub cannot be reached "
                                              r"\(OSError: .Errno -2. Name or service not known\);.*HF_HUB_OFFLINE=1"):
        load_squad("dev:validation")
    assert looked_up == [("dev", sources.HUB_PROBE_TIMEOUT_S)] and loaded == []
    for path in ("missing.json", "dev.jsonl.gz", "./dev", "~/dev", "/abs/dev", "data/squad/dev", "data\\dev",
                 str(tmp_path / "none")):
        with pytest.raises(DataFormatError, match="file not found"):
            load_squad(path)
    assert len(looked_up) == 1 and loaded == []  # never sent to the hub

    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    with pytest.raises(DataFormatError, match="hub dataset could not be loaded"):
        load_squad("owner/dev")  # datasets reads its cache (here: nothing), the hub is not asked
    assert len(looked_up) == 1 and loaded == [("owner/dev",)]


def test_a_name_the_hub_does_not_know_is_refused_naming_it(monkeypatch):
    from huggingface_hub import HfApi
    from huggingface_hub.errors import RepositoryNotFoundError

    def unknown(self, repo_id, **kwargs):
        raise RepositoryNotFoundError.__new__(RepositoryNotFoundError)  # as the hub's 404 (its response left out)

    monkeypatch.setattr(HfApi, "dataset_info", unknown)
    monkeypatch.setattr(datasets, "load_dataset", lambda *args, **kwargs: pytest.fail("loaded an unknown dataset"))
    with pytest.raises(DataFormatError, match="^no such file or folder: owner/none; and the Hugging Face hub has no "
                                              "dataset of that id;") as info:
        load_squad("owner/none")
    assert "\n" not in str(info.value)


def test_split_specs_and_comparison_paths(tmp_path):
    assert split_spec("rajpurkar/squad:train[:100]") == ("rajpurkar/squad", "train[:100]")
    assert split_spec(f"{tmp_path}/none:train") == (f"{tmp_path}/none:train", None)  # neither a folder nor a hub id
    assert is_hub_id("squad") and is_hub_id("rajpurkar/squad") and not is_hub_id("squad/dev.json") and not is_hub_id("/abs/path")
    assert locate("rajpurkar/squad:validation", tmp_path) == "rajpurkar/squad:validation"
    assert locate("squad-v1.1/dev.json", tmp_path) == str(tmp_path / "squad-v1.1/dev.json")
    (tmp_path / "rajpurkar" / "squad").mkdir(parents=True)  # a local folder of that name wins
    assert locate("rajpurkar/squad:validation", tmp_path) == str(tmp_path / "rajpurkar/squad:validation")


def test_cli_evaluates_jsonl_and_saved_datasets(tmp_path, capsys):
    preds = tmp_path / "p.json"
    preds.write_text(json.dumps({"q1": "France", "q2": "Spain", "q3": "", "q4": "9"}))
    for data in (as_jsonl(tmp_path, squad_json()), f"{as_saved_dataset_dict(tmp_path, squad_json())}:validation"):
        assert main(["evaluate", "--data", data, "--predictions", str(preds)]) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["exact"] == 100.0 and result["total"] == 4 and result["NoAns_total"] == 1
    bad = as_jsonl(tmp_path / "bad", squad_json(q2_answer=("Spain", 3)))
    assert main(["evaluate", "--data", bad, "--predictions", str(preds)]) == 2
    err = capsys.readouterr().err
    assert err.startswith('error: answer "Spain" is not at answer_start 3') and f"{bad}, line 2, record 'q2'" in err
    assert main(["evaluate", "--data", bad, "--predictions", str(preds), "--fix-offsets"]) == 0
    assert "relocated answer_start of 1 question in" in capsys.readouterr().err
