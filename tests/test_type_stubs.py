"""What a type checker reads of the package's exports matches what runs.

``__init__.pyi`` re-exports each name from the module that defines it, so a type checker reads that module's
source: its ``def`` lines (overloads included), its class bodies and their dataclass decorators. Read with ``ast``,
each is compared with the runtime object through ``inspect`` and ``dataclasses``: a decorator that changes a
signature, a method set on a class after its body, or a field or ``frozen`` flag the source does not state shows here.
"""

import ast
import builtins
import dataclasses
import functools
import importlib
import inspect
from pathlib import Path

import pytest

import bio_mrc
import bio_mrc.inference

from .read_once import parsed

PACKAGES = [bio_mrc, bio_mrc.inference]
EMPTY = inspect.Parameter.empty


def _stub_imports(package) -> list[tuple[str, str]]:
    """``(module, name)`` for each name a package's ``__init__.pyi`` re-exports."""
    body = parsed(Path(package.__file__).with_suffix(".pyi")).body
    return [(f"{package.__name__}.{node.module}" if node.level else node.module, alias.name)
            for node in body if isinstance(node, ast.ImportFrom) for alias in node.names]


EXPORTS = sorted({pair for package in PACKAGES for pair in _stub_imports(package)})


@functools.cache
def _definitions(module_name: str) -> dict[str, list[ast.stmt]]:
    """Each top-level name of a module's source (its stub where one lies beside it) -> its definitions, in order."""
    source = Path(importlib.import_module(module_name).__file__)
    path = source.with_suffix(".pyi") if source.with_suffix(".pyi").exists() else source
    found: dict[str, list[ast.stmt]] = {}
    for node in parsed(path).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.setdefault(node.name, []).append(node)
    return found


def _written(function: ast.FunctionDef | ast.AsyncFunctionDef, module) -> list[tuple]:
    """``(name, kind, default)`` of each parameter as the source writes it, defaults evaluated in the module."""
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [EMPTY] * (len(positional) - len(args.defaults)) + list(args.defaults)
    kinds = [inspect.Parameter.POSITIONAL_ONLY] * len(args.posonlyargs) + [inspect.Parameter.POSITIONAL_OR_KEYWORD] * len(args.args)
    written = list(zip([arg.arg for arg in positional], kinds, defaults))
    if args.vararg:
        written.append((args.vararg.arg, inspect.Parameter.VAR_POSITIONAL, EMPTY))
    written += [(arg.arg, inspect.Parameter.KEYWORD_ONLY, default or EMPTY) for arg, default in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg:
        written.append((args.kwarg.arg, inspect.Parameter.VAR_KEYWORD, EMPTY))
    return [(name, kind, default if default is EMPTY else eval(compile(ast.Expression(default), "<default>", "eval"), vars(module)))
            for name, kind, default in written]


def _running(function) -> list[tuple]:
    # follow_wrapped=False: a functools.wraps decorator shows what the call really takes, not the wrapped def's line
    return [(p.name, p.kind, p.default) for p in inspect.signature(function, follow_wrapped=False).parameters.values()]


def _same(written: list[tuple], running: list[tuple], spelt_out: bool = False) -> bool:
    """Whether parameters match; a default compares by identity first (a sentinel object, NaN), then ==. ``spelt_out``: the
    runtime ``__signature__`` names as keyword-only parameters what the source takes as ``**keywords``."""
    if spelt_out and written and written[-1][1] is inspect.Parameter.VAR_KEYWORD:
        written = written[:-1] + [r for r in running[len(written) - 1:] if r[1] is inspect.Parameter.KEYWORD_ONLY and r[2] is None]
    return len(written) == len(running) and all(
        w[:2] == r[:2] and (w[2] is r[2] or w[2] == r[2]) for w, r in zip(written, running))


def _methods(node: ast.ClassDef, module_name: str) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """``(name, def)`` of each public method a class body writes (``__init__`` and ``__call__`` too, each overload apart);
    ``name = staticmethod(function)`` is the module's ``def function``."""
    found = []
    for statement in node.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append((statement.name, statement))
        elif (isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call) and isinstance(statement.value.func, ast.Name)
              and statement.value.func.id in ("staticmethod", "classmethod")):
            found += [(target.id, _definitions(module_name)[statement.value.args[0].id][-1]) for target in statement.targets]
    return [(name, function) for name, function in found if not name.startswith("_") or name in ("__init__", "__call__")]


def _underlying(attribute):
    """The function behind a class attribute: a classmethod's, a staticmethod's, a property's getter, a cached property's."""
    for name in ("__func__", "fget", "func"):
        attribute = getattr(attribute, name, attribute)
    return attribute


def _written_in(attribute, module) -> bool:
    """Whether a class attribute is a function whose code lies in the module's file (a dataclass's __init__ does not)."""
    code = getattr(inspect.unwrap(attribute), "__code__", None) if callable(attribute) else None
    return code is not None and code.co_filename == module.__file__


def _dataclass_options(node: ast.ClassDef, cls: type) -> dict[str, bool] | None:
    """The keywords of the ``@dataclass(...)`` decorator the source writes (``{}`` for a bare one), or the defaults of a
    base's ``@dataclass_transform`` (as transformers' ``PreTrainedConfig`` has); None without either."""
    for decorator in node.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        target = call.func if call else decorator
        if (target.id if isinstance(target, ast.Name) else getattr(target, "attr", None)) == "dataclass":
            return {keyword.arg: ast.literal_eval(keyword.value) for keyword in call.keywords} if call else {}
    transform = next((vars(base)["__dataclass_transform__"] for base in cls.__mro__[1:] if "__dataclass_transform__" in vars(base)), None)
    return None if transform is None else {"frozen": transform["frozen_default"]}


def _dataclass_fields(node: ast.ClassDef) -> list[str]:
    """The fields a dataclass body writes: annotated names, less ``ClassVar`` ones."""
    return [statement.target.id for statement in node.body if isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name) and "ClassVar" not in ast.unparse(statement.annotation)]


@pytest.mark.parametrize("package", PACKAGES, ids=lambda package: package.__name__)
def test_each_stub_name_is_exported_and_each_export_is_in_the_stub(package):
    stubbed = {name for _, name in _stub_imports(package)}
    assert sorted(stubbed) == sorted(set(package.__all__) - {"__version__"})
    assert all(hasattr(package, name) for name in stubbed)
    body = parsed(Path(package.__file__).with_suffix(".pyi")).body
    for node in body:  # `__version__: str`: a value of that type
        if isinstance(node, ast.AnnAssign):
            assert isinstance(getattr(package, node.target.id), getattr(builtins, ast.unparse(node.annotation))), node.target.id


@pytest.mark.parametrize(("module_name", "name"), EXPORTS, ids=[f"{module}:{name}" for module, name in EXPORTS])
def test_each_stub_name_is_defined_where_the_stub_imports_it(module_name, name):
    # a name imported there, not defined, is no export of that module for a type checker in strict mode
    assert name in _definitions(module_name), f"{module_name} defines no {name}"
    assert getattr(importlib.import_module(module_name), name).__module__ == module_name


def _kinds_by_source() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The exports whose source defines them with ``def``, then those it defines with ``class``."""
    last = {(m, n): _definitions(m)[n][-1] for m, n in EXPORTS}
    return ([pair for pair in EXPORTS if isinstance(last[pair], (ast.FunctionDef, ast.AsyncFunctionDef))],
            [pair for pair in EXPORTS if isinstance(last[pair], ast.ClassDef)])


# The parametrisations below, split by what each export is as it runs, not by its source's tree: every worker builds
# them as it collects, whichever tests it then runs (tests/test_collection_imports.py). Held to the sources' split below.
FUNCTIONS = [(m, n) for m, n in EXPORTS if not inspect.isclass(getattr(importlib.import_module(m), n))]
CLASSES = [(m, n) for m, n in EXPORTS if inspect.isclass(getattr(importlib.import_module(m), n))]


def test_the_exports_split_as_they_run_are_split_as_their_sources_define_them():
    assert (FUNCTIONS, CLASSES) == _kinds_by_source() and FUNCTIONS and CLASSES


@pytest.mark.parametrize(("module_name", "name"), FUNCTIONS, ids=[f"{module}:{name}" for module, name in FUNCTIONS])
def test_each_exported_function_takes_what_its_source_says(module_name, name):
    module = importlib.import_module(module_name)
    running = _running(getattr(module, name))
    spelt_out = "__signature__" in vars(getattr(module, name))
    for definition in _definitions(module_name)[name]:  # each overload too: a type checker reads those
        assert _same(_written(definition, module), running, spelt_out), f"{name}{inspect.signature(getattr(module, name))}"


@pytest.mark.parametrize(("module_name", "name"), CLASSES, ids=[f"{module}:{name}" for module, name in CLASSES])
def test_each_exported_class_has_the_methods_its_source_says(module_name, name):
    module, (node,) = importlib.import_module(module_name), _definitions(module_name)[name]
    cls = getattr(module, name)
    written = _methods(node, module_name)
    running = {key for key, value in vars(cls).items() if (not key.startswith("_") or key in ("__init__", "__call__"))
               and _written_in(_underlying(value), module)}
    assert sorted({method_name for method_name, _ in written}) == sorted(running)
    for method_name, function in written:
        method = _underlying(vars(cls)[method_name])
        assert _same(_written(function, importlib.import_module(method.__module__)), _running(method), "__signature__" in vars(method)), \
            f"{name}.{method_name}{inspect.signature(method)}"


@pytest.mark.parametrize(("module_name", "name"), CLASSES, ids=[f"{module}:{name}" for module, name in CLASSES])
def test_each_exported_dataclass_has_the_fields_and_frozen_flag_its_source_says(module_name, name):
    (node,), cls = _definitions(module_name)[name], getattr(importlib.import_module(module_name), name)
    options = _dataclass_options(node, cls)
    assert (options is not None) == ("__dataclass_fields__" in vars(cls))
    if options is not None:
        assert [field.name for field in dataclasses.fields(cls) if field.name in vars(cls).get("__annotations__", {})] == _dataclass_fields(node)
        assert cls.__dataclass_params__.frozen == options.get("frozen", False)


def test_the_stubs_are_packaged_with_the_type_marker():
    # PEP 561: without py.typed beside them, a type checker ignores an installed package's hints and stubs alike
    import tomllib

    root = Path(bio_mrc.__file__).parent
    package_data = tomllib.loads((root.parent / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    assert (root / "py.typed").is_file() and {"py.typed", "*.pyi"} <= set(package_data["bio_mrc"])
    assert "*.pyi" in package_data["bio_mrc.inference"] and (root / "inference" / "__init__.pyi").is_file()
