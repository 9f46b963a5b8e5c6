"""Entity-level tag scores: hand-computed cases and a cross-check against seqeval."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from bio_mrc.features.config import FeatureConfig
from bio_mrc.metrics.entity_scores import chunk_counts, tag_scores
from bio_mrc.tags import chunk_bounds
from bio_mrc.tags import TAG_B, TAG_I, TAG_O

B, I, O = TAG_B, TAG_I, TAG_O  # noqa: E741 (the tags' own letters)


def scores(precision: float, recall: float, f1: float) -> dict[str, float]:
    return {"precision": precision, "recall": recall, "f1": f1}


def test_tag_ids_follow_the_package_constants():
    assert (TAG_B, TAG_I, TAG_O) == (0, 1, 2)


@pytest.mark.parametrize(
    ("strict", "starts", "ends"),
    [(False, [0, 2, 5, 7], [2, 3, 7, 8]), (True, [0, 5], [2, 7])],
)
def test_chunk_bounds_never_cross_sequences(strict, starts, ends):
    # sequences: [B I] [I O] [] [O B I] [I]
    tags = np.array([B, I, I, O, O, B, I, I])
    got = chunk_bounds(tags, lengths=[2, 2, 0, 3, 1], strict=strict)
    assert got[0].tolist() == starts and got[1].tolist() == ends


def test_chunk_bounds_splits_on_type_change():
    tags = np.array([B, I, I, I])
    types = np.array([0, 0, 1, 1])
    assert [a.tolist() for a in chunk_bounds(tags, types=types)] == [[0, 2], [2, 4]]
    assert [a.tolist() for a in chunk_bounds(tags, types=types, strict=True)] == [[0], [2]]
    assert [a.tolist() for a in chunk_bounds(np.array([], dtype=int))] == [[], []]


def test_seqeval_docstring_example():
    gold = [["O", "O", "B-MISC", "I-MISC", "B-MISC", "O", "O"], ["B-PER", "I-PER", "O"]]
    pred = [["O", "O", "B-MISC", "I-MISC", "B-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    # gold MISC[2,4) MISC[4,5) PER[0,2); pred MISC[2,4) MISC[4,6) PER[0,2): 2 of 3 match
    for strict in (False, True):
        assert tag_scores(gold, pred, strict) == pytest.approx(scores(2 / 3, 2 / 3, 2 / 3), abs=1e-15)


def test_i_after_o_starts_a_chunk_only_in_default_mode():
    gold, pred = [["O", "B", "I", "O"]], [["O", "I", "I", "O"]]
    assert tag_scores(gold, pred) == scores(1.0, 1.0, 1.0)
    assert tag_scores(gold, pred, strict=True) == scores(0.0, 0.0, 0.0)  # pred has no chunk at all


def test_mixed_untyped_sequences():
    gold = [["B", "I", "O", "B"], ["I", "O"]]
    pred = [["B", "O", "O", "B"], ["I", "I"]]
    # default: gold [0,2) [3,4) | [0,1); pred [0,1) [3,4) | [0,2): only [3,4) matches
    assert tag_scores(gold, pred) == pytest.approx(scores(1 / 3, 1 / 3, 1 / 3), abs=1e-15)
    # strict: gold [0,2) [3,4); pred [0,1) [3,4)
    assert tag_scores(gold, pred, strict=True) == scores(0.5, 0.5, 0.5)
    assert chunk_counts(gold, pred) == (1, 3, 3)


def test_type_change_inside_a_run():
    gold = [["B-PER", "I-LOC", "I-LOC"]]  # default: PER[0,1) LOC[1,3); strict: PER[0,1) only
    pred = [["B-PER", "B-LOC", "I-LOC"]]  # both modes: PER[0,1) LOC[1,3)
    assert tag_scores(gold, pred) == scores(1.0, 1.0, 1.0)
    assert tag_scores(gold, pred, strict=True) == pytest.approx(scores(0.5, 1.0, 2 / 3), abs=1e-15)


def test_same_span_different_type_is_wrong():
    assert tag_scores([["B-PER", "I-PER"]], [["B-LOC", "I-LOC"]]) == scores(0.0, 0.0, 0.0)


@pytest.mark.parametrize("gold", [[], [[]], [["O", "O"]]])
def test_zero_divisions_give_zero_silently(gold):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tag_scores(gold, gold) == scores(0.0, 0.0, 0.0)
        assert tag_scores(gold, gold, strict=True) == scores(0.0, 0.0, 0.0)


def test_no_predictions_gives_zero_precision():
    assert tag_scores([["B", "O"]], [["O", "O"]]) == scores(0.0, 0.0, 0.0)
    assert tag_scores([["O", "O"]], [["B", "O"]]) == scores(0.0, 0.0, 0.0)


def test_mismatched_lengths_name_the_sequence():
    with pytest.raises(ValueError, match="sequence 1"):
        tag_scores([["O"], ["B", "I"]], [["O"], ["B"]])
    with pytest.raises(ValueError, match="2 sequences"):
        tag_scores([["O"], ["O"]], [["O"]])


@pytest.mark.parametrize("bad", ["E-PER", "S", "", "x"])
def test_unknown_prefixes_are_rejected(bad):
    with pytest.raises(ValueError, match="not a B/I/O tag"):
        tag_scores([["O", bad]], [["O", "O"]])


@pytest.mark.parametrize("bad", [None, ["B"]])
def test_non_string_tags_are_rejected(bad):
    with pytest.raises(ValueError, match="B/I/O tag|must be strings"):
        tag_scores([["O", bad]], [["O", "O"]])


def test_tags_of_several_characters_far_into_the_input():
    # Bare single-character tags take a faster path; a typed tag after the first 10,000 must still count.
    gold = [["O"] * 10_001 + ["B-PER", "I-PER"]]
    pred = [["O"] * 10_001 + ["B-PER", "I-LOC"]]  # PER[10001,10002) and LOC[10002,10003) in default mode
    assert tag_scores(gold, pred) == pytest.approx(scores(0.0, 0.0, 0.0))
    assert chunk_counts(gold, gold) == (1, 1, 1)
    # lengths that add up although the tags are not one character each
    with pytest.raises(ValueError, match="tag '' is not"):
        tag_scores([["", "BI"]], [["O", "O"]])


def test_a_hundred_thousand_entity_types_are_numbered_at_once():
    # Each distinct type name was looked up by a search of the sorted names, time of the types squared (40,000 types:
    # 17 s; 100,000: minutes); the names are numbered in one pass, in the same sorted order.
    types = 100_000
    gold = [[f"B-t{k}", f"I-t{k}", "O"] for k in range(types)]
    pred = [[f"B-t{k}", f"I-t{k + 1 if k % 2 else k}", "O"] for k in range(types)]  # odd k: a type change inside
    # default mode: even k one right chunk; odd k two chunks (B-tk, then I-t(k+1) starts one), neither gold's
    assert chunk_counts(gold, pred) == (types // 2, types // 2 + 2 * (types // 2), types)
    assert chunk_counts(gold, pred, strict=True) == (types // 2, types, types)  # strict: only B starts one


VOCABULARIES = {
    "untyped": ["B", "I", "O"],
    "typed": ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"],
    # untyped and typed mixed, odd names that the two seqeval modes parse differently
    "mixed": ["O", "B", "I", "B-PER", "I-PER", "I-LOC", "B-MISC-X", "I-MISC-X", "B--MISC", "I-MISC-", "O-PER"],
}


def random_sets(vocabulary: list[str], count: int, seed: int):
    rng = np.random.default_rng(seed)
    weights = np.ones(len(vocabulary))
    weights[vocabulary.index("O")] = 3.0  # mostly O, as in real tagging
    weights /= weights.sum()
    for _ in range(count):
        lengths = rng.integers(0, 12, size=int(rng.integers(1, 9)))
        lengths[rng.random(lengths.size) < 0.15] = 1
        gold = [list(rng.choice(vocabulary, size=n, p=weights)) for n in lengths]
        if rng.random() < 0.3:  # near-miss predictions: gold with a few tags changed
            pred = [[t if rng.random() > 0.2 else str(rng.choice(vocabulary)) for t in seq] for seq in gold]
        else:
            pred = [list(rng.choice(vocabulary, size=n, p=weights)) for n in lengths]
        yield [[str(t) for t in s] for s in gold], [[str(t) for t in s] for s in pred]


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
@pytest.mark.parametrize("vocabulary", list(VOCABULARIES), ids=list(VOCABULARIES))
def test_equals_seqeval_on_random_sets(vocabulary, strict):
    seqeval = pytest.importorskip("seqeval.metrics")
    from seqeval.scheme import IOB2

    kwargs = {"mode": "strict", "scheme": IOB2} if strict else {}
    for gold, pred in random_sets(VOCABULARIES[vocabulary], count=500, seed=10 * list(VOCABULARIES).index(vocabulary) + strict):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # seqeval warns on zero divisions and odd tag names
            expected = {
                "precision": seqeval.precision_score(gold, pred, **kwargs),
                "recall": seqeval.recall_score(gold, pred, **kwargs),
                "f1": seqeval.f1_score(gold, pred, **kwargs),
            }
        got = tag_scores(gold, pred, strict=strict)
        for key, value in expected.items():
            assert abs(got[key] - float(value)) <= 1e-12, (key, gold, pred, got, expected)


def test_a_reports_gold_tags_are_the_words_the_tagger_learns(metaspace_tokenizer):
    """A comparison cell tags the gold " normans " as the tagger learns it, the word alone: SentencePiece's tokens of
    the spaces beside it ("▁") are O, so a model that tags exactly "normans" scores tag F1 1 (it scored 0)."""
    from bio_mrc.decoding.postprocess import DecodeConfig
    from bio_mrc.decoding.window_outputs import WindowOutputs
    from bio_mrc.harness.cells import decode_cell, score_cell
    from bio_mrc.harness.comparison_splits import Split
    from bio_mrc.types import Example

    context = " normans  came  from france\n"
    example = Example("q", "where from ?", context, (((0, 9),),))  # " normans "
    batch = metaspace_tokenizer(example.question, context, return_offsets_mapping=True)
    mask = np.array([part == 1 for part in batch.sequence_ids()])
    offsets = np.where(mask[:, None], np.array(batch["offset_mapping"]), -1)
    # the context's tokens: ▁ n or m a n s ▁ ▁ c ame ▁ ▁ f ro m ▁ f ra n ce \n
    assert [context[a:b] for a, b in offsets[mask]][:9] == [" ", "n", "or", "m", "a", "n", "s", " ", " "]
    tags = np.full(len(mask), TAG_O)
    first = int(np.argmax(mask)) + 1
    tags[first], tags[first + 1:first + 6] = TAG_B, TAG_I  # the model tags "normans", sure of it
    logits = np.log(np.where(np.arange(3) == tags[:, None], 0.98, 0.01))
    outputs = WindowOutputs(np.array([0]), offsets[None], mask[None], bio_logits=logits[None])
    split = Split([example], "squad-v1.1", "toy")
    cell = decode_cell(outputs, split, "bio", DecodeConfig(), None)
    assert cell.predictions[0].spans[0].text == "normans"
    expected = ["O", "B", "I", "I", "I", "I", "I"] + ["O"] * (int(mask.sum()) - 7)
    assert cell.gold_tags == [expected] and cell.predicted_tags == [expected]
    assert score_cell(split, cell)["tag_scores"]["f1"] == 1.0


def _two_mentions_cell(tags: str, **features):
    """A cell of "Ada met Bob and Ada left" (one token a word), the gold the second "Ada" alone, the model sure of
    ``tags`` (a letter a token); its tag scores under the run's ``features``."""
    from bio_mrc.decoding.postprocess import DecodeConfig
    from bio_mrc.decoding.window_outputs import WindowOutputs
    from bio_mrc.harness.cells import decode_cell, score_cell
    from bio_mrc.harness.comparison_splits import Split
    from bio_mrc.types import Example

    context = "Ada met Bob and Ada left"
    example = Example("q", "who?", context, (((16, 19),),))
    offsets = np.array([[-1, -1], [0, 3], [4, 7], [8, 11], [12, 15], [16, 19], [20, 24]])
    mask = offsets[:, 0] >= 0
    ids = np.array([TAG_O] + ["BIO".index(letter) for letter in tags])
    logits = np.log(np.where(np.arange(3) == ids[:, None], 0.98, 0.01))
    outputs = WindowOutputs(np.array([0]), offsets[None], mask[None], bio_logits=logits[None])
    split = Split([example], "squad-v1.1", "toy")
    cell = decode_cell(outputs, split, "bio", DecodeConfig(), None, **features)
    return cell, score_cell(split, cell)["tag_scores"]


@pytest.mark.parametrize("tags, rule, expected", [
    ("BOOOBO", "annotated", scores(1 / 2, 1.0, 2 / 3)),  # the first "Ada" is a wrong entity
    ("BOOOBO", "every", scores(1.0, 1.0, 1.0)),  # every mention is gold
    ("BOOOBO", "ignored", scores(1.0, 1.0, 1.0)),  # the first "Ada" is in neither sequence
    ("OOOOBO", "annotated", scores(1.0, 1.0, 1.0)),
    ("OOOOBO", "every", scores(1.0, 1 / 2, 2 / 3)),  # the first "Ada" is a gold entity missed
    ("OOOOBO", "ignored", scores(1.0, 1.0, 1.0)),
    ("BIOOBO", "every", scores(1 / 2, 1 / 2, 1 / 2)),  # "Ada met" is not "Ada"
    ("BIOOBO", "ignored", scores(1 / 2, 1.0, 2 / 3)),  # "Ada met": its "met" is scored, a wrong entity of its own
])
def test_a_reports_tag_scores_read_the_gold_its_run_tags_learn(tags, rule, expected):
    """Two mentions of the answer, the second annotated: the tag scores' gold is what the run's tagger learns
    (``tag_mentions``), hand-computed for each rule."""
    assert _two_mentions_cell(tags, features=FeatureConfig(tag_mentions=rule))[1] == pytest.approx(expected, abs=1e-15)


def test_a_reports_tag_scores_read_every_mention_as_gold_by_default():
    """A model tagging both mentions of its answer, as training teaches it by default, tags no wrong entity."""
    cell, scored = _two_mentions_cell("BOOOBO")
    assert cell.gold_tags == [["B", "O", "O", "O", "B", "O"]] == cell.predicted_tags
    assert scored == scores(1.0, 1.0, 1.0)


def test_the_tokens_of_mentions_the_tagger_is_not_taught_are_in_neither_sequence():
    """``ignored``: the first "Ada" is left out of both sequences; a span reaching past it begins at its next token."""
    ignored = FeatureConfig(tag_mentions="ignored")
    cell = _two_mentions_cell("BOOOBO", features=ignored)[0]
    assert cell.gold_tags == [["O", "O", "O", "B", "O"]] == cell.predicted_tags
    cell = _two_mentions_cell("BIIOBI", features=ignored)[0]  # "Ada met Bob" and "Ada left"
    assert cell.gold_tags == [["O", "O", "O", "B", "O"]] and cell.predicted_tags == [["B", "I", "O", "B", "I"]]
