"""A model remembers how long its training answers are: training saves the length 99% of its training answer spans
fit (at least 30) as its answer-length limit, and every decoding reads it where ``max_answer_length`` is left open;
a given ``max_answer_length`` wins, and a model saved without one decodes with 30."""

import contextlib
import io
import json
import shutil

import numpy as np
import pytest

from bio_mrc.cli import main
from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.errors import ModelFormatError
from bio_mrc.inference import AnswerExtractor, TrainedModel

WINDOWS = ["--max-seq-length", "96", "--doc-stride", "16", "--max-query-length", "12"]
ANSWER_WORDS = 40  # each a whole word of the tiny vocabulary: 40 tokens


def test_the_limit_is_the_length_99_percent_of_the_spans_fit_and_never_below_30():
    from bio_mrc.training.answer_lengths import answer_length_limit, covering_length

    assert covering_length(list(range(1, 101))) == 99  # 99 of the 100 lengths are at most 99
    assert covering_length([40] * 99 + [200]) == 40
    assert covering_length([40] * 98 + [200] * 2) == 200  # 98 of 100 fit 40: too few
    assert covering_length([]) is None
    assert answer_length_limit([5] * 10) == 30
    assert answer_length_limit([]) == 30
    assert answer_length_limit([41, 7, 64, 12]) == 64  # 99% of 4 spans: all 4


def _long_answer_data(tiny_tokenizer, path):
    """Four questions whose answers are 40 words of 60 (a window of 96 tokens holds each context whole)."""
    words = [w for w in tiny_tokenizer.vocab if w.isalpha() and len(w) > 3 and tiny_tokenizer.tokenize(w) == [w]][:70]
    paragraphs = []
    for k in range(4):
        context_words = words[k:k + 60]
        context = " ".join(context_words)
        answer = " ".join(context_words[10:10 + ANSWER_WORDS])
        qa = {"id": f"long{k}", "question": "what is said?", "answers": [{"text": answer, "answer_start": context.index(answer)}]}
        paragraphs.append({"context": context, "qas": [qa]})
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def long_answers(tiny_tokenizer, tmp_path_factory):
    return _long_answer_data(tiny_tokenizer, tmp_path_factory.mktemp("long-data") / "long.json")


@pytest.fixture(scope="module")
def long_model(tiny_encoder_dir, long_answers, tmp_path_factory):
    """A model trained (one step) on the four questions of 40-token answers, with what ``train`` wrote on stderr."""
    out = tmp_path_factory.mktemp("long-model")
    err = io.StringIO()  # a module's fixture: no capsys
    with contextlib.redirect_stderr(err):
        code = main(["train", "--train", str(long_answers), "--output-dir", str(out), "--encoder", str(tiny_encoder_dir),
                     "--epochs", "1", "--batch-size", "4", "--precision", "fp32", *WINDOWS])
    assert code == 0
    return out, err.getvalue()


def test_training_saves_the_limit_of_its_answers_and_says_so(long_model):
    folder, stderr = long_model
    assert json.loads((folder / "config.json").read_text(encoding="utf-8"))["max_answer_length"] == ANSWER_WORDS
    assert "answer-length limit: 40 tokens (99% of the 4 training answer spans fit; the default is 30)" in stderr


def test_a_continued_model_keeps_its_parents_longer_limit_and_says_so(capsys):
    """Parent limit 64, the new stage's spans 5 and 7 tokens (limit 30): 64 is kept; a parent of 12 or none, 30."""
    from types import SimpleNamespace

    from datasets import Dataset

    from bio_mrc.training.answer_lengths import set_answer_length_limit

    windows = Dataset.from_dict({"answer_lengths": [[5], [], [7]]})
    for parent, limit in ((64, 64), (12, 30), (None, 30)):
        model = SimpleNamespace(config=SimpleNamespace(max_answer_length=None))
        set_answer_length_limit(model, windows, True, parent)
        assert model.config.max_answer_length == limit
    assert capsys.readouterr().err == ("answer-length limit: 64 tokens, kept from the model this one continues "
                                       "(99% of the 2 training answer spans fit 30)\n")


def test_training_on_from_a_long_answer_model_keeps_its_limit(long_model, tiny_encoder_dir, tmp_path):
    """A model of 40-token answers continued on the sample's short answers keeps 40, and ``train`` says so."""
    from .conftest import SAMPLE_V1

    folder, _ = long_model
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["train", "--train", str(SAMPLE_V1), "--output-dir", str(tmp_path / "short"), "--init-from", str(folder),
                     "--epochs", "1", "--batch-size", "4", "--precision", "fp32", *WINDOWS])
    assert code == 0
    assert json.loads((tmp_path / "short" / "config.json").read_text(encoding="utf-8"))["max_answer_length"] == ANSWER_WORDS
    assert "answer-length limit: 40 tokens, kept from the model this one continues (99% of the " in err.getvalue()


def test_a_model_of_short_answers_saves_the_default_and_says_nothing(trained_dir):
    assert json.loads((trained_dir / "config.json").read_text(encoding="utf-8"))["max_answer_length"] == 30


def _favouring_gold(outputs, examples):
    """``outputs`` with start and end logits that favour each question's gold span (its first and last tokens) far
    above any other, and the null score far below."""
    start, end = np.full_like(outputs.start_logits, -10.0), np.full_like(outputs.end_logits, -10.0)
    for row, example in enumerate(examples):
        first, last = example.answers[0][0]
        windows = np.flatnonzero(outputs.example_index == row)
        for window in windows:
            mask = outputs.mask[window]
            start[window, mask & (outputs.offsets[window, :, 0] == first)] = 10.0
            end[window, mask & (outputs.offsets[window, :, 1] == last)] = 10.0
    outputs.logits["start_logits"], outputs.logits["end_logits"] = start, end
    return outputs


def _examples(long_answers):
    from bio_mrc.data.squad import load_squad

    return load_squad(str(long_answers)).examples


def _tokens(trained, text):
    return len(trained.tokenizer.tokenize(text))


def test_the_saved_limit_decodes_a_span_longer_than_30_tokens(long_model, long_answers):
    trained = TrainedModel.load(long_model[0], precision="fp32", device="cpu")
    examples = _examples(long_answers)
    outputs = _favouring_gold(trained.windows(examples), examples)
    extractor = AnswerExtractor(trained, decoding="span")
    gold = [example.context[slice(*example.answers[0][0])] for example in examples]
    answers = [prediction.answer for prediction in extractor.predict(outputs, examples)]
    assert answers == gold and _tokens(trained, answers[0]) == ANSWER_WORDS
    cut = [prediction.answer for prediction in extractor.predict(outputs, examples, max_answer_length=30)]  # given: it wins
    assert all(_tokens(trained, answer) <= 30 for answer in cut)


def test_an_old_model_without_a_saved_limit_decodes_with_30(long_model, long_answers, tmp_path):
    folder = shutil.copytree(long_model[0], tmp_path / "old")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config.pop("max_answer_length", None)  # as a model saved before the limit was
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    trained = TrainedModel.load(folder, precision="fp32", device="cpu")
    assert trained.decode_config(DecodeConfig()).max_answer_length == 30
    examples = _examples(long_answers)
    predictions = AnswerExtractor(trained, decoding="span").predict(_favouring_gold(trained.windows(examples), examples), examples)
    assert all(_tokens(trained, prediction.answer) <= 30 for prediction in predictions)


@pytest.mark.parametrize("given", [None, "12"])
def test_predict_decodes_with_the_saved_limit_unless_one_is_given(long_model, long_answers, tmp_path, monkeypatch, given):
    """The ``predict`` command: the long gold answers where the limit is left to the model, and its run record holds the
    limit decoded with."""
    windows = TrainedModel.windows
    examples = {example.id: example for example in _examples(long_answers)}
    monkeypatch.setattr(TrainedModel, "windows", lambda self, chunk, *args, **kwargs: _favouring_gold(
        windows(self, chunk, *args, **kwargs), chunk))
    output = tmp_path / "p.json"
    option = ["--max-answer-length", given] if given else []
    assert main(["predict", "--model", str(long_model[0]), "--data", str(long_answers), "--output", str(output),
                 "--precision", "fp32", "--decoding", "span", *option]) == 0
    answers = json.loads(output.read_text(encoding="utf-8"))
    record = json.loads((tmp_path / "p.answers.run.json").read_text(encoding="utf-8"))
    if given is None:
        assert answers == {i: e.context[slice(*e.answers[0][0])] for i, e in examples.items()} and record["max_answer_length"] == 40
    else:
        assert all(len(answer.split()) <= 12 for answer in answers.values()) and record["max_answer_length"] == 12


@pytest.mark.parametrize("value", [0, "40", 40.0, True, -3])
def test_a_model_folder_with_a_bad_limit_is_refused_in_one_line(long_model, tmp_path, value):
    folder = shutil.copytree(long_model[0], tmp_path / "bad")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    (folder / "config.json").write_text(json.dumps({**config, "max_answer_length": value}), encoding="utf-8")
    with pytest.raises(ModelFormatError, match=r"config\.json: max_answer_length must be a whole number of tokens in \[1, "):
        TrainedModel.load(folder, precision="fp32", device="cpu")

