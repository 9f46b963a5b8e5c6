"""Torch's threads in a command that runs a model: no more than the CPUs the process may use (its CPU quota, its
affinity mask: :mod:`bio_mrc.cpu_budget`), set as torch loads, so the refusals that come before torch stay as quick.

The user's choice stands: ``OMP_NUM_THREADS`` or ``MKL_NUM_THREADS`` set, or a program that imported torch before it
called :func:`bio_mrc.cli.main` (its threads are its own, ``torch.set_num_threads`` included). A command marks
itself with :func:`runs_a_model`; ``evaluate``, which scores files, never loads torch for it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.abc
import sys
from typing import Any, Iterator

from ..cpu_budget import chosen_thread_variable, fit_torch_threads

FIT_THREADS = "fit_torch_threads"  # the parsed arguments' mark of a command that runs a model


def runs_a_model(parser: argparse.ArgumentParser) -> None:
    """Mark ``parser``'s command as one whose model runs in this process: its torch threads are fitted."""
    parser.set_defaults(**{FIT_THREADS: True})


def torch_imported() -> bool:
    """Whether this process has imported torch."""
    return "torch" in sys.modules


@contextlib.contextmanager
def threads_fitted(args: argparse.Namespace, torch_before: bool) -> Iterator[None]:
    """Run the command inside: where it runs a model, torch was not imported before the command line began
    (``torch_before``) and no thread variable is set, torch's threads are fitted to the CPUs usable now (torch
    imported since) or the moment torch is imported."""
    if not getattr(args, FIT_THREADS, False) or torch_before or chosen_thread_variable() is not None:
        yield
        return
    if torch_imported():
        fit_torch_threads()
        yield
        return
    hook = _AfterTorchLoads()
    sys.meta_path.insert(0, hook)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):  # gone already: torch was imported
            sys.meta_path.remove(hook)


class _AfterTorchLoads(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when ``torch`` is looked for it hands on the spec the other finders give, its loader set to
    fit the threads as soon as torch's module has run, and steps aside then. A look that imports nothing (a library's
    ``importlib.util.find_spec("torch")``, as transformers asks whether torch is there) leaves it in place for the import
    that follows."""

    def __init__(self) -> None:
        self._looking = False  # its own look for torch's spec, which passes through the finders again

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "torch" or self._looking:
            return None
        from importlib.util import find_spec

        self._looking = True
        try:
            spec = find_spec("torch")
        finally:
            self._looking = False
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            run_module = spec.loader.exec_module

            def exec_module(module: Any) -> None:
                run_module(module)
                with contextlib.suppress(ValueError):  # gone already: the command ended
                    sys.meta_path.remove(self)
                fit_torch_threads()

            spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


__all__ = ["FIT_THREADS", "runs_a_model", "threads_fitted", "torch_imported"]
