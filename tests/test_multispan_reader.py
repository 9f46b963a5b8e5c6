"""The multi-span reader's data: Quoref read as multi-span answers, and an evaluation of several data sets
cross-validated together (fold k of each held out at once; by article where the task says so) and scored
per data set."""

from __future__ import annotations

import importlib
import json

import pytest

from bio_mrc import registry
from bio_mrc.data.article_splits import kfold_by_article
from bio_mrc.data.answer_parts import load_answer_parts
from bio_mrc.data.one_answer import JoinedPartsNote
from bio_mrc.decoding.postprocess import DecodeConfig
from bio_mrc.errors import ConfigError
from bio_mrc.harness.compare import compare, resolve_splits
from bio_mrc.harness.config import load_config, parse_config
from bio_mrc.harness.data_set_records import DataSetSummary
from bio_mrc.harness.earlier_report import read_report
from bio_mrc.inference import TrainedModel
from bio_mrc.inference.tuning import all_multi_span_candidates, best_span_count_threshold, tune_bio_length_prior
from bio_mrc.types import Example

from .conftest import FIXTURES, require_data
from .test_harness_compare import config_dict, multispan_file


def quoref_file(tmp_path, articles=4):
    """SQuAD's layout, each article one paragraph; its second question's two listed spans form one answer."""
    data = []
    for a in range(articles):
        context = f"Ann met Bob in town {a}. Later Ann and Cy left town {a}."
        qas = [{"id": f"a{a}-one", "question": "Who met Bob?", "answers": [{"text": "Ann", "answer_start": 0}]},
               {"id": f"a{a}-two", "question": "Who left?", "answers": [
                   {"text": "Ann", "answer_start": context.index("Ann and")}, {"text": "Cy", "answer_start": context.index("Cy")}]}]
        data.append({"title": f"article {a}", "paragraphs": [{"context": context, "qas": qas}]})
    path = tmp_path / "quoref.json"
    path.write_text(json.dumps({"version": "1.1", "data": data}), encoding="utf-8")
    return path


def test_quoref_spans_are_one_answer(tmp_path):
    examples = {ex.id: ex for ex in load_answer_parts(quoref_file(tmp_path))}
    two = examples["a0-two"]
    assert two.answer_texts() == [["Ann", "Cy"]]  # one alternative holding both spans (SQuAD would read two alternatives)
    assert examples["a0-one"].answer_texts() == [["Ann"]] and two.title == "article 0"
    assert registry.task("quoref").multi_span_answers and registry.task("quoref").folds.endswith(":kfold_by_article")


def test_the_shared_quoref_part_reads_as_documented():
    with pytest.warns(JoinedPartsNote, match="^3 questions of .*train.json list answer parts that repeat, nest or overlap"):
        examples = load_answer_parts(require_data("quoref-part/train.json"))
    assert len(examples) == 2184 and len({ex.title for ex in examples}) == 267
    assert 200 <= sum(len(ex.answers[0]) > 1 for ex in examples) <= 203  # the README's 203, less repeated spans


def test_folds_by_article_never_split_an_article():
    examples = [Example(f"q{k}", "?", f"c{k % 5}", title=f"t{k % 5}") for k in range(20)]
    folds = kfold_by_article(examples, 3, seed=0)
    assert sorted(ex.id for _, test in folds for ex in test) == sorted(ex.id for ex in examples)  # each held out once
    for train, test in folds:
        assert not {ex.title for ex in train} & {ex.title for ex in test}
    with pytest.raises(ValueError, match="6 folds need at least 6 articles"):
        kfold_by_article(examples, 6)


def reader_config(encoder, tmp_path, **overrides):
    raw = config_dict(encoder, seeds=[1], runs=[{"name": "joint", "heads": "span+bio", "bio_targets": "one-hot"}],
                      eval={"path": str(multispan_file(tmp_path)), "format": "multispanqa"},
                      eval_also=[{"path": str(quoref_file(tmp_path)), "format": "quoref"}], cross_validation={"folds": 2, "seed": 0})
    del raw["train"]
    return parse_config({**raw, **overrides})


def test_several_data_sets_are_folded_together(tiny_encoder_dir, tmp_path):
    splits = resolve_splits(reader_config(tiny_encoder_dir, tmp_path), FIXTURES)
    assert splits.eval.task == "multispanqa" and [p.task for p in splits.eval.parts] == ["multispanqa", "quoref"]
    assert [p["questions"] for p in splits.eval.describe()["parts"]] == [12, 8]
    held_out = [ex.id for _, test in splits.folds for ex in test.examples]
    assert sorted(held_out) == sorted(splits.eval.ids)  # every question of both data sets held out once
    for train, test in splits.folds:
        quoref = lambda split: {ex.title for ex in split.examples if ex.title}  # noqa: E731
        assert not quoref(train) & quoref(test) and any(ex.id.startswith("m") for ex in test.examples)
        # each fold knows which of its questions came from which data set, so tuning on it weighs them alike
        for fold in (train, test):
            assert [set(ids) for ids in fold.data_sets] == [set(ids) & set(fold.ids) for ids in (part.ids for part in splits.eval.parts)]
            assert sum(map(len, fold.data_sets)) == len(fold.examples)
    assert splits.eval.subset(splits.eval.examples, "one").data_sets == []


def test_a_data_set_scored_otherwise_is_refused(tiny_encoder_dir, tmp_path):
    config = reader_config(tiny_encoder_dir, tmp_path, eval_also=[{"path": str(FIXTURES / "sample_squad_v1.json")}])
    with pytest.raises(ConfigError, match="eval_also: every data set is scored as 'eval' is"):
        resolve_splits(config, FIXTURES)


def test_the_recipe_configs_load():
    for name in ("multispan-reader", "benchmarks/ablations/multispan_reader_full_scale.json",
                 "benchmarks/ablations/multispan_reader_cpu_reduced.json", "benchmarks/ablations/multispan_reader_cpu_mid.json",
                 "benchmarks/ablations/multispan_reader_cpu_3fold.json"):
        config = load_config(name)
        assert [spec.format for spec in (config.eval, *config.eval_also)] == ["multispanqa", "quoref"]
        assert config.cells() == ["reader/span", "reader/bio", "reader/joint"] and config.runs[0].train.init_from


@pytest.mark.slow
def test_the_report_scores_each_data_set(tiny_encoder_dir, tmp_path):
    config = reader_config(tiny_encoder_dir, tmp_path, runs=[{"name": "joint", "heads": "span+bio", "bio_targets": "one-hot",
                                                              "length_prior_tuning": "fold-training"}])
    results, summary = compare(config, FIXTURES, tmp_path / "out", progress=False)
    parts = summary.data_sets
    assert [(p.task, p.questions) for p in parts] == [("multispanqa", 12), ("quoref", 8)]
    for part in parts:
        assert {str(row.cell) for row in part.rows} == {"joint/span", "joint/bio", "joint/joint"}
        assert [(str(c.a), str(c.b)) for c in part.contrasts] == [("joint/span", "joint/bio"), ("joint/span", "joint/joint")]
        for row in part.rows:
            assert 0.0 <= row.empty_share <= 1.0 and row.spans_per_question >= 1  # never an empty answer
    quoref_rows = parts[1].rows
    assert [DataSetSummary.from_json(part.to_json(), "data set") for part in parts] == parts  # reads back the same
    assert all(row.single_span.questions == 4 for row in quoref_rows)  # the four one-span questions
    for cell in results.cells:  # each fold's tuned span-count rule, their mean as the cell's
        assert len(cell.fold_min_span_probabilities) == 2
        assert cell.min_span_probability == pytest.approx(sum(cell.fold_min_span_probabilities) / 2)
    splits = resolve_splits(config, FIXTURES)
    multispan = registry.task("multispanqa")
    for k, (train, _) in enumerate(splits.folds):  # tuned on the fold's training questions, each data set weighed alike
        trained = TrainedModel.load(results.cells[0].fold_model_dirs[k])
        outputs = trained.windows(train.examples)
        prior, _ = tune_bio_length_prior(outputs, train.examples, DecodeConfig(), task=multispan, data_sets=train.data_sets)
        options = multispan.decode_config(trained.decode_config(DecodeConfig(bio_length_prior=prior)))
        for cell in results.cells:
            candidates = all_multi_span_candidates(outputs, train.examples, cell.decoding, options)
            rule, _ = best_span_count_threshold(candidates, train.examples, cell.decoding, multispan, data_sets=train.data_sets)
            assert cell.fold_min_span_probabilities[k] == rule
            assert cell.fold_bio_length_priors[k] == registry.decoding(cell.decoding).length_prior(prior)
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Per data set" in report and "quoref.json" in report and "## Span-count thresholds" in report


@pytest.mark.slow  # two data sets' bootstrap intervals
def test_the_joint_rule_re_decoded_from_the_gpu_readers_report(monkeypatch):
    """``benchmarks/multispan_joint_rule_from_report.py`` on the committed GPU reader's report: the report's own
    decodings re-scored from their answer texts give its numbers, and the rule answers with BIO's spans exactly where
    BIO gave several, else with the joint answer."""
    import sys
    from pathlib import Path

    data_dir = require_data("quoref-part/train.json").parents[1]
    benchmarks = Path(__file__).parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(benchmarks))
    rule = importlib.import_module("multispan_joint_rule_from_report")
    report_path = benchmarks / "reports" / "gpu-multispan-reader" / "report.json.xz"
    report = read_report(report_path)
    answers = rule.answers_by_decoding(report, "reader")
    for qid, bio in answers["bio"].items():
        assert answers[rule.RULE][qid] == (bio if len(bio) >= 2 else answers["joint"][qid])
    with pytest.warns(JoinedPartsNote, match="^3 questions of .*train.json list answer parts that repeat"):
        splits = resolve_splits(parse_config(report.results.config), data_dir)
    summary = {data_set.description: data_set for data_set in report.summary.data_sets}
    for part in splits.eval.parts:
        rows = rule.data_set_rows(part, answers)
        for decoding in ("span", "bio", "joint"):
            scored = next(row for row in summary[part.description].rows if str(row.cell) == f"reader/{decoding}")
            assert rows["decodings"][decoding]["em_f1"] == pytest.approx(scored.scores["em_f1"][0], abs=0.02)  # spans holding a line break
        difference = rows["em_f1_differences"][f"{rule.RULE} - span"]
        assert difference["ci"][0] <= difference["difference"] <= difference["ci"][1]
    assert sys.modules["multispan_joint_rule_from_report"] is rule


@pytest.mark.slow  # three data-set groups' bootstrap intervals
def test_the_readers_decodings_by_the_size_of_the_gold_answer(monkeypatch):
    """``benchmarks/multispan_by_gold_size.py`` on the committed 5-fold CPU reader's report: its groups cut each data
    set's questions in two by the gold's span count (the one-span group is the report's single-span questions), and a
    data set whose questions all fall in one group scores there exactly as the report scores it."""
    from pathlib import Path

    data_dir = require_data("quoref-part/train.json").parents[1]
    benchmarks = Path(__file__).parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(benchmarks))
    by_size = importlib.import_module("multispan_by_gold_size")
    report = read_report(benchmarks / "reports" / "multispan-reader-full-scale" / "report.json.xz")
    with pytest.warns(JoinedPartsNote, match="^3 questions of .*train.json list answer parts that repeat"):
        splits = resolve_splits(parse_config(report.results.config), data_dir)
    cells = by_size.run_cells(report, "reader")
    summary = {data_set.description: data_set for data_set in report.summary.data_sets}
    read_then_as_several = _one_part_now_several_before(data_dir / "quoref-part" / "train.json")
    begin = 0
    for part in splits.eval.parts:
        result = by_size.data_set_groups(part, begin, cells)
        begin += len(part.examples)
        groups = result["groups"]
        assert sum(group["questions"] for group in groups.values()) == len(part.examples)
        rows = {str(row.cell): row for row in summary[part.description].rows}
        single = rows["reader/span"].single_span
        # the report was made before parts sharing a character were joined: a question read then as several parts
        # and now as one joins the one-span group
        joined = sum(example.id in read_then_as_several for example in part.examples)
        assert groups.get("one-span gold", {"questions": 0})["questions"] == (single.questions if single else 0) + joined
        if len(groups) == 1:
            (group,) = groups.values()
            for decoding in ("span", "bio", "joint"):
                assert group["decodings"][decoding]["em_f1"] == pytest.approx(rows[f"reader/{decoding}"].scores["em_f1"][0])
        for group in groups.values():
            assert all(0 <= row["several_texts_share"] <= 1 and row["spans_per_question"] >= 1 for row in group["decodings"].values())
            for contrast in group["em_f1_differences"].values():
                assert contrast["ci"][0] <= contrast["difference"] <= contrast["ci"][1]
    assert begin == len(report.eval_ids)


def _one_part_now_several_before(path) -> set[str]:
    """The questions of an answer-parts file whose listed spans, as distinct spans, were several and now join as one."""
    from bio_mrc.data.one_answer import as_one_answer
    from bio_mrc.data.squad import load_squad

    return {example.id for example in load_squad(path).examples
            if len({span for alternative in example.answers for span in alternative}) > 1
            and len(as_one_answer(example).answers[0]) == 1}


def test_the_out_of_domain_evaluation_tunes_each_rule_on_the_other_data_set(trained_dir, tmp_path, monkeypatch):
    """``benchmarks/multispan_out_of_domain.py``: every decoding at its registry default and at the threshold tuning
    picks on the other data set, each scored with MultiSpanQA's metrics on the answers those thresholds give."""
    from pathlib import Path

    from bio_mrc.data.multispanqa import load_multispanqa, multispan_gold_texts
    from bio_mrc.inference.answers import multi_span_answers
    from bio_mrc.metrics.multispan_official import multispan_metrics

    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "benchmarks"))
    script = importlib.import_module("multispan_out_of_domain")
    trained = TrainedModel.load(trained_dir)
    config = trained.decode_config(DecodeConfig())
    data = {"spans": (load_multispanqa(multispan_file(tmp_path)), registry.task("multispanqa")),
            "quoref": (load_answer_parts(quoref_file(tmp_path)), registry.task("quoref"))}
    result = script.evaluate(trained, data, config)
    for name, other in (("spans", "quoref"), ("quoref", "spans")):
        examples, other_examples = data[name][0], data[other][0]
        defaults, tuned = result[name]["defaults"], result[name][f"tuned on {other}"]
        assert defaults["thresholds"] == {d: registry.decoding(d).min_span_probability for d in trained.decodings}
        for decoding in trained.decodings:
            found = all_multi_span_candidates(trained.windows(other_examples), other_examples, decoding, config)
            assert tuned["thresholds"][decoding] == best_span_count_threshold(found, other_examples, decoding, data[other][1])[0]
            mine = all_multi_span_candidates(trained.windows(examples), examples, decoding, config)
            answers = {p.id: p.answers for p in multi_span_answers(mine, decoding, tuned["thresholds"][decoding])}
            scored = tuned["parts"][name]["decodings"][decoding]
            assert scored["em_f1"] == pytest.approx(multispan_metrics(multispan_gold_texts(examples), answers)["em_f1"])
            assert scored["empty"] == 0 and scored["spans_per_question"] >= 1
        assert set(tuned["parts"]) == ({name} if name == "spans" else {name, f"{name}, multi-span questions"})
        assert tuned["parts"][name]["em_f1_differences"].keys() == {"bio - span", "joint - span"}


def test_the_count_oracle_keeps_one_span_where_the_gold_has_one(monkeypatch):
    """``benchmarks/multispan_count_oracle.py``: told the count, a one-span question keeps its first span and a
    several-span question every span the rule kept; scored per group of questions (hand-computed EM F1)."""
    from pathlib import Path

    from bio_mrc.harness.comparison_splits import Split
    from bio_mrc.types import AnswerSpan, Prediction

    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "benchmarks"))
    oracle = importlib.import_module("multispan_count_oracle")
    context = "Ann met Bob and Cid."
    one = Example("one", "Who met Bob?", context, (((0, 3),),))
    several = Example("several", "Whom did Ann meet?", context, (((8, 11), (16, 19)),))

    def spans(*texts: str) -> list[AnswerSpan]:
        return [AnswerSpan(text, context.index(text), context.index(text) + len(text), 1.0) for text in texts]

    predictions = [Prediction("one", spans("Ann", "Bob")), Prediction("several", spans("Bob", "Ann"))]
    told = oracle.one_span_where_told(predictions, {"one": 1, "several": 2})
    assert [[span.text for span in p.spans] for p in told] == [["Ann"], ["Bob", "Ann"]]
    split = Split([one, several], "multispanqa", "two questions")
    cells = {"span": oracle.as_cell(split.kind, split, predictions), "bio": oracle.as_cell(split.kind, split, told)}
    groups = oracle.data_set_rows(split, 0, {"as given": cells})["groups"]
    em_f1 = {label: {name: round(row["em_f1"], 2) for name, row in ways["as given"]["decodings"].items()}
             for label, ways in groups.items()}
    # every question: 2 of 4 predicted spans right, 2 of 3 gold found (F1 4/7); told: 2 of 3 and 2 of 3
    assert em_f1 == {oracle.ALL_QUESTIONS: {"span": 57.14, "bio": 66.67}, "one-span gold": {"span": 66.67, "bio": 100.0},
                     "several-span gold": {"span": 50.0, "bio": 50.0}}


def test_the_count_oracle_refuses_a_report_whose_fold_models_are_gone(monkeypatch, tmp_path):
    """Without the report's fold models on this machine the script stops before any work, naming the missing folder."""
    from pathlib import Path
    from types import SimpleNamespace

    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "benchmarks"))
    oracle = importlib.import_module("multispan_count_oracle")
    gone = str(tmp_path / "models" / "reader-seed42-0")
    config = SimpleNamespace(runs=[SimpleNamespace(name="reader")])
    with pytest.raises(SystemExit, match="fold models are not on this machine") as stopped:
        oracle.fold_outputs(config, None, {"span": SimpleNamespace(fold_model_dirs=[gone])}, "reader")
    assert gone in str(stopped.value)


def test_out_of_fold_tuning_joins_the_other_folds_windows_in_order(monkeypatch):
    """``benchmarks/multispan_out_of_fold_tuning.py``: the folds' windows one after another, each fold's questions
    numbered after the previous folds'; windows padded to different lengths are refused, not silently misaligned."""
    from pathlib import Path
    from types import SimpleNamespace

    import numpy as np

    from bio_mrc.decoding.window_outputs import WindowOutputs

    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "benchmarks"))
    tuning = importlib.import_module("multispan_out_of_fold_tuning")

    def fold(example_index: list[int], questions: int, length: int = 4):
        windows = len(example_index)
        outputs = WindowOutputs(np.array(example_index), np.zeros((windows, length, 2)), np.ones((windows, length), dtype=bool),
                                start_logits=np.arange(windows * length, dtype=np.float32).reshape(windows, length))
        return tuning.FoldOutputs(SimpleNamespace(examples=[None] * questions), outputs, None)

    joined = tuning.joined_outputs([fold([0, 0, 1], 2), fold([0, 1, 2], 3)])
    assert joined.example_index.tolist() == [0, 0, 1, 2, 3, 4]
    assert joined.start_logits[3:].tolist() == fold([0, 1, 2], 3).outputs.start_logits.tolist()
    with pytest.raises(SystemExit, match="different lengths"):
        tuning.joined_outputs([fold([0], 1), fold([0], 1, length=5)])
