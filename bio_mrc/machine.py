"""The machine a run or a benchmark ran on, in one line: the CPU and its vector and matrix instruction sets, the
OS, cores (and how many of them this process may use, by its CPU quota or affinity mask), torch (threads, and who set
them), Python and any GPU. Times, and the ratios between precisions, differ across CPUs, so a comparison's report and
every benchmark record name it."""

from __future__ import annotations

import contextlib
import os
import platform
from pathlib import Path

from .cpu_budget import chosen_thread_variable, cpu_budget, fitted_threads
from .precision import cpu_features, cpu_name
from .precision_probe import isa_caps

# name printed -> (torch.cpu.get_capabilities() key, /proc/cpuinfo flag)
INSTRUCTION_SETS = {"AVX2": ("avx2", "avx2"), "AVX-512F": ("avx512_f", "avx512f"),
                    "AVX512-BF16": ("avx512_bf16", "avx512_bf16"), "AMX-BF16": ("amx_bf16", "amx_bf16")}


def instruction_sets() -> dict[str, bool]:
    """Which vector and matrix instruction sets this CPU has: torch's CPU probe where the installed
    torch has one (bf16 through :func:`bio_mrc.precision.cpu_features`), else ``/proc/cpuinfo``."""
    import torch

    probe = getattr(torch.cpu, "get_capabilities", None)
    if probe is not None:
        capabilities = {**probe(), **cpu_features()}
        return {name: bool(capabilities.get(key, False)) for name, (key, _) in INSTRUCTION_SETS.items()}
    flags = cpuinfo_flags()
    return {name: flag in flags for name, (_, flag) in INSTRUCTION_SETS.items()}


def cpuinfo_flags() -> set[str]:
    """The CPU's feature flags as Linux lists them (none elsewhere)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def machine_description() -> str:
    """One line: the CPU model and its instruction sets, the OS, cores (``2 CPUs, 1 usable (CPU quota 1)``), torch
    (threads, ``1 thread, fitted to the CPU quota`` where :func:`bio_mrc.cpu_budget.fit_torch_threads` lowered them,
    ``OMP_NUM_THREADS`` where the user set them), Python, and the GPUs torch sees, if any."""
    import torch

    sets = ", ".join(f"{name} {'yes' if present else 'no'}" for name, present in instruction_sets().items())
    caps = "".join(f"; {name}={value}" for name, value in isa_caps().items())  # kernels kept from some of the sets
    gpus = [torch.cuda.get_device_name(k) for k in range(torch.cuda.device_count())] if torch.cuda.is_available() else []
    return (f"{cpu_name()}; {sets}{caps}; {platform.platform()}, {os.cpu_count()} CPUs, {cpu_budget().describe()}, "
            f"torch {torch.__version__} ({threads_description(torch.get_num_threads())}), Python {platform.python_version()}"
            + (f"; GPU {', '.join(gpus)}" if gpus else ""))


def threads_description(threads: int) -> str:
    """``2 threads``; ``1 thread, fitted to the CPU quota`` where this process's fit lowered torch's count to it (and
    it stands); ``3 threads, OMP_NUM_THREADS`` where a thread variable is set."""
    said = f"{threads} thread{'' if threads == 1 else 's'}"
    fitted, variable = fitted_threads(), chosen_thread_variable()
    if variable is not None:
        return f"{said}, {variable}"
    if fitted is not None and fitted.lowered and fitted.threads == threads:
        return f"{said}, fitted to the {fitted.source}"
    return said


__all__ = ["INSTRUCTION_SETS", "cpuinfo_flags", "instruction_sets", "machine_description", "threads_description"]
