"""ONNX export (``bio-mrc export --format onnx``) and ONNX Runtime inference through ``TrainedModel``.

The exported graph must give PyTorch's logits within 1e-4 on random windows of shapes it was not
traced with, ``TrainedModel.load(onnx_dir).windows`` must give PyTorch's window outputs, so every
decoding answers the same, and a missing onnxruntime must be a clear error, not an ImportError.
The tests that read an export are in the slow tier: the dynamo exporter takes about 10 s on two cores.
"""

import errno
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

from bio_mrc.cli import build_parser, main
from bio_mrc.data.squad import load_squad
from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.errors import BioMrcError, ModelFormatError
from bio_mrc.inference import AnswerExtractor, TrainedModel
from bio_mrc.inference.onnx import (
    DEFAULT_OPSET, EXPORT_FILE, ONNX_FILE, TOLERANCE, ExporterFallbackWarning, LogitsModule, OnnxModel, checked_differences,
    encoder_inputs, export_onnx, random_inputs,
)
from bio_mrc.model import BioMrcForQuestionAnswering

from .conftest import NEEDS_ONNX_EXTRA, SAMPLE_V1

pytestmark = NEEDS_ONNX_EXTRA

ATOL = 1e-4


@pytest.mark.slow
def test_the_export_folder_describes_itself(onnx_dir, trained_dir):  # noqa: F811
    for name in (ONNX_FILE, EXPORT_FILE, "config.json", "tokenizer.json", "tokenizer_config.json"):
        assert (onnx_dir / name).is_file(), name
    marker = json.loads((onnx_dir / EXPORT_FILE).read_text())
    assert marker["format"] == "onnx" and marker["opset"] == DEFAULT_OPSET
    assert marker["inputs"] == ["input_ids", "attention_mask", "token_type_ids"]  # a BERT encoder reads token types
    assert marker["outputs"] == ["start_logits", "end_logits", "bio_logits"]
    assert marker["exporter"].startswith("torch.onnx.export(")
    assert max(marker["max_abs_logit_difference"].values()) <= ATOL
    exported, original = json.loads((onnx_dir / "config.json").read_text()), json.loads((trained_dir / "config.json").read_text())
    for key in ("heads", "tag_level", "max_seq_length", "doc_stride", "max_query_length", "bio_length_prior", "encoder"):
        assert exported.get(key) == original.get(key), key
    assert not list(onnx_dir.glob(".*staging*"))


def test_the_cli_defaults_are_the_modules(tmp_path, capsys):
    """--opset and --atol are unset (export_onnx's defaults apply, and --format transformers can tell them given);
    their help names those defaults."""
    args = build_parser().parse_args(["export", "--model", "m", "--output", str(tmp_path)])
    assert (args.opset, args.atol, args.format) == (None, None, "onnx")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["export", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert f"ONNX opset version (onnx) (default: {DEFAULT_OPSET})" in shown
    assert f"checked at export (onnx) (default: {TOLERANCE})" in shown


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(2, 11), (5, 40)])
def test_logits_match_pytorch_on_random_inputs(onnx_dir, trained_dir, shape):  # noqa: F811
    torch_model = BioMrcForQuestionAnswering.from_pretrained(str(trained_dir)).eval()
    runner = OnnxModel.load(onnx_dir)
    inputs = random_inputs(torch_model.config, runner.input_names, *shape, seed=sum(shape))
    with torch.inference_mode():
        expected = torch_model(**inputs)
    actual = runner(inputs)
    assert set(actual) == {"start_logits", "end_logits", "bio_logits"}
    for name, values in actual.items():
        assert values.shape == tuple(getattr(expected, name).shape)
        np.testing.assert_allclose(values, getattr(expected, name).numpy(), atol=ATOL, rtol=0, err_msg=name)


@pytest.mark.slow
def test_window_outputs_match_pytorch(onnx_dir, trained_dir, sample_v1):  # noqa: F811
    ours, reference = TrainedModel.load(onnx_dir), TrainedModel.load(trained_dir, precision="fp32")  # ONNX computes in fp32
    assert (ours.backend, reference.backend) == ("onnx", "torch")
    assert ours.features == reference.features and ours.decodings == reference.decodings
    got, want = ours.windows(sample_v1.examples, batch_size=3), reference.windows(sample_v1.examples, batch_size=3)
    for name in ("example_index", "offsets", "mask", "word_offsets", "tag_mask"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
    for name in ("start_logits", "end_logits", "bio_logits"):
        np.testing.assert_allclose(getattr(got, name), getattr(want, name), atol=ATOL, rtol=0, err_msg=name)


@pytest.mark.slow
def test_predict_answers_equal_pytorchs(onnx_dir, trained_dir, tmp_path):  # noqa: F811
    for name, folder in (("onnx", onnx_dir), ("torch", trained_dir)):
        assert main(["predict", "--model", str(folder), "--data", str(SAMPLE_V1), "--decoding", "span", "bio", "joint",
                     "--output", str(tmp_path / name / "preds.json")]) == 0
    for decoding in ("span", "bio", "joint"):
        got = json.loads((tmp_path / "onnx" / f"preds.{decoding}.json").read_text())
        want = json.loads((tmp_path / "torch" / f"preds.{decoding}.json").read_text())
        assert got == want, decoding


@pytest.mark.slow
@pytest.mark.parametrize("decoding", ["span", "bio", "joint"])
def test_answer_extractor_runs_the_export(onnx_dir, trained_dir, decoding):  # noqa: F811
    example = load_squad(SAMPLE_V1).examples[0]
    ours = AnswerExtractor.from_pretrained(onnx_dir, decoding=decoding, multi_span=True)
    reference = AnswerExtractor.from_pretrained(trained_dir, precision="fp32", decoding=decoding, multi_span=True)
    got, want = ours(example.question, example.context), reference(example.question, example.context)
    assert [(s.text, s.start, s.end) for s in got.spans] == [(s.text, s.start, s.end) for s in want.spans]
    assert [s.score for s in got.spans] == pytest.approx([s.score for s in want.spans], abs=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("missing", ["onnxruntime", "onnx"])  # without the onnx extra both are: onnx is asked first
def test_without_onnxruntime_loading_says_what_to_install(onnx_dir, monkeypatch, capsys, tmp_path, missing):
    monkeypatch.setitem(sys.modules, missing, None)  # `import onnxruntime` (or onnx) now fails
    with pytest.raises(ModelFormatError, match=r"pip install 'bio_mrc\[onnx\]'"):
        TrainedModel.load(onnx_dir)
    assert main(["predict", "--model", str(onnx_dir), "--data", str(SAMPLE_V1), "--output", str(tmp_path / "p.json")]) == 2
    assert "pip install 'bio_mrc[onnx]'" in capsys.readouterr().err


def test_without_onnxruntime_export_says_what_to_install(trained_dir, monkeypatch, tmp_path):  # noqa: F811
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(BioMrcError, match=r"pip install 'bio_mrc\[onnx\]'"):
        export_onnx(trained_dir, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_bio_mrc_imports_without_the_onnx_packages():
    blocked = "import sys\nfor name in ('onnx', 'onnxruntime', 'onnxscript'):\n    sys.modules[name] = None\n"
    code = blocked + "import bio_mrc, bio_mrc.inference, bio_mrc.cli\nbio_mrc.cli.build_parser()\nprint('ok')"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]


@pytest.mark.slow
def test_an_unfinished_export_and_a_used_folder_are_refused(onnx_dir, trained_dir, tmp_path):  # noqa: F811
    partial = tmp_path / "partial"
    partial.mkdir()
    for name in ("config.json", ONNX_FILE, "tokenizer.json", "tokenizer_config.json"):
        (partial / name).write_bytes((onnx_dir / name).read_bytes())
    with pytest.raises(ModelFormatError, match="unfinished export"):
        TrainedModel.load(partial)
    with pytest.raises(BioMrcError, match="not empty"):
        export_onnx(trained_dir, partial)
    with pytest.raises(BioMrcError, match="another folder"):
        export_onnx(trained_dir, trained_dir)
    with pytest.raises(ModelFormatError, match="no weights"):  # backend="torch" on an export: no PyTorch weights
        TrainedModel.load(onnx_dir, backend="torch")


@pytest.mark.slow
def test_an_encoder_without_token_types_and_a_bio_only_model(tiny_bpe_tokenizer, tmp_path):
    """A RoBERTa-style encoder reads no token types: the graph has no such input; one head, one output."""
    from transformers import PreTrainedTokenizerFast, RobertaConfig, RobertaModel

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tiny_bpe_tokenizer.backend_tokenizer, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
        unk_token="<unk>", cls_token="<s>", sep_token="</s>", model_input_names=["input_ids", "attention_mask"],
    )
    encoder_dir, model_dir = tmp_path / "encoder", tmp_path / "model"
    torch.manual_seed(0)
    RobertaModel(RobertaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                               intermediate_size=64, max_position_embeddings=80, pad_token_id=1, type_vocab_size=1),
                 add_pooling_layer=False).save_pretrained(str(encoder_dir))
    model = BioMrcForQuestionAnswering.from_encoder(str(encoder_dir), heads="bio", tag_level="word", max_seq_length=48,
                                                    doc_stride=16, max_query_length=12)
    model.save_pretrained(str(model_dir))
    tokenizer.save_pretrained(str(model_dir))
    assert encoder_inputs(model, tokenizer) == ["input_ids", "attention_mask"]

    record = export_onnx(model_dir, tmp_path / "exported")
    assert record.inputs == ("input_ids", "attention_mask") and record.outputs == ("bio_logits",)
    examples = load_squad(SAMPLE_V1).examples[:4]
    got, want = TrainedModel.load(tmp_path / "exported").windows(examples), TrainedModel.load(model_dir, precision="fp32").windows(examples)
    assert got.start_logits is None and got.end_logits is None
    np.testing.assert_allclose(got.bio_logits, want.bio_logits, atol=ATOL, rtol=0)


def test_the_wrapper_returns_plain_tensors_in_a_fixed_order(trained_dir):  # noqa: F811
    model = BioMrcForQuestionAnswering.from_pretrained(str(trained_dir))
    module = LogitsModule(model)
    outputs = module(**random_inputs(model.config, ["input_ids", "attention_mask"], 2, 9))
    assert module.output_names == ["start_logits", "end_logits", "bio_logits"] and not module.training
    assert all(isinstance(t, torch.Tensor) for t in outputs) and [tuple(t.shape) for t in outputs] == [(2, 9), (2, 9), (2, 9, 3)]


def test_a_graph_that_fails_at_another_shape_is_one_line(trained_dir):  # noqa: F811
    """ONNX Runtime's own error on a checked shape (Longformer's graph, traced for one length, fails on windows of 29
    tokens) is one line naming the shape and the encoder, not onnxruntime's traceback."""
    model = BioMrcForQuestionAnswering.from_pretrained(str(trained_dir))

    class FailsPast16:
        def __call__(self, inputs):
            if inputs["input_ids"].shape[1] != 16:
                raise RuntimeError("[ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running Reshape node")
            with torch.inference_mode():
                return {name: t.numpy() for name, t in zip(module.output_names, module(**inputs))}

    module = LogitsModule(model)
    assert checked_differences(module, FailsPast16(), model.config, ["input_ids", "attention_mask"], [(2, 16)])["start_logits"] == 0
    with pytest.raises(BioMrcError, match=r"^the exported graph does not run in ONNX Runtime on windows of 29 tokens \(batch 3\), "
                                          r"a shape other than the one it was traced at: the encoder \(BertModel\) does not "
                                          r"export to ONNX; not exported \(\[ONNXRuntimeError\] : 1 : FAIL"):
        checked_differences(module, FailsPast16(), model.config, ["input_ids", "attention_mask"], [(2, 16), (3, 29)])


def test_a_failing_run_leaves_onnx_runtime_silent(tmp_path, capfd):
    """A graph ONNX Runtime cannot run on its input raises, and ONNX Runtime itself writes no coloured
    ``[E:onnxruntime:...]`` line before the package's own one-line error."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    from bio_mrc.inference.onnx_runner import session_options

    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [2, 2])
    graph = helper.make_graph([helper.make_node("Reshape", ["x", "shape"], ["y"])], "reshape_to_2x2",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [shape])
    # IR 8, the lowest that opset 18 takes: onnx writes its own newest IR, which an older ONNX Runtime refuses
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8), str(tmp_path / "reshape.onnx"))
    session = ort.InferenceSession(str(tmp_path / "reshape.onnx"), session_options(ort, threads=1),
                                   providers=["CPUExecutionProvider"])
    assert session.run(None, {"x": np.arange(4, dtype=np.float32)})[0].shape == (2, 2)
    capfd.readouterr()
    with pytest.raises(Exception, match="cannot be reshaped"):
        session.run(None, {"x": np.zeros(5, dtype=np.float32)})
    assert capfd.readouterr().err == ""


def test_the_torchscript_exporter_takes_over_when_dynamo_fails(trained_dir, tmp_path, monkeypatch, sample_v1):  # noqa: F811
    export = torch.onnx.export

    def dynamo_fails(*args, dynamo=True, **kwargs):
        if dynamo:
            raise RuntimeError("simulated dynamo failure")
        return export(*args, dynamo=dynamo, **kwargs)

    monkeypatch.setattr(torch.onnx, "export", dynamo_fails)
    with pytest.warns(ExporterFallbackWarning, match="simulated dynamo failure"):
        record = export_onnx(trained_dir, tmp_path / "ts")
    assert record.exporter.endswith("(TorchScript)") and "simulated" in record.dynamo_error
    examples = sample_v1.examples[:3]
    got, want = TrainedModel.load(tmp_path / "ts").windows(examples), TrainedModel.load(trained_dir, precision="fp32").windows(examples)
    np.testing.assert_allclose(got.start_logits, want.start_logits, atol=ATOL, rtol=0)


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
def test_a_write_failure_in_the_dynamo_exporter_is_one_error_not_a_fallback(trained_dir, tmp_path, monkeypatch, code):  # noqa: F811
    """A full disk while the dynamo exporter wrote the graph fell back to the TorchScript exporter, which wrote a smaller
    graph in the room left, exit 0: the disk's error is the one to show, and nothing is left of the export."""
    from bio_mrc.errors import OutputError

    exporters = []

    def disk_fails(*args, dynamo=True, **kwargs):
        exporters.append(dynamo)
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(torch.onnx, "export", disk_fails)
    out = tmp_path / "exported"
    with pytest.raises(OutputError, match=re.escape(f"[Errno {code}] {os.strerror(code)} (in {out}")):
        export_onnx(trained_dir, out)
    assert exporters == [True] and not out.exists()


@pytest.mark.slow
def test_the_pipeline_runs_the_export(onnx_dir, trained_dir, sample_v1):  # noqa: F811
    from transformers import pipeline

    from bio_mrc.errors import ConfigError
    from bio_mrc.inference.onnx import OnnxModel

    example = sample_v1.examples[0]
    exported = pipeline("bio-mrc-qa", model=str(onnx_dir), device="cpu")
    assert isinstance(exported.model, OnnxModel)
    with pytest.raises(ConfigError, match="^device 'None': "):  # the text "None" is no device, given an export object too
        pipeline("bio-mrc-qa", model=exported.model, tokenizer=exported.tokenizer, device="None")
    original = pipeline("bio-mrc-qa", model=str(trained_dir), device="cpu", precision="fp32")
    for decoding in ("span", "bio", "joint"):
        ours = exported(question=example.question, context=example.context, decoding=decoding, top_k=3)
        theirs = original(question=example.question, context=example.context, decoding=decoding, top_k=3)
        assert [(a["start"], a["end"], a["answer"]) for a in ours] == [(a["start"], a["end"], a["answer"]) for a in theirs]
        assert [a["score"] for a in ours] == pytest.approx([a["score"] for a in theirs], abs=1e-4)


@pytest.mark.parametrize("command", [["extract", "--question", "Who?", "--context", "Bob came."], ["serve"]])
def test_bf16_for_an_onnx_export_is_one_line(tmp_path, capsys, monkeypatch, command):
    """bf16 is refused for an export before anything is read; it was a ValueError traceback from serve and extract."""
    folder = tmp_path / "exported"
    folder.mkdir()
    (folder / ONNX_FILE).write_bytes(b"a graph")
    (folder / "config.json").write_text('{"model_type": "bio_mrc"}')
    monkeypatch.setattr("uvicorn.run", lambda *a, **k: pytest.fail("served"))
    assert main([command[0], "--model", str(folder), "--precision", "bf16", *command[1:]]) == 2
    assert capsys.readouterr().err == (f"error: precision bf16 runs PyTorch models; {folder} is an ONNX export, which "
                                       "computes in fp32: choose precision fp32 or auto\n")


@pytest.mark.parametrize("command", [["extract", "--question", "Who?", "--context", "Bob came."], ["serve"],
                                     ["predict", "--data", str(SAMPLE_V1), "--output", "preds.json"]])
def test_a_gpu_for_an_onnx_export_is_one_line(tmp_path, capsys, monkeypatch, command):
    """ONNX Runtime runs an export on the CPU: on a machine with a GPU, --device cuda ran it there unsaid (the pipeline
    refuses that device); it is refused before anything is read, as bf16 is."""
    folder = tmp_path / "exported"
    folder.mkdir()
    (folder / ONNX_FILE).write_bytes(b"a graph")
    (folder / "config.json").write_text('{"model_type": "bio_mrc"}')
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a machine with one GPU
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr("uvicorn.run", lambda *a, **k: pytest.fail("served"))
    monkeypatch.chdir(tmp_path)
    line = (f"device cuda:0 runs PyTorch models; {folder} is an ONNX export, which runs on the CPU (ONNX Runtime's CPU "
            "provider): choose device cpu or auto")
    assert main([command[0], "--model", str(folder), "--device", "cuda:0", *command[1:]]) == 2
    assert capsys.readouterr().err == f"error: {line}\n"
    from bio_mrc.errors import ConfigError

    with pytest.raises(ConfigError, match=f"^{re.escape(line)}$"):
        AnswerExtractor.from_pretrained(folder, device="cuda:0")
    assert not (tmp_path / "preds.json").exists()


@pytest.mark.slow
def test_an_export_runs_on_the_cpu_on_a_machine_with_a_gpu(onnx_dir, monkeypatch, sample_v1, tmp_path):
    """transformers' pipeline() puts a model on GPU 0 where one is found and no device is given: an export was refused
    there (``runs on the CPU provider, not on cuda:0``), where every other door runs it on the CPU by default; and a GPU
    asked of an export is refused by every door, where ``device="cuda"`` ran it on the CPU unsaid."""
    import transformers.pipelines.base
    from transformers import AutoTokenizer, pipeline

    from bio_mrc.errors import ConfigError

    monkeypatch.setattr(transformers.pipelines.base, "is_torch_cuda_available", lambda: True)  # a machine with a GPU
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    exported = pipeline("bio-mrc-qa", model=str(onnx_dir))
    assert exported.device == torch.device("cpu")
    assert pipeline("bio-mrc-qa", model=str(onnx_dir), device="auto").device == torch.device("cpu")  # auto, as every door
    example = sample_v1.examples[0]
    assert exported(question=example.question, context=example.context)["answer"] == example.answer_texts()[0][0]
    refusal = "device {} runs PyTorch models; {} is an ONNX export, which runs on the CPU (ONNX Runtime's CPU provider): " \
              "choose device cpu or auto"
    with pytest.raises(ConfigError, match=f"^{re.escape(refusal.format('cuda:0', onnx_dir))}$"):  # asked for, it is refused
        pipeline("bio-mrc-qa", model=str(onnx_dir), device="cuda:0")  # in the line of every other door, not ModelFormatError's
    with pytest.raises(ConfigError, match=f"^{re.escape(refusal.format(0, onnx_dir))}$"):  # the export given as an object too
        pipeline("bio-mrc-qa", model=OnnxModel.load(onnx_dir), tokenizer=AutoTokenizer.from_pretrained(str(onnx_dir)), device=0)
    with pytest.raises(ConfigError, match=f"^{re.escape(refusal.format('cuda', onnx_dir))}$"):  # and by every other door alike
        AnswerExtractor.from_pretrained(onnx_dir, device="cuda")
    assert TrainedModel.load(onnx_dir, device="auto").backend == "onnx"
    # predict under a launcher: auto is each process's own GPU for a PyTorch model, the CPU for an export
    monkeypatch.setattr("bio_mrc.inference.sharding.Shard.device", property(lambda self: "cuda:0"))
    assert main(["predict", "--model", str(onnx_dir), "--data", str(SAMPLE_V1), "--output", str(tmp_path / "preds.json")]) == 0


@pytest.mark.parametrize("options, message", [
    ({"opset": 99}, "opset is an ONNX opset version from 7 to "), ({"opset": 6}, "got 6"), ({"opset": True}, "got True"),
    ({"atol": float("nan")}, "atol must be a finite number, got nan"),
    ({"atol": float("inf")}, "atol must be a finite number, got inf"), ({"atol": -1.0}, "got -1.0"), ({"atol": 0}, "got 0")])
def test_an_opset_or_tolerance_no_export_can_have_is_refused_before_any_work(tmp_path, options, message):
    """NaN passed every logit check and was written into the marker as JSON cannot hold it; opset 99 was ONNX Runtime's
    traceback after the export."""
    from bio_mrc.errors import ConfigError

    with pytest.raises(ConfigError, match=re.escape(message)):
        export_onnx(tmp_path / "no-model", tmp_path / "out", **options)
    assert not (tmp_path / "out").exists()


def test_an_onnx_export_given_as_the_model_is_refused_before_any_work(tmp_path, capsys):
    """Loading it as PyTorch found no weights and called the export an unfinished or partial copy."""
    exported = tmp_path / "exported"
    exported.mkdir()
    (exported / "config.json").write_text("{}", encoding="utf-8")
    (exported / ONNX_FILE).write_bytes(b"")
    from bio_mrc.errors import ConfigError

    with pytest.raises(ConfigError, match=f"^{re.escape(str(exported))} is an ONNX export; export the PyTorch model"):
        export_onnx(exported, tmp_path / "out")
    assert main(["export", "--model", str(exported), "--output", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip().endswith("is an ONNX export; export the PyTorch model it was made from")
    assert not (tmp_path / "out").exists()


def test_a_graph_onnx_runtime_cannot_run_is_one_line(monkeypatch, tmp_path):
    from bio_mrc.inference import onnx as exporter

    def invalid(*_args, **_kwargs):
        raise RuntimeError("[ONNXRuntimeError] : 10 : INVALID_GRAPH : No Op registered for Attention\nmore")

    monkeypatch.setattr(exporter.OnnxModel, "from_file", invalid)
    with pytest.raises(BioMrcError) as caught:
        exporter.checked_runner(tmp_path / ONNX_FILE, None, 26)
    assert str(caught.value) == ("ONNX Runtime cannot run the graph exported at opset 26 (choose another opset, e.g. 18): "
                                 "[ONNXRuntimeError] : 10 : INVALID_GRAPH : No Op registered for Attention")



@pytest.mark.slow
def test_an_export_logs_nothing_and_prints_nothing_but_its_record(trained_dir, tmp_path, capfd):  # noqa: F811
    import logging

    records = []
    handler = logging.Handler()
    handler.emit = records.append  # torch's own handler writes to the standard error it found when imported
    logging.getLogger("torch.onnx").addHandler(handler)
    try:
        record = export_onnx(trained_dir, tmp_path / "quiet")
    finally:
        logging.getLogger("torch.onnx").removeHandler(handler)
    assert record.exporter == "torch.onnx.export(dynamo=True)"
    # were four lines on standard error, "torchvision is not installed. Skipping torchvision::nms" and the like
    assert [r.getMessage() for r in records if r.levelno >= logging.WARNING] == []
    assert capfd.readouterr() == ("", "")


@pytest.mark.slow
def test_an_export_logs_nothing_into_a_log_at_info(trained_dir, tmp_path, caplog):  # noqa: F811
    """``logging.basicConfig(level=logging.INFO)`` in the caller: the export added some seventy INFO records of
    onnxscript's and onnx_ir's optimizer passes (``Removed 12 unused nodes``) to the caller's log."""
    import logging

    caplog.set_level(logging.INFO)
    export_onnx(trained_dir, tmp_path / "quiet")
    assert [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno > logging.DEBUG] == []


@pytest.mark.slow
def test_a_model_saved_in_bf16_exports_in_fp32(trained_dir, tmp_path, sample_v1):  # noqa: F811
    """Weights saved in bfloat16 (``model.to(torch.bfloat16).save_pretrained``) were exported as a bf16 graph, which
    ONNX Runtime's CPU provider cannot run: ``cannot run the graph exported at opset 18 (choose another --opset, e.g.
    18)``. They are exported in fp32, and answer as the fp32 copy of those weights does in PyTorch."""
    import shutil

    saved = tmp_path / "bf16"
    shutil.copytree(trained_dir, saved)
    BioMrcForQuestionAnswering.from_pretrained(str(trained_dir)).to(torch.bfloat16).save_pretrained(str(saved))
    record = export_onnx(saved, tmp_path / "exported")
    assert record.format == "onnx"
    reference = TrainedModel.load(saved, precision="fp32", device="cpu")
    reference.model.float()
    examples = sample_v1.examples[:3]
    expected, actual = reference.windows(examples), TrainedModel.load(tmp_path / "exported").windows(examples)
    np.testing.assert_allclose(actual.start_logits, expected.start_logits, atol=ATOL)


@pytest.mark.slow
def test_an_export_of_a_tuned_model_answers_as_it_does(trained_dir, tmp_path, sample_v1):  # noqa: F811
    """The settings tuned into config.json travel with the export and apply alike: no-answer thresholds (which abstain
    on some of these questions), calibrators, the span-count rules and the BIO length prior, every decoding, single and
    multi-span, and one question over several documents."""
    import shutil

    from bio_mrc.inference.tuning import save_tuned_settings
    from bio_mrc.model import BioMrcConfig

    tuned = tmp_path / "tuned"
    shutil.copytree(trained_dir, tuned)
    config = BioMrcConfig.from_pretrained(tuned)
    thresholds = {"span": -15.0, "bio/ratio": -8.0, "joint": -22.0}
    beta = {"method": "beta", "a": 1.3, "b": 0.7, "c": 0.2, "correct_if": "f1 > 0.5", "questions": 40}
    settings = {"bio_length_prior": 0.8, "min_span_probabilities": {"span": 0.05, "bio": 0.3, "joint": 0.2},
                "calibration": {name: beta | {"no_answer_threshold": thresholds[key]}
                                for name, key in (("span", "span"), ("bio", "bio/ratio"), ("joint", "joint"))}}
    assert save_tuned_settings(tuned, config, thresholds, settings, {"description": "dev.json", "questions": 40,
                                                                     "content_hash": "aaaa"})
    export_onnx(tuned, tmp_path / "exported")
    questions, contexts = [e.question for e in sample_v1.examples], [e.context for e in sample_v1.examples]
    abstained = 0
    for decoding in ("span", "bio", "joint"):
        ours = AnswerExtractor.from_pretrained(tmp_path / "exported", decoding=decoding)
        theirs = AnswerExtractor.from_pretrained(tuned, precision="fp32", decoding=decoding)
        for multi_span in (False, True):
            got, want = ours(questions, contexts, multi_span=multi_span), theirs(questions, contexts, multi_span=multi_span)
            for a, b in zip(got, want):
                assert [(s.text, s.start, s.end) for s in a.spans] == [(s.text, s.start, s.end) for s in b.spans]
                assert a.abstain == b.abstain and a.probability == pytest.approx(b.probability, abs=1e-5)
                assert [s.score for s in a.spans] == pytest.approx([s.score for s in b.spans], abs=1e-4)
                abstained += a.abstain
            got, want = ours(questions[0], contexts, multi_span=multi_span), theirs(questions[0], contexts, multi_span=multi_span)
            assert [(x.document, x.start, x.end) for x in got.answers] == [(x.document, x.start, x.end) for x in want.answers]
    assert abstained > 0


@pytest.mark.slow
def test_the_export_card_says_it_is_an_onnx_export_and_keeps_saying_so(onnx_dir, trained_dir, tmp_path):  # noqa: F811
    """The card of an export named a PyTorch model folder's contents: the export, its opset and its source are said,
    and the hub metadata tags it onnx, in the card the export writes and in one remade from the folder (as tune does)."""
    from huggingface_hub import ModelCard

    from bio_mrc.model_card import write_model_card

    folder = tmp_path / "exported"
    shutil.copytree(onnx_dir, folder)
    for _ in range(2):
        card = ModelCard.load(folder / "README.md")
        assert "onnx" in card.data.tags
        assert (f"This folder is an ONNX export (`{ONNX_FILE}`, opset {DEFAULT_OPSET}, by `torch.onnx.export(dynamo=True)`, "
                f"its logits within {TOLERANCE:g} of PyTorch's) of the bio_mrc model `.../") in card.text
        assert "ONNX Runtime" in card.text
        write_model_card(folder)


@pytest.mark.slow
def test_tune_tunes_an_export_as_it_does_a_model_folder(onnx_dir, tmp_path, capsys):  # noqa: F811
    """An export keeps the settings its source had when exported; `tune` on the export's own folder is the way to a
    tuned export: its copy keeps the graph and the marker, loads as an export and decodes with the tuned settings."""
    out = tmp_path / "tuned-export"
    assert main(["tune", "--model", str(onnx_dir), "--data", str(SAMPLE_V1), "--output-dir", str(out),
                 "--min-calibration-questions", "8"]) == 0
    capsys.readouterr()
    assert (out / "model.onnx").read_bytes() == (onnx_dir / "model.onnx").read_bytes()
    assert (out / "bio_mrc_export.json").read_bytes() == (onnx_dir / "bio_mrc_export.json").read_bytes()
    config = json.loads((out / "config.json").read_text())
    assert config["tuned_on"]["questions"] == 8 and config["bio_length_prior"] is not None
    assert json.loads((onnx_dir / "config.json").read_text()).get("tuned_on") is None  # the export itself untouched
    tuned = TrainedModel.load(out)
    assert tuned.backend == "onnx"
    assert tuned.decode_config(DecodeConfig()).bio_length_prior == config["bio_length_prior"]
