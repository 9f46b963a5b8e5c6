"""Banded span search and window merging against brute force and hand-made cases."""

import numpy as np
import pytest

from bio_mrc.decoding.spans import best_spans, null_scores, sliding_max
from bio_mrc.decoding.window_outputs import WindowOutputs, max_context_scores, merge_windows


def brute_force(start, end, mask, max_len, extra=None):
    best = []
    for i in range(len(start)):
        for j in range(i, min(len(start), i + max_len)):
            if mask[i] and mask[j]:
                score = start[i] + end[j] + (0 if extra is None else extra[i : j + 1].sum())
                best.append((score, i, j))
    return sorted(best, key=lambda t: -t[0])


def test_hand_made_best_span():
    start = np.array([[9.0, 1.0, 5.0, 0.0, 0.0]])
    end = np.array([[9.0, 4.0, 0.0, 1.0, 3.0]])
    mask = np.array([[False, True, True, True, True]])  # position 0 is [CLS], never a span
    top = best_spans(start, end, mask, max_answer_length=3, n_best=2)
    # (2,4) = 8, then (2,3) = 6; (1,4) = 4 is too long (4 tokens > 3) and (0,0) = 18 is off the paragraph.
    assert list(zip(top.start[0], top.end[0], top.score[0])) == [(2, 4, 8.0), (2, 3, 6.0)]
    assert null_scores(start, end)[0] == 18.0


@pytest.mark.parametrize("seed", range(40))
def test_band_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, length, max_len = 3, int(rng.integers(1, 40)), int(rng.integers(1, 12))
    start, end, extra = rng.normal(size=(3, n, length))
    mask = rng.random((n, length)) < 0.7
    top = best_spans(start, end, mask, max_len, n_best=5, extra_token_scores=extra)
    for row in range(n):
        expected = brute_force(start[row], end[row], mask[row], max_len, np.where(mask[row], extra[row], 0))[:5]
        got = [(s, i, j) for s, i, j in zip(top.score[row], top.start[row], top.end[row]) if i >= 0]
        assert len(got) == len(expected)
        np.testing.assert_allclose([g[0] for g in got], [e[0] for e in expected])
        assert [(g[1], g[2]) for g in got] == [(e[1], e[2]) for e in expected]


@pytest.mark.parametrize("width", [1, 2, 3, 5, 8, 13])
def test_sliding_max_matches_a_plain_loop(width):
    values = np.random.default_rng(width).normal(size=(2, 11))
    expected = np.array([[row[i : i + width].max() for i in range(11)] for row in values])
    np.testing.assert_array_equal(sliding_max(values, width), expected)


def test_max_context_prefers_the_window_centre():
    mask = np.array([[False, True, True, True, True, True, False]])
    scores = max_context_scores(mask)[0]
    assert np.argmax(scores) == 3  # two tokens on each side
    assert np.isinf(scores[0]) and np.isinf(scores[6])


def test_merge_takes_each_token_from_its_best_window():
    # Example 0 has tokens at chars 0,2,4,6,8 seen by two overlapping windows.
    offsets = np.full((2, 5, 2), -1)
    offsets[0, 1:5] = [[0, 1], [2, 3], [4, 5], [6, 7]]
    offsets[1, 1:4] = [[4, 5], [6, 7], [8, 9]]
    mask = offsets[..., 0] >= 0
    values = np.zeros((2, 5))
    values[0, 1:5] = [10, 11, 12, 13]
    values[1, 1:4] = [22, 23, 24]
    outputs = WindowOutputs(np.array([0, 0]), offsets, mask)
    merged = merge_windows(outputs, values, n_examples=2)
    np.testing.assert_array_equal(merged.offsets[0, :, 0], [0, 2, 4, 6, 8])
    # char 4 is central in window 1 (1 token each side) but not in window 0 (2 left, 1 right -> 1 each, longer window wins);
    # char 6 is at window 0's edge (score 0.04) and central in window 1 (score 1.03).
    np.testing.assert_array_equal(merged.values[0], [10, 11, 12, 23, 24])
    assert not merged.mask[1].any()  # an example with no window gets an empty row


def _word_windows(lengths, seed=0):
    """One window a question, its i-th token the context's i-th word ("w{i} "), with random logits of every head."""
    from bio_mrc.types import Example

    rng, width = np.random.default_rng(seed), max(lengths)
    tokens = np.arange(width)
    offsets = np.where(tokens[None, :, None] < np.array(lengths)[:, None, None],
                       np.stack([tokens * 4, tokens * 4 + 3], axis=-1)[None], -1)
    examples = [Example(str(i), "q", "".join(f"w{k:02d} " for k in range(n)), None) for i, n in enumerate(lengths)]
    logits = {name: rng.normal(size=(len(lengths), width, *shape)) for name, shape in
              (("start_logits", ()), ("end_logits", ()), ("bio_logits", (3,)))}
    return WindowOutputs(np.arange(len(lengths)), offsets, offsets[..., 0] >= 0, **logits), examples


def test_one_long_question_does_not_pad_every_other_to_its_length(monkeypatch):
    """Three 4-token questions and one of 40: in slots of 16 the short ones decode together and the long one alone,
    so no merged row is padded to 40 tokens but the long one's, and every answer is the one it gets decoded alone."""
    import bio_mrc.decoding.postprocess as postprocess
    from bio_mrc.decoding.postprocess import DecodeConfig, decode, length_groups

    outputs, examples = _word_windows([4, 4, 40, 4])
    monkeypatch.setattr(postprocess, "DECODE_TOKEN_SLOTS", 16)
    assert [group.tolist() for group in length_groups(outputs, 4)] == [[0, 1, 3], [2]]
    padded = []
    real_merge = postprocess.merge_windows
    monkeypatch.setattr(postprocess, "merge_windows", lambda *args: padded.append(real_merge(*args).mask.size) or real_merge(*args))
    for decoding in ("span", "bio", "joint"):
        for multi_span in (False, True):
            config = DecodeConfig(multi_span=multi_span)
            together = decode(outputs, examples, decoding, config)
            alone = [decode(outputs.take(np.array([i]), np.array([0])), [examples[i]], decoding, config)[0] for i in range(4)]
            assert [p.id for p in together] == ["0", "1", "2", "3"]
            assert [(p.spans, p.no_answer_score) for p in together] == [(p.spans, p.no_answer_score) for p in alone]
    assert max(padded) == 40  # the long question's own row; before, 4 rows of 40 tokens
