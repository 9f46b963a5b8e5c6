"""What collecting the suite imports: every pytest-xdist worker imports every test module, whichever tests it then
runs, so a library that takes seconds to import and that few tests use (the onnx extra, scikit-learn, a browser
driver, plotting) is imported by the tests that use it, never when a test module is (nor by ``pytest.importorskip``
at its top level: a ``skipif`` on ``importlib.util.find_spec`` skips without importing). Nor does a test module parse
Python sources when it is imported (a parametrisation read from the package's trees): a test parses them as it runs,
in the worker that runs it."""

import ast
from pathlib import Path

from .read_once import parsed

TESTS = Path(__file__).parent
FEW_USE = {"onnx", "onnxruntime", "onnxscript", "sklearn", "selenium", "matplotlib", "tensorboard"}
IMPORTING_CALLS = ("importorskip", "import_module", "__import__")


class ImportsAtImport(ast.NodeVisitor):
    """(line, top-level package) of each import a module runs when it is imported: its statements, its class bodies,
    its decorators and default arguments, never a function's body (run when called); and (line, name) of each call
    it makes then (``calls``: the callee as written, ``ast.parse``, ``_warning_classes``)."""

    def __init__(self) -> None:
        self.found: list[tuple[int, str]] = []
        self.calls: list[tuple[int, str]] = []

    def visit_Import(self, node: ast.Import) -> None:
        self.found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module:
            self.found.append((node.lineno, node.module.split(".")[0]))

    def visit_Call(self, node: ast.Call) -> None:
        self.calls.append((node.lineno, ast.unparse(node.func)))
        named = node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
        if named and ast.unparse(node.func).endswith(IMPORTING_CALLS):
            self.found.append((node.lineno, node.args[0].value.split(".")[0]))
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for part in (*node.decorator_list, node.args):
            self.visit(part)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.visit(node.args)


def at_import(tree: ast.Module) -> ImportsAtImport:
    visitor = ImportsAtImport()
    visitor.visit(tree)
    return visitor


def imports_at_import(source: str) -> list[tuple[int, str]]:
    return at_import(ast.parse(source)).found


def test_no_test_module_imports_a_library_few_tests_use_when_it_is_imported():
    found = [f"{path.name}:{line}: {package}" for path in sorted(TESTS.glob("*.py"))
             for line, package in at_import(parsed(path)).found if package in FEW_USE]
    assert found == []


READERS = {"parsed", "walked", "parsed_source", "walked_source"}  # tests/read_once.py's


def parses(name: str) -> bool:
    """Whether a call of ``name`` parses Python: ``ast.parse`` or a reader of tests/read_once.py."""
    return name == "ast.parse" or name.rsplit(".", 1)[-1] in READERS


def parses_at_import(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, callee) of each call a module makes when it is imported that parses Python: ``ast.parse``, a reader of
    tests/read_once.py, or a function of the module that calls one, itself or through another of its functions."""
    bodies = {node.name: [ast.unparse(call.func) for call in ast.walk(node) if isinstance(call, ast.Call)]
              for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    parsing = {name for name in bodies if any(map(parses, bodies[name]))}
    while grown := {name for name in bodies if name not in parsing and parsing.intersection(bodies[name])}:
        parsing |= grown
    return [(line, name) for line, name in at_import(tree).calls if parses(name) or name in parsing]


def test_no_test_module_parses_python_when_it_is_imported():
    """The warning classes a test is parametrised over were read from the package's trees as the module was imported:
    every worker parsed a sixth of the package as it collected, whichever tests it then ran."""
    found = [f"{path.name}:{line}: {name}" for path in sorted(TESTS.glob("*.py"))
             for line, name in parses_at_import(parsed(path)) if (path.name, name) not in PARSED_AT_IMPORT]
    assert found == []


# The package's two stubs (a few lines of imports), read for the names they export.
PARSED_AT_IMPORT = {("test_type_stubs.py", "_stub_imports")}


def test_the_checker_sees_the_parses_a_module_runs_when_imported_and_no_others():
    probe = '''
import ast
TREE = ast.parse("x = 1")
def classes():
    return [node for node in walked_source(SOURCE)]
def names():
    return [node.name for node in classes()]
def later():
    return parsed(PATH)
def unrelated():
    return json.loads("{}")
@pytest.mark.parametrize("name", names())
def test_x(name, tree=read_once.parsed_source("y = 2")):
    assert later() and ast.parse("z = 3")
CASES = unrelated()
'''
    assert parses_at_import(ast.parse(probe)) == [(3, "ast.parse"), (12, "names"), (13, "read_once.parsed_source")]


def test_the_checker_sees_the_imports_a_module_runs_and_no_others():
    probe = '''
import os.path
from . import conftest
from sklearn.linear_model import LogisticRegression
if True:
    pytest.importorskip("onnx")
try:
    ort = importlib.import_module("onnxruntime.capi")
except ImportError:
    pass

class Suite:
    import matplotlib

@pytest.mark.parametrize("x", [__import__("selenium")])
def test_x(x, y=pytest.importorskip("tensorboard")):
    import onnxscript
later = lambda: pytest.importorskip("torch")
'''
    assert imports_at_import(probe) == [(2, "os"), (4, "sklearn"), (6, "onnx"), (8, "onnxruntime"), (13, "matplotlib"),
                                        (15, "selenium"), (16, "tensorboard")]
