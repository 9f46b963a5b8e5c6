"""The public calls a command runs return frozen dataclasses with typed fields, as ``tune_model`` and
``evaluate_predictions`` do: ``export_onnx`` an ``OnnxExport``, ``export_qa_checkpoint`` a ``QaCheckpointExport``,
``convert_qa_checkpoint`` a ``QaCheckpointConversion``, ``predict_to_files`` a ``PredictionFiles`` and
``write_prediction_files`` a ``DecodingFiles`` (each was a dict); the command prints the result's ``to_dict()``, as it printed the dict."""

import dataclasses
import json
from pathlib import Path

import pytest

from bio_mrc.cli import main
from bio_mrc.data.squad import load_squad
from bio_mrc.encoders import answering_digest

from .conftest import SAMPLE_V1

MARKER_FIELDS = {"format": "onnx", "export_format": 1, "file": "model.onnx", "inputs": ("input_ids", "attention_mask"),
                 "outputs": ("start_logits", "end_logits"), "dynamic_axes": {"batch": 0, "sequence": 1}, "opset": 18,
                 "exporter": "a stand-in", "checked_shapes": ((3, 29), (1, 48)), "max_abs_logit_difference": {"start_logits": 0.5},
                 "tolerance": 1e-4, "versions": {"bio_mrc": "0.1.0"}, "created": "2026-01-01T00:00:00Z"}


def _frozen(result) -> None:
    field = dataclasses.fields(result)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(result, field, None)


def test_export_onnx_returns_an_onnx_export_which_the_marker_and_the_command_hold(trained_dir, tmp_path, monkeypatch, capsys):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from bio_mrc.inference import OnnxExport, onnx

    def export(trained, staging, opset, atol):  # a stand-in for the graph and its check: the record is known
        (staging / onnx.ONNX_FILE).write_bytes(b"a graph")
        for name in ("config.json", "tokenizer.json"):
            (staging / name).write_bytes((trained_dir / name).read_bytes())
        return MARKER_FIELDS

    monkeypatch.setattr(onnx, "write_export", export)
    result = onnx.export_onnx(trained_dir, tmp_path / "python")
    digest = answering_digest(trained_dir)
    assert type(result) is OnnxExport and result == OnnxExport(**MARKER_FIELDS, source=str(trained_dir), source_digest=digest)
    _frozen(result)
    record = {"format": "onnx", "export_format": 1, "file": "model.onnx", "inputs": ["input_ids", "attention_mask"],
              "outputs": ["start_logits", "end_logits"], "dynamic_axes": {"batch": 0, "sequence": 1}, "opset": 18,
              "exporter": "a stand-in", "checked_shapes": [[3, 29], [1, 48]], "max_abs_logit_difference": {"start_logits": 0.5},
              "tolerance": 1e-4, "versions": {"bio_mrc": "0.1.0"}, "created": "2026-01-01T00:00:00Z", "source": str(trained_dir),
              "source_digest": digest}
    assert result.to_dict() == record and list(result.to_dict()) == list(record)
    assert json.loads((tmp_path / "python" / onnx.EXPORT_FILE).read_text()) == record
    capsys.readouterr()
    assert main(["export", "--model", str(trained_dir), "--output", str(tmp_path / "cli"), "--format", "onnx"]) == 0
    assert capsys.readouterr().out == json.dumps({"output": str(tmp_path / "cli"), **record}, indent=2) + "\n"


def test_a_dynamo_failure_is_a_field_of_the_export(trained_dir, tmp_path, monkeypatch):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from bio_mrc.inference import onnx

    def export(trained, staging, opset, atol):
        (staging / onnx.ONNX_FILE).write_bytes(b"a graph")
        return {**MARKER_FIELDS, "exporter": "torch.onnx.export(dynamo=False) (TorchScript)", "dynamo_error": "RuntimeError: no"}

    monkeypatch.setattr(onnx, "write_export", export)
    result = onnx.export_onnx(trained_dir, tmp_path / "python")
    assert result.dynamo_error == "RuntimeError: no"
    assert list(result.to_dict())[7:9] == ["exporter", "dynamo_error"]  # where the marker has always had it


def test_export_qa_checkpoint_returns_a_qa_checkpoint_export(trained_dir, tmp_path, capsys):
    from bio_mrc.inference import QaCheckpointExport, export_qa_checkpoint

    result = export_qa_checkpoint(trained_dir, tmp_path / "python")
    assert result == QaCheckpointExport("BertForQuestionAnswering", str(trained_dir), ("bio",))
    assert result.format == "transformers"
    _frozen(result)
    record = {"format": "transformers", "architecture": "BertForQuestionAnswering", "source": str(trained_dir), "left_out": ["bio"]}
    assert result.to_dict() == record
    capsys.readouterr()
    assert main(["export", "--model", str(trained_dir), "--output", str(tmp_path / "cli"), "--format", "transformers"]) == 0
    assert capsys.readouterr().out == json.dumps({"output": str(tmp_path / "cli"), **record}, indent=2) + "\n"


def test_convert_qa_checkpoint_returns_a_qa_checkpoint_conversion(trained_dir, tmp_path, capsys):
    from bio_mrc.inference import QaCheckpointConversion, convert_qa_checkpoint, export_qa_checkpoint

    qa = tmp_path / "bert-qa"
    export_qa_checkpoint(trained_dir, qa)
    result = convert_qa_checkpoint(qa, tmp_path / "python", max_seq_length=96)
    # a window of 96: a question of a quarter of it (24), a stride of half of the rest less [CLS] and two [SEP] (34)
    assert result == QaCheckpointConversion(tmp_path / "python", str(qa), "BertForQuestionAnswering", "span", 96, 34, 24)
    _frozen(result)
    assert sorted(path.name for path in (tmp_path / "python").iterdir()) == [
        "README.md", "bio_mrc_run.json", "config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]
    record = {"output": str(tmp_path / "python"), "source": str(qa), "revision": None, "architecture": "BertForQuestionAnswering",
              "heads": "span", "windows": {"max_seq_length": 96, "doc_stride": 34, "max_query_length": 24}}
    assert result.to_dict() == record
    capsys.readouterr()
    assert main(["convert", "--model", str(qa), "--output", str(tmp_path / "cli"), "--max-seq-length", "96"]) == 0
    assert capsys.readouterr().out == json.dumps({**record, "output": str(tmp_path / "cli")}, indent=2) + "\n"


def test_predict_to_files_returns_prediction_files(trained_dir, tmp_path, capsys):
    from bio_mrc.inference import DecodingFiles, PredictionFiles, StreamPlan, TrainedModel, predict_to_files

    trained = TrainedModel.load(trained_dir, precision="fp32", device="cpu")
    examples = load_squad(SAMPLE_V1).examples
    out = tmp_path / "python"
    result = predict_to_files(trained, examples, StreamPlan(("span", "bio")), out / "p.json")
    expected = {decoding: DecodingFiles(out / f"p.{decoding}.json", out / f"p.{decoding}.nbest.json", out / f"p.{decoding}.na_probs.json")
                for decoding in ("span", "bio")}
    assert result == PredictionFiles(out / "p.answers.jsonl", out / "p.answers.run.json", expected, out / "p.answers.files.json")
    assert list(result.files) == ["span", "bio"]
    _frozen(result)
    assert sorted(path.name for path in out.iterdir()) == sorted(["p.answers.jsonl", "p.answers.run.json", "p.answers.files.json",
                                                                  *(path.name for files in expected.values() for path in dataclasses.astuple(files))])
    assert len(result.stream.read_text().splitlines()) == 2 * len(examples)  # a line per question and decoding
    assert len(json.loads(result.files["bio"].predictions.read_text())) == len(examples)
    assert result.to_dict() == {decoding: {"predictions": str(files.predictions), "nbest": str(files.nbest),
                                           "na_probs": str(files.na_probs)} for decoding, files in expected.items()}
    capsys.readouterr()
    assert main(["predict", "--model", str(trained_dir), "--data", str(SAMPLE_V1), "--output", str(tmp_path / "cli" / "p.json"),
                 "--decoding", "span", "bio", "--precision", "fp32", "--device", "cpu"]) == 0
    printed, cli = json.loads(capsys.readouterr().out), tmp_path / "cli"
    assert list(printed) == ["questions", "seconds", "span", "bio"]
    assert {decoding: printed[decoding] for decoding in ("span", "bio")} == {
        decoding: {"predictions": str(cli / f"p.{decoding}.json"), "nbest": str(cli / f"p.{decoding}.nbest.json"),
                   "na_probs": str(cli / f"p.{decoding}.na_probs.json")} for decoding in ("span", "bio")}


def test_predict_to_standard_output_writes_no_files(trained_dir, capsys):
    from bio_mrc.inference import PredictionFiles, StreamPlan, TrainedModel, predict_to_files

    trained = TrainedModel.load(trained_dir, precision="fp32", device="cpu")
    result = predict_to_files(trained, load_squad(SAMPLE_V1).examples[:2], StreamPlan(("span",)), "-")
    assert result == PredictionFiles(None, None, {}) and result.to_dict() == {}
    assert len(capsys.readouterr().out.splitlines()) == 2


def test_write_prediction_files_returns_decoding_files(tmp_path):
    from bio_mrc.inference import DecodingFiles, write_prediction_files
    from bio_mrc.types import AnswerSpan, Prediction

    predictions = [Prediction("q1", [AnswerSpan("Alpha", 0, 5, 0.9)], -1.0), Prediction("q2", [], 2.0)]
    result = write_prediction_files(predictions, tmp_path / "p.json")
    assert result == DecodingFiles(tmp_path / "p.json", tmp_path / "p.nbest.json", tmp_path / "p.na_probs.json")
    _frozen(result)
    assert result.paths() == [tmp_path / "p.json", tmp_path / "p.nbest.json", tmp_path / "p.na_probs.json"]
    assert result.to_dict() == {"predictions": str(tmp_path / "p.json"), "nbest": str(tmp_path / "p.nbest.json"),
                                "na_probs": str(tmp_path / "p.na_probs.json")}
    assert json.loads(result.predictions.read_text()) == {"q1": "Alpha", "q2": ""}
    assert sorted(json.loads(result.na_probs.read_text())) == ["q1", "q2"]
    bare = write_prediction_files(predictions, tmp_path / "bare" / "p.json", with_na_probs=False)
    assert bare == DecodingFiles(tmp_path / "bare" / "p.json", tmp_path / "bare" / "p.nbest.json", None)
    assert bare.to_dict() == {"predictions": str(tmp_path / "bare" / "p.json"), "nbest": str(tmp_path / "bare" / "p.nbest.json")}
    assert sorted(path.name for path in (tmp_path / "bare").iterdir()) == ["p.json", "p.nbest.json"]


def test_model_tuning_exports_only_what_the_package_documents():
    """``from bio_mrc.inference.model_tuning import *`` brought tune's helpers (check_saved_settings, calibrates, ...)."""
    import bio_mrc.inference as inference
    from bio_mrc.inference import model_tuning

    assert model_tuning.__all__ == ["ModelTuning", "tune_model"]
    assert set(model_tuning.__all__) <= set(inference.__all__)
    namespace: dict = {}
    exec("from bio_mrc.inference.model_tuning import *", namespace)  # noqa: S102
    assert sorted(name for name in namespace if not name.startswith("__")) == ["ModelTuning", "tune_model"]
    from bio_mrc.inference.model_tuning import TuningPlan, calibrates, check_saved_settings, tune_read_questions  # noqa: F401


def test_the_results_are_exported_where_their_calls_are():
    import bio_mrc.inference as inference
    from bio_mrc.inference import conversion, files, onnx, streaming

    for module, names in ((onnx, ["OnnxExport"]), (conversion, ["QaCheckpointConversion", "QaCheckpointExport"]),
                          (files, ["DecodingFiles"]), (streaming, ["PredictionFiles"])):
        for name in names:
            assert getattr(inference, name) is getattr(module, name) and name in inference.__all__
            assert dataclasses.is_dataclass(getattr(module, name)) and getattr(module, name).__dataclass_params__.frozen
    assert Path(inference.__file__).with_suffix(".pyi").read_text().count("OnnxExport as OnnxExport") == 1
