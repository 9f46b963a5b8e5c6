"""The package's layers: a module imports only from its own layer and the layers it builds on.

docs/layout.md draws the same picture. A new upward import (a decoder reaching into the model,
inference into training, data into metrics) fails here, naming the file and the import.
Within a layer the imports go one way too: a circle of modules importing each other, even
through an import inside a function, fails here, naming each import of the circle.
"""

import ast
import importlib
from pathlib import Path
from typing import Mapping

import pytest

import bio_mrc

from .read_once import parsed, walked_source

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
    "serving": {"core", "data", "model", "features", "decoding", "metrics", "inference", "serving"},
}
ALLOWED["cli"] = set(ALLOWED) | {"cli"}
CORE_MODULES = {"types", "answer_text", "tags", "errors", "io", "progress", "precision", "precision_probe", "launcher", "machine", "cpu_budget", "freed_memory",
                "fp32_attention", "encoders",
                "stop_signals",
                "config_options", "config_schema", "model_folder", "model_records", "pickled_weights",
                "model_defaults", "argument_parser", "hub", "transformers_registration",
                "registry", "code_fingerprint", "question_fingerprint", "evaluation_record", "plurals", "arguments", "run_folder", "json_syntax",
                "markdown_code", "plugins",
                "__init__", "__version__"}


MODEL_MODULES = {"model", "model_card", "qa_checkpoints"}  # the model, its card, and transformers' QA models as bio_mrc models


def layer_of(module: str) -> str:
    """``bio_mrc.decoding.spans`` -> ``decoding``; top-level plumbing modules are ``core``."""
    parts = module.split(".")[1:] or ["__init__"]
    if parts[0] in CORE_MODULES:
        return "core"
    if parts[0] in MODEL_MODULES:
        return "model"
    if parts[0] in ("cli", "__main__"):  # python -m bio_mrc runs the command line
        return "cli"
    if parts[0] not in ALLOWED:
        raise AssertionError(f"bio_mrc.{parts[0]} belongs to no layer: add it to tests/test_layers.py and docs/layout.md")
    return parts[0]


def module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(relative.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, absolute module) of every ``bio_mrc`` import in a module's source, lazy imports inside functions included."""
    package = module if is_package else module.rsplit(".", 1)[0]
    found = []
    for node in walked_source(source):
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


# --- import circles ----------------------------------------------------------------------------

def package_sources() -> dict[str, tuple[str, bool]]:
    """``{module: (source, is_package)}`` of every module of bio_mrc."""
    return {module_name(path): (path.read_text(encoding="utf-8"), path.name == "__init__.py") for path in sorted(PACKAGE.rglob("*.py"))}


def owning_module(target: str, modules: Mapping[str, object]) -> str | None:
    """The module an import reaches: ``bio_mrc.x.name`` (a name taken from ``bio_mrc.x``) is ``bio_mrc.x``."""
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def import_graph(sources: Mapping[str, tuple[str, bool]]) -> dict[str, dict[str, int]]:
    """``{module: {module it imports: line of the first such import}}``, lazy imports inside functions included.

    Only the imports written out count: the implicit import of a parent package is not an arrow,
    else every package that re-exports its modules would be a circle.
    """
    graph: dict[str, dict[str, int]] = {}
    for module, (source, is_package) in sources.items():
        edges = graph.setdefault(module, {})
        for line, target in imported_modules(source, module, is_package):
            reached = owning_module(target, sources)
            if reached and reached != module:
                edges.setdefault(reached, line)
    return graph


def import_cycles(graph: Mapping[str, Mapping[str, object]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = lowest[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in graph.get(module, {}):
            if target not in index:
                visit(target)
                lowest[module] = min(lowest[module], lowest[target])
            elif target in on_stack:
                lowest[module] = min(lowest[module], index[target])
        if lowest[module] == index[module]:  # module roots a component: pop it off the stack
            component = []
            while not component or component[-1] != module:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(cycles)


def module_file(module: str, sources: Mapping[str, tuple[str, bool]]) -> str:
    """``bio_mrc.a.b`` -> ``bio_mrc/a/b.py``, or ``bio_mrc/a/b/__init__.py`` for a package."""
    return module.replace(".", "/") + ("/__init__.py" if sources[module][1] else ".py")


def describe_cycle(graph: Mapping[str, Mapping[str, int]], cycle: list[str], sources: Mapping[str, tuple[str, bool]]) -> str:
    """Each import inside one circle, as ``bio_mrc/a.py:12 imports bio_mrc.b``."""
    members = set(cycle)
    return "\n".join(
        f"  {module_file(module, sources)}:{line} imports {target}"
        for module in cycle for target, line in sorted(graph[module].items()) if target in members
    )


def test_no_modules_import_each_other_in_a_circle():
    sources = package_sources()
    graph = import_graph(sources)
    cycles = import_cycles(graph)
    assert not cycles, "modules that import each other (make the arrows go one way):\n" + "\n\n".join(
        describe_cycle(graph, cycle, sources) for cycle in cycles
    )


def test_the_cycle_finder_sees_circles_of_two_and_more():
    graph = {"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1, "d": 1}, "d": {"e": 1}, "e": {"d": 1}, "f": {"a": 1}, "g": {}}
    assert import_cycles(graph) == [["a", "b", "c"], ["d", "e"]]
    assert import_cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {}}) == []  # a chain, however long, is no circle


def test_the_graph_sees_a_circle_closed_by_a_lazy_import():
    # A circle once found: loading imported OnnxModel from onnx, whose export imported TrainedModel back, lazily.
    sources = {
        "bio_mrc.inference": ("from .loading import TrainedModel\n", True),
        "bio_mrc.inference.loading": ("from ..model import BioMrcConfig\nfrom .onnx import ONNX_FILE, OnnxModel\n", False),
        "bio_mrc.inference.onnx": ("from .. import __version__\n\ndef export_onnx():\n    from .loading import TrainedModel\n", False),
        "bio_mrc.model": ("", False),
        "bio_mrc": ("", True),
    }
    graph = import_graph(sources)
    assert graph["bio_mrc.inference.onnx"] == {"bio_mrc": 1, "bio_mrc.inference.loading": 4}
    assert import_cycles(graph) == [["bio_mrc.inference.loading", "bio_mrc.inference.onnx"]]
    assert describe_cycle(graph, import_cycles(graph)[0], sources) == (
        "  bio_mrc/inference/loading.py:2 imports bio_mrc.inference.onnx\n"
        "  bio_mrc/inference/onnx.py:4 imports bio_mrc.inference.loading"
    )


# --- packages of one module a job ----------------------------------------------------------------

@pytest.mark.parametrize("package_name", ["bio_mrc.model_folder", "bio_mrc.io"])
def test_every_public_name_of_a_packages_modules_is_importable_from_the_package(package_name):
    """Callers and plug-ins import from the package itself (``from bio_mrc.io import atomic_write_json``): each public
    name one of its modules defines is the package's own attribute, the same object, and listed in its ``__all__``."""
    package = importlib.import_module(package_name)
    paths = sorted(path for path in Path(package.__file__).parent.glob("*.py") if path.name != "__init__.py")
    assert len(paths) > 1
    for path in paths:
        module = importlib.import_module(f"{package_name}.{path.stem}")
        tree = parsed(path)
        defined = [node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
        defined += [name.id for node in tree.body if isinstance(node, ast.Assign) for target in node.targets
                    for name in ast.walk(target) if isinstance(name, ast.Name)]
        for name in (name for name in defined if not name.startswith("_") and name != "T"):
            assert getattr(package, name, None) is getattr(module, name) and name in package.__all__, f"{module.__name__}.{name}"
