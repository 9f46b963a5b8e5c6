"""The CPUs a process may use, read from fake cgroup trees (v2's cpu.max, v1's cfs quota and period, nested cgroups,
unreadable and malformed files), and torch's threads fitted to them: by the command line in a command that runs a
model, never over the user's OMP_NUM_THREADS or a program's own torch, and never by a command that runs none."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import bio_mrc.cli as cli
import bio_mrc.cli.parser as cli_parser
from bio_mrc import cpu_budget as budget_module
from bio_mrc.cli import main
from bio_mrc.cli.torch_threads import _AfterTorchLoads
from bio_mrc.cpu_budget import CpuBudget, cgroup_quota, cpu_budget, fit_torch_threads, fitted_threads
from bio_mrc.machine import machine_description, threads_description

from .conftest import SAMPLE_V1, saved_model_files

ROOT = Path(__file__).resolve().parents[1]


def fake_proc(tmp_path: Path, cgroup: str, mounts: list[str]) -> Path:
    """A folder standing for /proc/self: its ``cgroup`` and ``mountinfo`` files."""
    proc = tmp_path / "proc"
    proc.mkdir(exist_ok=True)
    (proc / "cgroup").write_text(cgroup, encoding="utf-8")
    (proc / "mountinfo").write_text("".join(line + "\n" for line in mounts), encoding="utf-8")
    return proc


def v2_mount(point: Path, root: str = "/") -> str:
    return f"41 31 0:38 {root} {point} rw,relatime - cgroup2 cgroup2 rw"


def v1_mount(point: Path, root: str = "/", controllers: str = "cpu,cpuacct") -> str:
    return f"32 31 0:29 {root} {point} rw,relatime - cgroup cgroup rw,{controllers}"


def write(folder: Path, **files: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name.replace("__", ".")).write_text(text, encoding="utf-8")


# --- reading the quota -------------------------------------------------------------------------


def test_v2_takes_the_least_quota_of_the_cgroup_and_those_above_it(tmp_path):
    mount = tmp_path / "cg2"
    write(mount / "kubepods", cpu__max="max 100000\n")
    write(mount / "kubepods" / "pod1", cpu__max="250000 100000\n")  # the pod's limit: 2.5 CPUs
    write(mount / "kubepods" / "pod1" / "c1", cpu__max="max 100000\n")  # the container's own: none
    proc = fake_proc(tmp_path, "0::/kubepods/pod1/c1\n", [v2_mount(mount)])
    assert cgroup_quota(proc) == 2.5
    write(mount / "kubepods" / "pod1" / "c1", cpu__max="50000 50000\n")  # 1 CPU below the pod's 2.5
    assert cgroup_quota(proc) == 1.0


def test_v2_max_everywhere_is_no_quota(tmp_path):
    mount = tmp_path / "cg2"
    write(mount / "a", cpu__max="max 100000\n")
    assert cgroup_quota(fake_proc(tmp_path, "0::/a\n", [v2_mount(mount)])) is None


def test_v2_without_a_mount_in_mountinfo_is_read_at_the_usual_place(tmp_path, monkeypatch):
    usual = tmp_path / "sys-fs-cgroup"
    write(usual / "job", cpu__max="300000 100000\n")
    monkeypatch.setattr(budget_module, "CGROUP2_ROOT", usual)
    assert cgroup_quota(fake_proc(tmp_path, "0::/job\n", [])) == 3.0


def test_v1_reads_the_cpu_hierarchy_where_mountinfo_mounts_it(tmp_path):
    mount = tmp_path / "cpu,cpuacct"
    write(mount / "a", cpu__cfs_quota_us="-1\n", cpu__cfs_period_us="100000\n")
    write(mount / "a" / "b", cpu__cfs_quota_us="150000\n", cpu__cfs_period_us="100000\n")
    cgroups = "5:memory:/a/b\n4:cpu,cpuacct:/a/b\n0::/\n"  # the unified line of a hybrid host: no cpu.max there
    mounts = [v1_mount(tmp_path / "memory", controllers="memory"), v1_mount(mount), v2_mount(tmp_path / "unified")]
    assert cgroup_quota(fake_proc(tmp_path, cgroups, mounts)) == 1.5


def test_v1_of_a_container_reads_the_mount_that_shows_its_own_cgroup(tmp_path):
    """Docker without a cgroup namespace: /proc/self/cgroup names /docker/ID, which the mount shows at its mount point."""
    mount = tmp_path / "cpu"
    write(mount, cpu__cfs_quota_us="200000\n", cpu__cfs_period_us="100000\n")
    proc = fake_proc(tmp_path, "3:cpu:/docker/abc\n", [v1_mount(mount, root="/docker/abc", controllers="cpu")])
    assert cgroup_quota(proc) == 2.0
    write(mount / "sub", cpu__cfs_quota_us="100000\n", cpu__cfs_period_us="100000\n")
    (proc / "cgroup").write_text("3:cpu:/docker/abc/sub\n", encoding="utf-8")
    assert cgroup_quota(proc) == 1.0


def test_a_mount_point_with_a_space_is_read(tmp_path):
    mount = tmp_path / "cg 2"
    write(mount / "a", cpu__max="100000 100000\n")
    line = v2_mount(mount).replace(str(mount), str(mount).replace(" ", "\\040"))
    assert cgroup_quota(fake_proc(tmp_path, "0::/a\n", [line])) == 1.0


@pytest.mark.parametrize("text", ["", "max", "12x 100000", "100000 0", "0 100000", "-5 100000", "1 2 3", "\x00\xff", "１００ 100"])
def test_a_malformed_cpu_max_is_no_quota(tmp_path, text):
    mount = tmp_path / "cg2"
    write(mount / "a", cpu__max=text)
    assert cgroup_quota(fake_proc(tmp_path, "0::/a\n", [v2_mount(mount)])) is None


@pytest.mark.parametrize(("quota", "period"), [("-1", "100000"), ("abc", "100000"), ("100000", ""), ("100000", "0"), ("", "")])
def test_a_malformed_or_unset_v1_quota_is_no_quota(tmp_path, quota, period):
    mount = tmp_path / "cpu"
    write(mount, cpu__cfs_quota_us=quota, cpu__cfs_period_us=period)
    assert cgroup_quota(fake_proc(tmp_path, "4:cpu:/\n", [v1_mount(mount)])) is None


def test_missing_and_unreadable_files_are_no_quota(tmp_path):
    assert cgroup_quota(tmp_path / "no-proc") is None
    mount = tmp_path / "cg2"
    (mount / "a").mkdir(parents=True)  # no cpu.max
    assert cgroup_quota(fake_proc(tmp_path, "0::/a\n", [v2_mount(mount)])) is None
    (mount / "a" / "cpu.max").mkdir()  # a folder in its place
    assert cgroup_quota(fake_proc(tmp_path, "0::/a\n", [v2_mount(mount)])) is None
    if hasattr(os, "mkfifo"):  # a named pipe in its place: never read (its read would wait for a writer forever)
        (mount / "b").mkdir()
        os.mkfifo(mount / "b" / "cpu.max")
        assert cgroup_quota(fake_proc(tmp_path, "0::/b\n", [v2_mount(mount)])) is None
    assert cgroup_quota(fake_proc(tmp_path, "garbage\n0:x\n::\n", ["nonsense", "1 2 3 - cgroup2"])) is None


def test_v1_and_v2_together_give_the_lesser(tmp_path):
    write(tmp_path / "cpu" / "a", cpu__cfs_quota_us="300000", cpu__cfs_period_us="100000")
    write(tmp_path / "cg2" / "b", cpu__max="150000 100000")
    proc = fake_proc(tmp_path, "4:cpu:/a\n0::/b\n", [v1_mount(tmp_path / "cpu"), v2_mount(tmp_path / "cg2")])
    assert cgroup_quota(proc) == 1.5


# --- the budget ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("quota", "affinity", "expected"),
    [
        (None, 8, CpuBudget(8, 8, None, "affinity")),
        (2.5, 8, CpuBudget(3, 8, 2.5, "quota")),  # rounded up
        (0.2, 8, CpuBudget(1, 8, 0.2, "quota")),  # below one CPU: one
        (2.0, 8, CpuBudget(2, 8, 2.0, "quota")),
        (16.0, 8, CpuBudget(8, 8, 16.0, "affinity")),  # a quota above the mask: the mask
        (8.0, 8, CpuBudget(8, 8, 8.0, "affinity")),
    ],
)
def test_the_budget_is_the_lesser_of_the_quota_rounded_up_and_the_mask(monkeypatch, quota, affinity, expected):
    monkeypatch.setattr(budget_module, "cgroup_quota", lambda: quota)
    assert cpu_budget(affinity=affinity) == expected


def test_the_budget_says_what_set_it():
    assert CpuBudget(1, 8, 0.5, "quota").describe() == "1 usable (CPU quota 0.5)"
    assert CpuBudget(8, 8, None, "affinity").describe() == "8 usable (affinity mask)"


def test_the_budget_reads_this_machine_without_failing():
    found = cpu_budget()
    assert 1 <= found.cpus <= found.affinity <= (os.cpu_count() or 1)


# --- fitting torch's threads --------------------------------------------------------------------


@pytest.fixture
def fake_torch_threads(monkeypatch):
    """torch's thread count as a number the test reads: nothing of this process's own changes."""
    count = {"threads": 8, "set": []}
    monkeypatch.setattr(torch, "get_num_threads", lambda: count["threads"])
    monkeypatch.setattr(torch, "set_num_threads", lambda n: (count.update(threads=n), count["set"].append(n)))
    monkeypatch.setattr(budget_module, "_FITTED", {})
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    return count


def test_fitting_lowers_torchs_threads_to_the_quota(fake_torch_threads):
    choice = fit_torch_threads(CpuBudget(2, 8, 1.5, "quota"))
    assert fake_torch_threads["set"] == [2] and (choice.threads, choice.source, choice.lowered) == (2, "CPU quota", True)
    assert fitted_threads() == choice
    assert threads_description(2) == "2 threads, fitted to the CPU quota"


def test_fitting_never_raises_torchs_threads(fake_torch_threads):
    fake_torch_threads["threads"] = 3
    choice = fit_torch_threads(CpuBudget(8, 8, None, "affinity"))
    # the count set again as it is: MKL's threads fixed and its own choice of fewer off, as after a precision probe
    assert fake_torch_threads["set"] == [3] and (choice.threads, choice.source, choice.lowered) == (3, "torch", False)
    assert threads_description(3) == "3 threads"


@pytest.mark.parametrize("variable", ["OMP_NUM_THREADS", "MKL_NUM_THREADS"])
def test_a_thread_variable_wins_over_the_quota(fake_torch_threads, monkeypatch, variable):
    monkeypatch.setenv(variable, "8")
    choice = fit_torch_threads(CpuBudget(1, 8, 1.0, "quota"))
    assert fake_torch_threads["set"] == [] and (choice.threads, choice.source) == (8, variable)
    assert threads_description(8) == f"8 threads, {variable}"
    monkeypatch.setenv(variable, " ")  # set but empty: no choice
    assert fit_torch_threads(CpuBudget(1, 8, 1.0, "quota")).source == "CPU quota"


def test_the_machine_description_names_the_cpus_usable_and_why(fake_torch_threads, monkeypatch):
    monkeypatch.setattr(budget_module, "cgroup_quota", lambda: 0.5)
    monkeypatch.setattr(budget_module, "affinity_count", lambda: 4)
    fit_torch_threads()
    assert f"{os.cpu_count()} CPUs, 1 usable (CPU quota 0.5), torch {torch.__version__} (1 thread, fitted to the CPU quota)" in machine_description()
    fake_torch_threads["threads"] = 2  # set again by the program since: the fit no longer says why
    assert "(2 threads)" in machine_description()


# --- the other counts of CPUs the package decides -----------------------------------------------


@pytest.fixture
def quota_on_a_large_host(tmp_path, monkeypatch):
    """This process under a fake quota of 2.5 CPUs (3 usable) on a host whose 64 CPUs its affinity mask lists."""
    write(tmp_path / "cg2" / "job", cpu__max="250000 100000\n")
    monkeypatch.setattr(budget_module, "PROC_SELF", fake_proc(tmp_path, "0::/job\n", [v2_mount(tmp_path / "cg2")]))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert cpu_budget() == CpuBudget(3, 64, 2.5, "quota")


def test_gpu_loader_workers_are_counted_from_the_cpus_the_quota_leaves(quota_on_a_large_host):
    """One worker for two usable CPUs: 3 under the quota, where the affinity mask's 64 gave 4 workers beside the
    training process, each a process the quota stops with the rest."""
    from bio_mrc.training.trainer import _loading_arguments

    assert _loading_arguments("cuda")["dataloader_num_workers"] == 1
    assert _loading_arguments("cpu")["dataloader_num_workers"] == 0


def test_a_users_own_loader_workers_stand_under_a_quota(quota_on_a_large_host, monkeypatch, tmp_path):
    from bio_mrc.training import trainer
    from bio_mrc.training.config import TrainConfig

    monkeypatch.setattr(trainer, "default_device", lambda: "cuda")
    for workers in (0, 8):  # fewer than the package's count, and more
        config = TrainConfig(training_args={"dataloader_num_workers": workers})
        args = trainer.training_arguments(config, tmp_path, save_checkpoints=False, progress=False, checkpoint_steps=None)
        assert args.dataloader_num_workers == workers


# --- the command line ---------------------------------------------------------------------------


@pytest.fixture
def one_cpu_quota(tmp_path, monkeypatch, fake_torch_threads):
    """This process under a fake quota of one CPU of 4, torch at 8 threads, the command line taking it for a process
    that imported no torch before it began, and ``extract`` noting torch's threads as it begins (``"seen"``)."""
    fake_torch_threads["seen"] = []
    monkeypatch.setattr(cli_parser, "cmd_extract", lambda args: fake_torch_threads["seen"].append(torch.get_num_threads()) or 0)
    write(tmp_path / "cg2" / "job", cpu__max="100000 100000\n")
    monkeypatch.setattr(budget_module, "PROC_SELF", fake_proc(tmp_path, "0::/job\n", [v2_mount(tmp_path / "cg2")]))
    monkeypatch.setattr(budget_module, "affinity_count", lambda: 4)
    monkeypatch.setattr(cli, "torch_imported", lambda: False)
    return fake_torch_threads


def extract_argv(tmp_path: Path) -> list[str]:
    """extract on a model folder that passes the checks before torch and fails to load once torch has."""
    return ["extract", "--model", str(saved_model_files(tmp_path / "model")), "--question", "Who?", "--context", "Ada did."]


def test_a_command_that_runs_a_model_fits_the_threads_to_the_quota(tmp_path, one_cpu_quota):
    assert main(extract_argv(tmp_path)) == 0
    assert one_cpu_quota["seen"] == [1] and one_cpu_quota["set"] == [1] and fitted_threads().source == "CPU quota"
    assert not any(isinstance(finder, _AfterTorchLoads) for finder in sys.meta_path)


def test_omp_num_threads_wins_over_the_quota_in_a_command(tmp_path, one_cpu_quota, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "8")
    assert main(extract_argv(tmp_path)) == 0
    assert one_cpu_quota["seen"] == [8] and one_cpu_quota["set"] == [] and fitted_threads() is None


def test_a_programs_own_torch_keeps_its_threads(tmp_path, one_cpu_quota, monkeypatch):
    monkeypatch.setattr(cli, "torch_imported", lambda: True)  # torch imported (its threads perhaps set) before main()
    assert main(extract_argv(tmp_path)) == 0
    assert one_cpu_quota["seen"] == [8] and one_cpu_quota["set"] == []


def test_a_command_that_runs_no_model_leaves_the_threads(tmp_path, one_cpu_quota, capsys):
    sample = json.loads(SAMPLE_V1.read_text(encoding="utf-8"))
    predictions = tmp_path / "p.json"
    predictions.write_text(json.dumps({q["id"]: "x" for a in sample["data"] for p in a["paragraphs"] for q in p["qas"]}), encoding="utf-8")
    assert main(["evaluate", "--data", str(SAMPLE_V1), "--predictions", str(predictions)]) == 0
    assert one_cpu_quota["set"] == []


FIT_IN_A_FRESH_PROCESS = """
import json, sys
from pathlib import Path
import bio_mrc.cpu_budget as budget
budget.PROC_SELF = Path(sys.argv[1])
budget.affinity_count = lambda: 2
from bio_mrc.cli import main
argv = json.loads(sys.argv[2])
code = main(argv)
loaded = "torch" in sys.modules
threads = __import__("torch").get_num_threads() if loaded else None
fitted = budget.fitted_threads()
print(json.dumps({"code": code, "torch": loaded, "threads": threads, "source": fitted and fitted.source,
                  "hooks": [type(f).__name__ for f in sys.meta_path if type(f).__name__ == "_AfterTorchLoads"]}))
"""


@pytest.mark.slow  # fresh interpreters that import torch
def test_a_fresh_command_sets_the_threads_as_torch_loads_and_a_refusal_loads_no_torch(tmp_path):
    write(tmp_path / "cg2" / "job", cpu__max="50000 100000\n")
    proc = fake_proc(tmp_path, "0::/job\n", [v2_mount(tmp_path / "cg2")])
    environment = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}

    def run(argv: list[str], **variables: str) -> dict:
        done = subprocess.run(
            [sys.executable, "-c", FIT_IN_A_FRESH_PROCESS, str(proc), json.dumps(argv)],
            capture_output=True,
            text=True,
            env={**environment, "PYTHONPATH": str(ROOT), **variables},
            cwd=tmp_path,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.splitlines()[-1])

    argv = extract_argv(tmp_path)
    assert run(argv) == {"code": 2, "torch": True, "threads": 1, "source": "CPU quota", "hooks": []}
    with_variable = run(argv, OMP_NUM_THREADS="2")
    assert (with_variable["threads"], with_variable["source"]) == (2, None)
    refused = run(argv[:-2])  # extract without a context: refused before torch loads, quota or not
    assert refused == {"code": 2, "torch": False, "threads": None, "source": None, "hooks": []}


LOOKED_FOR_THEN_IMPORTED = """
import argparse, importlib.util, json, sys
import bio_mrc.cpu_budget as budget
from bio_mrc.cli.torch_threads import FIT_THREADS, threads_fitted
with threads_fitted(argparse.Namespace(**{FIT_THREADS: True}), torch_before=False):
    importlib.util.find_spec("torch")  # as transformers asks whether torch is there, before anything imports it
    looked = "torch" in sys.modules
    import torch
    hooks = [type(f).__name__ for f in sys.meta_path if type(f).__name__ == "_AfterTorchLoads"]
print(json.dumps({"imported_by_the_look": looked, "fitted": budget.fitted_threads() is not None, "hooks": hooks}))
"""


@pytest.mark.slow  # a fresh interpreter that imports torch
def test_the_threads_are_fitted_when_torch_loads_after_a_library_looked_for_it():
    environment = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", LOOKED_FOR_THEN_IMPORTED], capture_output=True, text=True,
                          env={**environment, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"imported_by_the_look": False, "fitted": True, "hooks": []}


INTEROP_AFTER_TRAIN_AND_PREDICT = """
import json, sys
import torch
from bio_mrc.cli import main
encoder, folder, sample = sys.argv[1:4]
windows = ["--max-seq-length", "48", "--doc-stride", "16", "--max-query-length", "12"]
trained = main(["train", "--train", sample, "--output-dir", folder + "/model", "--encoder", encoder, "--epochs", "1",
                "--batch-size", "4", *windows])
predicted = main(["predict", "--model", folder + "/model", "--data", sample, "--output", folder + "/p.json"])
try:
    torch.set_num_interop_threads(1)  # refused once torch's inter-op pool has started
    started = False
except RuntimeError:
    started = True
print(json.dumps({"codes": [trained, predicted], "interop_pool_started": started}))
"""


@pytest.mark.slow  # a fresh interpreter that trains and predicts
def test_training_and_prediction_start_no_inter_op_threads(tiny_encoder_dir, tmp_path):
    """torch's inter-op threads are left at torch's count (the host's, quota or not): its pool starts only for work run
    asynchronously (torch.jit.fork and the like), which the package never runs, so no such thread runs under a quota.
    Lowering the count would spend the one call a process has to set it (torch refuses a second)."""
    done = subprocess.run(
        [sys.executable, "-c", INTEROP_AFTER_TRAIN_AND_PREDICT, str(tiny_encoder_dir), str(tmp_path), str(SAMPLE_V1)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=tmp_path,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"codes": [0, 0], "interop_pool_started": False}
