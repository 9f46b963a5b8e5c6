"""What many tests read, read once a worker: a source's module tree and its nodes. Each is keyed by what the file holds
now (a file a test rewrites is read again) and shared by every test of the worker: read it, never change it
(``copy.deepcopy`` it first)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path


@functools.cache
def parsed_source(source: str) -> ast.Module:
    """``ast.parse(source)``, parsed once a worker for each text."""
    return ast.parse(source)


@functools.cache
def walked_source(source: str) -> tuple[ast.AST, ...]:
    """Every node of ``parsed_source(source)``, in ``ast.walk``'s order, walked once a worker for each text."""
    return tuple(ast.walk(parsed_source(source)))


def parsed(path: Path) -> ast.Module:
    """The module tree of the source file ``path`` as it reads now."""
    return parsed_source(Path(path).read_text(encoding="utf-8"))


def walked(path: Path) -> tuple[ast.AST, ...]:
    """Every node of the source file ``path`` as it reads now, in ``ast.walk``'s order."""
    return walked_source(Path(path).read_text(encoding="utf-8"))
