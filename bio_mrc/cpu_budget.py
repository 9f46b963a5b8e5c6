"""The CPUs this process may use, and torch's CPU threads fitted to them.

torch starts one thread per CPU of the process's affinity mask. A container limited by a CPU *quota* (Docker's
``--cpus=2``, a Kubernetes CPU limit: cgroup v2's ``cpu.max``, cgroup v1's ``cpu.cfs_quota_us`` over
``cpu.cfs_period_us``) on a larger host still lists every CPU of the host in that mask, so torch would run a thread
per host CPU within a quota of a few: the kernel stops them all whenever the quota of a period is spent, and a team
of threads waits on its stopped members. :func:`cpu_budget` reads the quota of this process's cgroup and of each
cgroup above it (v2 and v1; every read fails soft: a file missing, unreadable or holding anything else is no quota)
and takes the least of those and the affinity mask's count; :func:`fit_torch_threads` lowers torch's threads to it.
The command line does this in every command that runs a model, unless the user chose threads; a program that uses
the package as a library calls :func:`fit_torch_threads` itself (torch's threads are the whole process's). Imports no
torch until it sets threads, so the command line reads the quota before any work. The package's other counts of CPUs
read :func:`cpu_budget` too: the data-loader workers of training on a GPU, and the threads of steps run side by side by
``tools/gpu/run.py``; an ONNX export's ONNX Runtime session takes torch's count where it is fewer than ONNX
Runtime's own (:mod:`bio_mrc.inference.onnx_threads`), so this fit fits it too. torch's inter-op threads are left at
torch's count: its pool starts only for work run asynchronously (``torch.jit.fork`` in TorchScript and the like),
which the package never runs, so none of them runs under a quota, and ``torch.set_num_interop_threads`` may be called
once a process, which stays the program's.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

PROC_SELF = Path("/proc/self")  # cgroup (this process's cgroups) and mountinfo (where each hierarchy is mounted)
CGROUP2_ROOT = Path("/sys/fs/cgroup")  # the unified hierarchy's usual mount point, where mountinfo names none
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")  # the user's own choice of torch's threads
V1_DEFAULT_PERIOD = V2_DEFAULT_PERIOD = 100_000  # microseconds, the kernel's default period
_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")  # mountinfo writes a space in a path as \040

_FITTED: dict[str, ThreadChoice] = {}  # the threads fit_torch_threads chose in this process, under "last"


@dataclass(frozen=True)
class CpuBudget:
    """``cpus``: the CPUs this process may use, at least 1; ``affinity``: the CPUs of its affinity mask; ``quota``:
    the least CPU quota of its cgroups in CPUs (quota over period, 1.5 for ``150000 100000``), None where none is set;
    ``source``: ``"quota"`` where the quota, rounded up, is what leaves fewer CPUs than the mask, else ``"affinity"``."""

    cpus: int
    affinity: int
    quota: float | None
    source: str

    def describe(self) -> str:
        """``1 usable (CPU quota 0.5)``, ``8 usable (affinity mask)``: the machine description's words."""
        why = f"CPU quota {self.quota:g}" if self.source == "quota" else "affinity mask"
        return f"{self.cpus} usable ({why})"


@dataclass(frozen=True)
class ThreadChoice:
    """What :func:`fit_torch_threads` found and did: ``threads``, torch's count after it; ``source``, why that count:
    ``"CPU quota"`` or ``"affinity mask"`` (lowered to the budget), ``OMP_NUM_THREADS`` or ``MKL_NUM_THREADS``
    (the user's, left alone), or ``"torch"`` (torch's own count, already within the budget); ``budget``, the CPUs
    usable (None where a variable decided and none was read). An ONNX Runtime session's threads are said the same way
    (:func:`bio_mrc.inference.onnx_threads.session_threads`)."""

    threads: int
    source: str
    budget: CpuBudget | None

    @property
    def lowered(self) -> bool:
        """Whether torch's count was lowered to the budget."""
        return self.source in ("CPU quota", "affinity mask")


def affinity_count() -> int:
    """The CPUs of this process's affinity mask (``os.cpu_count()`` where the OS has no mask), at least 1."""
    if hasattr(os, "sched_getaffinity"):
        with contextlib.suppress(OSError):
            return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def cpu_budget(affinity: int | None = None) -> CpuBudget:
    """The CPUs this process may use: the least of its affinity mask's count (``affinity``, else read) and the
    least CPU quota of its cgroups, rounded up, at least 1 (a quota of half a CPU still runs one thread)."""
    affinity = affinity_count() if affinity is None else max(1, affinity)
    quota = cgroup_quota()
    by_quota = None if quota is None else max(1, math.ceil(quota))
    if by_quota is not None and by_quota < affinity:
        return CpuBudget(by_quota, affinity, quota, "quota")
    return CpuBudget(affinity, affinity, quota, "affinity")


def cgroup_quota(proc: Path | None = None) -> float | None:
    """The least CPU quota, in CPUs, of this process's cgroups and the cgroups above each, in the unified
    hierarchy (v2's ``cpu.max``) and in v1's ``cpu`` hierarchy (``cpu.cfs_quota_us`` over ``cpu.cfs_period_us``);
    None where none is set or nothing can be read."""
    proc = PROC_SELF if proc is None else proc
    mounts = _cgroup_mounts(_read(proc / "mountinfo"))
    quotas = []
    for version, path in _cgroup_paths(_read(proc / "cgroup")):
        mount = mounts.get(version)
        if mount is None and version == 2:
            mount = ("/", CGROUP2_ROOT)
        if mount is not None:
            read = _v2_quota if version == 2 else _v1_quota
            quotas += [quota for folder in _folders_up(path, *mount) if (quota := read(folder)) is not None]
    return min(quotas, default=None)


def _read(path: Path) -> str:
    """A small kernel file's text; empty where it cannot be read (or is no file: a named pipe's read would never end)."""
    try:
        if not path.is_file():
            return ""
        return path.read_text(encoding="utf-8", errors="replace")
    except (OSError, ValueError):
        return ""


def _cgroup_paths(text: str) -> list[tuple[int, str]]:
    """``(2, path)`` of the unified hierarchy's ``0::path`` line and ``(1, path)`` of the v1 hierarchy whose
    controllers include ``cpu``, from ``/proc/self/cgroup``."""
    found = []
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3 or not parts[2].startswith("/"):
            continue
        if parts[0] == "0" and parts[1] == "":
            found.append((2, parts[2]))
        elif "cpu" in parts[1].split(","):
            found.append((1, parts[2]))
    return found


def _cgroup_mounts(text: str) -> dict[int, tuple[str, Path]]:
    """``{2: (root, mount point)}`` of the unified hierarchy and ``{1: ...}`` of v1's ``cpu`` hierarchy, the first
    mount of each in ``/proc/self/mountinfo``: ``root`` is the cgroup the mount shows at its mount point."""
    mounts: dict[int, tuple[str, Path]] = {}
    for line in text.splitlines():
        fields, _, after = line.partition(" - ")
        fields, after = fields.split(), after.split()
        if len(fields) < 5 or len(after) < 3:
            continue
        version = 2 if after[0] == "cgroup2" else 1 if after[0] == "cgroup" and "cpu" in after[2].split(",") else None
        if version is not None and version not in mounts:
            mounts[version] = (_unescape(fields[3]), Path(_unescape(fields[4])))
    return mounts


def _unescape(text: str) -> str:
    return _OCTAL_ESCAPE.sub(lambda match: chr(int(match.group(1), 8)), text)


def _folders_up(path: str, root: str, mount: Path) -> list[Path]:
    """The folder of cgroup ``path`` under a hierarchy mounted at ``mount`` showing cgroup ``root`` there, and each
    folder above it up to ``mount``. A path outside ``root`` (a cgroup namespace's view) is read at ``mount``."""
    root = root.rstrip("/")
    if path != root and not path.startswith(root + "/"):
        return [mount]
    parts = [part for part in path[len(root) :].split("/") if part and part not in (".", "..")]
    return [mount.joinpath(*parts[:depth]) for depth in range(len(parts), -1, -1)]


def _v2_quota(folder: Path) -> float | None:
    """CPUs of ``cpu.max`` (``"200000 100000"``: 2.0; ``"max 100000"``: None), None where unreadable or malformed."""
    fields = _read(folder / "cpu.max").split()
    if not fields or fields[0] == "max" or len(fields) > 2:
        return None
    return _ratio(fields[0], fields[1] if len(fields) == 2 else str(V2_DEFAULT_PERIOD))


def _v1_quota(folder: Path) -> float | None:
    """CPUs of ``cpu.cfs_quota_us`` over ``cpu.cfs_period_us`` (a quota of -1: None), None where unreadable or malformed."""
    return _ratio(_read(folder / "cpu.cfs_quota_us").strip(), _read(folder / "cpu.cfs_period_us").strip())


def _ratio(quota: str, period: str) -> float | None:
    """quota / period where both are positive whole numbers, else None."""
    if not (quota.isascii() and quota.isdigit() and period.isascii() and period.isdigit()):
        return None
    return int(quota) / int(period) if int(quota) > 0 and int(period) > 0 else None


def chosen_thread_variable(environ: Mapping[str, str] | None = None) -> str | None:
    """The first of :data:`THREAD_VARIABLES` set (not empty) in ``environ`` (else the process's): the user's choice."""
    environ = os.environ if environ is None else environ
    return next((name for name in THREAD_VARIABLES if environ.get(name, "").strip()), None)


def fit_torch_threads(budget: CpuBudget | None = None, environ: Mapping[str, str] | None = None) -> ThreadChoice:
    """Lower torch's intra-op threads to the CPUs this process may use (``budget``, else :func:`cpu_budget`) where
    it runs more, unless ``OMP_NUM_THREADS`` or ``MKL_NUM_THREADS`` is set (the user's choice, left alone); never
    raises them, and sets a count it keeps again (which also fixes MKL's threads, as a precision probe does). Returns
    what it found and did, which :func:`bio_mrc.machine.machine_description` also states. A program calls it once,
    before its first forward pass: the package's library calls never change torch's threads."""
    import torch

    variable = chosen_thread_variable(environ)
    if variable is not None:
        choice = ThreadChoice(torch.get_num_threads(), variable, None)
    else:
        budget = cpu_budget() if budget is None else budget
        if torch.get_num_threads() > budget.cpus:
            torch.set_num_threads(budget.cpus)
            choice = ThreadChoice(budget.cpus, "CPU quota" if budget.source == "quota" else "affinity mask", budget)
        else:  # set all the same: ATen's set_num_threads also fixes MKL's threads and stops MKL choosing fewer for a
            # product, so the arithmetic (to the last bit) is the same whether or not a precision probe, which times one
            # thread and restores the count, ran in this process
            torch.set_num_threads(torch.get_num_threads())
            choice = ThreadChoice(torch.get_num_threads(), "torch", budget)
    _FITTED["last"] = choice
    return choice


def fitted_threads() -> ThreadChoice | None:
    """What this process's last :func:`fit_torch_threads` did; None where it never ran."""
    return _FITTED.get("last")


__all__ = [
    "CGROUP2_ROOT",
    "PROC_SELF",
    "THREAD_VARIABLES",
    "CpuBudget",
    "ThreadChoice",
    "affinity_count",
    "cgroup_quota",
    "chosen_thread_variable",
    "cpu_budget",
    "fit_torch_threads",
    "fitted_threads",
]
