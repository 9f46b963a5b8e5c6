"""ONNX Runtime's intra-op threads in the sessions the package builds: torch's count where fewer than ONNX Runtime's own
(a thread per physical core of the whole machine, quota or not), so a CPU quota that fits torch's threads fits the
session's too, in a command and after a program's own fit; never more than ONNX Runtime's own; a caller's ``threads``
and ``ORT_INTRA_OP_NUM_THREADS`` kept, a malformed one refused in one line before the folder is read; no inter-op pool."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import bio_mrc.cli as cli
from bio_mrc import cpu_budget as budget_module
from bio_mrc.cli import main
from bio_mrc.cpu_budget import fit_torch_threads
from bio_mrc.errors import ConfigError

from .conftest import NEEDS_ONNX_EXTRA, SAMPLE_V1
from .test_cpu_budget import fake_proc, v2_mount, write

pytestmark = NEEDS_ONNX_EXTRA

ROOT = Path(__file__).resolve().parents[1]
HOST_CORES = 32  # the physical cores of the faked host of 64 CPUs: ONNX Runtime's default pool, and torch's


@pytest.fixture
def host(tmp_path, monkeypatch):
    """A host of 64 CPUs on 32 physical cores, which the affinity mask lists whole, this process under a fake quota of
    2 CPUs, torch at its default of 32 threads (a number the test reads: nothing of this process's own changes), ONNX
    Runtime's own count 32, no thread variable."""
    from bio_mrc.inference import onnx_threads

    count = {"threads": 32}
    monkeypatch.setattr(torch, "get_num_threads", lambda: count["threads"])
    monkeypatch.setattr(torch, "set_num_threads", lambda n: count.update(threads=n))
    monkeypatch.setattr(budget_module, "_FITTED", {})
    write(tmp_path / "cg2" / "job", cpu__max="200000 100000\n")
    monkeypatch.setattr(budget_module, "PROC_SELF", fake_proc(tmp_path, "0::/job\n", [v2_mount(tmp_path / "cg2")]))
    monkeypatch.setattr(budget_module, "affinity_count", lambda: 64)
    monkeypatch.setattr(onnx_threads, "physical_cores", lambda cpu_folder=None: HOST_CORES)
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "ORT_INTRA_OP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    return count


def tiny_graph(path: Path) -> Path:
    """A graph with the joint model's input and outputs (each a float copy of the token ids), enough for a session."""
    import onnx
    from onnx import TensorProto, helper

    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "length"])
    names = ["start_logits", "end_logits", "bio_logits"]
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", "length"]) for name in names]
    nodes = [helper.make_node("Cast", ["input_ids"], [name], to=TensorProto.FLOAT) for name in names]
    graph = helper.make_graph(nodes, "tiny", [ids], outputs)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def session_of(path: Path, threads=None):
    """The session the package builds on ``path`` (``threads`` as OnnxModel takes it), run once."""
    from bio_mrc.inference.onnx_runner import OnnxModel
    from bio_mrc.model import BioMrcConfig

    model = OnnxModel.from_file(path, BioMrcConfig(), threads=threads)
    model({"input_ids": np.ones((1, 4), dtype=np.int64)})
    return model.session


def intra_op(session) -> int:
    return session.get_session_options().intra_op_num_threads


# --- the rule ----------------------------------------------------------------------------------------


def test_a_fitted_quota_fits_the_session(host, tmp_path):
    """The program's fit (the command line's, or a library program's one call) lowers torch to the quota's 2 CPUs:
    the session asks for 2, where ONNX Runtime alone would run 32."""
    from bio_mrc.inference.onnx_threads import session_threads

    graph = tiny_graph(tmp_path / "tiny.onnx")
    assert fit_torch_threads().threads == 2
    assert intra_op(session_of(graph)) == 2
    choice = session_threads()
    assert (choice.threads, choice.source, choice.lowered) == (2, "CPU quota", True)


def test_without_a_fit_onnx_runtime_keeps_its_own_count(host, tmp_path):
    """torch at its default 32 threads, ONNX Runtime at its own 32: the option stays 0, ONNX Runtime's own choice."""
    graph = tiny_graph(tmp_path / "tiny.onnx")
    assert intra_op(session_of(graph)) == 0


def test_the_session_is_never_raised_past_onnx_runtimes_own_count(host, tmp_path):
    host["threads"] = 96  # OMP_NUM_THREADS=96, or the program's torch.set_num_threads(96)
    assert intra_op(session_of(tiny_graph(tmp_path / "tiny.onnx"))) == 0


def test_torchs_count_set_by_the_user_or_the_program_fits_the_session(host, tmp_path, monkeypatch):
    """OMP_NUM_THREADS=3 (torch reads it; ONNX Runtime does not) or torch.set_num_threads(3): 3, not ONNX Runtime's 32."""
    from bio_mrc.inference.onnx_threads import session_threads

    host["threads"] = 3
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert intra_op(session_of(tiny_graph(tmp_path / "tiny.onnx"))) == 3
    assert session_threads().source == "torch"


def test_a_callers_threads_stand_over_the_quota(host, tmp_path):
    graph = tiny_graph(tmp_path / "tiny.onnx")
    fit_torch_threads()
    assert intra_op(session_of(graph, threads=5)) == 5
    assert intra_op(session_of(graph, threads=100)) == 100  # the caller's own, even past ONNX Runtime's count


@pytest.mark.parametrize("threads", [0, -1, 2.0, True, "2"])
def test_a_malformed_threads_is_refused(host, tmp_path, threads):
    with pytest.raises(ConfigError, match="threads is a positive whole number"):
        session_of(tiny_graph(tmp_path / "tiny.onnx"), threads=threads)


def test_onnx_runtimes_own_variable_stands_over_the_quota(host, tmp_path, monkeypatch):
    graph = tiny_graph(tmp_path / "tiny.onnx")
    fit_torch_threads()
    monkeypatch.setenv("ORT_INTRA_OP_NUM_THREADS", "6")
    assert intra_op(session_of(graph)) == 6
    monkeypatch.setenv("ORT_INTRA_OP_NUM_THREADS", "0")  # ONNX Runtime's own count, asked for
    assert intra_op(session_of(graph)) == 0
    monkeypatch.setenv("ORT_INTRA_OP_NUM_THREADS", "")  # empty: unset, as ONNX Runtime reads it
    assert intra_op(session_of(graph)) == 2


@pytest.mark.parametrize("text", ["-1", "+2", " 2", "2 ", "2.0", "two", "99999999999", "２"])
def test_a_malformed_onnx_runtime_variable_is_refused_before_the_folder_is_read(host, tmp_path, monkeypatch, text):
    """One line naming the variable, before the folder is read (here none is there), not ONNX Runtime's banner and the
    package's 'cannot run its graph'."""
    from bio_mrc.inference.onnx_runner import OnnxModel

    monkeypatch.setenv("ORT_INTRA_OP_NUM_THREADS", text)
    with pytest.raises(ConfigError, match=r"^ORT_INTRA_OP_NUM_THREADS=.*: give ONNX Runtime's intra-op threads as a whole number"):
        OnnxModel.load(tmp_path / "no-such-export")


def test_sessions_run_their_nodes_in_sequence(host, tmp_path):
    """No inter-op pool starts: ONNX Runtime starts one only for parallel execution, which the package never asks."""
    import onnxruntime as ort

    options = session_of(tiny_graph(tmp_path / "tiny.onnx")).get_session_options()
    assert options.execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL


def test_physical_cores_count_each_core_once(tmp_path):
    """Two cores of two hardware threads each, one core alone: 3; nothing readable: os.cpu_count()."""
    from bio_mrc.inference.onnx_threads import physical_cores

    for cpu, siblings in enumerate(["0,4", "1,5", "2", "0,4", "1,5"]):
        write(tmp_path / "cpu" / f"cpu{cpu}" / "topology", thread_siblings_list=siblings + "\n")
    (tmp_path / "cpu" / "cpufreq").mkdir()
    assert physical_cores(tmp_path / "cpu") == 3
    assert physical_cores(tmp_path / "none") == (os.cpu_count() or 1)


PHYSICAL_CORES_AGAINST_ONNX_RUNTIME = """
import os, sys
import numpy as np, onnxruntime as ort
from bio_mrc.inference.onnx_threads import physical_cores
before = len(os.listdir("/proc/self/task"))
session = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
session.run(None, {"input_ids": np.ones((1, 4), dtype=np.int64)})
print(len(os.listdir("/proc/self/task")) - before + 1, physical_cores())  # the pool's threads and the caller's
"""


@pytest.mark.slow  # a fresh interpreter that imports onnxruntime
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_physical_cores_are_onnx_runtimes_own_count(tmp_path):
    environment = {k: v for k, v in os.environ.items() if k != "ORT_INTRA_OP_NUM_THREADS"}
    done = subprocess.run(
        [sys.executable, "-c", PHYSICAL_CORES_AGAINST_ONNX_RUNTIME, str(tiny_graph(tmp_path / "t.onnx"))],
        capture_output=True,
        text=True,
        env={**environment, "PYTHONPATH": str(ROOT)},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    pool, counted = map(int, done.stdout.split())
    assert pool == counted


# --- the doors that build sessions ---------------------------------------------------------------


@pytest.fixture
def sessions_built(monkeypatch):
    """The intra-op threads of every session the package builds from here on."""
    import onnxruntime as ort

    built, real = [], ort.InferenceSession

    def record(path, options=None, **keywords):
        built.append(options.intra_op_num_threads)
        return real(path, options, **keywords)

    monkeypatch.setattr(ort, "InferenceSession", record)
    return built


@pytest.mark.slow  # reads the shared export
def test_a_command_fits_the_sessions_threads_to_the_quota(host, onnx_dir, sessions_built, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cli, "torch_imported", lambda: False)  # the command line fits torch, as in a fresh process
    assert main(["extract", "--model", str(onnx_dir), "--question", "Who?", "--context", "Ada did."]) == 0
    assert sessions_built == [2]
    monkeypatch.setenv("OMP_NUM_THREADS", "4")  # the user's count: torch's (read at its start; faked here), the session's
    host["threads"] = 4
    assert main(["predict", "--model", str(onnx_dir), "--data", str(SAMPLE_V1), "--output", str(tmp_path / "p.json")]) == 0
    assert sessions_built == [2, 4]
    monkeypatch.setenv("ORT_INTRA_OP_NUM_THREADS", "2.0")  # refused before the graph is parsed, in one line
    assert main(["extract", "--model", str(onnx_dir), "--question", "Who?", "--context", "Ada did."]) == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith("error: ORT_INTRA_OP_NUM_THREADS='2.0': give ONNX Runtime's")
    assert sessions_built == [2, 4]


@pytest.mark.slow  # reads the shared export
def test_the_library_doors_follow_the_programs_fit(host, onnx_dir, sessions_built):
    from transformers import pipeline

    from bio_mrc.inference import AnswerExtractor

    AnswerExtractor.from_pretrained(str(onnx_dir))
    assert sessions_built == [0]  # no fit: ONNX Runtime's own count, as torch's default stands without one
    fit_torch_threads()
    AnswerExtractor.from_pretrained(str(onnx_dir))
    pipeline("bio-mrc-qa", model=str(onnx_dir))
    assert sessions_built == [0, 2, 2]
