"""``precision: auto`` by measurement: fp32 or bf16, whichever runs the model's own matrix shapes faster here.

Native bf16 instructions do not make bf16 faster everywhere: on an AMD Zen 4 CPU (AVX512-BF16) bf16 autocast
trains 1.4-2.8x faster than fp32, on an Intel Xeon with AVX512-BF16 but no AMX it trained at 0.46x. So where
the CPU computes bf16 natively, ``auto`` times one encoder layer of the model's sizes (hidden size, intermediate
size, attention heads, windows of the model's length) in both precisions on one core (a team of threads stalls
whenever another job holds one of its cores): the forward pass for inference, forward and backward for training,
each twice in alternating order, about 1 s in all. bf16 is chosen only when it is more than :data:`TIE_MARGIN`
faster (a tie keeps fp32, exact everywhere). Training is also timed in bf16 with the attention alone in fp32
(PyTorch's fused CPU attention can train slower in bf16 than in fp32); where that is more than :data:`TIE_MARGIN`
faster than bf16 throughout, the choice says ``"attention": "fp32"`` and training runs it
(:mod:`bio_mrc.fp32_attention`). The result is cached per machine (CPU model and flags, torch version, caps on the
kernels' instructions, shapes, phase) in ``$XDG_CACHE_HOME/bio_mrc/precision.json`` (``~/.cache`` by default; ``$BIO_MRC_CACHE_DIR``
names another folder; no cache where none is set and no home folder is known), so a machine measures each model
size once; a cache that cannot be read (or an entry whose choice its rates contradict) is measured again and
rewritten, and a measurement whose two rounds disagree (another job took the cores) is used by this process but not
cached. A cache that cannot be written (a read-only folder, a file in its place) keeps each choice for this process
alone, and one :class:`~bio_mrc.errors.PrecisionCacheNote` a process says so.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from .launcher import launcher_number

PHASES = ("training", "inference")
TIE_MARGIN = 0.05  # bf16 must beat fp32 by more than this to be chosen
PROBE_TOKENS = 256  # windows x tokens of one probe batch (at least one window of the model's length)
PROBE_SECONDS = 0.05  # each precision is timed this long after one warm-up call (at least MIN_REPEATS calls)
MIN_REPEATS = 1
MAX_REPEATS = 50  # a tiny model's layer takes microseconds: enough calls to see its speed
CACHE_NAME = "precision.json"
FP32_ATTENTION = "bf16_fp32_attention"  # training in bf16 with the attention alone in fp32 (bio_mrc.fp32_attention)
# Each variant twice, alternating: a burst of other work hits every one. Training also times bf16 with fp32 attention.
ROUNDS = {"training": (("fp32", "bf16", FP32_ATTENTION), (FP32_ATTENTION, "bf16", "fp32")),
          "inference": (("fp32", "bf16"), ("bf16", "fp32"))}
# Environment variables that confine oneDNN, ATen or MKL to fewer instructions (ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16
# leaves AMX unused, and bf16 then runs at a tenth of its rate): a machine under such a cap measures anew.
ISA_CAPS = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS")
STABLE = 1.3  # a precision's two rounds within this factor: the measurement is cached; else this process keeps it only

_MEMO: dict[str, dict[str, Any]] = {}  # this process's choices: every caller in a process agrees even without a cache
_SAID_UNWRITABLE: set[str] = set()  # the caches this process could not write and has said so of


@dataclass(frozen=True)
class MatrixShapes:
    """The sizes that set a model's matrix products: one encoder layer's widths and one batch of windows."""

    hidden: int
    intermediate: int
    heads: int
    batch: int
    seq: int

    @classmethod
    def of(cls, encoder_config: Any, batch: int, seq: int) -> "MatrixShapes":
        """From a transformers config (``hidden_size``, ``intermediate_size``, ``num_attention_heads``)."""
        hidden = int(encoder_config.hidden_size)
        intermediate = int(getattr(encoder_config, "intermediate_size", None) or 4 * hidden)
        heads = int(getattr(encoder_config, "num_attention_heads", None) or 1)
        return cls(hidden, intermediate, heads if hidden % heads == 0 else 1, int(batch), int(seq))

    def probe_batch(self, phase: str = "training") -> int:
        """Windows in the probe's batch: the model's window length, at most :data:`PROBE_TOKENS` tokens for training
        and four times as many for a forward pass (a third of the work a token, and small batches undersell bf16 there)."""
        tokens = PROBE_TOKENS * (4 if phase == "inference" else 1)
        return max(1, min(self.batch, tokens // max(self.seq, 1)))


class _Layer(torch.nn.Module):
    """One post-norm encoder layer (BERT's): attention projections, fused attention, the feed-forward pair."""

    def __init__(self, shapes: MatrixShapes, fp32_attention: bool = False) -> None:
        super().__init__()
        h = shapes.hidden
        self.heads, self.fp32_attention = shapes.heads, fp32_attention
        self.qkv, self.out = torch.nn.Linear(h, 3 * h), torch.nn.Linear(h, h)
        self.up, self.down = torch.nn.Linear(h, shapes.intermediate), torch.nn.Linear(shapes.intermediate, h)
        self.norm1, self.norm2 = torch.nn.LayerNorm(h), torch.nn.LayerNorm(h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        if self.fp32_attention:  # as bio_mrc.fp32_attention runs it: autocast off, the products in fp32
            with torch.autocast("cpu", enabled=False):
                attended = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float()).to(q.dtype)
        else:
            attended = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        attended = attended.transpose(1, 2).reshape(b, s, h)
        x = self.norm1(x + self.out(attended))
        return self.norm2(x + self.down(torch.nn.functional.gelu(self.up(x))))


# One choice measured at a time in a process: threads asking for the same one at once would each time the others' probes.
_ONE_CHOICE = threading.Lock()
# One probe at a time in a process (extractors loaded from several threads), so each restores the thread count it found.
_ONE_PROBE = threading.Lock()


def timed_rate(step: Callable[[], Any], tokens: int, clock: Callable[[], float] = time.perf_counter,
               seconds: float | None = None) -> float:
    """Tokens/s of ``step``: one untimed warm-up call, then calls until ``seconds`` (:data:`PROBE_SECONDS`, as the
    module holds it when called) have passed (at least :data:`MIN_REPEATS`); the fastest call counts (another
    process's burst slows some calls, never speeds one)."""
    seconds = PROBE_SECONDS if seconds is None else seconds
    step()
    best, started, repeats = float("inf"), clock(), 0
    while repeats < MIN_REPEATS or (repeats < MAX_REPEATS and clock() - started < seconds):
        before = clock()
        step()
        best, repeats = min(best, clock() - before), repeats + 1
    return tokens / max(best, 1e-9)


def measure_rate(shapes: MatrixShapes, phase: str, precision: str, clock: Callable[[], float] = time.perf_counter) -> float:
    """Tokens/s of one layer of ``shapes`` on the CPU in ``precision`` (fp32, bf16 autocast, or bf16 autocast with
    the attention in fp32: :data:`FP32_ATTENTION`): forward for inference, forward and backward for training."""
    generator = torch.Generator().manual_seed(0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        layer = _Layer(shapes, fp32_attention=precision == FP32_ATTENTION).train(phase == "training")
    x = torch.randn(shapes.probe_batch(phase), shapes.seq, shapes.hidden, generator=generator)
    bf16 = precision in ("bf16", FP32_ATTENTION)
    context = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if bf16 else contextlib.nullcontext

    def step() -> None:
        if phase == "training":
            with context():
                loss = layer(x).float().square().mean()
            loss.backward()
        else:
            with torch.inference_mode(), context():
                layer(x)

    with _ONE_PROBE:  # torch's thread count is the whole process's: a second probe would save the first's 1 and restore it
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # one core's rate: a team of threads stalls whenever another job holds one of its cores
        try:
            return timed_rate(step, x.shape[0] * x.shape[1], clock)
        finally:
            torch.set_num_threads(threads)


def choose(rates: dict[str, float]) -> str:
    """bf16 when it (with the attention in bf16 or in fp32, where that was timed) is more than :data:`TIE_MARGIN`
    faster than fp32, else fp32."""
    bf16 = max(rates["bf16"], rates.get(FP32_ATTENTION, 0.0))
    return "bf16" if bf16 > rates["fp32"] * (1 + TIE_MARGIN) else "fp32"


def choose_attention(rates: dict[str, float]) -> str:
    """The attention's precision in bf16 training: fp32 when bf16 with fp32 attention is more than
    :data:`TIE_MARGIN` faster than bf16 throughout, else bf16 (the plain autocast path)."""
    return "fp32" if rates.get(FP32_ATTENTION, 0.0) > rates["bf16"] * (1 + TIE_MARGIN) else "bf16"


def cache_file() -> Path | None:
    """``precision.json`` in ``$BIO_MRC_CACHE_DIR`` (a leading ``~`` is the home folder, never a folder of that name in
    the working folder), else ``$XDG_CACHE_HOME/bio_mrc`` (an absolute path, as the XDG specification asks: a relative
    one is ignored), else ``~/.cache/bio_mrc``; None where the folder needs a home folder and none is known (``HOME``
    unset for a user the system does not list, as in a container run under another user id): the choice is then
    kept for this process only."""
    given = os.environ.get("BIO_MRC_CACHE_DIR")
    if given:
        folder = os.path.expanduser(given)  # Path.expanduser raises where no home is known; this leaves the "~"
        return None if folder.startswith("~") else Path(folder) / CACHE_NAME
    xdg = Path(os.environ.get("XDG_CACHE_HOME") or ".")
    home = os.path.expanduser("~")
    root = xdg if xdg.is_absolute() else None if home == "~" else Path(home) / ".cache"
    return None if root is None else root / "bio_mrc" / CACHE_NAME


def machine_key(cpu: str) -> str:
    """The CPU's model name and a hash of its feature flags, torch's version, and any cap set on the instructions
    torch's kernels may use (:data:`ISA_CAPS`): what a rate depends on. Not the process's thread count: the probe
    times one core whatever it is, so processes that torchrun starts on one thread read what a single process
    measured."""
    flags = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("flags"):
                flags = " ".join(sorted(line.split(":", 1)[1].split()))
                break
    digest = hashlib.sha256(flags.encode()).hexdigest()[:12]
    caps = "".join(f" | {name}={value}" for name, value in isa_caps().items())
    return f"{cpu} | flags {digest} | torch {torch.__version__}{caps}"


def isa_caps() -> dict[str, str]:
    """The caps of :data:`ISA_CAPS` set in this environment, by variable."""
    return {name: os.environ[name] for name in ISA_CAPS if os.environ.get(name)}


def cache_key(cpu: str, shapes: MatrixShapes, phase: str) -> str:
    return f"{machine_key(cpu)} | {phase} | " + " ".join(f"{k} {v}" for k, v in asdict(shapes).items())


def read_cache(path: Path | None) -> dict[str, Any]:
    """The cached choices; an unreadable or malformed file reads as empty (it is rewritten on the next store)."""
    if path is None or not path.is_file():  # a named pipe there would never end its read
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: nesting deeper than the parser's stack
        return {}
    return data if isinstance(data, dict) else {}


def _valid(entry: Any) -> bool:
    """Whether a cached entry can be used: its rates are positive finite numbers and its choice is the one they
    make (an entry edited or damaged into another choice is measured anew, never trusted)."""
    if not isinstance(entry, dict):
        return False
    phase = "training" if entry.get("phase") == "training" else "inference"
    rates = {p: entry.get(f"{p}_tokens_per_s") for p in ROUNDS[phase][0]}
    if not all(_rate(rate) for rate in rates.values()):
        return False
    if entry.get("precision") != choose(rates):
        return False
    if phase == "training":  # measured before training timed the attention in fp32: measured anew
        return entry.get("attention") == (choose_attention(rates) if entry["precision"] == "bf16" else "fp32")
    return True


def _rate(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < float("inf")


def store(path: Path | None, key: str, entry: dict[str, Any]) -> str | None:
    """Add ``entry`` to the cache file, written whole to a temporary file and renamed (never half-written), one
    process at a time; a cache folder that cannot be written keeps the choice for this process only, and the reason
    is returned (None: stored, or no cache)."""
    from .io import UnsafePathError, atomic_write_text, updated_alone

    if path is None:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path = Path(os.path.realpath(path.parent)) / path.name  # a cache folder that is a link is the user's choice
        with updated_alone(path):  # another process's entry, stored since this one read the file, is kept
            data = read_cache(path)
            data[key] = entry
            atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
    except (OSError, UnsafePathError) as error:  # UnsafePathError and the package's OutputError are OSErrors too
        return _why_unwritable(error)
    return None


def _why_unwritable(error: OSError) -> str:
    """A few words on why the cache could not be written: the system's reason, or the first clause of the package's."""
    if isinstance(error, FileExistsError):  # the folder's name is a file's
        return "a file has the folder's name"
    problem = getattr(error, "problem", None)  # the package's OutputError: "this is a named pipe (FIFO), not a file; ..."
    return problem.split(";")[0] if problem else error.strerror or str(error)


def _say_unwritable(path: Path, reason: str) -> None:
    """The :class:`~bio_mrc.errors.PrecisionCacheNote` of a cache that cannot be written (said once a process), naming
    it, the reason and ``BIO_MRC_CACHE_DIR``: without it every process measured again and nobody was told why."""
    from .errors import PrecisionCacheNote

    warnings.warn(PrecisionCacheNote(f"precision auto cannot keep its measurements in {path} ({reason}): every process measures "
                                     "them again; set BIO_MRC_CACHE_DIR to a writable folder to keep them there"), stacklevel=3)


def measured_choice(
    shapes: MatrixShapes, phase: str, cpu: str, measure: Callable[[MatrixShapes, str, str], float] | None = None,
    path: Path | None = None,
) -> dict[str, Any]:
    """``{"precision", "how": "measured"|"cached", "fp32_tokens_per_s", "bf16_tokens_per_s", ...}`` for ``shapes``
    in ``phase`` on this machine: from this process's memo, else the cache file, else measured and cached."""
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, got {phase!r}")
    path = path or cache_file()
    key = cache_key(cpu, shapes, phase)
    memo_key = f"{path}\n{key}"
    if memo_key in _MEMO:
        return _MEMO[memo_key]
    with _ONE_CHOICE:  # models loaded from several threads: one measures, the others take its choice
        if memo_key in _MEMO:
            return _MEMO[memo_key]
        entry, unwritable = read_cache(path).get(key), None
        if _valid(entry):
            choice = {**entry, "how": "cached"}
        elif distributed():  # ranks must agree: a process among several measures nothing (see resolve_precision)
            return {}
        else:
            runs: dict[str, list[float]] = {p: [] for p in ROUNDS[phase][0]}
            for order in ROUNDS[phase]:
                for p in order:
                    runs[p].append((measure or measure_rate)(shapes, phase, p))
            entry = _entry({p: max(r) for p, r in runs.items()}, shapes, phase)
            stable = all(max(r) <= STABLE * max(min(r), 1e-9) for r in runs.values())
            # another job's burst during one round would make the cached choice wrong for good
            unwritable = store(path, key, entry) if stable else None
            choice = {**entry, "how": "measured" if stable else "measured (unsteady, not cached)"}
        _MEMO[memo_key] = choice
        said = str(path) in _SAID_UNWRITABLE  # once a process
        if unwritable is not None:
            _SAID_UNWRITABLE.add(str(path))
    if unwritable is not None and not said:  # said once the choice is kept, so a filter that makes the note an error loses no choice
        _say_unwritable(path, unwritable)
    return choice


def _entry(rates: dict[str, float], shapes: MatrixShapes, phase: str) -> dict[str, Any]:
    """A cache entry: the choice, the rates it rests on, when, for what; in training, the attention's precision. The
    choice is made on the rates as kept (to one decimal), which :func:`_valid` checks it against when it is read back."""
    rates = {p: round(rate, 1) for p, rate in rates.items()}
    entry = {"precision": choose(rates), **{f"{p}_tokens_per_s": rate for p, rate in rates.items()},
             "measured": time.strftime("%Y-%m-%d %H:%M:%S"), "shapes": asdict(shapes), "phase": phase}
    if phase == "training":
        entry["attention"] = choose_attention(rates) if entry["precision"] == "bf16" else "fp32"
    return entry


def distributed() -> bool:
    """Whether this process is one of several (torchrun sets ``WORLD_SIZE``)."""
    return launcher_number("WORLD_SIZE") > 1


__all__ = ["FP32_ATTENTION", "MatrixShapes", "PHASES", "TIE_MARGIN", "cache_file", "choose", "choose_attention", "measure_rate",
           "measured_choice", "timed_rate"]
