"""The precision option: fp32 and bf16 train and decode through the same code; auto resolves as documented."""

import json

import numpy as np
import pytest
import torch

from bio_mrc import precision as precision_module
from bio_mrc.inference import AnswerExtractor, TrainedModel
from bio_mrc.precision import autocast, native_bf16, resolve_precision
from bio_mrc.training.train import TrainConfig, load_run_record, train_model


@pytest.mark.parametrize("features, expected", [
    ({"amx_bf16": True, "avx512_bf16": False}, "bf16"),
    ({"amx_bf16": False, "avx512_bf16": True}, "bf16"),
    ({"amx_bf16": False, "avx512_bf16": False}, "fp32"),
])
def test_auto_is_bf16_exactly_where_the_cpu_computes_it_natively(monkeypatch, features, expected):
    monkeypatch.setattr(precision_module, "cpu_features", lambda: features)
    assert native_bf16("cpu") is (expected == "bf16")
    assert resolve_precision("auto", "cpu") == expected
    # explicit choices are honoured whatever the hardware; None is the default (auto)
    assert resolve_precision("bf16", "cpu") == "bf16" and resolve_precision("fp32", "cpu") == "fp32"
    assert resolve_precision(None, "cpu") == expected


def test_auto_on_a_gpu_asks_cuda_for_native_bf16(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for major in (8, 7):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None, m=major: (m, 0))
        assert resolve_precision("auto", "cuda") == ("bf16" if major == 8 else "fp32")


def test_auto_asks_the_gpu_the_model_is_on_not_the_current_one(monkeypatch):
    """An H100 as cuda:0 (current) beside a T4 as cuda:1: a model on the T4 answers in fp32 (its bf16 is emulated),
    one on the H100 in bf16; torch.cuda.is_bf16_supported answers for the current GPU alone."""
    capabilities = {0: (9, 0), 1: (7, 5)}

    def capability(device=None):
        index = torch.device(device).index if device is not None else None
        return capabilities[0 if index is None else index]

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_capability", capability)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: capabilities[0][0] >= 8)
    assert resolve_precision("auto", "cuda:1") == "fp32" and native_bf16(torch.device("cuda", 1)) is False
    assert resolve_precision("auto", "cuda:0") == "bf16" and resolve_precision("auto", "cuda") == "bf16"


def test_cpu_features_fall_back_to_proc_cpuinfo(monkeypatch):
    monkeypatch.delattr(torch.cpu, "get_capabilities", raising=False)
    features = precision_module.cpu_features()
    assert set(features) == {"amx_bf16", "avx512_bf16"} and all(isinstance(v, bool) for v in features.values())


def test_unknown_precision_is_refused():
    from bio_mrc.errors import ConfigError

    with pytest.raises(ConfigError, match="precision must be one of"):  # a ValueError, as every bad option
        resolve_precision("fp16")
    with pytest.raises(ConfigError, match="precision must be one of"):
        TrainedModel.load("nowhere", precision="half")


def test_bf16_autocast_runs_matrix_products_in_bf16():
    x = torch.randn(4, 8)
    with autocast("bf16", "cpu"):
        assert (x @ x.T).dtype == torch.bfloat16
    with autocast("fp32", "cpu"):
        assert (x @ x.T).dtype == torch.float32


@pytest.fixture(scope="module")
def trained_in(tiny_encoder_dir, tmp_path_factory, sample_v1):
    """The tiny model trained once in each precision."""
    models = {}
    for precision in ("fp32", "bf16"):
        config = TrainConfig(encoder=str(tiny_encoder_dir), heads="span+bio", max_seq_length=48, doc_stride=16,
                             max_query_length=12, epochs=1, batch_size=4, learning_rate=1e-3, precision=precision)
        models[precision] = train_model(sample_v1.examples, config, tmp_path_factory.mktemp(precision)).model_dir
    return models


@pytest.mark.parametrize("train_precision", ["fp32", "bf16"])
@pytest.mark.parametrize("inference_precision", ["fp32", "bf16", "auto"])
def test_each_precision_trains_and_decodes_to_exact_substrings(trained_in, sample_v1, train_precision, inference_precision):
    model_dir = trained_in[train_precision]
    assert load_run_record(model_dir)["train"]["precision"] == train_precision  # recorded with the run
    extractor = AnswerExtractor.from_pretrained(model_dir, precision=inference_precision, multi_span=True)
    assert extractor.trained.precision == inference_precision
    examples = sample_v1.examples[:6]
    predictions = extractor([e.question for e in examples], [e.context for e in examples])
    assert len(predictions) == len(examples) and all(prediction.spans for prediction in predictions)
    for example, prediction in zip(examples, predictions):
        for span in prediction.spans:
            assert example.context[span.start : span.end] == span.text


def test_bf16_logits_stay_close_to_fp32(trained_in, sample_v1):
    examples = sample_v1.examples[:6]
    fp32 = TrainedModel.load(trained_in["fp32"], precision="fp32").windows(examples)
    bf16 = TrainedModel.load(trained_in["fp32"], precision="bf16").windows(examples)
    finite = torch.isfinite(torch.from_numpy(fp32.start_logits))
    assert not torch.equal(torch.from_numpy(fp32.start_logits), torch.from_numpy(bf16.start_logits))  # bf16 really ran
    difference = (torch.from_numpy(fp32.start_logits) - torch.from_numpy(bf16.start_logits))[finite].abs().max()
    assert difference < 0.1


def test_fp32_is_honoured_for_a_model_saved_in_bf16(trained_in, sample_v1, tmp_path):
    import shutil

    from bio_mrc.model import BioMrcForQuestionAnswering

    halved = tmp_path / "bf16-weights"
    shutil.copytree(trained_in["fp32"], halved)
    BioMrcForQuestionAnswering.from_pretrained(str(trained_in["fp32"]), dtype=torch.bfloat16).save_pretrained(str(halved))
    loaded = TrainedModel.load(halved, precision="fp32")
    assert {p.dtype for p in loaded.model.parameters()} == {torch.float32}  # not the bf16 the folder holds
    examples = sample_v1.examples[:6]
    rounded = BioMrcForQuestionAnswering.from_pretrained(str(trained_in["fp32"]), dtype=torch.bfloat16).float()
    expected = TrainedModel(rounded, loaded.tokenizer, loaded.features, str(halved), "fp32").windows(examples)
    np.testing.assert_array_equal(loaded.windows(examples).start_logits, expected.start_logits)  # fp32 arithmetic on its weights


def test_auto_training_records_what_it_resolved_to(tiny_encoder_dir, tmp_path, sample_v1, monkeypatch):
    monkeypatch.setattr(precision_module, "cpu_features", lambda: {"amx_bf16": False, "avx512_bf16": False})
    config = TrainConfig(encoder=str(tiny_encoder_dir), heads="span", max_seq_length=48, doc_stride=16, max_query_length=12,
                         epochs=1, batch_size=8, precision="auto")
    model_dir = train_model(sample_v1.examples[:8], config, tmp_path / "m").model_dir
    assert json.loads((model_dir / "bio_mrc_run.json").read_text())["train"]["precision"] == "fp32"


def test_the_cli_takes_a_precision(tiny_encoder_dir):
    from bio_mrc.cli import build_parser

    for command in (["predict", "--model", "m", "--data", "d", "--output", "o"], ["tune", "--model", "m", "--data", "d"],
                    ["extract", "--model", "m", "--question", "q"]):
        assert build_parser().parse_args(command).precision == "auto"
        assert build_parser().parse_args(command + ["--precision", "fp32"]).precision == "fp32"


def test_bf16_training_really_trains_in_bf16(trained_in):
    from safetensors.torch import load_file

    fp32, bf16 = (load_file(str(trained_in[p] / "model.safetensors")) for p in ("fp32", "bf16"))
    assert fp32.keys() == bf16.keys()
    assert all(bf16[name].dtype == torch.float32 for name in bf16)  # the weights stay fp32
    assert any(not torch.equal(fp32[name], bf16[name]) for name in fp32)  # the same seed, other arithmetic


def test_a_loaded_model_runs_on_the_gpu_when_there_is_one(trained_in, monkeypatch):
    from bio_mrc.model import BioMrcForQuestionAnswering

    assert precision_module.default_device() == ("cuda" if torch.cuda.is_available() else "cpu")
    moved_to = []
    monkeypatch.setattr(BioMrcForQuestionAnswering, "to", lambda self, device: moved_to.append(device) or self)
    monkeypatch.setattr(precision_module, "default_device", lambda: "cuda")  # what a GPU machine reports
    TrainedModel.load(trained_in["fp32"])
    TrainedModel.load(trained_in["fp32"], device="cpu")
    assert moved_to == ["cuda", "cpu"]


def test_a_model_answers_in_passes_of_16_windows_on_a_cpu_and_128_on_a_gpu(trained_in, sample_v1, monkeypatch):
    from bio_mrc.inference import forward
    from bio_mrc.model import BioMrcForQuestionAnswering
    from bio_mrc.model_defaults import GPU_INFERENCE_BATCH_SIZE, INFERENCE_BATCH_SIZE

    trained = TrainedModel.load(trained_in["fp32"], device="cpu")
    assert trained.batch_size == INFERENCE_BATCH_SIZE and AnswerExtractor(trained).batch_size == INFERENCE_BATCH_SIZE
    assert AnswerExtractor(trained, batch_size=3).batch_size == 3
    passes = []
    real = forward.predict_windows
    monkeypatch.setattr("bio_mrc.inference.loading.predict_windows",
                        lambda *args: passes.append(args[4]) or real(*args))
    default, explicit = trained.windows(sample_v1.examples), trained.windows(sample_v1.examples, batch_size=2)
    assert passes == [INFERENCE_BATCH_SIZE, 2]
    inside = default.mask  # past a window's end the logits depend on its batch's padding; decoding masks them
    np.testing.assert_allclose(default.start_logits[inside], explicit.start_logits[inside], atol=1e-4)
    monkeypatch.setattr(BioMrcForQuestionAnswering, "device", property(lambda self: torch.device("cuda", 0)))
    assert trained.batch_size == GPU_INFERENCE_BATCH_SIZE and AnswerExtractor(trained).batch_size == GPU_INFERENCE_BATCH_SIZE


@pytest.mark.usefixtures("fresh_precision_choices")
def test_train_pinned_to_fp32_scores_its_held_out_questions_in_fp32(tiny_encoder_dir, tmp_path, monkeypatch):
    """On a CPU where bf16 measures faster, `train --precision fp32 --eval` scored during training in bf16 (auto)."""
    from bio_mrc import precision_probe
    from bio_mrc.cli import main
    from bio_mrc.inference import forward

    from .conftest import SAMPLE_V1, WINDOW_ARGS

    monkeypatch.setattr(precision_module, "cpu_features", lambda: {"amx_bf16": False, "avx512_bf16": True})
    monkeypatch.setattr(precision_probe, "measure_rate", lambda shapes, phase, precision: 100.0 if precision == "fp32" else 300.0)
    answered_in = []
    runner = forward.TorchRunner.__init__
    monkeypatch.setattr(forward.TorchRunner, "__init__",
                        lambda self, *args: runner(self, *args) or answered_in.append(self.precision))
    code = main(["train", "--train", str(SAMPLE_V1), "--limit", "4", "--eval", str(SAMPLE_V1), "--output-dir", str(tmp_path / "m"),
                 "--encoder", str(tiny_encoder_dir), "--epochs", "1", "--precision", "fp32",
                 "--training-args", '{"eval_strategy": "epoch"}', *WINDOW_ARGS])
    assert code == 0 and answered_in == ["fp32"]
