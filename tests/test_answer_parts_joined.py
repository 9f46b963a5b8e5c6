"""Answer parts as users list them: a part listed twice, one inside another, two that overlap, two that touch or that
only a space or a comma parts. Parts that share a character are one part, the text they cover together, both in what
the tagger learns and in the gold the metrics score; parts that share none stay apart (a B at each one's start where
the tokenizer's words allow it); a file holding joined parts says so in one note."""

import json
import warnings

import numpy as np
import pytest

from bio_mrc.answer_text import normalize_answer
from bio_mrc.cli import main
from bio_mrc.data.answer_parts import load_answer_parts
from bio_mrc.data.multispanqa import multispan_gold_texts, parse_multispanqa
from bio_mrc.data.one_answer import JoinedPartsNote, as_one_answer
from bio_mrc.data.squad import load_squad, stream_squad
from bio_mrc.errors import InputNote
from bio_mrc.features.windows import FeatureConfig, build_features
from bio_mrc.metrics.multispan_official import multispan_metrics
from bio_mrc.tags import TAG_B, TAG_I, TAG_O, chunk_bounds
from bio_mrc.types import Example

CITY = "He moved to New York City in 1990."  # New 12-15, York 16-20, City 21-25
FLAGS = "Flags of Denmark,Iceland and Norway."  # Denmark 9-16, "," 16, Iceland 17-24, Norway 29-35
LETTER = {TAG_B: "B", TAG_I: "I", TAG_O: "O"}


def parts(context: str, *listed: tuple[str, int]) -> Example:
    """An example whose listed answers (SQuAD's alternatives, one span each) are ``(text, start)`` pairs."""
    for text, start in listed:
        assert context[start : start + len(text)] == text
    return Example("q", "Which?", context, tuple(((start, start + len(text)),) for text, start in listed))


def word_tags(tokenizer, example: Example) -> str:
    """The BIO targets of the tagged tokens (one a word), as letters."""
    row = build_features([example], tokenizer, FeatureConfig(64, 16, 16, "one-hot", "one-hot", "word"))[0]
    return "".join(LETTER[int(np.argmax(target))] for tagged, target in zip(row["tag_mask"], row["bio_targets"]) if tagged)


def tagged_texts(tokenizer, example: Example) -> list[str]:
    """The texts of the spans the targets tag, read back as the decodings read tags (chunks of the tagged words)."""
    row = build_features([example], tokenizer, FeatureConfig(64, 16, 16, "one-hot", "one-hot", "word"))[0]
    tagged = np.asarray(row["tag_mask"], dtype=bool)
    tags = np.argmax(np.asarray(row["bio_targets"])[tagged], axis=-1)
    words = np.asarray(row["word_offsets"])[tagged]
    starts, ends = chunk_bounds(tags)
    return [example.context[words[s, 0] : words[e - 1, 1]] for s, e in zip(starts.tolist(), ends.tolist())]


CASES = {  # listed parts -> (the one answer's spans, word tags of "he moved to new york city in 1990 .")
    "repeated": (parts(CITY, ("New York", 12), ("New York", 12)), ((12, 20),), "OOOBIOOOO"),
    "nested": (parts(CITY, ("New York City", 12), ("New York", 12)), ((12, 25),), "OOOBIIOOO"),
    "nested inside": (parts(CITY, ("New York City", 12), ("York", 16)), ((12, 25),), "OOOBIIOOO"),
    "overlapping": (parts(CITY, ("New York", 12), ("York City", 16)), ((12, 25),), "OOOBIIOOO"),
    "a space apart": (parts(CITY, ("New", 12), ("York", 16)), ((12, 15), (16, 20)), "OOOBBOOOO"),
    "edge spaces": (parts(CITY, ("New ", 12), (" York", 15)), ((12, 16), (15, 20)), "OOOBBOOOO"),
}


@pytest.mark.parametrize("case", CASES)
def test_parts_sharing_a_character_are_one_part_in_the_targets_and_the_gold(tiny_tokenizer, case):
    example, spans, tags = CASES[case]
    one = as_one_answer(example)
    assert one.answers == (spans,)
    assert word_tags(tiny_tokenizer, one) == tags
    learned, scored = tagged_texts(tiny_tokenizer, one), multispan_gold_texts([one])["q"]
    assert sorted(map(normalize_answer, learned)) == sorted(map(normalize_answer, scored))  # as the metrics compare them


def test_touching_parts_keep_a_b_each(tiny_tokenizer):
    """ "Denmark" and ",Iceland" share no character: two parts, the comma a word of its own, so B B I."""
    one = as_one_answer(parts(FLAGS, ("Denmark", 9), (",Iceland", 16)))
    assert one.answers == (((9, 16), (16, 24)),)
    assert word_tags(tiny_tokenizer, one) == "OOBBIOOO"  # flags of denmark , iceland and norway .
    assert tagged_texts(tiny_tokenizer, one) == multispan_gold_texts([one])["q"] == ["Denmark", ",Iceland"]
    apart = as_one_answer(parts(FLAGS, ("Norway", 29), ("Denmark", 9), ("Iceland", 17)))  # a comma apart, listed out of order
    assert apart.answers == (((9, 16), (17, 24), (29, 35)),)
    assert word_tags(tiny_tokenizer, apart) == "OOBOBOBO"


def test_the_nested_answer_the_tagger_learns_scores_full_marks():
    """Gold {New York City} (nested parts joined) against a prediction of it: EM 1/1, F1 100; read as the two parts
    listed, the same prediction would score recall 1/2."""
    gold = multispan_gold_texts([as_one_answer(CASES["nested"][0])])
    assert gold == {"q": ["New York City"]}
    assert multispan_metrics(gold, {"q": ["New York City"]})["em_f1"] == 100.0


def test_multispanqa_touching_words_tagged_b_b_stay_two_spans(tiny_tokenizer):
    """MultiSpanQA's labels B B on "New" "York": two spans, a space apart, in the targets and the gold alike."""
    words = CITY[:-1].split() + ["."]
    record = {"id": "m", "question": ["Where", "?"], "context": words, "label": ["O", "O", "O", "B", "B", "O", "O", "O", "O"]}
    [example] = parse_multispanqa({"data": [record]})
    assert example.answers == (((12, 15), (16, 20)),)
    assert word_tags(tiny_tokenizer, example) == "OOOBBOOOO"
    assert tagged_texts(tiny_tokenizer, example) == multispan_gold_texts([example])["m"] == ["New", "York"]


def _parts_file(tmp_path, name="parts.json"):
    """Three questions of SQuAD JSON: q1 lists a part twice and one inside another, q2 two overlapping parts, q3 two
    touching parts (nothing joined)."""
    def qa(qid, *listed):
        return {"id": qid, "question": "Which?", "answers": [{"text": t, "answer_start": s} for t, s in listed]}
    paragraphs = [{"context": CITY, "qas": [qa("q1", ("New York", 12), ("New York", 12), ("New York City", 12)),
                                            qa("q2", ("New York", 12), ("York City", 16))]},
                  {"context": FLAGS, "qas": [qa("q3", ("Denmark", 9), (",Iceland", 16))]}]
    path = tmp_path / name
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}), encoding="utf-8")
    return path


NOTE = ("2 questions of {} list answer parts that repeat, nest or overlap: each group of parts sharing a character is "
        "read as one part, the text they cover together, in training and in scoring alike, e.g. 'q1', 'q2'")


def test_joined_parts_are_counted_in_one_note_naming_the_file(tmp_path):
    path = _parts_file(tmp_path)
    with pytest.warns(JoinedPartsNote) as caught:
        examples = load_answer_parts(str(path))
    assert [str(w.message) for w in caught] == [NOTE.format(path)] and issubclass(JoinedPartsNote, InputNote)
    assert [ex.answers for ex in examples] == [(((12, 25),),), (((12, 25),),), (((9, 16), (16, 24)),)]


def test_quoref_json_notes_joined_parts_read_whole_or_streamed(tmp_path):
    path = _parts_file(tmp_path, "quoref-dev-v0.1.json")
    raw = json.loads(path.read_text(encoding="utf-8"))
    for paragraph in raw["data"][0]["paragraphs"]:
        paragraph["context_id"] = paragraph["context"][:5]
    path.write_text(json.dumps(raw), encoding="utf-8")
    for read in (lambda: load_squad(str(path)).examples, lambda: list(stream_squad(str(path)))):
        with pytest.warns(JoinedPartsNote) as caught:
            assert [ex.answers for ex in read()][:2] == [(((12, 25),),), (((12, 25),),)]
        assert [str(w.message) for w in caught] == [NOTE.format(path)]


def test_a_file_of_parts_apart_says_nothing(tmp_path):
    path = tmp_path / "apart.json"
    qa = {"id": "q", "question": "Which?", "answers": [{"text": "Denmark", "answer_start": 9}, {"text": ",Iceland", "answer_start": 16}]}
    path.write_text(json.dumps({"data": [{"title": "t", "paragraphs": [{"context": FLAGS, "qas": [qa]}]}]}), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_answer_parts(str(path))[0].answers == (((9, 16), (16, 24)),)


def test_evaluate_prints_the_note_once_and_scores_the_joined_parts(tmp_path, capsys):
    """The answers the tagger learns (q1, q2: New York City; q3: Denmark and ,Iceland) score EM F1 100."""
    path = _parts_file(tmp_path)
    predictions = tmp_path / "preds.json"
    predictions.write_text(json.dumps({"q1": ["New York City"], "q2": ["New York City"], "q3": ["Denmark", ",Iceland"]}),
                           encoding="utf-8")
    assert main(["evaluate", "--data", str(path), "--predictions", str(predictions), "--format", "answer-parts"]) == 0
    out, err = capsys.readouterr()
    assert [line for line in err.splitlines() if "answer parts" in line] == [f"note: {NOTE.format(path)}"]
    assert json.loads(out)["em_f1"] == 100.0
