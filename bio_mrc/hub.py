"""A model or encoder named by a local folder or a Hugging Face hub id -> a local folder.

A hub id is fetched through ``huggingface_hub``'s cache: the cached snapshot first, the hub only when the
cache lacks it and ``HF_HUB_OFFLINE`` is unset. Every way this fails is one :class:`ModelFormatError` naming
the id and what to do, never a retry loop or a traceback.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import Iterator

from .errors import ConfigError, ModelFormatError
from .io import broken_link

# What loading a model or an encoder reads; other frameworks' weights (TensorFlow, Flax, Core ML, ...) stay on the hub.
MODEL_FILES = ("*.json", "*.safetensors", "*.txt", "*.model", "*.onnx")
PICKLED_WEIGHTS = ("*.bin",)  # fetched only where a repository has no safetensors


def is_hub_id(name: str) -> bool:
    """Whether ``name`` has the form of a hub repository id (``name`` or ``org/name``)."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    if name.startswith((".", "/", "~")) or name.count("/") > 1 or "\\" in name:
        return False
    try:
        validate_repo_id(name)
    except HFValidationError:
        return False
    return True


def check_name_given(name: object, what: str = "model folder", option: str | None = None) -> None:
    """Refuse an empty name (``""``, or spaces alone: an unset shell variable), which ``Path`` reads as the current
    folder, in one line naming ``option`` where given; any other name is left for the loader to check."""
    if isinstance(name, str) and not name.strip():
        where = f"{option}: " if option else ""
        raise ConfigError(f"{where}an empty name ({name!r}) names no {what} and no Hugging Face hub id; give one")


def check_revision_given(revision: object) -> None:
    """Refuse an empty revision (an unset shell variable), which names no branch, tag or commit; None is the default
    branch."""
    if revision is not None and (not isinstance(revision, str) or not revision.strip()):
        raise ConfigError(f"revision {revision!r} names no branch, tag or commit hash of a Hugging Face hub model: give "
                          "one, or leave it out for the default branch")


def local_folder(name_or_path: str | Path, what: str = "model folder", revision: str | None = None, *,
                 token: str | bool | None = None, cache_dir: str | Path | None = None, local_files_only: bool = False) -> Path:
    """The folder ``name_or_path`` names: itself where it exists, else the hub id's snapshot (cache first) at
    ``revision`` (a branch, a tag or a commit hash; None: the default branch). ``what`` names the thing in the error
    (``"model folder"``, ``"encoder"``); ``token``, ``cache_dir`` and ``local_files_only`` read the hub as transformers'
    loaders read it with them (:func:`hub_snapshot`)."""
    return checked_local_path(name_or_path, what, revision) or hub_snapshot(
        str(name_or_path), what, revision, token=token, cache_dir=cache_dir, local_files_only=local_files_only)


def checked_local_path(name_or_path: str | Path, what: str = "model folder", revision: str | None = None) -> Path | None:
    """What :func:`local_folder` refuses without the hub: an empty name or revision, a broken link, a missing path that
    is no hub id, a file, a folder given a revision. Returns the existing folder, or None for a hub id to fetch."""
    check_name_given(name_or_path, what)
    check_revision_given(revision)
    path = Path(os.path.expanduser(name_or_path))  # left as it is where no home is known (Path.expanduser raises)
    if problem := broken_link(path):  # a link named like org/name is a local path, not a hub id
        raise ModelFormatError(f"the {what} is {problem}", str(name_or_path))
    if not path.exists() and is_hub_id(str(name_or_path)):
        return None
    if not path.exists():
        raise ModelFormatError(f"no such {what} (and not a Hugging Face hub id)", str(name_or_path))
    if path.is_file():
        raise ModelFormatError(file_given(path, what), str(name_or_path))
    if revision is not None:  # a folder wins over a hub id of its name: the revision would be passed over
        raise ModelFormatError(f"revision {revision!r} names a version of a Hugging Face hub model, but this is a local "
                               f"folder, which has none: drop the revision, or run where no folder has the hub id's name",
                               str(name_or_path))
    return path


def folder_at_hand(name_or_path: str | Path, what: str = "model folder", revision: str | None = None) -> Path | None:
    """The folder :func:`local_folder` gives where that needs no download: the local folder, or a hub id's snapshot in
    the Hugging Face cache; offline, a hub id the cache lacks is refused as :func:`local_folder` refuses it. None for a
    hub id the loading may download, which is checked once it has (:func:`checked_local_path` refuses the rest)."""
    path = checked_local_path(name_or_path, what, revision)
    if path is not None:
        return path
    from huggingface_hub import constants

    return hub_snapshot(str(name_or_path), what, revision) if constants.HF_HUB_OFFLINE else cached_folder(name_or_path, revision)


# Files of a model or an encoder a path may name by mistake for the folder that holds them.
FOLDER_FILES = ("config.json", "model.safetensors", "model.safetensors.index.json", "tokenizer.json",
                "tokenizer_config.json", "model.onnx", "pytorch_model.bin")
FOLDERS = {"model folder": "a model folder", "encoder": "an encoder's folder"}


def file_given(path: Path, what: str) -> str:
    """Why a file is refused where a ``what`` is read: what it is, and the folder to give where it is one of its files."""
    kind = FOLDERS.get(what, f"a {what}")
    if path.name in FOLDER_FILES:
        return f"is a file ({path.name}), not {kind}: give the folder that holds it, {path.absolute().parent}"
    return f"is a file, not {kind} (its config.json, weights and tokenizer files)"


def cached_folder(name_or_path: str | Path, revision: str | None = None) -> Path | None:
    """The folder :func:`local_folder` would give, where it is at hand without a download: the folder itself, or a hub
    id's snapshot at ``revision`` already in the Hugging Face cache; else None (nothing is fetched, nothing raised; a
    folder with a revision too is None, which the loader refuses)."""
    from huggingface_hub.errors import LocalEntryNotFoundError

    path = Path(os.path.expanduser(name_or_path))
    if path.exists() or broken_link(path) or not is_hub_id(str(name_or_path)):
        return path if path.exists() and revision is None else None
    try:
        return cached_snapshot(str(name_or_path), revision)
    except (LocalEntryNotFoundError, ModelFormatError, OSError, ValueError):
        return None


def cached_snapshot(repo_id: str, revision: str | None = None, **fetch: object) -> Path:
    """The snapshot of ``repo_id`` at ``revision`` in the Hugging Face cache, as huggingface_hub finds it (a ref or a
    full commit hash), or the one cached snapshot whose commit begins with ``revision``, a short hash; the cache alone
    is read (``fetch``: huggingface_hub's ``cache_dir``, ``token``). Raises ``LocalEntryNotFoundError`` where the cache
    lacks it, :class:`ModelFormatError` for a short hash of several cached commits."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(repo_id, revision=revision, local_files_only=True, **fetch))
    except LocalEntryNotFoundError:
        commits = short_hash_commits(repo_id, revision, fetch.get("cache_dir"))
        if len(commits) > 1:
            raise ModelFormatError(f"revision {revision!r} begins {len(commits)} commits in the Hugging Face cache "
                                   f"({', '.join(commits)}): give more of its hash", repo_id) from None
        if not commits:
            raise
    return Path(snapshot_download(repo_id, revision=commits[0], local_files_only=True, **fetch))


SHORT_HASH = re.compile(r"[0-9a-f]{4,39}")  # git's shortest abbreviation, up to a full commit hash's 40 digits


def short_hash_commits(repo_id: str, revision: str | None, cache_dir: object = None) -> list[str]:
    """The commits of ``repo_id``'s cached snapshots that ``revision`` begins, where it has the form of a short commit
    hash and no ref of the cache has its name (a branch or tag named like one is the ref's)."""
    from huggingface_hub import constants
    from huggingface_hub.file_download import repo_folder_name

    if revision is None or not SHORT_HASH.fullmatch(revision):
        return []
    repo = Path(str(cache_dir or constants.HF_HUB_CACHE)) / repo_folder_name(repo_id=repo_id, repo_type="model")
    if (repo / "refs" / revision).exists() or not (repo / "snapshots").is_dir():
        return []
    return sorted(folder.name for folder in (repo / "snapshots").iterdir() if folder.name.startswith(revision) and folder.is_dir())


@contextlib.contextmanager
def named_as_given(name: str | Path | None, folder: str | Path) -> Iterator[None]:
    """A :class:`ModelFormatError` about ``folder``, the cached snapshot of hub id ``name``, names the id as the user
    gave it, the snapshot after it; about a local folder, it stays as it is."""
    try:
        yield
    except ModelFormatError as err:
        snapshot = str(folder)
        if name is None or str(name) == snapshot or not is_hub_id(str(name)) or err.source != snapshot:
            raise
        raise ModelFormatError(err.marked_problem, f"{name}, cached as {snapshot}") from None


def snapshot_commit(repo_id: str | Path | None, folder: str | Path | None) -> str | None:
    """The commit of ``folder`` where it is a snapshot of hub id ``repo_id`` in a Hugging Face cache
    (``models--ORG--NAME/snapshots/COMMIT``); None for a local folder, which has none."""
    if not repo_id or not folder or not is_hub_id(str(repo_id)):
        return None
    from huggingface_hub.file_download import repo_folder_name

    folder = Path(folder)
    repo = repo_folder_name(repo_id=str(repo_id), repo_type="model")
    return folder.name if folder.parent.name == "snapshots" and folder.parent.parent.name == repo else None


def shown_model_name(name: str | Path | None, folder: str | Path) -> str:
    """A model's name as answers and pages show it: a hub id's with the short hash of the snapshot read
    (``org/name@1a2b3c4``, a revision that reads it again), a local folder's own name."""
    commit = snapshot_commit(name, folder)
    return f"{name}@{commit[:7]}" if commit else Path(folder).name


def given_model_name(name: str | Path, revision: str | None = None) -> str:
    """A model's name as the user gave it, for notes about it: a hub id with the revision given (``org/name@v1``), not the
    snapshot folder it is read from; a local folder's name as it is."""
    return f"{name}@{revision}" if revision else str(name)


OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")  # either keeps huggingface_hub from the network


def offline_variable() -> str:
    """The variable that keeps the hub offline here, to name it in a refusal."""
    return next((name for name in OFFLINE_VARIABLES if os.environ.get(name, "").strip().upper() in {"1", "ON", "YES", "TRUE"}),
                OFFLINE_VARIABLES[0])


def hub_snapshot(repo_id: str, what: str = "model folder", revision: str | None = None, *, token: str | bool | None = None,
                 cache_dir: str | Path | None = None, local_files_only: bool = False) -> Path:
    """The local snapshot of hub repository ``repo_id`` at ``revision`` (None: the default branch): the cached one,
    else downloaded unless offline or ``local_files_only``. ``token`` (None: the stored login) and ``cache_dir`` (None:
    the Hugging Face cache) are huggingface_hub's."""
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    # only those given, so huggingface_hub's own defaults hold otherwise
    fetch = {name: value for name, value in (("token", token), ("cache_dir", cache_dir)) if value is not None}
    try:
        return cached_snapshot(repo_id, revision, **fetch)
    except LocalEntryNotFoundError:
        if constants.HF_HUB_OFFLINE or local_files_only:
            variable = offline_variable()
            cached = "the hub id" if revision is None else f"revision {revision!r} of the hub id"
            why = (f"{variable} is set, so the hub is not asked: unset {variable} to download it" if constants.HF_HUB_OFFLINE
                   else "local_files_only=True, so the hub is not asked: leave it out to download it")
            raise ModelFormatError(
                f"no such local {what}, and {cached} is not in the Hugging Face cache ({cache_dir or constants.HF_HUB_CACHE}); "
                f"{why}, or pass a local folder", repo_id) from None
    try:
        folder = Path(snapshot_download(repo_id, revision=revision, allow_patterns=list(MODEL_FILES), **fetch))
        if not any(folder.glob("*.safetensors")) and not any(folder.glob("*.onnx")):
            folder = Path(snapshot_download(repo_id, revision=revision, allow_patterns=[*MODEL_FILES, *PICKLED_WEIGHTS], **fetch))
        return folder
    except (HfHubHTTPError, LocalEntryNotFoundError, OSError, ValueError) as err:
        raise ModelFormatError(
            f"no such local {what}, and the Hugging Face hub could not give it ({hub_failure(err)}); "
            "without a network, set HF_HUB_OFFLINE=1 to use the cache only, or pass a local folder", repo_id) from None


def hub_failure(err: BaseException) -> str:
    """A hub request's failure in one line: its kind and the first line of its message; for a hub out of reach, which
    huggingface_hub reports as a missing local entry ("Got: ConnectError: ..."), the network error beneath it."""
    from huggingface_hub.errors import LocalEntryNotFoundError

    if isinstance(err, LocalEntryNotFoundError) and err.__cause__ is not None:
        err = err.__cause__
    reason = str(err).strip().splitlines()[0] if str(err).strip() else "no answer"
    return f"{type(err).__name__}: {reason}"


__all__ = ["cached_folder", "cached_snapshot", "checked_local_path", "folder_at_hand", "given_model_name", "hub_failure", "hub_snapshot", "is_hub_id",
           "local_folder", "named_as_given", "shown_model_name", "snapshot_commit"]
