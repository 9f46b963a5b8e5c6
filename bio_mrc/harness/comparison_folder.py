"""A comparison's output folder: the entries a comparison writes there, the mark that says a comparison wrote it, and
the refusal of a folder of other files (a project, the home folder), checked before torch loads."""

from __future__ import annotations

from pathlib import Path

from ..errors import OutputError, argument
from ..io import SETS_LOCK, atomic_write_json, owned_path, set_entries

HARNESS_FOLDERS = ("models", "cells", "predictions")  # under the output folder: the harness's own work
REPORT_SET = "report"  # report.json, report.md, report.html and the plots: replaced as one set
REPORT_FILES = ("report.json", "report.md", "report.html")  # the set's files of every comparison (the plots vary)
REPORT_LIST = set_entries(REPORT_SET)[2]  # the report set's list of its files in place
COMPARISON_MARK = ".bio_mrc-comparison.json"  # written where a comparison first writes: the folder is a comparison's
# What a comparison writes at the folder's top, whatever its config (the plots are listed in the report's list).
COMPARISON_ENTRIES = frozenset({*HARNESS_FOLDERS, *REPORT_FILES, *set_entries(REPORT_SET), SETS_LOCK, COMPARISON_MARK})
SHOWN_ENTRIES = 3


def is_comparison_folder(output_dir: Path) -> bool:
    """Whether a comparison wrote in ``output_dir``: it holds the mark, or the list of a report's files (a report
    written before comparisons marked their folders)."""
    return any((output_dir / name).is_file() and not (output_dir / name).is_symlink()
               for name in (COMPARISON_MARK, REPORT_LIST))


def check_comparison_folder(output_dir: str | Path) -> None:
    """Before any work: ``output_dir`` is new, empty, an earlier comparison's, or holds nothing but a comparison's own
    entries (a run cut short before it marked the folder); a folder of other files is refused, as ``train``,
    ``export`` and ``convert`` refuse one, since the comparison's folders and report would go in among them."""
    output_dir = Path(output_dir)
    if not output_dir.is_dir() or is_comparison_folder(output_dir):
        return
    foreign = sorted(entry.name for entry in output_dir.iterdir() if entry.name not in COMPARISON_ENTRIES)
    if not foreign:
        return
    more = len(foreign) - SHOWN_ENTRIES
    shown = ", ".join(foreign[:SHOWN_ENTRIES]) + (f" and {more} more" if more > 0 else "")
    raise OutputError(f"the folder holds entries no comparison wrote ({shown}) and is no earlier comparison's output folder "
                      f"(one holding {COMPARISON_MARK}, or a report's {REPORT_LIST}): give "
                      f"{argument('output_dir')} a new or empty folder, or an earlier comparison's to resume it or add runs "
                      "to it", str(output_dir))


def mark_comparison_folder(output_dir: Path) -> None:
    """Make ``output_dir`` (checked: :func:`check_comparison_folder`) and mark it as a comparison's, so that a later
    comparison resumes in it whatever else the user keeps there."""
    output_dir.mkdir(parents=True, exist_ok=True)
    mark = owned_path(output_dir / COMPARISON_MARK, output_dir)  # never written through a link
    if not mark.exists():
        atomic_write_json(mark, {"written_by": "bio-mrc compare"})
