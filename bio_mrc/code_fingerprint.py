"""What a cached result depends on in the package's code, derived from the imports rather than kept by hand.

The sources of a computation are the modules its entry modules import, followed through the package
(imports inside functions included, and a registry's ``"module:attribute"`` references; imports under
``if TYPE_CHECKING:`` only name types and are left out), with the ``__init__`` of every package on the way. A change to any of them changes the
fingerprint; a change to a module they never import (a report renderer, the training loop) does not.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import re
import threading
from pathlib import Path
from typing import Iterable

PACKAGE_DIR = Path(__file__).resolve().parent
PACKAGE = PACKAGE_DIR.name
LATE_REFERENCE = re.compile(rf"{PACKAGE}(\.\w+)+:\w+")  # a registry's "module:attribute", imported when called
# One fingerprint computed at a time: CPython 3.11's ast.parse keeps its depth count per interpreter, so two threads
# parsing at once (windows cached by runs in several threads) can fail with "AST constructor recursion depth
# mismatch"; the later callers read the first one's result.
_ONE_AT_A_TIME = threading.Lock()


def module_file(module: str, package_dir: Path = PACKAGE_DIR) -> Path | None:
    """The source file of ``bio_mrc.x.y`` (a module or a package), or None when it names no file (an attribute)."""
    parts = module.split(".")[1:]
    base = package_dir.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if parts and candidate.is_file():
            return candidate
    return package_dir / "__init__.py" if not parts else None


def _runtime_nodes(tree: ast.AST) -> Iterable[ast.AST]:
    """Every node but those under ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING":
            yield from (n for child in node.orelse for n in [child, *_runtime_nodes(child)])
            continue
        yield node
        yield from _runtime_nodes(node)


def imported_modules(path: Path, package_dir: Path = PACKAGE_DIR) -> set[str]:
    """The package's modules (``bio_mrc.x``) a source file imports when it runs."""
    relative = path.relative_to(package_dir).with_suffix("")
    return set(_imports_in(path.read_text(encoding="utf-8"), (PACKAGE, *relative.parts[:-1])))


@functools.lru_cache(maxsize=None)
def _imports_in(source: str, here: tuple[str, ...]) -> frozenset[str]:
    """The package's modules a source in the package ``here`` imports: parsed once a process for each text, as
    the same sources are fingerprinted for several caches and copies of the package."""
    found = set()
    for node in _runtime_nodes(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = list(here[: len(here) - node.level + 1]) if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and LATE_REFERENCE.fullmatch(node.value):
            found.add(node.value.partition(":")[0])
    return frozenset(name for name in found if name == PACKAGE or name.startswith(PACKAGE + "."))


def source_closure(roots: Iterable[str], package_dir: Path = PACKAGE_DIR) -> list[Path]:
    """The source files of the modules ``roots`` and everything they import from the package, with their packages' ``__init__``."""
    seen: set[Path] = set()
    pending = [module_file(root, package_dir) for root in roots]
    while pending:
        path = pending.pop()
        if path is None or path in seen:
            continue
        seen.add(path)
        packages = [package_dir.joinpath(*path.relative_to(package_dir).parts[:k]) / "__init__.py"
                    for k in range(len(path.relative_to(package_dir).parts))]
        pending += [p for p in packages if p.is_file()]
        pending += [module_file(name, package_dir) for name in imported_modules(path, package_dir)]
    return sorted(seen)


def sources_fingerprint(roots: tuple[str, ...], package_dir: Path = PACKAGE_DIR) -> str:
    """:func:`sources_digest`, computed once a process."""
    with _ONE_AT_A_TIME:
        return _fingerprints(roots, package_dir)


def sources_digest(roots: tuple[str, ...], package_dir: Path = PACKAGE_DIR) -> str:
    """A hash of the sources :func:`source_closure` finds (their paths and contents), read now."""
    digest = hashlib.sha256()
    for path in source_closure(roots, package_dir):
        digest.update(path.relative_to(package_dir).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


_fingerprints = functools.lru_cache(maxsize=None)(sources_digest)
