"""Hostile inputs: names that would write outside the output folder are refused before
any work, training never deletes or replaces files it did not write unless told, a model folder that names its own
Python code never runs it and never prompts, and a --limit that is no positive count is refused."""

import json
import re
import shutil
from pathlib import Path

import pytest

from bio_mrc.encoders import load_tokenizer
from bio_mrc.errors import BioMrcError, ModelFormatError
from bio_mrc.harness.config import load_config, parse_config
from bio_mrc.model import BioMrcForQuestionAnswering

from .conftest import SAMPLE_V1
from .test_bad_input import saved_model  # noqa: F401  (module-scoped fixture: an untrained saved model)
from .test_python_doors import DOORS, place  # noqa: F401  (the Python calls as doors, and the files they are given)

MINIMAL = {"name": "ok", "train": {"path": "squad-v1.1/train.json"}, "eval": {"path": "squad-v1.1/dev.json"},
           "runs": [{"name": "joint"}]}


@pytest.mark.parametrize("name", ["../../../x", "/tmp/x", "", "a/b", "..", ".hidden", "x" * 101, None, 7, "nul", "CON",
                                  "com1.json", "Lpt9", "joint."])
def test_a_name_that_is_no_plain_file_name_is_refused_naming_its_key(tmp_path, name):
    for raw, key in (({**MINIMAL, "name": name}, "name"), ({**MINIMAL, "runs": [{"name": "joint"}, {"name": name}]}, "runs[1].name")):
        path = tmp_path / "config.json"
        path.write_text(json.dumps(raw))
        with pytest.raises(BioMrcError, match=re.escape(f"{key}: a name becomes a file name")) as caught:
            load_config(path)
        assert str(path) in str(caught.value)
    for fine in ("joint-1ep.v2+bio_x", "x" * 100, "a", "nullable", "console", "com10", "auxiliary.v2", "lpt"):
        assert parse_config({**MINIMAL, "runs": [{"name": fine}]}).runs[0].name == fine


@pytest.fixture
def folder_with_code(tiny_encoder_dir, tmp_path):
    """A copy of the tiny encoder whose configs point at a module that, imported, leaves a marker file."""
    folder = tmp_path / "hostile"
    shutil.copytree(tiny_encoder_dir, folder)
    marker = tmp_path / "code-ran"
    (folder / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    return folder, marker


def add_auto_map(path, entry, model_type=None):
    data = json.loads(path.read_text())
    data["auto_map"] = entry
    if model_type:
        data["model_type"] = model_type
    path.write_text(json.dumps(data))


def test_a_tokenizer_that_names_its_own_code_loads_as_data(folder_with_code, monkeypatch):
    folder, marker = folder_with_code
    add_auto_map(folder / "tokenizer_config.json", {"AutoTokenizer": ["evil.EvilTokenizer", "evil.EvilTokenizerFast"]})
    monkeypatch.setattr("builtins.input", lambda *a: pytest.fail("asked whether to run the folder's code"))
    tokenizer = load_tokenizer(str(folder))  # the built-in class reads it; the folder's module is never imported
    assert tokenizer.is_fast and not marker.exists()


def test_an_encoder_only_its_own_code_can_read_is_refused_without_running_it(folder_with_code, monkeypatch):
    folder, marker = folder_with_code
    add_auto_map(folder / "config.json", {"AutoConfig": "evil.EvilConfig", "AutoModel": "evil.EvilModel"}, model_type="evil-bert")
    monkeypatch.setattr("builtins.input", lambda *a: pytest.fail("asked whether to run the folder's code"))
    with pytest.raises(ModelFormatError, match="never runs a model folder's code") as caught:
        BioMrcForQuestionAnswering.from_encoder(str(folder))
    assert str(folder) in str(caught.value) and not marker.exists()


@pytest.mark.slow
def test_training_never_deletes_or_replaces_files_it_did_not_write(tiny_encoder_dir, tmp_path, sample_v1):
    from bio_mrc.errors import ConfigError
    from bio_mrc.training.train import TrainConfig, train_model

    config = TrainConfig(encoder=str(tiny_encoder_dir), heads="span", max_seq_length=48, doc_stride=16, max_query_length=12,
                         epochs=1, batch_size=8, precision="fp32")
    theirs = tmp_path / "theirs"
    (theirs / "checkpoints").mkdir(parents=True)
    (theirs / "checkpoints" / "important.txt").write_text("keep me")
    for overwrite in (False, True):  # a checkpoints folder bio_mrc did not write is never removed
        with pytest.raises(ConfigError, match="did not write"):
            train_model(sample_v1.examples[:8], config, theirs, overwrite=overwrite)
    assert (theirs / "checkpoints" / "important.txt").read_text() == "keep me"

    own = tmp_path / "own"
    own.mkdir()
    (own / "config.json").write_text('{"mine": true}')
    with pytest.raises(ConfigError, match="holds no bio_mrc model"):
        train_model(sample_v1.examples[:8], config, own)
    assert json.loads((own / "config.json").read_text()) == {"mine": True} and sorted(p.name for p in own.iterdir()) == ["config.json"]
    train_model(sample_v1.examples[:8], config, own, overwrite=True)  # asked for: its files are replaced
    assert json.loads((own / "config.json").read_text())["model_type"] == "bio_mrc"
    with pytest.raises(ConfigError, match="holds a finished model; choose another output folder or pass overwrite=True"):
        train_model(sample_v1.examples[:8], config, own)  # a finished model is replaced only when asked, as train refuses it
    train_model(sample_v1.examples[:8], config, own, overwrite=True)


def test_training_never_replaces_a_model_no_training_of_its_folder_left(tiny_encoder_dir, tmp_path, sample_v1, trained_dir):
    """A bio_mrc model without a run record, checkpoints or a staging folder (what convert, tune --output-dir or a copy
    leave) is no run to resume: training refuses to replace it unless asked."""
    from bio_mrc.errors import ConfigError
    from bio_mrc.model_records import RUN_FILE
    from bio_mrc.training.train import TrainConfig, train_model

    copied = tmp_path / "copied"
    shutil.copytree(trained_dir, copied)
    (copied / RUN_FILE).unlink()
    before = {p.name: p.read_bytes() for p in copied.iterdir() if p.is_file()}
    config = TrainConfig(encoder=str(tiny_encoder_dir), heads="span", max_seq_length=48, doc_stride=16, max_query_length=12,
                         epochs=1, batch_size=8, precision="fp32")
    with pytest.raises(ConfigError, match="holds a bio_mrc model that no training here left"):
        train_model(sample_v1.examples[:8], config, copied)
    assert {p.name: p.read_bytes() for p in copied.iterdir() if p.is_file()} == before


@pytest.mark.parametrize("limit", [0, -1, -5, "3", 2.5, True])
def test_a_limit_that_is_no_positive_count_is_refused(limit):
    from bio_mrc.data.squad import load_squad
    from bio_mrc.errors import ConfigError

    with pytest.raises(ConfigError, match=re.escape(f"limit is a positive number of questions (or none for all); got {limit!r}")):
        load_squad(str(SAMPLE_V1), limit=limit)
    assert len(load_squad(str(SAMPLE_V1), limit=2).examples) == 2


@pytest.mark.slow
def test_the_cli_refuses_a_limit_of_zero_in_one_line(tmp_path):
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "bio_mrc.cli", "train", "--train", str(SAMPLE_V1), "--limit", "0",
                             "--output-dir", str(tmp_path / "m")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "argument --limit: a positive number, not 0" in result.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "m").exists()


def test_a_context_file_in_latin1_is_named_in_one_line(tmp_path, capsys):
    from bio_mrc.cli import main

    path = tmp_path / "context.txt"
    path.write_bytes("Caf\u00e9 au lait was served in Paris.".encode("latin-1"))
    assert main(["extract", "--model", str(tmp_path / "no-model"), "--question", "Where?", "--context-file", str(path)]) == 2
    err = capsys.readouterr().err
    assert "not UTF-8 text (invalid continuation byte at byte 3); convert it first" in err and str(path) in err
    assert "Traceback" not in err


def test_a_lone_surrogate_in_a_dataset_row_is_refused_naming_the_record():
    from bio_mrc.data.squad import parse_rows

    row = {"id": "q1", "question": "Who?", "context": "Ada\udc80 wrote it.", "answers": {"text": ["Ada"], "answer_start": [0]}}
    with pytest.raises(BioMrcError, match=re.escape("the context holds U+DC80") + ".*record 'q1'"):
        parse_rows([("row 1", row)])


def test_more_folds_than_questions_is_refused_before_training(sample_v1):
    from bio_mrc.errors import ConfigError
    from bio_mrc.harness.comparison_splits import Split, cross_validation_folds

    few = Split(sample_v1.examples[:3], "squad-v1.1", "three questions")
    with pytest.raises(ConfigError, match="cross_validation.folds: 5 folds need at least 5 questions; three questions has 3"):
        cross_validation_folds(few, 5, seed=0)
    # SQuAD's folds are whole articles: the three questions share one, which cannot make three folds.
    with pytest.raises(ConfigError, match="cross_validation.folds: three questions: 3 folds need at least 3 articles; the questions have 1"):
        cross_validation_folds(few, 3, seed=0)
    assert len(cross_validation_folds(Split(sample_v1.examples, "squad-v1.1", "two articles"), 2, seed=0)) == 2


def test_a_full_disk_while_writing_a_file_is_one_error_naming_the_folder(tmp_path, monkeypatch):
    import errno
    import os

    from bio_mrc import io
    from bio_mrc.errors import OutputError

    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(io.atomic.os, "fsync", full)
    with pytest.raises(OutputError, match=re.escape("could not write there, ") + r"[\d,]+ MiB free on its device: .*No space left"
                       + ".*" + re.escape(f"(in {tmp_path})")):
        io.atomic_write_text(tmp_path / "report.md", "text")
    assert os.listdir(tmp_path) == []  # no temporary file left behind


@pytest.mark.parametrize("stop", ["full disk", "ctrl-c"])
def test_a_final_save_cut_short_leaves_no_half_written_weights_and_keeps_the_checkpoints(tiny_encoder_dir, tmp_path, sample_v1,
                                                                                        monkeypatch, stop):
    import errno

    from transformers import Trainer

    from bio_mrc.errors import OutputError
    from bio_mrc.training.saving import STAGING_DIR
    from bio_mrc.training.train import TrainConfig, train_model

    save = Trainer.save_model

    def cut_short(self, output_dir=None, _internal_call=False):
        if STAGING_DIR not in str(output_dir):  # a checkpoint: saved whole
            return save(self, output_dir, _internal_call=_internal_call)
        Path(output_dir).mkdir(parents=True, exist_ok=True)
        (Path(output_dir) / "model.safetensors").write_bytes(b"cut")  # the final weights, begun
        raise OSError(errno.ENOSPC, "No space left on device") if stop == "full disk" else KeyboardInterrupt

    monkeypatch.setattr(Trainer, "save_model", cut_short)
    config = TrainConfig(encoder=str(tiny_encoder_dir), heads="span", max_seq_length=48, doc_stride=16, max_query_length=12,
                         epochs=1, batch_size=4, precision="fp32")
    out = tmp_path / "model"
    with pytest.raises(OutputError if stop == "full disk" else KeyboardInterrupt):
        train_model(sample_v1.examples[:8], config, out, checkpoint_steps=1)
    assert sorted(p.name for p in out.iterdir()) == ["checkpoints"]  # the staging folder's cut weights held the space
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["bio_mrc_train_config.json", "checkpoint-3"]  # --resume continues


# what torch.save raises when the disk fills mid-checkpoint: a record cut short, or the archive's end that no longer fits
TORCH_FULL_DISK = ["[enforce fail at inline_container.cc:664] . unexpected pos 8642048 vs 8641936", "basic_ios::clear: iostream error"]


@pytest.mark.parametrize("said", TORCH_FULL_DISK)
def test_a_full_disk_while_saving_a_checkpoint_is_one_error_and_keeps_the_folder(tiny_encoder_dir, tmp_path, sample_v1, monkeypatch,
                                                                               said):
    from transformers import Trainer

    from bio_mrc.errors import OutputError
    from bio_mrc.training.train import TrainConfig, train_model

    def torch_writer_fails(*_args, **_kwargs):
        raise RuntimeError(said)

    monkeypatch.setattr(Trainer, "_save_checkpoint", torch_writer_fails)
    config = TrainConfig(encoder=str(tiny_encoder_dir), heads="span", max_seq_length=48, doc_stride=16, max_query_length=12,
                         epochs=1, batch_size=4, precision="fp32")
    with pytest.raises(OutputError, match=re.escape(f"free on its device: {said} (in {tmp_path / 'model'})")):
        train_model(sample_v1.examples[:8], config, tmp_path / "model", checkpoint_steps=1)
    assert not (tmp_path / "model" / "config.json").exists()  # no model that looks complete


def test_nan_weights_are_refused_at_load_naming_the_tensor(trained_dir, tmp_path):
    from safetensors.torch import load_file, save_file

    from bio_mrc.inference.loading import TrainedModel

    broken = tmp_path / "broken"
    shutil.copytree(trained_dir, broken)
    weights = load_file(broken / "model.safetensors")
    weights["span_head.qa_outputs.weight"][0, 0] = float("nan")
    save_file(weights, broken / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ModelFormatError, match=r"its weights hold NaN or infinite values \(span_head.qa_outputs.weight\) \(in " + re.escape(str(broken))):
        TrainedModel.load(broken)


def test_pickled_weights_that_would_run_code_are_one_error_and_never_run(trained_dir, tmp_path):
    import os

    import torch

    from bio_mrc.inference.loading import TrainedModel

    class RunsCode:
        def __reduce__(self):
            return (os.makedirs, (str(tmp_path / "code-ran"),))

    pickled = tmp_path / "pickled"
    shutil.copytree(trained_dir, pickled)
    (pickled / "model.safetensors").unlink()
    torch.save({"weight": RunsCode()}, pickled / "pytorch_model.bin")
    with pytest.raises(ModelFormatError, match=r"pytorch_model.bin: pickled weights are never loaded \(unpickling can run code\)"):
        TrainedModel.load(pickled)
    assert not (tmp_path / "code-ran").exists()


def test_an_encoder_of_an_unknown_model_type_is_one_error(tiny_encoder_dir, tmp_path):
    from bio_mrc.model import BioMrcForQuestionAnswering

    encoder = tmp_path / "encoder"
    shutil.copytree(tiny_encoder_dir, encoder)
    config = json.loads((encoder / "config.json").read_text())
    (encoder / "config.json").write_text(json.dumps({**config, "model_type": "frobnicator"}))
    with pytest.raises(ModelFormatError, match='names model_type "frobnicator", which transformers .* does not know'):
        BioMrcForQuestionAnswering.from_encoder(str(encoder))


def test_answers_no_token_covers_are_named_in_a_warning_before_training(tiny_encoder_dir, tmp_path, sample_v1):
    from bio_mrc.training.train import TrainConfig, UnheldAnswersWarning, train_model
    from bio_mrc.types import Example

    context = "The bridge was opened in 1890 \u200b by the city."
    hidden = Example("zero-width", "What?", context, (((context.index("\u200b"), context.index("\u200b") + 1),),))
    blank = Example("blank", "What?", context, (((context.index(" by") , context.index(" by") + 1),),))
    config = TrainConfig(encoder=str(tiny_encoder_dir), heads="span+bio", max_seq_length=48, doc_stride=16, max_query_length=12,
                         epochs=1, batch_size=4, precision="fp32")
    with pytest.warns(UnheldAnswersWarning, match=r"2 of 6 answerable training questions .* 'zero-width', 'blank'") as caught:
        train_model([*sample_v1.examples[:4], hidden, blank], config, tmp_path / "model", save_checkpoints=False)
    assert [w.message.ids for w in caught if isinstance(w.message, UnheldAnswersWarning)] == [["zero-width", "blank"]]


def test_the_command_line_names_unheld_answers_in_one_warning_line(tiny_encoder_dir, tmp_path, capsys):
    """bio-mrc train prints the warning as its other warnings are, one line, not Python's two naming cli.py."""
    from bio_mrc.cli import main

    context = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"
    line = {"id": "long", "question": "All?", "context": context, "answers": {"text": [context[4:]], "answer_start": [4]}}
    held = {"id": "held", "question": "Which?", "context": context, "answers": {"text": ["two"], "answer_start": [4]}}
    (tmp_path / "long.jsonl").write_text(json.dumps(line) + "\n" + json.dumps(held) + "\n", encoding="utf-8")
    assert main(["train", "--train", str(tmp_path / "long.jsonl"), "--output-dir", str(tmp_path / "model"), "--encoder",
                 str(tiny_encoder_dir), "--epochs", "1", "--max-seq-length", "24", "--doc-stride", "4",
                 "--max-query-length", "6"]) == 0
    err = capsys.readouterr().err
    shown = [row for row in err.splitlines() if "no window holds" in row]
    assert shown == ["warning: 1 of 2 answerable training questions have an answer that no window holds as tokens (whitespace, "
                     "characters the tokenizer drops, or longer than a window): they train as unanswerable; 'long'"]
    assert "UnheldAnswersWarning" not in err and "cli.py" not in err


def test_json_nested_past_the_readers_depth_is_one_error(tmp_path):
    from bio_mrc.data.squad import load_squad
    from bio_mrc.errors import DataFormatError

    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(DataFormatError, match="nested deeper than 256 levels"):
        load_squad(path)


def test_a_document_or_output_folders_json_nested_past_the_parsers_stack_is_no_traceback(tmp_path):
    """The text of a document and an output folder's config.json are looked into as JSON: nested past Python's
    parser they raised RecursionError; the document is prose, the folder one that holds other files."""
    from bio_mrc.data.text import questions_layout
    from bio_mrc.errors import ConfigError
    from bio_mrc.training.saving import check_output_folder

    deep = "[" * 100_000 + "]" * 100_000
    assert questions_layout(deep) is None
    (tmp_path / "config.json").write_text(deep)
    with pytest.raises(ConfigError):
        check_output_folder(tmp_path, overwrite=False)


@pytest.mark.parametrize("command", [
    ["predict", "--model", "MODEL", "--data", str(SAMPLE_V1), "--output", "FILE/predictions.json"],
    ["train", "--train", str(SAMPLE_V1), "--output-dir", "FILE"],
    ["compare", "--config", "quick", "--output-dir", "FILE"],
    ["export", "--model", "MODEL", "--output", "FILE"],
    ["extract", "--model", "MODEL", "--question", "Who?", "--context", "Ada wrote it.", "--html", "FOLDER"],
])
def test_an_output_that_cannot_be_written_is_refused_before_any_work(tmp_path, capsys, command):
    from bio_mrc.cli import main

    (tmp_path / "FILE").write_text("a file where a folder must be")
    (tmp_path / "FOLDER").mkdir()
    argv = [str(tmp_path / arg) if arg in ("FILE", "FOLDER", "FILE/predictions.json", "MODEL") else arg for arg in command]
    if command[0] == "compare":
        argv += ["--data-dir", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err and ("a file" in err or "a folder has this name" in err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["FILE", "FOLDER"]


@pytest.mark.parametrize("call, argument", [("tune_model", "output_dir"), ("predict_to_files", "output"),
                                            ("export_onnx", "output_dir"), ("export_qa_checkpoint", "output_dir"),
                                            ("convert_qa_checkpoint", "output_dir"), ("train_model", "output_dir")])
def test_a_python_calls_output_that_cannot_be_written_is_refused_before_any_work(place, call, argument):  # noqa: F811
    folder = place["data"].parent
    (folder / "FILE").write_text("a file where a folder must be")
    target = folder / "FILE" / "predictions.json" if argument == "output" else folder / "FILE"
    with pytest.raises(BioMrcError, match="a file") as info:
        DOORS[call](place, **{argument: target})
    assert "\n" not in str(info.value)
    assert sorted(p.name for p in folder.iterdir()) == ["FILE", "data.json", "preds.json"]


def test_compare_under_a_hostile_name_writes_nothing_anywhere(tmp_path, capsys, monkeypatch):
    from bio_mrc.cli import main

    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # the default output folder, runs/<name>, is relative to here
    for raw in ({**MINIMAL, "name": "../../escaped"}, {**MINIMAL, "runs": [{"name": "../../../escaped"}]}):
        (tmp_path / "config.json").write_text(json.dumps(raw))
        for output in ([], ["--output-dir", str(tmp_path / "out")]):
            assert main(["compare", "--config", str(tmp_path / "config.json"), "--data-dir", str(tmp_path), *output]) == 2
            assert "a name becomes a file name" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["config.json", "work"]


@pytest.mark.slow
def test_training_over_an_onnx_export_leaves_none_of_its_files(tiny_encoder_dir, tmp_path, sample_v1):
    """An ONNX export's graph left beside new weights answered with the old model under backend="onnx"; weights
    of another layout would be read in place of the new ones."""
    from bio_mrc.inference.loading import model_backend
    from bio_mrc.training.train import TrainConfig, train_model

    config = TrainConfig(encoder=str(tiny_encoder_dir), heads="span", max_seq_length=48, doc_stride=16, max_query_length=12,
                         epochs=1, batch_size=8, precision="fp32")
    folder = tmp_path / "exported"
    folder.mkdir()
    stale = ("model.onnx", "model.onnx.data", "bio_mrc_export.json", "bio_mrc_eval.json", "pytorch_model.bin")
    for name in (*stale, "notes.txt"):
        (folder / name).write_text("old")
    (folder / "config.json").write_text('{"model_type": "bio_mrc"}')
    train_model(sample_v1.examples[:8], config, folder, overwrite=True)
    assert not [name for name in stale if (folder / name).exists()]
    assert (folder / "notes.txt").read_text() == "old" and model_backend(folder, "auto") == "torch"
