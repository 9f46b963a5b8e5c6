"""Model cards: a saved model folder's README.md documents it in the Hugging Face format, and agrees
with the folder's own files (config.json, the run record, the evaluation record) after each change."""

import json
import math
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from huggingface_hub import ModelCard

from bio_mrc import model_card
from bio_mrc.decoding.postprocess import available_decodings
from bio_mrc.harness.compare import run_comparison
from bio_mrc.harness.config import parse_config
from bio_mrc.inference import AnswerExtractor, save_tuned_settings
from bio_mrc.model import RUN_FILE, BioMrcConfig
from bio_mrc.registry import head_choices
from bio_mrc.training.train import TrainConfig, load_run_record, train_model

from .conftest import FIXTURES, SAMPLE_V1, hub_answering

CONTEXT = "The Normans were descended from Norse raiders from Denmark, Iceland and Norway."


@pytest.fixture(scope="module")
def trained(tiny_encoder_dir, sample_v1, tmp_path_factory):
    config = TrainConfig(encoder=str(tiny_encoder_dir), heads="span+bio", max_seq_length=48, doc_stride=16,
                         max_query_length=12, epochs=1, batch_size=4, seed=1)
    return train_model(sample_v1.examples, config, tmp_path_factory.mktemp("carded") / "model", save_checkpoints=False).model_dir


@pytest.fixture
def model_dir(trained, tmp_path):
    """A copy of the trained model that a test may change."""
    return shutil.copytree(trained, tmp_path / "model")


def front_matter(folder):
    """The card's YAML as plain data (as the hub parses it) and its body."""
    text = (folder / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    yaml_text, body = text[4:].split("\n---\n", 1)
    return yaml.safe_load(yaml_text), body


def metrics(meta):
    """{(metric type, config): value} over every model-index result."""
    return {(m["type"], m.get("config")): m["value"]
            for result in meta.get("model-index", [{}])[0].get("results", []) for m in result["metrics"]}


def test_training_writes_a_card_the_hub_reads(trained):
    meta, body = front_matter(trained)
    assert meta["library_name"] == "bio_mrc" and meta["pipeline_tag"] == "question-answering"
    assert {"question-answering", "extractive-qa", "bio-tagging", "multi-span"} <= set(meta["tags"])
    assert "base_model" not in meta  # a local encoder folder is no hub id
    assert ModelCard.load(trained / "README.md").data.library_name == "bio_mrc"
    record, config = load_run_record(trained), json.loads((trained / "config.json").read_text())
    for option, value in record["train"].items():  # the full training configuration, as recorded (local paths shortened)
        assert f"| `{option}` | `{json.dumps(model_card.public(value))}` |" in body
    assert f"Trained on {record['n_examples']} questions ({record['n_windows']} windows)" in body
    for window in ("max_seq_length", "doc_stride", "max_query_length"):
        assert f"`{window}` {config[window]}" in body
    assert "`span`, `bio`, `joint`" in body and "`word`: the first piece of each word" in body
    assert "AnswerExtractor.from_pretrained(" in body and f"bio-mrc predict --model {trained.name}" in body


def test_tuned_settings_refresh_the_card(model_dir):
    config = BioMrcConfig.from_pretrained(str(model_dir))
    tuned_on = {"description": "heldout.json (first 5 questions)", "questions": 5, "content_hash": "abc123"}
    assert save_tuned_settings(model_dir, config, {"span": -1.25, "joint": float("-inf")}, {"bio_length_prior": 2.25}, tuned_on)
    meta, body = front_matter(model_dir)
    saved = json.loads((model_dir / "config.json").read_text())
    found = metrics(meta)
    assert found[("bio_length_prior", None)] == saved["bio_length_prior"] == 2.25
    assert found[("no_answer_threshold", "span")] == saved["no_answer_thresholds"]["span"] == -1.25
    assert ("no_answer_threshold", "joint") not in found  # -inf is no number the hub reads; the body says it
    assert all(isinstance(v, float) and math.isfinite(v) for v in found.values())
    assert "| no-answer threshold `joint` | −∞ (always abstain) |" in body and "| BIO span-length prior β | 2.25 |" in body
    assert "Tuned on `heldout.json (first 5 questions)` (5 questions, content hash `abc123`)" in body


def test_the_card_counts_the_training_questions_fingerprinted_and_those_tuned_on(model_dir):
    """The run record's fingerprint of the 8 training questions, and the 2 tuning questions ``tune`` found in it."""
    _, body = front_matter(model_dir)
    assert load_run_record(model_dir)["training_questions"]["questions"] == 8
    assert ("Its run record keeps a fingerprint of the 8 questions it was trained on in every stage (`training_questions`: a "
            "64-bit hash of each question's text and context), which `tune` and `compare` read to keep them out of tuning "
            "and evaluation.") in body
    config = BioMrcConfig.from_pretrained(str(model_dir))
    for known, shown in ((2, "; 2 of them"), (0, "; none of them")):
        tuned_on = {"description": "dev.json", "questions": 5, "content_hash": "abc", "training_questions": known}
        assert save_tuned_settings(model_dir, config, {"span": -1.25}, {"bio_length_prior": 2.25}, tuned_on)
        _, body = front_matter(model_dir)
        assert (f"Tuned on `dev.json` (5 questions, content hash `abc`{shown} among the training questions of the model tuned, "
                "by its run record's fingerprint); saved in config.json") in body


def test_a_card_without_the_fingerprint_or_the_count_says_neither():
    config = {"heads": "bio", "bio_length_prior": 1.5, "tuned_on": {"description": "d", "questions": 5, "content_hash": "abc"}}
    text = model_card.render_model_card(config, {"n_examples": 3, "train": {"encoder": "default"}}, None, "m")
    assert "fingerprint" not in text and "(5 questions, content hash `abc`);" in text


@pytest.fixture(scope="module")
def comparison(tiny_encoder_dir, tmp_path_factory):
    normans = {"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": 0, "seed": 0}}
    raw = {
        "name": "card", "train": {**normans, "limit": 3}, "tune": {**normans, "skip": 3},
        "eval": {"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": 1, "seed": 0}},
        "defaults": {"encoder": str(tiny_encoder_dir), "max_seq_length": 48, "doc_stride": 16, "max_query_length": 12,
                     "epochs": 2, "batch_size": 4, "learning_rate": 1e-3},
        "runs": [{"name": "joint", "heads": "span+bio"}], "seeds": [1],
    }
    out = tmp_path_factory.mktemp("card-compare")
    results = run_comparison(parse_config(raw), FIXTURES, out)  # its cells and the models' cards; no report
    return results, out / "models" / results.cells[0].model_dir.rsplit("/", 1)[-1]


def test_a_comparison_records_each_decodings_scores_in_the_card(comparison):
    results, folder = comparison
    meta, body = front_matter(folder)
    record = json.loads((folder / model_card.EVAL_FILE).read_text())
    (entry,) = record["evaluations"]
    assert entry["evaluated_on"]["description"] == results.eval["description"]
    assert entry["evaluated_on"]["questions"] == len(results.eval_examples)
    assert record["trained_on"]["questions"] == load_run_record(folder)["n_examples"] == 3
    found = metrics(meta)
    for cell in results.cells:
        scores = entry["results"][cell.decoding]
        assert scores["exact_match"] == pytest.approx(sum(cell.em) / len(cell.em), abs=1e-4)
        assert scores["f1"] == pytest.approx(sum(cell.f1) / len(cell.f1), abs=1e-4)
        assert found[("exact_match", cell.decoding)] == scores["exact_match"]
        assert found[("f1", cell.decoding)] == scores["f1"]
        assert f"| `{cell.decoding}` | {scores['exact_match']:.2f} | {scores['f1']:.2f} |" in body
    saved = json.loads((folder / "config.json").read_text())  # the β the comparison tuned and saved
    assert found[("bio_length_prior", None)] == saved["bio_length_prior"] == entry["results"]["bio"]["bio_length_prior"]
    assert model_card.public(saved["tuned_on"]["description"]) in body


def test_a_model_continued_from_a_local_folder_names_no_encoder_it_did_not_train(tmp_path):
    """--init-from a local model trains that model's encoder: the record's encoder (the default, unread) was carded as
    the base model and the encoder (a tiny BERT continued was published as all-MiniLM-L6-v2)."""
    (tmp_path / "first").mkdir()
    config = {"heads": "span", "max_seq_length": 32, "doc_stride": 4, "max_query_length": 6}
    record = {"train": {"encoder": "default", "init_from": str(tmp_path / "first")}, "n_examples": 10, "n_windows": 18}
    assert "base_model" not in model_card.card_metadata(config, record, None, "m").to_dict()
    assert "| encoder | that of `.../" + f"{tmp_path.name}/first` |" in model_card.render_model_card(config, record, None, "m")
    assert model_card._base_model({"encoder": "default", "init_from": "me/squad-reader"}) == "me/squad-reader"  # a hub id


def test_hub_dataset_ids_and_base_model_come_from_the_records():
    config = {"heads": "span", "max_seq_length": 256, "doc_stride": 96, "max_query_length": 64}
    record = {"train": {"encoder": "default", "init_from": None}, "n_examples": 3000, "n_windows": 3100}
    evaluation = {"trained_on": {"description": "squad-v1.1/train.json (first 3000 questions)", "questions": 3000},
                  "evaluations": [{"evaluated_on": {"description": "squad-v2.0/dev.json (first 10 questions)",
                                                    "questions": 10, "version": "2.0"},
                                   "results": {"span": {"exact_match": 50.0, "f1": 61.5, "threshold": float("-inf")}}}]}
    meta = model_card.card_metadata(config, record, evaluation, "m").to_dict()
    assert meta["datasets"] == ["rajpurkar/squad"] and meta["base_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    result = meta["model-index"][0]["results"][0]
    assert result["dataset"]["type"] == "rajpurkar/squad_v2"
    assert result["metrics"][0]["args"] == {"threshold": "always abstain (-inf)"}
    assert model_card._base_model({"encoder": "google-bert/bert-base-uncased"}) == "google-bert/bert-base-uncased"
    snapshot = "/cache/huggingface/hub/models--google-bert--bert-base-uncased/snapshots/abc"
    assert model_card._base_model({"encoder": "google-bert/bert-base-uncased"}, snapshot) == "google-bert/bert-base-uncased"
    # a relative encoder folder, read as a folder when trained, is none from a working folder that lacks it
    assert not Path("encoders/tiny").exists()
    assert model_card._base_model({"encoder": "encoders/tiny", "init_from": None}, "encoders/tiny") is None
    assert model_card._hub_dataset(str(SAMPLE_V1)) is None  # a file in SQuAD's format is not SQuAD


def test_a_folder_without_a_card_still_loads_and_runs(model_dir):
    (model_dir / "README.md").unlink()  # as saved by an older bio_mrc
    result = AnswerExtractor.from_pretrained(model_dir)("Which countries did the Norse come from?", CONTEXT)
    assert result.spans and CONTEXT[result.spans[0].start: result.spans[0].end] == result.spans[0].text
    assert model_card.write_model_card(model_dir) == model_dir / "README.md"  # and gets one when asked


def test_a_hand_written_card_is_kept_and_a_replaced_models_scores_go(model_dir):
    (model_dir / model_card.EVAL_FILE).write_text("{}")
    model_card.clear_model_card(model_dir)  # training over the folder: the old model's card and scores go
    assert not (model_dir / "README.md").exists() and not (model_dir / model_card.EVAL_FILE).exists()
    (model_dir / "README.md").write_text("# my own card\n")
    with pytest.warns(model_card.ForeignCardWarning, match="not written by bio_mrc"):
        assert model_card.write_model_card(model_dir) is None
    model_card.clear_model_card(model_dir)
    assert (model_dir / "README.md").read_text() == "# my own card\n"


def test_the_card_names_what_the_lower_layers_define():
    assert model_card.RUN_RECORD_FILE == RUN_FILE
    assert all(model_card.decodings_of(heads) == available_decodings(heads) for heads in head_choices())


def test_model_index_shows_one_evaluation_per_set_of_questions():
    def entry(tune, questions_hash, f1):
        return {"evaluated_on": {"description": "squad-v1.1/dev.json (first 10 questions)", "questions": 10,
                                 "question_hash": questions_hash, "version": "1.1"},
                "tuned_on": {"description": tune, "questions": 5}, "results": {"bio": {"exact_match": 1.0, "f1": f1}}}

    config = {"heads": "bio", "tuned_on": {"description": "tune-a", "questions": 5}, "bio_length_prior": 1.5}
    evaluation = {"evaluations": [entry("tune-a", "h1", 10.0), entry("tune-b", "h1", 20.0), entry("tune-b", "h2", 30.0)]}
    results = model_card.card_metadata(config, None, evaluation, "m").to_dict()["model-index"][0]["results"]
    f1 = {r["dataset"]["split"]: [m["value"] for m in r["metrics"] if m["type"] == "f1"] for r in results}
    # the evaluation decoded with the saved settings (tuned on tune-a) stands for h1; h2 has its own entry
    assert f1 == {"validation (10 questions, h1)": [10.0], "validation (10 questions, h2)": [30.0],
                  "tune-a (5 questions, None)": []}
    body = model_card.render_model_card(config, None, evaluation, "m")
    assert body.count("| `bio` | 1.00 |") == 3  # the body keeps every evaluation


def test_retraining_a_folder_drops_the_old_models_scores(model_dir, sample_v1, tiny_encoder_dir):
    model_card.record_evaluation(model_dir, [{"decoding": "span", "em": [100.0], "f1": [100.0]}],
                                 {"eval": {"description": "old.json", "questions": 1, "question_hash": "x"}})
    assert "100.00" in (model_dir / "README.md").read_text()
    config = TrainConfig.from_record(load_run_record(model_dir)["train"])
    train_model(sample_v1.examples, config, model_dir, save_checkpoints=False, overwrite=True)
    assert not (model_dir / model_card.EVAL_FILE).exists()
    assert "No evaluation recorded yet" in (model_dir / "README.md").read_text()


def test_the_card_shows_what_an_older_record_leaves_out():
    record = {"train": {"heads": "span+bio"}, "n_examples": 10, "n_windows": 12, "seconds": 9.0, "final_loss": 1.0, "finished": "then"}
    older = model_card.render_model_card({"heads": "span+bio"}, record, None, "m")
    assert '| `tag_mentions` | `"annotated"` |' in older  # saved before the option existed: taught the marked spans
    newer = model_card.render_model_card({"heads": "span+bio"}, {**record, "train": {"tag_mentions": "every"}}, None, "m")
    assert '| `tag_mentions` | `"every"` |' in newer


def test_the_card_says_whose_sittings_the_training_time_covers():
    config = {"heads": "span+bio"}
    base = {"train": {}, "n_examples": 10, "n_windows": 12, "seconds": 95.0, "final_loss": 1.0, "finished": "then"}
    records = {"one sitting": {**base, "resumed_from": None, "earlier_seconds": 0.0},
               "every sitting's": {**base, "resumed_from": "checkpoint-5", "earlier_seconds": 40.0},
               "last sitting's": {**base, "resumed_from": "checkpoint-5"}}  # an older record: no earlier_seconds
    text = {name: model_card.render_model_card(config, record, None, "m") for name, record in records.items()}
    assert "in 95 s; final training loss" in text["one sitting"]
    assert "in 95 s (every sitting's); final" in text["every sitting's"]
    assert "in 95 s (its last sitting's); final" in text["last sitting's"]
    assert [model_card.training_time_is_partial(r) for r in records.values()] == [False, False, True]
    assert "final training loss 1.0000; finished" in text["one sitting"]
    assert "final training loss 1.0000 (the mean of its last sitting's steps); finished" in text["every sitting's"]
    nothing_left = {**records["every sitting's"], "final_loss": None}  # resumed at its last step: no step trained
    assert "; training loss not measured (its last sitting" in model_card.render_model_card(config, nothing_left, None, "m")


@pytest.mark.parametrize("heads", ["span", "bio", "span+bio"])
def test_the_card_reads_the_config_as_the_model_does(heads, tmp_path):
    """Span-only, BIO-only and joint: the card and the summary follow BioMrcConfig, its defaults included."""
    saved = BioMrcConfig(heads=heads, max_seq_length=64, doc_stride=24, max_query_length=16,
                         encoder={"model_type": "bert", "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
                                  "intermediate_size": 16, "_name_or_path": "enc/tiny"})
    saved.save_pretrained(tmp_path)
    summary = model_card.card_summary(tmp_path)
    assert summary["heads"] == heads and summary["decodings"] == available_decodings(heads)
    assert summary["windows"] == {"max_seq_length": 64, "doc_stride": 24, "max_query_length": 16}
    assert summary["encoder"] == "enc/tiny" and summary["bio_mrc_format"] == saved.bio_mrc_format
    body = (tmp_path / "README.md").read_text() if model_card.write_model_card(tmp_path) else ""
    assert f"| heads | `{heads}` |" in body and "`max_seq_length` 64, `doc_stride` 24, `max_query_length` 16" in body
    tagging = "bio" in heads.split("+")
    assert ("| BIO tag level | `word`: the first piece of each word |" in body) == tagging
    assert ("bio-tagging" in body.split("---")[1]) == tagging
    decoding = "--decoding " + {"span": "span", "bio": "bio", "span+bio": "joint"}[heads]
    assert decoding in body
    assert ("the BIO span-length prior β is 0" in body) == tagging  # untuned: the prior applies to BIO decodings only


def test_a_config_that_leaves_a_field_out_has_the_models_default():
    defaults = BioMrcConfig()
    text = model_card.render_model_card({}, None, None, "m")  # config.json without heads, tag level or format
    assert f"| heads | `{defaults.heads}` |" in text and f"| bio_mrc model format | {defaults.bio_mrc_format} |" in text
    assert model_card.model_config({}).heads == defaults.heads and model_card.model_config(defaults) is defaults


@pytest.mark.slow
def test_a_push_to_the_hub_uploads_the_finished_folder_with_its_card(tiny_encoder_dir, sample_v1, tmp_path, monkeypatch):
    import huggingface_hub
    import transformers.trainer

    uploads = []

    class Hub:  # the hub, never reached: what would be uploaded is read as the upload starts
        def create_repo(self, name, **kwargs):
            return type("Repo", (), {"repo_id": name})()

        def upload_folder(self, folder_path=None, repo_id=None, **kwargs):
            files = {path.name: path.read_text(encoding="utf-8", errors="replace") for path in Path(folder_path).iterdir()
                     if path.is_file()}
            uploads.append((repo_id, Path(folder_path), files))

    monkeypatch.setattr(transformers.trainer, "hf_api", Hub)
    monkeypatch.setattr(huggingface_hub, "HfApi", Hub)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_x")  # a logged-in user
    hub_answering(monkeypatch, 200)
    config = TrainConfig(encoder=str(tiny_encoder_dir), heads="span+bio", max_seq_length=48, doc_stride=16,
                         max_query_length=12, epochs=1, batch_size=4, seed=1)
    out = tmp_path / "model"
    train_model(sample_v1.examples, config, out, save_checkpoints=False, network_args={"push_to_hub": True, "hub_model_id": "me/m"})
    assert [(repo, folder) for repo, folder, _ in uploads] == [("me/m", out)]  # the model folder, once, when finished
    files = uploads[0][2]
    assert {"README.md", RUN_FILE, "config.json", "model.safetensors", "tokenizer.json"} <= set(files)
    assert ModelCard(files["README.md"]).data.library_name == "bio_mrc"
    assert not (out / "checkpoints").exists()


def test_a_card_names_local_paths_by_their_last_two_parts(tmp_path):
    home = "/home/alice/private"
    record = {"n_examples": 3, "n_windows": 3, "seconds": 1.0, "final_loss": 1.0, "finished": "now",
              "resumed_from": f"{home}/out/checkpoints/checkpoint-5",
              "train": {"encoder": f"{home}/encoders/tiny", "init_from": f"{home}/models/first"}}
    evaluation = {"trained_on": {"description": f"{home}/squad-v1.1/train.json (first 3 questions)", "questions": 3},
                  "evaluations": [{"evaluated_on": {"description": f"{home}/squad-v1.1/dev.json", "questions": 2,
                                                    "question_hash": "h"}, "results": {"bio": {"exact_match": 50.0, "f1": 75.0}}}]}
    config = {"heads": "bio", "bio_length_prior": 1.5,
              "tuned_on": {"description": f"{home}/held out/tune.json", "questions": 2, "for_model": f"{home}/models/first"}}
    text = model_card.render_model_card(config, record, evaluation, "m")
    assert "alice" not in text and "/home" not in text
    assert "| `encoder` | `\".../encoders/tiny\"` |" in text and "resumed from `.../checkpoints/checkpoint-5`" in text
    assert "### `.../squad-v1.1/dev.json`" in text and "`.../models/first`" in text
    assert ModelCard(text).data.datasets == ["rajpurkar/squad"]  # the hub's dataset is still recognised


def test_a_data_set_name_with_markup_stays_inside_its_code_span():
    hostile = "dev`s.json\n## Evaluation\n| `span` | 100.00 |\n<script>alert(1)</script>"
    evaluation = {"trained_on": {"description": hostile, "questions": 3},
                  "evaluations": [{"evaluated_on": {"description": hostile, "questions": 2, "question_hash": "h"},
                                   "tuned_on": {"description": hostile, "questions": 2},
                                   "results": {"bio": {"exact_match": 50.0, "f1": 75.0}}}]}
    config = {"heads": "bio", "bio_length_prior": 1.5, "tuned_on": {"description": hostile, "questions": 2, "content_hash": "c"}}
    text = model_card.render_model_card(config, {"n_examples": 3, "train": {"encoder": "default"}}, evaluation, "m")
    shown = "``dev`s.json\\n## Evaluation\\n| `span` | 100.00 |\\n<script>alert(1)</script>``"
    assert f"### {shown}\n" in text and f"Tuned on {shown} (2 questions" in text and f"Training questions: {shown} (3" in text
    assert text.count("\n## Evaluation") == 1 and "\n| `span` | 100.00 |" not in text
    card = ModelCard(text)
    assert card.data.eval_results[0].dataset_name == hostile  # the metadata keeps the name as it is


def test_a_data_set_or_source_name_with_terminal_controls_is_written_as_python_writes_them():
    """``cat README.md`` prints the card: a file or folder name in its text cannot clear, retitle or link the terminal."""
    hostile = "dev\x1b[2J\x1b]8;;http:evil\x07\u202egnp.json"
    shown = "`dev\\x1b[2J\\x1b]8;;http:evil\\x07\\u202egnp.json`"
    config = {"heads": "bio", "bio_length_prior": 1.5, "tuned_on": {"description": hostile, "questions": 2, "content_hash": "c"}}
    text = model_card.render_model_card(config, {"n_examples": 3, "train": {"encoder": hostile}}, None, "m")
    assert f"Tuned on {shown} (2 questions" in text and f"| encoder | {shown} |" in text
    assert ModelCard(text).data.eval_results[0].dataset_name == hostile + " (tuning questions)"  # the metadata keeps it
    exported = model_card.render_exported_card(model_card.model_config({"heads": "span"}), None, "BertForQuestionAnswering",
                                               [], "out", hostile)
    assert f"exported from the `bio_mrc` model {shown}:" in exported
    assert not any(char in body for body in (text.split("\n---\n", 1)[1], exported) for char in "\x1b\x07\u202e")


def test_a_pipe_or_a_backtick_in_an_encoder_name_or_a_training_option_keeps_its_table_cell():
    record = {"n_examples": 3, "train": {"encoder": "encoders/my|tiny`v2", "training_args": {"run_name": "a | b"}}}
    text = model_card.render_model_card({"heads": "span"}, record, None, "m")
    # A table ends a cell at every unescaped "|", also inside inline code: before, the encoder's cell showed
    # "`encoders/my" and the rest of the row was dropped.
    assert "\n| encoder | ``encoders/my\\|tiny`v2`` |\n" in text
    assert '\n| `encoder` | ``"encoders/my\\|tiny`v2"`` |\n' in text
    assert '\n| `training_args` | `{"run_name": "a \\| b"}` |\n' in text
    assert all(line.replace("\\|", "").count("|") == 3 for line in text.splitlines() if line.startswith("| "))


def test_a_folder_name_with_markup_quotes_or_controls_shows_as_it_is_and_runs_nothing():
    """A folder's name goes into the card's heading, its Python snippet and its command line: a line break, markup,
    a quote or a shell separator in it could start a section of its own, end the string or run a second command."""
    import ast
    import shlex

    name = 'x"; import os #\n## Fake `[a](b)` \x9b2J; rm -rf ~'
    body = model_card.render_model_card({"heads": "span+bio"}, None, None, name)
    assert body.splitlines()[body.splitlines().index("---", 1) + 2] == (
        '# x"; import os \\#\\\\n\\#\\# Fake \\`\\[a\\](b)\\` \\\\x9b2J; rm -rf \\~')
    assert "\n## Fake" not in body and "\x9b" not in body
    snippet = body.split("```python\n")[1].split("```")[0]
    assert ast.literal_eval(snippet.split("model_dir = ")[1].split("  #")[0]) == name
    command = body.split("```bash\n")[1].splitlines()[0]
    assert shlex.split(command)[:4] == ["bio-mrc", "predict", "--model", 'x"; import os #\\n## Fake `[a](b)` \\x9b2J; rm -rf ~']


def test_a_path_the_locale_could_not_decode_is_shown_escaped_in_the_card(tmp_path):
    """Under LC_ALL=C the data's path ``données`` reaches Python as ``donn\\udcc3\\udca9es``: the card, a UTF-8 file,
    shows those two as escapes instead of ending the save in a UnicodeEncodeError."""
    card = model_card._write_card(tmp_path, "Tuned on `donn\udcc3\udca9es.json`\n")
    assert card.read_bytes() == b"Tuned on `donn\\udcc3\\udca9es.json`\n"


def test_the_cards_usage_snippet_runs_as_written(model_dir, monkeypatch, capsys):
    import ast
    import re

    card = (model_dir / "README.md").read_text(encoding="utf-8")
    snippet = re.search(r"## Usage\n\n```python\n(.*?)```", card, re.S)
    assert snippet, "the card lost its Python usage snippet"
    monkeypatch.chdir(model_dir.parent)  # the snippet names the folder by its own name
    exec(compile(snippet.group(1), "card usage", "exec"), {})  # noqa: S102
    spans = ast.literal_eval(capsys.readouterr().out.strip())  # [(text, start, end, score), ...] of the card's context
    assert spans and all(text == CONTEXT[start:end] and math.isfinite(score) for text, start, end, score in spans)


def test_a_copied_tuning_record_cannot_break_the_card_out_of_its_line():
    """``train --init-from`` carries the first model's ``tuned_on`` over as it is: its count and hash stay on their line."""
    hostile = "3\n\n| fake | row |\n|---|---|\n<img src=x onerror=alert(1)>\x1b[2J"
    config = {"heads": "bio", "bio_length_prior": 1.5, "no_answer_thresholds": {"bio\n# Pwned": 0.5},
              "min_span_probabilities": {"bio\n| fake | row |": 0.25},
              "tuned_on": {"description": "dev.json", "questions": hostile, "content_hash": "c`\n# Pwned", "for_model": "first"}}
    evaluation = {"trained_on": {"description": "train.json", "questions": hostile, "question_hash": "h\n# Pwned"},
                  "evaluations": [{"evaluated_on": {"description": "dev.json", "questions": hostile, "question_hash": "h"},
                                   "tuned_on": {"description": "dev.json", "questions": hostile},
                                   "results": {"bio": {"exact_match": 50.0, "f1": 75.0}}}]}
    text = model_card.render_model_card(config, {"n_examples": 3, "train": {"encoder": "default"}}, evaluation, "m")
    shown = "`3\\n\\n| fake | row |\\n|---|---|\\n<img src=x onerror=alert(1)>\\x1b[2J`"
    assert f"Tuned on `dev.json` ({shown} questions, content hash ``c`\\n# Pwned``)" in text
    assert f"Training questions: `train.json` ({shown} questions, hash `h\\n# Pwned`)." in text
    assert text.count(f"{shown} questions") == 4
    assert "| no-answer threshold `bio\\n# Pwned` | 0.5000 |" in text and "| multi-span answers, `bio\\n\\| fake \\| row \\|`: " in text
    lines = text.splitlines()
    assert "# Pwned" not in lines and "| fake | row |" not in lines and "\x1b" not in text
    assert model_card.render_model_card({**config, "tuned_on": {"description": "d", "questions": 5, "content_hash": "abc"}},
                                        None, None, "m").count("(5 questions, content hash `abc`)") == 1


def test_the_card_shows_the_class_weights_a_bio_only_model_trained_with():
    """A BIO-only model left at the default class weights trains with (10, 10, 1), which its config.json holds; its run
    record keeps the option as given (none), and the card shows the weights the model trained with."""
    record = {"train": {"heads": "bio", "bio_class_weights": None}, "n_examples": 2, "n_windows": 2, "seconds": 1.0,
              "final_loss": 1.0, "finished": "then"}
    bio_only = model_card.render_model_card({"heads": "bio", "bio_class_weights": [10.0, 10.0, 1.0]}, record, None, "m")
    assert "| `bio_class_weights` | `[10.0, 10.0, 1.0]` (a BIO-only model's default) |" in bio_only
    joint = {**record, "train": {"heads": "span+bio", "bio_class_weights": None}}
    assert "| `bio_class_weights` | `null` |" in model_card.render_model_card({"heads": "span+bio"}, joint, None, "m")


@pytest.mark.parametrize("saved, shown", [
    ({"word_units": "punctuation"}, "| BIO words | `punctuation`: the tokenizer's words, a piece of punctuation alone a word of its own (`Paris` `.`) |"),
    ({"word_units": "tokenizer"}, "| BIO words | `tokenizer`: the tokenizer's own words (sentencepiece's keep punctuation beside letters: `Paris.`) |"),
    ({}, "| BIO words | `tokenizer`: the tokenizer's own words (sentencepiece's keep punctuation beside letters: `Paris.`) |"),
])
def test_the_card_names_the_words_a_word_level_tagger_tags(saved, shown):
    """A config without word_units is a model trained on the tokenizer's words, as the model reads it."""
    text = model_card.render_model_card({"heads": "span+bio", **saved}, None, None, "m")
    assert shown in text.splitlines()
    no_words = [model_card.render_model_card({"heads": heads, "tag_level": level, **saved}, None, None, "m")
                for heads, level in (("span", "word"), ("span+bio", "subword"))]
    assert not any("| BIO words |" in text for text in no_words)  # no word-level tagger: no words to name


def test_the_summary_names_the_words_the_tagger_tags(tmp_path):
    BioMrcConfig(heads="span+bio", word_units="punctuation").save_pretrained(tmp_path)
    assert model_card.card_summary(tmp_path)["word_units"] == "punctuation"
    raw = json.loads((tmp_path / "config.json").read_text())
    del raw["word_units"]
    (tmp_path / "config.json").write_text(json.dumps(raw))
    assert model_card.card_summary(tmp_path)["word_units"] == "tokenizer"


def test_the_card_names_each_stages_data_and_the_steps_it_trained(tiny_encoder_dir, sample_v1, tmp_path):
    """A model trained from a file, then continued (``init_from``) on another: its run record and card name both
    stages' files and question counts, the model continued, and the optimizer steps each run took (max_steps stops a
    run before its epochs), and the hub metadata lists the data sets it learned from."""
    config = TrainConfig(encoder=str(tiny_encoder_dir), heads="span+bio", max_seq_length=48, doc_stride=16,
                         max_query_length=12, epochs=2, batch_size=4, seed=1, training_args={"max_steps": 1})
    first = train_model(sample_v1.examples, config, tmp_path / "first", save_checkpoints=False,
                        data_name="data/squad-v1.1/train.json").model_dir
    record = load_run_record(first)
    assert record["training_data"] == [{"data": "data/squad-v1.1/train.json", "questions": 8, "continued_from": None}]
    assert (record["n_windows"], record["steps"], record["epochs_trained"]) == (12, 1, 0.3333)  # 3 batches of 4 an epoch
    meta, body = front_matter(first)
    assert meta["datasets"] == ["rajpurkar/squad"]
    assert "Trained on 8 questions (12 windows) for 1 optimizer step (0.3333 of the 2 epochs asked) in " in body
    assert "Training data: `data/squad-v1.1/train.json` (8 questions)." in body
    continued = replace(config, encoder="default", init_from=str(first), training_args={})
    second = train_model(sample_v1.examples[:4], continued, tmp_path / "second", save_checkpoints=False,
                         data_name="data/squad-v2.0/dev.json (first 4 questions)").model_dir
    record = load_run_record(second)
    assert [stage["data"] for stage in record["training_data"]] == ["data/squad-v1.1/train.json", "data/squad-v2.0/dev.json (first 4 questions)"]
    assert record["training_data"][1]["continued_from"] == str(first)
    assert (record["n_windows"], record["steps"], record["epochs_trained"]) == (5, 4, 2.0)  # 2 batches an epoch
    meta, body = front_matter(second)
    assert meta["datasets"] == ["rajpurkar/squad", "rajpurkar/squad_v2"]
    assert ("Training data, stage by stage: 1. `data/squad-v1.1/train.json` (8 questions); 2. "
            f"`data/squad-v2.0/dev.json (first 4 questions)` (4 questions), continuing `.../{tmp_path.name}/first`.") in body
    assert ModelCard.load(second / "README.md").data.datasets == ["rajpurkar/squad", "rajpurkar/squad_v2"]


def test_train_limit_names_its_file_as_compare_and_tune_do(tiny_encoder_dir, tmp_path, capsys):
    """``train --limit 4`` recorded its file as ``FILE`` and the card read "4 questions of FILE", where ``compare`` and
    ``tune`` name the same questions ``FILE (first 4 questions)``: the run record and the card now do too."""
    from bio_mrc.cli import main
    from bio_mrc.harness.config import DataSpec

    out = tmp_path / "m"
    code = main(["train", "--train", str(SAMPLE_V1), "--limit", "4", "--output-dir", str(out), "--encoder", str(tiny_encoder_dir),
                 "--epochs", "1", "--batch-size", "4", "--max-seq-length", "48", "--doc-stride", "16", "--max-query-length", "12"])
    assert code == 0, capsys.readouterr().err
    named = f"{SAMPLE_V1} (first 4 questions)"
    assert named == DataSpec(str(SAMPLE_V1), limit=4).describe()
    assert load_run_record(out)["training_data"] == [{"data": named, "questions": 4, "continued_from": None}]
    _, body = front_matter(out)
    assert "Training data: `.../fixtures/sample_squad_v1.json (first 4 questions)` (4 questions)." in body


def test_the_card_shows_the_calibrators_tune_fitted_and_where(model_dir):
    """``tune`` fits each decoding a calibrator (the probability an answer is right): the card named none of them, and
    with no prior or threshold it said nothing was tuned; a threshold's rule is said only where a threshold is set."""
    config = BioMrcConfig.from_pretrained(str(model_dir))
    calibrator = {"method": "beta", "a": 0.5, "b": 1.25, "c": -2.0, "correct_if": "f1 > 0.5", "questions": 150}
    tuned_on = {"description": "dev.json (first 150 questions)", "questions": 150, "content_hash": "abc"}
    assert save_tuned_settings(model_dir, config, {}, {"calibration": {"span": calibrator}}, tuned_on)
    _, body = front_matter(model_dir)
    tuned = body.split("## Tuned settings")[1].split("## Usage")[0]
    assert "Tuned on `dev.json (first 150 questions)` (150 questions, content hash `abc`)" in tuned and "None:" not in tuned
    assert ("| calibrator `span`: P(answer right, `f1 > 0.5`) | `beta`: a 0.5, b 1.25, c -2, fitted on 150 questions |"
            in tuned)
    assert "no-answer score exceeds the threshold" not in tuned


def test_the_card_says_which_calibrators_tune_found_degenerate_as_long_as_none_replaces_them(model_dir):
    """The tune record (``tuned_on``) keeps each decoding whose calibrator was not fitted and why, and the card says so
    (it listed the fitted ones alone, or "None" where none was): kept by a tuning on the same questions of other
    decodings, gone once that decoding's calibrator is fitted, or once another set of questions is tuned on."""
    from bio_mrc.inference.tuning import TunedSettings
    from bio_mrc.decoding.postprocess import DecodeConfig

    def tune(questions, fitted, skipped):
        tuned = TunedSettings(DecodeConfig(), calibration=fitted, skipped_calibrators=skipped)
        tuned_on = {"description": f"{questions}.json", "questions": 150, "content_hash": questions,
                    "calibrators_not_fitted": skipped}
        assert save_tuned_settings(model_dir, BioMrcConfig.from_pretrained(str(model_dir)), {}, tuned.settings, tuned_on)
        config = BioMrcConfig.from_pretrained(str(model_dir))
        tuned_rows = front_matter(model_dir)[1].split("## Tuned settings")[1].split("## Usage")[0]
        return (config.tuned_on.get("calibrators_not_fitted"), sorted(config.calibration or {}),
                [line for line in tuned_rows.splitlines() if line.startswith("| calibrator")])

    calibrator = {"method": "beta", "a": 0.5, "b": 1.25, "c": -2.0, "correct_if": "f1 > 0.5", "questions": 150}
    flat = "constant output 0.4: every answer would get the same probability"
    assert tune("dev", {}, {"span": flat, "bio": "<b>|"}) == ({"bio": "<b>|", "span": flat}, [], [
        "| calibrator `bio` | not fitted: degenerate (`<b>\\|`) |",
        f"| calibrator `span` | not fitted: degenerate (`{flat}`) |"])
    assert tune("dev", {"span": calibrator}, {}) == ({"bio": "<b>|"}, ["span"], [
        "| calibrator `bio` | not fitted: degenerate (`<b>\\|`) |",
        "| calibrator `span`: P(answer right, `f1 > 0.5`) | `beta`: a 0.5, b 1.25, c -2, fitted on 150 questions |"])
    assert tune("test", {"joint": calibrator}, {}) == (None, ["joint"], [
        "| calibrator `joint`: P(answer right, `f1 > 0.5`) | `beta`: a 0.5, b 1.25, c -2, fitted on 150 questions |"])


def test_the_card_shows_the_scores_taken_during_training_and_the_versions_trained_with(tiny_encoder_dir, sample_v1, tmp_path):
    """Held-out questions scored during training (``--eval``) were in training_log.json alone: the card said no
    evaluation was recorded. The run record keeps the scores of the model saved, the step and file they came from, and
    the versions of the packages it was trained with; the card shows them."""
    import torch
    import transformers

    from bio_mrc import __version__
    from bio_mrc.inference import TrainingEvaluator
    from bio_mrc.training.train import load_training_log

    config = TrainConfig(encoder=str(tiny_encoder_dir), heads="span", max_seq_length=48, doc_stride=16, max_query_length=16,
                         epochs=1, batch_size=4, seed=1, training_args={"eval_strategy": "steps", "eval_steps": 2})
    from bio_mrc.training.run_start import SharedHeldOutWarning

    evaluator = TrainingEvaluator(sample_v1.examples[:4], data_name="data/held-out.json")
    with pytest.warns(SharedHeldOutWarning):  # scored on questions it trains on: the card's figures, not a model's merit
        folder = train_model(sample_v1.examples, config, tmp_path / "m", save_checkpoints=False, evaluator=evaluator).model_dir
    record, log = load_run_record(folder), load_training_log(folder)
    last = [entry for entry in log if "eval_span_f1" in entry][-1]
    assert record["steps"] == last["step"] == 3  # 12 windows in batches of 4; scored at step 2 and at the end
    assert record["evaluated_during_training"] == {"data": "data/held-out.json", "questions": 4, "step": 3,
                                                   "scores": {"span_exact": last["eval_span_exact"], "span_f1": last["eval_span_f1"]}}
    assert record["versions"] == {"bio_mrc": __version__, "transformers": transformers.__version__, "torch": torch.__version__}
    _, body = front_matter(folder)
    evaluation = body.split("## Evaluation")[1].split("## Tuned settings")[0]
    assert "No evaluation recorded yet" not in evaluation
    assert "Scored during training on `data/held-out.json` (4 questions) at optimizer step 3 of 3:" in evaluation
    assert f"| `span_f1` | {last['eval_span_f1']:.2f} |" in evaluation
    assert f"Trained with bio_mrc {__version__}, transformers {transformers.__version__}, torch {torch.__version__}." in body


def test_a_run_records_stages_scores_and_versions_of_another_kind_are_refused_in_one_line():
    from bio_mrc.model_records import record_problem

    assert record_problem(RUN_FILE, {"training_data": [{"data": 5}]}) == 'training_data.0.data: 5 is not of type "string", "null"'
    assert record_problem(RUN_FILE, {"evaluated_during_training": {"scores": {"f1": "high"}}}).startswith("evaluated_during_training.scores.f1:")
    assert record_problem(RUN_FILE, {"versions": {"torch": "<b>2</b>"}}).startswith('versions.torch: "<b>2</b>" is not letters')
    assert record_problem(RUN_FILE, {"steps": -1, "epochs_trained": 0.5}).startswith("steps: -1")
    assert record_problem(RUN_FILE, {"training_data": [{"data": "a.json", "questions": 3, "continued_from": None}], "steps": 2,
                                     "epochs_trained": 0.5, "versions": {"torch": "2.13.0+cpu"}}) is None


def test_an_exported_transformers_models_card_lists_the_data_sets_of_every_stage():
    config = {"heads": "span", "max_seq_length": 64, "doc_stride": 16, "max_query_length": 16}
    record = {"train": {"encoder": "default", "init_from": None}, "training_data": [
        {"data": "data/squad-v1.1/train.json", "questions": 30, "continued_from": None},
        {"data": "data/squad-v2.0/dev.json", "questions": 20, "continued_from": "first"}]}
    text = model_card.render_exported_card(model_card.model_config(config), record, "BertForQuestionAnswering", [], "out", "model")
    assert yaml.safe_load(text.split("---\n")[1])["datasets"] == ["rajpurkar/squad", "rajpurkar/squad_v2"]
    assert model_card.card_metadata(config, {"train": {}}, None, "m").datasets is None  # a record that names no file



@pytest.mark.parametrize("model_type", ["roberta", "xlm-roberta", "albert", "deberta-v2"])
def test_the_card_names_the_encoders_family_and_no_first_token_of_another(model_type):
    """A model trained from a local encoder folder is carded by the folder's last two parts alone: the card names the
    family from the encoder's config, and says where the no-answer score is read without naming BERT's [CLS] alone,
    as a RoBERTa or XLM-R window starts with <s>."""
    encoder = {"model_type": model_type, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
               "intermediate_size": 16, "_name_or_path": "/tmp/encoders/mine"}
    config = BioMrcConfig(heads="span+bio", encoder=encoder)
    text = model_card.render_model_card(config, {"n_examples": 3, "train": {"encoder": "/tmp/encoders/mine"}}, None, "m")
    assert "| encoder | `.../encoders/mine` |" in text and f"| encoder family | `{model_type}` |" in text
    intro = text.split("## Model", 1)[1].split("|", 1)[0]
    assert "a no-answer score from the window's first token, `[CLS]` or `<s>`" in intro  # code: the hub reads <s> as HTML
    assert "from [CLS]" not in intro


def test_the_card_says_the_precision_and_device_the_tuned_settings_were_scored_in():
    """A tune record naming them says both in one phrase; one written before without them renders as it did."""
    record = {"description": "d", "questions": 5, "content_hash": "abc"}
    run = {"n_examples": 3, "train": {"encoder": "default"}}
    old = model_card.render_model_card({"heads": "bio", "bio_length_prior": 1.5, "tuned_on": record}, run, None, "m")
    assert "Tuned on `d` (5 questions, content hash `abc`); saved in config.json" in old and "computed in" not in old
    new = model_card.render_model_card({"heads": "bio", "bio_length_prior": 1.5,
                                        "tuned_on": {**record, "precision": "bf16", "device": "cpu"}}, run, None, "m")
    assert "Tuned on `d` (5 questions, content hash `abc`), on scores computed in `bf16` on `cpu`; saved in config.json" in new
    assert new.replace(", on scores computed in `bf16` on `cpu`", "") == old
