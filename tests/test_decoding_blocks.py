"""One question over many windows is decoded a block of windows at a time: the joint decoding's per-token scores are
held for one block of windows, the tag decodings' log-probabilities for the merged tokens alone, and every answer
(spans, offsets, scores, probabilities, no-answer scores) is the one the whole-array path gives, to the last bit."""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bio_mrc.decoding import postprocess, spans, window_outputs
from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.features.windows import FeatureConfig, build_features
from bio_mrc.inference.answers import decode_answers
from bio_mrc.inference.forward import window_outputs as outputs_of
from bio_mrc.types import Example

from .conftest import property_examples

# Words, odd spaces, CJK, a literal [SEP], runs longer than a window: many windows for each question.
CONTEXTS = [
    " ".join(["Rollo ruled Normandy in 911.", "Their language was Norman French, a dialect of Old French.",
              "The cat [SEP] sat on the mat\u200b.", "東京は日本の首都。", "café cafe\u0301 naïve 1,000"] * 5),
    "ACGT" * 40 + " the river " + "TTGCA" * 30,
    "x",
]


@pytest.fixture(scope="module")
def features(tiny_tokenizer):
    """The contexts' windows at word level and sub-word level: several questions, one of over 30 windows."""
    examples = [Example(f"q{i}", "who ruled it?", context, None) for i, context in enumerate(CONTEXTS)]
    built = {level: build_features(examples, tiny_tokenizer, FeatureConfig(32, 12, 8, tag_level=level), with_targets=False,
                                   desc="blocks") for level in ("word", "subword")}
    return examples, built


def random_outputs(features, seed: int, scale: float):
    rng = np.random.default_rng(seed)
    n, width = len(features), max(len(ids) for ids in features["input_ids"])
    return outputs_of(features, {"start_logits": (scale * rng.normal(size=(n, width))).astype(np.float32),
                                 "end_logits": (scale * rng.normal(size=(n, width))).astype(np.float32),
                                 "bio_logits": (scale * rng.normal(size=(n, width, 3))).astype(np.float32)})


def answers(outputs, examples, decoding, config, multi_span):
    return [dataclasses.asdict(p) for p in decode_answers(outputs, examples, decoding, config, multi_span=multi_span)]


@settings(max_examples=property_examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), block=st.integers(1, 7), level=st.sampled_from(["word", "subword"]),
       scale=st.sampled_from([0.5, 3.0, 20.0]), n_best=st.integers(1, 25), max_length=st.integers(1, 40),
       prior=st.sampled_from([0.0, 0.5, -1.0]), multi_span=st.booleans())
def test_answers_decoded_a_few_windows_at_a_time_are_those_decoded_at_once(features, seed, block, level, scale, n_best,
                                                                          max_length, prior, multi_span):
    examples, built = features
    outputs = random_outputs(built[level], seed, scale)
    config = DecodeConfig(n_best=n_best, max_answer_length=max_length, bio_length_prior=prior)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(spans, "BLOCK_WINDOWS", 1 << 30)
        at_once = {d: answers(outputs, examples, d, config, multi_span) for d in ("span", "bio", "joint")}
        patch.setattr(spans, "BLOCK_WINDOWS", block)
        for decoding, expected in at_once.items():
            assert answers(outputs, examples, decoding, config, multi_span) == expected, decoding  # every field, every bit


@pytest.mark.parametrize("multi_span", [False, True])
def test_the_joint_decoding_holds_its_window_scores_a_block_at_a_time_and_its_tag_scores_for_merged_tokens(
        features, monkeypatch, multi_span):
    examples, built = features
    outputs = random_outputs(built["subword"], 0, 3.0)
    count, width = outputs.mask.shape
    shapes = []
    for module in (postprocess, window_outputs):
        monkeypatch.setattr(module, "log_softmax", lambda logits, mask=None, own=window_outputs.log_softmax:
                            shapes.append(np.shape(logits)) or own(logits, mask))
    monkeypatch.setattr(spans, "BLOCK_WINDOWS", 4)
    assert count > 30
    decode_answers(outputs, examples, "joint", DecodeConfig(), multi_span=multi_span)
    by_window = [shape for shape in shapes if len(shape) > 1 and shape[1] == width]
    assert by_window and max(shape[0] for shape in by_window) <= 4  # start, end and tag scores of four windows at a time
    assert sum(shape[0] for shape in by_window if len(shape) == 3) >= count  # every window's tags were read
    merged = [shape for shape in shapes if len(shape) == 2 and shape[1] == 3]
    assert bool(merged) == multi_span  # the tag sequence's log-probabilities: one row a merged token, not a window token
    assert sum(shape[0] for shape in merged) <= int(outputs.tagged.sum())


def test_a_tag_decodings_log_probabilities_are_taken_of_the_merged_tokens_alone(features, monkeypatch):
    examples, built = features
    outputs = random_outputs(built["word"], 1, 3.0)
    expected = answers(outputs, examples, "bio", DecodeConfig(), True)
    shapes = []
    for module in (postprocess, window_outputs):
        monkeypatch.setattr(module, "log_softmax", lambda logits, mask=None, own=window_outputs.log_softmax:
                            shapes.append(np.shape(logits)) or own(logits, mask))
    assert answers(outputs, examples, "bio", DecodeConfig(), True) == expected
    assert shapes and all(len(shape) == 2 for shape in shapes)  # never (windows, L, 3)
    assert sum(shape[0] for shape in shapes) <= 3 * int(outputs.tagged.sum())  # once a merged token a decode, at most


def test_a_tokens_context_read_where_it_is_held_is_the_window_arrays_own():
    mask = np.array([[False, True, True, True, True, False], [False, False, True, True, False, False],
                     [False] * 6, [True] * 6])
    scores = window_outputs.max_context_scores(mask)
    assert scores[0].tolist() == [-np.inf, 0.04, 1.04, 1.04, 0.04, -np.inf]  # min(left, right) + 0.01 × 4 tokens
    assert scores[1].tolist() == [-np.inf, -np.inf, 0.02, 0.02, -np.inf, -np.inf] and np.isneginf(scores[2]).all()
    assert scores[3].tolist() == [0.06, 1.06, 2.06, 2.06, 1.06, 0.06]


def test_a_head_output_set_as_an_attribute_is_the_one_its_blocks_hold():
    """A head's output set on the outputs is held in ``logits``, so the blocks ``take`` cuts for decoding hold it."""
    offsets = np.array([[[-1, -1], [0, 2], [3, 5]], [[-1, -1], [3, 5], [6, 8]]])
    outputs = window_outputs.WindowOutputs(np.array([0, 0]), offsets, offsets[..., 0] >= 0)
    outputs.start_logits = np.array([[0.0, 1.0, 2.0], [0.0, 3.0, 4.0]])
    assert set(outputs.logits) == {"start_logits"}
    assert outputs.take(np.array([1]), np.array([0])).start_logits.tolist() == [[0.0, 3.0, 4.0]]
    outputs.start_logits = None
    assert outputs.logits == {} and outputs.start_logits is None
