"""The runner's plan and log as typed records, read from JSON with checks that name the file and the field.

A plan (``benchmarks/gpu/plan*.json``) is ``{"description"?, "stages": [{"name", "config", "run_seeds"?,
"models_from"?, "cells_from"?}]}``; the log (``runner_log.json``) is ``{"steps": [entry, ...]}``, one entry per
step run, in the order they ended. Both formats are the ones the runner has always written: an entry's fields
are flat, and what unpack or install found (``details``) sits beside them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from enum import Enum
from pathlib import Path
from typing import Any


class StepKind(str, Enum):
    UNPACK = "unpack"
    INSTALL = "install"
    TRAIN = "train"
    SCORE = "score"

    @property
    def runs_compare(self) -> bool:
        """Whether the step is a ``bio-mrc compare`` process (the others run inside the runner)."""
        return self in (StepKind.TRAIN, StepKind.SCORE)


class StepStatus(str, Enum):
    DONE = "done"
    FAILED = "failed"
    STOPPED = "stopped"  # the budget ran out or the runner got SIGTERM: the step resumes next time
    PARTIAL = "partial"  # a report of the models trained so far: rescored once the others exist


class RecordError(SystemExit):
    """A plan or log that does not read: one line naming the file and the field."""

    def __init__(self, path: Path, where: str, problem: str) -> None:
        super().__init__(f"error: {path}: {where}: {problem}" if where else f"error: {path}: {problem}")


@dataclass(frozen=True)
class Step:
    name: str
    kind: StepKind
    stage: str | None = None
    run: str | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", StepKind(self.kind))


# ---------------------------------------------------------------- reading JSON with named fields


def _field(raw: dict, key: str, kinds: type | tuple[type, ...], path: Path, where: str, default: Any = ...) -> Any:
    """``raw[key]`` checked against ``kinds`` (None allowed where the default is None); missing -> the default."""
    if key not in raw:
        if default is ...:
            raise RecordError(path, where, f"missing {key!r}")
        return default
    value = raw[key]
    if value is None and default is None:
        return None
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in _as_tuple(kinds)):
        names = " or ".join(kind.__name__ for kind in _as_tuple(kinds))
        raise RecordError(path, f"{where}.{key}" if where else key, f"{value!r} is not a {names}")
    return value


def _as_tuple(kinds: type | tuple[type, ...]) -> tuple[type, ...]:
    return kinds if isinstance(kinds, tuple) else (kinds,)


def _unknown_keys(raw: dict, known: set[str], path: Path, where: str) -> None:
    if unknown := sorted(set(raw) - known):
        raise RecordError(path, where, f"unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise RecordError(path, "", f"not JSON ({error})") from None


# ---------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Stage:
    name: str
    config: str  # the comparison config, relative to the repository or absolute
    run_seeds: dict[str, list[int]] = field(default_factory=dict)
    models_from: str | None = None  # the stage whose models this one reuses
    cells_from: str | None = None  # an earlier report.json(.xz) whose models' cells are read, not rebuilt


@dataclass(frozen=True)
class Plan:
    stages: tuple[Stage, ...]
    description: str = ""

    def stage(self, name: str) -> Stage:
        return next(stage for stage in self.stages if stage.name == name)


def read_plan(path: Path) -> Plan:
    raw = _read_json(path)
    if not isinstance(raw, dict) or not raw.get("stages") or not isinstance(raw["stages"], list):
        raise RecordError(path, "", 'a plan is {"stages": [{"name", "config", ...}]}')
    _unknown_keys(raw, {"description", "stages"}, path, "")
    stages = tuple(_read_stage(item, path, f"stages[{index}]") for index, item in enumerate(raw["stages"]))
    names = [stage.name for stage in stages]
    for index, stage in enumerate(stages):
        if stage.name in names[:index]:
            raise RecordError(path, f"stages[{index}].name", f"{stage.name!r} names two stages")
        if stage.models_from is not None and stage.models_from not in names:
            raise RecordError(path, f"stages[{index}].models_from", f"no stage {stage.models_from!r} in the plan")
    return Plan(stages, _field(raw, "description", str, path, "", ""))


def _read_stage(raw: Any, path: Path, where: str) -> Stage:
    if not isinstance(raw, dict):
        raise RecordError(path, where, 'a stage is {"name", "config", ...}')
    _unknown_keys(raw, {f.name for f in fields(Stage)}, path, where)
    run_seeds = _field(raw, "run_seeds", dict, path, where, {})
    for run, seeds in run_seeds.items():
        if not isinstance(seeds, list) or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
            raise RecordError(path, f"{where}.run_seeds.{run}", f"{seeds!r} is not a list of integers")
    return Stage(_field(raw, "name", str, path, where), _field(raw, "config", str, path, where), run_seeds,
                 _field(raw, "models_from", str, path, where, None), _field(raw, "cells_from", str, path, where, None))


# ---------------------------------------------------------------- the log


@dataclass(frozen=True)
class TrainedModel:
    """A model a training step left, with windows/s where one process trained it from the start."""

    model: str
    windows: int
    epochs: int
    train_seconds: float
    resumed_from: str | None
    windows_per_second: float | None


@dataclass(frozen=True)
class ChildRun:
    """What a train or score step's ``bio-mrc compare`` process did (every field is written, null or not)."""

    log: str
    returncode: int | None
    gpu_busy_share: float | None
    gpu_samples: int
    together_with: int


@dataclass(frozen=True)
class LogEntry:
    step: str
    status: StepStatus
    started: str | None = None
    wall_seconds: float | None = None
    device: str | None = None
    child: ChildRun | None = None
    models: tuple[TrainedModel, ...] | None = None  # a training step that is done
    report: str | None = None  # a score step that is done
    partial: tuple[str, ...] | None = None  # a score step's runs left out: a model of theirs is not trained
    details: dict[str, Any] = field(default_factory=dict)  # what unpack or install found

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", StepStatus(self.status))

    def to_json(self) -> dict:
        raw: dict = {"step": self.step, "started": self.started, **self.details}
        if self.child is not None:
            raw |= asdict(self.child)
        raw |= {"partial": list(self.partial) if self.partial else None,
                "models": [asdict(model) for model in self.models] if self.models is not None else None,
                "report": self.report, "status": self.status.value, "wall_seconds": self.wall_seconds, "device": self.device}
        return {key: value for key, value in raw.items() if value is not None or key in _CHILD_FIELDS and self.child}


_CHILD_FIELDS = {f.name for f in fields(ChildRun)}
_ENTRY_FIELDS = {"step", "status", "started", "wall_seconds", "device", "models", "report", "partial"}


def read_log_file(path: Path) -> tuple[LogEntry, ...]:
    """Every entry of a ``runner_log.json`` (none when the file does not exist)."""
    if not path.exists():
        return ()
    raw = _read_json(path)
    if not isinstance(raw, dict) or not isinstance(raw.get("steps"), list):
        raise RecordError(path, "", 'a runner log is {"steps": [...]}')
    return tuple(_read_entry(item, path, f"steps[{index}]") for index, item in enumerate(raw["steps"]))


def _read_entry(raw: Any, path: Path, where: str) -> LogEntry:
    if not isinstance(raw, dict):
        raise RecordError(path, where, "an entry is an object")
    status = _field(raw, "status", str, path, where)
    if status not in {s.value for s in StepStatus}:
        raise RecordError(path, f"{where}.status", f"{status!r} is not one of {', '.join(s.value for s in StepStatus)}")
    child = None
    if "log" in raw:
        child = ChildRun(_field(raw, "log", str, path, where), _field(raw, "returncode", int, path, where, None),
                         _field(raw, "gpu_busy_share", (int, float), path, where, None),
                         _field(raw, "gpu_samples", int, path, where, 0), _field(raw, "together_with", int, path, where, 1))
    models = _field(raw, "models", list, path, where, None)
    partial = _field(raw, "partial", list, path, where, None)
    return LogEntry(
        _field(raw, "step", str, path, where), StepStatus(status), _field(raw, "started", str, path, where, None),
        _field(raw, "wall_seconds", (int, float), path, where, None), _field(raw, "device", str, path, where, None), child,
        None if models is None else tuple(_read_model(m, path, f"{where}.models[{i}]") for i, m in enumerate(models)),
        _field(raw, "report", str, path, where, None), None if partial is None else tuple(partial),
        {key: value for key, value in raw.items() if key not in _ENTRY_FIELDS | _CHILD_FIELDS})


def _read_model(raw: Any, path: Path, where: str) -> TrainedModel:
    if not isinstance(raw, dict):
        raise RecordError(path, where, "a model is an object")
    number = (int, float)
    return TrainedModel(_field(raw, "model", str, path, where), _field(raw, "windows", int, path, where),
                        _field(raw, "epochs", int, path, where), _field(raw, "train_seconds", number, path, where),
                        _field(raw, "resumed_from", str, path, where, None),
                        _field(raw, "windows_per_second", number, path, where, None))


def write_log_file(path: Path, entries: tuple[LogEntry, ...]) -> None:
    """The whole log, replaced whole or not at all (even when the runner is killed mid-write)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps({"steps": [entry.to_json() for entry in entries]}, indent=2) + "\n", encoding="utf-8")
    temporary.replace(path)
