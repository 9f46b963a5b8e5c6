"""Where a command's wall time goes, by the package's own functions: a py-spy profile summed into a tree.

    pip install py-spy
    py-spy record -r 25 --idle --format raw -o compare.raw -- bio-mrc compare --config quick --output-dir runs/quick2
    python benchmarks/profile_time_tree.py --raw compare.raw [--rate 25] [--min-seconds 1.5] [--depth 9]

py-spy's raw format is one line per distinct stack, its frames from the outermost in, separated by ``;``, and the
number of samples that stack drew. Recorded with ``--idle`` every sample counts, waiting included, so samples over
the sampling rate are wall seconds. Only the main thread's stacks are summed (those whose outermost frame is the
most sampled one that is no thread's start). Each stack keeps the package's frames (a path holding ``bio_mrc/``)
and, in brackets, the first frame of another library each package frame calls: the tree then reads as the
package's own call structure with the library work it hands off. A node under ``--min-seconds`` is left out. The last
line printed is one JSON object: the tree's nodes as ``{"frame", "seconds", "children"}``.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from _common import existing_input, fail

PACKAGE_MARK = "bio_mrc/"
THREAD_STARTS = ("Thread._bootstrap", "_bootstrap")
Tree = dict[str, list]  # frame -> [samples, subtree]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--raw", required=True, help="a py-spy record --format raw file")
    parser.add_argument("--rate", type=float, default=25.0, help="the samples a second it was recorded at (py-spy -r)")
    parser.add_argument("--min-seconds", type=float, default=1.5, help="leave out nodes shorter than this")
    parser.add_argument("--depth", type=int, default=9, help="levels of the tree to print")
    args = parser.parse_args()
    if existing_input(args.raw) is None:
        fail(f"no such profile: {args.raw} (record one with py-spy record --idle --format raw -o FILE -- COMMAND)")
    if args.rate <= 0:
        fail(f"--rate is samples a second, above 0; got {args.rate}")
    return args


def read_stacks(text: str, source: str) -> Counter:
    """Each stack (a tuple of frames, outermost first) and its samples."""
    stacks: Counter = Counter()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        frames, _, count = line.rpartition(" ")
        if not count.isdigit():
            fail(f"line {number} is no py-spy raw stack ('frame;frame;... samples') (in {source})")
        if frames:  # a sample of a thread with no Python frame on its stack has none
            stacks[tuple(frames.split(";"))] += int(count)
    if not stacks:
        fail(f"no samples (in {source})")
    return stacks


def main_thread_root(stacks: Counter) -> str:
    """The most sampled outermost frame that is no thread's start."""
    roots: Counter = Counter()
    for frames, count in stacks.items():
        if not frames[0].startswith(THREAD_STARTS):
            roots[frames[0]] += count
    if not roots:
        fail("every stack starts in a thread other than the main one")
    return roots.most_common(1)[0][0]


def short_name(frame: str) -> str:
    """``function (path:line)`` as ``function (file)``: lines differ between samples of one call."""
    function, _, where = frame.partition(" (")
    path = where.rsplit(":", 1)[0].rstrip(")")
    return f"{function} ({path.split(PACKAGE_MARK)[-1] if PACKAGE_MARK in path else Path(path).name})"


def package_view(frames: tuple[str, ...]) -> list[str]:
    """The package's frames, each followed by the first other frame it calls, bracketed; the root always kept."""
    kept, after_package = [], True
    for frame in frames:
        in_package = PACKAGE_MARK in frame
        if in_package or after_package:
            kept.append(short_name(frame) if in_package or not kept else f"[{short_name(frame)}]")
        after_package = in_package
    return kept


def time_tree(stacks: Counter, root: str) -> Tree:
    tree: Tree = {}
    for frames, count in stacks.items():
        if frames[0] != root:
            continue
        node = tree
        for frame in package_view(frames):
            entry = node.setdefault(frame, [0, {}])
            entry[0] += count
            node = entry[1]
    return tree


def as_json(tree: Tree, rate: float, min_samples: float) -> list[dict[str, Any]]:
    return [{"frame": frame, "seconds": round(samples / rate, 2), "children": as_json(children, rate, min_samples)}
            for frame, (samples, children) in sorted(tree.items(), key=lambda item: -item[1][0]) if samples >= min_samples]


def print_tree(nodes: list[dict[str, Any]], depth: int, indent: int = 0) -> None:
    for node in nodes:
        print(f"{'  ' * indent}{node['seconds']:8.1f} s  {node['frame']}")
        if depth > 1:
            print_tree(node["children"], depth - 1, indent + 1)


def main(args: argparse.Namespace) -> None:
    stacks = read_stacks(Path(args.raw).read_text(encoding="utf-8"), args.raw)
    root = main_thread_root(stacks)
    nodes = as_json(time_tree(stacks, root), args.rate, args.min_seconds * args.rate)
    print(f"profile: {args.raw}; main thread {root}; {sum(stacks.values()) / args.rate:.1f} s of samples in all threads")
    print_tree(nodes, args.depth)
    print(json.dumps({"benchmark": "profile_time_tree", "profile": args.raw, "rate": args.rate, "tree": nodes}))


if __name__ == "__main__":
    main(parse_args())
