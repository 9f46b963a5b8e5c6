"""What every decoding's answers hold, whatever the logits: seeded random contexts (words, punctuation, CJK, odd
spaces, characters that a normalising tokenizer reads as several pieces, and unbroken runs of characters longer
than a window) under three tokenizers (WordPiece, byte-level BPE, SentencePiece/Unigram), random logits of every
head, small windows, every decoding, single and multi-span answers.

Each answer is the context's text at its offsets, trimmed, inside the context; an answerable question is never
empty; n-best lists are best first, without a span twice, at most ``n_best`` long; multi-span answers do not overlap;
probabilities and confidences lie in [0, 1]; no-answer scores are finite; a threshold abstains exactly where the
no-answer score exceeds it; and a question's answer is the same decoded alone, among others or in another order.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from bio_mrc import registry
from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.features.windows import FeatureConfig, build_features
from bio_mrc.inference.answers import decode_answers
from bio_mrc.inference.forward import window_outputs
from bio_mrc.types import Example

pytestmark = pytest.mark.slow  # about 1 s a case

WORDS = ["the", "river", "city", "1066", "Normandy", "x", "a", "of", ",", ".", "(", ")", "“", "”", "café", "naïve",
         "東京は日本", "e\u0301te\u0301", "'s", "—", "ACGTTGCAACGGTACCGTAGCTAGC", "SGVsbG8gd29ybGQhIEhlbGxvIHdvcmxkIQ==",
         "Oﬃce", "½", "İstanbul", "Straße", "ＡＢＣ１２３"]  # characters a normalising tokenizer reads as several pieces
SEPARATORS = [" ", " ", " ", "\n", "\u00a0", "  ", "", " \n "]


def random_context(rng: np.random.Generator) -> str:
    if rng.random() < 0.3:  # one unbroken run, often longer than a window
        return "".join(rng.choice(list("ACGTacgt0123456789+/="), size=int(rng.integers(30, 200))))
    parts = [(WORDS[rng.integers(len(WORDS))] if rng.random() > 0.1 else "".join(rng.choice(list("ACGT"), size=60)))
             + SEPARATORS[rng.integers(len(SEPARATORS))] for _ in range(int(rng.integers(1, 30)))]
    return "".join(parts).strip() or "x"


def answer_key(prediction):
    return ([(s.text, s.start, s.end, round(s.score, 6), s.probability and round(s.probability, 6)) for s in prediction.spans],
            prediction.no_answer_score and round(prediction.no_answer_score, 6), prediction.abstain)


def check_answers(examples, predictions, config: DecodeConfig, multi_span: bool) -> None:
    for example, prediction in zip(examples, predictions):
        context = example.context
        assert prediction.spans, f"no answer to {context!r}"
        for span in prediction.spans:
            assert 0 <= span.start < span.end <= len(context) and context[span.start:span.end] == span.text, span
            assert span.text == span.text.strip() and math.isfinite(span.score), span
            assert span.probability is None or 0.0 <= span.probability <= 1.0, span
        assert prediction.confidence is None or 0.0 <= prediction.confidence <= 1.0
        assert prediction.no_answer_score is None or math.isfinite(prediction.no_answer_score), context
        if multi_span:
            ordered = sorted((s.start, s.end) for s in prediction.spans)
            assert all(a[1] <= b[0] for a, b in zip(ordered, ordered[1:])), ordered
        else:
            scores = [s.score for s in prediction.spans]
            assert scores == sorted(scores, reverse=True) and len(scores) <= config.n_best
            assert len({(s.start, s.end) for s in prediction.spans}) == len(scores)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("which", ["wordpiece", "byte-level BPE", "sentencepiece"])
def test_every_decoding_keeps_its_invariants_on_random_logits(which, seed, tiny_tokenizer, tiny_bpe_tokenizer,
                                                              metaspace_tokenizer):
    tokenizer = {"wordpiece": tiny_tokenizer, "byte-level BPE": tiny_bpe_tokenizer, "sentencepiece": metaspace_tokenizer}[which]
    rng = np.random.default_rng(seed)
    length = int(rng.integers(28, 64))
    features_config = FeatureConfig(length, int(rng.integers(0, length - 14)), 8, tag_level=("word", "subword")[seed % 2])
    examples = [Example(f"q{i}", "what is it?", random_context(rng), None) for i in range(int(rng.integers(1, 5)))]
    features = build_features(examples, tokenizer, features_config, with_targets=False, desc="invariants")
    n, width, scale = len(features), max(len(ids) for ids in features["input_ids"]), float(rng.choice([0.5, 3.0, 20.0]))
    outputs = window_outputs(features, {"start_logits": scale * rng.normal(size=(n, width)).astype(np.float32),
                                        "end_logits": scale * rng.normal(size=(n, width)).astype(np.float32),
                                        "bio_logits": scale * rng.normal(size=(n, width, 3)).astype(np.float32)})
    config = DecodeConfig(n_best=int(rng.integers(1, 25)), max_answer_length=int(rng.integers(1, 40)),
                          bio_length_prior=float(rng.choice([0.0, 0.5, -1.0])))
    reversed_outputs = outputs.take(np.arange(n), len(examples) - 1 - outputs.example_index)
    for decoding in ("span", "bio", "joint"):
        threshold = {registry.decoding(decoding).threshold_key: float(rng.normal())}
        for multi_span in (False, True):
            predictions = decode_answers(outputs, examples, decoding, config, multi_span=multi_span)
            check_answers(examples, predictions, config, multi_span)
            backwards = decode_answers(reversed_outputs, examples[::-1], decoding, config, multi_span=multi_span)[::-1]
            assert list(map(answer_key, backwards)) == list(map(answer_key, predictions))
            for i, example in enumerate(examples):
                rows = np.flatnonzero(outputs.example_index == i)
                (alone,) = decode_answers(outputs.take(rows, np.zeros(len(rows), dtype=np.int64)), [example], decoding, config,
                                          multi_span=multi_span)
                assert answer_key(alone) == answer_key(predictions[i])
            thresholded = decode_answers(outputs, examples, decoding, config, threshold, multi_span=multi_span)
            (value,) = threshold.values()
            assert [p.abstain for p in thresholded] == [p.no_answer_score > value for p in predictions]
