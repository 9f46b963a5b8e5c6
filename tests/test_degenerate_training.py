"""Training on degenerate data: questions no window can learn from are refused before any work, in one line naming the
questions' source, the question and the problem; what trains is what the target definitions say."""

import json

import numpy as np
import pytest

from bio_mrc.errors import DataFormatError
from bio_mrc.features.windows import FeatureConfig, build_features
from bio_mrc.training.train import TrainConfig, UnheldAnswersWarning, train_model
from bio_mrc.types import Example

from .conftest import WINDOW_ARGS

CONTEXT = "The letters were written by Ada Lovelace in 1843 and sent to Charles Babbage in London."
ADA = (CONTEXT.index("Ada"), CONTEXT.index("Ada") + len("Ada Lovelace"))


def tiny_config(encoder) -> TrainConfig:
    return TrainConfig(encoder=str(encoder), heads="span+bio", max_seq_length=48, doc_stride=16, max_query_length=12,
                       epochs=1, batch_size=4, precision="fp32")


def asked(qid="q1", question="Who wrote it?", context=CONTEXT, answers=((ADA,),)):
    return Example(qid, question, context, answers)


@pytest.mark.parametrize("questions, record, problem", [
    ([asked(answers=(((200, 212),),))], "q1", r"answer span \(200, 212\) lies outside the context's 87 characters"),
    ([asked(answers=(((-5, 3),),))], "q1", r"answer span \(-5, 3\) lies outside the context's 87 characters"),
    ([asked(answers=(((40, 28),),))], "q1", r"answer span \(40, 28\) holds no character: a span is \(start, end\)"),
    ([asked(answers=(((28, 28),),))], "q1", r"answer span \(28, 28\) holds no character"),
    ([asked(answers=(((28.0, 40),),))], "q1", r"answer span \(28.0, 40\) is no pair of whole character offsets"),
    ([asked(answers=((),))], "q1", r"answer \(alternative 1\) holds no span"),
    ([asked(qid=7)], "question #1", "'id' must be a non-empty string, got 7"),
    ([asked(), asked(qid=" ")], "question #2", "'id' must be a non-empty string, got ' '"),
    ([asked(), asked()], "q1", "duplicate question id"),
    ([asked(question="")], "q1", "empty or missing question"),
    ([asked(context="\x00\u200b ", answers=())], "q1", "the context holds no readable text"),
    ([], None, "no training questions: training needs labelled questions"),
])
def test_train_model_refuses_malformed_questions_before_any_work(tiny_encoder_dir, tmp_path, questions, record, problem):
    """Questions built in Python pass no file's reader: a span past the context failed with an IndexError once
    the windows were cut, a reversed, empty or negative span trained as an unanswerable question with a warning, and
    a repeated, numeric or empty id, an empty question and no questions at all trained (or failed in datasets) without a
    word. Each is one line naming the data, the question and the problem, before the output folder is made."""
    with pytest.raises(DataFormatError, match=problem) as caught:
        train_model(questions, tiny_config(tiny_encoder_dir), tmp_path / "model", data_name="my questions")
    assert caught.value.record == record and caught.value.source == "my questions"
    assert not (tmp_path / "model").exists()


def test_training_questions_none_of_which_has_an_answer_are_refused_at_both_doors(tiny_encoder_dir, tmp_path, capsys):
    """A model trained only on unanswerable questions answers nothing: it was trained and saved without a word."""
    from bio_mrc.cli import main

    questions = [{"id": f"q{k}", "question": "Who wrote the letters?", "answers": [], "is_impossible": True} for k in range(3)]
    data = tmp_path / "none.json"
    data.write_text(json.dumps({"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": CONTEXT, "qas": questions}]}]}))
    assert main(["train", "--train", str(data), "--output-dir", str(tmp_path / "model"), "--encoder", str(tiny_encoder_dir),
                 "--epochs", "1", *WINDOW_ARGS]) == 2
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith("error:")] == [
        f"error: none of the 3 training questions has an answer: a model trained on them learns to answer nothing; train on "
        f"questions with answers (unanswerable ones beside them teach it to abstain) (in {data})"]
    assert not (tmp_path / "model" / "config.json").exists()
    with pytest.raises(DataFormatError, match="none of the 2 training questions has an answer") as caught:
        train_model([asked("a", answers=()), asked("b", answers=())], tiny_config(tiny_encoder_dir), tmp_path / "py")
    assert caught.value.source is None and not (tmp_path / "py").exists()


def test_training_where_no_window_holds_any_answer_is_refused_before_it_trains(tiny_encoder_dir, tmp_path):
    """Every answer longer than a window: each question trained as unanswerable (a warning), a model that answers
    nothing; refused once the windows are cut, naming the questions, and no model is saved. One question whose answer a
    window holds trains, the others with the warning."""
    long = [asked(f"whole-{k}", answers=(((0, len(CONTEXT)),),)) for k in range(2)]
    with pytest.raises(DataFormatError, match=r"no window holds the answer of any of the 2 answerable training questions "
                                              r"\(whitespace, characters the tokenizer drops, or longer than a window\): a model "
                                              r"trained on them learns to answer nothing; 'whole-0', 'whole-1'") as caught:
        train_model([*long, asked("none", answers=())], tiny_config(tiny_encoder_dir), tmp_path / "model", data_name="long.json")
    assert caught.value.source == "long.json"
    assert not (tmp_path / "model" / "config.json").exists() and not (tmp_path / "model" / "checkpoints").exists()
    with pytest.warns(UnheldAnswersWarning, match="2 of 3 answerable training questions"):  # the folder is free again
        result = train_model([*long, asked("held")], tiny_config(tiny_encoder_dir), tmp_path / "model")
    assert result.n_examples == 3 and (tmp_path / "model" / "config.json").exists()


def test_soft_bio_targets_of_five_disagreeing_annotators_are_each_tags_share(tiny_tokenizer):
    """t_i is the share of the annotators tagging the word B, I or O: five annotators, worked out by hand at word level;
    every tagged token's target sums to 1, every untagged one is 0."""
    def span(text):
        return (CONTEXT.index(text), CONTEXT.index(text) + len(text))

    answers = tuple((span(text),) for text in ("Ada Lovelace", "Lovelace", "Ada Lovelace in 1843", "Charles Babbage", "Ada"))
    config = FeatureConfig(64, 16, 12, "soft", "soft", "word", tag_mentions="annotated")
    row = build_features([Example("five", "Who?", CONTEXT, answers)], tiny_tokenizer, config, heads=["bio", "span"])[0]
    targets, tagged = np.asarray(row["bio_targets"]), np.asarray(row["tag_mask"], bool)
    words = {int(s): targets[i] for i, (s, e) in enumerate(np.asarray(row["word_offsets"])) if tagged[i]}  # by where each starts
    expected = {"Ada": [3 / 5, 0, 2 / 5], "Lovelace": [1 / 5, 2 / 5, 2 / 5], "in": [0, 1 / 5, 4 / 5], "1843": [0, 1 / 5, 4 / 5],
                "Charles": [1 / 5, 0, 4 / 5], "letters": [0, 0, 1]}
    for word, share in expected.items():
        np.testing.assert_allclose(words[CONTEXT.index(word)], share, atol=1e-6, err_msg=word)
    np.testing.assert_allclose(targets[tagged].sum(-1), 1.0, atol=1e-6)
    assert not targets[~tagged].any()
    starts, offsets = np.asarray(row["start_positions"]), np.asarray(row["offset_mapping"])
    at = [starts[np.flatnonzero(offsets[:, 0] == CONTEXT.index(word))[0]] for word in ("Ada", "Lovelace", "Charles")]
    np.testing.assert_allclose([*at, starts.sum()], [3 / 5, 1 / 5, 1 / 5, 1], atol=1e-6)  # each annotator's start, 1/5 each
