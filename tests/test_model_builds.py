"""Model builds draw no values that loading replaces, and every tensor a build keeps holds the values it held before.

A model loaded from a folder, the folder checks' builds (shapes, the encoder's settings) and the encoder's positions
are built on the meta device, where torch's init functions draw nothing: they are left out. A head a folder lacks
(``from_pretrained(..., heads=...)``, as ``train --init-from`` builds it), fresh heads on an encoder and a converted QA
checkpoint keep every value they had, tensor for tensor, under the same seed.
"""

import contextlib
import importlib
import json
import threading

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoTokenizer, BertConfig, BertForQuestionAnswering

from bio_mrc.inference.loading import TrainedModel
from bio_mrc.model import BioMrcConfig, BioMrcForQuestionAnswering, FreshHeadsNote
from bio_mrc.model_folder import builds, expected_shapes, weights
from bio_mrc.qa_checkpoints import config_positions, span_model_from_qa_checkpoint

from .conftest import untrained_model_folder

INIT_FUNCTIONS = (
    "uniform_",
    "normal_",
    "constant_",
    "ones_",
    "zeros_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "trunc_normal_",
    "orthogonal_",
)
WINDOWS = {"max_seq_length": 48, "doc_stride": 16, "max_query_length": 12}


@pytest.fixture
def init_calls(monkeypatch):
    """The calls of torch's init functions (``torch.nn.init``, which every torch module's constructor calls), by name."""
    calls = []
    for name in INIT_FUNCTIONS:
        original = getattr(torch.nn.init, name)

        def counted(*args, _name=name, _original=original, **kwargs):
            calls.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(torch.nn.init, name, counted)
    return calls


def without_skipped_init(monkeypatch):
    """Builds as before: every init function runs, on the meta device too (transformers' ``no_init_weights``, which
    every build that skips initialisation enters, does nothing)."""
    monkeypatch.setattr(importlib.import_module("transformers.initialization"), "no_init_weights", contextlib.nullcontext)


def state(model) -> dict[str, torch.Tensor]:
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}


def assert_same_tensors(got: dict, expected: dict) -> None:
    assert sorted(got) == sorted(expected)
    different = [name for name in expected if got[name].dtype != expected[name].dtype or not torch.equal(got[name], expected[name])]
    assert not different, different[:5]


def test_loading_a_model_runs_no_init_function(tiny_encoder_dir, tmp_path, init_calls):
    """The folder checks' build (its shapes, built once a process: a config no earlier load built) and the load's own
    build are both on the meta device, where every drawn value would be replaced or never read."""
    folder = untrained_model_folder(tiny_encoder_dir, tmp_path / "model", heads="span+bio", bio_prior=[1, 2, 97], **WINDOWS)
    init_calls.clear()
    model = TrainedModel.load(folder, device="cpu").model
    assert init_calls == []
    assert_same_tensors(state(model), load_file(folder / "model.safetensors"))


def test_the_folder_checks_and_positions_build_without_init_functions(tiny_encoder_dir, tmp_path, init_calls):
    folder = untrained_model_folder(tiny_encoder_dir, tmp_path / "model", heads="span", bio_prior=[3, 1, 96])
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    init_calls.clear()
    shapes = expected_shapes(BioMrcForQuestionAnswering, config, folder)
    assert config_positions(BioMrcConfig.from_pretrained(folder).encoder) == 128
    assert init_calls == []
    saved = load_file(folder / "model.safetensors")
    assert {name: tuple(shape) for name, shape in shapes.items()} == {name: tuple(t.shape) for name, t in saved.items()}
    assert {shape.dtype for shape in shapes.values()} == {"F32"}


def test_the_checks_see_the_same_shapes_and_settings_as_a_build_that_initialises(tiny_encoder_dir, tmp_path, monkeypatch, init_calls):
    folder = untrained_model_folder(tiny_encoder_dir, tmp_path / "model", heads="bio", bio_prior=[2, 3, 95])
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    weights._built_shapes.cache_clear()
    init_calls.clear()
    skipped = expected_shapes(BioMrcForQuestionAnswering, config, folder)
    encoder = BioMrcConfig.from_pretrained(folder).encoder
    positions = config_positions(encoder)
    assert init_calls == []
    without_skipped_init(monkeypatch)
    weights._built_shapes.cache_clear()
    initialised = expected_shapes(BioMrcForQuestionAnswering, config, folder)
    assert "kaiming_uniform_" in init_calls  # the build as it was: each Linear layer's init ran on the meta device
    assert skipped == initialised
    assert [shape.dtype for shape in skipped.values()] == [shape.dtype for shape in initialised.values()]
    assert config_positions(encoder) == positions


def test_a_head_the_folder_lacks_draws_what_it_drew_and_starts_at_its_prior(tiny_encoder_dir, tmp_path, monkeypatch):
    """The BIO head a span model lacks: its weight is the one normal draw of std ``initializer_range`` under the seed
    (nothing else draws before it), its bias the log prior (BIOHead.reset_bias); every other tensor is the file's; and
    the same as a build that initialises on the meta device too."""
    folder = untrained_model_folder(tiny_encoder_dir, tmp_path / "span", heads="span")
    saved = load_file(folder / "model.safetensors")

    def added():
        torch.manual_seed(7)
        with pytest.warns(FreshHeadsNote, match="has no bio head"):
            model = BioMrcForQuestionAnswering.from_pretrained(folder, heads="span+bio", bio_prior=[1.0, 2.0, 7.0])
        return state(model), torch.random.get_rng_state()

    got, after = added()
    torch.manual_seed(7)
    drawn = torch.empty(3, 32).normal_(0.0, 0.02)
    assert torch.equal(got["bio_head.classifier.weight"], drawn)
    assert torch.equal(got["bio_head.classifier.bias"], torch.log(torch.tensor([0.1, 0.2, 0.7])))
    assert_same_tensors({name: got[name] for name in saved}, saved)
    without_skipped_init(monkeypatch)
    expected, expected_after = added()
    assert_same_tensors(got, expected)
    assert torch.equal(after, expected_after)  # the draws after the load are those they were


@pytest.mark.parametrize("heads", ["span", "bio", "span+bio"])
def test_fresh_heads_on_an_encoder_are_the_draws_they_were(tiny_encoder_dir, monkeypatch, heads):
    def fresh():
        torch.manual_seed(3)
        model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads=heads, bio_prior=[1.0, 1.0, 8.0])
        return state(model), torch.random.get_rng_state()

    got, after = fresh()
    without_skipped_init(monkeypatch)
    expected, expected_after = fresh()
    assert_same_tensors(got, expected)
    assert torch.equal(after, expected_after)
    if "bio" in heads:
        assert torch.equal(got["bio_head.classifier.bias"], torch.log(torch.tensor([0.1, 0.1, 0.8])))
    assert all(tensor.abs().max() > 0 for name, tensor in got.items() if name.endswith("weight"))


def test_a_converted_qa_checkpoint_holds_its_own_weights(tiny_encoder_dir, tmp_path, monkeypatch):
    folder = tmp_path / "qa"
    torch.manual_seed(5)
    BertForQuestionAnswering(BertConfig.from_pretrained(tiny_encoder_dir)).save_pretrained(folder)
    AutoTokenizer.from_pretrained(str(tiny_encoder_dir)).save_pretrained(str(folder))
    saved = load_file(folder / "model.safetensors")

    def converted():
        torch.manual_seed(6)
        return state(span_model_from_qa_checkpoint(folder)[0]), torch.random.get_rng_state()

    got, after = converted()
    assert torch.equal(got["span_head.qa_outputs.weight"], saved["qa_outputs.weight"])
    assert all(torch.equal(got[f"encoder.{name[len('bert.') :]}"], tensor) for name, tensor in saved.items() if name.startswith("bert."))
    without_skipped_init(monkeypatch)
    expected, expected_after = converted()
    assert_same_tensors(got, expected)
    assert torch.equal(after, expected_after)


def test_the_weight_checks_see_the_non_finite_values_a_folder_holds(tiny_encoder_dir, tmp_path):
    """A NaN saved in a head and an infinity in the encoder are what the loaded model holds: the load refuses it,
    naming both tensors in order."""
    from safetensors.torch import save_file

    from bio_mrc.errors import ModelFormatError

    folder = untrained_model_folder(tiny_encoder_dir, tmp_path / "model", heads="span+bio", **WINDOWS)
    saved = load_file(folder / "model.safetensors")
    saved["bio_head.classifier.weight"][1, 2] = float("nan")
    saved["encoder.encoder.layer.0.output.dense.bias"][0] = float("inf")
    save_file(saved, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(
        ModelFormatError,
        match=r"NaN or infinite values \(encoder\.encoder\.layer\.0\.output\.dense\.bias, "
        r"bio_head\.classifier\.weight\)",
    ):
        TrainedModel.load(folder, device="cpu")


class WatchedLock:
    """The builds' lock, saying when a thread asks for it while another holds it."""

    def __init__(self) -> None:
        self.lock, self.asked_while_held = threading.RLock(), threading.Event()

    def __enter__(self) -> "WatchedLock":
        if not self.lock.acquire(blocking=False):
            self.asked_while_held.set()
            self.lock.acquire()
        return self

    def __exit__(self, *exc_info) -> None:
        self.lock.release()


def test_a_build_waits_while_another_thread_builds_without_init(tiny_encoder_dir, monkeypatch):
    """Skipping initialisation replaces torch's init functions for the whole process: a build of the package's in
    another thread meanwhile waits for it, and draws what it draws alone."""
    config = BioMrcConfig(encoder=BertConfig.from_pretrained(tiny_encoder_dir).to_dict(), heads="span+bio")
    torch.manual_seed(11)
    alone = state(BioMrcForQuestionAnswering(config))
    skipping, release, built, lock = threading.Event(), threading.Event(), {}, WatchedLock()
    monkeypatch.setattr(builds, "_BUILDS", lock)

    def skip():
        with builds.meta_build():
            skipping.set()
            release.wait(10)

    def build():
        torch.manual_seed(11)
        built.update(state(BioMrcForQuestionAnswering(config)))

    holder = threading.Thread(target=skip)
    holder.start()
    skipping.wait(10)
    builder = threading.Thread(target=build)
    builder.start()
    asked = lock.asked_while_held.wait(10)  # the build has come to the lock the skipping one holds (events, not times)
    waited = asked and not built and builder.is_alive()
    release.set()
    holder.join(10), builder.join(10)
    assert waited
    assert_same_tensors(built, alone)
