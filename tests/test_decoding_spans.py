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


def _answered(examples, unanswerable=()):
    """``examples`` with the second word ("w01") as every question's answer, none for the indices ``unanswerable``."""
    from dataclasses import replace

    return [replace(ex, answers=() if i in unanswerable else (((4, 7),),)) for i, ex in enumerate(examples)]


def _padded_merges(monkeypatch):
    """The sizes (rows × slots) of every merged tag array decoding makes from now on."""
    import bio_mrc.decoding.postprocess as postprocess

    padded, real_merge = [], postprocess.merge_windows
    monkeypatch.setattr(postprocess, "merge_windows", lambda *args: padded.append(real_merge(*args).mask.size) or real_merge(*args))
    return padded


def test_tuning_merges_questions_of_like_length_and_tunes_the_same(monkeypatch):
    """Tuning (the length prior, the no-answer thresholds, the calibrators, the span-count rules) on three 4-token
    questions and one of 40 pads no merged row of a short question to 40 tokens in slots of 16, and every tuned value
    and statistic is the one tuned without groups."""
    import bio_mrc.decoding.postprocess as postprocess
    from bio_mrc import registry
    from bio_mrc.decoding.postprocess import DecodeConfig
    from bio_mrc.inference.tuning import tune_settings

    outputs, examples = _word_windows([4, 4, 40, 4, 4, 4], seed=3)
    examples = _answered(examples, unanswerable={4})

    def tuned(task):
        result = tune_settings(outputs, examples, ["span", "bio", "joint"], DecodeConfig(), True, task.no_answer,
                               calibrate=task.right is not None, task=task)
        return result.bio_length_prior, result.thresholds, result.min_span_probabilities, result.calibration, repr(result.report)

    for task in (registry.squad_task("2.0"), registry.task("multispanqa")):
        alone = tuned(task)
        monkeypatch.setattr(postprocess, "DECODE_TOKEN_SLOTS", 16)
        padded = _padded_merges(monkeypatch)
        assert tuned(task) == alone
        assert max(padded) == 40  # the long question's own row; before, every question padded to 40 tokens
        monkeypatch.undo()


def test_a_comparison_cell_and_its_browser_data_merge_questions_of_like_length(monkeypatch):
    """A comparison's tag-decoding cell (answers and tag sequences) and the report browser's word probabilities are the
    same in slots of 16 as without groups, and no short question is padded to the long one's 40 tokens."""
    import bio_mrc.decoding.postprocess as postprocess
    from bio_mrc.decoding.postprocess import DecodeConfig
    from bio_mrc.harness.browser_data import model_browser_data
    from bio_mrc.harness.cells import decode_cell
    from bio_mrc.harness.comparison_splits import Split

    outputs, examples = _word_windows([4, 4, 40, 4], seed=5)
    examples = _answered(examples)

    def cell_and_browser(task):
        cell = decode_cell(outputs, Split(examples, task, "toy"), "bio", DecodeConfig(), None)
        words = model_browser_data(outputs, examples, {})
        return ([(p.spans, p.no_answer_score) for p in cell.predictions], cell.gold_tags, cell.predicted_tags,
                words.word_counts.tolist(), words.word_offsets.tolist(), words.tag_bytes.tolist())

    for task in ("squad-v1.1", "multispanqa"):
        alone = cell_and_browser(task)
        assert alone[3] == [4, 4, 40, 4] and len(alone[1][2]) == 40
        monkeypatch.setattr(postprocess, "DECODE_TOKEN_SLOTS", 16)
        padded = _padded_merges(monkeypatch)
        assert cell_and_browser(task) == alone
        assert max(padded) == 40
        monkeypatch.undo()


def test_the_joint_decoding_answers_one_word_longer_than_a_window_with_the_whole_word():
    """One word of six 2-character pieces, tagged at its first piece, in two windows ([CLS] and four pieces each): no
    window holds both its first and its last piece, so no window holds a whole-word span. The joint decoding answers
    the whole word as the BIO decoding does, scored across the windows: ``log P_start`` of the first piece in the
    first window, the tagger's ``log p_B - log p_O`` there and ``log P_end`` of the last piece in the second."""
    from bio_mrc.decoding.postprocess import DecodeConfig, decode
    from bio_mrc.types import Example

    context = "ACGTACGTACGT"
    pieces = [(2 * k, 2 * k + 2) for k in range(6)]
    offsets = np.array([[(-1, -1), *pieces[0:4]], [(-1, -1), *pieces[2:6]]])
    mask = offsets[..., 0] >= 0
    words = np.where(mask[..., None], np.array([0, 12]), -1)
    tag_mask = np.zeros((2, 5), dtype=bool)
    tag_mask[0, 1] = True  # the word's first piece
    start, end, bio = np.zeros((2, 5)), np.zeros((2, 5)), np.zeros((2, 5, 3))
    start[0, 1], end[1, 4], bio[0, 1] = 2.0, 1.0, (1.0, 0.0, 0.0)  # B, I, O
    outputs = WindowOutputs(np.array([0, 0]), offsets, mask, word_offsets=words, tag_mask=tag_mask,
                            start_logits=start, end_logits=end, bio_logits=bio)
    examples = [Example("dna", "which sequence?", context, None)]
    for multi_span in (False, True):
        (joint,) = decode(outputs, examples, "joint", DecodeConfig(max_answer_length=2, multi_span=multi_span))
        (bio_answer,) = decode(outputs, examples, "bio", DecodeConfig(max_answer_length=2, multi_span=multi_span))
        assert [(s.text, s.start, s.end) for s in joint.spans] == [(context, 0, 12)] == [
            (s.text, s.start, s.end) for s in bio_answer.spans]
        best = (2 - np.log(np.e ** 2 + 4)) + 1.0 + (1 - np.log(np.e + 4))
        null = min(-np.log(np.e ** 2 + 4) - np.log(5), -np.log(5) - np.log(np.e + 4))  # the first window's
        assert joint.spans[0].score == pytest.approx(best)
        assert joint.no_answer_score == pytest.approx(null - best) == pytest.approx(-np.log(5) - 4 + np.log(np.e + 4))


@pytest.mark.parametrize("decoding", ["span", "bio", "joint"])
def test_every_decoding_answers_one_run_of_characters_longer_than_a_window(tiny_bpe_tokenizer, decoding):
    """An 80-character DNA sequence, one word of byte-level BPE pieces, in windows of 40 tokens: each decoding answers
    with a piece of it (span) or the whole word (the word-level BIO and joint decodings), never nothing."""
    from bio_mrc.decoding.postprocess import DecodeConfig, decode
    from bio_mrc.features.windows import FeatureConfig, build_features
    from bio_mrc.inference.forward import window_outputs
    from bio_mrc.types import Example

    context = "ACGTTGCAACGGTACCGTAGCTAGCTAGGCTAACGTTGCAACGGTACCGTAGCTAGCTAGGCTAACGTTGCAACGGTACG"
    examples = [Example("dna", "which sequence?", context, None)]
    features = build_features(examples, tiny_bpe_tokenizer, FeatureConfig(40, 8, 12, tag_level="word"), with_targets=False)
    assert len(features) > 1
    rng = np.random.default_rng(0)
    n, width = len(features), max(len(ids) for ids in features["input_ids"])
    logits = {"start_logits": rng.normal(size=(n, width)), "end_logits": rng.normal(size=(n, width)),
              "bio_logits": rng.normal(size=(n, width, 3))}
    (prediction,) = decode(window_outputs(features, logits), examples, decoding, DecodeConfig())
    assert prediction.spans and np.isfinite(prediction.no_answer_score)
    assert all(context[s.start:s.end] == s.text for s in prediction.spans)
    if decoding != "span":
        assert [(s.start, s.end) for s in prediction.spans] == [(0, len(context))]


def test_the_joint_decoding_answers_words_longer_than_the_limit_in_a_window_narrower_than_n_best():
    """Two words of two pieces in a window of five tokens, ``max_answer_length=1``: no word fits, so the joint decoding
    searches whole words of any length, a band of more spans (20) than the limited search's (5); the two had to
    be put side by side (a shape mismatch ended the decoding). Every whole-word span comes back, best first."""
    from bio_mrc.decoding.postprocess import DecodeConfig, decode
    from bio_mrc.types import Example

    offsets = np.array([[(-1, -1), (0, 2), (2, 4), (5, 7), (7, 9)]])
    words = np.array([[(-1, -1), (0, 4), (0, 4), (5, 9), (5, 9)]])
    tag_mask = np.array([[False, True, False, True, False]])
    start, end = np.array([[0.0, 1.0, 0.0, 0.0, 0.0]]), np.array([[0.0, 0.0, 0.0, 0.0, 2.0]])
    outputs = WindowOutputs(np.array([0]), offsets, offsets[..., 0] >= 0, word_offsets=words, tag_mask=tag_mask,
                            start_logits=start, end_logits=end, bio_logits=np.zeros((1, 5, 3)))
    (prediction,) = decode(outputs, [Example("q", "which?", "abcd efgh", None)], "joint", DecodeConfig(n_best=20, max_answer_length=1))
    # log P_start + log P_end, the tags all even (B, I and O alike: no gain): start 1 at "abcd", end 2 at "efgh"
    assert [s.text for s in prediction.spans] == ["abcd efgh", "efgh", "abcd"]


@pytest.mark.parametrize("decoding", ["span", "bio", "joint"])
@pytest.mark.parametrize("multi_span", [False, True])
def test_an_answer_cut_by_a_window_end_is_answered_whole_from_the_next_window(decoding, multi_span):
    """Words ``w00 … w09`` (token ``i`` at characters ``4i..4i+3``) in two windows, ``w00..w05`` and ``w03..w09``; the
    answer ``w05 w06`` begins at the first window's last token. The first window, which cannot see ``w06``, scores the
    piece ``w05`` (4 + 3 = 7) and tags ``w05`` O; the second scores the whole answer (4 + 4 = 8) and tags it B I.
    Every decoding answers ``w05 w06``; a multi-span answer holds it once, never beside the piece ``w05`` (the two
    share characters). The BIO decoding reads ``w05``'s tag in the second window, where it has the more context
    (2 tokens against 0): read in the first, ``w05`` would be O and the answer ``w06``."""
    from bio_mrc.decoding.postprocess import DecodeConfig
    from bio_mrc.inference.answers import decode_answers
    from bio_mrc.tags import TAG_B, TAG_I, TAG_O
    from bio_mrc.types import Example

    context = "".join(f"w{k:02d} " for k in range(10))
    tokens = [list(range(0, 6)), list(range(3, 10))]
    width = 1 + max(map(len, tokens))
    offsets = np.full((2, width, 2), -1)
    start, end = np.zeros((2, width)), np.zeros((2, width))
    bio = np.zeros((2, width, 3))
    bio[..., TAG_O] = 6.0
    for w, window in enumerate(tokens):
        offsets[w, 1:1 + len(window)] = [(4 * k, 4 * k + 3) for k in window]
    start[0, 6], end[0, 6], bio[0, 6, TAG_O] = 4.0, 3.0, 12.0  # w05 at the first window's end, w06 unseen
    start[1, 3], end[1, 4] = 4.0, 4.0  # w05 w06 in the second window: tokens 3 and 4 there
    bio[1, 3, TAG_B], bio[1, 4, TAG_I] = 9.0, 9.0
    outputs = WindowOutputs(np.array([0, 0]), offsets, offsets[..., 0] >= 0,
                            start_logits=start, end_logits=end, bio_logits=bio)
    (prediction,) = decode_answers(outputs, [Example("q", "which?", context, None)], decoding, DecodeConfig(), multi_span=multi_span)
    assert prediction.spans[0].text == "w05 w06"
    if multi_span:
        assert [s.text for s in prediction.spans] == ["w05 w06"]


def _two_windows(start_logits, end_logits):
    """Words ``w00 … w09`` (token ``k`` at characters ``4k..4k+3``) in two windows, ``w00..w05`` and ``w03..w09``, each
    window's first slot its [CLS] (logits 0) and every logit not given -10; ``*_logits`` map (window, word) to a logit."""
    from bio_mrc.types import Example

    tokens = [list(range(0, 6)), list(range(3, 10))]
    offsets = np.full((2, 8, 2), -1)
    start, end = np.full((2, 8), -10.0), np.full((2, 8), -10.0)
    start[:, 0] = end[:, 0] = 0.0
    for w, window in enumerate(tokens):
        offsets[w, 1:1 + len(window)] = [(4 * k, 4 * k + 3) for k in window]
    for logits, given in ((start, start_logits), (end, end_logits)):
        for (w, word), value in given.items():
            logits[w, 1 + tokens[w].index(word)] = value
    outputs = WindowOutputs(np.array([0, 0]), offsets, offsets[..., 0] >= 0, start_logits=start, end_logits=end,
                            bio_logits=np.zeros((2, 8, 3)))  # even tags: the joint decoding's r is 0
    return outputs, [Example("q", "which?", "".join(f"w{k:02d} " for k in range(10)), None)]


def test_each_token_starts_spans_only_in_the_window_where_it_has_the_most_context():
    from bio_mrc.decoding.window_outputs import max_context_tokens

    outputs, _ = _two_windows({}, {})
    # w03: 3 left, 2 right in window 0 (2.06), 0 left in window 1 (0.07); w04: 1.06 in window 0, 1.07 in window 1 (longer)
    np.testing.assert_array_equal(max_context_tokens(outputs), [[0, 1, 1, 1, 1, 0, 0, 0], [0, 0, 1, 1, 1, 1, 1, 1]])


@pytest.mark.parametrize("decoding", ["span", "joint"])
def test_a_window_that_begins_inside_an_answer_does_not_offer_its_tail(decoding):
    """Window 1 begins at ``w03``, inside the answer ``w02 w03 w04`` of window 0 (start 4 + end 4 = 8), and scores the
    tail ``w03 w04`` higher (5 + 5 = 10); ``w03`` has its most context in window 0, so window 1 starts no span there."""
    from bio_mrc.decoding.postprocess import DecodeConfig, decode

    outputs, examples = _two_windows({(0, 2): 4.0, (1, 3): 5.0}, {(0, 4): 4.0, (1, 4): 5.0})
    (prediction,) = decode(outputs, examples, decoding, DecodeConfig(n_best=2))
    assert prediction.spans[0].text == "w02 w03 w04"
    if decoding == "span":
        assert (prediction.spans[0].score, prediction.no_answer_score) == (8.0, 0.0 - 8.0)  # the [CLS] null less the best
        (wider,) = decode(outputs, examples, decoding, DecodeConfig(n_best=20))
        # the tail is read in window 0 (w03's -10 + w04's 4), which holds it whole with w03's more context
        assert [s.score for s in wider.spans if s.text == "w03 w04"] == [-6.0]
    else:  # log P_start + log P_end in window 0: its [CLS], w02's 4 and five -10s; its [CLS], w04's 4 and five -10s
        normaliser = np.logaddexp.reduce([0.0, 4.0] + [-10.0] * 5)
        np.testing.assert_allclose(prediction.spans[0].score, 8.0 - 2 * normaliser)


@pytest.mark.parametrize("decoding", ["span", "joint"])
def test_a_window_offers_the_spans_that_start_where_it_holds_the_most_context(decoding):
    """Window 1 scores ``w04 w05`` (5 + 5 = 10) above window 0's ``w02 w03 w04`` (4 + 4 = 8), and ``w04`` has its most
    context in window 1: the rule leaves the answer and its n-best as they were."""
    from bio_mrc.decoding.postprocess import DecodeConfig, decode

    outputs, examples = _two_windows({(0, 2): 4.0, (1, 4): 5.0}, {(0, 4): 4.0, (1, 5): 5.0})
    (prediction,) = decode(outputs, examples, decoding, DecodeConfig(n_best=2))
    assert [s.text for s in prediction.spans] == ["w04 w05", "w02 w03 w04"]
    if decoding == "span":
        assert [s.score for s in prediction.spans] == [10.0, 8.0] and prediction.no_answer_score == -10.0


def test_windows_ranked_across_documents_read_spans_where_the_whole_question_would():
    from bio_mrc import registry
    from bio_mrc.decoding.window_outputs import max_context_spans

    outputs, _ = _two_windows({}, {})
    start_mask, first_end = max_context_spans(outputs)
    for decoding in ("span", "joint"):
        windows = registry.decoding(decoding).ranking_windows(outputs)
        np.testing.assert_array_equal(windows.example_index, [0, 1])  # each window a question of its own
        np.testing.assert_array_equal(windows.starts, start_mask)
        np.testing.assert_array_equal(windows.first_end, first_end)


def test_a_start_with_more_context_in_a_window_lacking_the_end_is_read_where_the_span_is_whole():
    """``w03`` has its most context in window 0 (2.06 against 0.07), which ends at ``w05``. Window 1 still starts spans
    at ``w03`` that end past ``w05`` (its position 3 on), none that end before (window 0 holds those whole)."""
    from bio_mrc.decoding.window_outputs import max_context_spans

    outputs, _ = _two_windows({}, {})
    start_mask, first_end = max_context_spans(outputs)
    np.testing.assert_array_equal(start_mask, [[0, 1, 1, 1, 1, 0, 0, 0], [0, 1, 1, 1, 1, 1, 1, 1]])
    # w04 in window 1 (1.07 against 1.06) and every token window 0 lacks: any end; w03 in window 1: past w05
    np.testing.assert_array_equal(first_end[1], [0, 4, 0, 0, 0, 0, 0, 0])


@pytest.mark.parametrize("decoding", ["span", "joint"])
def test_an_answer_crossing_a_window_edge_from_a_start_of_more_context_is_found(decoding):
    """The answer ``w03 w04 w05 w06`` (window 1: 5 + 5 = 10) starts at ``w03``, which has more context in window 0,
    and ends at ``w06``, which window 0 lacks: it is read in window 1, above window 0's ``w02 w03 w04`` (4 + 4 = 8)."""
    from bio_mrc.decoding.postprocess import DecodeConfig, decode

    outputs, examples = _two_windows({(0, 2): 4.0, (1, 3): 5.0}, {(0, 4): 4.0, (1, 6): 5.0})
    (prediction,) = decode(outputs, examples, decoding, DecodeConfig(n_best=2))
    assert prediction.spans[0].text == "w03 w04 w05 w06"
    if decoding == "span":
        assert [(s.text, s.score) for s in prediction.spans] == [("w03 w04 w05 w06", 10.0), ("w02 w03 w04", 8.0)]


def _sliding_windows(rng):
    """A random question's windows: tokens ``0..n-1`` (token ``k`` at characters ``2k..2k+1``, some of two pieces of
    the same characters), each window an interval of them right of the last, at a random place in its row."""
    n = int(rng.integers(1, 25))
    pieces = 1 + (rng.random(n) < 0.15)
    layout, first, last = [], 0, int(rng.integers(1, n + 1))
    while True:
        layout.append([k for k in range(first, last) for _ in range(pieces[k])])
        if last == n:
            return layout
        first = int(rng.integers(first + 1, last + 1))
        last = int(rng.integers(max(first, last) + 1, n + 1))


def _spans_read_by_brute_force(offsets, mask, example_index):
    """(window, start, end) of every span read, by the rule itself: the window where the start has the most context
    (its best place there) among the windows holding both tokens, equal context the earlier."""
    context = max_context_scores(mask)
    tokens = [{} for _ in mask]
    for w in range(len(mask)):
        for p in np.flatnonzero(mask[w]):
            key = tuple(offsets[w, p])
            tokens[w][key] = max(tokens[w].get(key, -np.inf), context[w, p])
    read = set()
    for f in range(len(mask)):
        for i in np.flatnonzero(mask[f]):
            for j in np.flatnonzero(mask[f]):
                t, e = tuple(offsets[f, i]), tuple(offsets[f, j])
                if j < i:
                    continue
                holding = [w for w in range(len(mask)) if example_index[w] == example_index[f] and t in tokens[w] and e in tokens[w]]
                if max(holding, key=lambda w: (tokens[w][t], -w)) == f:
                    read.add((f, int(i), int(j)))
    return read


@pytest.mark.parametrize("seed", range(60))
def test_max_context_spans_read_each_span_where_the_rule_says(seed):
    from bio_mrc.decoding.window_outputs import max_context_spans

    rng = np.random.default_rng(seed)
    layouts = [(q, window) for q in rng.permutation(2) for window in _sliding_windows(rng)]
    width = 1 + max(len(window) for _, window in layouts) + 3
    offsets, mask = np.full((len(layouts), width, 2), -1), np.zeros((len(layouts), width), dtype=bool)
    for row, (_, window) in enumerate(layouts):
        at = 1 + int(rng.integers(0, 4))  # a question of 0 to 3 tokens before the paragraph
        offsets[row, at:at + len(window)] = [(2 * k, 2 * k + 1) for k in window]
        mask[row, at:at + len(window)] = True
    example_index = np.array([q for q, _ in layouts])
    outputs = WindowOutputs(example_index, offsets, mask)
    start_mask, first_end = max_context_spans(outputs)
    got = {(f, i, j) for f in range(len(mask)) for i in np.flatnonzero(mask[f] & start_mask[f])
           for j in np.flatnonzero(mask[f]) if j >= max(i, first_end[f, i])}
    assert got == _spans_read_by_brute_force(offsets, mask, example_index)


@pytest.mark.parametrize("seed", range(40))
def test_band_with_first_ends_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, length, max_len = 3, int(rng.integers(1, 40)), int(rng.integers(1, 12))
    start, end, extra = rng.normal(size=(3, n, length))
    start, end = np.round(start, 1), np.round(end, 1)  # ties: the earlier start, then the earlier end
    mask = rng.random((n, length)) < 0.7
    first_end = np.where(rng.random((n, length)) < 0.5, 0, rng.integers(0, length + 3, size=(n, length)))
    top = best_spans(start, end, mask, max_len, n_best=5, first_end=first_end)
    for row in range(n):
        expected = [(s, i, j) for s, i, j in brute_force(start[row], end[row], mask[row], max_len) if j >= first_end[row, i]]
        expected = sorted(expected, key=lambda t: (-t[0], t[1], t[2]))[:5]
        got = [(s, i, j) for s, i, j in zip(top.score[row], top.start[row], top.end[row]) if i >= 0]
        assert [(g[1], g[2]) for g in got] == [(e[1], e[2]) for e in expected]
        np.testing.assert_allclose([g[0] for g in got], [e[0] for e in expected])
