"""ONNX Runtime's intra-op threads in the sessions the package builds: torch's count in this process, where that is
fewer than ONNX Runtime's own.

ONNX Runtime's default intra-op pool takes a thread per physical core of the machine and reads neither the affinity
mask nor a CPU quota (:mod:`bio_mrc.cpu_budget`): in a container limited to 2 CPUs on a 64-core host, 32 threads would
share the 2 CPUs, all stopped whenever the quota of a period is spent. A session takes torch's intra-op count instead,
read as the session is built, wherever it is fewer: the command line fits torch's threads to the CPUs usable in every
command that runs a model, ``OMP_NUM_THREADS`` or ``MKL_NUM_THREADS`` sets them (the user's choice, which ONNX Runtime
itself does not read), and a program calls :func:`~bio_mrc.cpu_budget.fit_torch_threads` (or
``torch.set_num_threads``) before it loads an export. It never raises a session past ONNX Runtime's own count. A
caller's ``threads`` and ONNX Runtime's own variable ``ORT_INTRA_OP_NUM_THREADS`` (0: its own count) stand over torch's.
No inter-op threads run: a session runs its nodes one after another (ONNX Runtime's default execution mode, which the
package keeps), and ONNX Runtime starts its inter-op pool only for parallel execution.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Mapping

from ..arguments import count_argument
from ..cpu_budget import ThreadChoice, fitted_threads
from ..errors import ConfigError

ORT_THREAD_VARIABLE = "ORT_INTRA_OP_NUM_THREADS"  # ONNX Runtime's own choice of its intra-op threads
ORT_OWN = "onnxruntime"  # the source of a count left to ONNX Runtime: the session's option stays 0
CPU_FOLDER = Path("/sys/devices/system/cpu")  # cpuN/topology/thread_siblings_list: the hardware threads of N's core
_LARGEST_INT = 2**31 - 1  # ONNX Runtime reads the variable as a C int


def physical_cores(cpu_folder: Path | None = None) -> int:
    """The machine's physical cores, the count of ONNX Runtime's default intra-op pool: the distinct
    ``thread_siblings_list`` of ``cpu_folder``'s ``cpuN/topology`` (a core's hardware threads list the same siblings),
    ``os.cpu_count()`` where none can be read."""
    cpu_folder = CPU_FOLDER if cpu_folder is None else cpu_folder
    siblings = set()
    with contextlib.suppress(OSError):
        for folder in cpu_folder.glob("cpu[0-9]*"):
            with contextlib.suppress(OSError, ValueError):
                siblings.add((folder / "topology" / "thread_siblings_list").read_text(encoding="ascii").strip())
    siblings.discard("")
    return len(siblings) or os.cpu_count() or 1


def ort_thread_variable(environ: Mapping[str, str] | None = None) -> int | None:
    """``ORT_INTRA_OP_NUM_THREADS`` in ``environ`` (else the process's): None where unset or empty, else a whole number,
    0 or more (0: ONNX Runtime's own count); anything else (a sign, a space, a decimal point) a :class:`ConfigError`, as
    ONNX Runtime refuses it."""
    environ = os.environ if environ is None else environ
    text = environ.get(ORT_THREAD_VARIABLE, "")
    if text == "":
        return None
    if not (text.isascii() and text.isdigit()) or int(text) > _LARGEST_INT:
        raise ConfigError(
            f"{ORT_THREAD_VARIABLE}={text!r}: give ONNX Runtime's intra-op threads as a whole number, 0 or more (0: ONNX Runtime's own count), or unset it"
        )
    return int(text)


def session_threads(threads: Any = None, environ: Mapping[str, str] | None = None) -> ThreadChoice:
    """The intra-op threads of a session the package builds, and why (``source``): ``threads`` where given
    (``"threads"``, a positive whole number); else ``ORT_INTRA_OP_NUM_THREADS`` where set above 0; else torch's count where
    it is fewer than ONNX Runtime's own (``"CPU quota"`` or ``"affinity mask"`` where
    :func:`~bio_mrc.cpu_budget.fit_torch_threads` lowered torch's threads to it, else ``"torch"``); else ONNX Runtime's
    own count, :func:`physical_cores` (``"onnxruntime"``: the session is left to take it). A malformed ``threads`` or
    variable is a :class:`ConfigError`."""
    count_argument(threads, "threads", "OnnxModel.load")
    if threads is not None:
        return ThreadChoice(threads, "threads", None)
    variable, own = ort_thread_variable(environ), physical_cores()
    if variable is not None:
        return ThreadChoice(variable, ORT_THREAD_VARIABLE, None) if variable else ThreadChoice(own, ORT_OWN, None)
    import torch

    count = torch.get_num_threads()
    if count >= own:
        return ThreadChoice(own, ORT_OWN, None)
    fitted = fitted_threads()
    if fitted is not None and fitted.lowered and fitted.threads == count:
        return ThreadChoice(count, fitted.source, fitted.budget)
    return ThreadChoice(count, "torch", None)


def intra_op_num_threads(choice: ThreadChoice) -> int:
    """``SessionOptions.intra_op_num_threads`` of ``choice``: its count, or 0 (ONNX Runtime's own) where left to it."""
    return 0 if choice.source == ORT_OWN else choice.threads


__all__ = ["CPU_FOLDER", "ORT_OWN", "ORT_THREAD_VARIABLE", "intra_op_num_threads", "ort_thread_variable", "physical_cores", "session_threads"]
