"""The package's layers: a module imports only from its own layer and the layers it builds on.

The README draws the same picture. A new upward import (a decoder reaching into the model,
inference into training, data into metrics) fails here, naming the file and the import.
"""

import ast
from pathlib import Path

import bio_mrc

PACKAGE = Path(bio_mrc.__file__).parent

# Which layers each layer may import (its own included). "core" is the data model and plumbing.
ALLOWED = {
    "core": {"core"},
    "data": {"core", "data"},
    "heads": {"core", "heads"},
    "model": {"core", "heads", "model"},
    "features": {"core", "data", "features"},
    "decoding": {"core", "decoding"},
    "metrics": {"core", "metrics"},
    "training": {"core", "data", "heads", "model", "features", "training"},
    "inference": {"core", "data", "model", "features", "decoding", "metrics", "inference"},
    "harness": {"core", "data", "model", "features", "decoding", "metrics", "training", "inference", "harness"},
}
ALLOWED["cli"] = set(ALLOWED) | {"cli"}
CORE_MODULES = {"types", "tags", "errors", "io", "progress", "precision", "encoders", "config_options", "model_card", "__init__", "__version__"}


def layer_of(module: str) -> str:
    """``bio_mrc.decoding.spans`` -> ``decoding``; top-level plumbing modules are ``core``."""
    parts = module.split(".")[1:] or ["__init__"]
    if parts[0] in CORE_MODULES:
        return "core"
    if parts[0] == "model":
        return "model"
    if parts[0] == "cli":
        return "cli"
    if parts[0] not in ALLOWED:
        raise AssertionError(f"bio_mrc.{parts[0]} belongs to no layer: add it to tests/test_layers.py and the README")
    return parts[0]


def module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(relative.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, absolute module) of every ``bio_mrc`` import in a module's source, lazy imports inside functions included."""
    package = module if is_package else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [target] if node.module else [f"{target}.{alias.name}" for alias in node.names]
            found += [(node.lineno, name) for name in names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
    return [(line, name) for line, name in found if name == "bio_mrc" or name.startswith("bio_mrc.")]


def test_no_import_crosses_a_layer_upward():
    crossings = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source_layer = layer_of(module_name(path))
        for line, target in imported_modules(path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py"):
            if target == "bio_mrc":
                continue
            target_layer = layer_of(target)
            if target_layer not in ALLOWED[source_layer]:
                crossings.append(f"{path.relative_to(PACKAGE.parent)}:{line} ({source_layer}) imports {target} ({target_layer})")
    assert not crossings, "imports that go up the layers:\n" + "\n".join(crossings)


def test_the_lazy_exports_stay_within_their_layers():
    for name, module in bio_mrc._LAZY.items():
        assert layer_of(module) in ALLOWED["cli"], name


def test_the_checker_sees_upward_imports():
    probe = "from ..model import BioMrcConfig\nfrom .spans import best_spans\n\ndef f():\n    from bio_mrc.training import train\n"
    found = imported_modules(probe, "bio_mrc.decoding.probe")
    assert found == [(1, "bio_mrc.model"), (2, "bio_mrc.decoding.spans"), (5, "bio_mrc.training")]
    assert [layer_of(name) in ALLOWED["decoding"] for _, name in found] == [False, True, False]
