"""The BIO decodings' recurrences over token positions: the semi-Markov Viterbi totals of
:func:`~bio_mrc.decoding.bio_spans.likeliest_tag_spans` and the forward–backward log-messages of its tag lattice.

Each gives every value to the last bit as one numpy step over all rows at every position would: the same additions
in the same order, the same comparisons and tie rules, and ``logaddexp`` as numpy computes it (``log1p`` and ``exp``
of the C library, which ``math`` calls too). A step over all rows costs a few microseconds of numpy calls whatever
the rows, so a few rows (one long document) run a row at a time on Python floats, and many rows a step at a time with
fewer numpy calls a step (the window's largest total read; a span's length sought only where a path's span ends).
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

#: Rows at most that the Viterbi search and its path run a row at a time on Python floats: on a 2-core AMD EPYC about
#: 0.5 µs a token a row, against about 4 µs a step over all rows.
VITERBI_PYTHON_ROWS = 8
#: The same for the forward–backward messages: about 1.2 µs a token a row, against about 7 µs a step.
MESSAGES_PYTHON_ROWS = 6

_LOG_2 = 0.6931471805599453  # numpy's logaddexp(x, x) - x
_NEG_INF = -math.inf


def _logaddexp(x: float, y: float) -> float:
    """``numpy.logaddexp`` on two floats, its branches in its order."""
    if x == y:  # equal infinities without an inf - inf
        return x + _LOG_2
    difference = x - y
    if difference > 0:
        return x + math.log1p(math.exp(-difference))
    if difference <= 0:
        return y + math.log1p(math.exp(difference))
    return difference  # NaN


# ----------------------------------------------------------------------------- Viterbi totals


def viterbi_totals(open_at: np.ndarray, cumulative: np.ndarray, mask: np.ndarray, run_start: np.ndarray, width: int) -> np.ndarray:
    """``best`` (N, L + 1): the best total ``r`` of the tokens before each boundary, no span over ``width`` tokens,
    ``best[p] = max(best[p - 1], max_k best[p - k] + open_at[p - k] + cumulative[p - 1])`` over the ``k`` tokens back
    within ``p - 1``'s run of tagged tokens (``run_start``), a candidate taken only when strictly greater."""
    n, length = mask.shape
    plain = _bounded_rows(open_at, cumulative, mask)
    best = np.zeros((n, length + 1))
    rows = np.flatnonzero(plain)
    if len(rows) <= VITERBI_PYTHON_ROWS:
        for row in rows.tolist():
            depth = np.where(mask[row], np.arange(length) - run_start[row] + 1, 0)  # tagged tokens ending at each token
            best[row] = _row_totals(open_at[row].tolist(), cumulative[row].tolist(), depth.tolist(), width)
    else:
        best[rows] = _step_totals(open_at[rows], cumulative[rows], mask[rows], width)
    others = np.flatnonzero(~plain)
    if len(others):
        best[others] = _candidate_totals(open_at[others], cumulative[others], mask[others], run_start[others], width)
    return best


def _bounded_rows(open_at: np.ndarray, cumulative: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Rows whose gains are finite and small enough that no total overflows: there the best candidate is the largest
    ``best + open_at`` plus ``cumulative`` (rounding keeps order) and never NaN, so it is found without the others."""
    length = mask.shape[1]
    extremes = [gains.max(axis=1, where=where, initial=-np.inf) for gains, where in ((open_at, mask), (-open_at, mask))]
    extremes += [cumulative.max(axis=1, initial=-np.inf), (-cumulative).max(axis=1, initial=-np.inf)]
    scale = np.max(extremes, axis=0)  # NaN where any gain is
    with np.errstate(invalid="ignore", over="ignore"):
        return np.isfinite(scale) & (scale * 4.0 * (length + 1) < np.finfo(np.float64).max)


def _row_totals(open_at: list[float], cumulative: list[float], depth: list[int], width: int) -> list[float]:
    """One row's totals on Python floats: the largest ``best + open_at`` of the window kept in a deque."""
    best = [0.0]
    previous = 0.0
    window: deque[tuple[int, float]] = deque()  # (start, best + open_at), values decreasing
    for token, (gain, tagged) in enumerate(zip(open_at, depth)):
        if tagged:
            value = previous + gain
            while window and window[-1][1] <= value:
                window.pop()
            window.append((token, value))
            first = token + 1 - min(tagged, width)
            while window[0][0] < first:
                window.popleft()
            candidate = window[0][1] + cumulative[token]
            if candidate > previous:
                previous = candidate
        best.append(previous)
    return best


def _step_totals(open_at: np.ndarray, cumulative: np.ndarray, mask: np.ndarray, width: int) -> np.ndarray:
    """Many rows' totals a step at a time: ``best + open_at`` of every token kept, the window's largest one read."""
    n, length = mask.shape
    best = np.zeros((n, length + 1))
    value = np.full((n, length), -np.inf)  # best + open_at of each start; -inf where none may start
    closing = np.where(mask, cumulative, -np.inf)  # no span ends on an untagged token
    resets = _run_starts(mask)
    candidate = np.empty(n)
    for token in range(length):
        np.add(best[:, token], open_at[:, token], out=value[:, token])  # -inf at an untagged token
        for row in resets.get(token, ()):
            value[row, max(0, token - width + 1):token] = -np.inf  # an earlier run's starts
        np.add(value[:, max(0, token - width + 1):token + 1].max(axis=1), closing[:, token], out=candidate)
        np.maximum(best[:, token], candidate, out=best[:, token + 1])  # no NaN here, no total -0.0: the strictly greater taken
    return best


def _run_starts(mask: np.ndarray) -> dict[int, list[int]]:
    """The rows by token where a run of tagged tokens other than a row's first begins."""
    rows, tokens = np.nonzero(mask[:, 1:] & ~mask[:, :-1])
    resets: dict[int, list[int]] = {}
    for row, token in zip(rows.tolist(), (tokens + 1).tolist()):
        resets.setdefault(token, []).append(row)
    return resets


def _candidate_totals(open_at: np.ndarray, cumulative: np.ndarray, mask: np.ndarray, run_start: np.ndarray, width: int) -> np.ndarray:
    """Rows with an infinite or NaN gain, every candidate compared as the step search always has: a NaN candidate
    is the argmax and never taken."""
    n, length = mask.shape
    best = np.zeros((n, length + 1))
    lengths = np.arange(1, width + 1)
    for p in range(1, length + 1):
        starts = p - lengths
        valid = (starts >= 0)[None, :] & (starts[None, :] >= run_start[:, [p - 1]]) & mask[:, [p - 1]]
        safe = np.maximum(starts, 0)
        candidate = np.where(valid, best[:, safe] + open_at[:, safe] + cumulative[:, [p - 1]], -np.inf)
        chosen = candidate[np.arange(n), candidate.argmax(axis=1)]
        best[:, p] = np.where(chosen > best[:, p - 1], chosen, best[:, p - 1])
    return best


def path_spans(best: np.ndarray, open_at: np.ndarray, cumulative: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, start, end) of the spans on each row's best path (``best``: :func:`viterbi_totals`), from its last
    boundary back. Where ``best`` rose a span ends, and ``best`` holds its best candidate, none NaN (a NaN one is the
    argmax and never taken): the first candidate back from the end equal to it is the step search's argmax (the
    shorter span on a tie). Runs of O are stepped over at once."""
    n, boundaries = best.shape
    landing = np.zeros((n, boundaries), dtype=np.int64)  # the last boundary at or before where best rose
    landing[:, 1:] = np.where(best[:, 1:] > best[:, :-1], np.arange(1, boundaries), 0)
    np.maximum.accumulate(landing, axis=1, out=landing)
    if n > VITERBI_PYTHON_ROWS:
        return _step_path(best, open_at, cumulative, width, landing)
    found = [(row, start, end) for row in range(n) for start, end in _row_path(
        best[row].tolist(), open_at[row].tolist(), cumulative[row].tolist(), landing[row].tolist(), width)]
    return tuple(np.array(found, dtype=np.int64).reshape(-1, 3).T)  # type: ignore[return-value]


def _row_path(best: list[float], open_at: list[float], cumulative: list[float], landing: list[int], width: int) -> list[tuple[int, int]]:
    """One row's spans on Python floats, from its end."""
    spans = []
    position = landing[-1]
    while position > 0:
        end = position - 1
        total, closing = best[position], cumulative[end]
        for start in range(end, max(end - width, -1), -1):
            if best[start] + open_at[start] + closing == total:
                break
        else:
            raise RuntimeError(_NO_SPAN.format(width=width, end=end))
        spans.append((start, end))
        position = landing[start]
    return spans


def _step_path(
    best: np.ndarray, open_at: np.ndarray, cumulative: np.ndarray, width: int, landing: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Many rows' spans, a span of every row at a time, each found a token back at a time."""
    position = landing[:, -1].copy()
    active = np.flatnonzero(position > 0)
    found = []
    while len(active):
        end = position[active] - 1
        total, closing, start = best[active, end + 1], cumulative[active, end], end.copy()
        pending = np.arange(len(active))
        while len(pending):
            rows, starts = active[pending], start[pending]
            pending = pending[best[rows, starts] + open_at[rows, starts] + closing[pending] != total[pending]]
            start[pending] -= 1
            lost = (start[pending] <= end[pending] - width) | (start[pending] < 0)
            if lost.any():
                raise RuntimeError(_NO_SPAN.format(width=width, end=int(end[pending][lost][0])))
        found.append((active, start, end))
        position[active] = landing[active, start]
        active = active[position[active] > 0]
    return tuple(np.concatenate([part[k] for part in found]) if found else np.zeros(0, np.int64)
                 for k in range(3))  # type: ignore[return-value]


_NO_SPAN = "no span of at most {width} tokens ends at token {end} with the total found there"


# ----------------------------------------------------------------------------- forward–backward


def forward_backward(log_u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Forward and backward log-messages (N, L, 3) over valid tag sequences (no ``I`` first or after ``O``) of the
    tag log-probabilities ``log_u`` (tags ``B, I, O`` in that order), and log Z (N,)."""
    if len(log_u) > MESSAGES_PYTHON_ROWS:
        return _step_messages(log_u)
    rows = [_row_messages(*row.T.tolist()) for row in log_u]
    forward = np.array([row[0] for row in rows], dtype=np.float64).reshape(log_u.shape)
    backward = np.array([row[1] for row in rows], dtype=np.float64).reshape(log_u.shape)[:, ::-1]  # built from the end
    return forward, np.ascontiguousarray(backward), np.array([row[2] for row in rows], dtype=np.float64)


def _row_messages(u_b: list[float], u_i: list[float], u_o: list[float]) -> tuple[list[float], list[float], float]:
    """One row's forward messages (flat, token by token), its backward ones (flat, from the last token) and log Z on
    Python floats."""
    f_b, f_i, f_o = u_b[0] + 0.0, u_i[0] + _NEG_INF, u_o[0] + 0.0
    forward = [f_b, f_i, f_o]
    for b, i, o in zip(u_b[1:], u_i[1:], u_o[1:]):
        pair = _logaddexp(f_b, f_i)  # B and I: the I term, and the first two of the reduction over B, I, O
        reached = _logaddexp(pair, f_o)
        f_b, f_i, f_o = b + reached, i + pair, o + reached
        forward += (f_b, f_i, f_o)
    backward = [0.0, 0.0, 0.0]
    to_open = to_o = 0.0  # the backward message of B and I (always equal), and of O
    for b, i, o in zip(u_b[:0:-1], u_i[:0:-1], u_o[:0:-1]):
        next_b, next_i, next_o = b + to_open, i + to_open, o + to_o
        to_open, to_o = _logaddexp(_logaddexp(next_b, next_i), next_o), _logaddexp(next_b, next_o)
        backward += (to_open, to_open, to_o)
    return forward, backward, _logaddexp(_logaddexp(f_b, f_i), f_o)


def _step_messages(log_u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Many rows' messages a step at a time, with the B-and-I sum shared by the I term and the sum over all tags."""
    length = log_u.shape[1]
    forward, backward = np.empty_like(log_u), np.empty_like(log_u)
    forward[:, 0] = log_u[:, 0] + np.where(np.arange(3) == 1, -np.inf, 0.0)  # no I first
    for t in range(1, length):
        before = forward[:, t - 1]
        pair = np.logaddexp(before[:, 0], before[:, 1])
        reached = np.logaddexp(pair, before[:, 2])
        np.add(log_u[:, t, 0], reached, out=forward[:, t, 0])
        np.add(log_u[:, t, 1], pair, out=forward[:, t, 1])
        np.add(log_u[:, t, 2], reached, out=forward[:, t, 2])
    backward[:, -1] = 0.0
    for t in range(length - 2, -1, -1):
        after = log_u[:, t + 1] + backward[:, t + 1]
        np.logaddexp(np.logaddexp(after[:, 0], after[:, 1]), after[:, 2], out=backward[:, t, 0])
        backward[:, t, 1] = backward[:, t, 0]
        np.logaddexp(after[:, 0], after[:, 2], out=backward[:, t, 2])
    last = forward[:, -1]
    return forward, backward, np.logaddexp(np.logaddexp(last[:, 0], last[:, 1]), last[:, 2])
