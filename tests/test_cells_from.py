"""``compare --cells-from``: a comparison composed from an earlier report's cells and newly trained runs."""

import json
import lzma

import numpy as np
import pytest

from bio_mrc.data.one_answer import JoinedPartsNote
from bio_mrc.errors import ConfigError
from bio_mrc.harness.compare import compare, resolve_splits, run_comparison, train_models
from bio_mrc.harness.comparison_splits import training_share
from bio_mrc.harness.config import parse_config
from bio_mrc.harness.earlier_report import read_report

from .conftest import FIXTURES, SAMPLE_V1
from .test_harness_compare import config_dict


def tiny_config(encoder, runs=("span-only",), **overrides):
    raw = config_dict(encoder, seeds=[1], **overrides)
    raw["defaults"]["epochs"] = 1
    raw["runs"] = [run for run in raw["runs"] if run["name"] in runs]
    return raw


@pytest.fixture(scope="module")
def earlier(tiny_encoder_dir, tmp_path_factory):
    """A one-run comparison's report, kept as the repository keeps reports: report.json.xz, models gone."""
    out = tmp_path_factory.mktemp("earlier")
    results, summary = compare(parse_config(tiny_config(tiny_encoder_dir)), FIXTURES, out)
    kept = out / "kept" / "report.json.xz"
    kept.parent.mkdir()
    kept.write_bytes(lzma.compress((out / "report.json").read_bytes()))
    return kept, results, summary


@pytest.fixture(scope="module")
def composed(earlier, tiny_encoder_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("composed")
    config = parse_config(tiny_config(tiny_encoder_dir, runs=("span-only", "joint")))
    results, summary = compare(config, FIXTURES, out, cells_from=earlier[0])
    return out, results, summary


def test_the_earlier_models_cells_are_read_not_recomputed(earlier, composed):
    path, earlier_results, earlier_summary = earlier
    out, results, summary = composed
    reused = [c for c in results.cells if c.run == "span-only"]
    assert len(reused) == 1 and np.array_equal(reused[0].f1, earlier_results.cells[0].f1)
    assert reused[0].answers == earlier_results.cells[0].answers
    assert reused[0].scored_in["date"] == earlier_results.date
    assert not any(p.name.startswith("span-only") for p in (out / "models").iterdir())  # not trained here
    assert {c.decoding for c in results.cells if c.run == "joint"} == {"span", "bio", "joint"}
    row = next(r for r in summary.rows if str(r.cell) == "span-only/span")
    assert row.scores["f1"] == next(r for r in earlier_summary.rows if str(r.cell) == "span-only/span").scores["f1"]
    assert results.cells_from["models"] == [{"run": "span-only", "seed": 1}]


def test_the_report_says_which_cells_came_from_where(earlier, composed):
    out, _, _ = composed
    report = (out / "report.md").read_text()
    assert f"Cells read from an earlier report, `{earlier[0]}`" in report and "span-only (seed 1)" in report
    saved = json.loads((out / "report.json").read_text())
    assert saved["code"] and saved["cells_from"]["code"] == earlier[1].code
    assert "span-only/span" in (out / "report.html").read_text()


def test_a_composed_report_serves_as_an_earlier_report_in_turn(composed, tiny_encoder_dir, tmp_path):
    out, results, _ = composed
    config = parse_config(tiny_config(tiny_encoder_dir, runs=("span-only", "joint")))
    again = run_comparison(config, FIXTURES, tmp_path, cells_from=out / "report.json")  # its cells; no report
    assert [c.f1.tolist() for c in again.cells] == [c.f1.tolist() for c in results.cells]
    scored_in = {c.run: c.scored_in for c in again.cells}
    assert scored_in["span-only"] == next(c for c in results.cells if c.run == "span-only").scored_in  # the first scoring
    assert scored_in["joint"]["date"] == results.date
    assert not (tmp_path / "models").exists()


@pytest.mark.slow
def test_train_only_skips_the_models_the_report_holds(earlier, tiny_encoder_dir, tmp_path):
    config = parse_config(tiny_config(tiny_encoder_dir, runs=("span-only", "joint")))
    trained = train_models(config, FIXTURES, tmp_path, cells_from=earlier[0])
    assert [p.name.split("-seed")[0] for p in trained] == ["joint"]


@pytest.mark.slow
def test_a_later_sitting_adds_seeds_to_a_run_the_report_holds(earlier, tiny_encoder_dir, tmp_path):
    raw = tiny_config(tiny_encoder_dir)
    raw["runs"][0]["seeds"] = [1, 2]
    results, summary = compare(parse_config(raw), FIXTURES, tmp_path, cells_from=earlier[0])
    assert sorted(c.seed for c in results.cells) == [1, 2]
    assert [p.name.split("-seed")[1][0] for p in (tmp_path / "models").iterdir()] == ["2"]  # only the new seed trained
    assert np.array_equal(next(c for c in results.cells if c.seed == 1).f1, earlier[1].cells[0].f1)
    assert results.cells_from["models"] == [{"run": "span-only", "seed": 1}]


def test_a_report_of_other_questions_or_settings_is_refused(earlier, tiny_encoder_dir, tmp_path):
    other_eval = tiny_config(tiny_encoder_dir)
    other_eval["eval"] = {**other_eval["eval"], "skip": 1}
    with pytest.raises(ConfigError, match="evaluation questions"):
        compare(parse_config(other_eval), FIXTURES, tmp_path, cells_from=earlier[0])
    other_run = tiny_config(tiny_encoder_dir)
    other_run["runs"][0]["learning_rate"] = 5e-4
    with pytest.raises(ConfigError, match='run "span-only" has other settings there \\(learning_rate\\)'):
        compare(parse_config(other_run), FIXTURES, tmp_path, cells_from=earlier[0])
    other_decoding = tiny_config(tiny_encoder_dir, decode={"n_best": 3})
    with pytest.raises(ConfigError, match="'decode' options"):
        compare(parse_config(other_decoding), FIXTURES, tmp_path, cells_from=earlier[0])
    assert not (tmp_path / "models").exists()  # refused before anything was trained


def _edited_sample(folder, edited_ids):
    """The sample with the gold of the questions ``edited_ids`` moved to the context's first word: the same ids."""
    data = json.loads(SAMPLE_V1.read_text(encoding="utf-8"))
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            first = paragraph["context"].split()[0]
            for qa in paragraph["qas"]:
                if qa["id"] in edited_ids:
                    qa["answers"] = [{"text": first, "answer_start": 0}]
    path = folder / "sample.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("edited, what", [("eval", "the evaluation questions' text and answers"),
                                           ("train", "run \"span-only\"'s training questions' text and answers")])
def test_a_report_of_the_same_ids_with_other_answers_is_refused(earlier, tiny_encoder_dir, tmp_path, edited, what):
    """A data file edited in place (a gold answer corrected) keeps its question ids: the earlier report's cells were
    scored on (or trained from) the answers before, and are not paired with cells scored on the answers now."""
    raw = tiny_config(tiny_encoder_dir)
    splits = resolve_splits(parse_config(raw), FIXTURES)
    ids = set(splits.eval.ids if edited == "eval" else [ex.id for ex in splits.train.examples])
    path = str(_edited_sample(tmp_path, ids))
    raw["train"], raw["eval"] = {**raw["train"], "path": path}, {**raw["eval"], "path": path}
    with pytest.raises(ConfigError, match=f"^cells_from='{earlier[0]}': {what} differ from this comparison's"):
        compare(parse_config(raw), FIXTURES, tmp_path / "out", cells_from=earlier[0])
    assert not (tmp_path / "out").exists()


def test_a_report_that_scored_the_same_questions_as_another_task_is_refused(earlier, tiny_encoder_dir, tmp_path):
    """The same file read as answer-parts holds the same questions (one span each) but is scored with MultiSpanQA's
    metrics: SQuAD cells read back there have no counts to score (a traceback once the report was summed)."""
    raw = tiny_config(tiny_encoder_dir)
    raw["eval"] = {**raw["eval"], "format": "answer-parts"}
    with pytest.warns(JoinedPartsNote, match="^3 questions of .*sample_squad_v1.json list answer parts"), \
            pytest.raises(ConfigError, match=r"the evaluation's task and scorer differ .*\"squad-v1.1\" there, \"answer-parts\" here"):
        compare(parse_config(raw), FIXTURES, tmp_path, cells_from=earlier[0])
    assert not (tmp_path / "models").exists()


def test_a_report_decoded_at_a_fixed_answer_length_says_how_to_reuse_its_cells(earlier, tiny_encoder_dir, tmp_path):
    """A report whose decode names an answer-length limit (every report written before a model kept its own wrote
    the default, 30) against a config that leaves it to each model: refused, saying which limit to give."""
    report = json.loads(lzma.decompress(earlier[0].read_bytes()))
    assert report["config"]["decode"]["max_answer_length"] is None  # this comparison's: each model's own limit
    report["config"]["decode"]["max_answer_length"] = 30
    fixed = tmp_path / "report.json"
    fixed.write_text(json.dumps(report), encoding="utf-8")
    with pytest.raises(ConfigError, match=r'decode answers of at most 30 tokens.*"decode": \{"max_answer_length": 30\}'):
        compare(parse_config(tiny_config(tiny_encoder_dir)), FIXTURES, tmp_path / "out", cells_from=fixed)
    with pytest.raises(ConfigError, match="'decode' options") as refused:  # another limit given: no hint to give 30
        compare(parse_config(tiny_config(tiny_encoder_dir, decode={"max_answer_length": 20})), FIXTURES, tmp_path / "out", cells_from=fixed)
    assert "at most 30 tokens" not in str(refused.value)
    assert not (tmp_path / "out" / "models").exists()  # refused before anything was trained
    del report["config"]["decode"]["min_span_probability"]  # a report written before the option: none, as then
    fixed.write_text(json.dumps(report), encoding="utf-8")
    results, _ = compare(parse_config(tiny_config(tiny_encoder_dir, decode={"max_answer_length": 30})), FIXTURES,
                         tmp_path / "given", cells_from=fixed)
    assert results.cells_from["models"] == [{"run": "span-only", "seed": 1}]


def test_a_run_the_report_holds_with_an_option_at_its_older_value_is_its_own(tmp_path):
    """A report keeps ``tag_mentions: annotated`` (the value a run without it means); one written before it kept it
    names no ``tag_mentions``: both are the same run, and ``every`` is another."""
    from bio_mrc.harness.earlier_report import _check_run

    _check_run(tmp_path, "joint", {"name": "joint", "heads": "span+bio"}, {"name": "joint", "heads": "span+bio", "tag_mentions": "annotated"})
    with pytest.raises(ConfigError, match=r"other settings there \(tag_mentions\)"):
        _check_run(tmp_path, "joint", {"name": "joint", "heads": "span+bio"}, {"name": "joint", "heads": "span+bio", "tag_mentions": "every"})


def test_what_is_not_a_readable_report_is_named(tmp_path):
    broken = tmp_path / "report.json.xz"
    broken.write_bytes(lzma.compress(b'{"cells": []}')[:-8])
    with pytest.raises(ConfigError, match=f"cells_from='{broken}': cannot read it"):
        read_report(broken)
    other = tmp_path / "predictions.json"
    other.write_text('{"q1": "an answer"}')
    with pytest.raises(ConfigError, match="not a bio_mrc comparison report"):
        read_report(other)
    with pytest.raises(ConfigError, match="cannot read it"):
        read_report(tmp_path / "missing.json")
    for content in ("5", "null", '"cells config eval eval_ids"', "[]"):  # JSON, but no object
        other.write_text(content)
        with pytest.raises(ConfigError, match=f"cells_from='{other}': not a bio_mrc comparison report"):
            read_report(other)
    other.write_text("[" * 100_000 + "]" * 100_000)  # nested past the parser's stack
    with pytest.raises(ConfigError, match=f"cells_from='{other}': cannot read it as a comparison report"):
        read_report(other)


def test_a_cut_or_edited_report_is_refused_not_misaligned(earlier, tiny_encoder_dir, tmp_path):
    config = parse_config(tiny_config(tiny_encoder_dir))
    report = read_report(earlier[0]).to_json()
    short = json.loads(json.dumps(report))
    short["cells"][0]["f1"] = short["cells"][0]["f1"][:-1]
    (tmp_path / "short.json").write_text(json.dumps(short))
    with pytest.raises(ConfigError, match="cell 0 \\(span-only/span, seed 1\\) does not score the"):
        compare(config, FIXTURES, tmp_path / "out", cells_from=tmp_path / "short.json")
    unnamed = json.loads(json.dumps(report))
    del unnamed["cells"][0]["seed"]
    (tmp_path / "unnamed.json").write_text(json.dumps(unnamed))
    with pytest.raises(ConfigError, match="cell 0 is not a comparison cell"):
        compare(config, FIXTURES, tmp_path / "out", cells_from=tmp_path / "unnamed.json")
    joint = parse_config(tiny_config(tiny_encoder_dir, runs=("joint",)))
    partial = json.loads(json.dumps(report))
    partial["config"]["runs"] = [run.to_dict() for run in joint.runs]
    partial["cells"][0]["run"] = "joint"
    (tmp_path / "partial.json").write_text(json.dumps(partial))
    with pytest.raises(ConfigError, match='run "joint" seed 1 has the decodings \\["span"\\] there'):
        compare(joint, FIXTURES, tmp_path / "out", cells_from=tmp_path / "partial.json")
    retrained = json.loads(json.dumps(report))
    retrained["train"]["question_hash"] = "0" * 16
    (tmp_path / "retrained.json").write_text(json.dumps(retrained))
    with pytest.raises(ConfigError, match='run "span-only"\'s training questions differ from this comparison\'s'):
        compare(config, FIXTURES, tmp_path / "out", cells_from=tmp_path / "retrained.json")


def test_impossible_numbers_in_a_report_or_a_cached_cell_are_refused_naming_the_file_and_field(earlier, tiny_encoder_dir, tmp_path):
    import shutil

    config = parse_config(tiny_config(tiny_encoder_dir))
    report = read_report(earlier[0]).to_json()
    for field, value, match in (("f1", -500.0, r"cell 0: field 'f1' holds -500.0 at position 0, outside \[0, 100\]"),
                                ("em", "high", "cell 0: field 'em' must be a list of per-question scores")):
        edited = json.loads(json.dumps(report))
        edited["cells"][0][field] = [value, *edited["cells"][0][field][1:]] if field == "f1" else value
        (tmp_path / "edited.json").write_text(json.dumps(edited))
        with pytest.raises(ConfigError, match=f"cells_from='{tmp_path / 'edited.json'}': " + match):
            compare(config, FIXTURES, tmp_path / "out", cells_from=tmp_path / "edited.json")
    mistyped = {**json.loads(json.dumps(report)), "eval_ids": 5}
    (tmp_path / "mistyped.json").write_text(json.dumps(mistyped))
    with pytest.raises(ConfigError, match="field 'eval_ids' must be a list of question ids, got 5"):
        read_report(tmp_path / "mistyped.json")

    out = tmp_path / "rerun"
    shutil.copytree(earlier[0].parent.parent, out)
    cache = next((out / "cells").glob("*.json"))
    cells = json.loads(cache.read_text())
    cells[0]["f1"][0] = 250.0
    cache.write_text(json.dumps(cells))
    with pytest.raises(ConfigError, match=f"{cache}: cell 0: field 'f1' holds 250.0 at position 0, outside"):
        compare(config, FIXTURES, out)


COMMITTED = FIXTURES.parent.parent / "benchmarks" / "reports" / "bio-only-init" / "log-prior-seed42" / "report.json.xz"


def test_a_report_is_read_by_its_content_whatever_its_name(tmp_path):
    """A .gz name on a plain report was 'Not a gzipped file', and xz content under a plain name a UnicodeDecodeError."""
    expected = read_report(COMMITTED).eval_ids
    plain = tmp_path / "report.json.gz"
    plain.write_bytes(lzma.decompress(COMMITTED.read_bytes()))
    renamed = tmp_path / "report.json"
    renamed.write_bytes(COMMITTED.read_bytes())
    assert read_report(plain).eval_ids == read_report(renamed).eval_ids == expected


def test_a_compressed_report_past_the_limit_stops_there_and_a_damaged_gzip_is_one_line(tmp_path, monkeypatch):
    import gzip

    bomb = tmp_path / "report.json.xz"
    bomb.write_bytes(lzma.compress(b"[" + b" " * 2_000_000 + b"]"))  # 2 MB of blanks in about 400 bytes
    assert bomb.stat().st_size < 1_000
    monkeypatch.setenv("BIO_MRC_MAX_JSON_BYTES", "1000000")
    with pytest.raises(ConfigError, match=rf"^cells_from='{bomb}': larger than 1,000,000 bytes decompressed, more than any "
                                          r"comparison report holds \(BIO_MRC_MAX_JSON_BYTES raises the limit\)$"):
        read_report(bomb)
    damaged = tmp_path / "damaged.json.gz"
    raw = bytearray(gzip.compress(json.dumps({"cells": [{"q": i} for i in range(2_000)]}).encode()))
    raw[30:40] = b"\xff" * 10  # the deflate stream broken: zlib.error, which is no OSError
    damaged.write_bytes(bytes(raw))
    with pytest.raises(ConfigError, match=rf"^cells_from='{damaged}': cannot read it as a comparison report \(Error -3 while decompressing"):
        read_report(damaged)


def test_a_named_pipe_as_the_earlier_report_is_one_line_not_a_wait(tmp_path):
    import os

    pipe = tmp_path / "report.json"
    os.mkfifo(pipe)  # opened for reading, it waited for ever for a writer
    with pytest.raises(ConfigError, match=rf"^cells_from='{pipe}': expected a comparison report file, found a named pipe \(FIFO\)$"):
        read_report(pipe)


def by_question(draw, examples, k, seed):
    """Folds drawn question by question, as MultiSpanQA's were before its folds held out a context's questions together."""
    from bio_mrc.data.article_splits import kfold_by_question

    return kfold_by_question(examples, k, seed=seed)


def cross_validated(encoder, data):
    from .test_harness_compare import multispan_file

    raw = tiny_config(encoder, eval={"path": str(multispan_file(data)), "format": "multispanqa"}, cross_validation={"folds": 2, "seed": 0})
    del raw["train"]
    return parse_config(raw)


@pytest.fixture(scope="module")
def earlier_folds(tiny_encoder_dir, tmp_path_factory):
    """A 2-fold comparison over MultiSpanQA (12 questions on 3 contexts) whose folds were drawn question by question."""
    out = tmp_path_factory.mktemp("earlier-folds")
    config = cross_validated(tiny_encoder_dir, out)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("bio_mrc.harness.comparison_splits.folds_of_distinct_questions", by_question)
        results, _ = compare(config, FIXTURES, out / "run")
    return config, out / "run" / "report.json", results


def test_a_cross_validation_cell_records_which_questions_each_fold_held_out(earlier_folds, tmp_path, monkeypatch):
    """Each fold's held-out ids, sorted, hashed; the cells reused by a later sitting of the same draw keep them."""
    import hashlib

    from bio_mrc.data.article_splits import id_set_hash
    from bio_mrc.harness.compare import resolve_splits

    assert id_set_hash(["m2", "m10", "m1"]) == hashlib.sha256(b'["m1", "m10", "m2"]').hexdigest()[:16] == id_set_hash(["m1", "m2", "m10"])
    config, report, results = earlier_folds
    monkeypatch.setattr("bio_mrc.harness.comparison_splits.folds_of_distinct_questions", by_question)
    folds = resolve_splits(config, FIXTURES).folds
    expected = [id_set_hash(ex.id for ex in held_out.examples) for _, held_out in folds]
    assert len(set(expected)) == 2 and all(cell.fold_question_hashes == expected for cell in results.cells)
    again = run_comparison(config, FIXTURES, tmp_path / "out", cells_from=report)  # its cells; no report
    assert [cell.fold_question_hashes for cell in again.cells] == [expected]
    assert again.cells[0].scored_in["date"] == results.date and not (tmp_path / "out" / "models").exists()


def test_cells_whose_folds_held_out_other_questions_are_refused(earlier_folds, tmp_path):
    """Folds now drawn by context (MultiSpanQA has no title) hold out other questions than the report's did: its cells
    would be paired question by question with cells scored by models that trained on some of those questions."""
    config, report, _ = earlier_folds
    with pytest.raises(ConfigError, match=rf"^cells_from='{report}': cell 0 \(span-only/span, seed 1\) held out other questions "
                                          r"in fold 1 of 2 than this comparison's fold 1 holds out \(their hash [0-9a-f]{16} there, "
                                          r"[0-9a-f]{16} here\), so its scores cannot be paired with this comparison's; rename the "
                                          r"run here to train it anew, or drop cells_from$"):
        compare(config, FIXTURES, tmp_path / "out", cells_from=report)
    assert not (tmp_path / "out").exists()


def test_a_cross_validation_cell_that_does_not_record_its_folds_is_refused(earlier_folds, tmp_path, monkeypatch):
    """A report written before cells recorded their folds' questions cannot say whether its folds are this draw's."""
    config, report, _ = earlier_folds
    older = json.loads(report.read_text())
    for cell in older["cells"]:
        cell.pop("fold_question_hashes", None)
    (tmp_path / "older.json").write_text(json.dumps(older))
    monkeypatch.setattr("bio_mrc.harness.comparison_splits.folds_of_distinct_questions", by_question)  # the same draw
    with pytest.raises(ConfigError, match=r"cell 0 \(span-only/span, seed 1\) does not record which questions each cross-validation "
                                          r"fold held out \(a report written before cells recorded them\), so its scores cannot "
                                          r"be paired"):
        compare(config, FIXTURES, tmp_path / "out", cells_from=tmp_path / "older.json")
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def earlier_share(tiny_encoder_dir, tmp_path_factory):
    """A 2-fold comparison over MultiSpanQA whose one run trains each fold's model on half the fold's training questions."""
    from .test_harness_compare import multispan_file

    out = tmp_path_factory.mktemp("earlier-share")
    raw = tiny_config(tiny_encoder_dir, eval={"path": str(multispan_file(out)), "format": "multispanqa"},
                      cross_validation={"folds": 2, "seed": 0})
    del raw["train"]
    raw["runs"][0]["fold_training_share"] = 0.5
    config = parse_config(raw)
    results, _ = compare(config, FIXTURES, out / "run")
    return config, out / "run" / "report.json", results


def redrawn_share(split, share, seed):
    """The other half of each fold's training questions, as another version's draw of the share could take."""
    kept = set(training_share(split, share, seed).ids)
    return split.subset([ex for ex in split.examples if ex.id not in kept], split.description)


def test_a_cell_of_a_share_records_which_training_questions_each_fold_used(earlier_share, tmp_path):
    """Beside each fold's held-out questions, the hash of the share of its training questions the run's model trained
    on (sorted ids); a later sitting of the same draw reuses the cells and keeps them."""
    from bio_mrc.data.article_splits import id_set_hash
    from bio_mrc.harness.compare import resolve_splits

    config, report, results = earlier_share
    splits = resolve_splits(config, FIXTURES)
    used = splits.folds_for(config.runs[0])
    expected = [id_set_hash(train.ids) for train, _ in used]
    assert [len(train.ids) for train, _ in used] == [-(-len(train.ids) // 2) for train, _ in splits.folds]  # half of each
    assert expected != [id_set_hash(train.ids) for train, _ in splits.folds]
    assert all(cell.fold_training_hashes == expected for cell in results.cells)
    assert all(json.loads(report.read_text())["cells"][k]["fold_training_hashes"] == expected for k in range(len(results.cells)))
    again = run_comparison(config, FIXTURES, tmp_path / "out", cells_from=report)  # its cells; no report
    assert [cell.fold_training_hashes for cell in again.cells] == [expected]
    assert again.cells[0].scored_in["date"] == results.date and not (tmp_path / "out" / "models").exists()


def test_cells_whose_share_trained_on_other_questions_are_refused(earlier_share, tmp_path, monkeypatch):
    """The same held-out folds, but another half of each fold's training questions: its models saw other questions than
    this comparison's would, so its scores are no point of this comparison's learning curve."""
    config, report, _ = earlier_share
    monkeypatch.setattr("bio_mrc.harness.comparison_splits.training_share", redrawn_share)
    with pytest.raises(ConfigError, match=rf"^cells_from='{report}': cell 0 \(span-only/span, seed 1\) trained on other "
                                          r"questions in fold 1 of 2 than this comparison's fold 1 trains on \(their hash "
                                          r"[0-9a-f]{16} there, [0-9a-f]{16} here\), so its scores cannot be paired with this "
                                          r"comparison's; rename the run here to train it anew, or drop cells_from$"):
        compare(config, FIXTURES, tmp_path / "out", cells_from=report)
    assert not (tmp_path / "out").exists()


def test_a_cell_of_a_share_that_does_not_record_its_training_questions_is_refused(earlier_share, tmp_path):
    """A report written before cells recorded their folds' training questions cannot say whether its share is this draw's."""
    config, report, _ = earlier_share
    older = json.loads(report.read_text())
    for cell in older["cells"]:
        cell.pop("fold_training_hashes", None)
    (tmp_path / "older.json").write_text(json.dumps(older))
    with pytest.raises(ConfigError, match=r"cell 0 \(span-only/span, seed 1\) does not record which of each cross-validation "
                                          r"fold's training questions its models trained on \(a report written before cells "
                                          r"recorded them\), so its scores cannot be paired"):
        compare(config, FIXTURES, tmp_path / "out", cells_from=tmp_path / "older.json")
    assert not (tmp_path / "out").exists()


def test_the_multispan_benchmarks_refuse_a_report_of_other_folds_before_any_model_loads(monkeypatch):
    """``benchmarks/multispan_count_oracle.py`` (and the out-of-fold tuning, which reads the report through it) checks
    each cell's folds as ``--cells-from`` does."""
    import importlib
    from pathlib import Path
    from types import SimpleNamespace

    from bio_mrc.data.article_splits import id_set_hash
    from bio_mrc.harness.comparison_splits import Split
    from bio_mrc.harness.results import Cell
    from bio_mrc.types import Example

    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "benchmarks"))
    oracle = importlib.import_module("multispan_count_oracle")
    held_out = [Split([Example(qid, "q?", "c.", [])], "multispanqa", qid) for qid in ("a", "b")]
    splits = SimpleNamespace(folds=[(held_out[1], held_out[0]), (held_out[0], held_out[1])])
    cell = lambda hashes: Cell("reader", "span", 42, "m", ["x", "y"], 0.0, fold_question_hashes=hashes)  # noqa: E731
    oracle.check_folds("r.json", {"span": cell([id_set_hash(["a"]), id_set_hash(["b"])])}, splits)
    with pytest.raises(SystemExit, match=r"^error: r.json: the span decoding's cell \(run 'reader', seed 42\) held out other "
                                         r"questions in fold 1 of 2 "):
        oracle.check_folds("r.json", {"span": cell([id_set_hash(["b"]), id_set_hash(["a"])])}, splits)
    with pytest.raises(SystemExit, match=r"does not record which questions each cross-validation fold held out"):
        oracle.check_folds("r.json", {"span": cell(None)}, splits)


def test_each_way_folds_differ_is_said_in_one_line_for_held_out_and_training_questions():
    from types import SimpleNamespace

    from bio_mrc.harness.earlier_report import fold_problem, fold_training_problem

    def cell(held_out, training):
        return SimpleNamespace(fold_question_hashes=held_out, fold_training_hashes=training)

    assert fold_problem(cell(["a", "b"], None), ["a", "b"]) is None
    assert fold_training_problem(cell(None, ["c", "d"]), ["c", "d"]) is None
    assert fold_problem(cell(None, None), ["a"]) == (
        "does not record which questions each cross-validation fold held out (a report written before cells recorded them)")
    assert fold_training_problem(cell(None, None), ["c"]) == (
        "does not record which of each cross-validation fold's training questions its models trained on (a report "
        "written before cells recorded them)")
    assert fold_problem(cell(["a"], None), ["a", "b"]) == "records the held-out questions of 1 fold, not of this comparison's 2"
    assert fold_training_problem(cell(None, ["c", "d", "e"]), ["c", "d"]) == (
        "records the training questions of 3 folds, not of this comparison's 2")
    assert fold_problem(cell(["a", "x"], None), ["a", "b"]) == (
        "held out other questions in fold 2 of 2 than this comparison's fold 2 holds out (their hash x there, b here)")
    assert fold_training_problem(cell(None, ["y", "d"]), ["c", "d"]) == (
        "trained on other questions in fold 1 of 2 than this comparison's fold 1 trains on (their hash y there, c here)")
