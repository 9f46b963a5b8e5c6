"""The comparison report's statistics: contrasts against a baseline, Holm, seeds × questions, the per-cell plot.

Mostly on synthetic results (what ``run_comparison`` returns), so no model is trained; one
end-to-end check runs a comparison on the tiny encoder.
"""

import json
from dataclasses import replace

import numpy as np
import pytest

from bio_mrc import registry

from bio_mrc.errors import ConfigError
from bio_mrc.harness.config import parse_config, resolve_contrasts
from bio_mrc.harness.report import CELL_PLOT, render_markdown, write_report
from bio_mrc.harness.results import Cell, ComparisonResults
from bio_mrc.harness.summary import summarise
from bio_mrc.harness.summary_records import AgainstAbstaining, CellKey
from bio_mrc.harness.selective_section import measure
from bio_mrc.metrics.stats import paired_bootstrap, paired_bootstrap_ratio, paired_bootstrap_recomputed, two_level_bootstrap
from bio_mrc.metrics.selective import aurc, aurc_of_resamples
from bio_mrc.metrics.multispan_official import f1_from_count_sums
from bio_mrc.types import Example

from .conftest import FIXTURES, SAMPLE_V1

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
HEADS = {"joint": "span+bio", "bio-only": "bio", "span-only": "span"}
DECODINGS = {"span+bio": ("span", "bio", "joint"), "bio": ("bio",), "span": ("span",)}


def examples(n):
    words = ("What", "Who", "When", "How")
    return [Example(f"q{i}", f"{words[i % 4]} is thing {i}?", f"Thing {i} is the answer number {i} here.",
                    (((0, 7 + len(str(i))),),)) for i in range(n)]


def synthetic_results(runs=("joint",), seeds=(42,), n=200, seed_sd=0.0, task="squad-v1.1", selective=False, **config):
    """What ``run_comparison`` returns, with random per-question scores: each decoding a little better
    than the last, each seed shifted by ``seed_sd`` on average; with ``selective``, each question's
    raw confidence (noisy, but higher where the answer is right) and calibrated one (in steps: ties)."""
    rng = np.random.default_rng(0)
    cells = []
    for seed in seeds:
        shift = rng.normal(0, seed_sd) if seed_sd else 0.0
        for run in runs:
            for k, decoding in enumerate(DECODINGS[HEADS[run]]):
                cell = {"run": run, "decoding": decoding, "seed": seed, "model_dir": f"/m/{run}-{seed}", "threshold": None,
                        "bio_length_prior": 1.0 if decoding != "span" else None, "train_seconds": 10.0,
                        "inference_seconds": 2.0, "decode_seconds": 0.1, "answers": [f"a{(i + k) % 3}" for i in range(n)]}
                if task == "multispanqa":
                    predicted, gold = rng.integers(1, 4, n), rng.integers(1, 4, n)
                    em = rng.binomial(np.minimum(predicted, gold), 0.3 + 0.1 * k)
                    cell["counts"] = np.stack([em, em + 0.3, em + 0.2, predicted, gold], axis=1).astype(float)
                else:
                    f1 = np.clip(rng.normal(50 + 3 * k + shift, 30, n), 0, 100)
                    cell.update(f1=f1, em=(f1 > 80) * 100.0)
                    if selective:
                        right = (f1 > 50).astype(int)
                        raw = np.clip(0.3 * right + 0.7 * rng.random(n), 0, 1)
                        cell["selective"] = {"right": right.tolist(), "confidence": {"raw": raw.tolist(),
                                                                                     "calibrated": (raw.round(1) * 0.9).tolist()}}
                cells.append(Cell(**cell))
    return ComparisonResults(
        config={"name": "synthetic", "description": "made up", "seeds": list(seeds),
                "runs": [{"name": r, "encoder": "tiny", "heads": HEADS[r]} for r in runs], **config},
        package_version="0", date="today", train={"description": "t", "questions": 9, "question_hash": "h"},
        eval={"description": "e", "questions": n, "question_hash": "h", "task": task},
        tune=None, eval_examples=examples(n), cells=cells,
    )


def squad_summary(results):
    n = len(results.eval_examples)
    return summarise(results, np.arange(n) % 7, 50 + np.arange(n))


def pairs(items):
    """The (A, B) labels of contrasts: records, or their JSON."""
    return [(c["a"], c["b"]) if isinstance(c, dict) else (str(c.a), str(c.b)) for c in items]


def test_the_baseline_defaults_to_the_first_cell():
    summary = squad_summary(synthetic_results(runs=("joint", "bio-only")))
    assert (summary.baseline, summary.baseline_named_in_config) == (CellKey("joint", "span"), False)
    assert pairs(summary.contrasts) == [("joint/span", "joint/bio"), ("joint/span", "joint/joint"), ("joint/span", "bio-only/bio")]
    assert len(summary.comparisons) == 6  # every pair of the four cells, still computed


def test_a_named_baseline_and_listed_contrasts():
    results = synthetic_results(runs=("joint", "bio-only"), baseline="joint/bio",
                           contrasts=[["joint/bio", "bio-only/bio"], ["joint/joint", "bio-only/bio"], ["joint/span", "joint/bio"]])
    summary = squad_summary(results)
    assert (str(summary.baseline), summary.baseline_named_in_config) == ("joint/bio", True)
    # the baseline against every other cell, then the listed pairs not already among them (in either order)
    assert pairs(summary.contrasts) == [("joint/bio", "joint/span"), ("joint/bio", "joint/joint"),
                                        ("joint/bio", "bio-only/bio"), ("joint/joint", "bio-only/bio")]
    f1 = {c.key: c.f1 for c in results.cells}
    for contrast in summary.contrasts:
        expected = paired_bootstrap(f1[contrast.a], f1[contrast.b], n_resamples=1000, seed=0)
        assert {k: getattr(contrast, k) for k in expected.to_dict()} == expected.to_dict()  # one seed: exactly the question bootstrap


def test_contrast_p_values_are_adjusted_with_holm():
    summary = squad_summary(synthetic_results(runs=("joint", "bio-only", "span-only")))
    contrasts = summary.contrasts
    m, p = len(contrasts), np.array([c.p_value for c in contrasts])
    order = np.argsort(p, kind="stable")
    expected = np.maximum.accumulate(np.minimum(1, (m - np.arange(m)) * p[order]))
    np.testing.assert_allclose([contrasts[i].p_holm for i in order], expected)
    assert all(c.p_holm >= c.p_value and c.significant_holm == (c.p_holm < 0.05) for c in contrasts)
    assert all(c.p_holm is None and "p_holm" not in c.to_json() for c in summary.comparisons)  # the full matrix is unadjusted


def test_a_p_value_no_resample_reaches_is_printed_as_its_bound():
    results = synthetic_results(runs=("joint", "bio-only"))
    f1 = np.linspace(0.0, 100.0, 200)
    # the baseline, joint/span, is below every other cell on every question: no resampled difference reaches 0, p = 0
    cells = [replace(c, f1=f1 - 1.0 if c.decoding == "span" else f1) for c in results.cells]
    results = replace(results, cells=cells)
    summary = squad_summary(results)
    zero = [c for c in summary.contrasts if c.p_value == 0.0]
    assert len(zero) == len(summary.contrasts) == 3 and all(c.p_holm == 0.0 for c in zero)
    table = [line for line in render_markdown(results, summary, {}).splitlines() if line.startswith("| joint/")]
    rows = [line for line in table if line.startswith("| joint/span | ") and "[-1.00, -1.00]" in line]
    assert len(rows) == 3 and "0.000" not in "\n".join(rows)
    # 1000 resamples show a two-sided p no smaller than 2/1000; Holm over the 3 contrasts multiplies that by at most 3
    assert all("| < 0.002 | < 0.006 |" in row for row in rows)


def test_answers_agree_is_the_first_seeds_and_the_report_says_so():
    results = synthetic_results(seeds=(1, 2))
    # seed 1: joint/span answers a0 a1 a2 ..., joint/bio a1 a2 a0 ...: never the same; seed 2: every answer "x"
    cells = [replace(c, answers=["x"] * len(c.answers)) if c.seed == 2 else c for c in results.cells]
    summary = squad_summary(replace(results, cells=cells))
    assert summary.contrasts[0].agreement == 0.0  # the first seeds' 0 of 200, not the seeds' mean 0.5
    assert "with several seeds, the answers of the first seed both cells have" in render_markdown(results, summary, {})


def test_answers_agree_compares_the_models_of_the_seed_the_two_cells_share():
    """Run joint trained seeds 1 and 5, run bio-only 5 and 6: their pair is paired on seed 5, and so is its agreement,
    not joint's seed 1 against bio-only's seed 5."""
    results = synthetic_results(runs=("joint", "bio-only"), seeds=(1, 5, 6), n=4, baseline="joint/bio",
                                contrasts=[["joint/bio", "bio-only/bio"]])
    texts = {(1, "joint"): ["p", "q", "r", "s"], (5, "joint"): ["a", "b", "c", "d"],
             (5, "bio-only"): ["a", "b", "c", "z"], (6, "bio-only"): ["p", "q", "r", "s"]}
    cells = [replace(c, answers=texts[c.seed, c.run]) for c in results.cells if (c.seed, c.run) in texts]
    contrast = next(c for c in squad_summary(replace(results, cells=cells)).contrasts if str(c.b) == "bio-only/bio")
    assert contrast.seeds == [5] and contrast.agreement == 0.75  # seed 5: a, b, c agree, d and z do not


def test_unknown_cells_are_refused_naming_them():
    raw = {"train": {"path": "x"}, "eval": {"path": "y"}, "runs": [{"name": "joint", "heads": "span+bio"}, {"name": "bio-only", "heads": "bio"}]}
    assert parse_config({**raw, "baseline": "bio-only/bio"}).baseline == "bio-only/bio"
    with pytest.raises(ValueError, match=r'unknown cell\(s\) \["bio-only/span"\].*joint/span'):
        parse_config({**raw, "baseline": "bio-only/span"})  # a BIO-only model has no span decoding
    with pytest.raises(ValueError, match=r'\["joint/viterbi", "nope/bio"\]'):
        parse_config({**raw, "contrasts": [["joint/viterbi", "joint/bio"], ["joint/span", "nope/bio"]]})
    with pytest.raises(ValueError, match="two different cells"):
        parse_config({**raw, "contrasts": [["joint/bio", "joint/bio"]]})
    with pytest.raises(ValueError, match=r'contrasts\[0\]: "joint/bio" is not of type "array"'):
        parse_config({**raw, "contrasts": ["joint/bio", "bio-only/bio"]})
    with pytest.raises(ConfigError, match='"elsewhere/span"'):  # a results dict is checked against its own cells too
        squad_summary(synthetic_results(baseline="elsewhere/span"))
    assert resolve_contrasts(["a/span", "a/bio"], None) == ("a/span", [("a/span", "a/bio")])


def test_a_config_round_trips_its_contrasts():
    raw = {"train": {"path": "x"}, "eval": {"path": "y"}, "runs": [{"name": "joint", "heads": "span+bio"}],
           "baseline": "joint/bio", "contrasts": [["joint/joint", "joint/span"]]}
    config = parse_config(raw)
    assert (config.baseline, config.contrasts) == ("joint/bio", [("joint/joint", "joint/span")])
    saved = config.to_dict()
    assert (saved["baseline"], saved["contrasts"]) == ("joint/bio", [["joint/joint", "joint/span"]])
    read_back = parse_config({k: v for k, v in saved.items() if k != "description"})
    assert read_back.to_dict() == saved
    # an entry without "format" is saved as the format it is read as, which the saved config then names
    assert read_back == replace(config, train=replace(config.train, format="squad"), eval=replace(config.eval, format="squad"))
    assert "baseline" not in parse_config({k: v for k, v in raw.items() if k not in ("baseline", "contrasts")}).to_dict()


def test_several_seeds_use_the_two_level_bootstrap_paired_by_seed_index():
    results = synthetic_results(runs=("joint", "bio-only"), seeds=(1, 2, 3), seed_sd=5.0)
    summary = squad_summary(results)
    assert summary.resampling == "seeds × questions"
    f1 = {}
    for c in results.cells:
        f1.setdefault(c.key, []).append(c.f1)
    for contrast in summary.contrasts:  # rows are seeds in order, across runs too
        expected = two_level_bootstrap(np.array(f1[contrast.a]), np.array(f1[contrast.b]), n_resamples=1000, seed=0)
        assert contrast.n_seeds == 3 and contrast.ci_low == expected.ci_low and contrast.ci_high == expected.ci_high
    one_seed = squad_summary(synthetic_results(runs=("joint", "bio-only"), seeds=(1,)))
    joint_bio = CellKey("joint", "bio")
    assert one_seed.resampling == "questions" and one_seed.intervals[joint_bio].to_dict()["resampling"] == "questions"
    interval = summary.intervals[joint_bio].to_dict()
    assert interval["resampling"] == "seeds × questions" and interval["value"] == pytest.approx(np.mean(f1[joint_bio]))


@pytest.mark.slow
def test_runs_with_different_seeds_pair_on_the_seeds_they_share(tmp_path):
    """A learning curve trains one seed of most runs and three of one: each contrast pairs by seed value."""
    three = synthetic_results(runs=("joint", "bio-only"), seeds=(42, 43, 44), seed_sd=5.0)
    one = synthetic_results(runs=("span-only",), seeds=(42,))
    other = synthetic_results(runs=("span-only",), seeds=(7,))
    for c in other.cells:
        c.run = "span-only-7"
    results = replace(three, cells=three.cells + one.cells + other.cells,
                      config={**three.config, "baseline": "joint/span",
                              "contrasts": [["bio-only/bio", "span-only/span"], ["span-only-7/span", "joint/span"]]})
    summary = squad_summary(results)
    assert summary.resampling == "per contrast"
    f1 = {}
    for c in results.cells:
        f1.setdefault(c.label, {})[c.seed] = c.f1
    by_pair = {(str(c.a), str(c.b)): c.to_json() for c in summary.contrasts}  # the baseline comes first: A = joint/span
    shared_three = by_pair["joint/span", "joint/bio"]
    expected = two_level_bootstrap(np.array(list(f1["joint/span"].values())), np.array(list(f1["joint/bio"].values())),
                                   n_resamples=1000, seed=0)
    assert shared_three["seeds"] == [42, 43, 44] and shared_three["ci_low"] == expected.ci_low
    shared_one = by_pair["bio-only/bio", "span-only/span"]  # seed 42 of three against the one seed 42
    expected = paired_bootstrap(f1["bio-only/bio"][42], f1["span-only/span"][42], n_resamples=1000, seed=0)
    assert (shared_one["seeds"], shared_one["resampling"]) == ([42], "questions")
    assert shared_one["diff"] == pytest.approx(expected.diff) and shared_one["ci_high"] == expected.ci_high
    none_shared = by_pair["joint/span", "span-only-7/span"]  # the mean of seeds 42-44 against seed 7
    expected = paired_bootstrap(np.mean(list(f1["joint/span"].values()), axis=0), f1["span-only-7/span"][7],
                                n_resamples=1000, seed=0)
    assert none_shared["seeds"] == [] and none_shared["diff"] == pytest.approx(expected.diff)
    write_report(results, tmp_path, np.arange(200) % 7, 50 + np.arange(200))
    report = (tmp_path / "report.md").read_text()
    assert "paired on |" in report and "| seeds 42 |" in report and "| seed means |" in report
    assert "; seeds [42, 43, 44]\n" in report  # every run has the comparison's seeds: none named apart
    runs = [{**run, "seeds": [43]} if run["name"] == "bio-only" else run for run in results.config["runs"]]
    write_report(replace(results, config={**results.config, "runs": runs}), tmp_path, np.arange(200) % 7, 50 + np.arange(200))
    assert "; seeds [42, 43, 44] (bio-only [43])\n" in (tmp_path / "report.md").read_text()


def test_multispan_cells_share_the_contrast_machinery():
    results = replace(synthetic_results(task="multispanqa", baseline="joint/bio"), eval_examples=[])  # not read: no breakdowns
    summary = summarise(results, None, None)
    assert pairs(summary.contrasts) == [("joint/bio", "joint/span"), ("joint/bio", "joint/joint")]
    counts = {c.decoding: c.counts for c in results.cells}
    expected = paired_bootstrap_ratio(counts["bio"], counts["span"], f1_from_count_sums, n_resamples=1000, seed=0)
    assert summary.contrasts[0].diff == expected.diff and summary.contrasts[0].ci_low == expected.ci_low
    span = CellKey("joint", "span")
    assert summary.intervals[span].value == pytest.approx(float(f1_from_count_sums(counts["span"].sum(axis=0))))
    several = synthetic_results(task="multispanqa", seeds=(1, 2))
    assert summarise(several, None, None).contrasts[0].n_seeds == 2


def test_multispan_agreement_compares_sets_of_normalised_spans():
    """Two decodings whose span lists hold the same texts once normalised agree, whatever their order (answers are
    joined sorted by raw text: "The cat" sorts before "bird"); a list is not one span of its joined texts."""
    results = replace(synthetic_results(task="multispanqa", baseline="joint/bio", n=4), eval_examples=[])
    texts = {"bio": ["The cat\nbird", "x\ny", "one", "a\nb"], "span": ["bird\ncat", "y\nx", "One.", "a b"],
             "joint": ["cat", "x", "two", "a\nb"]}
    results = replace(results, cells=[replace(c, answers=texts[c.decoding]) for c in results.cells])
    agreement = {frozenset((c.a.decoding, c.b.decoding)): c.agreement for c in summarise(results, None, None).comparisons}
    assert agreement[frozenset(("bio", "span"))] == 0.75  # all but the last: two spans against one span "a b"
    assert agreement[frozenset(("bio", "joint"))] == 0.25


def test_single_answer_agreement_normalises_the_whole_text():
    entry = registry.task("squad-v1.1")
    assert entry.answer_key("The\nNormans.") == entry.answer_key("normans") == "normans"


def write(results, tmp_path):
    n = len(results.eval_examples)
    summary = write_report(results, tmp_path, np.arange(n) % 7, 50 + np.arange(n))
    return summary, (tmp_path / "report.md").read_text(), json.loads((tmp_path / "report.json").read_text())


def written_once(results, tmp_path_factory, name):
    """A report the tests of this module that read it share, written (its figures drawn) once: (folder, results,
    summary, report.md, report.json). The tests only read it."""
    folder = tmp_path_factory.mktemp(name)
    return folder, results, *write(results, folder)


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory):
    """The report of three runs (five cells), one seed, no per-question confidences, no partial training times."""
    return written_once(synthetic_results(runs=("joint", "bio-only", "span-only")), tmp_path_factory, "three-runs")


@pytest.fixture(scope="module")
def selective_report(tmp_path_factory):
    """The report of two runs whose cells store each question's confidence and rightness."""
    return written_once(synthetic_results(runs=("joint", "bio-only"), selective=True), tmp_path_factory, "selective")


@pytest.fixture(scope="module")
def squad2_report(tmp_path_factory):
    """A SQuAD 2.0 report, every other question unanswerable, every cell's no-answer threshold minus infinity (tuned
    where abstaining always scores best)."""
    results = synthetic_results(runs=("joint",))
    results.eval["task"] = "squad-v2.0"
    results.eval_examples = [Example(ex.id, ex.question, ex.context, ex.answers if i % 2 else ())
                             for i, ex in enumerate(results.eval_examples)]
    results.cells = [replace(cell, threshold=float("-inf")) for cell in results.cells]
    return written_once(results, tmp_path_factory, "squad2")


def test_the_report_leads_its_statistics_with_the_contrasts(three_runs):
    *_, report, saved = three_runs
    statistics = report[report.index("## Scores"):]
    first_section = statistics.split("\n## ")[1]
    assert first_section.startswith("Paired differences: the contrasts (F1, 95% percentile paired bootstrap over questions")
    assert "Baseline: `joint/span` (the first cell: the configuration names no `\"baseline\"`)" in first_section
    assert "Holm" in first_section and "significant after Holm" in first_section and "over **questions**" in first_section
    table = [line for line in first_section.splitlines() if line.startswith("| joint/span |")]
    assert len(table) == 4  # joint/span against the four other cells, and nothing else
    assert "| joint/bio | bio-only/bio |" not in report  # a pair the config does not name is in report.json only
    assert len(saved["summary"]["comparisons"]) == 10 and len(saved["summary"]["contrasts"]) == 4
    assert ("joint/bio", "bio-only/bio") in pairs(saved["summary"]["comparisons"])


def test_a_baseline_whose_run_is_not_selected_is_named_not_called_missing(tmp_path):
    """--runs without the baseline's run: the report said the configuration names no baseline, which it does."""
    raw = {"train": {"path": "x"}, "eval": {"path": "y"}, "baseline": "joint/bio",
           "runs": [{"name": "joint", "heads": "span+bio"}, {"name": "bio-only", "heads": "bio"}, {"name": "span-only", "heads": "span"}]}
    assert parse_config(raw).with_overrides(runs=["joint", "span-only"]).to_dict().get("baseline_left_out") is None
    kept = parse_config(raw).with_overrides(runs=["bio-only", "span-only"])
    assert kept.baseline is None
    _, report, saved = write(synthetic_results(runs=("bio-only", "span-only"), baseline_left_out=kept.to_dict().get("baseline_left_out")), tmp_path)
    assert ("Baseline: `bio-only/bio` (the first cell: the configuration's baseline `joint/bio` is of the run `joint`, which "
            "is not among the runs selected (`--runs`), so no cell is compared with it).") in report
    assert "names no" not in report
    assert pairs(saved["summary"]["contrasts"]) == [("bio-only/bio", "span-only/span")]


def test_a_configuration_that_left_its_baseline_out_reads_back_as_itself():
    """The configuration a report keeps (report.json's, report.md's) is given back to --config, and to parse_config by
    the scripts that read a report: one whose --runs left the baseline's run out was refused for its baseline_left_out."""
    raw = {"train": {"path": "x"}, "eval": {"path": "y"}, "baseline": "joint/bio",
           "runs": [{"name": "joint", "heads": "span+bio"}, {"name": "bio-only", "heads": "bio"}, {"name": "span-only", "heads": "span"}]}
    kept = parse_config(raw).with_overrides(runs=["bio-only", "span-only"])
    again = parse_config(json.loads(json.dumps(kept.to_dict())))
    assert again.baseline is None and again.baseline_left_out == "joint/bio"
    assert again.to_dict() == kept.to_dict()
    assert again.with_overrides(runs=["span-only"]).baseline_left_out == "joint/bio"
    with pytest.raises(ConfigError, match="'baseline_left_out' \"span-only/span\" is the baseline of a run the runs selected "
                       "leave out, but the run \"span-only\" is among them: name it as 'baseline'"):
        parse_config({**kept.to_dict(), "baseline_left_out": "span-only/span"})


def test_a_training_time_of_the_last_sitting_only_is_marked(three_runs, tmp_path):
    *_, complete, _ = three_runs  # every training time whole
    assert "*Training time of the last sitting only" not in complete
    results = synthetic_results(runs=("joint", "span-only"))
    for cell in results.cells:
        cell.train_seconds_partial = cell.run == "joint"
    _, report, _ = write(results, tmp_path)
    rows = {line.split(" | ")[0] + " | " + line.split(" | ")[1]: line for line in report.splitlines() if line.startswith("| ")}
    assert "| 10* | 2 |" in rows["| joint | span"] and "| 10 | 2 |" in rows["| span-only | span"]
    assert "*Training time of the last sitting only" in report


def test_the_cell_plot_is_written_and_linked(tmp_path):
    summary, report, _ = write(synthetic_results(seeds=(1, 2), seed_sd=3.0, baseline="joint/joint"), tmp_path)
    assert (tmp_path / "score_per_cell.png").read_bytes().startswith(PNG_MAGIC)
    assert "![F1 per cell with 95% intervals](score_per_cell.png)" in report
    assert "## F1 per cell (95% percentile bootstrap interval over seeds × questions" in report
    assert "Baseline: `joint/joint` (named by the configuration)" in report and "over **seeds × questions** (2 seeds)" in report
    for name in ("f1_by_answer_length.png", "f1_by_context_length.png"):  # the breakdown plots stay
        assert (tmp_path / name).stat().st_size > 0 and f"]({name})" in report
    assert report.index("score_per_cell.png") < report.index("## F1 by answer length")


def test_more_figures_get_a_section_of_their_own(tmp_path, monkeypatch):
    import bio_mrc.harness.report as report_module

    write_plots = report_module.write_plots
    monkeypatch.setattr(report_module, "write_plots", lambda r, s, d: {**write_plots(r, s, d), "calibration": "calibration.png"})
    _, report, _ = write(synthetic_results(), tmp_path)
    assert "## Calibration\n\n![calibration](calibration.png)" in report
    assert report.index("## Calibration") < report.index("## Configuration")


def selective_arrays(results, kind):
    arrays = {}
    for c in results.cells:
        arrays.setdefault(c.label, []).append(
            (np.array(c.selective["confidence"][kind]), np.array(c.selective["right"], dtype=float)))
    return arrays


def test_the_selective_qa_section_and_plot(selective_report, three_runs):
    folder, results, summary, report, saved = selective_report
    section = report[report.index("## Selective QA"):]
    assert "| joint/bio | raw |" in section and "| bio-only/bio | calibrated |" in section and "MacroCE" in section
    assert "![risk–coverage curves](risk_coverage.png)" in section
    assert "## Risk" not in report  # the figure is shown in its section, not again under a title of its own
    assert (folder / "risk_coverage.png").read_bytes().startswith(PNG_MAGIC)
    cells = saved["summary"]["selective"]["cells"]
    raw = selective_arrays(results, "raw")
    for label, kinds in cells.items():
        assert set(kinds) == {"raw", "calibrated"} and len(kinds["raw"]["curve"]["coverage"]) <= 200
        expected = measure(*raw[label][0])
        assert kinds["raw"]["aurc"] == [pytest.approx(expected["aurc"])]
        assert kinds["raw"]["coverage_at_80"] == [pytest.approx(expected["coverage_at_80"])]
    assert summary.selective.contrasts and summary.selective.to_json() == saved["summary"]["selective"]
    plain_folder, *_, plain, _ = three_runs  # cells without per-question confidences: no section, no figure
    assert "Selective QA" not in plain and not (plain_folder / "risk_coverage.png").exists()


def aurc_statistic(item, idx):
    return aurc_of_resamples(item[0], item[1], idx)


def test_the_paired_interval_of_an_aurc_contrast():
    results = synthetic_results(runs=("joint", "bio-only"), selective=True)
    contrasts = squad_summary(results).selective.contrasts
    assert [(str(c.a), str(c.b), c.confidence) for c in contrasts][:2] == [("joint/span", "joint/bio", "raw"),
                                                                           ("joint/span", "joint/bio", "calibrated")]
    for contrast in contrasts:
        arrays = selective_arrays(results, contrast.confidence)
        a, b = arrays[str(contrast.a)], arrays[str(contrast.b)]
        expected = paired_bootstrap_recomputed(a, b, aurc_statistic, 200, n_resamples=1000, seed=0)
        assert contrast.diff == pytest.approx(aurc(*a[0]) - aurc(*b[0]))
        assert (contrast.ci_low, contrast.ci_high, contrast.p_value) == (expected.ci_low, expected.ci_high, expected.p_value)
    several = squad_summary(synthetic_results(seeds=(1, 2), seed_sd=2.0, selective=True)).selective
    assert several.contrasts[0].n_seeds == 2 and several.contrasts[0].seeds == [1, 2]
    assert len(several.cells[CellKey("joint", "bio")]["raw"].aurc) == 2


@pytest.mark.slow
def test_end_to_end_on_the_tiny_encoder(tiny_encoder_dir, tmp_path):
    from bio_mrc.harness.compare import compare

    half = lambda part: {"path": str(SAMPLE_V1), "split": {"fractions": [0.5, 0.5], "part": part, "seed": 0}}  # noqa: E731
    raw = {"name": "tiny", "train": half(0), "eval": half(1), "seeds": [1],
           "defaults": {"encoder": str(tiny_encoder_dir), "max_seq_length": 48, "doc_stride": 16, "max_query_length": 12,
                        "epochs": 1, "batch_size": 4},
           "runs": [{"name": "joint", "heads": "span+bio"}], "baseline": "joint/bio", "contrasts": [["joint/joint", "joint/span"]]}
    results, summary = compare(parse_config(raw), FIXTURES, tmp_path, progress=False)
    assert pairs(summary.contrasts) == [("joint/bio", "joint/span"), ("joint/bio", "joint/joint"), ("joint/joint", "joint/span")]
    report = (tmp_path / "report.md").read_text()
    assert "Baseline: `joint/bio` (named by the configuration)" in report and "](score_per_cell.png)" in report
    assert (tmp_path / "score_per_cell.png").read_bytes().startswith(PNG_MAGIC)
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["config"]["baseline"] == "joint/bio"
    # the cells store each question's confidence and rightness: the selective-QA section follows from them
    assert "## Selective QA" in report and (tmp_path / "risk_coverage.png").read_bytes().startswith(PNG_MAGIC)
    assert len(saved["cells"][0]["selective"]["right"]) == saved["eval"]["questions"]
    assert "raw" in saved["summary"]["selective"]["cells"]["joint/bio"]



def test_always_abstaining_is_scored_as_the_official_script_scores_an_empty_answer():
    """An answerable question whose only gold text is "." normalises to nothing, and evaluate-v2.0.py scores it
    against "": abstaining there is right (F1 100), as on the unanswerable question; "Paris" is 0."""
    from bio_mrc.metrics.task_scores import abstain_f1
    from bio_mrc.registry import squad_task

    context = "Paris. Lyon"
    examples = [Example("dot", "?", context, (((5, 6),),)), Example("none", "?", context, ()),
                Example("paris", "?", context, (((0, 5),), ((0, 6),)))]
    assert abstain_f1(squad_task("2.0"), examples).tolist() == [100.0, 100.0, 0.0]

def test_squad2_cells_are_set_against_always_abstaining(squad2_report):
    """Always abstaining scores 100 on each unanswerable question and 0 elsewhere: here 3 of 4."""
    from bio_mrc.harness.summary import against_abstaining

    abstain = np.array([0.0, 100.0, 100.0, 100.0])
    span, bio = CellKey("joint", "span"), CellKey("joint", "bio")
    f1 = {span: np.array([[100.0, 100.0, 0.0, 100.0]]), bio: np.array([[0.0, 100.0, 100.0, 100.0], [50.0, 100.0, 100.0, 0.0]])}
    reference = against_abstaining(f1, abstain)
    assert reference.f1 == 75.0
    assert reference.cells[span].diff == pytest.approx(0.0)  # +100 on q0, -100 on q2
    assert reference.cells[bio].diff == pytest.approx(-6.25)  # seed 1 ties abstaining, seed 2: (50 - 100) / 4
    assert reference.cells[bio].n_seeds == 2 and AgainstAbstaining.from_json(reference.to_json()) == reference
    _, _, summary, report, _ = squad2_report  # every other question of 200 unanswerable
    assert summary.always_abstain.f1 == 50.0
    assert "## Against always abstaining (SQuAD 2.0)" in report and "F1 = EM = **50.00**" in report


def test_the_same_results_give_the_same_report_files_byte_for_byte(selective_report, tmp_path):
    """Figures, Markdown, JSON and the page written twice from one comparison's results are the same bytes, so a
    committed report changes only where its results do."""
    first, results, *_ = selective_report  # written once before, from these results
    write_report(results, tmp_path, np.arange(200) % 7, 50 + np.arange(200))
    files = sorted(path.name for path in first.iterdir())
    assert {"report.md", "report.json", "report.html", "score_per_cell.png", "risk_coverage.png"} <= set(files)
    assert files == sorted(path.name for path in tmp_path.iterdir())
    for name in files:
        assert (first / name).read_bytes() == (tmp_path / name).read_bytes(), name


def test_a_report_names_the_machine_its_times_are_of_and_reads_it_back():
    from bio_mrc.harness.report import render_markdown
    from bio_mrc.harness.saved_report import SavedReport

    machine = "AMD EPYC (family 25, model 17); AVX2 yes, AVX-512F yes, AVX512-BF16 yes, AMX-BF16 no; Linux, 2 CPUs"
    unnamed = synthetic_results(runs=("joint",))  # a report written before machines were named
    named = replace(unnamed, machine=machine)
    summary = squad_summary(named)
    written = named.report_json(summary)
    assert written["machine"] == machine and "machine" not in unnamed.report_json(summary)
    assert SavedReport.from_json(written, "report.json").results.machine == machine
    assert f"- Machine: {machine} (the times below are its)" in render_markdown(named, summary, {}).splitlines()
    assert not any(line.startswith("- Machine:") for line in render_markdown(unnamed, summary, {}).splitlines())
    with pytest.raises(ConfigError, match="machine"):
        SavedReport.from_json({**written, "machine": 7}, "report.json")


def test_an_always_abstaining_threshold_stays_strict_json_and_reads_back(squad2_report):
    """A SQuAD 2.0 threshold of minus infinity (tuned where abstaining always scores best) is written as
    {"__float__": "-Infinity"}, which a strict reader (jq, JavaScript) takes, and read back as the float."""
    from bio_mrc.harness.earlier_report import read_report

    folder, results, *_ = squad2_report
    assert all(cell.threshold == float("-inf") for cell in results.cells)
    text = (folder / "report.json").read_text()
    saved = json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} is no JSON number"))
    assert saved["cells"][0]["threshold"] == {"__float__": "-Infinity"}
    assert read_report(folder / "report.json").results.cells[0].threshold == float("-inf")


def test_each_squad_data_set_of_an_evaluation_is_scored_on_its_own(tmp_path):
    """eval + eval_also on SQuAD: each data set gets its own rows and contrasts, the means of its questions alone."""
    from bio_mrc.harness.summary_records import Summary

    results = synthetic_results(runs=("joint",), n=20)
    results.eval["parts"] = [{"description": "first.csv", "questions": 12, "question_hash": "a", "task": "squad-v1.1"},
                             {"description": "second.jsonl", "questions": 8, "question_hash": "b", "task": "squad-v1.1"}]
    summary, report, saved = write(results, tmp_path)
    span, bio = (next(c for c in results.cells if c.decoding == name) for name in ("span", "bio"))
    second = summary.data_sets[1]
    assert [part.questions for part in summary.data_sets] == [12, 8]
    row = next(r for r in second.rows if str(r.cell) == "joint/span")
    assert row.scores["f1"] == [pytest.approx(span.f1[12:].mean())] and row.scores["em"] == [pytest.approx(span.em[12:].mean())]
    contrast = next(c for c in second.contrasts if str(c.b) == "joint/bio")
    assert contrast.diff == pytest.approx(span.f1[12:].mean() - bio.f1[12:].mean())
    assert "### second.jsonl (8 questions)" in report and "| cell | EM | F1 | empty |" in report
    assert Summary.from_json(saved["summary"], "report.json").data_sets == summary.data_sets


@pytest.mark.parametrize("questions, said", [(1, True), (2, False), (None, False)])
def test_the_calibration_section_says_why_a_tuning_split_of_one_question_calibrates_no_cell(questions, said):
    """Tuning fits no calibrator on fewer than 2 questions: the column of calibrated ECEs was empty without a word."""
    from types import SimpleNamespace

    from bio_mrc.harness.report import _calibration_section

    results = SimpleNamespace(tune=None if questions is None else {"description": "t.json", "questions": questions}, cells=[])
    summary = SimpleNamespace(rows=[SimpleNamespace(cell="joint/span", ece={"raw": [0.056], "calibrated": [None]})])
    lines = _calibration_section(results, summary, {})
    assert "| joint/span | 0.056 | – |" in lines
    note = ("No cell is calibrated: the tuning split holds 1 question, too few to fit a calibrator on (at least 2); "
            "its other settings are tuned.")
    assert (note in lines) is said


def test_the_calibration_section_names_each_cell_whose_calibrator_was_degenerate_and_why():
    """tune printed why it saved no calibrator; a comparison's report left that cell's calibrated column empty unsaid."""
    from types import SimpleNamespace

    from bio_mrc.harness.report import _calibration_section
    from bio_mrc.harness.results import Cell

    reason = "constant output 0.5: every answer would get the same probability"
    skipped = Cell.from_json({"run": "joint", "decoding": "bio", "seed": 43, "model_dir": "m", "answers": ["a"], "decode_seconds": 0.1,
                              "f1": [100.0], "em": [100.0], "calibration_skipped": reason})
    assert Cell.from_json(skipped.to_json()).calibration_skipped == reason
    calibrated = Cell("joint", "span", 43, "m", ["a"], 0.1, f1=[100.0], em=[100.0])
    results = SimpleNamespace(tune={"description": "t.json", "questions": 300}, cells=[calibrated, skipped])
    summary = SimpleNamespace(rows=[SimpleNamespace(cell="joint/bio", ece={"raw": [0.2], "calibrated": [None]})])
    lines = _calibration_section(results, summary, {})
    assert lines[-1] == f"No calibrator for joint/bio, seed 43: degenerate ({reason}); its answers get no probability."
    assert sum("No calibrator" in line for line in lines) == 1


def test_a_contrast_is_significant_after_holm_only_where_its_interval_excludes_zero():
    """One question 59.33 F1 worse, the other 180 one point better: the difference is negative only where that
    question is drawn four times or more, 25 of the 1000 resamples, so p is 0.05 exactly while the 95% interval,
    interpolated between the 25th and 26th smallest differences, still holds 0. "Significant after Holm" was p ≤ 0.05."""
    from bio_mrc.harness.summary import statistics

    n = 181
    a, b = np.array([0.0] + [1.0] * (n - 1)), np.array([(n - 3 - 0.01) / 3] + [0.0] * (n - 1))
    cells = {CellKey("joint", "span"): a[None, :], CellKey("joint", "bio"): b[None, :]}
    [contrast] = statistics({}, cells, {key: [["x"] * n] for key in cells}).contrasts
    assert contrast.p_value == contrast.p_holm == 0.05 and contrast.ci_low < 0 < contrast.ci_high
    assert contrast.significant_holm is False


def test_the_report_says_how_its_intervals_are_drawn(three_runs):
    """Which interval (percentile), how many resamples and from which seed, in the contrasts' and the cells' sections."""
    *_, report, _ = three_runs
    contrasts, cells = (next(s for s in report.split("\n## ") if s.startswith(title))
                        for title in ("Paired differences", "F1 per cell"))
    assert contrasts.startswith("Paired differences: the contrasts (F1, 95% percentile paired bootstrap over questions, "
                                "1000 resamples from seed 0)")
    assert "2.5th and 97.5th percentiles of the 1000 resampled differences" in contrasts
    assert cells.startswith("F1 per cell (95% percentile bootstrap interval over questions, 1000 resamples from seed 0)")


@pytest.mark.parametrize("questions, said", [(1, False), (2, True), (99, True), (100, False), (None, False)])
def test_the_calibration_section_says_when_its_calibrators_were_fitted_on_fewer_than_100_questions(questions, said):
    """bio-mrc tune warns below 100 tuning questions; a comparison's calibrated column fitted on 2 said nothing."""
    from types import SimpleNamespace

    from bio_mrc.harness.report import _calibration_section

    results = SimpleNamespace(tune=None if questions is None else {"description": "t.json", "questions": questions}, cells=[])
    summary = SimpleNamespace(rows=[SimpleNamespace(cell="joint/span", ece={"raw": [0.056], "calibrated": [0.04]})])
    text = "\n".join(_calibration_section(results, summary, {}))
    note = (f"The tuning split holds {questions} questions, which the calibrators and the other settings are fitted on: "
            "settings fitted on fewer than 100 follow the questions drawn; tune on a few hundred held-out questions, as "
            "the model will meet them, to rely on them.")
    assert (note in text) is said
    assert ("fewer than 100" in text) is said


SQUAD_TAG_GOLD = ("Gold: the first annotator's spans as each run's tagger learns them (its `tag_mentions`): `every` adds every "
                  "other mention of their text, `annotated` keeps the spans as given, `ignored` leaves the other mentions' "
                  "tokens out of both sequences.")


@pytest.mark.parametrize("task", sorted(registry.TASKS))
def test_the_bio_tags_section_names_the_gold_tags_of_the_evaluations_task(task):
    """Multi-span questions have one annotator whose answer has several parts: "the first annotator's spans" misread
    them; each task says what its gold tags are, SQuAD's words as before."""
    from types import SimpleNamespace

    from bio_mrc.harness.report import _tag_table

    results = SimpleNamespace(eval={"task": task})
    summary = SimpleNamespace(rows=[SimpleNamespace(cell="joint/bio", tag_scores={"precision": 0.5, "recall": 0.25, "f1": 1 / 3})])
    lines = _tag_table(results, summary, {})
    gold = next(line for line in lines if line.startswith("Gold: "))
    entry = registry.task(task)
    assert gold.startswith(f"Gold: {entry.tag_gold} as each run's tagger learns them")
    assert (gold == SQUAD_TAG_GOLD) is (not entry.multi_span_answers)
    assert ("first annotator" in gold) is (not entry.multi_span_answers)
    assert "| joint/bio | 50.00 | 25.00 | 33.33 |" in lines


@pytest.mark.parametrize("seeds", [(42,), (1, 2, 3)])
def test_aurc_contrasts_drawn_once_for_all_are_those_drawn_contrast_by_contrast(seeds):
    from .test_selective import recomputed_reference

    results = synthetic_results(runs=("joint", "bio-only", "span-only"), seeds=seeds, seed_sd=1.0, selective=True,
                                contrasts=[["joint/joint", "span-only/span"], ["bio-only/bio", "joint/bio"]])
    contrasts = squad_summary(results).selective.contrasts
    assert len(contrasts) == 12
    for contrast in contrasts:
        arrays = selective_arrays(results, contrast.confidence)
        expected = recomputed_reference(arrays[str(contrast.a)], arrays[str(contrast.b)], aurc_statistic, 200, 1000)
        assert {k: getattr(contrast, k) for k in expected.to_dict()} == expected.to_dict()


def test_each_cells_aurc_is_resampled_once_whatever_the_contrasts_it_is_in(monkeypatch):
    from bio_mrc.harness import selective_section

    calls = []
    real = selective_section.aurc_of_drawn
    monkeypatch.setattr(selective_section, "aurc_of_drawn", lambda ranked, idx: calls.append(ranked.key) or real(ranked, idx))
    results = synthetic_results(runs=("joint", "bio-only"), selective=True)
    summary = squad_summary(results)
    # 4 cells in 3 contrasts, each of 2 confidences (the calibrated one, in steps, ranks other ties than the raw one):
    # 8 rankings, each read on every question and resampled once per chunk of 100 draws, not once per contrast
    assert len(summary.selective.contrasts) == 6
    assert len(set(calls)) == 8 and len(calls) == 8 * (1 + 10)
