"""Which raw confidence and which calibrator work best, per decoding.

A calibrator can only be as good as the raw score it maps: a monotone map cannot re-rank, and where
the raw score separates right from wrong answers poorly, calibrated values bunch in the middle. This
script measures each candidate on held-out articles: the tuning split of ``--config`` (default
``benchmarks/ablations/calibration.json``: one half of the SQuAD v1.1 dev articles) fits the
calibrators, its evaluation split (the other half) measures them. The BIO decoding's candidates,
all from the tag log-probabilities of the merged windows (``r`` is a span's tag log-likelihood ratio
against all-O):

* ``sigmoid(r)``: the best span's sequence against the all-O sequence alone;
* ``n-best share``: ``exp(r_1) / Σ_k exp(r_k)`` over the n-best single spans (as span and joint do;
  the package's raw confidence, ``bio_mrc.inference.calibrators.raw_confidence``);
* ``n-best share with all-O``: the same with the all-O sequence among the alternatives;
* ``posterior``: the probability that the tag sequence holds exactly the best span, against every
  valid sequence (forward–backward over the tag lattice: ``bio_mrc.decoding.bio_spans.span_posteriors``).

Span and joint have their n-best share; every decoding also gets a re-ranking calibrator (a logistic
regression on the n-best list's top three shares and the answer's and context's lengths, after Kamath
et al., 2020) whose output is then treated as a raw score. For each: AURC and coverage at 80% accuracy
of the raw score (a monotone calibrator keeps the ranking), ECE raw and after three calibrators fitted
on the tuning questions: isotonic regression, Platt scaling (logistic on the
logit), and beta calibration (the package's, ``fit_calibrator``) with a 95% bootstrap interval and
MacroCE; and the ECE floor: the mean ECE that a perfectly calibrated confidence (the beta values, with
outcomes drawn from them) scores on this many questions, the part of ECE that is sampling noise.

    python benchmarks/confidence_candidates.py [--config benchmarks/ablations/calibration.json] [--model DIR]

Writes ``confidence.md`` and ``confidence.json`` to ``--output-dir`` (default
``runs/bench-confidence``); the last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from bio_mrc.decoding.bio_spans import best_tag_spans, span_posteriors
from bio_mrc.decoding.postprocess import available_decodings, decode, merge_tag_log_probs
from bio_mrc.harness.comparison_splits import check_disjoint, resolve_split
from bio_mrc.harness.config import load_config
from bio_mrc.inference.calibrators import answer_is_right, calibrate, fit_calibrator, raw_confidence
from bio_mrc.inference.loading import TrainedModel
from bio_mrc.inference.tuning import tune_bio_length_prior
from bio_mrc.metrics.calibration_error import expected_calibration_error as ece
from bio_mrc.metrics.selective import aurc, coverage_at_accuracy, macro_calibration_error
from bio_mrc.tags import TAG_I

import _common


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="benchmarks/ablations/calibration.json",
                        help="a comparison config whose tune and eval splits are used (default: %(default)s)")
    parser.add_argument("--model", default=None, help="a trained joint model (default: the newest `bio-mrc compare --config quick` one)")
    parser.add_argument("--data-dir", default=None,
                        help="the data folder (default: $BIO_MRC_DATA, else ../shared/data beside the repository)")
    parser.add_argument("--output-dir", default=None, help="where confidence.md/.json go (default: runs/bench-confidence)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of the evaluation questions")
    args = parser.parse_args(argv)
    _common.comparison_inputs(args)
    args.model = _common.model_dir(args.model)
    args.output_dir = Path(args.output_dir) if args.output_dir else _common.repo_path("runs/bench-confidence")
    return args


def bio_candidates(outputs, examples, predictions, config) -> dict:
    """The BIO decoding's candidate raw confidences in its best span, one value per question."""
    merged = merge_tag_log_probs(outputs, len(examples))
    log_probs = merged.values + np.where(np.arange(3) == TAG_I, config.bio_length_prior or 0.0, 0.0)
    best = best_tag_spans(log_probs, merged.mask, config.max_answer_length, 1)
    rows = np.flatnonzero(best.start[:, 0] >= 0)
    posterior = np.zeros(len(examples))
    posterior[rows] = span_posteriors(log_probs, merged.mask, rows, best.start[rows, 0], best.end[rows, 0])
    with np.errstate(over="ignore"):
        ratios = [np.array([s.score for s in p.spans]) for p in predictions]
        share_all_o = np.array([1.0 / (np.exp(-r[0]) + np.exp(r - r[0]).sum()) if len(r) else 0.0 for r in ratios])
        sigmoid = np.array([1.0 / (1.0 + np.exp(-r[0])) if len(r) else 0.0 for r in ratios])
    return {"sigmoid(r)": sigmoid, "n-best share": raw_confidence(predictions), "n-best share with all-O": share_all_o, "posterior": posterior}


def split_candidates(trained, split, outputs, decode_config) -> dict:
    """{decoding: (candidates {name: raw confidences}, right)} on one split, from its window outputs."""
    found = {}
    for decoding in available_decodings(trained.model.config.heads):
        predictions = decode(outputs, split.examples, decoding, replace(decode_config, multi_span=False))
        right = answer_is_right(predictions, split.gold, split.version)
        candidates = (bio_candidates(outputs, split.examples, predictions, decode_config) if decoding == "bio"
                      else {"n-best share": raw_confidence(predictions)})
        found[decoding] = (candidates, right, nbest_features(predictions, split.examples))
    return found


def nbest_features(predictions, examples):
    """Per question: the n-best list's top three shares (as logits), the answer's and the context's length in
    words (logs): what a re-ranking calibrator (Kamath et al., 2020) reads besides the top score."""
    rows = []
    for prediction, example in zip(predictions, examples):
        scores = np.array([s.score for s in prediction.spans] or [0.0])
        shares = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
        top = np.clip(np.pad(np.sort(shares)[::-1][:3], (0, max(0, 3 - len(shares)))), 1e-6, 1 - 1e-6)
        answer_words = len(prediction.spans[0].text.split()) if prediction.spans else 0
        rows.append([*np.log(top / (1 - top)), np.log1p(answer_words), np.log1p(len(example.context.split()))])
    return np.array(rows)


def logistic(features_tune, right_tune, regularisation: float = 1e6):
    """A logistic regression on standardised features, as a function of the features; the constant
    rate where the tuning answers are all right or all wrong."""
    if len(np.unique(right_tune)) < 2:
        return lambda features: np.full(len(features), float(np.mean(right_tune)))
    model = make_pipeline(StandardScaler(), LogisticRegression(C=regularisation)).fit(features_tune, right_tune)
    return lambda features: model.predict_proba(features)[:, 1]


def logit_feature(p):
    return np.log(np.clip(p, 1e-6, 1 - 1e-6) / np.clip(1 - p, 1e-6, 1))[:, None]


def measure(raw_tune, right_tune, raw_eval, right_eval, resamples: int) -> dict:
    """Ranking and calibration numbers of one candidate on the evaluation questions."""
    beta = calibrate(raw_eval, fit_calibrator(raw_tune, right_tune))  # the package's calibrator
    isotonic = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(raw_tune, right_tune).predict(raw_eval)
    rng = np.random.default_rng(0)
    draws = rng.integers(0, len(raw_eval), size=(resamples, len(raw_eval)))
    floor = [ece(beta, rng.random(len(beta)) < beta) for _ in range(200)]
    return {
        "aurc": aurc(raw_eval, right_eval), "coverage_at_80": coverage_at_accuracy(raw_eval, right_eval, 0.8),
        "ece_raw": ece(raw_eval, right_eval), "ece_isotonic": ece(isotonic, right_eval),
        "ece_platt": ece(logistic(logit_feature(raw_tune), right_tune)(logit_feature(raw_eval)), right_eval),
        "ece_beta": ece(beta, right_eval),
        "ece_beta_ci": np.percentile([ece(beta[d], right_eval[d]) for d in draws], [2.5, 97.5]).tolist(),
        "macro_ce_beta": macro_calibration_error(beta, right_eval)["macro_ce"],
        "ece_floor": float(np.mean(floor)), "max_beta": float(beta.max()), "max_isotonic": float(isotonic.max()),
    }


def table(rows: list[dict]) -> str:
    head = ("| decoding | raw confidence | AURC | coverage at 80% | ECE raw | ECE isotonic | ECE Platt "
            "| ECE beta [95% CI] | ECE floor | MacroCE | top calibrated (isotonic, beta) |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|\n")
    return head + "".join(
        f"| {r['decoding']} | {r['candidate']} | {r['aurc']:.3f} | {r['coverage_at_80']:.1%} | {r['ece_raw']:.3f} "
        f"| {r['ece_isotonic']:.3f} | {r['ece_platt']:.3f} "
        f"| {r['ece_beta']:.3f} [{r['ece_beta_ci'][0]:.3f}, {r['ece_beta_ci'][1]:.3f}] | {r['ece_floor']:.3f} "
        f"| {r['macro_ce_beta']:.3f} | {r['max_isotonic']:.2f}, {r['max_beta']:.2f} |\n" for r in rows)


def main(args: argparse.Namespace) -> dict:
    config = load_config(args.config)
    if config.tune is None:
        _common.fail(f"{args.config} has no tune split: the calibrators need held-out questions")
    tune_split, eval_split = resolve_split(config.tune, Path(args.data_dir)), resolve_split(config.eval, Path(args.data_dir))
    check_disjoint([("tune", tune_split), ("eval", eval_split)])
    trained = TrainedModel.load(args.model)
    decode_config = trained.decode_config(config.decode)
    tune_outputs, eval_outputs = trained.windows(tune_split.examples), trained.windows(eval_split.examples)
    if "bio" in trained.model.config.heads:  # as a comparison does: the length prior tuned on the tuning questions
        prior = tune_bio_length_prior(tune_outputs, tune_split.examples, replace(decode_config, bio_length_prior=None))[0]
        decode_config = replace(decode_config, bio_length_prior=prior)
    tune = split_candidates(trained, tune_split, tune_outputs, decode_config)
    evaluation = split_candidates(trained, eval_split, eval_outputs, decode_config)
    rows = [{"decoding": decoding, "candidate": name,
             **measure(tune[decoding][0][name], tune[decoding][1], raw, evaluation[decoding][1], args.resamples)}
            for decoding, (candidates, _, _) in evaluation.items() for name, raw in candidates.items()]
    for decoding, (_, right, features) in evaluation.items():  # the re-ranking calibrator's output as the raw score
        learned = logistic(tune[decoding][2], tune[decoding][1], regularisation=1.0)
        rows.append({"decoding": decoding, "candidate": "logistic on n-best features",
                     **measure(learned(tune[decoding][2]), tune[decoding][1], learned(features), right, args.resamples)})
    args.output_dir.mkdir(parents=True, exist_ok=True)
    markdown = (f"Model `{args.model}`; tuned on {len(tune_split.examples)} questions ({tune_split.description}), "
                f"evaluated on {len(eval_split.examples)} ({eval_split.description}); BIO length prior "
                f"{decode_config.bio_length_prior}.\n\n{table(rows)}")
    (args.output_dir / "confidence.md").write_text(markdown, encoding="utf-8")
    result = {"benchmark": "confidence", "machine": _common.machine_description(), "model": args.model, "rows": rows}
    (args.output_dir / "confidence.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(markdown)
    return result


if __name__ == "__main__":
    print(json.dumps(main(parse_args())))
