"""A model's freed blocks kept for reuse: glibc's malloc set to keep them where the command trains or answers a file, the
user's own malloc settings left standing, and the page faults a step's blocks cost counted with and without."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bio_mrc import freed_memory
from bio_mrc.cli import freed_blocks
from bio_mrc.cli.parser import build_parser
from bio_mrc.freed_memory import glibc_version, keep_freed_blocks, users_malloc_settings

ON_GLIBC = pytest.mark.skipif(glibc_version() is None, reason="glibc's malloc only")


@pytest.mark.parametrize(("environ", "named"), [
    ({}, []),
    ({"MALLOC_ARENA_MAX": "2", "PATH": "/bin"}, ["MALLOC_ARENA_MAX"]),
    ({"MALLOC_TRIM_THRESHOLD_": "0", "MALLOC_CONF": "background_thread:true"}, ["MALLOC_CONF", "MALLOC_TRIM_THRESHOLD_"]),
    ({"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=65536"}, ["GLIBC_TUNABLES"]),
    ({"GLIBC_TUNABLES": "glibc.rtld.nns=2"}, []),  # a tunable of another part of glibc
])
def test_the_users_malloc_settings_are_named(environ, named):
    assert users_malloc_settings(environ) == named


def test_a_users_malloc_setting_stands(monkeypatch):
    monkeypatch.setattr(freed_memory, "glibc_version", lambda: "glibc 2.36")
    assert keep_freed_blocks({"MALLOC_MMAP_THRESHOLD_": "131072"}) is False


def test_another_c_library_is_left_as_it_is(monkeypatch):
    monkeypatch.setattr(freed_memory, "glibc_version", lambda: None)
    assert keep_freed_blocks({}) is False


@pytest.mark.parametrize(("command", "marked"), [
    ("train", True), ("predict", True), ("tune", True), ("compare", True),
    ("extract", False), ("serve", False), ("evaluate", False), ("export", False), ("convert", False),
])
def test_the_commands_that_train_or_answer_a_file_keep_freed_blocks(command, marked):
    parser = build_parser(commands=(command,)).command_parsers()[command]
    assert bool(parser.get_default(freed_blocks.KEEP_FREED_BLOCKS)) is marked


def test_a_programs_own_torch_keeps_its_allocator(monkeypatch):
    calls = []
    monkeypatch.setattr(freed_blocks, "keep_freed_blocks", lambda: calls.append(1) or True)
    parser = build_parser(commands=("train",))
    args = parser.parse_args(["train", "--train", "t.json", "--output-dir", "out"])
    assert freed_blocks.keep_freed_blocks_for(args, torch_before=True) is False and calls == []
    assert freed_blocks.keep_freed_blocks_for(args, torch_before=False) is True and calls == [1]


# Eight 8 MiB blocks allocated, written and freed, round after round, as a training step's activations are: the minor
# page faults of rounds 2 to 12, in a fresh interpreter whose malloc is glibc's own or keeps freed blocks.
FAULTS_OF_ROUNDS = """
import json, resource, sys
from bio_mrc.freed_memory import keep_freed_blocks
kept = keep_freed_blocks() if sys.argv[1] == "keep" else False
def round_():
    blocks = [bytearray(8 << 20) for _ in range(8)]  # zero-filled: every page written
    del blocks
round_()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(11):
    round_()
print(json.dumps({"kept": kept, "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before}))
"""


@ON_GLIBC
def test_freed_blocks_serve_the_next_round_without_new_pages():
    def faults(how: str) -> dict:
        environment = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
        done = subprocess.run([sys.executable, "-c", FAULTS_OF_ROUNDS, how], capture_output=True, text=True, env=environment,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    pages_a_round = 8 * (8 << 20) // 4096
    kept, own = faults("keep"), faults("own")
    assert kept["kept"] is True and kept["faults"] < pages_a_round // 8  # the first round's pages serve every later one
    assert own["kept"] is False and own["faults"] > 5 * pages_a_round  # glibc's own: the heap's free top handed back
