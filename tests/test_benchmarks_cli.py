"""The benchmark scripts run from the repository root and from ``benchmarks/``: ``--help`` answers,
and a missing model or data file ends in one line saying what to run first, with no traceback.

Each script checks its arguments and inputs at the start of its run, before any work. The cases run each
script as ``__main__`` in this process (:func:`run_in_process`: the libraries it imports are imported once),
and :func:`test_scripts_start_as_scripts_from_both_folders` starts real Python processes from both folders.
"""

from __future__ import annotations

import contextlib
import gzip
import importlib.util
import io
import json
import os
import runpy
import shutil
import subprocess
import sys
import traceback
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "benchmarks"
SCRIPTS = sorted(p.name for p in BENCHMARKS.glob("bench_*.py"))
NEEDS_MODEL = ["bench_inference.py", "bench_onnx.py", "bench_postprocess.py", "bench_quantization.py", "bench_tune.py"]
NEEDS_DATA = [*NEEDS_MODEL, "bench_features.py", "bench_gpu_training.py", "bench_main_job_bound.py",
              "bench_precision.py", "bench_serve.py", "bench_step_host_time.py", "bench_training.py", "bench_training_speed.py"]
WHERE = ["root", "benchmarks"]



def load_common():
    """benchmarks/_common.py as a module, without putting benchmarks/ on the whole session's path."""
    spec = importlib.util.spec_from_file_location("benchmarks_common", BENCHMARKS / "_common.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_common = load_common()


def load_benchmark(name: str, monkeypatch) -> object:
    """benchmarks/NAME.py as a module, with its folder on the path for its sibling ``_common`` (as running it gives)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def run_script(repo: Path, script: str, where: str, *args: str, data_dir: Path) -> subprocess.CompletedProcess:
    """``python benchmarks/SCRIPT`` from ``repo``, or ``python SCRIPT`` from ``repo/benchmarks``."""
    cwd, path = (repo, f"benchmarks/{script}") if where == "root" else (repo / "benchmarks", script)
    env = {**os.environ, "BIO_MRC_DATA": str(data_dir), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, path, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def run_in_process(repo: Path, script: str, where: str, *args: str, data_dir: Path) -> subprocess.CompletedProcess:
    """:func:`run_script`'s case in this process: the script runs as ``python SCRIPT`` runs it (as ``__main__``, its
    folder first on the path, from ``where``), and its exit, stdout and stderr are what that process would give.
    The libraries it imports are imported once for all cases, so a case costs milliseconds instead of a Python
    start (about 11 s on a 2-core AMD Zen 3); :func:`test_scripts_start_as_scripts_from_both_folders` runs real
    processes."""
    folder = repo / "benchmarks"
    environ, argv, path, cwd = dict(os.environ), sys.argv[:], sys.path[:], Path.cwd()
    out, err, code = io.StringIO(), io.StringIO(), 0
    forget_benchmark_modules()  # a script imports its siblings (_common) from its own folder, a clone's included
    try:
        os.environ["BIO_MRC_DATA"] = str(data_dir)
        sys.argv, sys.path = [str(folder / script), *args], [str(folder), *path]
        os.chdir(repo if where == "root" else folder)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            runpy.run_path(str(folder / script), run_name="__main__")
    except SystemExit as done:  # as the interpreter ends: a status as it is, a message to stderr with status 1
        if done.code is None or isinstance(done.code, int):
            code = done.code or 0
        else:
            code = 1
            err.write(f"{done.code}\n")
    except Exception:  # noqa: BLE001 - reported as the process would report it
        code = 1
        err.write(traceback.format_exc())
    finally:
        os.chdir(cwd)
        sys.argv, sys.path = argv, path
        os.environ.clear()
        os.environ.update(environ)
        forget_benchmark_modules()
    return subprocess.CompletedProcess([script, *args], code, out.getvalue(), err.getvalue())


def forget_benchmark_modules() -> None:
    for name, module in list(sys.modules.items()):
        if Path(getattr(module, "__file__", None) or "/").parent.name == "benchmarks":
            del sys.modules[name]


def assert_one_line_failure(result: subprocess.CompletedProcess, *expected: str) -> str:
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def empty_data(tmp_path: Path) -> Path:
    folder = tmp_path / "no-data"
    folder.mkdir()
    return folder


@pytest.fixture(scope="module")
def fresh_clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The benchmark scripts in a repository that has never trained a model (no runs/)."""
    clone = tmp_path_factory.mktemp("clone")
    (clone / "benchmarks").mkdir()
    for script in BENCHMARKS.glob("*.py"):
        shutil.copy(script, clone / "benchmarks" / script.name)
    return clone


def test_every_script_is_covered():
    assert set(NEEDS_DATA) <= set(SCRIPTS)
    assert len(SCRIPTS) >= 9


@pytest.mark.slow  # two Python starts per case
@pytest.mark.parametrize("where", WHERE)
def test_scripts_start_as_scripts_from_both_folders(where: str, fresh_clone: Path, empty_data: Path):
    """Real processes, as a user starts them: --help answers, and a missing input ends in one line, no traceback."""
    help_ = run_script(REPO, "bench_training.py", where, "--help", data_dir=empty_data)
    assert help_.returncode == 0 and help_.stdout.startswith("usage:") and "Traceback" not in help_.stderr, help_.stderr
    line = assert_one_line_failure(run_script(fresh_clone, "bench_inference.py", where, data_dir=empty_data), "no trained model")
    assert str(fresh_clone / "runs") in line


@pytest.mark.slow  # the first case imports every script's libraries (ONNX Runtime, selenium, httpx, ...)
@pytest.mark.parametrize("script", SCRIPTS)
def test_help(script: str, empty_data: Path):
    """From the root: the runs below start the scripts from both folders."""
    result = run_in_process(REPO, script, "root", "--help", data_dir=empty_data)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage:")
    assert "Traceback" not in result.stderr


@pytest.mark.slow  # the first case imports every script's libraries (ONNX Runtime, selenium, httpx, ...)
@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("script", NEEDS_MODEL)
def test_missing_model_says_what_to_run(script: str, where: str, fresh_clone: Path, empty_data: Path):
    result = run_in_process(fresh_clone, script, where, data_dir=empty_data)
    line = assert_one_line_failure(result, "no trained model", "bio-mrc compare --config quick", "--model DIR")
    assert str(fresh_clone / "runs") in line  # the clone's runs/, wherever the script was started


@pytest.mark.slow  # the first case imports every script's libraries (ONNX Runtime, selenium, httpx, ...)
@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("script", NEEDS_DATA)
def test_missing_data_says_where_to_point(script: str, where: str, tmp_path: Path, empty_data: Path):
    model = tmp_path / "some-model"
    model.mkdir()
    args = ["--model", str(model)] if script in NEEDS_MODEL else []
    result = run_in_process(REPO, script, where, *args, "--data-dir", str(empty_data), data_dir=tmp_path / "elsewhere")
    line = assert_one_line_failure(result, "no data file", "--data-dir DIR", "$BIO_MRC_DATA")
    assert str(empty_data / "squad-v1.1") in line  # --data-dir wins over $BIO_MRC_DATA


@pytest.mark.slow  # the first case imports every script's libraries (ONNX Runtime, selenium, httpx, ...)
@pytest.mark.parametrize("where", WHERE)
def test_a_model_that_is_not_there(where: str, tmp_path: Path, empty_data: Path):
    result = run_in_process(REPO, "bench_inference.py", where, "--model", str(tmp_path / "nothing"), data_dir=empty_data)
    assert_one_line_failure(result, "no model folder at", "--model")


@pytest.mark.slow  # the first case imports every script's libraries (ONNX Runtime, selenium, httpx, ...)
@pytest.mark.parametrize("where", WHERE)
def test_a_comparison_without_a_report_page(where: str, tmp_path: Path, empty_data: Path):
    result = run_in_process(REPO, "bench_report_html.py", where, "--comparison", str(tmp_path), data_dir=empty_data)
    assert_one_line_failure(result, f"no report.html in {tmp_path}", "--comparison", "synthetic")


@pytest.mark.slow  # the first case imports every script's libraries (ONNX Runtime, selenium, httpx, ...)
def test_a_data_file_that_is_not_there(tmp_path: Path, empty_data: Path):
    result = run_in_process(REPO, "bench_training.py", "benchmarks", "--data", str(tmp_path / "train.json"), data_dir=empty_data)
    assert_one_line_failure(result, "no data file at", "--data FILE")


def test_default_data_dir_is_beside_the_repository_wherever_run(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("BIO_MRC_DATA", raising=False)
    monkeypatch.chdir(BENCHMARKS)
    assert _common.default_data_dir() == REPO.parent / "shared" / "data"
    monkeypatch.setenv("BIO_MRC_DATA", "/elsewhere")
    assert _common.default_data_dir() == Path("/elsewhere")
    assert _common.repo_path("runs/bench-features") == REPO / "runs" / "bench-features"


def test_machine_description_names_the_cpu_and_its_instruction_sets():
    from bio_mrc.precision import cpu_name

    line = _common.machine_description()
    assert "\n" not in line
    assert line.startswith(cpu_name())
    for name in ("AVX2", "AVX-512F", "AVX512-BF16", "AMX-BF16"):
        assert f"{name} yes" in line or f"{name} no" in line


def test_every_record_names_the_command_that_ran_it(monkeypatch: pytest.MonkeyPatch):
    """The line beside the machine's says what ran, quoted so that it can be typed again, then the load and the date."""
    monkeypatch.setattr(sys, "argv", ["benchmarks/bench_x.py", "--limit", "5", "--data", "a b.json"])
    line = _common.command_load_and_date()
    assert line.startswith("command: python benchmarks/bench_x.py --limit 5 --data 'a b.json'; load average ")
    assert line.endswith(" UTC") and "\n" not in line


@pytest.mark.slow  # each case imports the script's libraries
@pytest.mark.parametrize(("script", "args", "expected"), [
    ("bench_predict_memory.py", ["--small", "0"], "--small must be at least 1"),
    ("bench_predict_memory.py", ["--large", "-1"], "got 10000 and -1"),
    ("bench_predict_memory.py", ["--small", "9", "--unlabelled"], "--small must be at least 10"),
    ("bench_predict_memory.py", ["--words", "3"], "--words must be at least 4"),
    ("bench_gpu_training.py", ["--variants", "reference,ours-64"], "--variants: unknown ours-64"),
    ("bench_gpu_training.py", ["--steps", "1"], "--steps must be at least 2"),
    ("bench_gpu_training.py", ["--profile-steps", "-1"], "--profile-steps must be 0 (no profile) or more"),
    ("bench_gpu_training.py", ["--max-seq-length", "128", "--doc-stride", "64"], "error: doc_stride (64) must leave room"),
    ("bench_gpu_training.py", ["--repeats", "0"], "--repeats must be at least 1"),
    ("bench_gpu_training.py", ["--checkpoint-steps", "-1"], "--checkpoint-steps must be 0 (no checkpoints) or more"),
    ("bench_gpu_training.py", ["--old-tree", "no-such-checkout"], "--old-tree no-such-checkout holds no bio_mrc package"),
    ("bench_training.py", ["--variants", "ours,rows"], "--variants: unknown rows"),
    ("bench_step_host_time.py", ["--repeats", "0"], "--repeats 0, --limit 4000 and --skip 3: give at least 1 each"),
    ("bench_training.py", ["--max-seq-length", "128", "--doc-stride", "64"], "error: doc_stride (64) must leave room"),
    ("bench_tag_decoding.py", ["--sizes", "100000", "10"], "--sizes are at least 1000 characters each"),
    ("bench_tag_decoding.py", ["--long-repeats", "0"], "got [100000, 1000000, 5000000], 1000, 150, 3 and 0"),
    ("bench_documents_memory.py", ["--documents", "10", "0"], "--documents are at least 1 each"),
    ("bench_documents_memory.py", ["--top-k", "0"], "got [1000, 10000], 60 and 0"),
    ("bench_bootstrap.py", ["--sizes", "10570", "1"], "--sizes are at least 2 each"),
    ("bench_bootstrap.py", ["--repeats", "0"], "got [10570, 1000], 2000 and 0"),
    ("bench_cpu_quota.py", ["--cpus", "0"], "--cpus must be above 0, got 0.0"),
    ("bench_cpu_quota.py", ["--steps", "0"], "--steps must be at least 1"),
    ("bench_cpu_quota.py", ["--tokens", "8"], "--tokens must be at least 24"),
    ("bench_cpu_quota.py", ["--onnx-dir", "no-such-export"], "no model folder at no-such-export: pass --onnx-dir"),
])
def test_sizes_variants_and_windows_are_checked_before_any_work(script, args, expected, empty_data: Path):
    """Before the model is trained or the data read: bench_predict_memory's sizes, the training benchmarks' variants
    and windows the package refuses."""
    result = run_in_process(REPO, script, "root", *args, data_dir=empty_data)
    assert_one_line_failure(result, expected)


def test_cpu_quota_says_in_one_line_where_no_group_can_be_made(monkeypatch, tmp_path: Path, capsys):
    """No hierarchy mounted, or one whose folder cannot take a group: the reason, and what the script needs."""
    bench = load_benchmark("bench_cpu_quota", monkeypatch)
    monkeypatch.setattr(bench, "cgroup_mounts", lambda: {})
    with pytest.raises(SystemExit) as done:
        bench.make_group(1.0)
    assert str(done.value).startswith("cannot create a cgroup with a CPU quota here (run as root where cgroup v1's cpu")
    assert str(done.value).endswith(": no cgroup hierarchy is mounted")
    monkeypatch.setattr(bench, "cgroup_mounts", lambda: {"v1": tmp_path / "gone"})
    with pytest.raises(SystemExit) as done:
        bench.make_group(1.0)
    assert f"v1 at {tmp_path / 'gone'}: No such file or directory" in str(done.value)
    assert not (tmp_path / "gone").exists()


def test_cpu_quota_writes_the_quota_of_the_cpus_asked(monkeypatch, tmp_path: Path):
    bench = load_benchmark("bench_cpu_quota", monkeypatch)
    (tmp_path / "v2").mkdir()
    (tmp_path / "v2" / "cgroup.controllers").write_text("cpuset cpu io memory\n", encoding="ascii")
    monkeypatch.setattr(bench, "cgroup_mounts", lambda: {"v2": tmp_path / "v2"})
    version, group = bench.make_group(1.5)
    assert (version, group.parent) == ("v2", tmp_path / "v2")
    assert (group / "cpu.max").read_text(encoding="ascii") == "150000 100000"


def fake_clock(monkeypatch: pytest.MonkeyPatch, *readings: float) -> None:
    """``time.perf_counter`` as _common sees it: these readings, in order."""
    values = iter(readings)
    monkeypatch.setattr(_common.time, "perf_counter", lambda: next(values))


def test_timed_and_stage_times_measure_between_two_clock_readings(monkeypatch: pytest.MonkeyPatch):
    fake_clock(monkeypatch, 10.0, 12.5, 20.0, 21.0, 21.0, 24.0)
    assert _common.timed(lambda: "value") == ("value", 2.5)
    times = _common.StageTimes()
    with times.stage("read"):
        pass
    with times.stage("decode"):
        pass
    assert list(times.items()) == [("read", 1.0), ("decode", 3.0)]


def test_median_and_best_of_repeats_skip_the_warmup_runs(monkeypatch: pytest.MonkeyPatch):
    calls = []
    fake_clock(monkeypatch, 0, 5, 0, 1, 0, 3)  # three timed runs: 5, 1, 3 seconds
    assert _common.median_of(lambda: calls.append(1) or len(calls), 3, warmup=2) == (5, 3)
    fake_clock(monkeypatch, 0, 5, 0, 1, 0, 3)
    assert _common.best_of(lambda: "x", 3) == ("x", 1)


def test_alternate_runs_the_sides_in_turn_and_gives_each_sides_median_stages(monkeypatch: pytest.MonkeyPatch):
    order, progress, memory = [], [], []
    # Per repeat: reference (whole call 4 s, then 2 s), ours (gives its own total 1 s, then 3 s; the call's clock unused).
    fake_clock(monkeypatch, 0, 4, 0, 9, 0, 2, 0, 9)
    sides = {"reference": lambda: (order.append("reference") or "r", {"read": len(order)}),
             "ours": lambda: (order.append("ours") or "o", {"read": len(order), "total": len(order) - 1.0})}
    medians, last = _common.alternate(sides, 2, memory.append, lambda repeat, latest: progress.append((repeat, latest)))
    assert order == ["reference", "ours", "reference", "ours"] and memory == order
    assert medians == {"reference": {"read": 2.0, "total": 3.0}, "ours": {"read": 3.0, "total": 2.0}}
    assert last == {"reference": "r", "ours": "o"}
    assert progress[0] == (0, {"reference": {"read": 1, "total": 4}, "ours": {"read": 2, "total": 1.0}})


def test_no_benchmark_script_keeps_its_own_median_of_runs():
    for script in sorted(BENCHMARKS.glob("*.py")):
        if script.name != "_common.py":
            assert "def median_times" not in script.read_text(encoding="utf-8"), script.name


TIMING_HELPERS = ("timed", "repeated", "median_of", "best_of", "median_times", "alternate", "StageTimes")


def test_the_timing_helpers_are_defined_once_in_common():
    """Every script times through ``_common``: none defines a helper of the same name (a copy of it) at its top level."""
    import ast

    assert all(hasattr(_common, name) for name in TIMING_HELPERS)
    copies = [f"{path.name}:{node.lineno} {node.name}" for path in BENCHMARKS.glob("*.py") if path.name != "_common.py"
              for node in ast.parse(path.read_text(encoding="utf-8")).body
              if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in TIMING_HELPERS]
    assert not copies, copies


class _Readings:
    """A clock for bench_serve that moves a hundredth of a second each time it is read (its process time the real one)."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 0.01
        return self.now

    def process_time(self) -> float:
        import time

        return time.process_time()


def bench_serve_clients(monkeypatch, shared_pool: bool) -> tuple[int, set]:
    """bench_serve's ``load`` with 4 clients for a moment against a stand-in server: the httpx clients it made
    and the connections (client ports) the server saw answering."""
    httpx = pytest.importorskip("httpx")
    uvicorn = pytest.importorskip("uvicorn")
    import asyncio
    import json
    import socket
    import threading
    import time

    from .test_serve import PromptServer  # uvicorn stopping within 10 ms of the load's end

    bench_serve = load_benchmark("bench_serve", monkeypatch)
    made, ports = [], set()
    original_init = httpx.AsyncClient.__init__

    def counted_init(self, *args, **kwargs):
        made.append(self)
        original_init(self, *args, **kwargs)

    monkeypatch.setattr(httpx.AsyncClient, "__init__", counted_init)
    served = {"batches": 0, "questions": 0, "busy_seconds": 0.0}

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        if scope["path"] == "/answer":
            ports.add(scope["client"][1])
        body = json.dumps({"served": served} if scope["path"] == "/health" else {"results": [{}]}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = PromptServer(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive()
        time.sleep(0.02)
    try:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        # A second of load on a clock of readings: its warm-up and its window pass as requests are sent and answered, not
        # as seconds go, so the window holds answers however slowly a loaded machine gives the first ones.
        monkeypatch.setattr(bench_serve, "time", _Readings())
        result = asyncio.run(bench_serve.load(url, os.getpid(), [{"question": "q", "context": "c"}], 4, 0.05, 1.0, shared_pool))
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()
    assert result["answered"] > 0
    return len(made), ports


def test_bench_serve_gives_each_client_its_own_connection(monkeypatch):
    """Independent clients: each its own httpx client and connection, besides the monitor's (a pool shared by all
    paces the load itself: httpx's CPU per request grows with the requests waiting for a connection)."""
    made, ports = bench_serve_clients(monkeypatch, shared_pool=False)
    assert made == 4 + 1
    assert len(ports) == 4


def test_bench_serve_shared_pool_is_one_httpx_client(monkeypatch):
    made, ports = bench_serve_clients(monkeypatch, shared_pool=True)
    assert made == 1 + 1
    assert 1 <= len(ports) <= 4


def test_bootstrap_benchmark_draws_as_before_then_as_now(monkeypatch):
    """The "one chunk" side draws as many resamples at once as the elements allow (20,000,000 // 1,000 rows, more
    than the 2,000 resamples: one chunk), the package at most ``RESAMPLES_A_CHUNK`` (100); the same interval either
    way, and the package's chunking restored after."""
    from bio_mrc.metrics import stats

    bench = load_benchmark("bench_bootstrap", monkeypatch)
    a, b = bench.squad_like_scores(1_000, np.random.default_rng(0))
    assert a.min() >= 0.0 and a.max() <= 1.0 and b.min() >= 0.0 and b.max() <= 1.0
    calls = bench.sides(a, b, 2_000, 0)
    (ours, _), ours_rows = bench.chunk_rows(calls["ours"])
    (before, _), before_rows = bench.chunk_rows(calls["one chunk"])
    assert ours_rows == [100] * 20 and before_rows == [2_000]
    assert before == ours and stats.RESAMPLES_A_CHUNK == 100


def test_bootstrap_benchmarks_monte_carlo_bound_is_four_errors_of_two_endpoints(monkeypatch):
    """Hand-computed: d of sd 1 over 4 questions (resampled mean's sd 1/2), 2,000 draws, the 2.5% endpoint:
    sqrt(0.025 * 0.975 / 2000) / phi(1.959964) = 0.0034911 / 0.0584451 = 0.059734 sds; 4 * sqrt(2) of it, 0.33791."""
    bench = load_benchmark("bench_bootstrap", monkeypatch)
    d = np.array([1.0, -1.0, 1.0, -1.0])
    assert bench.monte_carlo_bound(d, 2_000) == pytest.approx(0.33791 / 2, rel=1e-4)


def test_the_bound_pads_batches_as_the_package_does_and_counts_every_product(monkeypatch, tiny_encoder_dir):
    bound = load_benchmark("bench_main_job_bound", monkeypatch)
    # answering: sorted longest first, each batch padded to its first (longest) window
    assert bound.inference_batches([5, 3, 9, 1, 7], 2) == [(2, 9), (2, 5), (1, 1)]
    # training: the trainer's length-grouped order, each batch padded to a multiple of 8
    batches = bound.training_batches([5, 3, 9, 1, 17], 2, seed=0)
    assert sorted(n for n, _ in batches) == [1, 2, 2] and all(length % 8 == 0 for _, length in batches)
    assert {length for _, length in batches} <= {8, 16, 24}
    from bio_mrc.model import BioMrcForQuestionAnswering

    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio").eval()
    h, layers = model.config.encoder.hidden_size, model.config.encoder.num_hidden_layers
    intermediate = model.config.encoder.intermediate_size
    per_token = 2 * layers * (4 * h * h + 2 * h * intermediate) + 2 * h * (2 + 3)  # the layers' linears; span (2) and BIO (3) heads
    for length in (4, 8):
        assert bound.window_flops(model, length) == length * per_token + layers * 4 * length * length * h


def test_training_speed_skips_the_bf16_settings_only_where_bf16_is_emulated(monkeypatch):
    speed = load_benchmark("bench_training_speed", monkeypatch)
    everything = set(speed.SETTINGS)
    assert set(speed.settings_to_run(skip_emulated=False, native=False)) == everything
    assert set(speed.settings_to_run(skip_emulated=True, native=True)) == everything
    fp32_only = speed.settings_to_run(skip_emulated=True, native=False)
    assert set(fp32_only) == {speed.BASELINE, speed.FP32_DEFAULTS}  # the baseline and the defaults as auto trains them there


def test_profile_time_tree_sums_the_main_threads_package_frames(monkeypatch, tmp_path: Path):
    """Hand-counted: samples over the rate are seconds; another thread's stacks and frames of other libraries
    between two package frames are left out; the first library frame a package frame calls stays, bracketed."""
    tree = load_benchmark("profile_time_tree", monkeypatch)
    raw = tmp_path / "p.raw"
    raw.write_text(
        "<module> (bin/bio-mrc:8);main (bio_mrc/cli.py:10);train (bio_mrc/training/train.py:5);"
        "Trainer.train (transformers/trainer.py:99);inner (transformers/trainer.py:120);"
        "forward (bio_mrc/model.py:40) 30\n"
        "<module> (bin/bio-mrc:8);main (bio_mrc/cli.py:11);train (bio_mrc/training/train.py:6) 10\n"
        "<module> (bin/bio-mrc:8);main (bio_mrc/cli.py:12);load (bio_mrc/data/squad.py:3);loads (json/__init__.py:1) 5\n"
        "Thread._bootstrap_inner (threading.py:1045);run (threading.py:1) 500\n"
        " 7\n", encoding="utf-8")
    stacks = tree.read_stacks(raw.read_text(), str(raw))
    root = tree.main_thread_root(stacks)
    assert root == "<module> (bin/bio-mrc:8)"
    nodes = tree.as_json(tree.time_tree(stacks, root), rate=10.0, min_samples=0)
    (main,) = nodes[0]["children"]
    assert (nodes[0]["seconds"], main["frame"], main["seconds"]) == (4.5, "main (cli.py)", 4.5)
    train, load = main["children"]
    assert (train["frame"], train["seconds"], load["frame"], load["seconds"]) == ("train (training/train.py)", 4.0, "load (data/squad.py)", 0.5)
    (library,) = train["children"]
    assert (library["frame"], library["seconds"]) == ("[Trainer.train (trainer.py)]", 3.0)
    assert library["children"] == [{"frame": "forward (model.py)", "seconds": 3.0, "children": []}]
    assert load["children"][0]["frame"] == "[loads (__init__.py)]"
    assert tree.as_json(tree.time_tree(stacks, root), rate=10.0, min_samples=6)[0]["children"][0]["children"] == [train]


def test_gpu_training_profile_counts_a_steps_operators_and_host_waits(monkeypatch):
    """Hand-counted over two profiled "steps" of three operators each: ``sum``, ``item`` (whose own
    ``_local_scalar_dense``, a read of the value on the host, is a wait but not another dispatch) and ``nonzero`` (a
    wait: its size is read on the host); without a device no kernels or busy time."""
    import torch

    bench = load_benchmark("bench_gpu_training", monkeypatch)
    values = torch.arange(6.0)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        for _ in range(2):
            values.sum().item()
            torch.nonzero(values)
    summary = bench.profile_summary(profile, steps=2, wall_seconds=0.5)
    assert summary["operators"] == 3.0 and summary["host_waits"] == 2.0 and summary["wall_ms"] == 250.0
    if not torch.cuda.is_available():
        assert summary["kernels"] is None and summary["device_busy_ms"] is None


def test_an_epochs_steps_split_into_its_first_steps_the_steps_after_and_its_saves(monkeypatch):
    """Hand-computed: five steps of 4, 4, 4, 4 and 2 windows from a training begun at 0 s. The first two end at 2.0 s;
    the three after them carry 10 windows in 3.0 s (3.33 windows/s) with steps of 1.0, 1.5 and 0.5 s (median 1 s); step 3
    saves a checkpoint, from its end at 3.0 s to the next step's begin at 3.9 s. The Trainer's figure passes as it is."""
    epoch = load_benchmark("_training_epoch", monkeypatch)
    run = {"began": 0.0, "begins": [0.5, 1.5, 2.2, 3.9, 4.6], "ends": [1.0, 2.0, 3.0, 4.5, 5.0], "batches": [4, 4, 4, 4, 2],
           "trainer_windows_s": 3.6, "windows": 18}
    summary = epoch.epoch_summary(run, first_steps=2, checkpoint_steps=3)
    assert summary["steps"] == 5 and summary["trainer_windows_s"] == 3.6
    assert summary["first_steps"] == 2 and summary["first_steps_s"] == 2.0
    assert summary["after_windows_s"] == pytest.approx(10 / 3.0, abs=0.05) and summary["median_step_ms"] == 1000.0
    assert summary["saves_s"] == [0.9]
    short = epoch.epoch_summary(run, first_steps=100, checkpoint_steps=0)  # an epoch shorter than the first steps
    assert (short["first_steps"], short["first_steps_s"], short["saves_s"]) == (4, 4.5, [])
    assert short["after_windows_s"] == pytest.approx(2 / 0.5) and short["median_step_ms"] == 500.0


@pytest.mark.slow  # three processes each import torch and the package, two of them train
def test_gpu_training_epochs_of_two_packages_alternate_and_name_a_missing_one(tmp_path: Path, tiny_encoder_dir: Path,
                                                                              empty_data: Path):
    """bench_gpu_training --old-tree against a checkout of the same package, on the CPU: each package trains one epoch
    through train_model in a process of its own, its own package's, with the Trainer's windows/s, its first steps and
    the steps after them; the in-process variant still runs, its profiled steps' operator table and timeline written
    beside --output; a checkout without the package is one line."""
    from .conftest import SAMPLE_V1

    args = ["--encoder", str(tiny_encoder_dir), "--data", str(SAMPLE_V1), "--limit", "8", "--steps", "2",
            "--batch-size", "2", "--warmup", "1", "--max-seq-length", "128", "--doc-stride", "32", "--variants", "ours",
            "--checkpoint-steps", "2", "--repeats", "1", "--old-tree", str(REPO), "--profile-steps", "2",
            "--output", str(tmp_path / "out.json")]
    env = {**os.environ, "BIO_MRC_DATA": str(empty_data), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([sys.executable, "benchmarks/bench_gpu_training.py", *args], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary == json.loads((tmp_path / "out.json").read_text())
    assert summary["old_tree"] == str(REPO) and set(summary["epochs"]) == {"ours", "old"}
    for way in ("ours", "old"):
        [run] = summary["epochs"][way]
        assert run["package"] == str(REPO / "bio_mrc" / "__init__.py")
        assert run["trainer_windows_s"] > 0 and run["steps"] >= 2 and run["windows"] >= 2 * run["steps"] - 1
        assert 1 <= run["first_steps"] < run["steps"] and run["after_windows_s"] > 0
        assert len(run["saves_s"]) == (run["steps"] - 1) // 2  # a checkpoint every 2 steps, the last step's after the epoch
    assert summary["epoch_ratio"] == pytest.approx(summary["ours_epoch_windows_s"] / summary["old_epoch_windows_s"], rel=1e-2)
    assert summary["ours_windows_s"] > 0 and "| old | 1 |" in result.stdout
    assert summary["ours_profile"]["operators"] > 0 and (tmp_path / "out.json.ours.profile.txt").is_file()
    with gzip.open(tmp_path / "out.json.ours.trace.json.gz", "rt", encoding="utf-8") as trace:
        assert any(event.get("name", "").startswith("aten::") for event in json.load(trace)["traceEvents"])
    missing = run_script(REPO, "bench_gpu_training.py", "root", "--old-tree", str(empty_data), data_dir=empty_data)
    assert_one_line_failure(missing, f"--old-tree {empty_data} holds no bio_mrc package")


def test_a_report_that_is_no_comparison_is_named_as_the_scripts_option(tmp_path: Path):
    """read_report names the file as the argument that gives it; a script reading one names its own --report."""
    other = tmp_path / "report.json"
    other.write_text("[]")
    with pytest.raises(SystemExit) as refused:
        _common.comparison_report(str(other), str(tmp_path))
    assert str(refused.value) == f"error: --report {other}: not a bio_mrc comparison report (its JSON is no object)"


def two_windows_of_one_question():
    """Context "a b c d e f" (token t at characters 2t..2t+1) in two windows of four tokens, [CLS] first: t0..t3 and
    t2..t5. By BERT's rule (min(left, right) + 0.04) t2 has its most context in the first window (1.04 against 0.04)
    and t3 in the second: the second window reads t2's spans only past t3, the first window's last token. The second
    window begins inside the answer "b c d" and scores its tail "c d" highest."""
    window = lambda first: [None, *((2 * t, 2 * t + 1) for t in range(first, first + 4))]  # noqa: E731
    features = [{"example_id": "q", "offset_mapping": window(0)}, {"example_id": "q", "offset_mapping": window(2)}]
    start = np.array([[-10, -10, 2, 0, -10], [-10, 5, -10, -10, -10]], dtype=np.float32)
    end = np.array([[-10, -10, -10, -10, 2], [-10, -10, 2, -10, -10]], dtype=np.float32)
    return features, start, end


def test_postprocess_benchmark_classifies_the_max_context_rule_apart_from_pruning(monkeypatch):
    """Hand-computed: the best span is "c d" (5 + 2, second window, whose first token t2 has more context in the
    first), the recipe's answer; under the rule the best is "b c d" (2 + 2, first window), ours."""
    import datasets

    bench = load_benchmark("bench_postprocess", monkeypatch)
    recipe_rule = load_benchmark("recipe_max_context", monkeypatch)
    features, start, end = two_windows_of_one_question()
    held = recipe_rule.max_context_of(datasets.Dataset.from_list(features))
    # first ends (5: no span starts there); t3 has more context in the second window, t2's ends there from t4 on
    assert [first_end.tolist() for first_end in held] == [[5, 1, 2, 3, 5], [5, 3, 2, 3, 4]]
    found = recipe_rule.brute_force(features, [0, 1], start, end, "a b c d e f", held)
    assert found == {"best": ("c d", 7.0), "held": ("b c d", 4.0)}
    assert recipe_rule.recipe_choice(features, [0, 1], start, end, "a b c d e f", held, rule=False) == ("c d", 7.0, False)
    assert recipe_rule.recipe_choice(features, [0, 1], start, end, "a b c d e f", held, rule=True) == ("b c d", 4.0, True)
    searched = recipe_rule.Searched("c d", 7.0, "b c d", 4.0, "c d", 7.0, False)
    assert bench.classify("c d", "b c d", "c d", searched).startswith("max context:")
    assert bench.classify("c d", "a", "c d", searched).startswith("other")  # ours is not the best under the rule
    assert bench.classify("c d", "b c d", "b", searched).startswith("other")  # the band search disagrees
    assert bench.classify("d", "b c d", "c d", searched).startswith("other")  # the recipe's top candidate is not its answer
    pruned = recipe_rule.Searched("c d", 7.0, "b c d", 4.0, "b", -8.0, True)  # a lower span whose start has its most context
    assert bench.classify("b", "b c d", "c d", pruned).startswith("pruning: the best span's start or end")
    nothing = recipe_rule.Searched("c d", 7.0, "b c d", 4.0, "", -np.inf, None)
    assert bench.classify("empty", "b c d", "c d", nothing).startswith("pruning: no top-20")
    tied = recipe_rule.Searched("c d", 7.0, "b c d", 4.0, "b c", 4.0, True)
    assert bench.classify("b c", "b c d", "c d", tied).startswith("tie")


def test_postprocess_benchmark_runs_the_recipe_with_the_max_context_rule(monkeypatch):
    """The recipe answers the tail "c d" as it is, and "b c d" with its own ``token_is_max_context`` check filled."""
    import datasets

    bench = load_benchmark("bench_postprocess", monkeypatch)
    recipe_rule = load_benchmark("recipe_max_context", monkeypatch)
    features, start, end = two_windows_of_one_question()
    examples = datasets.Dataset.from_list([{"id": "q", "context": "a b c d e f"}])
    assert bench.reference_postprocess_qa_predictions(examples, features, (start, end)) == {"q": "c d"}
    held = recipe_rule.max_context_of(datasets.Dataset.from_list(features))
    assert bench.reference_with_max_context(examples, datasets.Dataset.from_list(features), (start, end), held) == {"q": "b c d"}


def test_postprocess_benchmark_reads_a_span_crossing_a_window_edge_where_it_is_whole(monkeypatch):
    """t2 has more context in the first window, which lacks t4: "c d e" (5 + 4, second window) is read there, by the
    brute force, by the recipe with the rule and by ours' decoding, while the tail "c d" stays refused."""
    import datasets

    from bio_mrc.decoding.postprocess import decode
    from bio_mrc.decoding.window_outputs import WindowOutputs
    from bio_mrc.types import Example

    bench = load_benchmark("bench_postprocess", monkeypatch)
    recipe_rule = load_benchmark("recipe_max_context", monkeypatch)
    features, start, end = two_windows_of_one_question()
    end[1, 3] = 4.0  # t4 in the second window
    held = recipe_rule.max_context_of(datasets.Dataset.from_list(features))
    assert recipe_rule.brute_force(features, [0, 1], start, end, "a b c d e f", held)["held"] == ("c d e", 9.0)
    assert recipe_rule.recipe_choice(features, [0, 1], start, end, "a b c d e f", held, rule=True) == ("c d e", 9.0, True)
    assert not recipe_rule.rule_reads(features[1]["offset_mapping"], held[1], 4, 7)  # "c d": the first window holds it
    examples = datasets.Dataset.from_list([{"id": "q", "context": "a b c d e f"}])
    assert bench.reference_with_max_context(examples, datasets.Dataset.from_list(features), (start, end), held) == {"q": "c d e"}
    offsets = np.array([[(-1, -1), *(o for o in f["offset_mapping"][1:])] for f in features])
    outputs = WindowOutputs(np.array([0, 0]), offsets, offsets[..., 0] >= 0, start_logits=start, end_logits=end)
    (ours,) = decode(outputs, [Example("q", "?", "a b c d e f", None)], "span")
    assert ours.spans[0].text == "c d e"


def test_inference_benchmark_classifies_the_max_context_rule(monkeypatch, capsys):
    """Two questions on the windows above. The recipe answers "c d" for both: its exact best (7.0, the runner-up "b c d"
    at 4.0). Ours answers "b c d" for "q", the best span under the rule, and "b" for "r", which no rule explains: "q"
    is the rule's, "r" the logits' (a margin of 3, no near-tie)."""
    import datasets

    from bio_mrc.types import Example

    bench = load_benchmark("bench_inference", monkeypatch)
    features, start, end = two_windows_of_one_question()
    features += [{**feature, "example_id": "r"} for feature in features]
    ref_features = datasets.Dataset.from_list(features)
    logits = (np.concatenate([start, start]), np.concatenate([end, end]))
    contexts = datasets.Dataset.from_list([{"id": q, "context": "a b c d e f"} for q in ("q", "r")])
    assert bench.exact_reference_answers(ref_features, logits, contexts) == {"q": ("c d", 7.0, 4.0), "r": ("c d", 7.0, 4.0)}
    runs = SimpleNamespace(ref_answers={"q": "c d", "r": "c d"}, our_answers={"q": "b c d", "r": "b"}, ref_features=ref_features,
                           ref_logits=logits, squad=SimpleNamespace(examples=[Example(q, "?", "a b c d e f") for q in ("q", "r")]))
    bench.print_differences(runs)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].strip().startswith("1  max context: the recipe's span starts on a token with more context")
    assert lines[2].strip() == "1  the logits differ by more than noise (another runtime, e.g. --onnx)"
    assert lines[4].startswith("  q | 'c d' | 'b c d' | max context:") and lines[5].startswith("  r | 'c d' | 'b' | the logits")


@pytest.mark.slow  # three processes each import the package
def test_read_report_reads_a_report_alike_with_two_packages_and_names_a_missing_one(tmp_path: Path, empty_data: Path):
    """bench_read_report against a checkout of the same package: both read the committed quick report to one digest,
    and the table gives each way's CPU seconds and their ratio; a report that is not there is one line."""
    report = next((REPO / "benchmarks" / "reports" / "quick").glob("report.json*"))
    result = run_script(REPO, "bench_read_report.py", "root", "--reports", str(report), "--repeats", "1", "--old-tree",
                        str(REPO), data_dir=empty_data)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["reads_equal"] and summary["ways"] == ["ours", "old"]
    [row] = summary["rows"]
    assert row["report"] == str(report.relative_to(REPO)) and row["ours"] > 0 and row["old"] > 0
    assert "| old / ours |" in result.stdout and "every report read alike" in result.stdout
    missing = run_script(REPO, "bench_read_report.py", "root", "--reports", str(tmp_path / "report.json"), data_dir=empty_data)
    assert_one_line_failure(missing, f"no report file {tmp_path / 'report.json'}")


@pytest.mark.slow  # trains the tiny letters model, then two processes each import the package
def test_long_context_memory_answers_alike_with_two_packages_and_prints_the_ratio(empty_data: Path):
    """bench_long_context_memory against a checkout of the same package: both answer alike, and the table gives each
    way's peak and growth and their ratio; random letter words stand in where SQuAD is absent."""
    result = run_script(REPO, "bench_long_context_memory.py", "root", "--chars", "3000", "--old-tree", str(REPO),
                        data_dir=empty_data)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["answers_equal"] and summary["ways"] == ["ours", "old"]
    [row] = summary["rows"]
    assert row["chars"] == 3000 and row["source"] == "random letter words"
    assert row["ours_peak_mib"] >= row["ours_before_mib"] > 0 and row["ratio"] > 0
    assert "| old / ours (growth) |" in result.stdout and "machine:" in result.stdout
    missing = run_script(REPO, "bench_long_context_memory.py", "root", "--old-tree", str(empty_data), data_dir=empty_data)
    assert_one_line_failure(missing, f"--old-tree {empty_data} holds no bio_mrc package")


def test_report_figures_benchmark_writes_only_into_a_new_or_empty_folder(monkeypatch, tmp_path):
    """A folder holding anything of the user's is refused before any figure is drawn (the benchmark clears its own
    subfolders between writes); a new or empty one is taken, and none given is a fresh temporary one."""
    bench = load_benchmark("bench_report_figures", monkeypatch)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "ours").mkdir()
    with pytest.raises(SystemExit) as refused:
        bench.figures_folder(str(tmp_path / "mine"))
    assert str(refused.value) == f"--output-dir {tmp_path / 'mine'}: not empty; give a new or empty folder"
    assert (tmp_path / "mine" / "ours").is_dir()
    assert bench.figures_folder(str(tmp_path / "new")) == tmp_path / "new"
    fresh = bench.figures_folder(None)
    assert fresh.is_dir() and not any(fresh.iterdir())
    fresh.rmdir()
