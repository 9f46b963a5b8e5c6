"""How well each rule picks the BIO length prior β from the tuning questions: the plain argmax against the
package's smoothed argmax (``bio_mrc.inference.tuning.smoothed_argmax``).

A comparison tunes β on about 1,000 held-out questions. Near its best value the F1 curve is flat, so the highest
grid point there may be a sampling accident. For each ``--model`` this script computes the BIO decoding's F1 of
every answerable question at every grid β, on the tune and the eval split of ``--config`` (SQuAD data), and
scores each rule (a bandwidth: 0 is the plain argmax, 0.25 the package's default) two ways:

* on the real tuning split: the β it picks and that β's F1 on the eval split, against the best β there;
* ``--draws`` times on a random ``--draw-size`` eval questions (default: as many as the tuning split has, at most
  half of eval): the β it picks there, scored on the other eval questions by its regret, the best grid β's F1
  on them minus the picked β's.

    python benchmarks/length_prior_rule.py --config benchmarks/ablations/full_scale.json --model DIR [--model DIR ...]

The curves are kept in ``--output-dir``/curves (default ``runs/bench-length-prior``), so a second run with other
rules or draws decodes nothing. ``--references first`` scores every question against its first gold answer
alone, as a tuning split drawn from training data is scored (one answer a question), while SQuAD dev's official
F1 takes the best of several; its curves and tables are kept apart (``.first-reference`` in their names). Writes
``length_prior_rule.md`` and ``.json`` there; the last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from bio_mrc.data.squad import gold_texts
from bio_mrc.decoding.postprocess import decode_merged_tags, merge_tag_log_probs
from bio_mrc.harness.comparison_splits import check_disjoint, resolve_split
from bio_mrc.harness.config import load_config
from bio_mrc.errors import ModelFormatError
from bio_mrc.inference.loading import TrainedModel, check_model_dir
from bio_mrc.inference.tuning import LENGTH_PRIOR_BANDWIDTH, LENGTH_PRIOR_GRID, smoothed_argmax
from bio_mrc.metrics.squad_official import per_question_scores
from bio_mrc.model import BioMrcConfig

import _common


# Which gold answers of a question its F1 is scored against, and the suffix of the files scored that way.
REFERENCES = {"all": (lambda texts: texts, ""), "first": (lambda texts: texts[:1], ".first-reference")}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="benchmarks/ablations/full_scale.json",
                        help="a comparison config on SQuAD data whose tune and eval splits are used (default: %(default)s)")
    parser.add_argument("--model", action="append", default=None,
                        help="a trained model with a BIO head; repeat for several (default: the newest quick joint model)")
    parser.add_argument("--data-dir", default=None,
                        help="the data folder (default: $BIO_MRC_DATA, else ../shared/data beside the repository)")
    parser.add_argument("--output-dir", default=None, help="where the curves and the tables go (default: runs/bench-length-prior)")
    parser.add_argument("--bandwidths", type=float, nargs="+", default=[0.0, LENGTH_PRIOR_BANDWIDTH, 0.5],
                        help="the rules: 0 is the plain argmax (default: %(default)s)")
    parser.add_argument("--draws", type=int, default=200, help="random tuning sets drawn from the eval questions")
    parser.add_argument("--draw-size", type=int, default=None, help="questions per draw (default: the tuning split's size, at most half of eval)")
    parser.add_argument("--seed", type=int, default=0, help="the draws' random seed")
    parser.add_argument("--references", choices=tuple(REFERENCES), default="all",
                        help="score against every gold answer (official) or the first alone (default: %(default)s)")
    args = parser.parse_args(argv)
    _common.comparison_inputs(args)
    args.model = [_common.model_dir(m) for m in args.model] if args.model else [_common.model_dir(None)]
    for model in args.model:
        require_bio_head(model)
    if min(args.bandwidths) < 0 or args.draws < 1:
        _common.fail("--bandwidths must be >= 0 and --draws >= 1")
    args.output_dir = Path(args.output_dir) if args.output_dir else _common.repo_path("runs/bench-length-prior")
    return args


def require_bio_head(model: str) -> None:
    """Refuse, before any decoding, a model whose saved config names no BIO head (its decodings have no β)."""
    try:
        check_model_dir(Path(model))
    except ModelFormatError as error:
        _common.fail(f"{model}: {error.problem}")
    heads = BioMrcConfig.from_pretrained(model).head_names
    if "bio" not in heads:
        _common.fail(f"{model} has no BIO head (heads: {'+'.join(heads)}): its decodings have no length prior to tune")


def question_f1(trained: TrainedModel, examples: list, decode_options, references: str = "all") -> np.ndarray:
    """The BIO decoding's official F1 (0..100) of each of ``examples`` at each grid β, against the ``references``
    gold answers: (grid, questions)."""
    merged = merge_tag_log_probs(trained.windows(examples), len(examples))
    select, _ = REFERENCES[references]
    gold = {qid: select(texts) for qid, texts in gold_texts(examples).items()}
    ids = [ex.id for ex in examples]
    rows = []
    for prior in LENGTH_PRIOR_GRID:
        options = replace(decode_options, bio_length_prior=float(prior), multi_span=False, require_answer=True)
        predictions = decode_merged_tags(merged, examples, options)
        rows.append(per_question_scores(gold, {p.id: p.answer for p in predictions}, ids, "1.1")[1])
    return np.array(rows)


def model_curves(model: str, splits: dict, decode_spec, cache_dir: Path, references: str = "all") -> dict[str, np.ndarray]:
    """Per split name, the (grid, answerable questions) F1 of ``model``, from the cache when it was made on the same questions."""
    cache = cache_dir / f"{Path(model).name}{REFERENCES[references][1]}.npz"
    answerable = {name: [ex for ex in split.examples if ex.answers] for name, split in splits.items()}
    ids = {f"{name}_ids": np.array([ex.id for ex in examples]) for name, examples in answerable.items()}
    if cache.is_file():
        stored = np.load(cache)
        if np.array_equal(stored["grid"], LENGTH_PRIOR_GRID) and all(np.array_equal(stored[key], value) for key, value in ids.items()):
            return {name: stored[name] for name in splits}
    trained = TrainedModel.load(model)
    options = trained.decode_config(decode_spec)
    curves = {name: question_f1(trained, examples, options, references) for name, examples in answerable.items()}
    cache_dir.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(cache, grid=np.array(LENGTH_PRIOR_GRID), **curves, **ids)
    return curves


def simulated_regret(evaluation: np.ndarray, bandwidth: float, draws: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """Per draw: ``size`` random eval questions pick β by the rule; the others score it (best grid β's F1 minus the pick's)."""
    regret = np.empty(draws)
    for k in range(draws):
        order = rng.permutation(evaluation.shape[1])
        tune_curve, rest = evaluation[:, order[:size]].mean(axis=1), evaluation[:, order[size:]].mean(axis=1)
        regret[k] = rest.max() - rest[smoothed_argmax(LENGTH_PRIOR_GRID, tune_curve, bandwidth)]
    return regret


def rule_rows(model: str, curves: dict[str, np.ndarray], args: argparse.Namespace) -> list[dict]:
    """One row per rule: its pick on the tuning split, that pick's eval F1, and its simulated regret."""
    tune_curve, eval_curve = curves["tune"].mean(axis=1), curves["eval"].mean(axis=1)
    size = args.draw_size or min(curves["tune"].shape[1], curves["eval"].shape[1] // 2)
    rows = []
    for bandwidth in args.bandwidths:
        pick = smoothed_argmax(LENGTH_PRIOR_GRID, tune_curve, bandwidth)
        regret = simulated_regret(curves["eval"], bandwidth, args.draws, size, np.random.default_rng(args.seed))
        rows.append({"model": Path(model).name, "bandwidth": bandwidth, "picked": LENGTH_PRIOR_GRID[pick],
                     "eval_f1": float(eval_curve[pick]), "oracle": LENGTH_PRIOR_GRID[int(np.argmax(eval_curve))],
                     "oracle_f1": float(eval_curve.max()), "regret_mean": float(regret.mean()),
                     "regret_p90": float(np.quantile(regret, 0.9)), "draw_size": size})
    return rows


def table(rows: list[dict]) -> str:
    lines = ["| model | best β on eval (F1) | rule | β picked on tune | its eval F1 | simulated regret, mean (90th pct.) |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        rule = "argmax" if row["bandwidth"] == 0 else f"mean within {row['bandwidth']:g}"
        lines.append(f"| {row['model']} | {row['oracle']:g} ({row['oracle_f1']:.2f}) | {rule} | {row['picked']:g} | "
                     f"{row['eval_f1']:.2f} | {row['regret_mean']:.3f} ({row['regret_p90']:.3f}) |")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> dict:
    config = load_config(args.config)
    if config.tune is None:
        _common.fail(f"{args.config} has no tune split: β is tuned on held-out questions")
    splits = {"tune": resolve_split(config.tune, Path(args.data_dir)), "eval": resolve_split(config.eval, Path(args.data_dir))}
    if any(split.version is None for split in splits.values()):  # a task scored by another scorer than SQuAD's
        _common.fail(f"{args.config}: this study scores SQuAD's F1 per question; its splits hold questions scored otherwise")
    check_disjoint(list(splits.items()))
    cache = args.output_dir / "curves"
    rows = [row for model in args.model for row in rule_rows(model, model_curves(model, splits, config.decode, cache, args.references), args)]
    markdown = (f"Tuned on {len(splits['tune'].examples)} questions ({splits['tune'].description}), evaluated on "
                f"{len(splits['eval'].examples)} ({splits['eval'].description}); {args.draws} draws; "
                f"gold answers: --references {args.references}.\n\n{table(rows)}")
    result = {"benchmark": "length_prior_rule", "machine": _common.machine_description(), "config": args.config,
              "references": args.references, "rows": rows}
    args.output_dir.mkdir(parents=True, exist_ok=True)
    stem = f"length_prior_rule{REFERENCES[args.references][1]}"
    (args.output_dir / f"{stem}.md").write_text(markdown + "\n", encoding="utf-8")
    (args.output_dir / f"{stem}.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(markdown)
    return result


if __name__ == "__main__":
    print(json.dumps(main(parse_args())))
