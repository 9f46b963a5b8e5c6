"""The tests' reads shared by a worker (tests/read_once.py): a file read again while it holds the same text is the same
object, and a file a test rewrites, even to the same size and modification time, is read again."""

import ast
import os
from pathlib import Path

from .read_once import parsed, parsed_source, walked, walked_source


def _rewritten(path: Path, text: str) -> None:
    """``path`` rewritten to ``text`` with its earlier modification time kept."""
    stat = path.stat()
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_a_source_is_parsed_once_for_each_text_it_holds(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("first = 1\n", encoding="utf-8")
    tree = parsed(source)
    assert parsed(source) is tree and parsed_source("first = 1\n") is tree
    assert ast.dump(tree) == ast.dump(ast.parse("first = 1\n"))
    _rewritten(source, "again = 2\n")  # the same size and time
    assert [node.targets[0].id for node in parsed(source).body] == ["again"]


def test_the_nodes_of_a_source_are_its_trees_nodes_in_walk_order(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f(x):\n    return g(x) + 1\n", encoding="utf-8")
    nodes = walked(source)
    assert walked(source) is nodes and walked_source(source.read_text(encoding="utf-8")) is nodes
    assert [id(node) for node in nodes] == [id(node) for node in ast.walk(parsed(source))]
    assert [type(node).__name__ for node in nodes][:4] == ["Module", "FunctionDef", "arguments", "Return"]
    _rewritten(source, "def h(x):\n    return k(x) + 1\n")
    assert [node.name for node in walked(source) if isinstance(node, ast.FunctionDef)] == ["h"]
