"""tools/gpu: the bundle and the runner, end to end on a tiny slice on the CPU, in bf16 autocast:
bundle, unpack into a fresh folder, install (no wheels: the import check), train, a kill, resume, score, collect."""

import importlib.util
import json
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from .conftest import SAMPLE_V1

REPO = Path(__file__).resolve().parents[1]
GPU_TOOLS = REPO / "tools" / "gpu"
DATA = REPO.parent / "shared" / "data"


def load_script(name):
    """A script of tools/gpu as a module, with its folder on sys.path while it loads (as when it runs as a script:
    it imports its sibling bundle_format)."""
    spec = importlib.util.spec_from_file_location(f"gpu_{name}", GPU_TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    sys.path.insert(0, str(GPU_TOOLS))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(GPU_TOOLS))
    return module


bundle_format = load_script("bundle_format")
build_bundle = load_script("build_bundle")
runner = load_script("run")


def tiny_config(path: Path) -> Path:
    """The sample's two articles: one to train on, one to score; the joint model in bf16, a checkpoint every 2 steps."""
    split = lambda part: {"path": "squad-v1.1/train.json", "split": {"fractions": [0.5, 0.5], "part": part, "seed": 0}}  # noqa: E731
    raw = {
        "name": "tiny", "train": split(0), "eval": split(1),
        "defaults": {"encoder": "default", "max_seq_length": 32, "doc_stride": 8, "max_query_length": 12, "epochs": 4,
                     "batch_size": 4, "learning_rate": 1e-3, "precision": "bf16"},
        "runs": [{"name": "joint", "heads": "span+bio"}], "seeds": [5], "checkpoint_steps": 2,
    }
    path.write_text(json.dumps(raw), encoding="utf-8")
    return path


@pytest.fixture
def tiny_bundle(tmp_path, tiny_encoder_dir):
    data_dir = tmp_path / "data"
    (data_dir / "squad-v1.1").mkdir(parents=True)
    shutil.copyfile(SAMPLE_V1, data_dir / "squad-v1.1" / "train.json")
    bundle = tmp_path / "bundle"
    manifest = build_bundle.build_bundle(bundle, data_dir, str(tiny_encoder_dir), ["squad-v1.1/train.json"], wheels=False)
    # No network here: a made-up wheel stands in for the downloaded ones.
    build_bundle.pack_wheels([fake_wheel(tmp_path / "wheels")], bundle / bundle_format.WHEELS_ARCHIVE)
    kept = {k: v for k, v in manifest.items() if k not in ("files", "total_bytes", "created")}
    build_bundle.write_manifest(bundle, {**kept, "wheels": ["tiny_wheel-1.0-py3-none-any.whl"]})
    return bundle


def fake_wheel(folder: Path) -> Path:
    folder.mkdir()
    wheel = folder / "tiny_wheel-1.0-py3-none-any.whl"
    files = {"tiny_wheel/__init__.py": "ANSWER = 42\n",
             "tiny_wheel-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: tiny-wheel\nVersion: 1.0\n",
             "tiny_wheel-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{name},,\n" for name in files) + "tiny_wheel-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in {**files, "tiny_wheel-1.0.dist-info/RECORD": record}.items():
            archive.writestr(name, text)
    return wheel


def test_byte_planes_round_trip_every_length():
    for data in (b"", b"a", b"ab", b"abc", bytes(range(256)) * 3 + b"z"):
        planes = bundle_format.byte_planes(data)
        assert len(planes) == len(data) and bundle_format.from_byte_planes(planes) == data
    assert bundle_format.byte_planes(b"aAbBc") == b"abABc"  # even bytes, odd bytes, the odd last byte


def test_the_bundle_holds_an_fp16_encoder_compressed_data_and_a_manifest(tiny_bundle, tmp_path):
    from bio_mrc.model import BioMrcForQuestionAnswering

    manifest = json.loads((tiny_bundle / "manifest.json").read_text())
    paths = {entry["path"] for entry in manifest["files"]}
    assert {"data/squad-v1.1/train.json.xz", "encoder/model.safetensors.planes2.xz", "encoder/tokenizer.json.xz"} <= paths
    assert "encoder/model.safetensors" not in paths  # the weights travel xz-packed
    assert manifest["total_bytes"] == sum(entry["bytes"] for entry in manifest["files"]) < 64 * 2**20
    unpacked = runner.unpack(tiny_bundle, tmp_path / "work")
    assert unpacked["unpacked"] == ["data/squad-v1.1/train.json", "encoder/model.safetensors", "encoder/tokenizer.json"]
    encoder = tmp_path / "work" / "encoder"
    assert {t.dtype for t in load_file(encoder / "model.safetensors").values()} == {torch.float16}
    model = BioMrcForQuestionAnswering.from_encoder(str(encoder))
    assert {p.dtype for p in model.parameters()} == {torch.float32}  # trains in fp32 or under bf16 autocast
    with pytest.raises(SystemExit, match="not a bundle"):  # never empties a folder it did not write
        build_bundle.fresh_folder(tiny_bundle / "encoder")


def test_every_dependency_of_the_package_is_on_the_gpu_machine_or_in_the_bundle():
    import tomllib

    from packaging.requirements import Requirement

    wanted = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    carried = {Requirement(pin).name for pin in build_bundle.BINARY_WHEELS + build_bundle.SOURCE_ONLY_WHEELS}
    provided = carried | set(build_bundle.ON_THE_GPU_MACHINE) | runner.NOT_NEEDED
    assert [name for name in (Requirement(line).name for line in wanted) if name not in provided] == []


def runner_args(tmp_path, bundle, *command):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"stages": [{"name": "tiny", "config": str(tiny_config(tmp_path / "tiny.json"))}]}))
    return ["--bundle", str(bundle), "--work", str(tmp_path / "work"), "--plan", str(plan), "--device", "cpu",
            "--out", str(tmp_path / "out"), *command]


def kill_at_first_checkpoint(args, models: Path) -> None:
    """Start the training step in a runner process and SIGTERM the runner once a checkpoint is complete: its file
    digests recorded, which the training writes (whole, by a rename) once Trainer has saved the checkpoint's last file,
    ``trainer_state.json`` (a state seen as it is being written is a checkpoint cut short, resumed from the start)."""
    from bio_mrc.training.checkpoints import CHECKPOINT_DIGESTS

    runner_process = subprocess.Popen([sys.executable, str(GPU_TOOLS / "run.py"), *args], cwd=REPO)
    while not list(models.glob(f"joint-seed5-*/checkpoints/checkpoint-*/{CHECKPOINT_DIGESTS}")):  # however slowly it comes
        assert runner_process.poll() is None, "the step ended before its first checkpoint"  # the training's own end bounds the wait
        time.sleep(0.05)
    runner_process.send_signal(signal.SIGTERM)
    assert runner_process.wait(60) == 0  # a stopped step is no failure: the next command resumes it


@pytest.mark.slow
def test_the_runner_trains_resumes_after_a_kill_scores_and_collects(tiny_bundle, tmp_path):
    from bio_mrc.harness.compare import train_models
    from bio_mrc.harness.config import load_config

    work, out = tmp_path / "work", tmp_path / "out"
    assert runner.main(runner_args(tmp_path, tiny_bundle, "step", "unpack")) == 0
    assert runner.main(runner_args(tmp_path, tiny_bundle, "step", "install")) == 0
    assert json.loads((work / "device.json").read_text())["name"] == "cpu"
    assert (work / "site" / "tiny_wheel" / "__init__.py").read_text() == "ANSWER = 42\n"  # installed with no index
    with zipfile.ZipFile(work / "wheels" / "tiny_wheel-1.0-py3-none-any.whl") as unpacked:  # stored, for xz to pack
        assert {info.compress_type for info in unpacked.infolist()} == {zipfile.ZIP_STORED}
    kill_at_first_checkpoint(runner_args(tmp_path, tiny_bundle, "step", "train:tiny:joint:5"), work / "tiny" / "models")
    assert [(e.step, e.status) for e in runner.read_log(work)][-1] == ("train:tiny:joint:5", runner.StepStatus.STOPPED)

    assert runner.main(runner_args(tmp_path, tiny_bundle, "next")) == 0  # no budget: the steps' own ends, however slow
    log = {entry.step: entry for entry in runner.read_log(work) if entry.status is runner.StepStatus.DONE}
    assert list(log) == ["unpack", "install", "train:tiny:joint:5", "score:tiny"]
    (model,) = log["train:tiny:joint:5"].models
    assert model.resumed_from is not None and log["score:tiny"].wall_seconds > 0
    record = json.loads((work / "tiny" / "models" / model.model / "bio_mrc_run.json").read_text())
    assert record["train"]["precision"] == "bf16"  # autocast, as on the GPU
    assert (work / "tiny" / "report.md").is_file() and "all done" in (out / "status.txt").read_text()
    with tarfile.open(out / "results.tar.xz") as archive:
        assert {"runner_log.json", "tiny/report.md", "tiny/report.json"} <= set(archive.getnames())

    # The resumed model has the weights of an uninterrupted run of the same step.
    config = load_config(work / "configs" / "tiny.json").with_overrides(seeds=[5], encoder=str(work / "encoder"))
    (reference,) = train_models(config, work / "data", tmp_path / "reference")
    resumed = load_file(work / "tiny" / "models" / model.model / "model.safetensors")
    for name, value in load_file(reference / "model.safetensors").items():
        assert torch.equal(value, resumed[name]), name


@pytest.mark.slow
@pytest.mark.real_data
@pytest.mark.skipif(not (DATA / "squad-v1.1" / "dev.json").exists(), reason="needs ../shared/data")
def test_the_gpu_configs_name_files_the_bundle_carries_and_keep_tuning_apart():
    from bio_mrc.harness.compare import resolve_splits
    from bio_mrc.harness.config import load_config

    carried = set(build_bundle.DATA_FILES)
    plans = sorted((REPO / "benchmarks" / "gpu").glob("plan*.json"))
    assert REPO / "benchmarks" / "gpu" / "plan.json" in plans
    for plan_path in plans:
        for stage in runner.load_plan(plan_path).stages:
            raw = runner.stage_config(stage)
            named = {raw[key]["path"] for key in ("train", "tune", "eval") if raw.get(key)}
            assert named <= carried, (plan_path.name, stage.name)
            if earlier := runner.earlier_report(stage):  # committed, so it travels with the repository
                assert earlier.is_file() and runner.earlier_models(stage), (plan_path.name, stage.name)
    squad = load_config(REPO / "benchmarks" / "ablations" / "gpu_squad_full.json")
    splits = resolve_splits(squad, DATA)  # checks train, tune and eval are disjoint
    assert len(splits.train.examples) + len(splits.tune.examples) == 87_599 and len(splits.eval.examples) == 10_570


def two_run_plan(tmp_path: Path) -> Path:
    """The tiny stage with a span-only model beside the joint one (seed 5 each)."""
    config = tiny_config(tmp_path / "tiny.json")
    raw = json.loads(config.read_text())
    raw["runs"].append({"name": "span-only", "heads": "span"})
    config.write_text(json.dumps(raw))
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"stages": [{"name": "tiny", "config": str(config)}]}))
    return plan


@pytest.mark.slow
def test_parallel_models_train_side_by_side_and_a_report_waits_for_every_model(tiny_bundle, tmp_path):
    work, plan = tmp_path / "work", two_run_plan(tmp_path)
    common = ["--bundle", str(tiny_bundle), "--work", str(work), "--plan", str(plan), "--device", "cpu", "--out", str(tmp_path / "out")]
    stage = runner.load_plan(plan).stages[0]
    score = runner.Step("score:tiny", "score", "tiny")
    assert runner.compare_command(score, work, stage)[0] is None  # no model yet: no report to write
    runner.append_log(work, runner.LogEntry("train:tiny:joint:5", runner.StepStatus.DONE))
    command, missing = runner.compare_command(score, work, stage)
    assert command[-2:] == ["--runs", "joint"] and missing == ["span-only"]  # only the runs whose models all exist
    shutil.rmtree(work)

    assert runner.main([*common, "next", "--parallel", "2"]) == 0  # no budget: the steps' own ends, however slow
    log = {entry.step: entry for entry in runner.read_log(work)}
    assert [log[f"train:tiny:{run}:5"].child.together_with for run in ("joint", "span-only")] == [2, 2]
    assert all(entry.status is runner.StepStatus.DONE for entry in log.values()) and log["score:tiny"].partial is None
    # Each model was scored in a process of its own; the report read their cells.
    assert sorted(p.name for p in (work / "logs").glob("score_tiny_*.log")) == ["score_tiny_joint_5.log", "score_tiny_span-only_5.log"]
    report = (work / "tiny" / "report.md").read_text()
    assert "span-only" in report and "joint" in report


@pytest.mark.parametrize(("quota", "parallel", "threads"), [(2.5, 2, "1"), (8.0, 4, "2"), (None, 4, "4"), (2.0, 4, "1")])
def test_steps_side_by_side_share_the_cpus_the_quota_leaves(monkeypatch, quota, parallel, threads):
    """Each of N steps side by side gets a share of the CPUs the runner may use (its CPU quota, its affinity mask), at
    least one; the host's CPU count gave each of 2 steps 32 threads under a quota of 2.5 CPUs on 64."""
    from bio_mrc import cpu_budget

    monkeypatch.setattr(cpu_budget, "cgroup_quota", lambda: quota)
    monkeypatch.setattr(cpu_budget, "affinity_count", lambda: 16)
    monkeypatch.setattr(runner.os, "cpu_count", lambda: 64)
    assert runner.shared_threads({"PATH": "/bin"}, parallel) == {"PATH": "/bin", "OMP_NUM_THREADS": threads}
    assert runner.shared_threads({"PATH": "/bin"}, 1) == {"PATH": "/bin"}  # one step: its own fit


@pytest.mark.parametrize("variable", ["OMP_NUM_THREADS", "MKL_NUM_THREADS"])
def test_steps_side_by_side_keep_the_users_thread_variable(variable):
    assert runner.shared_threads({variable: "12"}, 2) == {variable: "12"}


def test_a_stage_reads_the_cells_of_an_earlier_report_instead_of_training_those_models(tmp_path):
    import lzma

    work, plan = tmp_path / "work", two_run_plan(tmp_path)
    earlier = tmp_path / "earlier" / "report.json.xz"
    earlier.parent.mkdir()
    earlier.write_bytes(lzma.compress(json.dumps({"cells": [{"run": "span-only", "seed": 5, "decoding": "span"}]}).encode()))
    raw = json.loads(plan.read_text())
    raw["stages"][0]["cells_from"] = str(earlier)
    plan.write_text(json.dumps(raw))
    loaded = runner.load_plan(plan)
    stage = loaded.stages[0]
    assert [step.name for step in runner.plan_steps(loaded)] == ["unpack", "install", "train:tiny:joint:5", "score:tiny"]
    score = runner.Step("score:tiny", "score", "tiny")
    command, missing = runner.compare_command(score, work, stage)  # the earlier model's run can be reported already
    assert command[-4:] == ["--cells-from", str(earlier), "--runs", "span-only"] and missing == ["joint"]
    runner.append_log(work, runner.LogEntry("train:tiny:joint:5", runner.StepStatus.DONE))
    command, missing = runner.compare_command(score, work, stage)
    assert command[-2:] == ["--cells-from", str(earlier)] and missing == []
    train = runner.Step("train:tiny:joint:5", "train", "tiny", "joint", 5)
    assert "--cells-from" in runner.compare_command(train, work, stage)[0]


def test_the_runner_has_no_time_or_size_limit_unless_told_and_drops_cells_over_max_archive_mib(tmp_path):
    import math
    import random

    defaults = runner.parse_args(["next"])
    assert defaults.budget_seconds == math.inf and defaults.max_archive_mib is None
    cells = tmp_path / "work" / "tiny" / "cells"
    cells.mkdir(parents=True)
    (cells.parent / "report.md").write_text("# report\n")
    (cells / "cell.json").write_text(json.dumps(random.Random(0).randbytes(200_000).hex()))  # about 0.19 MiB as xz
    args = runner_args(tmp_path, tmp_path / "no-bundle", "collect")
    for extra, kept in (([], True), (["--max-archive-mib", "0.1"], False)):
        assert runner.main([*extra, *args]) == 0
        with tarfile.open(tmp_path / "out" / "results.tar.xz") as archive:
            assert ("tiny/cells/cell.json" in archive.getnames()) == kept
            assert "tiny/report.md" in archive.getnames()


def test_every_committed_runner_log_reads_as_typed_entries_and_writes_back_the_same_json(tmp_path):
    logs = sorted((REPO / "benchmarks" / "reports").glob("*/runner_log.json"))
    assert logs
    for path in logs:
        entries = runner.read_log_file(path)
        assert {entry.status for entry in entries} <= set(runner.StepStatus)
        runner.write_log_file(tmp_path / "runner_log.json", entries)
        assert json.loads((tmp_path / "runner_log.json").read_text()) == json.loads(path.read_text()), path
    trained = [entry for path in logs for entry in runner.read_log_file(path) if entry.models]
    assert all(isinstance(model.windows, int) and model.train_seconds > 0 for entry in trained for model in entry.models)


def test_a_step_written_and_read_back_keeps_its_child_fields_even_when_null(tmp_path):
    entry = runner.LogEntry("train:a:joint:1", "stopped", "2026-01-01 00:00:00", 3.5, "cpu",
                            runner.ChildRun("logs/a.log", -15, None, 0, 2), partial=None)
    runner.append_log(tmp_path, entry)
    raw = json.loads((tmp_path / "runner_log.json").read_text())["steps"][0]
    assert raw["gpu_busy_share"] is None and raw["returncode"] == -15 and raw["status"] == "stopped"
    assert "models" not in raw and "report" not in raw and "partial" not in raw
    assert runner.read_log(tmp_path) == (entry,) and entry.status is runner.StepStatus.STOPPED


@pytest.mark.parametrize(("text", "message"), [
    ('{"steps": [{"step": "unpack", "status": "finished"}]}', r"runner_log.json: steps\[0\].status: 'finished' is not one of done, failed, stopped, partial"),
    ('{"steps": [{"status": "done"}]}', r"runner_log.json: steps\[0\]: missing 'step'"),
    ('{"steps": [{"step": "t", "status": "done", "log": "x", "gpu_samples": "3"}]}', r"steps\[0\].gpu_samples: '3' is not a int"),
    ('{"steps": [{"step": "t", "status": "done", "models": [{"model": "m"}]}]}', r"steps\[0\].models\[0\]: missing 'windows'"),
    ('{"runs": []}', r"runner_log.json: a runner log is"),
    ('{"steps": [', r"runner_log.json: not JSON"),
])
def test_a_runner_log_that_does_not_read_is_refused_naming_the_file_and_field(tmp_path, text, message):
    (tmp_path / "runner_log.json").write_text(text)
    with pytest.raises(SystemExit, match=message):
        runner.read_log(tmp_path)


@pytest.mark.parametrize(("plan", "message"), [
    ({"stages": []}, r"plan.json: a plan is"),
    ({"stages": [{"name": "a"}]}, r"plan.json: stages\[0\]: missing 'config'"),
    ({"stages": [{"name": "a", "config": "c.json", "seeds": [1]}]}, r"stages\[0\]: unknown key 'seeds'"),
    ({"stages": [{"name": "a", "config": "c.json", "run_seeds": {"joint": 42}}]}, r"stages\[0\].run_seeds.joint: 42 is not a list"),
    ({"stages": [{"name": "a", "config": 3}]}, r"stages\[0\].config: 3 is not a str"),
    ({"stages": [{"name": "a", "config": "c"}, {"name": "a", "config": "d"}]}, r"stages\[1\].name: 'a' names two stages"),
    ({"stages": [{"name": "a", "config": "c", "models_from": "b"}]}, r"stages\[0\].models_from: no stage 'b'"),
    ({"stages": [{"name": "a", "config": "c"}], "note": ""}, r"plan.json: unknown key 'note'"),
])
def test_a_plan_that_does_not_read_is_refused_naming_the_file_and_field(tmp_path, plan, message):
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    with pytest.raises(SystemExit, match=message):
        runner.load_plan(tmp_path / "plan.json")


def test_every_committed_plan_reads_as_typed_stages():
    plans = sorted((REPO / "benchmarks" / "gpu").glob("plan*.json"))
    assert REPO / "benchmarks" / "gpu" / "plan.json" in plans
    for path in plans:
        plan = runner.load_plan(path)
        steps = runner.plan_steps(plan)
        assert [step.kind for step in steps[:2]] == [runner.StepKind.UNPACK, runner.StepKind.INSTALL], path.name
        assert steps[-1].kind is runner.StepKind.SCORE and steps[-1].stage == plan.stages[-1].name
