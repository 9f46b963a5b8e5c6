"""The order pytest-xdist hands the test files to its workers: the files of most tests first, the largest file whose
first test needs the shared trained model before them all (tests/conftest.py, ``handing_out_order``)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from types import SimpleNamespace

from .conftest import handing_out_order


def items(*tests: tuple[str, bool]) -> list[SimpleNamespace]:
    """Collected items as the order reads them: (node id, whether the test needs ``trained_dir``)."""
    return [SimpleNamespace(nodeid=nodeid, fixturenames=["tmp_path", "trained_dir"] if needs else ["tmp_path"]) for nodeid, needs in tests]


def order(collected: list[SimpleNamespace]) -> list[str]:
    return [item.nodeid for item in handing_out_order(collected)]


def test_the_largest_file_whose_first_test_needs_the_trained_model_goes_first_then_files_of_most_tests():
    collected = items(
        ("tests/test_a.py::one", True),
        ("tests/test_b.py::one", False),
        ("tests/test_b.py::two", False),
        ("tests/test_b.py::three", False),
        ("tests/test_c.py::one", True),
        ("tests/test_c.py::two", False),
        ("tests/test_d.py::one", False),
        ("tests/test_d.py::two", True),
    )
    assert order(collected) == [
        "tests/test_c.py::one",
        "tests/test_c.py::two",  # its first test needs it; 2 tests
        "tests/test_b.py::one",
        "tests/test_b.py::two",
        "tests/test_b.py::three",
        "tests/test_d.py::one",
        "tests/test_d.py::two",  # needs it after a test of its own
        "tests/test_a.py::one",
    ]


def test_without_the_trained_model_the_files_of_most_tests_go_first_in_their_collected_order_where_alike():
    collected = items(
        ("tests/test_a.py::one", False),
        ("tests/test_b.py::one", False),
        ("tests/test_b.py::two[x]", False),
        ("tests/test_c.py::one", False),
        ("tests/test_b.py::two[y]", False),
    )
    assert order(collected) == ["tests/test_b.py::one", "tests/test_b.py::two[x]", "tests/test_b.py::two[y]", "tests/test_a.py::one", "tests/test_c.py::one"]


def test_pytest_xdist_hands_the_files_out_in_that_order():
    """pytest-xdist reorders the files by their count of tests unless told not to, which would undo the order."""
    options = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    addopts = options["tool"]["pytest"]["ini_options"]["addopts"].split()
    assert "--no-loadscope-reorder" in addopts and addopts[addopts.index("--dist") + 1] == "loadfile"
