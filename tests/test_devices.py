"""Device choices of the code paths that run on a GPU or an Apple GPU, exercised on the CPU with torch's probes replaced."""

import pytest
import torch

from bio_mrc import cli, launcher
from bio_mrc.errors import ConfigError
from bio_mrc.inference import sharding
from bio_mrc.inference.loading import TrainedModel

from .conftest import SAMPLE_V1, saved_model_files


def _two_gpus(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)


@pytest.mark.parametrize("asked, expected", [("cpu", "cpu"), ("cuda:0", "cuda:0"), ("auto", "cuda:1")])
def test_predict_under_torchrun_runs_on_the_device_asked(monkeypatch, tmp_path, asked, expected):
    """Under torchrun on a machine with GPUs each process took its LOCAL_RANK's GPU, also where --device named another."""
    _two_gpus(monkeypatch)
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setattr(sharding.Shard, "from_environment", classmethod(lambda cls: cls(rank=1, world=2)))
    loaded = []

    def load(model, **options):
        loaded.append(options["device"])
        raise ConfigError("stop here")

    monkeypatch.setattr(TrainedModel, "load", staticmethod(load))
    saved_model_files(tmp_path / "model")  # past predict's checks before the model loads
    argv = ["predict", "--model", str(tmp_path / "model"), "--data", str(SAMPLE_V1), "--output", str(tmp_path / "p.json")]
    assert cli.main([*argv, "--device", asked]) == 2
    assert loaded == [expected]


def test_train_on_a_gpu_number_the_machine_lacks_names_it(monkeypatch):
    """``train --device cuda:1`` on a one-GPU machine: CUDA_VISIBLE_DEVICES=1 leaves torch no GPU, and the error said
    ``device 'cuda': this machine has no CUDA GPU that torch can use`` of a machine with one."""
    from bio_mrc import precision
    from bio_mrc.precision import pin_process_device

    monkeypatch.setattr(precision, "_PINNED", {})  # the pin stays with this test
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    shown = lambda: __import__("os").environ.get("CUDA_VISIBLE_DEVICES", "0") == "0"  # noqa: E731 - GPU 0 alone exists
    monkeypatch.setattr(torch.cuda, "is_available", shown)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: int(shown()))
    with pytest.raises(ConfigError, match=r"^device 'cuda:1': torch finds no CUDA GPU numbered 1 on this machine$"):
        pin_process_device("cuda:1")
    assert "CUDA_VISIBLE_DEVICES" not in __import__("os").environ  # a refused pin leaves the variable as it was
    pin_process_device("cuda:0")  # the GPU it has


def test_train_under_a_launcher_refuses_one_gpu_number_for_every_process(monkeypatch):
    """``torchrun --nproc_per_node 2 ... train --device cuda:1`` showed GPU 1 alone to both processes, and the second
    asked for its GPU 1 of one (torch's "invalid device ordinal"); refused in one line before CUDA_VISIBLE_DEVICES changes."""
    from bio_mrc import precision
    from bio_mrc.precision import pin_process_device

    monkeypatch.setattr(precision, "_PINNED", {})
    _two_gpus(monkeypatch)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    with pytest.raises(ConfigError, match=r"^device 'cuda:1': under a launcher of 2 processes each process trains on its own GPU"):
        pin_process_device("cuda:1")
    assert __import__("os").environ["CUDA_VISIBLE_DEVICES"] == "0,1"
    pin_process_device("cuda")  # each process's own GPU


@pytest.mark.parametrize("device, precision, on_cpu", [("cpu", "fp32", True), ("cpu", "bf16", True), ("mps", "bf16", False),
                                                       ("mps", "fp32", False)])
def test_train_pinned_to_a_device_on_a_mac_trains_there(monkeypatch, tmp_path, device, precision, on_cpu):
    """On a Mac, Trainer trains on the Apple GPU unless ``use_cpu``: ``train --device cpu`` in fp32 trained on it, and
    ``train --device mps --precision bf16`` on the CPU (``use_cpu`` followed the precision and the CUDA GPUs alone)."""
    from transformers import training_args

    from bio_mrc import precision as precision_module
    from bio_mrc.training.config import TrainConfig
    from bio_mrc.training.trainer import training_arguments

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setattr(precision_module, "_PINNED", {})
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setattr(training_args, "is_torch_bf16_gpu_available", lambda: True)  # macOS 14 computes bf16 on the GPU
    precision_module.pin_process_device(device)
    args = training_arguments(TrainConfig(precision=precision), tmp_path, False, False, None)
    assert args.use_cpu is on_cpu


@pytest.mark.parametrize("name, value", [("WORLD_SIZE", ""), ("WORLD_SIZE", "two"), ("RANK", "-1"), ("LOCAL_RANK", "1²")])
def test_a_launchers_variable_that_is_no_count_is_refused_before_any_work(monkeypatch, tmp_path, capsys, name, value):
    """An empty or wrong WORLD_SIZE, RANK or LOCAL_RANK ended predict (and train, in accelerate) in int()'s ValueError traceback."""
    monkeypatch.setenv(name, value)
    monkeypatch.setattr(TrainedModel, "load", staticmethod(lambda *a, **k: pytest.fail("the model was loaded")))
    argv = ["predict", "--model", str(tmp_path / "model"), "--data", str(SAMPLE_V1), "--output", str(tmp_path / "p.json")]
    assert cli.main(argv) == 2
    assert capsys.readouterr().err == f"error: {name}={value!r}: a launcher (torchrun) sets it to a whole number from " \
                                      f"{0 if name != 'WORLD_SIZE' else 1}; unset it to run one process\n"
    with pytest.raises(ConfigError, match=name):
        sharding.Shard.from_environment() if name != "LOCAL_RANK" else launcher.check_launcher_environment()
    assert not list(tmp_path.iterdir())


def test_a_launchers_variables_give_the_shard(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("RANK", " 0 ")
    assert sharding.Shard.from_environment() == sharding.Shard(rank=0, world=1)


def _no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


@pytest.fixture(scope="module")
def device_model(tiny_encoder_dir, tmp_path_factory):
    from .conftest import untrained_model_folder

    return untrained_model_folder(tiny_encoder_dir, tmp_path_factory.mktemp("device") / "model", max_seq_length=64,
                                  doc_stride=16, max_query_length=16)


NO_SUCH_NAME = "one of cpu, cuda, cuda:N (the GPU numbered N), mps, auto, or a GPU's number N (-1: the CPU)"


@pytest.mark.parametrize("device, line", [
    ("CUDA", "device 'CUDA': this machine has no CUDA GPU that torch can use"),
    ("Cuda:0", "device 'Cuda:0': this machine has no CUDA GPU that torch can use"),
    (torch.device("cuda", 1), "device 'cuda:1': this machine has no CUDA GPU that torch can use"),
    (0, "device 0: this machine has no CUDA GPU that torch can use"),
    ("gpu", f"device 'gpu': {NO_SUCH_NAME}"),
    ("cuda:x", f"device 'cuda:x': {NO_SUCH_NAME}"),
    (-2, f"device -2: {NO_SUCH_NAME}"),
    (1.5, f"device 1.5: {NO_SUCH_NAME}"),
    (True, f"device True: {NO_SUCH_NAME}"),
])
def test_the_pipelines_device_is_checked_before_transformers_parses_it(monkeypatch, tmp_path, device_model, device, line):
    """``pipeline("bio-mrc-qa", model=DIR, device="CUDA")`` (or "gpu", -2, 1.5) ended in torch's RuntimeError ("Expected one
    of cpu, cuda, ... device type at start of device string") or ran on the CPU; now the package's line, before the
    folder is read, and for a model given as an object too."""
    from transformers import AutoTokenizer, pipeline

    from bio_mrc.model import BioMrcForQuestionAnswering

    _no_gpu(monkeypatch)
    with pytest.raises(ConfigError, match=f"^{__import__('re').escape(line)}$"):
        pipeline("bio-mrc-qa", model=str(tmp_path / "no-model"), device=device)  # refused before the folder is looked at
    model = BioMrcForQuestionAnswering.from_pretrained(str(device_model))
    with pytest.raises(ConfigError, match=f"^{__import__('re').escape(line)}$"):
        pipeline("bio-mrc-qa", model=model, tokenizer=AutoTokenizer.from_pretrained(str(device_model)), device=device)


def test_the_pipelines_device_names_a_gpu_as_transformers_numbers_them(monkeypatch):
    from bio_mrc.precision import pipeline_device

    _two_gpus(monkeypatch)
    assert [pipeline_device(d) for d in (None, -1, 0, 1, " CUDA", "Cuda:1", torch.device("cuda", 1), "auto")] == \
           [None, "cpu", "cuda:0", "cuda:1", "cuda", "cuda:1", "cuda:1", "cuda"]
    with pytest.raises(ConfigError, match=r"^device 2: this machine has 2 CUDA device\(s\) \(cuda:0 to cuda:1\)$"):
        pipeline_device(2)


def test_cuda_on_a_machine_without_it_is_one_line_at_every_door(monkeypatch, capsys, tmp_path, device_model):
    """The command line, AnswerExtractor, serve's Python door and the pipeline refuse ``cuda`` in the same line."""
    _no_gpu(monkeypatch)
    line = "device 'cuda': this machine has no CUDA GPU that torch can use"
    for argv in (["predict", "--model", str(device_model), "--data", str(SAMPLE_V1), "--output", str(tmp_path / "p.json")],
                 ["extract", "--model", str(device_model), "--question", "q", "--context", "c"],
                 ["serve", "--model", str(device_model)]):
        assert cli.main([*argv, "--device", "cuda"]) == 2
        assert capsys.readouterr().err == f"error: {line}\n"
    assert_python_doors_refuse(device_model, "cuda", line)
    assert not list(tmp_path.iterdir())


def assert_python_doors_refuse(model, device: str, line: str) -> None:
    """The extractor, the server and the pipeline each refuse ``device`` with the one ``line``."""
    from transformers import pipeline

    from bio_mrc.inference import AnswerExtractor
    from bio_mrc.serving.server import run_server

    for door in (lambda: AnswerExtractor.from_pretrained(model, device=device), lambda: run_server(model, device=device),
                 lambda: pipeline("bio-mrc-qa", model=str(model), device=device)):
        with pytest.raises(ConfigError, match=f"^{line}$"):
            door()


def test_a_gpu_number_on_a_machine_without_cuda_is_one_line_at_every_door(monkeypatch, capsys, tmp_path, device_model):
    """``train --device cuda:0`` said ``torch finds no CUDA GPU numbered 0 on this machine`` where predict, the other doors
    and plain ``cuda`` say the machine has no CUDA GPU; the variable the pin set stays as it was."""
    from bio_mrc import precision

    _no_gpu(monkeypatch)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(precision, "_PINNED", {})
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    line = "device 'cuda:0': this machine has no CUDA GPU that torch can use"
    model, data = ["--model", str(device_model)], ["--data", str(SAMPLE_V1)]
    for argv in (["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "out")],
                 ["compare", "--output-dir", str(tmp_path / "runs")],
                 ["predict", *model, *data, "--output", str(tmp_path / "p.json")],
                 ["extract", *model, "--question", "q", "--context", "c"],
                 ["tune", *model, *data],
                 ["serve", *model]):
        assert cli.main([*argv, "--device", "cuda:0"]) == 2
        assert capsys.readouterr().err == f"error: {line}\n"
        assert "CUDA_VISIBLE_DEVICES" not in __import__("os").environ
    assert_python_doors_refuse(device_model, "cuda:0", line)
    assert not list(tmp_path.iterdir())


def test_answer_extractor_refuses_a_device_number(device_model):
    """``AnswerExtractor.from_pretrained(DIR, device=0)`` ran as ``auto`` (0 read as no device given), while 1 was refused."""
    from bio_mrc.inference import AnswerExtractor

    with pytest.raises(ConfigError, match=r"^device 0: one of cpu, cuda, cuda:N \(the GPU numbered N\), mps, auto$"):
        AnswerExtractor.from_pretrained(device_model, device=0)
