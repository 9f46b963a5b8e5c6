"""The BIO decodings' recurrences over token positions (bio_mrc.decoding.tag_recurrences) give every output of the
plain step loop over all rows (the copy benchmarks/bench_tag_decoding.py times them against), to the last bit: the most probable sequence's spans and
their scores, the forward–backward messages, log Z, posteriors and the expected-F1 answer; on random tag
log-probabilities with ties forced, several rows, masks with holes and empty rows, span-length limits from 1 to past
the row, and infinite and NaN scores; each way (a row at a time on Python floats, a step at a time over all rows)."""

import numpy as np
import pytest

from bio_mrc.decoding import bio_spans, tag_recurrences
from bio_mrc.decoding.bio_spans import TagSpans, _TagLattice, expected_f1_tag_spans, likeliest_tag_spans
from bio_mrc.tags import TAG_B, TAG_I, TAG_O

from .test_benchmarks_cli import load_benchmark


@pytest.fixture
def before(monkeypatch):
    """The step loops over all rows, every candidate compared: the benchmark's copy of the way before, the reference."""
    return load_benchmark("bench_tag_decoding", monkeypatch)


def random_tags(rng: np.random.Generator, rows: int, length: int, ties: bool, holes: bool, non_finite: bool):
    """Tag log-probabilities and a mask: with ``ties`` a handful of values (equal candidates everywhere)."""
    if ties:
        log_probs = np.log(rng.choice([0.1, 0.2, 0.25, 0.3, 0.5], size=(rows, length, 3)))
    else:
        logits = rng.normal(size=(rows, length, 3)) * 3
        log_probs = logits - np.logaddexp.reduce(logits, axis=-1, keepdims=True)
    mask = np.arange(length)[None, :] < rng.integers(0, length + 1, size=rows)[:, None]  # an empty row now and then
    if holes:
        mask &= rng.random((rows, length)) > 0.15
    if non_finite:
        odd = rng.random(log_probs.shape) < 0.05
        log_probs[odd] = rng.choice([-np.inf, np.inf, np.nan, 0.0, -0.0], size=int(odd.sum()))
    return log_probs, mask


def assert_same_bits(ours, theirs, what: str) -> None:
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype, what
    if ours.dtype.kind == "f":  # NaN compares unequal: its bits, every NaN alike
        ours, theirs = (np.where(np.isnan(a), np.nan, a).view(np.int64) for a in (ours, theirs))
    assert np.array_equal(ours, theirs), what


def assert_same_spans(ours: TagSpans, theirs: TagSpans, what: str) -> None:
    for field in ("row", "start", "end", "score"):
        assert_same_bits(getattr(ours, field), getattr(theirs, field), f"{what}: {field}")


@pytest.fixture(params=["python rows", "numpy steps"])
def way(request, monkeypatch):
    """Every row a row at a time on Python floats, or every row a step at a time."""
    rows = 1 << 30 if request.param == "python rows" else 0
    monkeypatch.setattr(tag_recurrences, "VITERBI_PYTHON_ROWS", rows)
    monkeypatch.setattr(tag_recurrences, "MESSAGES_PYTHON_ROWS", rows)
    return request.param


@pytest.mark.parametrize("non_finite", [False, True])
def test_outputs_equal_the_step_loops_to_the_last_bit(way, non_finite, before):
    rng = np.random.default_rng(7 if non_finite else 3)
    for case in range(150):
        rows, length = int(rng.choice([1, 2, 5, 12])), int(rng.integers(1, 40))
        width = int(rng.choice([1, 2, 3, 7, 30, 100]))
        log_probs, mask = random_tags(rng, rows, length, ties=case % 2 == 0, holes=case % 3 == 0, non_finite=non_finite)
        what = f"{way}, case {case}: {rows} rows of {length}, width {width}"
        with np.errstate(all="ignore"):
            spans = likeliest_tag_spans(log_probs, mask, width)
            assert_same_spans(spans, before.step_likeliest_tag_spans(log_probs, mask, width), what)
            lattice = _TagLattice(log_probs, mask)
            for ours, theirs, name in zip((lattice.forward, lattice.backward, lattice.log_z),
                                          before.step_forward_backward(lattice.log_u), ("forward", "backward", "log Z")):
                assert_same_bits(ours, theirs, f"{what}: {name}")
            assert lattice.forward.flags.c_contiguous and lattice.backward.flags.c_contiguous  # sums read them in order


def test_multi_span_answers_equal_the_step_loops(way, monkeypatch, before):
    """The expected-F1 answer through both recurrences: spans, scores and posteriors to the last bit."""
    rng = np.random.default_rng(11)
    for case in range(40):
        rows, length = int(rng.choice([1, 3, 12])), int(rng.integers(2, 40))
        log_probs, mask = random_tags(rng, rows, length, ties=case % 2 == 0, holes=False, non_finite=False)
        answers = [expected_f1_tag_spans(log_probs, mask, 8, 5)]
        with monkeypatch.context() as patched:
            patched.setattr(bio_spans, "likeliest_tag_spans", before.step_likeliest_tag_spans)
            patched.setattr(bio_spans, "forward_backward", before.step_forward_backward)
            answers.append(expected_f1_tag_spans(log_probs, mask, 8, 5))
        (ours, ours_posterior), (theirs, theirs_posterior) = answers
        assert_same_spans(ours, theirs, f"{way}, case {case}")
        assert_same_bits(ours_posterior, theirs_posterior, f"{way}, case {case}: posteriors")


def test_a_long_row_of_many_spans(way, before):
    """A sure tagger over 3,000 tokens: a span of one to four tokens every few tokens, ties among equal gains."""
    rng = np.random.default_rng(5)
    tags = np.full(3000, TAG_O)
    for start in range(0, 2990, 7):
        tags[start] = TAG_B
        tags[start + 1:start + int(rng.integers(1, 5))] = TAG_I
    log_probs = np.log(np.where(np.arange(3) == tags[:, None], 0.8, 0.1))[None]
    mask = np.ones((1, 3000), dtype=bool)
    spans = likeliest_tag_spans(log_probs, mask, 30)
    assert_same_spans(spans, before.step_likeliest_tag_spans(log_probs, mask, 30), way)
    assert len(spans) == len(range(0, 2990, 7))
    for ours, theirs in zip(tag_recurrences.forward_backward(log_probs), before.step_forward_backward(log_probs)):
        assert_same_bits(ours, theirs, way)


def test_logaddexp_on_floats_is_numpys():
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.normal(size=20000) * scale for scale in (1e-3, 1.0, 30.0, 1e4)])
    y = np.concatenate([x[:10000] + rng.normal(size=10000) * 1e-12, rng.normal(size=len(x) - 10000) * 30.0])
    special = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1.0, -1e308, 1e308]
    x, y = np.concatenate([x, np.repeat(special, len(special))]), np.concatenate([y, np.tile(special, len(special))])
    with np.errstate(all="ignore"):
        expected = np.logaddexp(x, y)
    ours = np.array([tag_recurrences._logaddexp(a, b) for a, b in zip(x.tolist(), y.tolist())])
    assert_same_bits(ours, expected, "logaddexp")
