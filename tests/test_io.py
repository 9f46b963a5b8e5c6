"""Atomic writes: a file has its old content or its complete new content, and no temporary file stays behind."""

import errno
import json
import os
import stat
import sys

import pytest

from bio_mrc import io
from bio_mrc.io import atomic_move_files, atomic_write_json, atomic_write_text

from .conftest import ascii_locale_run
from .read_once import walked


def test_write_text_creates_and_replaces(tmp_path):
    path = tmp_path / "out.txt"
    assert atomic_write_text(str(path), "first") == path
    assert atomic_write_text(path, "zweite Fassung é", encoding="latin-1") == path
    assert path.read_text(encoding="latin-1") == "zweite Fassung é"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_new_files_get_the_umask_permissions_not_tempfiles_0600(tmp_path):
    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "out.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "out.txt").stat().st_mode) == 0o644


def test_a_failed_rename_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "report.json"
    path.write_text("old")

    def crash(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr(io.atomic.os, "replace", crash)
    with pytest.raises(OSError, match="disk gone"):
        atomic_write_text(path, "new")
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["report.json"]  # the temporary file is removed too


@pytest.mark.parametrize("code", [errno.EACCES, errno.EROFS, errno.EIO])
def test_a_write_the_system_refuses_midway_is_one_error_naming_the_folder_and_keeps_the_old_file(tmp_path, monkeypatch, code):
    path = tmp_path / "report.json"
    path.write_text("old")

    def refused(source, target):  # the folder became read-only (or its device failed) after the checks
        raise OSError(code, os.strerror(code), str(source), None, str(target))

    monkeypatch.setattr(io.atomic.os, "replace", refused)
    with pytest.raises(io.OutputError) as raised:
        atomic_write_text(path, "new")
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"could not write there: [Errno {code}] {os.strerror(code)}: ")
    assert message.endswith(f"(in {tmp_path})")
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["report.json"]


def test_a_refused_read_of_a_file_outside_the_folder_stays_what_it_is(tmp_path, monkeypatch):
    elsewhere = tmp_path.parent / "data.json"  # an input read while the output is written: not the output's fault
    with pytest.raises(PermissionError):
        with io.writes_named(tmp_path / "out"):
            raise PermissionError(errno.EACCES, "Permission denied", str(elsewhere))


def test_a_failed_write_leaves_no_file(tmp_path):
    with pytest.raises(UnicodeEncodeError):
        atomic_write_text(tmp_path / "out.txt", "snowman ☃", encoding="ascii")
    assert os.listdir(tmp_path) == []


def test_json_that_does_not_serialise_writes_nothing(tmp_path):
    path = tmp_path / "record.json"
    atomic_write_json(path, {"a": [1, 2]}, indent=2)
    assert path.read_text() == json.dumps({"a": [1, 2]}, indent=2)
    with pytest.raises(TypeError, match="Object of type object is not JSON serializable"):
        atomic_write_json(path, {"a": object()})
    assert json.loads(path.read_text()) == {"a": [1, 2]}
    assert os.listdir(tmp_path) == ["record.json"]


def test_move_files_replaces_the_targets(tmp_path):
    source, target = tmp_path / "staging", tmp_path / "model"
    source.mkdir()
    target.mkdir()
    (source / "a.bin").write_bytes(b"new a")
    (source / "b.json").write_text("{}")
    (target / "a.bin").write_bytes(b"old a")
    (target / "keep.txt").write_text("other")
    assert atomic_move_files(source, target) == [target / "a.bin", target / "b.json"]
    assert (target / "a.bin").read_bytes() == b"new a"
    assert sorted(os.listdir(target)) == ["a.bin", "b.json", "keep.txt"]
    assert os.listdir(source) == []


def test_move_files_refuses_folders(tmp_path):
    (tmp_path / "staging" / "sub").mkdir(parents=True)
    with pytest.raises(IsADirectoryError):
        atomic_move_files(tmp_path / "staging", tmp_path)


def _old_and_new(tmp_path, names=("a.bin", "b.json", "c.txt")):
    source, target = tmp_path / "staging", tmp_path / "model"
    source.mkdir()
    target.mkdir()
    for name in names:
        (source / name).write_text(f"new {name}")
        (target / name).write_text(f"old {name}")
    return source, target, names


def _on_call(monkeypatch, k, act):
    """``os.replace`` that runs ``act`` on its ``k``-th call (1-based)."""
    real, calls = os.replace, []

    def replace(source, target):
        calls.append(source)
        if len(calls) == k:
            act()
        return real(source, target)

    monkeypatch.setattr(io.atomic.os, "replace", replace)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_a_ctrl_c_between_two_moves_takes_effect_once_every_file_is_in(tmp_path, monkeypatch, k, sigint_as_in_a_terminal):
    """A Ctrl-C between two renames left new files beside old ones (new weights with an old config.json)."""
    import signal

    source, target, names = _old_and_new(tmp_path)
    _on_call(monkeypatch, k, lambda: signal.raise_signal(signal.SIGINT))
    with pytest.raises(KeyboardInterrupt):
        atomic_move_files(source, target)
    assert [(target / name).read_text() for name in names] == [f"new {name}" for name in names]


@pytest.mark.parametrize("k", [1, 2, 3])
def test_a_failed_move_leaves_the_old_files_or_says_they_are_mixed(tmp_path, monkeypatch, k):
    source, target, names = _old_and_new(tmp_path)

    def full_disk():
        raise OSError(errno.ENOSPC, "No space left on device")

    _on_call(monkeypatch, k, full_disk)
    with pytest.raises(OSError) as raised:
        atomic_move_files(source, target)
    assert [(target / name).read_text()[:3] for name in names] == ["new"] * (k - 1) + ["old"] * (4 - k)
    if k == 1:
        assert raised.value.errno == errno.ENOSPC
    else:
        assert isinstance(raised.value, io.OutputError)
        assert str(raised.value) == (f"{k - 1} of the 3 new files replaced old ones before [Errno 28] No space left on "
                                     f"device: the files there do not agree (new beside old); write them again (in {target})")


def test_signals_are_held_only_on_the_main_thread(monkeypatch, sigint_as_in_a_terminal):
    import signal
    import threading

    seen = []

    def held():
        with io.signals_held():
            seen.append(signal.getsignal(signal.SIGINT))

    thread = threading.Thread(target=held)
    thread.start()
    thread.join()
    held()
    assert seen[0] is signal.getsignal(signal.SIGINT) and seen[1] is not seen[0]


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("stop", ["ctrl-c", "full disk"])
def test_files_written_together_are_all_new_or_all_old(tmp_path, monkeypatch, k, stop, sigint_as_in_a_terminal):
    """A failure while the third of three files was written left the first two new beside an old one."""
    import signal

    paths = [tmp_path / name for name in ("p.json", "p.nbest.json", "p.na_probs.json")]
    for path in paths:
        path.write_text("old")
    if stop == "ctrl-c":
        _on_call(monkeypatch, k, lambda: signal.raise_signal(signal.SIGINT))
        with pytest.raises(KeyboardInterrupt), io.atomic_writers(paths) as handles:
            for handle in handles:
                handle.write("new")
        assert [path.read_text() for path in paths] == ["new"] * 3
    else:
        with pytest.raises(io.OutputError), io.atomic_writers(paths) as handles:
            for i, handle in enumerate(handles, 1):
                if i == k:
                    raise OSError(errno.ENOSPC, "No space left on device")
                handle.write("new")
        assert [path.read_text() for path in paths] == ["old"] * 3
    assert sorted(os.listdir(tmp_path)) == sorted(path.name for path in paths)


def _write_set(folder, files):
    with io.replaced_together(folder, "report") as staging:
        for name, text in files.items():
            (staging / name).write_text(text)


def _visible(folder):
    return {p.name: p.read_text() for p in folder.iterdir() if not p.name.startswith(".")}


def test_a_file_set_replaces_the_old_set_and_removes_only_its_own_files_the_new_set_lacks(tmp_path):
    (tmp_path / "mine.png").write_text("the user's")
    _write_set(tmp_path, {"report.md": "old", "report.json": "old", "calibration.png": "old"})
    _write_set(tmp_path, {"report.md": "new", "report.json": "new"})
    assert _visible(tmp_path) == {"report.md": "new", "report.json": "new", "mine.png": "the user's"}
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == [".report-files.json", ".sets.lock"]


def test_a_file_set_is_written_without_python_3_11s_file_digest(tmp_path, monkeypatch):
    import hashlib

    monkeypatch.delattr(hashlib, "file_digest", raising=False)  # as on Python 3.10, which pyproject.toml allows
    _write_set(tmp_path, {"report.md": "abc"})
    listed = json.loads((tmp_path / ".report-files.json").read_text())
    assert listed == {"report.md": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}  # SHA-256 of "abc" (FIPS 180-2)


def test_a_crash_while_writing_a_set_leaves_the_old_set(tmp_path):
    _write_set(tmp_path, {"report.md": "old", "report.html": "old"})
    with pytest.raises(RuntimeError):
        with io.replaced_together(tmp_path, "report") as staging:
            (staging / "report.md").write_text("new")
            raise RuntimeError("crash before report.html")
    assert _visible(tmp_path) == {"report.md": "old", "report.html": "old"}
    assert not (tmp_path / ".report-writing").exists()


def test_a_kill_while_moving_a_complete_set_in_is_finished_by_the_next_writer(tmp_path, monkeypatch):
    _write_set(tmp_path, {"a.md": "old", "b.md": "old", "c.png": "old"})
    moved = []
    real_replace = os.replace

    def dies_after_one_file(source, target):
        if str(source).endswith((".md", ".png")) and ".report-complete" in str(source):
            if moved:
                raise KeyboardInterrupt  # a kill between two renames
            moved.append(target)
        return real_replace(source, target)

    monkeypatch.setattr(io.atomic.os, "replace", dies_after_one_file)
    with pytest.raises(KeyboardInterrupt):
        _write_set(tmp_path, {"a.md": "new", "b.md": "new"})
    monkeypatch.setattr(io.atomic.os, "replace", real_replace)
    assert _visible(tmp_path)["a.md"] == "new" and _visible(tmp_path)["b.md"] == "old"  # mixed until finished
    io.finish_file_set(tmp_path, "report")
    assert _visible(tmp_path) == {"a.md": "new", "b.md": "new"}
    io.finish_file_set(tmp_path, "report")  # finishing again changes nothing
    assert _visible(tmp_path) == {"a.md": "new", "b.md": "new"}


def test_printable_json_escapes_every_control_character_and_keeps_the_value():
    value = {"id": "q\x1b[2J\u009b2J\x7f", "answer": "café 東京\u2028x"}
    text = io.printable_json(value)
    assert text == '{"id": "q\\u001b[2J\\u009b2J\\u007f", "answer": "café 東京\\u2028x"}'
    assert json.loads(text) == value


def test_json_written_keeps_no_raw_line_or_paragraph_separator(tmp_path):
    # str.splitlines() ends a line at U+2028 and U+2029: a JSON Lines record holding one would read as two lines
    value = {"id": "q\u2028", "answer": "a\u2029b", "context": "café"}
    assert io.printable_json(value) == '{"id": "q\\u2028", "answer": "a\\u2029b", "context": "café"}'
    io.atomic_write_json(tmp_path / "v.json", value, ensure_ascii=False)
    text = (tmp_path / "v.json").read_text(encoding="utf-8")
    assert text == '{"id": "q\\u2028", "answer": "a\\u2029b", "context": "café"}' and json.loads(text) == value
    assert len(text.splitlines()) == 1


def test_printable_line_writes_control_characters_as_python_does_and_keeps_the_rest():
    assert io.printable_line("in dev\x1b[2J\n\u009b.json\tcafé") == "in dev\\x1b[2J\\n\\x9b.json\tcafé"


def test_bidirectional_overrides_are_escaped_in_a_printed_line_and_in_printed_json():
    # "evil\u202egnp.exe" shows as "evilexe.png" on a terminal that reorders right-to-left text; an isolate alike
    assert io.printable_line("evil\u202egnp.exe \u2067x\u2069 שלום") == "evil\\u202egnp.exe \\u2067x\\u2069 שלום"
    value = {"answer": "evil\u202egnp.exe", "id": "q\u202a"}
    text = io.printable_json(value)
    assert text == '{"answer": "evil\\u202egnp.exe", "id": "q\\u202a"}' and json.loads(text) == value


def test_without_flock_the_locks_run_their_blocks_unguarded(tmp_path, monkeypatch):
    # Windows has no fcntl: each lock runs its block, none refuses or fails
    monkeypatch.setitem(sys.modules, "fcntl", None)  # import fcntl now raises ImportError
    ran = []
    with io.sole_writer(tmp_path / "answers.jsonl", "answers"), io.sole_writer(tmp_path / "answers.jsonl", "answers"):
        ran.append("writer")
    with io.sole_process_in(tmp_path / "model", "busy"), io.sole_process_in(tmp_path / "model", "busy"):
        ran.append("folder")
    with io.updated_alone(tmp_path / "cache.json"):
        ran.append("update")
    assert ran == ["writer", "folder", "update"]


def test_with_flock_a_second_writer_is_refused(tmp_path):
    pytest.importorskip("fcntl")
    with io.sole_writer(tmp_path / "answers.jsonl", "answers"), pytest.raises(io.OutputError, match="another process"):
        with io.sole_writer(tmp_path / "answers.jsonl", "answers"):
            pass


def _text_opens_without_an_encoding(root):
    """``file:line`` of each call in ``root``'s sources that reads or writes text in the locale's encoding: a
    ``read_text``/``write_text``, or an ``open`` in a text mode, naming no ``encoding`` (cp1252 on Windows)."""
    import ast
    from pathlib import Path

    found = []
    for file in sorted(Path(root).rglob("*.py")):
        for node in walked(file):
            if not isinstance(node, ast.Call) or any(keyword.arg == "encoding" for keyword in node.keywords):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            owner = getattr(func.value, "id", None) if isinstance(func, ast.Attribute) else None
            modes = [keyword.value for keyword in node.keywords if keyword.arg == "mode"] + node.args[1:2]
            mode = modes[0].value if modes and isinstance(modes[0], ast.Constant) else "r" if not modes else "b"
            text_open = name in ("open", "fdopen") and owner not in ("os", "Image") and "b" not in mode
            if name in ("read_text", "write_text") or text_open:
                found.append(f"{file.relative_to(root)}:{node.lineno}")
    return found


def test_every_text_file_the_package_reads_or_writes_names_its_encoding():
    from pathlib import Path

    import bio_mrc

    assert _text_opens_without_an_encoding(Path(bio_mrc.__file__).parent) == []


def test_the_encoding_check_finds_text_opens_in_the_locales_encoding(tmp_path):
    (tmp_path / "m.py").write_text('import os\nfrom pathlib import Path\nPath("a").read_text()\nopen("b", "w")\n'
                                   'open("c")\nopen("d", "rb")\nopen("e", encoding="utf-8")\nos.open("f", 0)\n',
                                   encoding="utf-8")
    assert _text_opens_without_an_encoding(tmp_path) == ["m.py:3", "m.py:4", "m.py:5"]


def test_a_name_libraries_spell_otherwise_is_refused_under_an_ascii_locale(tmp_path):
    """tokenizers and ONNX Runtime take a file name as UTF-8 text: under LC_ALL=C a non-ASCII name, which reaches
    Python as surrogates, is refused in one line saying what to set; an ASCII one passes."""
    code = ("import sys\nfrom bio_mrc.errors import ConfigError\nfrom bio_mrc.io import check_library_path\n"
            "for name in sys.argv[1:]:\n    try:\n        print(check_library_path(name) is not None)\n"
            "    except ConfigError as err:\n        print(err)")
    run = ascii_locale_run(code, str(tmp_path / "model"), str(tmp_path / "modèle"))
    assert run.returncode == 0, run.stderr[-2000:]
    passed, refused = run.stdout.splitlines()
    assert passed == "True"
    assert refused == (f"{tmp_path}/modèle: this name is not spelled in UTF-8 under the locale's "
                       "file-name encoding (ascii); set a UTF-8 locale, e.g. PYTHONUTF8=1")


def test_a_non_ascii_name_passes_where_file_names_are_utf8(tmp_path):
    if sys.getfilesystemencoding() != "utf-8":
        pytest.skip("file names here are not UTF-8")
    assert io.check_library_path(tmp_path / "modèle-ü") == tmp_path / "modèle-ü"


def test_the_working_folder_as_an_output_folder_is_checked_like_any_other(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert io.check_folder_target(".") == io.paths.Path(".")  # Path(".") has no parents: it ended in StopIteration


def test_an_existing_output_folder_that_is_not_writable_is_refused_before_any_work(tmp_path, monkeypatch):
    folder = tmp_path / "out"
    folder.mkdir()
    real_access = os.access
    monkeypatch.setattr(io.paths.os, "access", lambda path, mode: False if io.paths.Path(path) == folder else real_access(path, mode))
    with pytest.raises(io.OutputError, match="out is not writable"):
        io.check_folder_target(folder)
    io.check_folder_target(tmp_path / "other")  # its parent is writable


@pytest.mark.skipif(sys.platform == "win32", reason="no RLIMIT_FSIZE")
def test_a_write_past_the_file_size_limit_is_one_error_naming_the_folder_and_keeps_the_old_file(tmp_path):
    import resource

    path = tmp_path / "preds.json"
    path.write_text("old")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))  # ulimit -f 4: Python ignores SIGXFSZ, so the write fails
    try:
        with pytest.raises(io.OutputError) as raised:
            with io.writes_named(tmp_path):
                atomic_write_text(path, "x" * 10_000)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert str(raised.value) == (f"could not write there: a file reached the size limit for files (4,096 bytes: ulimit -f): "
                                 f"[Errno {errno.EFBIG}] File too large (in {tmp_path})")
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["preds.json"]


@pytest.mark.parametrize("limit", [4096, None])
def test_torchs_short_write_under_a_file_size_limit_names_the_limit_not_the_free_space(tmp_path, monkeypatch, limit):
    """torch's checkpoint writer says only that a write fell short: with a size limit for files set and more room
    on the device than it, the limit is what stopped it; without one, the disk is."""
    monkeypatch.setattr(io.write_errors, "file_size_limit", lambda: limit)
    short = "[enforce fail at inline_container.cc:672] . unexpected pos 203904 vs 203796"
    with pytest.raises(io.OutputError) as raised:
        with io.writes_named(tmp_path):
            raise RuntimeError(short)
    if limit:
        assert str(raised.value) == f"could not write there: a file reached the size limit for files (4,096 bytes: ulimit -f): {short} (in {tmp_path})"
    else:
        assert str(raised.value).startswith("could not write there, ") and " free on its device: " in str(raised.value)


def test_a_staged_folder_another_process_writes_is_refused_before_its_staging_is_touched(tmp_path):
    """Two writers of one output folder shared one staging folder: the second emptied it under the first, which then
    moved in a mixture or ended in a FileNotFoundError traceback."""
    pytest.importorskip("fcntl")
    out = tmp_path / "out"
    (out / ".staging").mkdir(parents=True)
    (out / ".staging" / "model.safetensors").write_text("the first writer's")
    with io.sole_process_in(os.path.realpath(out), "held"):  # the first writer (flock: another open file)
        with pytest.raises(io.OutputError) as refused, io.staged_folder(out, True, ".staging"):
            pytest.fail("the second writer went on")
    assert str(refused.value) == f"{io.FOLDER_BUSY} (in {out})"
    assert (out / ".staging" / "model.safetensors").read_text() == "the first writer's"
    alias = tmp_path / "alias"  # a link the user chose reaches the same folder, so the same lock
    alias.symlink_to(out)
    with io.written_alone(alias), pytest.raises(io.OutputError, match=f"^held \\(in {out}\\)$"):
        with io.sole_process_in(os.path.realpath(out), "held"):
            pass


def _waited_too_long(signum, frame):
    raise TimeoutError("the lock waited on its own process")


def test_the_sets_lock_and_the_folders_writer_lock_are_apart(tmp_path):
    """The lock of a folder's sets (a comparison's report) and the lock of its writer (``tune``, ``export``) were one
    ``flock`` on the folder: a set written while the folder was held waited on its own process for ever, the folder
    taken while a set was written was refused as held by another process, and a comparison into a folder a ``tune``
    held waited without a word."""
    import signal

    pytest.importorskip("fcntl")
    out = tmp_path / "out"
    with io.replaced_together(out, "report") as staging, io.written_alone(out):
        (staging / "report.md").write_text("the first set's")
    previous = signal.signal(signal.SIGALRM, _waited_too_long)
    signal.alarm(20)  # a guard: the old single lock waited here for ever
    try:
        with io.written_alone(out):
            with io.replaced_together(out, "report") as staging:
                (staging / "report.md").write_text("the second set's")
            io.note_set_files(out, "report", ["notes.md"])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert (out / "report.md").read_text() == "the second set's"
    assert sorted(json.loads((out / ".report-files.json").read_text())) == ["notes.md", "report.md"]


def test_a_folder_held_by_this_thread_is_staged_into_and_one_it_made_is_removed_on_a_failure(tmp_path):
    out = tmp_path / "new" / "out"
    with io.written_alone(out), io.staged_folder(out, False, ".staging") as staging:  # held once, taken as held within
        (staging / "config.json").write_text("{}")
    assert sorted(p.name for p in out.iterdir()) == ["config.json"]
    with pytest.raises(RuntimeError), io.written_alone(tmp_path / "other" / "out"):
        raise RuntimeError("the writing failed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new"]
    (tmp_path / "file").write_text("the user's")
    with pytest.raises(io.OutputError, match="a file has this name"), io.written_alone(tmp_path / "file"):
        pass
