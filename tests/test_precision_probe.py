"""precision auto by measurement: the faster precision for the model's shapes, ties to fp32, cached per machine."""

import json
import math
import warnings

import pytest
import torch

from bio_mrc import precision as precision_module
from bio_mrc import precision_probe
from bio_mrc.errors import PrecisionCacheNote
from bio_mrc.precision import precision_choice, resolve_precision
from bio_mrc.precision_probe import FP32_ATTENTION, MatrixShapes, cache_file, choose, choose_attention, measure_rate, measured_choice, timed_rate
from bio_mrc.training.train import TrainConfig, load_run_record, train_model

SHAPES = MatrixShapes(hidden=32, intermediate=64, heads=2, batch=4, seq=48)


pytestmark = pytest.mark.usefixtures("fresh_precision_choices")


def fake_measure(rates: dict[str, float], calls: list | None = None):
    """A measurement that returns ``rates[precision]`` (bf16 with fp32 attention at bf16's rate unless given) and
    notes each call."""
    def measure(shapes, phase, precision):
        if calls is not None:
            calls.append((phase, precision))
        return rates[precision] if precision != FP32_ATTENTION else rates.get(precision, rates["bf16"])
    return measure


def native_cpu(monkeypatch, native: bool = True):
    monkeypatch.setattr(precision_module, "cpu_features", lambda: {"amx_bf16": False, "avx512_bf16": native})


def test_the_fastest_call_counts_after_an_untimed_warm_up():
    now = [0.0]
    durations = iter([1.0, 0.3, 0.1, 0.2])  # the warm-up is the slowest and is not timed
    step = lambda: now.__setitem__(0, now[0] + next(durations))
    assert timed_rate(step, tokens=50, clock=lambda: now[0], seconds=0.5) == pytest.approx(500.0)  # 50 tokens in 0.1 s


def test_calls_are_timed_for_the_probe_seconds_the_module_holds_when_called(monkeypatch):
    """Without ``seconds``, the probe reads :data:`PROBE_SECONDS` as the module holds it then, not as it was at import."""
    now, calls = [0.0], []

    def step():
        calls.append(now[0])
        now[0] += 0.1

    monkeypatch.setattr(precision_probe, "PROBE_SECONDS", 0.35)
    timed_rate(step, tokens=10, clock=lambda: now[0])
    assert len(calls) == 1 + 4  # the warm-up, then calls until 0.35 s have passed: at 0.1, 0.2, 0.3 and 0.4 s


@pytest.mark.parametrize("fp32, bf16, expected", [
    (100, 200, "bf16"), (100, 106, "bf16"),  # faster by more than 5%
    (100, 105, "fp32"), (100, 103, "fp32"),  # a tie within 5% keeps fp32
    (100, 46, "fp32"),  # native bf16 that is slower (AVX512-BF16 without AMX)
])
def test_the_faster_precision_is_chosen_and_ties_prefer_fp32(fp32, bf16, expected):
    assert choose({"fp32": fp32, "bf16": bf16}) == expected


def test_a_measurement_is_cached_and_read_back(tmp_path):
    calls = []
    first = measured_choice(SHAPES, "training", "a CPU", fake_measure({"fp32": 100.0, "bf16": 300.0}, calls))
    assert first["precision"] == "bf16" and first["how"] == "measured"
    assert calls == [("training", p) for p in ("fp32", "bf16", FP32_ATTENTION, FP32_ATTENTION, "bf16", "fp32")]  # alternating rounds
    assert (first["fp32_tokens_per_s"], first["bf16_tokens_per_s"]) == (100.0, 300.0)
    assert measured_choice(SHAPES, "training", "a CPU", fake_measure({}, calls)) == first  # this process remembers
    precision_probe._MEMO.clear()  # another process: the file answers
    again = measured_choice(SHAPES, "training", "a CPU", fake_measure({}, calls))
    assert again["how"] == "cached" and again["precision"] == "bf16" and len(calls) == 6
    cached = json.loads(cache_file().read_text())
    assert len(cached) == 1 and cache_file() == tmp_path / "cache" / "precision.json"


@pytest.mark.parametrize("phase, rates", [
    ("inference", {"fp32": 100.04, "bf16": 105.05}),  # bf16 by 5.0013%, kept as 100.0 and 105.0: a tie
    ("training", {"fp32": 100.0, "bf16": 90.0, FP32_ATTENTION: 105.04}),
])
def test_a_measurement_at_the_margin_is_cached_as_the_choice_its_kept_rates_make(phase, rates):
    """The cache keeps rates to one decimal and trusts an entry only where they make its choice: one chosen on rates
    a hair past the 5% margin read back as a tie, so every later process measured again, and a process among several
    (torchrun), which never measures, took bf16 with its own attention, whatever was measured."""
    first = measured_choice(SHAPES, phase, "a CPU", fake_measure(rates))
    precision_probe._MEMO.clear()  # another process: the file answers
    again = measured_choice(SHAPES, phase, "a CPU", fake_measure({}))
    assert again["how"] == "cached" and again["precision"] == first["precision"]
    assert again.get("attention") == first.get("attention")


def test_other_shapes_phases_and_cpus_are_measured_anew():
    calls = []
    measure = fake_measure({"fp32": 100.0, "bf16": 50.0}, calls)
    for shapes, phase, cpu in [(SHAPES, "training", "a"), (SHAPES, "inference", "a"),
                               (MatrixShapes(64, 256, 4, 4, 48), "training", "a"), (SHAPES, "training", "b")]:
        assert measured_choice(shapes, phase, cpu, measure)["how"] == "measured"
    assert len(calls) == 3 * 6 + 4 and len(json.loads(cache_file().read_text())) == 4  # training also times fp32 attention


def test_a_cap_on_the_kernels_instructions_is_another_machine(monkeypatch):
    """oneDNN confined to AVX512-BF16 on a CPU with AMX multiplies bf16 at a tenth of the rate: not the same cached choice."""
    for name in precision_probe.ISA_CAPS:
        monkeypatch.delenv(name, raising=False)
    plain = precision_probe.machine_key("a CPU")
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_BF16")
    capped = precision_probe.machine_key("a CPU")
    assert capped == plain + " | ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16"
    calls = []
    measure = fake_measure({"fp32": 100.0, "bf16": 50.0}, calls)
    measured_choice(SHAPES, "training", "a CPU", measure)
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA")
    assert measured_choice(SHAPES, "training", "a CPU", measure)["how"] == "measured" and len(calls) == 12


@pytest.mark.parametrize("content", [
    "{not json", "[1, 2]", "", '{"KEY": {"precision": "fp16"}}', "[" * 100_000 + "]" * 100_000,  # nested past the parser's stack
    # a choice its own rates contradict, rates that are no speed: measured anew, never trusted
    '{"KEY": {"precision": "bf16", "fp32_tokens_per_s": 100.0, "bf16_tokens_per_s": 1.0, "phase": "inference"}}',
    '{"KEY": {"precision": "bf16", "fp32_tokens_per_s": NaN, "bf16_tokens_per_s": NaN, "phase": "inference"}}',
    '{"KEY": {"precision": "bf16", "fp32_tokens_per_s": true, "bf16_tokens_per_s": true, "phase": "inference"}}',
    '{"KEY": {"precision": "bf16", "fp32_tokens_per_s": -1, "bf16_tokens_per_s": 5, "phase": "inference"}}',
])
def test_a_corrupt_cache_is_ignored_and_rewritten(content):
    path = cache_file()
    path.parent.mkdir(parents=True)
    key = precision_probe.cache_key("a CPU", SHAPES, "inference")
    path.write_text(content.replace("KEY", key.replace('"', '\\"')))
    choice = measured_choice(SHAPES, "inference", "a CPU", fake_measure({"fp32": 100.0, "bf16": 100.0}))
    assert choice["how"] == "measured" and choice["precision"] == "fp32"
    assert json.loads(path.read_text())[key]["precision"] == "fp32"  # a whole, valid file again
    assert [p.name for p in path.parent.iterdir()] == ["precision.json"]  # no temporary file left behind


def test_an_unsteady_measurement_is_used_but_not_cached():
    """Another job taking the cores during one round makes the two rounds disagree: the best rounds decide, nothing is cached."""
    rounds = {"fp32": iter([100.0, 100.0]), "bf16": iter([40.0, 200.0]), FP32_ATTENTION: iter([190.0, 190.0])}  # bf16's first round slowed 5x
    choice = measured_choice(SHAPES, "training", "a CPU", lambda shapes, phase, precision: next(rounds[precision]))
    assert choice["precision"] == "bf16" and choice["how"] == "measured (unsteady, not cached)"
    assert not cache_file().exists()


def test_threads_asking_for_one_choice_at_once_measure_it_once(monkeypatch):
    """Models loaded from several threads at once: one thread measures (its probes unshared with another's), the
    others take its choice; measuring in each would time each other's probes and could choose differently."""
    import threading

    from .conftest import WatchedLock

    calls, first_measuring, second_measuring = [], threading.Event(), threading.Event()
    plain = fake_measure({"fp32": 100.0, "bf16": 300.0}, calls)
    # the second thread asking for the choice's lock while the first measures sets second_measuring too
    monkeypatch.setattr(precision_probe, "_ONE_CHOICE", WatchedLock(threading.Lock(), second_measuring))

    def measure(shapes, phase, precision):
        if threading.current_thread().name == "second":
            second_measuring.set()
        elif not first_measuring.is_set():
            first_measuring.set()
            # until the second thread waits for the lock (one measures) or measures too; a hang guard
            assert second_measuring.wait(timeout=30), "the second thread neither waited for the lock nor measured"
        return plain(shapes, phase, precision)

    choices = {}

    def second():
        first_measuring.wait()
        choices["second"] = measured_choice(SHAPES, "inference", "a CPU", measure)

    thread = threading.Thread(target=second, name="second")
    thread.start()
    choices["first"] = measured_choice(SHAPES, "inference", "a CPU", measure)
    thread.join()
    assert choices["first"] == choices["second"] and choices["first"]["precision"] == "bf16"
    assert len(calls) == sum(map(len, precision_probe.ROUNDS["inference"]))


@pytest.mark.parametrize("fp32, bf16, with_fp32_attention, precision, attention", [
    (100, 150, 200, "bf16", "fp32"),  # the attention trains faster in fp32
    (100, 150, 155, "bf16", "bf16"),  # within 5% of bf16 throughout: the plain autocast path
    (100, 90, 120, "bf16", "fp32"),  # bf16 wins only with its attention in fp32
    (100, 90, 103, "fp32", "fp32"),  # neither bf16 beats fp32 by more than 5%: fp32 throughout
])
def test_bf16_training_takes_fp32_attention_where_it_is_faster(fp32, bf16, with_fp32_attention, precision, attention):
    rates = {"fp32": fp32, "bf16": bf16, FP32_ATTENTION: with_fp32_attention}
    choice = measured_choice(SHAPES, "training", "a CPU", fake_measure(rates))
    assert (choice["precision"], choice["attention"]) == (precision, attention) == (choose(rates), choice["attention"])
    assert choice["bf16_fp32_attention_tokens_per_s"] == with_fp32_attention
    if precision == "bf16":
        assert choose_attention(rates) == attention


def test_answering_never_times_fp32_attention_and_older_training_entries_are_measured_again():
    calls = []
    choice = measured_choice(SHAPES, "inference", "a CPU", fake_measure({"fp32": 1.0, "bf16": 2.0}, calls))
    assert FP32_ATTENTION not in {precision for _, precision in calls} and "attention" not in choice
    key = precision_probe.cache_key("a CPU", SHAPES, "training")
    older = {"precision": "bf16", "fp32_tokens_per_s": 1.0, "bf16_tokens_per_s": 2.0, "phase": "training"}  # before the attention was timed
    cache_file().write_text(json.dumps({key: older}))
    precision_probe._MEMO.clear()
    assert measured_choice(SHAPES, "training", "a CPU", fake_measure({"fp32": 1.0, "bf16": 2.0}))["how"] == "measured"


def test_the_cache_folder_follows_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.delenv("BIO_MRC_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_file() == tmp_path / "xdg" / "bio_mrc" / "precision.json"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_file() == tmp_path / "home" / ".cache" / "bio_mrc" / "precision.json"


def _no_home(monkeypatch):
    """A user the system does not list, with HOME unset (a container run under another user id)."""
    import pwd

    for name in ("BIO_MRC_CACHE_DIR", "XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: (_ for _ in ()).throw(KeyError(uid)))


def test_without_a_home_folder_the_choice_is_kept_for_this_process(monkeypatch, tmp_path):
    """Path.home() raised RuntimeError('Could not determine home directory.'): a traceback from --precision auto."""
    _no_home(monkeypatch)
    monkeypatch.chdir(tmp_path)
    assert cache_file() is None
    monkeypatch.setenv("BIO_MRC_CACHE_DIR", "~/cache")  # no home to read the ~ as: no folder named ~ here either
    assert cache_file() is None
    monkeypatch.delenv("BIO_MRC_CACHE_DIR")
    calls = []
    measure = fake_measure({"fp32": 1.0, "bf16": 2.0}, calls)
    assert measured_choice(SHAPES, "inference", "a CPU", measure)["precision"] == "bf16"
    assert measured_choice(SHAPES, "inference", "a CPU", measure)["how"] == "measured"  # this process's memo
    assert len(calls) == 4 and not list(tmp_path.iterdir())


def test_a_model_path_of_no_known_home_is_one_line(monkeypatch, tmp_path):
    from bio_mrc.errors import ModelFormatError
    from bio_mrc.hub import local_folder

    _no_home(monkeypatch)
    for name in ("~/model", "~nosuchuser/model"):  # Path.expanduser raised RuntimeError for each
        with pytest.raises(ModelFormatError, match=f"no such model folder \\(and not a Hugging Face hub id\\) \\(in {name}\\)"):
            local_folder(name)


def test_a_cache_folder_given_with_a_tilde_is_in_the_home_folder_and_a_relative_xdg_is_ignored(monkeypatch, tmp_path):
    """``BIO_MRC_CACHE_DIR='~/cache'`` (quoted, or set where no shell expands it) is the home folder's, never a folder
    named ``~`` in the working folder; a relative ``XDG_CACHE_HOME`` is ignored, as the XDG specification asks."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BIO_MRC_CACHE_DIR", "~/cache")
    assert cache_file() == tmp_path / "home" / "cache" / "precision.json"
    monkeypatch.delenv("BIO_MRC_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")
    assert cache_file() == tmp_path / "home" / ".cache" / "bio_mrc" / "precision.json"


UNWRITABLE = {  # a cache folder that cannot be written: where it lies, and the reason said
    "a file in its place": ("file", "a file has the folder's name"),
    "a folder below a file": ("file/below-a-file", "Not a directory"),
    "a read-only folder": ("read-only", "Permission denied"),
}


@pytest.mark.parametrize("case", UNWRITABLE)
def test_an_unwritable_cache_is_said_once_a_process_and_the_choice_still_made(monkeypatch, tmp_path, case):
    """Every process measured again and nobody was told: one note a process names the cache, the reason and the
    variable that chooses another folder; each choice is made all the same, and nothing is written elsewhere."""
    import os

    folder, reason = UNWRITABLE[case]
    (tmp_path / "file").write_text("")
    (tmp_path / "read-only").mkdir(mode=0o555)
    if case == "a read-only folder" and os.access(tmp_path / "read-only", os.W_OK):
        pytest.skip("this user writes in a read-only folder (root)")
    monkeypatch.setenv("BIO_MRC_CACHE_DIR", str(tmp_path / folder))
    before, calls = sorted(tmp_path.rglob("*")), []
    measure = fake_measure({"fp32": 1.0, "bf16": 2.0}, calls)
    with pytest.warns(PrecisionCacheNote) as said:
        choices = [measured_choice(SHAPES, phase, "a CPU", measure) for phase in ("inference", "training")]
    assert [(choice["precision"], choice["how"]) for choice in choices] == [("bf16", "measured")] * 2 and len(calls) == 10
    assert [str(warning.message) for warning in said] == [
        f"precision auto cannot keep its measurements in {tmp_path / folder / 'precision.json'} ({reason}): every process "
        "measures them again; set BIO_MRC_CACHE_DIR to a writable folder to keep them there"]
    assert sorted(tmp_path.rglob("*")) == before


def test_a_writable_cache_is_no_note(monkeypatch, tmp_path):
    monkeypatch.setenv("BIO_MRC_CACHE_DIR", str(tmp_path / "new" / "cache"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for phase in ("inference", "training"):
            assert measured_choice(SHAPES, phase, "a CPU", fake_measure({"fp32": 1.0, "bf16": 2.0}))["how"] == "measured"
    assert len(json.loads((tmp_path / "new" / "cache" / "precision.json").read_text())) == 2


def test_a_cache_folder_that_is_a_link_caches_where_it_points(monkeypatch, tmp_path):
    """A cache folder given as a link (to a larger disk, say) cached nothing: every process measured again, and processes
    among several, which never measure, never found the choice a single process had made."""
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    monkeypatch.setenv("BIO_MRC_CACHE_DIR", str(tmp_path / "link"))
    measured_choice(SHAPES, "inference", "a CPU", fake_measure({"fp32": 1.0, "bf16": 2.0}))
    assert list(json.loads((tmp_path / "elsewhere" / "precision.json").read_text()).values())[0]["precision"] == "bf16"
    precision_probe._MEMO.clear()
    assert measured_choice(SHAPES, "inference", "a CPU", fake_measure({}))["how"] == "cached"


def test_auto_takes_the_measured_choice_where_bf16_is_native(monkeypatch):
    native_cpu(monkeypatch)
    monkeypatch.setattr(precision_probe, "measure_rate", fake_measure({"fp32": 8.5, "bf16": 3.9}))  # the Xeon's training
    assert resolve_precision("auto", "cpu", SHAPES, "training") == "fp32"
    choice = precision_choice("auto", "cpu", SHAPES, "training")
    assert choice["how"] == "measured" and (choice["fp32_tokens_per_s"], choice["bf16_tokens_per_s"]) == (8.5, 3.9)
    assert precision_choice("auto", "cpu") == {"precision": "bf16", "how": "native"}  # no shapes known: the hardware rule


def test_an_explicit_precision_is_always_honoured(monkeypatch):
    native_cpu(monkeypatch)
    monkeypatch.setattr(precision_probe, "measure_rate", lambda *args: pytest.fail("an explicit precision measures nothing"))
    for precision in ("fp32", "bf16"):
        assert precision_choice(precision, "cpu", SHAPES, "training") == {"precision": precision, "how": "explicit"}
    native_cpu(monkeypatch, native=False)  # bf16 asked on a CPU that emulates it: still bf16
    assert resolve_precision("bf16", "cpu", SHAPES, "inference") == "bf16"


def test_without_native_bf16_auto_measures_nothing(monkeypatch):
    native_cpu(monkeypatch, native=False)
    monkeypatch.setattr(precision_probe, "measure_rate", lambda *args: pytest.fail("emulated bf16 is not measured"))
    assert precision_choice("auto", "cpu", SHAPES, "training") == {"precision": "fp32", "how": "not native"}


def test_a_process_among_several_reads_the_cache_and_never_measures(monkeypatch):
    native_cpu(monkeypatch)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setattr(precision_probe, "measure_rate", lambda *args: pytest.fail("ranks measure nothing: they could disagree"))
    assert precision_choice("auto", "cpu", SHAPES, "training") == {"precision": "bf16", "how": "native"}
    monkeypatch.setenv("WORLD_SIZE", "1")
    measured_choice(SHAPES, "training", precision_module.cpu_name(), fake_measure({"fp32": 2.0, "bf16": 1.0}))
    precision_probe._MEMO.clear()
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert precision_choice("auto", "cpu", SHAPES, "training")["precision"] == "fp32"  # what the single process measured


@pytest.mark.parametrize("phase", ["training", "inference"])
@pytest.mark.parametrize("precision", ["fp32", "bf16", FP32_ATTENTION])
def test_the_real_measurement_runs_one_layer_of_the_models_shapes(phase, precision):
    rate = measure_rate(SHAPES, phase, precision)
    assert math.isfinite(rate) and rate > 0


def test_two_probes_at_once_in_threads_leave_torchs_thread_count_as_they_found_it(monkeypatch):
    import threading

    import torch

    from .conftest import WatchedLock

    count = {"threads": 3}  # torch's intra-op thread count: one for the whole process
    monkeypatch.setattr(torch, "get_num_threads", lambda: count["threads"])
    monkeypatch.setattr(torch, "set_num_threads", lambda n: count.update(threads=n))
    first_running, second_read, first_done = threading.Event(), threading.Event(), threading.Event()
    # the second probe asking for the probes' lock while the first runs sets second_read too
    monkeypatch.setattr(precision_probe, "_ONE_PROBE", WatchedLock(threading.Lock(), second_read))

    def slow_rate(step, tokens, clock=None):  # the second probe ends after the first: it restores last
        if not first_running.is_set():
            first_running.set()
            # until the second probe waits for the lock (one at a time) or reads the first's 1 (unguarded); a hang guard
            second_read.wait(30)
        else:
            second_read.set()
            first_done.wait(5)
        return 1.0

    def first_probe() -> None:
        measure_rate(shapes, "inference", "fp32")
        first_done.set()

    monkeypatch.setattr(precision_probe, "timed_rate", slow_rate)
    shapes = MatrixShapes(8, 16, 2, 1, 4)
    first = threading.Thread(target=first_probe)
    first.start()
    assert first_running.wait(5)
    second = threading.Thread(target=measure_rate, args=(shapes, "inference", "fp32"))
    second.start()
    first.join(), second.join()
    assert count["threads"] == 3  # 1 before: the second saved the first's 1 and restored it last


def test_shapes_come_from_the_encoder_config():
    from transformers import BertConfig

    shapes = MatrixShapes.of(BertConfig(hidden_size=384, intermediate_size=1536, num_attention_heads=12), 16, 256)
    assert shapes == MatrixShapes(384, 1536, 12, 16, 256) and shapes.probe_batch() == 1
    assert shapes.probe_batch("inference") == 4  # a forward pass is timed on four windows
    assert MatrixShapes(32, 64, 2, 16, 48).probe_batch() == 5 and MatrixShapes(32, 64, 2, 2, 48).probe_batch() == 2


def test_training_records_the_choice_and_the_rates(tiny_encoder_dir, tmp_path, sample_v1, monkeypatch):
    from bio_mrc.model_card import write_model_card

    native_cpu(monkeypatch)
    calls = []
    monkeypatch.setattr(precision_probe, "measure_rate", fake_measure({"fp32": 1000.0, "bf16": 2500.0}, calls))
    config = TrainConfig(encoder=str(tiny_encoder_dir), heads="span", max_seq_length=48, doc_stride=16, max_query_length=12,
                         epochs=1, batch_size=8, precision="auto")
    model_dir = train_model(sample_v1.examples[:8], config, tmp_path / "m").model_dir
    record = load_run_record(model_dir)
    assert record["train"]["precision"] == "bf16"
    training, inference = record["precision_choice"]["training"], record["precision_choice"]["inference"]
    assert training["precision"] == "bf16" and training["how"] == "measured" and training["phase"] == "training"
    assert (training["fp32_tokens_per_s"], training["bf16_tokens_per_s"]) == (1000.0, 2500.0)
    assert training["shapes"] == {"hidden": 32, "intermediate": 64, "heads": 2, "batch": 8, "seq": 48}
    assert inference["phase"] == "inference" and inference["shapes"]["batch"] == 16
    assert sorted(calls) == sorted([("training", q) for q in ("fp32", "bf16", FP32_ATTENTION)] * 2 + [("inference", q) for q in ("fp32", "bf16")] * 2)
    assert training["attention"] == "bf16" and "attention" not in inference  # fp32 attention timed at bf16's rate: a tie
    card = write_model_card(model_dir).read_text()
    assert "Precision: training `bf16` (measured: bf16 2,500 against fp32 1,000 tokens/s" in card


def test_an_explicit_training_precision_is_recorded_as_asked(tiny_encoder_dir, tmp_path, sample_v1, monkeypatch):
    native_cpu(monkeypatch)
    monkeypatch.setattr(precision_probe, "measure_rate", lambda *args: pytest.fail("an explicit precision measures nothing"))
    config = TrainConfig(encoder=str(tiny_encoder_dir), heads="span", max_seq_length=48, doc_stride=16, max_query_length=12,
                         epochs=1, batch_size=8, precision="fp32")
    record = load_run_record(train_model(sample_v1.examples[:8], config, tmp_path / "m").model_dir)
    assert record["precision_choice"] == {"training": {"precision": "fp32", "how": "explicit"}}


def test_a_named_pipe_at_the_caches_name_is_no_cache(monkeypatch, tmp_path):
    """Reading it waited for a writer for ever: --precision auto hung before answering."""
    import os

    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / "precision.json")
    monkeypatch.setenv("BIO_MRC_CACHE_DIR", str(tmp_path / "fifo"))
    with pytest.warns(PrecisionCacheNote, match=r"\(this is a named pipe \(FIFO\), not a file\): every process measures"):
        assert measured_choice(SHAPES, "inference", "a CPU", fake_measure({"fp32": 2.0, "bf16": 1.0}))["precision"] == "fp32"
    assert (tmp_path / "fifo" / "precision.json").is_fifo()  # left as it is, the choice kept for this process


def test_a_process_on_another_thread_count_reads_what_a_single_process_measured(monkeypatch):
    """torchrun starts each process on one thread; the probe times one core whatever the process's count, so the
    entry a process on two threads measured is the one the ranks read (they took bf16, never finding it)."""
    native_cpu(monkeypatch)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    measured_choice(SHAPES, "training", precision_module.cpu_name(), fake_measure({"fp32": 2.0, "bf16": 1.0}))
    precision_probe._MEMO.clear()
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    monkeypatch.setenv("WORLD_SIZE", "2")
    choice = precision_choice("auto", "cpu", SHAPES, "training")
    assert (choice["precision"], choice["how"]) == ("fp32", "cached")  # bf16 ("native") before: the entry went unread


@pytest.mark.parametrize("variable, cap, expected", [
    ("ONEDNN_MAX_CPU_ISA", "AVX2", {"precision": "fp32", "how": "not native"}),  # an AMD Zen 3's kernels
    ("ONEDNN_MAX_CPU_ISA", "avx512_core", {"precision": "fp32", "how": "not native"}),  # AVX-512 without bf16
    ("DNNL_MAX_CPU_ISA", "AVX512_CORE_VNNI", {"precision": "fp32", "how": "not native"}),
    ("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_BF16", {"precision": "bf16", "how": "native"}),  # a Xeon kept from AMX: bf16 native
])
def test_kernels_capped_below_bf16_are_not_native_even_among_several_processes(monkeypatch, variable, cap, expected):
    """Under a cap that keeps oneDNN from bf16 instructions bf16 is emulated (0.22x fp32 on a Zen 4 under AVX2): auto is
    fp32 measuring nothing, also where a process among several would take bf16 without a cached entry."""
    native_cpu(monkeypatch)
    for name in precision_probe.ISA_CAPS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, cap)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setattr(precision_probe, "measure_rate", lambda *args: pytest.fail("nothing is measured here"))
    assert precision_choice("auto", "cpu", SHAPES, "training") == expected
    assert precision_module.native_bf16("cpu") is (expected["precision"] == "bf16")


def _store_entries(path, process, count):
    for n in range(count):
        precision_probe.store(path, f"process {process} entry {n}", {"precision": "fp32"})


def test_processes_storing_at_once_keep_every_entry(tmp_path):
    import multiprocessing

    path = tmp_path / "precision.json"
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_store_entries, args=(path, process, 40)) for process in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert [worker.exitcode for worker in workers] == [0, 0, 0, 0]
    assert len(json.loads(path.read_text())) == 160  # each process read, changed and rewrote the file alone
