"""progress_bars: the bars of transformers and datasets for a block, the caller's setting kept."""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import datasets.utils.logging as datasets_logging
import pytest
import transformers.utils.logging as transformers_logging

from bio_mrc.progress import progress_bars

ROOT = Path(__file__).resolve().parents[1]
SWITCHES = (datasets_logging, transformers_logging)


@pytest.fixture
def bars_on():
    before = [switch.is_progress_bar_enabled() for switch in SWITCHES]
    for switch in SWITCHES:
        switch.enable_progress_bar()
    yield
    for switch, was in zip(SWITCHES, before):
        switch.enable_progress_bar() if was else switch.disable_progress_bar()


def shown() -> list[bool]:
    return [switch.is_progress_bar_enabled() for switch in SWITCHES]


def test_nested_blocks_restore_the_outer_setting(bars_on):
    with progress_bars(False):
        assert shown() == [False, False]
        with progress_bars(True):
            assert shown() == [True, True]
        assert shown() == [False, False]
        with progress_bars(False):  # a block asking what the open one asked ends as its own
            assert shown() == [False, False]
        assert shown() == [False, False]
    assert shown() == [True, True]


def test_quiet_calls_from_two_threads_leave_the_programs_bars_on(bars_on):
    # One thread's block opens, then another's, then the first ends before the second: each saving what it found
    # and restoring it would leave the bars off for good (the second found them off inside the first's block).
    first_open, second_open, first_done = threading.Event(), threading.Event(), threading.Event()

    def first():
        with progress_bars(False):
            first_open.set()
            second_open.wait()
        first_done.set()

    thread = threading.Thread(target=first)
    thread.start()
    first_open.wait()
    with progress_bars(False):
        second_open.set()
        first_done.wait()
        assert shown() == [False, False]  # the second block is still open and quiet
    thread.join()
    assert shown() == [True, True]


QUIET_BEFORE_DATASETS = """
import json, sys
from bio_mrc.progress import progress_bars
import transformers.utils.logging as transformers_logging

transformers_logging.enable_progress_bar()
seen = {}
with progress_bars(False):  # a block before datasets is imported: transformers' bar alone, datasets left unimported
    seen["imported by the block"] = "datasets" in sys.modules
    seen["transformers in the block"] = transformers_logging.is_progress_bar_enabled()
    import datasets.utils.logging as datasets_logging  # imported inside the block: its own setting, kept at the end
    datasets_logging.enable_progress_bar()
seen["datasets after the block"] = datasets_logging.is_progress_bar_enabled()
with progress_bars(False):  # once imported, every block sets its bar too
    seen["datasets in a later block"] = datasets_logging.is_progress_bar_enabled()
seen["both after it"] = [datasets_logging.is_progress_bar_enabled(), transformers_logging.is_progress_bar_enabled()]
print(json.dumps(seen))
"""


def test_a_block_sets_the_bars_of_the_libraries_imported_and_imports_no_datasets_for_its_switch():
    """An answer maps no dataset: a quiet block around its loading must not import datasets (pandas and more, a
    large share of a first answer's imports) to switch off a bar nothing draws."""
    done = subprocess.run(
        [sys.executable, "-c", QUIET_BEFORE_DATASETS], capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {
        "imported by the block": False,
        "transformers in the block": False,
        "datasets after the block": True,
        "datasets in a later block": False,
        "both after it": [True, True],
    }
