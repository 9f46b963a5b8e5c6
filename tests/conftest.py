"""Shared fixtures: a tiny random BERT with a real WordPiece fast tokenizer, and data paths; the two test tiers.

Two tiers. ``python -m pytest -q`` runs the fast tier; ``python -m pytest -q --run-slow`` runs every test
(CI does). A test is marked ``@pytest.mark.slow`` (or a module ``pytestmark = pytest.mark.slow``) when it
takes more than about 3 s on 2 cores alone, not counting a shared fixture it reuses: it starts Python or
the CLI in a subprocess (a benchmark script, torchrun, pip), drives a browser, reads the real data in
``../shared/data``, or trains a model of its own beyond the tiny shared ones. Prefer making it cheap
(a module- or session-scoped fixture shared with its neighbours) to marking it. A test run over every tokenizer
family runs three of them in the fast tier and the rest in the slow one (:func:`family_params`). A slow test named by
its node id (``tests/test_x.py::test_y``) runs without the flag.
"""

from __future__ import annotations

import errno
import gc
import json
import os
import re
import shutil
import signal
import string
import subprocess
import sys
import tempfile
from importlib.util import find_spec
from pathlib import Path

import pytest

# The suite imports about a hundred test modules and starts Python in many subprocesses, each importing the
# package: where PYTHONDONTWRITEBYTECODE is set (some CI images set it), every one of those recompiles every
# module and pytest rewrites every test module's asserts again. Cache the bytecode (in the gitignored
# __pycache__ folders), as Python does by default: on 2 cores of an AMD Zen 3 collection took 21 s without it, 13 s with.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# Training windows are cached in the datasets cache, which nothing prunes: the tests' tiny windows go to a folder of
# their own in the temporary folder (shared by the workers and later runs), not to the user's cache. Set before any
# module imports datasets, which reads the variable once.
os.environ.setdefault("HF_DATASETS_CACHE", str(Path(tempfile.gettempdir()) / "bio_mrc-tests-datasets-cache"))

FIXTURES = Path(__file__).parent / "fixtures"
SAMPLE_V1 = FIXTURES / "sample_squad_v1.json"

# The onnx extra's test modules are skipped without it, which is looked for, not imported: every worker imports every
# test module, and onnx and onnxruntime take seconds to import for the few tests that use them.
NEEDS_ONNX_EXTRA = pytest.mark.skipif(not all(map(find_spec, ("onnx", "onnxruntime"))), reason="needs the onnx extra: pip install 'bio_mrc[onnx]'")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False,
                     help="run the slow tier too (tests marked slow: subprocesses, browsers, real data, torchrun)")


_WHOLE_PROPERTY_RUNS = False  # set as pytest configures: does the slow tier run (property_examples)?


def pytest_configure(config: pytest.Config) -> None:
    global _WHOLE_PROPERTY_RUNS
    _WHOLE_PROPERTY_RUNS = _runs_slow(config)
    if collects_tests(config):
        _collection_prepared()
    _workers_share_the_cores()


def collects_tests(config: pytest.Config) -> bool:
    """Whether this process collects the tests: a pytest-xdist worker, or a run without workers (``-n 0``,
    ``--collect-only``), not the controller, which hands out what its workers collected."""
    return hasattr(config, "workerinput") or config.getoption("collectonly") or config.getoption("dist", "no") == "no"


def _collection_prepared() -> None:
    """Before the test modules import torch, transformers and the package: the garbage collector passes over young
    objects every 20,000 allocations and over everything far more rarely, as after collection
    (:func:`pytest_collection_finish`); at Python's thresholds collecting the tests ran several full collections, each
    walking every module imported so far, to find next to nothing (imports make few cycles). And Hypothesis is imported:
    its plugins register their random generators as it is imported, and it checks each one's referrers after a full
    collection, which here walks pytest's own objects, not every module collection loads; imported after collection's
    freeze, the frozen objects would hide the referrers."""
    gc.set_threshold(20_000, 20, 50)
    import hypothesis  # noqa: F401


def _workers_share_the_cores() -> None:
    """pytest-xdist (``-n auto`` in pyproject.toml) runs one worker a core; torch would give each worker a thread a
    core, so the workers would share every core with each other's threads. One worker, its share of the cores."""
    if not os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
        return
    import torch

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    threads = max(1, cores // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    torch.set_num_threads(threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))  # its subprocesses alike: a result may not depend on who ran it


def property_examples(count: int) -> int:
    """How many examples a property test (Hypothesis) draws: ``count`` where the slow tier runs too (``--run-slow``, as
    CI runs), a quarter of it (at least 10) in the fast tier alone, which is for quick feedback. Read as test modules
    load, after pytest has configured."""
    return count if _WHOLE_PROPERTY_RUNS else min(count, max(10, count // 4))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without ``--run-slow`` (or a ``-m`` expression that names ``slow``) the slow tier is deselected,
    except tests named by node id on the command line. A pytest-xdist worker puts the files in the order they are
    handed out (:func:`handing_out_order`)."""
    if not _runs_slow(config):
        _deselect_slow(config, items)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items[:] = handing_out_order(items)


def handing_out_order(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` a file at a time, in the order pytest-xdist hands the files to its workers (``--dist loadfile`` with
    ``--no-loadscope-reorder``, in pyproject.toml): the files of most tests first, as pytest-xdist's own order puts
    them, so the last ones handed out are short and neither worker ends long before the other; but first of all the
    largest file whose first test needs ``trained_dir``. The worker that takes it trains that model at once, while the
    other begins on the files of most tests, which need it later if at all: it no longer waits seconds for the other
    to train it, as when both came to it at once. Every worker orders the same items alike, as pytest-xdist requires."""
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)
    order = sorted(files.values(), key=len, reverse=True)
    first = next((index for index, tests in enumerate(order) if "trained_dir" in tests[0].fixturenames), None)
    if first is not None:
        order.insert(0, order.pop(first))
    return [item for tests in order for item in tests]


def _deselect_slow(config: pytest.Config, items: list[pytest.Item]) -> None:
    named = [(Path(path).name, rest) for path, _, rest in (arg.partition("::") for arg in config.args) if rest]
    slow = [item for item in items if item.get_closest_marker("slow") and not _named(item, named)]
    if slow:
        chosen = set(map(id, slow))
        items[:] = [item for item in items if id(item) not in chosen]
        config.hook.pytest_deselected(items=slow)
        config.stash[SLOW_DESELECTED] = len(slow)


SLOW_DESELECTED = pytest.StashKey[int]()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Move what collection made (every module of torch, transformers and the package, every test item) out of the
    garbage collector's sight: it lives until the end anyway. The Trainer runs a full collection after every training
    (accelerate's ``release_memory``), which otherwise walks that whole heap each time. The tests make millions of
    short-lived objects (parsed reports, Arrow tables, tokenizer output) and few cycles, so full collections found
    little but cost up to 0.4 s each: a worker collects its young objects every 20,000 allocations (700 by default) and
    everything far more rarely, from before collection on (:func:`_collection_prepared`, which imports Hypothesis too).
    The package's sources that tests read as trees (tests/read_once.py) are parsed as a test first reads them, in the
    worker that runs it, not here in every worker."""
    gc.freeze()
    _trainings_without_full_collections()
    _argparse_messages_looked_up_once()
    _precision_probes_shortened()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """After pytest's last look for exceptions raised in finalizers (a full collection in its own
    ``pytest_unconfigure``, which this follows), what is left lives until the process exits: frozen, neither pytest's
    second full collection nor the interpreter's at exit walks it again. In a worker those walks took seconds after its
    last test, and the controller waits for every worker to exit."""
    gc.freeze()


def _trainings_without_full_collections() -> None:
    """Each training starts with accelerate's ``release_memory``, a full collection to hand GPU memory back between
    trainings: a worker trains a hundred-odd tiny models on the CPU, and each full collection walks every object the
    tests made since the freeze (about a quarter of the tests' training time). Their models are freed by reference
    counting; the collector's own passes run as ``pytest_collection_finish`` sets them."""
    from accelerate.utils import memory

    clear_device_cache = memory.clear_device_cache
    memory.clear_device_cache = lambda garbage_collection=False: clear_device_cache(False)


TEST_PROBE_SECONDS = 0.01


def _precision_probes_shortened() -> None:
    """``precision: auto`` times each precision on the model's shapes for ``PROBE_SECONDS``; the tests' tiny random
    models give a new shape, so a new measurement, in dozens of trainings and loads, and no test reads how fast a
    precision ran (tests/test_precision_probe.py times with a clock of its own): each is timed for a fifth as long."""
    from bio_mrc import precision_probe

    precision_probe.PROBE_SECONDS = min(precision_probe.PROBE_SECONDS, TEST_PROBE_SECONDS)


LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")  # gettext's, in the order it reads them


def _argparse_messages_looked_up_once() -> None:
    """argparse looks up the translation of each of its messages each time it says one (gettext looks for a catalogue
    in the locale folders under each name the locale variables give: a few ``stat`` calls a message), and every
    in-process ``bio-mrc`` call builds its parser anew: about 30 messages, most of the parser's building time. The
    same message, under the same locale variables and text domain, finds the same translation: each is looked up once."""
    import argparse
    import functools
    import gettext

    if getattr(argparse, "_", None) is not gettext.gettext:  # a Python whose argparse translates otherwise: as it is
        return
    translated = functools.lru_cache(maxsize=None)(lambda message, domain, folder, variables: gettext.gettext(message))

    def message(text: str) -> str:
        domain = gettext.textdomain()
        return translated(text, domain, gettext.bindtextdomain(domain), tuple(map(os.environ.get, LOCALE_VARIABLES)))

    argparse._ = message


def _named(item: pytest.Item, named: list[tuple[str, str]]) -> bool:
    file, _, rest = item.nodeid.partition("::")
    return any(Path(file).name == name and (rest == test or rest.startswith((test + "[", test + "::"))) for name, test in named)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if config.stash.get(SLOW_DESELECTED, 0):
        terminalreporter.write_line(f"fast tier: {config.stash[SLOW_DESELECTED]} slow tests deselected; "
                                    "python -m pytest -q --run-slow runs every test")
    elif config.pluginmanager.hasplugin("dsession") and not _runs_slow(config):  # xdist: the workers deselected them
        terminalreporter.write_line("fast tier: tests marked slow are deselected; python -m pytest -q --run-slow runs every test")


def _runs_slow(config: pytest.Config) -> bool:
    return config.getoption("--run-slow") or "slow" in (config.getoption("markexpr") or "")


@pytest.fixture
def sigint_as_in_a_terminal():
    """Ctrl-C raising KeyboardInterrupt, as in a terminal, where the suite runs with SIGINT ignored (under nohup, or as a
    shell's background job, Python leaves it ignored): the tests that send it test the package's holding of it."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


class StoppedReplace:
    """``os.replace`` as bio_mrc.io calls it, stopped at its ``k``-th counted rename (0: never; ``counted`` says which
    targets count): ``"ctrl-c"`` sends a real SIGINT, which a held signal defers past the rename, ``"full disk"``
    raises ENOSPC instead of renaming. ``calls`` holds the counted targets."""

    def __init__(self, stop: str, k: int = 0, counted=lambda target: True) -> None:
        self.real, self.stop, self.k, self.counted, self.calls = os.replace, stop, k, counted, []

    def __call__(self, source, target):
        if self.counted(target):
            self.calls.append(target)
            if len(self.calls) == self.k and self.stop == "ctrl-c":
                signal.raise_signal(signal.SIGINT)
            elif len(self.calls) == self.k:
                raise OSError(errno.ENOSPC, "No space left on device")
        return self.real(source, target)


class WatchedLock:
    """A lock standing in for one of the package's that sets ``asked`` when a thread asks for it while another holds
    it: a test shows that a thread is kept waiting by seeing it wait for the lock, not by a window of time in which it
    did not go on (which a loaded machine can fill without any lock)."""

    def __init__(self, lock, asked) -> None:
        self.lock, self.asked = lock, asked

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self.lock.acquire(blocking=False):  # free, or a reentrant lock this thread holds
            return True
        if blocking:
            self.asked.set()
        return blocking and self.lock.acquire(timeout=timeout)

    def release(self) -> None:
        self.lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def shared_data_dir() -> Path:
    """``$BIO_MRC_DATA`` or the ``shared/data`` folder beside the repository."""
    return Path(os.environ.get("BIO_MRC_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def require_data(relative: str) -> Path:
    path = shared_data_dir() / relative
    if not path.exists():
        pytest.skip(f"real data not available: {path}")
    return path


def hub_answering(monkeypatch: pytest.MonkeyPatch, answer: int | BaseException) -> list[str]:
    """The hub, never reached: each request of huggingface_hub's HTTP session gets ``answer``, an HTTP status or an
    exception raised (as a missing network raises one). Returns the URLs asked, in order."""
    import huggingface_hub.errors
    import huggingface_hub.utils

    http = sys.modules[huggingface_hub.errors.HTTPError.__module__.split(".")[0]]  # the HTTP client huggingface_hub uses
    asked: list[str] = []

    class Session:
        def get(self, url: str, **kwargs):
            asked.append(url)
            if isinstance(answer, BaseException):
                raise answer
            return http.Response(answer, request=http.Request("GET", url), json={"name": "someone"})

    monkeypatch.setattr(huggingface_hub.utils, "get_session", Session)
    return asked


def cache_snapshot(cache: Path, repo_id: str, folder: Path) -> Path:
    """A hub cache entry as huggingface_hub lays it out (refs/main names the snapshot folder): its snapshot folder."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0123abcd")
    shutil.copytree(folder, repo / "snapshots" / "0123abcd")
    return repo / "snapshots" / "0123abcd"


def offline_hub(monkeypatch: pytest.MonkeyPatch, cache: Path, repos: dict[str, Path]) -> dict[str, Path]:
    """HF_HUB_OFFLINE=1 with ``cache`` as the hub cache, holding each folder of ``repos`` under its hub id: their
    snapshot folders."""
    from huggingface_hub import constants

    snapshots = {repo_id: cache_snapshot(cache, repo_id, folder) for repo_id, folder in repos.items()}
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return snapshots


def untrained_model_folder(encoder_dir: Path, folder: Path, **options) -> Path:
    """An untrained model of the tiny encoder (``options``: heads, windows) saved in ``folder`` with its tokenizer,
    as training saves one: enough to run the commands that read a model. Its heads are drawn from a fixed seed: the
    same answers whatever earlier tests in the worker drew."""
    import torch
    from transformers import AutoTokenizer

    from bio_mrc.model import BioMrcForQuestionAnswering

    torch.manual_seed(0)
    BioMrcForQuestionAnswering.from_encoder(str(encoder_dir), **options).save_pretrained(str(folder))
    AutoTokenizer.from_pretrained(str(encoder_dir)).save_pretrained(str(folder))
    return folder


def saved_model_files(folder: Path) -> Path:
    """A folder holding what the checks before torch read of a model (a bio_mrc config with its encoder's, weights, a
    tokenizer file), none of it a model that loads: a command reaches the refusal a test asks of it."""
    folder.mkdir()
    config = {"model_type": "bio_mrc", "heads": "span+bio", "encoder": {"model_type": "bert", "vocab_size": 8}}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "model.safetensors").write_bytes((2).to_bytes(8, "little") + b"{}")  # a header of no tensors
    (folder / "tokenizer.json").write_text(json.dumps(WORD_LEVEL_TOKENIZER), encoding="utf-8")
    return folder


# The least tokenizer.json tokenizers reads: one word-level token, the unknown one.
WORD_LEVEL_TOKENIZER = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
                        "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None, "decoder": None,
                        "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"}}


def _vocabulary() -> list[str]:
    words = set(re.findall(r"\w+", SAMPLE_V1.read_text(encoding="utf-8").lower()))
    chars = set(string.ascii_lowercase + string.digits + "éüïç")
    pieces = sorted(words) + sorted(chars) + ["##" + c for c in sorted(chars)] + list(string.punctuation) + ["—", "“", "”"]
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *dict.fromkeys(pieces)]


@pytest.fixture
def shown_bars(monkeypatch):
    """(description, count, total, unit) of every bar drawn, as it closes: transformers', datasets' and bio_mrc's alike."""
    import tqdm.std

    closed = []
    close = tqdm.std.tqdm.close

    def recording_close(bar):
        if not bar.disable:  # a hidden bar, or one closed already, draws nothing
            closed.append((bar.desc.rstrip(": "), bar.n, bar.total, bar.unit.strip()))
        close(bar)

    monkeypatch.setattr(tqdm.std.tqdm, "close", recording_close)
    return closed


@pytest.fixture(scope="module")
def quiet_progress_bars():
    """Many small ``build_features`` calls in a module: no progress bar for each."""
    import datasets

    was_disabled = datasets.is_progress_bar_enabled() is False
    datasets.disable_progress_bars()
    yield
    if not was_disabled:
        datasets.enable_progress_bars()


@pytest.fixture(autouse=True)
def device_pin_ends_with_the_test():
    """A command run in the test's own process (``main(["train", ..., "--device", "cpu"])``) pins the process to its
    device, as it should its own process (``bio_mrc.precision.pin_process_device``: ``CUDA_VISIBLE_DEVICES`` and the pin
    the Trainer reads). Here the pin ends with the test: a later test in the worker, and the subprocesses it starts,
    see the devices the run began with (on a GPU machine a pin to ``cpu`` hid the GPUs from every later test)."""
    before = os.environ.get("CUDA_VISIBLE_DEVICES")
    precision = sys.modules.get("bio_mrc.precision")
    pinned = dict(precision._PINNED) if precision else {}
    yield
    if before is None:
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    else:
        os.environ["CUDA_VISIBLE_DEVICES"] = before
    if precision := sys.modules.get("bio_mrc.precision"):
        precision._PINNED.clear()
        precision._PINNED.update(pinned)


@pytest.fixture(scope="session", autouse=True)
def own_precision_cache(tmp_path_factory: pytest.TempPathFactory):
    """``precision: auto``'s measurements go to a folder of this session, not the user's cache (subprocesses inherit it)."""
    before = os.environ.get("BIO_MRC_CACHE_DIR")
    os.environ["BIO_MRC_CACHE_DIR"] = str(tmp_path_factory.mktemp("bio-mrc-cache"))
    yield Path(os.environ["BIO_MRC_CACHE_DIR"])
    if before is None:
        os.environ.pop("BIO_MRC_CACHE_DIR", None)
    else:
        os.environ["BIO_MRC_CACHE_DIR"] = before


@pytest.fixture
def fresh_precision_choices(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A test starts without this process's remembered precision choices (nor the unwritable caches it has said so of),
    with its own cache file, in one process."""
    from bio_mrc import precision_probe

    monkeypatch.setattr(precision_probe, "_MEMO", {})
    monkeypatch.setattr(precision_probe, "_SAID_UNWRITABLE", set())
    monkeypatch.setenv("BIO_MRC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("WORLD_SIZE", raising=False)


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build) -> Path:
    """``build(folder)``'s folder, made once a run: under pytest-xdist the workers share the run's temporary folder,
    so the first builds it (under a file lock) and the others read it, instead of each training the same model."""
    from filelock import FileLock

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # each worker's folder lies in the run's own
    folder, done = root / name, root / f"{name}.built"
    with FileLock(str(root / f"{name}.lock")):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # a build that failed part way
            folder.mkdir()
            build(folder)
            done.touch()
    return folder


@pytest.fixture(scope="session")
def tiny_encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer, H=32 random BERT saved with its tokenizer: loadable like any encoder. One folder a run, as the models
    trained from it (their records name its path)."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    def save(folder: Path) -> None:
        tokenizer = BertTokenizer(vocab={w: i for i, w in enumerate(_vocabulary())}, do_lower_case=True)
        tokenizer.save_pretrained(str(folder))
        torch.manual_seed(0)
        config = BertConfig(
            vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=64, max_position_embeddings=128,
        )
        BertModel(config).save_pretrained(str(folder))

    return built_once(tmp_path_factory, "tiny-bert", save)


WINDOW_ARGS = ["--max-seq-length", "48", "--doc-stride", "16", "--max-query-length", "12"]


@pytest.fixture(scope="session")
def trained_dir(tiny_encoder_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny joint model overfitted on the sample (it must learn to answer its own training questions), trained
    once a run through the CLI and shared by every module: a test that writes into a model folder (``tune``,
    a broken weights file) copies it first."""
    from bio_mrc.cli import main

    def train(out: Path) -> None:
        code = main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(out), "--encoder", str(tiny_encoder_dir),
                     "--heads", "span+bio", "--epochs", "60", "--learning-rate", "3e-3", "--batch-size", "4", *WINDOW_ARGS])
        assert code == 0
        forget_training_questions(out)

    return built_once(tmp_path_factory, "model", train)


@pytest.fixture(scope="session")
def span_model(tiny_encoder_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny span-only model (one epoch: its answers are arbitrary, but fixed), trained once a run through the CLI
    and shared by every module that only reads it, its run record without its training questions as ``trained_dir``'s."""
    from bio_mrc.cli import main

    def train(out: Path) -> None:
        assert main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(out), "--encoder", str(tiny_encoder_dir),
                     "--heads", "span", "--epochs", "1", *WINDOW_ARGS]) == 0
        forget_training_questions(out)

    return built_once(tmp_path_factory, "span-model", train)


@pytest.fixture(scope="session")
def onnx_dir(trained_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``trained_dir`` exported to ONNX through the command line once a run, as ``trained_dir`` is trained, and shared by
    every module that only reads it (the dynamo exporter takes some 10 s on 2 cores); a test that writes into it copies
    it first."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from bio_mrc.cli import main

    def export(folder: Path) -> None:
        assert main(["export", "--model", str(trained_dir), "--output", str(folder / "exported"), "--format", "onnx"]) == 0

    return built_once(tmp_path_factory, "onnx", export) / "exported"


def forget_training_questions(model_dir: Path) -> Path:
    """The model's run record without the fingerprint of its training questions, as a record written before it was
    kept: tests tune a model on the few questions it was trained on, which tune refuses where the record knows them."""
    record_path = model_dir / "bio_mrc_run.json"
    record = json.loads(record_path.read_text(encoding="utf-8"))
    record.pop("training_questions", None)
    record_path.write_text(json.dumps(record, indent=2), encoding="utf-8")
    return model_dir


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_encoder_dir: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_encoder_dir), use_fast=True)


@pytest.fixture(scope="session")
def sample_v1():
    from bio_mrc.data.squad import load_squad

    return load_squad(SAMPLE_V1)


@pytest.fixture
def three_answers(tmp_path):
    """Right, right, wrong: the first two questions answered with their gold text, the third with nonsense."""
    from bio_mrc.data.squad import load_squad

    examples = load_squad(SAMPLE_V1).examples
    answers = {ex.id: ex.answer_texts()[0][0] for ex in examples[:2]}
    answers[examples[2].id] = "zzz qqq"
    path = tmp_path / "preds.json"
    path.write_text(json.dumps(answers))
    return path, examples


@pytest.fixture(scope="session")
def tiny_bpe_tokenizer():
    """A byte-level BPE fast tokenizer (RoBERTa-style: leading spaces in tokens, trimmed offsets)."""
    from tokenizers import ByteLevelBPETokenizer, processors
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer(add_prefix_space=False, trim_offsets=True)
    bpe.train_from_iterator(
        [SAMPLE_V1.read_text(encoding="utf-8")], vocab_size=400, min_frequency=2,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>"], show_progress=False,
    )
    bpe._tokenizer.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True, add_prefix_space=False)
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>",
        cls_token="<s>", sep_token="</s>",
    )


@pytest.fixture(scope="session")
def metaspace_tokenizer():
    """A SentencePiece-style tokenizer (Metaspace: each word's token holds the space before it), built offline."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.Unigram())
    tokenizer.normalizer = normalizers.NFKC()
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(vocab_size=300, special_tokens=["<pad>", "<unk>", "[CLS]", "[SEP]"], unk_token="<unk>",
                                      show_progress=False)
    tokenizer.train_from_iterator([SAMPLE_V1.read_text(encoding="utf-8")], trainer)
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", unk_token="<unk>", cls_token="[CLS]",
                                   sep_token="[SEP]")


@pytest.fixture(scope="session")
def metaspace_unnormalized_tokenizer(metaspace_tokenizer):
    """The SentencePiece-style tokenizer without a normalizer: tabs, newlines and other Unicode spaces reach Metaspace,
    which splits at " " alone, so its words hold them (``flows\\tnorth``)."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer.from_str(metaspace_tokenizer.backend_tokenizer.to_str())
    backend.normalizer = None
    return PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", unk_token="<unk>", cls_token="[CLS]",
                                   sep_token="[SEP]")


def _unigram_pieces(metaspace_tokenizer, specials: list[str]) -> list[tuple[str, float]]:
    """The Unigram pieces and scores ``metaspace_tokenizer`` learned, ``specials`` first in their order."""
    pieces = json.loads(metaspace_tokenizer.backend_tokenizer.to_str())["model"]["vocab"]
    return [(special, 0.0) for special in specials] + [(piece, score) for piece, score in pieces if piece not in specials]


def _with_template(tokenizer, pair: str):
    """A copy of a WordPiece tokenizer whose backend puts a pair as ``pair`` says (its special tokens its own)."""
    import copy

    from tokenizers import processors

    tokenizer = copy.deepcopy(tokenizer)
    specials = [(token, tokenizer.convert_tokens_to_ids(token)) for token in ("[CLS]", "[SEP]", "[MASK]")]
    tokenizer.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair=pair, special_tokens=specials)
    return tokenizer


@pytest.fixture(scope="session")
def xlmr_style_tokenizer(metaspace_tokenizer):
    """XLM-R's tokenizer class on Unigram pieces (ALBERT's and T5's kin): NFKC, as sentencepiece's precompiled map
    normalizes, whitespace split then Metaspace, a ``<s> q </s></s> c </s>`` pair and no type ids."""
    from tokenizers import normalizers
    from transformers import XLMRobertaTokenizer

    tokenizer = XLMRobertaTokenizer(vocab=_unigram_pieces(metaspace_tokenizer, ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]))
    tokenizer.backend_tokenizer.normalizer = normalizers.NFKC()
    return tokenizer


@pytest.fixture(scope="session")
def deberta_v2_style_tokenizer(metaspace_tokenizer):
    """DeBERTa-v2's tokenizer class on Unigram pieces: Metaspace, ``[CLS] q [SEP] c [SEP]``, type ids after it."""
    from transformers import DebertaV2Tokenizer

    return DebertaV2Tokenizer(vocab=_unigram_pieces(metaspace_tokenizer, ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"]))


@pytest.fixture(scope="session")
def bpe_untrimmed_tokenizer(tiny_bpe_tokenizer):
    """Byte-level BPE as GPT-2's and Llama 3's: no prefix space, offsets not trimmed (a token's leading space its
    own), the pair put by a template after the byte-level post-processor."""
    from tokenizers import Tokenizer, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer.from_str(tiny_bpe_tokenizer.backend_tokenizer.to_str())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.post_processor = processors.Sequence([processors.ByteLevel(trim_offsets=False), processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A </s> $B:1 </s>:1", special_tokens=[("<s>", 0), ("</s>", 2)])])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                   unk_token="<unk>", cls_token="<s>", sep_token="</s>")


@pytest.fixture(scope="session")
def bpe_prefix_space_tokenizer(tiny_bpe_tokenizer):
    """RoBERTa's tokenizer class with ``add_prefix_space=True``: its post-processor trims a token's leading space from
    its offsets, except the first token's of an encoding, each window's after the first included."""
    from transformers import RobertaTokenizer

    model = json.loads(tiny_bpe_tokenizer.backend_tokenizer.to_str())["model"]
    merges = [tuple(merge.split(" ")) if isinstance(merge, str) else tuple(merge) for merge in model["merges"]]
    return RobertaTokenizer(vocab=model["vocab"], merges=merges, add_prefix_space=True)


@pytest.fixture(scope="session")
def extra_tokens_tokenizer(tiny_tokenizer):
    """WordPiece with two separators between question and context (as RoBERTa's pair) and a token after the pair."""
    return _with_template(tiny_tokenizer, "[CLS] $A [SEP] [SEP]:1 $B:1 [SEP]:1 [MASK]:0")


@pytest.fixture(scope="session")
def context_type_zero_tokenizer(tiny_tokenizer):
    """WordPiece whose template gives the context type id 0: the backend gives it 1 in the windows after the first."""
    return _with_template(tiny_tokenizer, "[CLS] $A [SEP] $B [SEP]")


@pytest.fixture(scope="session")
def added_tokens_tokenizer(tiny_tokenizer):
    """WordPiece with tokens of its own that the contexts hold: special and not, stripping the spaces beside them or
    not, matched before or after normalization."""
    import copy

    from tokenizers import AddedToken

    tokenizer = copy.deepcopy(tiny_tokenizer)
    tokenizer.add_tokens([AddedToken("normandy", lstrip=True, rstrip=True), AddedToken("Rollo", rstrip=True, normalized=False),
                          AddedToken("ruled", single_word=True)])
    tokenizer.add_tokens([AddedToken("<s>", lstrip=True, normalized=False, special=True),
                          AddedToken("911", rstrip=True, special=True)], special_tokens=True)
    return tokenizer


# Every tokenizer family above, by fixture name: the tests of where characters meet tokens (training targets, answers'
# offsets) run on each.
# The fast tier runs a family-parametrised test on three families, one a kind of offsets (WordPiece, byte-level BPE,
# SentencePiece's Metaspace); the slow tier on every family.
FAST_FAMILIES = ("tiny_tokenizer", "tiny_bpe_tokenizer", "metaspace_tokenizer")


def family_params(families: list[str]) -> list:
    """``families`` as parameters, those beyond :data:`FAST_FAMILIES` in the slow tier."""
    return [pytest.param(name, marks=() if name in FAST_FAMILIES else pytest.mark.slow) for name in families]


TOKENIZER_FAMILIES = ["tiny_tokenizer", "tiny_bpe_tokenizer", "metaspace_tokenizer", "metaspace_unnormalized_tokenizer",
                      "xlmr_style_tokenizer", "deberta_v2_style_tokenizer", "bpe_untrimmed_tokenizer", "bpe_prefix_space_tokenizer",
                      "extra_tokens_tokenizer", "context_type_zero_tokenizer", "added_tokens_tokenizer"]


# A context no page may execute or mangle, and one with a character beyond the BMP (two UTF-16 units in JavaScript).
HOSTILE_TEXT = "</script><script>alert(1)</script>"
BROWSER_PARAGRAPHS = [
    ("The Normans 😀 came from Normandy in France in the 10th century. Rollo was their first ruler. They spoke Norman "
     "French, built castles across England after 1066, and their ships sailed as far as Sicily and the Holy Land.",
     [("b1", "What country is Normandy in?", "France"), ("b2", "Who ruled the Normans?", "Rollo"),
      ("b3", "When did the Normans come?", "the 10th century")]),
    (f"The tag {HOSTILE_TEXT} ends a page & <b>bold</b> text stays \"quoted\".",
     [("b4", "What is in <b>?", HOSTILE_TEXT), ("b5", "Which is <b>it</b>?", "bold")]),
]


def write_browser_eval_file(path: Path) -> Path:
    """Five SQuAD v1.1 questions on two paragraphs: an emoji before the answers, a context that holds ``</script>``;
    each question within the 12 tokens the tests' models read."""
    import json

    paragraphs = [{"context": context, "qas": [{"id": qid, "question": question,
                                                "answers": [{"text": answer, "answer_start": context.index(answer)}]}
                                               for qid, question, answer in questions]}
                  for context, questions in BROWSER_PARAGRAPHS]
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "Browser", "paragraphs": paragraphs}]}), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def browser_comparison(tiny_encoder_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """A tiny comparison (a joint model and a span-only one, one seed) on the questions above: (output dir, results, summary)."""
    from bio_mrc.harness.compare import compare
    from bio_mrc.harness.config import parse_config

    folder = tmp_path_factory.mktemp("browser-comparison")
    raw = {
        "name": "browser", "train": {"path": str(SAMPLE_V1)}, "eval": {"path": str(write_browser_eval_file(folder / "eval.json"))},
        "defaults": {"encoder": str(tiny_encoder_dir), "max_seq_length": 48, "doc_stride": 16, "max_query_length": 12,
                     "epochs": 2, "batch_size": 4, "learning_rate": 1e-3, "training_args": {"logging_steps": 1}},
        "runs": [{"name": "joint", "heads": "span+bio", "bio_targets": "one-hot"}, {"name": "span-only", "heads": "span"}],
        "seeds": [1],
    }
    results, summary = compare(parse_config(raw), FIXTURES, folder / "out", progress=False)
    return folder / "out", results, summary


def ascii_locale_run(code: str, *args: str) -> subprocess.CompletedProcess:
    """``python -c code *args`` under ``LC_ALL=C`` with UTF-8 mode off, where file names are ASCII to Python: a
    non-ASCII name in ``args`` reaches it as surrogates, as it does from a shell on such a machine. Skips where the
    locale cannot be made so (Windows, macOS: their file names are UTF-8 whatever the locale)."""
    env = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    env.pop("PYTHONIOENCODING", None)
    probe = subprocess.run([sys.executable, "-c", "import sys; print(sys.getfilesystemencoding())"], env=env,
                           capture_output=True, text=True)
    if probe.returncode != 0 or probe.stdout.strip() == "utf-8":
        pytest.skip("no locale here whose file-name encoding is not UTF-8")
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True,
                          encoding="utf-8", errors="replace")
