"""An empty model name (``""``, or spaces alone: an unset shell variable) is refused at every door in one line, before
any work: ``Path("")`` is the current folder, which was read as the model (``no config.json (in .)``)."""

import re
from pathlib import Path

import pytest

from bio_mrc.cli import main
from bio_mrc.errors import ConfigError
from bio_mrc.inference import AnswerExtractor, TrainedModel



def refusal(name: str) -> str:
    return f"an empty name ({name!r}) names no model folder and no Hugging Face hub id; give one"


@pytest.fixture
def in_empty_folder(tmp_path, monkeypatch) -> Path:
    """The current folder: empty, so a door that reads it as the model says so, and an output there is seen."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _pipeline(name):
    from transformers import pipeline

    return pipeline("bio-mrc-qa", model=name, device="cpu")


def _tune(name):
    from bio_mrc.inference import tune_model

    return tune_model(name, "dev.json")


def _export_onnx(name):
    from bio_mrc.inference import export_onnx

    return export_onnx(name, "out")


def _export_qa(name):
    from bio_mrc.inference import export_qa_checkpoint

    return export_qa_checkpoint(name, "out")


def _convert(name):
    from bio_mrc.inference import convert_qa_checkpoint

    return convert_qa_checkpoint(name, "out")


def _serve(name):
    from bio_mrc.serving.server import run_server

    return run_server(name)


DOORS = {"from_pretrained": AnswerExtractor.from_pretrained, "AnswerExtractor": AnswerExtractor, "TrainedModel.load": TrainedModel.load,
         "pipeline": _pipeline, "tune_model": _tune, "export_onnx": _export_onnx, "export_qa_checkpoint": _export_qa,
         "convert_qa_checkpoint": _convert, "run_server": _serve}


@pytest.mark.parametrize("name", ["", "   "])
@pytest.mark.parametrize("door", DOORS)
def test_an_empty_model_name_is_refused_at_each_python_door(in_empty_folder, door, name):
    with pytest.raises(ConfigError, match=f"^{re.escape(refusal(name))}$"):
        DOORS[door](name)
    assert list(in_empty_folder.iterdir()) == []


COMMANDS = {
    "predict": ["predict", "--model", "{}", "--data", "dev.json", "--output", "preds.json"],
    "extract": ["extract", "--model", "{}", "--question", "Who?", "--context", "Newton."],
    "tune": ["tune", "--model", "{}", "--data", "dev.json"],
    "export": ["export", "--model", "{}", "--output", "out"],
    "convert": ["convert", "--model", "{}", "--output", "out"],
    "serve --model": ["serve", "--model", "{}"],
    "serve MODEL": ["serve", "{}"],
}


@pytest.mark.parametrize("name", ["", "  "])
@pytest.mark.parametrize("command", COMMANDS)
def test_an_empty_model_option_is_refused_before_any_work(in_empty_folder, capsys, command, name):
    """``serve --model ""`` ended in a TypeError traceback; the others read the current folder as the model."""
    assert main([name if arg == "{}" else arg for arg in COMMANDS[command]]) == 2
    assert capsys.readouterr().err == f"error: --model: {refusal(name)}\n"
    assert list(in_empty_folder.iterdir()) == []
