"""The encoder's attention kernels: one it cannot run here, asked through the pipeline door, is one line before the
weights load, naming the kernels it can run."""

import pytest

from bio_mrc.inference.pipeline import TASK
from bio_mrc.model import attention_kernels

from .conftest import untrained_model_folder


@pytest.fixture(scope="module")
def model_dir(tiny_encoder_dir, tmp_path_factory):
    return untrained_model_folder(tiny_encoder_dir, tmp_path_factory.mktemp("kernels") / "model", max_seq_length=48,
                                  doc_stride=16, max_query_length=12)


def test_an_encoder_runs_the_kernels_its_class_supports():
    from transformers import BertConfig, FunnelConfig

    found, kernels = attention_kernels(FunnelConfig())  # no sdpa, flash or flex attention in its class
    assert found.__name__ == "FunnelModel" and kernels == ["eager", "paged|eager"]
    found, kernels = attention_kernels(BertConfig())
    assert found.__name__ == "BertModel" and {"eager", "sdpa"} <= set(kernels)


def test_the_packages_training_kernel_is_not_offered_once_a_training_registered_it(monkeypatch):
    """Training under bf16 may register the attention in fp32 (``bio_mrc.fp32_attention``) in transformers' global
    table: a later refusal naming the kernels an encoder runs must not list it, for a class without SDPA least of all."""
    from transformers import AttentionInterface, BertConfig, FunnelConfig
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    from bio_mrc.fp32_attention import ATTENTION_NAME, sdpa_in_fp32

    monkeypatch.setitem(ALL_ATTENTION_FUNCTIONS._global_mapping, ATTENTION_NAME, sdpa_in_fp32)
    assert ATTENTION_NAME in AttentionInterface().valid_keys()
    assert attention_kernels(FunnelConfig())[1] == ["eager", "paged|eager"]
    assert ATTENTION_NAME not in attention_kernels(BertConfig())[1]


def test_flash_attention_needs_a_device_its_builds_run_on(monkeypatch):
    from transformers import BertConfig
    from transformers.modeling_flash_attention_utils import FLASH_ATTENTION_COMPATIBILITY_MATRIX

    for entry in FLASH_ATTENTION_COMPATIBILITY_MATRIX.values():
        monkeypatch.setitem(entry, "supported_devices", ((lambda: False, "cuda"),))
    assert not [name for name in attention_kernels(BertConfig())[1] if name.startswith("flash")]


def _loader_never_called(monkeypatch):
    from bio_mrc.inference.pipeline import QuietModelLoader

    def refused(*args, **kwargs):
        raise AssertionError("the model was loaded before the kernel was checked")

    monkeypatch.setattr(QuietModelLoader, "from_pretrained", refused)


@pytest.mark.parametrize("kernel", ["flash_attention_2", "flash_attention_3", "flex_attention", "sdpa"])
def test_a_kernel_the_encoder_cannot_run_here_is_refused_in_one_line_naming_those_it_can(model_dir, monkeypatch, kernel):
    """``flash_attention_2`` was transformers' ImportError or, with its kernels package, a ``Could not load model …``
    traceback of each loader; ``sdpa`` on an encoder without it was the same traceback."""
    from transformers import AutoConfig, pipeline

    from bio_mrc import model as bio_mrc_model

    encoder = AutoConfig.from_pretrained(str(model_dir)).encoder
    found, runs = attention_kernels(encoder)
    if kernel in runs:  # where this machine runs it, the encoder is made to lack it
        monkeypatch.setattr(bio_mrc_model, "attention_kernels", lambda config: (found, [k for k in runs if k != kernel]))
        runs = [k for k in runs if k != kernel]
    _loader_never_called(monkeypatch)
    with pytest.raises(ValueError) as refused:
        pipeline(TASK, model=str(model_dir), device="cpu", model_kwargs={"attn_implementation": kernel})
    shown = ", ".join(map(repr, runs[:-1])) + f" and {runs[-1]!r}"
    assert str(refused.value) == (f"model_kwargs['attn_implementation'] {kernel!r}: the model's encoder, BertModel, runs "
                                  f"{shown} on this machine: give one of them ({model_dir})")


def test_a_kernel_the_encoder_runs_loads(model_dir):
    from transformers import pipeline

    qa = pipeline(TASK, model=str(model_dir), device="cpu", model_kwargs={"attn_implementation": "eager"})
    assert qa.model.encoder.config._attn_implementation == "eager"


def test_the_other_doors_take_no_kernel_option(model_dir):
    """``AnswerExtractor`` and ``TrainedModel.load`` run the encoder's default kernel: the keyword is refused by name."""
    from bio_mrc.inference import AnswerExtractor, TrainedModel

    with pytest.raises(TypeError, match="attn_implementation"):
        AnswerExtractor.from_pretrained(str(model_dir), attn_implementation="flash_attention_2")
    with pytest.raises(TypeError, match="attn_implementation"):
        TrainedModel.load(str(model_dir), attn_implementation="flash_attention_2")
