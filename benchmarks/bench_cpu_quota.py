"""Torch's threads under a CPU quota: torch's default (a thread per CPU of the affinity mask, which a quota leaves
whole) against the package's choice (``bio_mrc.cpu_budget.fit_torch_threads``: the quota's CPUs, rounded up), in one run.

The script makes a cgroup with a quota of ``--cpus`` CPUs (cgroup v1's ``cpu`` hierarchy, else cgroup v2 with the
``cpu`` controller; it must run as root where one of them can be written, and says so in one line where none can),
then runs each side in a fresh process of its own that joins the group before torch loads: training steps/s
(forward, backward and AdamW of the joint model on the default encoder, a fixed batch of ``--batch`` windows of
``--tokens`` tokens) and inference windows/s (forward passes of ``--infer-batch`` windows under
``torch.inference_mode``), the sides alternating ``--repeats`` times (the median of each counts), and how often the
kernel stopped the group (``nr_throttled``, per second of the side's run). ``--without-quota`` runs both sides outside
the group too: what the machine gives without the quota. The group is removed at the end.

``--onnx-dir DIR`` (a folder ``bio-mrc export --format onnx`` wrote) times ONNX Runtime answering instead: forward
passes of the export's session (no training), ONNX Runtime's own intra-op threads (a thread per physical core of the
machine, ``ORT_INTRA_OP_NUM_THREADS=0``) against the package's (torch's threads fitted, which the session follows).

    sudo python benchmarks/bench_cpu_quota.py [--cpus 1] [--repeats 2] [--steps 8] [--passes 8] [--without-quota] [--onnx-dir DIR]

The last line is one JSON object: ``{"benchmark": "cpu_quota", "machine": ..., "cgroup": "v1"|"v2", "quota_cpus",
"sides": {"torch default"|"package": {"threads", "threads_said", "train_steps_per_s", "inference_windows_per_s",
"throttled_per_s"}}, "without_quota": {...} or null, "train_ratio", "inference_ratio"}`` (the package's over torch's
default, under the quota; with ``--onnx-dir`` the sides are ONNX Runtime's default and the package's, and
``train_steps_per_s`` and ``train_ratio`` are null).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import _common

NAME = "cpu_quota"
SIDES = ("torch default", "package")
PERIOD_US = 100_000
GROUP = f"bio_mrc_bench_cpu_quota_{os.getpid()}"

# One side in a process of its own: join the group (its cgroup.procs, or "-" for none) before torch loads, set the
# threads the side's way, then time training steps and forward passes.
CHILD = """
import json, os, sys, time
procs, side, batch, tokens, infer_batch, steps, passes, onnx_dir = sys.argv[1:9]
if procs != "-":
    with open(procs, "w", encoding="ascii") as handle:
        handle.write(str(os.getpid()))
if onnx_dir != "-" and side != "package":
    os.environ["ORT_INTRA_OP_NUM_THREADS"] = "0"  # ONNX Runtime's own count, whatever torch's
import torch
from bio_mrc.cpu_budget import fit_torch_threads
from bio_mrc.encoders import resolve_encoder
from bio_mrc.machine import threads_description
from bio_mrc.model import BioMrcForQuestionAnswering
if side == "package":
    fit_torch_threads()
batch, tokens, infer_batch, steps, passes = map(int, (batch, tokens, infer_batch, steps, passes))
def rate(call, count):
    call()  # first-call set-up, untimed
    started = time.perf_counter()
    for _ in range(count):
        call()
    return count / (time.perf_counter() - started)
if onnx_dir != "-":
    from bio_mrc.inference.onnx_runner import OnnxModel
    from bio_mrc.inference.onnx_threads import physical_cores
    runner = OnnxModel.load(onnx_dir)
    vocab = runner.config.encoder.vocab_size
    ids = torch.randint(min(1000, vocab // 2), vocab, (infer_batch, tokens), generator=torch.Generator().manual_seed(0))
    feed = {"input_ids": ids.numpy(), "attention_mask": torch.ones_like(ids).numpy(), "token_type_ids": torch.zeros_like(ids).numpy()}
    threads = runner.session.get_session_options().intra_op_num_threads or physical_cores()
    print(json.dumps({"threads": threads, "threads_said": f"ONNX Runtime, {threads} intra-op threads", "train_steps_per_s": None,
                      "inference_windows_per_s": rate(lambda: runner(feed), passes) * infer_batch}))
    sys.exit(0)
torch.manual_seed(0)
model = BioMrcForQuestionAnswering.from_encoder(resolve_encoder("default"), encoder_dropout={"attention": 0.0, "hidden": 0.0},
                                                heads="span+bio")
def windows(count):
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, model.config.encoder.vocab_size, (count, tokens), generator=generator)
    paragraph = torch.zeros(count, tokens, dtype=torch.bool)
    paragraph[:, 18:-1] = True
    return {"input_ids": ids, "attention_mask": torch.ones(count, tokens, dtype=torch.long), "token_type_ids": paragraph.long()}, paragraph
inputs, paragraph = windows(batch)
starts = torch.randint(18, tokens - 3, (batch,), generator=torch.Generator().manual_seed(1))
tags = torch.full((batch, tokens), 2)
tags[torch.arange(batch), starts] = 0
targets = {"paragraph_mask": paragraph, "tag_mask": paragraph, "start_positions": starts, "end_positions": starts + 1,
           "bio_targets": tags}
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
def train_step():
    model.train()
    model(**inputs, **targets).loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
forward_inputs = windows(infer_batch)[0]
def forward():
    model.eval()
    with torch.inference_mode():
        model(**forward_inputs)
train = rate(train_step, steps)
inference = rate(forward, passes) * infer_batch
print(json.dumps({"threads": torch.get_num_threads(), "threads_said": threads_description(torch.get_num_threads()),
                  "train_steps_per_s": train, "inference_windows_per_s": inference}))
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpus", type=float, default=1.0, help="the group's CPU quota, in CPUs (quota over period)")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each side, alternating (the median counts)")
    parser.add_argument("--steps", type=int, default=8, help="timed training steps a run (after one untimed)")
    parser.add_argument("--passes", type=int, default=8, help="timed forward passes a run (after one untimed)")
    parser.add_argument("--batch", type=int, default=8, help="windows of a training batch")
    parser.add_argument("--infer-batch", type=int, default=16, help="windows of a forward pass")
    parser.add_argument("--tokens", type=int, default=128, help="tokens of every window")
    parser.add_argument("--without-quota", action="store_true", help="also run both sides outside the group")
    parser.add_argument("--onnx-dir", default=None, help="an ONNX export: time ONNX Runtime's answering, its own threads against the package's")
    args = parser.parse_args()
    if args.onnx_dir is not None:
        args.onnx_dir = _common.model_dir(args.onnx_dir, option="--onnx-dir (a folder bio-mrc export --format onnx wrote)")
    for name in ("repeats", "steps", "passes", "batch", "infer_batch"):
        if getattr(args, name) < 1:
            _common.fail(f"--{name.replace('_', '-')} must be at least 1")
    if args.tokens < 24:
        _common.fail("--tokens must be at least 24 (a question of 16 tokens and a paragraph)")
    if args.cpus <= 0:
        _common.fail(f"--cpus must be above 0, got {args.cpus}")
    return args


def cgroup_mounts() -> dict[str, Path]:
    """``{"v1": the cpu hierarchy's mount point, "v2": the unified hierarchy's}``, those mounted."""
    found: dict[str, Path] = {}
    for line in Path("/proc/self/mountinfo").read_text(encoding="utf-8").splitlines():
        fields, _, after = line.partition(" - ")
        fields, after = fields.split(), after.split()
        if len(fields) < 5 or len(after) < 3:
            continue
        point = Path(fields[4].replace("\\040", " "))
        if after[0] == "cgroup" and "cpu" in after[2].split(","):
            found.setdefault("v1", point)
        elif after[0] == "cgroup2":
            found.setdefault("v2", point)
    return found


def make_group(cpus: float) -> tuple[str, Path]:
    """A new cgroup with a quota of ``cpus`` CPUs: (its version, its folder); one line and the end where none can be made."""
    quota = max(1000, round(cpus * PERIOD_US))
    reasons = []
    for version, mount in sorted(cgroup_mounts().items()):
        group = mount / GROUP
        try:
            if version == "v2" and "cpu" not in (mount / "cgroup.controllers").read_text(encoding="ascii").split():
                raise OSError("the cpu controller is not in the unified hierarchy (cgroup v1 holds it)")
            group.mkdir()
            if version == "v1":
                (group / "cpu.cfs_period_us").write_text(str(PERIOD_US), encoding="ascii")
                (group / "cpu.cfs_quota_us").write_text(str(quota), encoding="ascii")
            else:
                (group / "cpu.max").write_text(f"{quota} {PERIOD_US}", encoding="ascii")
            return version, group
        except OSError as error:
            reasons.append(f"{version} at {mount}: {error.strerror or error}")
            remove_group(group)
    _common.fail(
        "cannot create a cgroup with a CPU quota here (run as root where cgroup v1's cpu hierarchy or cgroup v2 "
        f"with the cpu controller can be written): {'; '.join(reasons) or 'no cgroup hierarchy is mounted'}"
    )


def remove_group(group: Path) -> None:
    """Remove the group this script made (its processes have ended)."""
    if group.is_dir():
        try:
            group.rmdir()
        except OSError as error:
            print(f"note: could not remove {group}: {error.strerror}; remove it with rmdir", file=sys.stderr)


def throttled(group: Path | None) -> int:
    """The group's count of periods the kernel stopped it in (``nr_throttled`` of ``cpu.stat``)."""
    if group is None:
        return 0
    stat = dict(line.split() for line in (group / "cpu.stat").read_text(encoding="ascii").splitlines() if len(line.split()) == 2)
    return int(stat.get("nr_throttled", 0))


def run_side(side: str, group: Path | None, args: argparse.Namespace) -> dict:
    """One side's run in a fresh process, in ``group`` (None: outside any group of this script's)."""
    environment = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "ORT_INTRA_OP_NUM_THREADS")}
    before = throttled(group)
    argv = [str(group / "cgroup.procs") if group else "-", side, args.batch, args.tokens, args.infer_batch, args.steps, args.passes, args.onnx_dir or "-"]
    done, seconds = _common.timed(
        lambda: subprocess.run([sys.executable, "-c", CHILD, *map(str, argv)], capture_output=True, text=True, env=environment, cwd=_common.REPO_ROOT)
    )
    if done.returncode != 0:
        _common.fail(f"the {side} side failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}")
    return {**json.loads(done.stdout.splitlines()[-1]), "throttled_per_s": (throttled(group) - before) / seconds}


def sides(group: Path | None, args: argparse.Namespace) -> dict[str, dict]:
    """Both sides, alternating ``--repeats`` times: each side's medians (and its last run's threads)."""
    runs: dict[str, list[dict]] = {side: [] for side in SIDES}
    for repeat in range(args.repeats):
        for side in SIDES:
            runs[side].append(run_side(side, group, args))
            latest = runs[side][-1]
            print(
                f"{'quota' if group else 'no quota'}, {side}, run {repeat + 1}: {latest['threads_said']}, "
                + ("" if latest["train_steps_per_s"] is None else f"{latest['train_steps_per_s']:.3f} steps/s, ")
                + f"{latest['inference_windows_per_s']:.2f} windows/s, "
                f"{latest['throttled_per_s']:.1f} throttled periods/s",
                file=sys.stderr,
                flush=True,
            )
    keys = ("train_steps_per_s", "inference_windows_per_s", "throttled_per_s")
    return {
        side: {"threads": rs[-1]["threads"], "threads_said": rs[-1]["threads_said"], **{key: median(r[key] for r in rs) for key in keys}}
        for side, rs in runs.items()
    }


def median(values) -> float | None:
    """The median of ``values``; None where they are None (the ONNX sides train nothing)."""
    values = list(values)
    return None if None in values else statistics.median(values)


def main(args: argparse.Namespace) -> None:
    version, group = make_group(args.cpus)
    print(f"machine: {_common.machine_description()}; {_common.command_load_and_date()}", file=sys.stderr)
    print(f"cgroup {version}: {group}, a quota of {args.cpus:g} CPUs", file=sys.stderr)
    try:
        quota = sides(group, args)
        unlimited = sides(None, args) if args.without_quota else None
    finally:
        remove_group(group)
    default, package = quota["torch default"], quota["package"]
    train_ratio = None if args.onnx_dir else package["train_steps_per_s"] / default["train_steps_per_s"]
    inference_ratio = package["inference_windows_per_s"] / default["inference_windows_per_s"]
    trained = "" if args.onnx_dir else f"train at {train_ratio:.2f}x and "
    print(
        f"under a quota of {args.cpus:g} CPUs: the package's threads {trained}answer at {inference_ratio:.2f}x "
        f"{'ONNX Runtime' if args.onnx_dir else 'torch'}'s default threads",
        file=sys.stderr,
    )
    print(
        json.dumps(
            {
                "benchmark": NAME,
                "machine": _common.machine_description(),
                "cgroup": version,
                "quota_cpus": args.cpus,
                "options": {k: getattr(args, k) for k in ("repeats", "steps", "passes", "batch", "infer_batch", "tokens", "onnx_dir")},
                "sides": quota,
                "without_quota": unlimited,
                "train_ratio": train_ratio,
                "inference_ratio": inference_ratio,
            }
        )
    )


if __name__ == "__main__":
    main(parse_args())
