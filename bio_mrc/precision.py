"""Numeric precision of training and inference: one setting, the same code for fp32 and bf16.

``bf16`` runs the model under ``torch.autocast`` (weights, optimizer state and the losses stay
fp32; matrix products run in bfloat16). It pays only where the hardware computes bfloat16
natively: a CUDA GPU of compute capability 8.0 or later, or a CPU with AMX-BF16 or AVX512-BF16.
Elsewhere bfloat16 is emulated and slower than fp32, so ``auto`` is fp32 there. Native is not always
faster on a CPU (AVX512-BF16 without AMX can be slower than fp32), so there ``auto`` times the model's
own shapes in both precisions when the caller knows them (:mod:`bio_mrc.precision_probe`, cached per
machine) and takes the faster; a GPU with native bf16 takes it.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, ContextManager

if TYPE_CHECKING:  # torch loads in the functions that compute, so the command line's options import it not
    import torch

    from .precision_probe import MatrixShapes

PRECISIONS = ("fp32", "bf16", "auto")
# bf16 costs no F1 (benchmarks/ablations/precision.json) and trains and answers faster where it is native, so the
# default takes it there; a table that must reproduce to the last digit on any machine pins fp32.
DEFAULT_PRECISION = "auto"
CPU_BF16_FEATURES = ("amx_bf16", "avx512_bf16")
# oneDNN's instruction caps (ONEDNN_MAX_CPU_ISA, or DNNL_MAX_CPU_ISA where that is unset) whose kernels have no bf16
# instructions: under one, bf16 products are emulated whatever the CPU has (at 0.22x fp32's rate on an AMD Zen 4 under AVX2).
ONEDNN_CAPS_WITHOUT_BF16 = ("SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX512_CORE", "AVX512_CORE_VNNI")


NO_CUDA = "no CUDA GPU that torch can use"  # a machine's lack of CUDA, in one wording at every door
DEVICE_NAMES = ("auto", "cpu", "cuda", "mps")  # and cuda:N, the GPU numbered N


def default_device() -> str:
    """Where models train and run unless told otherwise: the GPU when there is one."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_device(device: str | None = None) -> str:
    """The device a model runs on: ``auto`` (or None) is :func:`default_device`; ``cpu``, ``cuda``, ``cuda:N``
    and ``mps`` are checked against this machine, and one it lacks is a :class:`ConfigError` in one line."""
    name = _device_name(device)
    return default_device() if name == "auto" else _machine_device(name, device)


def _device_name(device: Any) -> str:
    """``device`` as a device name (None or "": auto), its form checked before torch loads: a name of no device
    (``tpu``, ``0``, ``cuda:-1``) is a ConfigError in the words every door uses."""
    from .errors import ConfigError

    name = "auto" if device is None or device == "" else str(device).strip().lower()  # 0 names no device: refused, as 1 is
    if not _named_device(name):
        raise ConfigError(f"device {device!r}: one of cpu, cuda, cuda:N (the GPU numbered N), mps, auto")
    return name


def _named_device(name: str) -> bool:
    """Whether ``name`` (lower case) is of :data:`DEVICE_NAMES` or ``cuda:N``, whatever this machine has."""
    kind, _, index = name.partition(":")
    return name in DEVICE_NAMES or (kind == "cuda" and _numbered(index))


def _machine_device(name: str, given: Any) -> str:
    """``name`` (cpu, cuda, cuda:N, mps: :func:`_named_device`) if this machine has it, a ConfigError naming ``given`` if not.
    Every machine has a CPU: ``cpu`` is answered without loading torch, which the GPUs' names need."""
    if name == "cpu":
        return name
    import torch

    from .errors import ConfigError

    if name == "mps":
        if not torch.backends.mps.is_available():
            raise ConfigError(f"device {given!r}: this machine has no Apple GPU (MPS) that torch can use")
        return name
    index = name.partition(":")[2]
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if int(index or 0) >= count:
        have = f"{count} CUDA device(s) (cuda:0 to cuda:{count - 1})" if count else NO_CUDA
        raise ConfigError(f"device {given!r}: this machine has {have}")
    return name


def _numbered(index: str) -> bool:
    """Whether ``cuda:INDEX`` numbers a GPU: ASCII digits alone (``str.isdigit`` takes ``²`` too, which ``int`` refuses)."""
    return index.isascii() and index.isdigit()


def pipeline_device(device: Any) -> str | None:
    """A transformers pipeline's ``device`` checked as :func:`resolve_device` checks a name, before transformers reads
    it: None stays transformers' default; -1 is the CPU; a whole number N the GPU numbered N (``cuda:N``, or ``mps``
    for 0 where the Apple GPU is the only one, as transformers reads it); a ``torch.device`` its name."""
    import torch

    from .errors import ConfigError

    if device is None:
        return None
    if isinstance(device, int) and not isinstance(device, bool) and device >= -1:  # transformers' GPU numbers
        if device == -1:
            return "cpu"
        if device == 0 and not torch.cuda.is_available() and torch.backends.mps.is_available():
            return "mps"
        return _machine_device(f"cuda:{device}", device)
    if isinstance(device, torch.device):
        device = str(device)  # named as written: 'cuda:1'
    name = device.strip().lower() if isinstance(device, str) else None
    if name == "auto":
        return default_device()
    if name is None or not _named_device(name):
        raise ConfigError(f"device {device!r}: one of cpu, cuda, cuda:N (the GPU numbered N), mps, auto, or a GPU's "
                          "number N (-1: the CPU)")
    return _machine_device(name, device)


_PINNED: dict[str, str] = {}  # the device pin_process_device pinned this process to, under "device"


def pinned_device() -> str | None:
    """The device :func:`pin_process_device` pinned this process to (``cpu``, ``cuda``, ``mps``); None: not pinned."""
    return _PINNED.get("device")


def pin_process_device(device: str | None) -> None:
    """Make ``device`` the only one this process sees, for code that picks its own (transformers' Trainer):
    ``cpu`` hides the GPUs, ``cuda:N`` shows GPU N alone (as ``cuda``). Call it before torch touches CUDA.
    An Apple GPU cannot be hidden so: :func:`pinned_device` tells Trainer ``cpu`` or ``mps`` instead."""
    import os

    from .errors import ConfigError, argument
    from .launcher import launcher_number

    name = _device_name(device or "auto")
    kind, _, index = name.partition(":")
    if name != "auto":
        _PINNED["device"] = kind
    if name == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    elif kind == "cuda" and _numbered(index):
        if (world := launcher_number("WORLD_SIZE")) > 1:  # each process would see GPU N alone as its GPU 0
            raise ConfigError(f"device {device!r}: under a launcher of {world} processes each process trains on its own "
                              f"GPU (LOCAL_RANK); choose the GPUs with CUDA_VISIBLE_DEVICES and pass {argument('device', 'cuda')} "
                              f"or {argument('device', 'auto')}")
        shown = os.environ.get("CUDA_VISIBLE_DEVICES")
        visible = None if shown is None else [d.strip() for d in shown.split(",") if d.strip()]
        if visible is not None and int(index) >= len(visible):
            raise ConfigError(f"device {device!r}: CUDA_VISIBLE_DEVICES shows {len(visible)} GPU(s)")
        os.environ["CUDA_VISIBLE_DEVICES"] = visible[int(index)] if visible else index
        try:
            resolve_device("cuda")
        except ConfigError:
            _unpin_gpu(shown)
            raise _missing_gpu(device, index) from None
        return
    resolve_device(name)


def _unpin_gpu(shown: str | None) -> None:
    """CUDA_VISIBLE_DEVICES back as it was (``shown``; None: unset), for a pin refused."""
    import os

    if shown is None:
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    else:
        os.environ["CUDA_VISIBLE_DEVICES"] = shown


def _missing_gpu(device: str, index: str) -> Exception:
    """The refusal of ``cuda:N`` that torch cannot see: a machine without CUDA in every door's line; one with GPUs
    but not N by that number (``device 'cuda'`` and "no CUDA GPU" would misread it). Counted with CUDA_VISIBLE_DEVICES
    as it was: before CUDA starts torch counts through NVML, which reads the variable at each call."""
    import torch

    from .errors import ConfigError

    if torch.cuda.device_count() == 0:
        return ConfigError(f"device {device!r}: this machine has {NO_CUDA}")
    return ConfigError(f"device {device!r}: torch finds no CUDA GPU numbered {index} on this machine")


def cpu_features() -> dict[str, bool]:
    """Which of :data:`CPU_BF16_FEATURES` this CPU has: from torch's own CPU probe where the
    installed torch has one, else from ``/proc/cpuinfo`` (Linux)."""
    import torch

    probe = getattr(torch.cpu, "get_capabilities", None)
    if probe is not None:
        capabilities = probe()
        return {name: bool(capabilities.get(name, False)) for name in CPU_BF16_FEATURES}
    flags: set[str] = set()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    return {name: name in flags for name in CPU_BF16_FEATURES}


def cpu_name() -> str:
    """The CPU's model name, for benchmark records."""
    import torch

    probe = getattr(torch.cpu, "get_capabilities", None)
    name = probe().get("cpu_name") if probe is not None else None
    fields: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    if "model name" in fields:  # "AMD EPYC" alone names no generation: the family and model do
        return f"{fields['model name']} (family {fields.get('cpu family', '?')}, model {fields.get('model', '?')})"
    return name or "unknown CPU"


def native_bf16(device: str | torch.device = "cpu") -> bool:
    """Whether ``device`` computes bfloat16 matrix products in hardware (not emulated). A GPU is asked by its own
    number (``cuda:1`` is not the current GPU's question, which ``torch.cuda.is_bf16_supported`` answers); a CPU
    by its features and by any cap that keeps oneDNN's kernels from bf16 (:func:`kernels_capped_below_bf16`)."""
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            return False
        if torch.version.hip:  # every ROCm GPU, as torch.cuda.is_bf16_supported says
            return True
        return torch.cuda.get_device_capability(device)[0] >= 8  # Ampere and later: bf16 tensor cores
    if device.type == "cpu":
        return any(cpu_features().values()) and not kernels_capped_below_bf16()
    return False


def kernels_capped_below_bf16() -> bool:
    """Whether oneDNN's kernels are kept from every bf16 instruction (:data:`ONEDNN_CAPS_WITHOUT_BF16`)."""
    import os

    cap = os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA") or ""
    return cap.strip().upper() in ONEDNN_CAPS_WITHOUT_BF16


def check_precision(precision: str) -> str:
    if precision not in PRECISIONS:  # a ConfigError, as every option a caller can get wrong
        from .errors import ConfigError

        raise ConfigError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    return precision


def precision_choice(
    precision: str | None, device: str | torch.device = "cpu", shapes: MatrixShapes | None = None, phase: str = "inference",
) -> dict[str, Any]:
    """What ``precision`` runs as on ``device`` and why: ``{"precision": "fp32"|"bf16", "how": ...}``, with the
    measured rates (``fp32_tokens_per_s``, ``bf16_tokens_per_s``) when ``auto`` measured or read them.

    ``how`` is ``explicit`` (fp32 or bf16 asked: always honoured, bf16 emulated where not native),
    ``not native`` (auto, fp32), ``native`` (auto on a GPU with native bf16, or on such a CPU when ``shapes``
    is unknown or a process among several finds no cached measurement: bf16), ``measured`` or ``cached``
    (auto on a CPU with native bf16: the faster for ``shapes`` in ``phase``, training or inference)."""
    precision = check_precision(precision or DEFAULT_PRECISION)
    if precision != "auto":
        return {"precision": precision, "how": "explicit"}
    import torch

    from . import precision_probe

    device = torch.device(device)
    if not native_bf16(device):
        return {"precision": "fp32", "how": "not native"}
    if device.type == "cpu" and shapes is not None:
        measured = precision_probe.measured_choice(shapes, phase, cpu_name())
        if measured:
            return measured
    return {"precision": "bf16", "how": "native"}


def resolve_precision(
    precision: str | None, device: str | torch.device = "cpu", shapes: MatrixShapes | None = None, phase: str = "inference",
) -> str:
    """``fp32`` or ``bf16`` (:func:`precision_choice`); None is :data:`DEFAULT_PRECISION`. An explicit ``bf16``
    is honoured everywhere (emulated where not native)."""
    return precision_choice(precision, device, shapes, phase)["precision"]


def autocast(precision: str, device: str | torch.device = "cpu") -> ContextManager:
    """The context a forward pass runs in: bfloat16 autocast for ``bf16``, nothing for ``fp32``."""
    import torch

    device = torch.device(device)
    if resolve_precision(precision, device) == "bf16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def forward_precision(precision: str | None, onnx: bool, where: str) -> str:
    """The precision of a model's forward passes (None: the default); ONNX exports compute in fp32 only."""
    from .errors import ConfigError

    precision = check_precision(precision or DEFAULT_PRECISION)
    if onnx and precision == "bf16":
        raise ConfigError(f"precision bf16 runs PyTorch models; {where} is an ONNX export, which computes in fp32: "
                          "choose precision fp32 or auto")
    return precision


def check_onnx_device(device: str | None, onnx: bool, where: str) -> None:
    """An ONNX export runs on ONNX Runtime's CPU provider: a device other than cpu or auto asked of one (``device`` as
    given) is refused in one line, as the pipeline refuses it, not ignored."""
    from .errors import ConfigError

    if onnx and str(device or "auto").strip().lower() not in ("auto", "cpu"):
        raise ConfigError(f"device {device} runs PyTorch models; {where} is an ONNX export, which runs on the CPU "
                          "(ONNX Runtime's CPU provider): choose device cpu or auto")
