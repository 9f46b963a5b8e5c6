"""Prediction split across processes started by ``torchrun`` or ``accelerate launch``.

The launcher sets ``RANK`` and ``WORLD_SIZE`` (and the rendezvous, ``MASTER_ADDR``/``MASTER_PORT``, across
machines too); each process answers its share of the questions and sends the answers to rank 0, which
writes them in the order a single process would. The gloo backend carries the answers (they are text),
whatever device the model runs on. torch is imported only where several processes need it: a single process's shard is
known before torch loads, so plain bad input is refused at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..errors import BioMrcError, ConfigError
from ..launcher import launcher_number


@dataclass(frozen=True)
class Shard:
    """This process's place among ``world`` processes (rank 0 of 1 without a launcher)."""

    rank: int = 0
    world: int = 1

    @classmethod
    def from_environment(cls) -> "Shard":
        """The shard the launcher's environment names; the process group (gloo) is joined when there are several."""
        world, rank = launcher_number("WORLD_SIZE"), launcher_number("RANK")
        if world > 1:
            import torch.distributed as dist

            if not dist.is_initialized():
                dist.init_process_group("gloo")
        return cls(rank, world)

    @property
    def writes(self) -> bool:
        """Rank 0 writes every output."""
        return self.rank == 0

    @property
    def device(self) -> str | None:
        """Each process's own GPU when there are several processes and GPUs (``LOCAL_RANK``); None: the default."""
        if self.world == 1:
            return None
        import torch

        if torch.cuda.is_available():
            return f"cuda:{launcher_number('LOCAL_RANK') % torch.cuda.device_count()}"
        return None

    def device_for(self, asked: str | None) -> str | None:
        """The device this process answers on: ``asked`` (``cpu``, ``cuda:1``, ``mps``) as given; ``auto`` (or None)
        is this process's own GPU (:attr:`device`) among several, else the default."""
        if asked is not None and str(asked).strip().lower() != "auto":
            return asked
        return self.device or asked

    def gather(self, value: Any) -> list[Any] | None:
        """Every rank's ``value`` in rank order on rank 0 (None elsewhere)."""
        if self.world == 1:
            return [value]
        import torch.distributed as dist

        gathered: list[Any] | None = [None] * self.world if self.writes else None
        dist.gather_object(value, gathered, dst=0)
        return gathered

    def broadcast(self, value: Any) -> Any:
        """Rank 0's ``value`` on every rank."""
        if self.world == 1:
            return value
        import torch.distributed as dist

        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def broadcast_result(self, call: Callable[[], Any]) -> Any:
        """Rank 0's ``call()`` on every rank. Where rank 0 refuses (a :class:`BioMrcError`), it raises that error and the
        other ranks a ConfigError naming rank 0's refusal, each one line, instead of waiting on it to fail in gloo."""
        if self.world == 1:
            return call()
        try:
            value = call() if self.writes else None
        except BioMrcError as error:
            self.broadcast(_Refused(getattr(error, "marked", None) or str(error)))  # its arguments, for each door to name
            raise
        value = self.broadcast(value)
        if isinstance(value, _Refused):
            raise ConfigError(f"rank 0 refused the run: {value.message}")
        return value

    def close(self) -> None:
        if self.world == 1:
            return
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()


@dataclass(frozen=True)
class _Refused:
    """What rank 0 sends the others in place of a value when it refuses the run."""

    message: str


SINGLE_PROCESS = Shard()  # rank 0 of 1: the default where no launcher started several processes
