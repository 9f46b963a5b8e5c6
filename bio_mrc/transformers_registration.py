"""``import bio_mrc`` makes transformers know the package's models and its pipeline, without loading either.

transformers reads no entry points, and registering the classes themselves would load torch and transformers
(seconds) on every ``import bio_mrc``. Instead, when transformers' table of config classes and its pipelines
module load (or at once, when they are loaded already), each gets an entry that imports the package's model or
pipeline only when looked up: ``AutoConfig``/``AutoModel``/``AutoModelForQuestionAnswering.from_pretrained(DIR)``
and ``pipeline("bio-mrc-qa", model=DIR)`` then work in a fresh interpreter. ``register_auto_classes()`` and
``register_pipeline()`` register them at once, as before.
"""

from __future__ import annotations

import sys
from importlib import import_module
from types import ModuleType
from typing import Any, Callable

MODEL_TYPE = "bio_mrc"  # BioMrcConfig.model_type (tests/test_cli_startup.py ties them)
TASK = "bio-mrc-qa"  # the pipeline's task (bio_mrc.inference.pipeline.TASK)
MODEL_MODULE = "bio_mrc.model"  # importing it registers the Auto classes
PIPELINE_MODULE = "bio_mrc.inference.pipeline"  # importing it registers the pipeline


def _config_table_knows_bio_mrc(module: ModuleType) -> None:
    """``CONFIG_MAPPING["bio_mrc"]`` imports :mod:`bio_mrc.model`, which registers ``BioMrcConfig`` there."""
    mapping = getattr(module, "CONFIG_MAPPING", None)
    if mapping is None or isinstance(mapping, LazyBioMrcConfigMapping):
        return
    mapping.__class__ = _lazy_mapping_class(type(mapping))


class LazyBioMrcConfigMapping:
    """Marks transformers' config table once it knows the bio_mrc entry (the class is made per table type)."""


def _lazy_mapping_class(base: type) -> type:
    def __getitem__(self, key: str) -> Any:
        if key == MODEL_TYPE and key not in self._extra_content:
            import_module(MODEL_MODULE)
        return base.__getitem__(self, key)

    def __contains__(self, key: object) -> bool:
        return key == MODEL_TYPE or base.__contains__(self, key)

    def __reduce__(self):  # a copy is transformers' own table
        constructor, args = base.__reduce__(self)[:2]
        return getattr(base, constructor.__name__), args

    return type(base.__name__, (base, LazyBioMrcConfigMapping),
                {"__getitem__": __getitem__, "__contains__": __contains__, "__reduce__": __reduce__})


def _pipelines_know_bio_mrc(module: ModuleType) -> None:
    """``check_task("bio-mrc-qa")`` (what ``pipeline()`` asks) imports the pipeline module, which registers the task."""
    registry = getattr(module, "PIPELINE_REGISTRY", None)
    if registry is None or getattr(registry, "knows_bio_mrc", False):
        return
    check_task = registry.check_task

    def check_task_knowing_bio_mrc(task: str):
        if task == TASK and task not in registry.supported_tasks:
            import_module(PIPELINE_MODULE)
        return check_task(task)

    registry.check_task = check_task_knowing_bio_mrc
    registry.knows_bio_mrc = True
    _hub_ids_from_the_cache(module)


def _hub_ids_from_the_cache(module: ModuleType) -> None:
    """``pipeline("bio-mrc-qa", model=HUB_ID)`` reads the id's snapshot as every other door does (:mod:`bio_mrc.hub`:
    the cache first, the hub once, one line naming the id), not through transformers' own lookups, which ask an
    unreachable hub again and again (some 5 retries a file: minutes) before they read the cache; ``revision=`` (a
    branch, a tag or a commit hash) picks the snapshot the same way. ``token=``, ``local_files_only=`` and ``model_kwargs``' ``cache_dir``
    are read as transformers' own lookups read them. A local folder, or a path that names none, is
    checked as every other door checks it before transformers reads it, so a folder that holds no model is the same
    one line, not transformers' error."""
    made = module.pipeline
    if getattr(made, "reads_hub_ids_from_the_cache", False):
        return

    def pipeline(task: Any = None, model: Any = None, *args: Any, **kwargs: Any):
        from pathlib import PurePath

        if task == TASK:  # the keywords that reach the loading, checked before any file is read
            kwargs = import_module(PIPELINE_MODULE).checked_keywords(kwargs)
        if task == TASK and isinstance(model, (str, PurePath)) and not args:
            from .hub import named_as_given

            name, revision = str(model), kwargs.pop("revision", None)  # the snapshot is the revision: none is left to resolve
            loading = import_module(PIPELINE_MODULE)
            attention = (kwargs.get("model_kwargs") or {}).get("attn_implementation")
            folder = loading.checked_model_folder(name, revision, kwargs.get("device"), attention, **_hub_options(kwargs))
            with named_as_given(name, folder), loading.folder_checked(folder):  # the snapshot's errors name the id given
                return made(task, str(folder), *args, **kwargs)
        return made(task, model, *args, **kwargs)

    pipeline.__doc__, pipeline.__wrapped__, pipeline.reads_hub_ids_from_the_cache = made.__doc__, made, True
    module.pipeline = pipeline
    top = sys.modules.get("transformers")
    if top is not None and top.__dict__.get("pipeline") is made:  # looked up through transformers already
        top.pipeline = pipeline


def _hub_options(kwargs: dict[str, Any]) -> dict[str, Any]:
    """What of ``pipeline()``'s keywords reads the hub as transformers' own lookups would: its ``token``,
    ``local_files_only`` and ``model_kwargs``' ``cache_dir``, where given."""
    model_kwargs = kwargs.get("model_kwargs") if isinstance(kwargs.get("model_kwargs"), dict) else {}
    given = {"token": kwargs.get("token"), "cache_dir": model_kwargs.get("cache_dir"), "local_files_only": kwargs.get("local_files_only")}
    return {name: value for name, value in given.items() if value is not None}


WATCHED: dict[str, Callable[[ModuleType], None]] = {
    "transformers.models.auto.configuration_auto": _config_table_knows_bio_mrc,
    "transformers.pipelines": _pipelines_know_bio_mrc,
}


class _ThenAddEntries:
    """A watched module's own loader, then its bio_mrc entries."""

    def __init__(self, loader: Any, add_entries: Callable[[ModuleType], None]) -> None:
        self._loader, self._add_entries = loader, add_entries

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._add_entries(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, resource readers: the real loader's
        return getattr(self._loader, name)


class _WatchTransformers:
    """Finds the watched modules as the other finders do, with their loader wrapped."""

    def find_spec(self, name, path, target=None):
        if name not in WATCHED:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _ThenAddEntries(spec.loader, WATCHED[name])
                return spec
        return None


def install() -> None:
    """Add the entries to the watched modules loaded already, and watch for the others."""
    for name, add_entries in WATCHED.items():
        if name in sys.modules:
            add_entries(sys.modules[name])
    if not all(name in sys.modules for name in WATCHED) and not any(isinstance(f, _WatchTransformers) for f in sys.meta_path):
        sys.meta_path.insert(0, _WatchTransformers())


__all__ = ["MODEL_TYPE", "TASK", "install"]
