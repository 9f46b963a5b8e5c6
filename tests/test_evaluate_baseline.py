"""``evaluate --baseline OLD``: two predictions files on the same questions, each file's official scores and the paired
difference of each metric with its bootstrap interval. Four questions whose EM and F1 are computed by hand."""

import json

import numpy as np
import pytest

from bio_mrc.cli import main
from bio_mrc.errors import ConfigError

QUESTIONS = [  # (id, context, question, answer)
    ("q1", "Paris is the capital of France.", "What is the capital of France?", "Paris"),
    ("q2", "The sky is blue today.", "What colour is the sky?", "blue"),
    ("q3", "Water boils at 100 degrees.", "When does water boil?", "100 degrees"),
    ("q4", "Cats chase mice at night.", "What do cats chase?", "mice"),
]
# q1 right in both; q2 right (new) against wrong; q3 "100" (EM 0, F1 2/3) against right; q4 wrong in both, changed.
NEW = {"q1": "Paris", "q2": "blue", "q3": "100", "q4": "cats"}
OLD = {"q1": "Paris", "q2": "sky", "q3": "100 degrees", "q4": "night"}
F1_DIFFERENCES = np.array([0.0, 100.0, 100 * 2 / 3 - 100.0, 0.0])
EM_DIFFERENCES = np.array([0.0, 100.0, -100.0, 0.0])


@pytest.fixture
def four(tmp_path):
    """The data file and a writer of predictions files beside it."""
    paragraphs = [{"context": context, "qas": [{"id": qid, "question": question,
                                                 "answers": [{"text": answer, "answer_start": context.index(answer)}]}]}
                  for qid, context, question, answer in QUESTIONS]
    data = tmp_path / "four.json"
    data.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}))

    def write(name, answers):
        path = tmp_path / name
        path.write_text(json.dumps(answers))
        return path

    return data, write


def bootstrap_by_hand(differences, resamples=1000, seed=0):
    """The percentile interval of resampled means: indices floor(u * n) of default_rng(seed)'s uniform doubles."""
    n = len(differences)
    idx = (np.random.default_rng(seed).random((resamples, n)) * n).astype(int)
    return tuple(np.percentile(differences[idx].mean(axis=1), [2.5, 97.5]))


def run(capsys, data, *options):
    code = main(["evaluate", "--data", str(data), *map(str, options)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_both_files_scores_and_the_paired_difference(capsys, four):
    data, write = four
    code, out, err = run(capsys, data, "--predictions", write("new.json", NEW), "--baseline", write("old.json", OLD))
    assert code == 0, err
    record = json.loads(out)
    assert record["predictions"]["exact_match"] == 50.0 and record["predictions"]["f1"] == pytest.approx((200 + 200 / 3) / 4)
    assert record["baseline"]["exact_match"] == 50.0 and record["baseline"]["f1"] == pytest.approx(50.0)
    assert record["predictions"]["file"].endswith("new.json") and record["baseline"]["file"].endswith("old.json")
    f1, em = record["difference"]["f1"], record["difference"]["exact_match"]
    assert f1["diff"] == pytest.approx(100 / 6) and em["diff"] == 0.0
    assert (f1["ci_low"], f1["ci_high"]) == pytest.approx(bootstrap_by_hand(F1_DIFFERENCES))
    assert (em["ci_low"], em["ci_high"]) == pytest.approx(bootstrap_by_hand(EM_DIFFERENCES))
    assert (record["questions"], record["answers_changed"], record["better"], record["worse"]) == (4, 3, 1, 1)
    assert record["bootstrap"] == {"n_resamples": 1000, "seed": 0, "confidence": 0.95, "resampling": "questions"}


def test_resamples_and_limit(capsys, four):
    data, write = four
    new, old = write("new.json", NEW), write("old.json", OLD)
    code, out, err = run(capsys, data, "--predictions", new, "--baseline", old, "--limit", "3", "--resamples", "500")
    assert code == 0, err
    record = json.loads(out)
    assert record["questions"] == 3 and (record["answers_changed"], record["better"], record["worse"]) == (2, 1, 1)
    assert (record["difference"]["f1"]["ci_low"], record["difference"]["f1"]["ci_high"]) == pytest.approx(
        bootstrap_by_hand(F1_DIFFERENCES[:3], resamples=500))
    assert record["predictions"]["scored"]["subset"].endswith("(--limit 3)")
    assert err.count("note: scoring the first 3 questions") == 1


def test_equal_differences_give_a_zero_width_interval(capsys, four):
    data, write = four
    right = {qid: answer for qid, _, _, answer in QUESTIONS}
    code, out, _ = run(capsys, data, "--predictions", write("right.json", right),
                       "--baseline", write("wrong.json", dict.fromkeys(right, "zebra")))
    assert code == 0
    for metric in ("exact_match", "f1"):
        difference = json.loads(out)["difference"][metric]
        assert difference["diff"] == difference["ci_low"] == difference["ci_high"] == 100.0 and difference["significant"]


@pytest.mark.parametrize("version, em", [("1.1", "exact_match"), ("2.0", "exact")])
def test_each_difference_is_named_as_the_files_metrics(capsys, four, version, em):
    """The difference block keys its metrics as each file's official scores do (v1.1's exact_match, v2.0's exact),
    not by the per-question columns' own name, em."""
    data, write = four
    data.write_text(data.read_text().replace('"version": "1.1"', f'"version": "{version}"'))
    code, out, err = run(capsys, data, "--predictions", write("new.json", NEW), "--baseline", write("old.json", OLD))
    assert code == 0, err
    record = json.loads(out)
    assert set(record["difference"]) == {em, "f1"}
    assert record["predictions"][em] - record["baseline"][em] == record["difference"][em]["diff"] == 0.0


def test_python_call_gives_the_same_numbers(four):
    from bio_mrc.inference.paired_evaluation import compare_predictions

    data, write = four
    result = compare_predictions(data, write("new.json", NEW), write("old.json", OLD), n_resamples=200, seed=3)
    f1 = result.paired.differences["f1"]
    assert f1.diff == pytest.approx(100 / 6) and f1.n_resamples == 200
    assert (f1.ci_low, f1.ci_high) == pytest.approx(bootstrap_by_hand(F1_DIFFERENCES, resamples=200, seed=3))
    assert result.new.metrics["f1"] == pytest.approx((200 + 200 / 3) / 4) and result.baseline.metrics["exact_match"] == 50.0
    assert set(result.paired.differences) == {"exact_match", "f1"}
    with pytest.raises(ConfigError, match=r"^baseline: .*old\.json is the predictions file itself"):
        compare_predictions(data, write("old.json", OLD), write("old.json", OLD))


@pytest.mark.parametrize("case, expected", [
    ("same file", "error: --baseline: {old_again} is the predictions file itself ({old}); a file compared with itself "
                  "differs nowhere: give the other file to compare it with"),
    ("a question missing", "error: --baseline: {old} answers no question 'q3', which {new} answers; the paired "
                           "difference needs both files to answer the same questions"),
    ("a question more", "error: --baseline: {new} answers no question 'q5', which {old} answers; the paired "
                        "difference needs both files to answer the same questions"),
    ("another layout", "error: --baseline: {old} is JSON Lines and {new} the official {{id: answer}} object; give both "
                       "files in one layout, so that both are read and scored alike"),
    ("limit past the data", "error: --limit 5: {data} has 4 questions; scores of fewer questions than asked "
                            "would not say so (give at most that many)"),
    ("no-answer probabilities on one side", "error: --baseline: {new} gives a no_answer_probability with its answers and "
                                            "{old} none; give both files with them or both without, so that both are "
                                            "scored alike"),
    ("na-probs", "error: --na-probs: one file's no-answer probabilities, while --baseline {old} scores two; evaluate "
                 "each file alone for best_exact and best_f1"),
])
def test_a_pair_that_cannot_be_compared_is_one_line(capsys, four, tmp_path, case, expected):
    data, write = four
    new, old, options = write("new.json", NEW), write("old.json", OLD), []
    old_again = old
    if case == "same file":
        new, old_again = old, tmp_path / "." / "old.json"
        options = ["--predictions", old, "--baseline", old_again]
    elif case == "a question missing":
        old = write("old.json", {qid: answer for qid, answer in OLD.items() if qid != "q3"})
    elif case == "a question more":
        old = write("old.json", {**OLD, "q5": "x"})
    elif case == "another layout":
        old = tmp_path / "old.jsonl"
        old.write_text("".join(json.dumps({"id": qid, "prediction_text": answer}) + "\n" for qid, answer in OLD.items()))
    elif case == "limit past the data":
        options = ["--limit", "5"]
    elif case == "no-answer probabilities on one side":  # best_exact and best_f1 would be one file's alone
        new = write("new.json", [{"id": qid, "prediction_text": answer, "no_answer_probability": 0.5}
                                 for qid, answer in NEW.items()])
        old = write("old.json", [{"id": qid, "prediction_text": answer} for qid, answer in OLD.items()])
    elif case == "na-probs":
        options = ["--na-probs", write("probs.json", dict.fromkeys(NEW, 0.5))]
    options = options if case == "same file" else ["--predictions", new, "--baseline", old, *options]
    code, out, err = run(capsys, data, *options)
    assert code == 2 and out == ""
    assert err.strip() == expected.format(old=old, new=new, data=data, old_again=old_again)


def test_multi_span_answers_compare_by_summed_span_counts(capsys, four):
    """Scored with MultiSpanQA's metrics: one gold span and one predicted span a question, so EM F1 is the share of
    questions answered exactly, and its resampled difference the mean of the per-question differences."""
    data, write = four
    new = write("new.json", {qid: [answer] for qid, answer in NEW.items()})
    old = write("old.json", {qid: [answer] for qid, answer in OLD.items()})
    code, out, err = run(capsys, data, "--format", "answer-parts", "--predictions", new, "--baseline", old)
    assert code == 0, err
    record = json.loads(out)
    assert record["predictions"]["em_f1"] == record["baseline"]["em_f1"] == 50.0
    assert set(record["difference"]) == {"em_f1", "pm_f1"} and record["difference"]["em_f1"]["diff"] == 0.0
    em_f1 = record["difference"]["em_f1"]
    assert (em_f1["ci_low"], em_f1["ci_high"]) == pytest.approx(bootstrap_by_hand(EM_DIFFERENCES))
    assert (record["answers_changed"], record["better"], record["worse"], record["better_or_worse_by"]) == (3, 1, 1, "em_f1")


def test_answers_changed_counts_answers_the_task_tells_apart(capsys, four):
    """Spans in another order, or a text that normalises alike ("Paris", "paris."), are the same answer, as a
    comparison's cells agree by: of the four questions only q4 ("cats" against "night") changed."""
    data, write = four
    new = write("new.json", {"q1": ["Paris"], "q2": ["blue", "sky"], "q3": ["100 degrees"], "q4": ["cats"]})
    old = write("old.json", {"q1": ["paris."], "q2": ["sky", "blue"], "q3": ["100 Degrees"], "q4": ["night"]})
    code, out, err = run(capsys, data, "--format", "answer-parts", "--predictions", new, "--baseline", old)
    assert code == 0, err
    record = json.loads(out)
    assert (record["answers_changed"], record["better"], record["worse"]) == (1, 0, 0)
    code, out, err = run(capsys, data, "--predictions", write("n.json", {**NEW, "q1": "the Paris"}), "--baseline",
                         write("o.json", {**NEW, "q1": "Paris"}))
    assert code == 0 and json.loads(out)["answers_changed"] == 0


@pytest.mark.parametrize("option, value, reads", [
    ("--resamples", "500", "the bootstrap resamples of --baseline's paired difference"),
    ("--seed", "3", "the seed of the bootstrap resamples of --baseline's paired difference")])
def test_a_bootstrap_option_without_a_baseline_is_refused(capsys, four, option, value, reads):
    """One file has no paired difference: --resamples was ignored without a word (--seed likewise)."""
    data, write = four
    code, out, err = run(capsys, data, "--predictions", write("new.json", NEW), option, value)
    assert code == 2 and out == ""
    assert err.strip() == f"error: {option} {value}: {reads}; give --baseline OLD to compare --predictions with, or drop {option}"


def test_a_seed_draws_other_resamples_and_the_same_seed_the_same(capsys, four):
    """``--seed S``: the resamples drawn from S (the record says so); the same seed twice, the same intervals."""
    data, write = four
    new, old = write("new.json", NEW), write("old.json", OLD)
    records = []
    for seed in ("7", "7", "0"):
        code, out, err = run(capsys, data, "--predictions", new, "--baseline", old, "--seed", seed)
        assert code == 0, err
        records.append(json.loads(out))
    assert records[0] == records[1] and records[0]["bootstrap"]["seed"] == 7
    f1 = records[0]["difference"]["f1"]
    assert (f1["ci_low"], f1["ci_high"]) == pytest.approx(bootstrap_by_hand(F1_DIFFERENCES, seed=7))
    assert records[2] == json.loads(run(capsys, data, "--predictions", new, "--baseline", old)[1])  # seed 0: the default
    assert records[2]["difference"]["f1"]["diff"] == f1["diff"] and records[2]["difference"] != records[0]["difference"]


@pytest.mark.parametrize("seed, words", [("-1", "a whole number from 0 to 4,294,967,295, not -1"),
                                         ("1.5", "a whole number from 0 to 4,294,967,295, not '1.5'")])
def test_a_seed_out_of_numpys_range_is_refused_by_argparse(capsys, four, seed, words):
    data, write = four
    with pytest.raises(SystemExit) as stopped:
        run(capsys, data, "--predictions", write("new.json", NEW), "--baseline", write("old.json", OLD), "--seed", seed)
    captured = capsys.readouterr()
    assert stopped.value.code == 2 and captured.out == "" and f"argument --seed: {words}" in captured.err


@pytest.mark.parametrize("seed", [-1, 1.5, "3", 2**32, True])
def test_a_python_seed_that_is_no_seed_is_refused_before_any_file_is_read(four, seed):
    """numpy refused it once both files were scored, in its own words (``expected non-negative integer``)."""
    from bio_mrc.inference.paired_evaluation import compare_predictions

    data, _ = four
    with pytest.raises(ConfigError, match=r"^compare_predictions: seed is a whole number from 0 to 4,294,967,295; got "):
        compare_predictions(data, data.parent / "missing-new.json", data.parent / "missing-old.json", seed=seed)


def test_the_difference_is_of_the_scores_the_no_answer_probabilities_give(capsys, four):
    """Records with a ``no_answer_probability`` above 1 abstain in the official ``exact`` and ``f1`` (its default
    threshold): the paired difference is of those scores, not of the answers as written. q2's new answer "blue" is
    right, but its probability 3.0 abstains on an answerable question (0); the baseline's "sky" is wrong (0) at 0.2.
    New: q1, q3 (2/3) and q4 wrong; old: q1 and q3 right. So new − old is 0 − 100 on q3 (EM), 2/3·100 − 100 (F1)."""
    data, write = four
    data.write_text(data.read_text().replace('"version": "1.1"', '"version": "2.0"'))
    probabilities = {"q1": 0.1, "q2": 3.0, "q3": 0.5, "q4": 0.9}
    new = write("new.json", [{"id": qid, "prediction_text": answer, "no_answer_probability": probabilities[qid]}
                             for qid, answer in NEW.items()])
    old = write("old.json", [{"id": qid, "prediction_text": answer, "no_answer_probability": 0.2}
                             for qid, answer in OLD.items()])
    code, out, err = run(capsys, data, "--predictions", new, "--baseline", old)
    assert code == 0, err
    record = json.loads(out)
    assert (record["predictions"]["exact"], record["baseline"]["exact"]) == (25.0, 50.0)
    for metric in ("exact", "f1"):
        assert record["difference"][metric]["diff"] == pytest.approx(record["predictions"][metric] - record["baseline"][metric],
                                                                     abs=1e-9)
    assert record["difference"]["exact"]["diff"] == -25.0
    assert (record["answers_changed"], record["better"], record["worse"]) == (3, 0, 1)


# Every answer differs between the two files, so no question's score is one both files could share.
DISTINCT_OLD = {"q1": "Paris France", "q2": "sky", "q3": "100 degrees", "q4": "night"}


def counted_calls(monkeypatch, module, name, *also):
    """A spy on ``module.name`` (and on the same function where the modules ``also`` imported it): its calls."""
    calls = []
    function = getattr(module, name)

    def spy(*args, **kwargs):
        calls.append(args)
        return function(*args, **kwargs)

    for where in (module, *also):
        monkeypatch.setattr(where, name, spy, raising=where is module)
    return calls


@pytest.mark.parametrize("layout", ["official", "with no-answer probabilities", "answer parts"])
def test_each_file_is_scored_once(monkeypatch, four, layout):
    """Each question of each file is scored once, shared by the file's official scores and the paired difference:
    two files of four questions, eight scorings."""
    from bio_mrc.inference.paired_evaluation import compare_predictions
    from bio_mrc.metrics import multispan_official, squad_official, task_scores

    data, write = four
    new, old, options = NEW, DISTINCT_OLD, {}
    if layout == "answer parts":
        calls = counted_calls(monkeypatch, multispan_official, "question_counts", task_scores)
        new, old = ({qid: [answer] for qid, answer in answers.items()} for answers in (new, old))
        options = {"task": "multispan"}
    else:
        calls = counted_calls(monkeypatch, squad_official, "question_scores")
    if layout == "with no-answer probabilities":
        data.write_text(data.read_text().replace('"version": "1.1"', '"version": "2.0"'))
        new, old = ([{"id": qid, "prediction_text": answer, "no_answer_probability": 0.5} for qid, answer in answers.items()]
                    for answers in (new, old))
    result = compare_predictions(data, write("new.json", new), write("old.json", old), n_resamples=10, **options)
    assert len(calls) == 8 and result.paired.questions == 4
    assert result.new.metrics != result.baseline.metrics  # both files scored, each on its own answers
