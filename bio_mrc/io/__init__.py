"""Writing files safely, and reading files another process may write, one module a job, each importing only those
listed before it:

* :mod:`.printable`: JSON and text for a terminal, every control character escaped (:func:`printable_json`,
  :func:`printable_line`);
* :mod:`.paths`: output paths checked before any work, names libraries reach as Python does, and whether a name
  is a glob pattern or a file's own (and a pattern's folders there by their very names);
* :mod:`.write_errors`: a full disk or a refused write under a folder as one line naming it (:func:`writes_named`);
* :mod:`.owned_paths`: the one helper every delete and rename goes through (inside the output folder, never through a
  symbolic link);
* :mod:`.locks`: one process at a time in a file or folder, and Ctrl-C held past writes that agree only together;
* :mod:`.atomic`: atomic writes, a file either keeping its old content or having its complete new content;
* :mod:`.file_sets`: sets of files that replace each other together (:func:`replaced_together`);
* :mod:`.reading`: files read in one state (:func:`read_in_one_state`);
* :mod:`.output_folders`: output folders staged and moved in whole, kept apart from the inputs and models read.

Every public name is importable from ``bio_mrc.io`` itself, and so is :class:`~bio_mrc.errors.OutputError`, which
they raise.
"""

from ..errors import OutputError
from .printable import json_with_controls_escaped, printable_json, printable_line
from .paths import (
    NAME_MAX, broken_link, check_file_target, check_folder_target, check_library_path, check_name_lengths,
    check_writable_folder, folders_escaped, home_expanded, names_a_pattern, non_utf8_byte, special_file_kind
)
from .write_errors import TORCH_WRITE_FAILURES, file_size_limit, is_write_failure, writes_named
from .owned_paths import UnsafePathError, open_no_follow, owned_path, plain_name, remove_file, remove_tree, replace_file
from .locks import (
    FOLDER_BUSY, FolderBusyError, signals_held, sole_process_in, sole_writer, updated_alone, written_alone
)
from .atomic import (
    atomic_move_files, atomic_write_bytes, atomic_write_json, atomic_write_text, atomic_writer, atomic_writers,
    fsync_dir, is_temporary_of, remove_temporaries_of, replace_all, usual_file_mode
)
from .file_sets import (
    SETS_LOCK, SET_MANIFEST, check_set_files, file_sha256, finish_file_set, note_set_files, replaced_together,
    set_entries
)
from .reading import READ_TRIES, files_state, read_in_one_state
from .output_folders import check_folder_free, check_outputs_apart, prepare_output, staged_folder

__all__ = [
    "FOLDER_BUSY", "FolderBusyError", "NAME_MAX", "OutputError", "READ_TRIES", "SETS_LOCK", "SET_MANIFEST", "TORCH_WRITE_FAILURES",
    "UnsafePathError", "atomic_move_files", "atomic_write_bytes", "atomic_write_json", "atomic_write_text",
    "atomic_writer", "atomic_writers", "broken_link", "check_file_target", "check_folder_free", "check_folder_target",
    "check_library_path", "check_name_lengths", "check_outputs_apart", "check_set_files", "check_writable_folder",
    "file_sha256", "file_size_limit", "files_state", "folders_escaped", "finish_file_set", "fsync_dir", "home_expanded", "is_temporary_of", "is_write_failure",
    "json_with_controls_escaped", "names_a_pattern", "non_utf8_byte", "note_set_files", "open_no_follow", "owned_path", "plain_name",
    "prepare_output", "printable_json", "printable_line", "read_in_one_state", "remove_file", "remove_temporaries_of",
    "remove_tree", "replace_all", "replace_file", "replaced_together", "set_entries", "signals_held", "sole_process_in",
    "sole_writer", "special_file_kind", "staged_folder", "updated_alone", "usual_file_mode", "writes_named",
    "written_alone"
]
