"""progress_bars: the bars of transformers and datasets for a block, the caller's setting kept."""

import threading

import datasets.utils.logging as datasets_logging
import pytest
import transformers.utils.logging as transformers_logging

from bio_mrc.progress import progress_bars

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
