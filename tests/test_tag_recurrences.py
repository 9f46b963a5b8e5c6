"""The BIO decodings' recurrences over token positions (bio_mrc.decoding.tag_recurrences) give every output of the
plain step loop over all rows, kept here as the reference, to the last bit: the most probable sequence's spans and
their scores, the forward–backward messages, log Z, posteriors and the expected-F1 answer; on random tag
log-probabilities with ties forced, several rows, masks with holes and empty rows, span-length limits from 1 to past
the row, and infinite and NaN scores; each way (a row at a time on Python floats, a step at a time over all rows)."""

import numpy as np
import pytest

from bio_mrc.decoding import bio_spans, tag_recurrences
from bio_mrc.decoding.bio_spans import TagSpans, _TagLattice, expected_f1_tag_spans, likeliest_tag_spans
from bio_mrc.tags import TAG_B, TAG_I, TAG_O


def reference_likeliest_tag_spans(log_probs: np.ndarray, mask: np.ndarray, max_span_length: int) -> TagSpans:
    """The semi-Markov Viterbi search a step at a time over all rows, every candidate compared, and its trace."""
    mask = np.asarray(mask, dtype=bool)
    n, length = mask.shape
    begin, inside = bio_spans.tag_gains(log_probs, mask)
    cumulative = np.cumsum(np.where(mask, inside, 0.0), axis=1)
    open_at = begin - cumulative
    positions = np.arange(length)
    run_start = np.maximum.accumulate(np.where(mask & ~np.pad(mask, ((0, 0), (1, 0)))[:, :-1], positions, 0), axis=1)
    width = max(1, min(max_span_length, length))
    best = np.zeros((n, length + 1))
    back = np.zeros((n, length + 1), dtype=np.int64)
    lengths = np.arange(1, width + 1)
    for p in range(1, length + 1):
        starts = p - lengths
        valid = (starts >= 0)[None, :] & (starts[None, :] >= run_start[:, [p - 1]]) & mask[:, [p - 1]]
        safe = np.maximum(starts, 0)
        candidate = np.where(valid, best[:, safe] + open_at[:, safe] + cumulative[:, [p - 1]], -np.inf)
        k = candidate.argmax(axis=1)
        take = candidate[np.arange(n), k] > best[:, p - 1]
        best[:, p] = np.where(take, candidate[np.arange(n), k], best[:, p - 1])
        back[:, p] = np.where(take, k + 1, 0)
    rows_all, position, found = np.arange(n), np.full(n, length), []
    while (position > 0).any():
        step = back[rows_all, position]
        ends_span = (step > 0) & (position > 0)
        found.append((rows_all[ends_span], (position - step)[ends_span], (position - 1)[ends_span]))
        position = np.maximum(position - np.maximum(step, 1), 0)
    rows, starts, ends = (np.concatenate([f[i] for f in found]).astype(np.int64) if found else np.zeros(0, np.int64) for i in range(3))
    order = np.lexsort((starts, rows))
    rows, starts, ends = rows[order], starts[order], ends[order]
    return TagSpans(rows, starts, ends, open_at[rows, starts] + cumulative[rows, ends])


def reference_forward_backward(log_u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Forward and backward log-messages a step at a time over all rows, each step's sums by ``logaddexp.reduce``."""
    n, length, _ = log_u.shape
    forward, backward = np.empty_like(log_u), np.zeros_like(log_u)
    forward[:, 0] = log_u[:, 0] + np.where(np.arange(3) == TAG_I, -np.inf, 0.0)
    for t in range(1, length):
        from_any = np.logaddexp.reduce(forward[:, t - 1], axis=-1)
        forward[:, t, TAG_B] = log_u[:, t, TAG_B] + from_any
        forward[:, t, TAG_O] = log_u[:, t, TAG_O] + from_any
        forward[:, t, TAG_I] = log_u[:, t, TAG_I] + np.logaddexp(forward[:, t - 1, TAG_B], forward[:, t - 1, TAG_I])
    for t in range(length - 2, -1, -1):
        next_tag = log_u[:, t + 1] + backward[:, t + 1]
        to_any = np.logaddexp.reduce(next_tag, axis=-1)
        backward[:, t, TAG_B] = backward[:, t, TAG_I] = to_any
        backward[:, t, TAG_O] = np.logaddexp(next_tag[:, TAG_B], next_tag[:, TAG_O])
    return forward, backward, np.logaddexp.reduce(forward[:, -1], axis=-1)


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
def test_outputs_equal_the_step_loops_to_the_last_bit(way, non_finite):
    rng = np.random.default_rng(7 if non_finite else 3)
    for case in range(150):
        rows, length = int(rng.choice([1, 2, 5, 12])), int(rng.integers(1, 40))
        width = int(rng.choice([1, 2, 3, 7, 30, 100]))
        log_probs, mask = random_tags(rng, rows, length, ties=case % 2 == 0, holes=case % 3 == 0, non_finite=non_finite)
        what = f"{way}, case {case}: {rows} rows of {length}, width {width}"
        with np.errstate(all="ignore"):
            spans = likeliest_tag_spans(log_probs, mask, width)
            assert_same_spans(spans, reference_likeliest_tag_spans(log_probs, mask, width), what)
            lattice = _TagLattice(log_probs, mask)
            for ours, theirs, name in zip((lattice.forward, lattice.backward, lattice.log_z),
                                          reference_forward_backward(lattice.log_u), ("forward", "backward", "log Z")):
                assert_same_bits(ours, theirs, f"{what}: {name}")
            assert lattice.forward.flags.c_contiguous and lattice.backward.flags.c_contiguous  # sums read them in order


def test_multi_span_answers_equal_the_step_loops(way, monkeypatch):
    """The expected-F1 answer through both recurrences: spans, scores and posteriors to the last bit."""
    rng = np.random.default_rng(11)
    for case in range(40):
        rows, length = int(rng.choice([1, 3, 12])), int(rng.integers(2, 40))
        log_probs, mask = random_tags(rng, rows, length, ties=case % 2 == 0, holes=False, non_finite=False)
        answers = [expected_f1_tag_spans(log_probs, mask, 8, 5)]
        with monkeypatch.context() as patched:
            patched.setattr(bio_spans, "likeliest_tag_spans", reference_likeliest_tag_spans)
            patched.setattr(bio_spans, "forward_backward", reference_forward_backward)
            answers.append(expected_f1_tag_spans(log_probs, mask, 8, 5))
        (ours, ours_posterior), (theirs, theirs_posterior) = answers
        assert_same_spans(ours, theirs, f"{way}, case {case}")
        assert_same_bits(ours_posterior, theirs_posterior, f"{way}, case {case}: posteriors")


def test_a_long_row_of_many_spans(way):
    """A sure tagger over 3,000 tokens: a span of one to four tokens every few tokens, ties among equal gains."""
    rng = np.random.default_rng(5)
    tags = np.full(3000, TAG_O)
    for start in range(0, 2990, 7):
        tags[start] = TAG_B
        tags[start + 1:start + int(rng.integers(1, 5))] = TAG_I
    log_probs = np.log(np.where(np.arange(3) == tags[:, None], 0.8, 0.1))[None]
    mask = np.ones((1, 3000), dtype=bool)
    spans = likeliest_tag_spans(log_probs, mask, 30)
    assert_same_spans(spans, reference_likeliest_tag_spans(log_probs, mask, 30), way)
    assert len(spans) == len(range(0, 2990, 7))
    for ours, theirs in zip(tag_recurrences.forward_backward(log_probs), reference_forward_backward(log_probs)):
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
