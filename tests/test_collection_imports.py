"""What collecting the suite imports: every pytest-xdist worker imports every test module, whichever tests it then
runs, so a library that takes seconds to import and that few tests use (the onnx extra, scikit-learn, a browser
driver, plotting) is imported by the tests that use it, never when a test module is (nor by ``pytest.importorskip``
at its top level: a ``skipif`` on ``importlib.util.find_spec`` skips without importing)."""

import ast
from pathlib import Path

TESTS = Path(__file__).parent
FEW_USE = {"onnx", "onnxruntime", "onnxscript", "sklearn", "selenium", "matplotlib", "tensorboard"}
IMPORTING_CALLS = ("importorskip", "import_module", "__import__")


class ImportsAtImport(ast.NodeVisitor):
    """(line, top-level package) of each import a module runs when it is imported: its statements, its class bodies,
    its decorators and default arguments, never a function's body (run when called)."""

    def __init__(self) -> None:
        self.found: list[tuple[int, str]] = []

    def visit_Import(self, node: ast.Import) -> None:
        self.found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module:
            self.found.append((node.lineno, node.module.split(".")[0]))

    def visit_Call(self, node: ast.Call) -> None:
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


def imports_at_import(source: str) -> list[tuple[int, str]]:
    visitor = ImportsAtImport()
    visitor.visit(ast.parse(source))
    return visitor.found


def test_no_test_module_imports_a_library_few_tests_use_when_it_is_imported():
    found = [f"{path.name}:{line}: {package}" for path in sorted(TESTS.glob("*.py"))
             for line, package in imports_at_import(path.read_text(encoding="utf-8")) if package in FEW_USE]
    assert found == []


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
