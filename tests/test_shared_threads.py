"""One loaded model shared by the threads of a web application: every call answers as it does alone, and what the
process holds (the code fingerprint, transformers' verbosity, a warning given once) stays as it would in one thread."""

import copy
import random
import shutil
import sys
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import pytest

from bio_mrc.features.windows import FeatureConfig, tokenize_windows, truncate_questions
from bio_mrc.inference import AnswerExtractor, TrainedModel
from bio_mrc.inference.pipeline import TASK
from bio_mrc.types import Example
from .conftest import _vocabulary

SMALL = FeatureConfig(max_seq_length=40, doc_stride=12, max_query_length=10, tag_level="subword")


def texts(count: int, seed: int, lengths: tuple[int, ...] = (3, 30, 120)) -> list[str]:
    """``count`` texts of ``lengths`` words of the tiny vocabulary (plain ASCII words: a token each) and a full stop."""
    words = [word for word in _vocabulary()[5:] if word.isascii() and word.isalpha()]
    rng = random.Random(seed)
    return [" ".join(rng.choice(words) for _ in range(rng.choice(lengths))) + "." for _ in range(count)]


def at_once(count: int, work) -> list:
    """What ``work()`` returns (or the SystemError it raises) in each of ``count`` threads started together."""
    start, results = threading.Barrier(count), []

    def run():
        start.wait()
        try:
            results.append(work())
        except SystemError as err:  # the finding
            results.append(repr(err))

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


@pytest.mark.slow  # 252 calls, each alone and twice in eight threads
def test_one_extractor_and_one_pipeline_answer_eight_threads_as_each_call_alone(trained_dir):  # noqa: F811
    from transformers import pipeline

    qa = pipeline(TASK, model=str(trained_dir), device="cpu", precision="fp32")
    extractor = AnswerExtractor(qa.extractor.trained)
    questions, contexts = texts(12, 0, lengths=(3, 7, 11)), texts(12, 1)  # questions within the 12 tokens the model reads
    calls = [
        lambda k: extractor(questions[k], contexts[k]),
        lambda k: extractor(questions[k], contexts[k], multi_span=True, decoding=("span", "bio", "joint")[k % 3]),
        lambda k: extractor(questions[k], contexts[k], top_k=1 + k % 4, decoding=("span", "joint")[k % 2]),
        lambda k: extractor(questions[k], contexts[k: k + 3], top_k=2, multi_span=bool(k % 2)),
        lambda k: extractor(questions[k: k + 3], contexts[k], decoding="bio"),
        lambda k: qa(question=questions[k], context=contexts[k], top_k=1 + k % 3),
        lambda k: qa(question=questions[k], context=contexts[k: k + 2], multi_span=True),
    ]
    jobs = [(kind, k) for kind in range(len(calls)) for k in range(len(questions))]
    alone = {job: repr(calls[job[0]](job[1])) for job in jobs}
    with ThreadPoolExecutor(8) as pool:
        shared = list(pool.map(lambda job: (job, repr(calls[job[0]](job[1]))), jobs * 2))
    assert [job for job, got in shared if got != alone[job]] == []


@pytest.mark.slow  # 30 fresh packages, each parsed by four threads switching every microsecond
def test_threads_asking_for_the_code_fingerprint_at_once_compute_it_once(tmp_path, monkeypatch):
    """A cached windows file is named by the fingerprint of the windows' code, which parses its sources (models trained
    from several threads of one process ask for it at once). CPython 3.11's parser keeps one depth count for the
    process: a parse in one thread while another was inside its own (a garbage collection running a finalizer hands
    over the interpreter) failed with ``SystemError: AST constructor recursion depth mismatch``. The first caller
    computes it; the others wait for it and read its value."""
    from bio_mrc import code_fingerprint

    computed = []
    closure = code_fingerprint.source_closure
    monkeypatch.setattr(code_fingerprint, "source_closure", lambda *args: computed.append(args) or closure(*args))
    sources = closure(("bio_mrc.answer_text",))

    class Cycle:  # garbage a collection frees by running Python code, in whichever thread collects
        def __init__(self):
            self.itself = self

        def __del__(self):
            sum(range(500))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for attempt in range(30):  # a fresh package each time: a first computation
            package = tmp_path / str(attempt) / "bio_mrc"
            for path in sources:
                target = package / path.relative_to(code_fingerprint.PACKAGE_DIR)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
            computed[:] = []

            def ask(package=package):
                for _ in range(30):
                    Cycle()
                return code_fingerprint.sources_fingerprint(("bio_mrc.answer_text",), package)

            found = at_once(4, ask)
            assert len(computed) == 1
            assert found == [code_fingerprint.sources_digest(("bio_mrc.answer_text",), package)] * 4
    finally:
        sys.setswitchinterval(interval)


def test_copies_of_one_tokenizer_take_turns_as_the_tokenizer_itself_does(tiny_tokenizer, monkeypatch):
    """A tokenizer that cuts on the left is copied to cut on the right (``right_sided``; two pipelines given the same
    tokenizer each make one). The copies share the Rust tokenizer whose truncation each call sets: one copy's
    questions must wait for the other's windows, or the windows are cut with the questions' settings."""
    from transformers.tokenization_utils_base import TruncationStrategy

    from bio_mrc.encoders import right_sided
    from bio_mrc.features import pair_windows
    from bio_mrc.features import tokenizer_lock as lock_module

    from .conftest import WatchedLock

    # the backend's own overflow cutting of the whole context (windows sliced from the context alone set a truncation
    # only to cut a short probe pair)
    monkeypatch.setattr(pair_windows, "_sliced_windows", lambda *args: None)
    left = copy.copy(tiny_tokenizer)
    left.truncation_side = "left"
    windows_copy, questions_copy = right_sided(left), right_sided(left)
    assert windows_copy is not questions_copy and windows_copy.backend_tokenizer is questions_copy.backend_tokenizer
    windows_set, questions_set = threading.Event(), threading.Event()
    # the questions' copy asking for the shared tokenizer's lock while the windows' copy holds it sets questions_set too
    monkeypatch.setitem(lock_module._LOCKS, left.backend_tokenizer, WatchedLock(threading.RLock(), questions_set))

    def interleaving(real):
        def set_and_interleave(*args, **kwargs):
            real(*args, **kwargs)
            if kwargs["truncation_strategy"] == TruncationStrategy.ONLY_SECOND:
                windows_set.set()
                # until the questions wait for the lock (taking turns) or have set theirs (interleaved); a hang guard
                assert questions_set.wait(timeout=30), "the questions neither waited for the tokenizer nor set theirs"
            elif windows_set.is_set():
                questions_set.set()
        return set_and_interleave

    example = Example("0", "where did the cat sit", "the cat sat on the mat and the dog lay on the rug " * 20, None)
    alone = [list(ids) for ids in tokenize_windows([example], windows_copy, SMALL)["input_ids"]]
    question = "where did the cat sit on the mat today"
    question_alone = truncate_questions([question], questions_copy, 4)
    for tokenizer in (windows_copy, questions_copy):  # after the calls alone: none waits
        monkeypatch.setattr(tokenizer, "set_truncation_and_padding", interleaving(tokenizer.set_truncation_and_padding))
    results, errors = {}, []

    def cut_windows():
        try:
            results["windows"] = [list(ids) for ids in tokenize_windows([example], windows_copy, SMALL)["input_ids"]]
        except Exception as err:  # noqa: BLE001 - the failure is the finding
            errors.append(err)

    thread = threading.Thread(target=cut_windows)
    thread.start()
    assert windows_set.wait(timeout=30), "the window call never set its truncation"
    questions = truncate_questions([question], questions_copy, 4)
    thread.join()
    assert not errors
    assert results["windows"] == alone and max(map(len, alone)) <= SMALL.max_seq_length
    assert questions == question_alone


@pytest.fixture(scope="module")
def qa_checkpoint(tiny_encoder_dir, tmp_path_factory):
    """transformers' own extractive QA model of the tiny encoder, with its tokenizer."""
    from transformers import AutoTokenizer, BertConfig, BertForQuestionAnswering

    folder = tmp_path_factory.mktemp("bert-qa")
    BertForQuestionAnswering(BertConfig.from_pretrained(str(tiny_encoder_dir))).save_pretrained(str(folder))
    AutoTokenizer.from_pretrained(str(tiny_encoder_dir)).save_pretrained(str(folder))
    return folder


def test_threads_loading_qa_models_at_once_leave_transformers_verbosity_as_they_found_it(qa_checkpoint):
    """Each load quiets transformers while it reads the model; one load ending inside another's restored the level
    the other had set, so the process was left with transformers' warnings off."""
    from transformers.utils import logging

    found = logging.get_verbosity()
    for _ in range(5):
        models = at_once(4, lambda: TrainedModel.load(qa_checkpoint, device="cpu", precision="fp32"))
        assert [type(model) for model in models] == [TrainedModel] * 4 and logging.get_verbosity() == found


def test_threads_calling_one_pipeline_warn_of_its_constructors_default_once(trained_dir, monkeypatch):  # noqa: F811
    """``handle_impossible_answer=True`` given to the constructor of a model without a threshold is said once, at the
    first call it applies to, however many threads make that call at once."""
    from transformers import pipeline

    from bio_mrc.inference import pipeline as qa_pipeline
    from bio_mrc.inference.abstention import NeverAbstainsWarning

    from .conftest import WatchedLock

    qa = pipeline(TASK, model=str(trained_dir), device="cpu", handle_impossible_answer=True)
    first_in, second_in, entered = threading.Event(), threading.Event(), []
    line = qa_pipeline.never_abstains_line
    # the second call asking for the warning's lock while the first holds it sets second_in too
    monkeypatch.setattr(qa_pipeline, "_WARNING_ONCE", WatchedLock(threading.Lock(), second_in))

    def meeting(*args, **kwargs):
        entered.append(None)
        if len(entered) == 1:
            first_in.set()
            # until the second call waits for the lock (one at a time) or has come in (both deciding); a hang guard
            second_in.wait(timeout=30)
        else:
            second_in.set()
        return line(*args, **kwargs)

    monkeypatch.setattr(qa_pipeline, "never_abstains_line", meeting)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        thread = threading.Thread(target=qa, kwargs={"question": "who", "context": "the normans ruled."})
        thread.start()
        first_in.wait()
        qa(question="who ruled", context="the normans ruled.")
        thread.join()
    assert len([w for w in caught if issubclass(w.category, NeverAbstainsWarning)]) == 1


def test_windows_held_in_memory_are_named_without_serialising_the_tokenizer(tiny_tokenizer, monkeypatch):
    """Every answering call cuts its windows in memory. Their name was the windows cache's key, which holds the
    tokenizer's whole definition: JSON of a 30,000-word vocabulary read and written again at each call (~95 ms) while
    every other thread waited for the interpreter. Only a cached windows file needs that key."""
    from bio_mrc.features import windows

    def serialised(tokenizer):
        raise AssertionError("the tokenizer was serialised")

    monkeypatch.setattr(windows, "_tokenizer_definition", serialised)
    example = Example("0", "where did the cat sit", "the cat sat on the mat", None)
    features = windows.build_features([example], tiny_tokenizer, SMALL, with_targets=False)
    assert features["input_ids"] == [list(ids) for ids in tokenize_windows([example], tiny_tokenizer, SMALL)["input_ids"]]
