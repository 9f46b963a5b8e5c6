"""End-to-end inference: bio_mrc's prediction path vs the common Hugging Face QA recipe.

Both sides start from the raw SQuAD JSON and end with a predictions file on
disk, with the same trained weights, in the same process, on the same device
(the GPU when there is one, else the CPU), one after
the other (reference first, then ours; ``--repeats N`` alternates them N times
and reports the median of each). Each side also loads the model and its
tokenizer inside its timed region. One untimed forward runs first so neither
side pays torch's first-call set-up.

THE REFERENCE (``reference_*``, imported from ``reference_recipe.py`` in this
folder, shared by every benchmark here) is a faithful re-implementation of the
recipe of Hugging Face's ``run_qa.py`` / question-answering notebook:

* the raw JSON is flattened into a ``datasets.Dataset`` of questions (what
  ``load_dataset("squad")`` builds) and ``prepare_validation_features`` maps it
  into windows: ``truncation="only_second"``, the model's ``max_seq_length`` and
  stride, ``padding="max_length"`` (every window padded to the full length),
  offsets set to ``None`` outside the context;
* a plain ``AutoModelForQuestionAnswering``-style forward as ``Trainer.predict``
  runs it: the windows in dataset order (no length sorting) in fixed batches of
  ``--batch-size`` through a ``DataLoader`` with ``default_data_collator``,
  under ``torch.no_grad()`` (and bf16 autocast with ``--reference-precision bf16``,
  the recipe's ``--bf16``; ours runs in the package's ``auto`` precision), logits
  concatenated with numpy. The model is
  loaded with ``AutoModelForQuestionAnswering.from_pretrained`` (bio_mrc
  registers its class there) and only ``input_ids``, ``attention_mask`` and
  ``token_type_ids`` are fed; ``start_logits``/``end_logits`` come from the
  span head, which IS a plain QA head: one ``Linear(H, 2)`` over the encoder's
  last hidden states, exactly ``BertForQuestionAnswering.qa_outputs``. (The
  joint model's BIO head also runs in both sides' forwards; its cost is
  another ``Linear(H, 3)``, negligible.)
* ``postprocess_qa_predictions``: per question, per window, the top-20 start
  × top-20 end logits in Python loops with the offset checks (inside the
  context, ``end >= start``, at most ``max_answer_length = 30`` tokens), the
  minimum null score over windows (the min-null rule; on SQuAD v1.1 it is
  computed but never answers), the n-best (20) by ``s + e``, softmax
  probabilities, and ``predictions.json`` + ``nbest_predictions.json`` written
  with ``json.dumps(..., indent=4)``. Rows of the features are read through the
  ``Dataset`` (``features[i]``) as the recipe does.

The recipe has no ``max_query_length``: it keeps whole questions, where bio_mrc
cuts them at the model's 64 tokens; the script counts the questions where that
matters (none in SQuAD v1.1 dev at 64).

OURS is the package's path, as ``bio-mrc predict`` runs it:
``load_squad`` -> ``TrainedModel.load`` -> ``build_features`` (no padding) ->
``run_windows`` (windows sorted by length, each batch padded to its longest
window only, ``torch.inference_mode``) -> ``decode(..., "span",
DecodeConfig())`` (the exact banded span search, numpy, same n-best 20 and
max answer length 30 tokens) -> ``write_prediction_files`` (predictions,
n-best and na-prob files). Its stages are timed separately.

Agreement is the share of questions whose answer text is identical; every
difference is classified from the reference's own logits (see ``classify``): the
recipe's pruning, BERT's maximum-context rule (ours reads each span only in the
window where its first token has the most context among those holding the whole
span, the recipe in every window; tested on the recipe's windows as
``bench_postprocess.py`` tests it, ``recipe_max_context.py``), float noise in a
near-tie, or logits that differ.
Official v1.1 EM/F1 of both are printed.

    python benchmarks/bench_inference.py [--limit 1000] [--repeats 1] [--model DIR] [--max-seq-length 384 --doc-stride 128]
        [--ours-batch-size N] [--reference-precision fp32|bf16] [--onnx EXPORT_DIR] [--threads N] [--levers]

The last line is one JSON object:
``{"benchmark": ..., "reference_s": ..., "ours_s": ..., "ratio": ..., "identical": ..., "machine": ...}``
(ratio = reference seconds / ours; identical = the same answer text on at least 99.5% of the
questions).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import resource
import tempfile
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import torch
import transformers
from transformers import AutoModelForQuestionAnswering, AutoTokenizer

from bio_mrc.data.squad import load_squad
from bio_mrc.decoding.postprocess import DecodeConfig, decode
from bio_mrc.decoding.spans import best_spans
from bio_mrc.features.ragged import RaggedColumn
from bio_mrc.features.windows import FeatureConfig, build_features
from bio_mrc.inference import TrainedModel, write_prediction_files
from bio_mrc.inference.forward import as_runner, window_logits, window_outputs
from bio_mrc.metrics.squad_official import squad_metrics
from bio_mrc.precision import default_device
from recipe_max_context import MAX_CONTEXT_REASON, Searched, max_context_of, rows_by_question, rule_explains, search
from reference_recipe import (
    MAX_ANSWER_LENGTH,
    N_BEST,
    reference_load_squad,
    reference_postprocess_qa_predictions,
    reference_predict,
    reference_prepare_validation_features,
)

import _common


def parse_args() -> argparse.Namespace:
    """The options, with the model and data checked: a missing one ends here, before any work."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="a bio_mrc model folder, or transformers' extractive QA model's "
                                                      f"(...ForQuestionAnswering) (default: the newest {_common.QUICK_MODEL_GLOB})")
    _common.add_data_arguments(parser, "squad-v1.1/dev.json", "SQuAD v1.1 dev JSON")
    parser.add_argument("--limit", type=int, default=1000, help="first N questions of the file; 0 = all")
    parser.add_argument("--repeats", type=int, default=1, help="runs per side (alternating); the median is reported")
    parser.add_argument("--batch-size", type=int, default=64, help="the reference's batch size (the recipe's eval batch)")
    parser.add_argument("--ours-batch-size", type=int, default=None,
                        help="ours' batch size (default: the package's, TrainedModel.windows' default for the device)")
    parser.add_argument("--reference-precision", choices=("fp32", "bf16"), default="fp32",
                        help="the reference's: fp32 (the recipe's default) or bf16 (the recipe with --bf16, autocast)")
    parser.add_argument("--max-seq-length", type=int, default=None,
                        help="windows of both sides (default: the model's); the reference pads every window to it")
    parser.add_argument("--doc-stride", type=int, default=None, help="stride of both sides' windows (default: the model's)")
    parser.add_argument("--onnx", default=None,
                        help="ours runs this ONNX export of --model (bio-mrc export --format onnx) instead of PyTorch")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads for both sides (default: torch's)")
    parser.add_argument("--levers", action="store_true",
                        help="also time the forward alone one lever at a time (padding, sorting, inference mode, batch size, threads)")
    parser.add_argument("--output-dir", default=None, help="where the prediction files go (default: a temporary folder)")
    args = parser.parse_args()
    args.model = _common.model_dir(args.model)
    if args.onnx:
        _common.require_module("onnxruntime", "pip install -e '.[onnx]'")
        args.onnx = _common.model_dir(args.onnx, option="--onnx (an export of --model)")
    args.data = _common.data_file(args, "squad-v1.1/dev.json")
    return args


NAME = "inference_end_to_end"
AGREEMENT = 0.995  # "identical": the same answer text on at least this share of questions


# ---------------------------------------------------------------------------------------------
# THE REFERENCE (the recipe's functions live in reference_recipe.py): the whole recipe, timed.
# ---------------------------------------------------------------------------------------------


def run_reference(model_dir: str, data: str, limit: int | None, max_length: int, stride: int, batch_size: int, out: Path,
                  precision: str = "fp32"):
    """The whole recipe, raw JSON to predictions.json, on the device ours runs on (the GPU when there is one);
    returns ((predictions, kept for diagnosis), stage seconds)."""
    times = _common.StageTimes()
    with times.stage("load model"):
        model = AutoModelForQuestionAnswering.from_pretrained(model_dir).to(default_device())
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
    with times.stage("read JSON"):
        examples = reference_load_squad(data, limit)
    with times.stage("features"):
        features = examples.map(
            reference_prepare_validation_features, batched=True, remove_columns=examples.column_names,
            fn_kwargs={"tokenizer": tokenizer, "max_length": max_length, "doc_stride": stride},
        )
    with times.stage("forward"):
        logits = reference_predict(model, features, batch_size, precision)
    with times.stage("post-process + write"):
        out.mkdir(parents=True, exist_ok=True)
        predictions = reference_postprocess_qa_predictions(examples, features, logits, output_dir=str(out))
    return (dict(predictions), (features, logits)), times


# ---------------------------------------------------------------------------------------------
# OURS: bio_mrc's path, stage by stage.
# ---------------------------------------------------------------------------------------------


def run_ours(model_dir: str, data: str, limit: int | None, windows: FeatureConfig, batch_size: int, out: Path):
    times = _common.StageTimes()
    with times.stage("load model"):
        trained = TrainedModel.load(model_dir)  # an ONNX export's folder loads the ONNX Runtime session
        trained.features = windows
    with times.stage("read JSON"):
        squad = load_squad(data, limit=limit)
    with times.stage("features"):
        features = build_features(squad.examples, trained.tokenizer, trained.features, with_targets=False, desc="windows")
    with times.stage("forward"):
        logits = window_logits(as_runner(trained.model), features, trained.tokenizer.pad_token_id or 0, batch_size,
                               progress=False)
    with times.stage("arrays"):
        outputs = window_outputs(features, logits)  # with window_logits, what run_windows does
    with times.stage("decode"):
        predictions = decode(outputs, squad.examples, "span", DecodeConfig())
    with times.stage("write"):
        write_prediction_files(predictions, out / "predictions.json")
    return ({p.id: p.answer for p in predictions}, (squad, features, outputs, trained)), times


# ---------------------------------------------------------------------------------------------
# Agreement diagnosis
# ---------------------------------------------------------------------------------------------


def exact_reference_answers(features: datasets.Dataset, logits, examples: datasets.Dataset) -> dict[str, tuple[str, float, float]]:
    """The exact (unpruned) best span on the REFERENCE's own logits and offsets, with its score and
    the runner-up's (another text), by bio_mrc's band search: separates pruning from logit noise."""
    start, end = logits
    offsets = features["offset_mapping"]
    mask = np.array([[o is not None for o in row] for row in offsets], dtype=bool)
    candidates = best_spans(start, end, mask, MAX_ANSWER_LENGTH, N_BEST)
    contexts = dict(zip(examples["id"], examples["context"]))
    scored: dict[str, list[tuple[float, str]]] = collections.defaultdict(list)
    for row, qid in enumerate(features["example_id"]):
        for score, s, e in zip(candidates.score[row], candidates.start[row], candidates.end[row]):
            if s >= 0:
                scored[qid].append((float(score), contexts[qid][offsets[row][s][0] : offsets[row][e][1]]))
    result = {}
    for qid, items in scored.items():
        items.sort(key=lambda x: -x[0])
        best = items[0]
        runner = next((sc for sc, text in items if text != best[1]), -np.inf)
        result[qid] = (best[1], best[0], runner)
    return result


def classify(qid: str, ref: str, ours: str, exact: dict[str, tuple[str, float, float]], searched: Searched) -> str:
    """Why the reference's answer ``ref`` is not ours, on the reference's own logits: ``exact`` (the exact band
    search's best, unpruned and without the rule) and ``searched`` (``recipe_max_context.search``: the best span
    under BERT's maximum-context rule, which ours applies, and the recipe's own top candidate)."""
    text, score, runner = exact.get(qid, ("", -np.inf, -np.inf))
    if text == ours:
        return "reference's top-20 x top-20 pruning missed the best span (its own logits' exact best is ours)"
    if rule_explains(ref, ours, text, searched):
        return MAX_CONTEXT_REASON
    if text == ref and score - runner < 1e-3:
        return "near-tie flipped by padding-dependent float noise in the logits (margin < 1e-3)"
    if text == ref:
        return "the logits differ by more than noise (another runtime, e.g. --onnx)"
    return "other (offsets / text mapping)"


def forward_variant(model, features: datasets.Dataset, batch_size: int, pad_to: int | None, sort: bool, mode: str) -> float:
    """Seconds to forward every window one way: padded to ``pad_to`` (None: each batch's longest),
    in dataset order or sorted by length, under ``no_grad`` or ``inference_mode``."""
    columns = {c: RaggedColumn.from_dataset(features, c) for c in ("input_ids", "attention_mask", "token_type_ids")
               if c in features.column_names}
    lengths = columns["input_ids"].lengths
    order = np.argsort(-lengths, kind="stable") if sort else np.arange(len(lengths))
    context = torch.inference_mode if mode == "inference_mode" else torch.no_grad
    model.eval()

    def forward_all() -> None:
        with context():
            for begin in range(0, len(order), batch_size):
                chosen = order[begin : begin + batch_size]
                model(**{c: torch.from_numpy(column.padded(chosen, width=pad_to, dtype=np.int64)) for c, column in columns.items()})

    return _common.timed(forward_all)[1]


def lever_table(model, features: datasets.Dataset, max_length: int, batch_size: int) -> list[tuple[str, float]]:
    """The forward alone, one lever at a time (same windows, same weights)."""
    threads = torch.get_num_threads()
    variants = [
        (f"padded to {max_length}, file order, no_grad (the reference's forward)", max_length, False, "no_grad", threads, batch_size),
        ("dynamic padding, file order, no_grad", None, False, "no_grad", threads, batch_size),
        ("dynamic padding, length-sorted, no_grad", None, True, "no_grad", threads, batch_size),
        ("dynamic padding, length-sorted, inference_mode (ours)", None, True, "inference_mode", threads, batch_size),
        *[(f"ours, batch size {size}", None, True, "inference_mode", threads, size) for size in (8, 16, 32) if size != batch_size],
        ("ours, 1 thread", None, True, "inference_mode", 1, batch_size),
    ]
    results = []
    for name, pad_to, sort, mode, n_threads, size in variants:
        torch.set_num_threads(n_threads)
        results.append((name, forward_variant(model, features, size, pad_to, sort, mode)))
        print(f"  lever: {name}: {results[-1][1]:.2f} s", flush=True)
    torch.set_num_threads(threads)
    return results


@dataclasses.dataclass
class Setup:
    """Untimed: where each side's model is, its windows, and the probe model (the first forward's set-up paid)."""

    model_dir: str
    ours_dir: str
    ours_batch: int
    limit: int | None
    root: Path
    probe: TrainedModel
    windows: FeatureConfig
    ref_length: int  # the reference pads every window to it


@dataclasses.dataclass
class Runs:
    """Both sides' median stage seconds, and what the last run of each left for the report."""

    ref_t: dict[str, float]
    our_t: dict[str, float]
    rss: dict[str, float]
    ref_answers: dict[str, str]
    our_answers: dict[str, str]
    ref_features: datasets.Dataset
    ref_logits: tuple
    squad: Any
    our_features: datasets.Dataset
    outputs: Any
    trained: TrainedModel
    lengths: np.ndarray  # ours' window lengths

    @property
    def ratio(self) -> float:
        return self.ref_t["total"] / self.our_t["total"]


def set_up(args: argparse.Namespace) -> Setup:
    if args.threads:
        torch.set_num_threads(args.threads)
    datasets.disable_progress_bars()
    transformers.logging.set_verbosity_error()
    root = Path(args.output_dir or tempfile.mkdtemp(prefix="bench-inference-"))
    probe = TrainedModel.load(args.model)
    windows = dataclasses.replace(probe.features, max_seq_length=args.max_seq_length or probe.features.max_seq_length,
                                  doc_stride=args.doc_stride or probe.features.doc_stride)
    with torch.inference_mode():  # one untimed forward: torch's first-call set-up is paid by neither side
        ones = torch.ones(8, 64, dtype=torch.long, device=probe.model.device)
        probe.model(input_ids=ones, attention_mask=ones)
    return Setup(args.model, args.onnx or args.model, args.ours_batch_size or probe.batch_size, args.limit or None,
                 root, probe, windows, windows.max_seq_length)


def timed_runs(args: argparse.Namespace, setup: Setup) -> Runs:
    """The reference then ours, alternating ``--repeats`` times; each side timed whole."""
    windows, rss = setup.windows, {}
    sides = {
        "reference": lambda: run_reference(setup.model_dir, args.data, setup.limit, setup.ref_length, windows.doc_stride,
                                           args.batch_size, setup.root / "reference", args.reference_precision),
        "ours": lambda: run_ours(setup.ours_dir, args.data, setup.limit, windows, setup.ours_batch, setup.root / "ours"),
    }

    def peak_memory(side: str) -> None:
        rss[f"after {side}"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def progress(repeat: int, latest: dict[str, dict[str, float]]) -> None:
        print(f"run {repeat + 1}/{args.repeats}: reference {latest['reference']['total']:.2f} s, "
              f"ours {latest['ours']['total']:.2f} s", flush=True)

    medians, last = _common.alternate(sides, args.repeats, peak_memory, progress)
    ref_answers, (ref_features, ref_logits) = last["reference"]
    our_answers, (squad, our_features, outputs, trained) = last["ours"]
    lengths = np.array([len(x) for x in our_features["input_ids"]])
    return Runs(medians["reference"], medians["ours"], rss, ref_answers, our_answers, ref_features, ref_logits,
                squad, our_features, outputs, trained, lengths)


def print_header(args: argparse.Namespace, setup: Setup, runs: Runs) -> str:
    """What ran, on what, and the windows; returns the machine's description (the JSON line names it)."""
    windows, lengths, n = setup.windows, runs.lengths, len(runs.squad.examples)
    print()
    print(f"end-to-end inference, SQuAD v1.1 {Path(args.data).name}, {n} questions, model {setup.model_dir}"
          f"{f' (ours: its ONNX export {setup.ours_dir}, ONNX Runtime)' if args.onnx else ''}; batch size: reference "
          f"{args.batch_size}, ours {setup.ours_batch}; reference precision {args.reference_precision}")
    machine = _common.machine_description()
    if torch.cuda.is_available():
        machine += f"; both sides on GPU {torch.cuda.get_device_name(0)}"
    print(f"machine: {machine}; transformers {transformers.__version__}; {_common.command_load_and_date()}; "
          f"median of {args.repeats} run(s) per side")
    fed = _fed_tokens(lengths, setup.ours_batch) / (len(runs.ref_features) * setup.ref_length)
    print(f"windows: {len(lengths)} (reference {len(runs.ref_features)}), max_seq_length {windows.max_seq_length}, stride {windows.doc_stride}; "
          f"reference pads every window to {setup.ref_length}, ours to each batch's longest "
          f"(mean window length {lengths.mean():.1f}, {100 * np.mean(lengths == windows.max_seq_length):.1f}% at the maximum; "
          f"tokens fed, ours / reference: {fed:.3f})")
    return machine


def print_stage_table(runs: Runs) -> None:
    """Each stage's median seconds on both sides, the ratio and where ours' time goes."""
    ref_t, our_t, ratio, n = runs.ref_t, runs.our_t, runs.ratio, len(runs.squad.examples)
    print()
    print("| stage | reference (s) | ours (s) |")
    print("|---|---:|---:|")
    ours_post = our_t["arrays"] + our_t["decode"] + our_t["write"]
    for name in ("load model", "read JSON", "features", "forward"):
        print(f"| {name} | {ref_t[name]:.2f} | {our_t[name]:.2f} |")
    print(f"| post-process + write | {ref_t['post-process + write']:.2f} | {ours_post:.2f} (window arrays {our_t['arrays']:.2f}, "
          f"decode {our_t['decode']:.2f}, write {our_t['write']:.2f}) |")
    print(f"| **total** | **{ref_t['total']:.2f}** | **{our_t['total']:.2f}** |")
    print(f"| questions/s | {n / ref_t['total']:.1f} | {n / our_t['total']:.1f} |")
    print()
    print(f"ratio (reference / ours): {ratio:.2f}x (target >= 3x: {'met' if ratio >= 3 else 'missed'})")
    print(f"forward only: {ref_t['forward'] / our_t['forward']:.2f}x; everything but the forward: "
          f"{(ref_t['total'] - ref_t['forward']) / (our_t['total'] - our_t['forward']):.2f}x")
    rest = our_t["features"] + our_t["arrays"] + our_t["decode"] + our_t["write"] + our_t["read JSON"]
    print(f"ours, share of wall time outside the encoder (read JSON + features + window arrays + decode + write): "
          f"{100 * rest / our_t['total']:.1f}% (target < 3%: {'met' if rest < 0.03 * our_t['total'] else 'missed'}) "
          f"(model load {100 * our_t['load model'] / our_t['total']:.1f}%, forward {100 * our_t['forward'] / our_t['total']:.1f}%)")
    print(f"peak RSS (process-wide, monotone): {runs.rss['after reference']:.0f} MiB after the reference, "
          f"{runs.rss['after ours']:.0f} MiB after ours")


def print_agreement(setup: Setup, runs: Runs) -> float:
    """The share of questions with the same answer text (returned), both sides' EM/F1 and the logits' difference."""
    squad, ref_answers, our_answers, lengths = runs.squad, runs.ref_answers, runs.our_answers, runs.lengths
    n = len(squad.examples)
    same = [ex.id for ex in squad.examples if our_answers[ex.id] == ref_answers.get(ex.id)]
    agreement = len(same) / n
    gold = squad.gold_texts()
    ref_m, our_m = squad_metrics(gold, ref_answers, "1.1"), squad_metrics(gold, our_answers, "1.1")
    print()
    print(f"same answer text on {len(same)}/{n} questions = {100 * agreement:.2f}% (target >= 99.5%: {'met' if agreement >= AGREEMENT else 'missed'})")
    print(f"official v1.1: reference EM {ref_m['exact_match']:.2f} F1 {ref_m['f1']:.2f}; ours EM {our_m['exact_match']:.2f} F1 {our_m['f1']:.2f}")
    if len(runs.ref_features) == len(lengths):
        diffs = [np.abs(runs.ref_logits[0][i, :L] - runs.outputs.start_logits[i, :L]).max() for i, L in enumerate(lengths)]
        print(f"max |start logit difference| over matching windows (padding to {setup.ref_length} vs dynamic): {max(diffs):.2e}")
    max_query = setup.windows.max_query_length
    long_questions = sum(len(q) > max_query for q in probe_tokenize(squad.examples, runs.trained.tokenizer))
    print(f"questions longer than max_query_length={max_query} tokens (cut by ours, kept whole by the recipe): {long_questions}")
    print_differences(runs)
    return agreement


def print_differences(runs: Runs) -> None:
    """Every differing answer classified from the reference's own logits; the first ten shown."""
    ref_answers, our_answers = runs.ref_answers, runs.our_answers
    differing = [ex.id for ex in runs.squad.examples if our_answers[ex.id] != ref_answers.get(ex.id)]
    if not differing:
        return
    exact = exact_reference_answers(runs.ref_features, runs.ref_logits, _examples_dataset(runs.squad.examples))
    held, rows_of = max_context_of(runs.ref_features), rows_by_question(runs.ref_features)
    contexts = {ex.id: ex.context for ex in runs.squad.examples}
    reason = {q: classify(q, ref_answers[q], our_answers[q], exact,
                          search(runs.ref_features, rows_of[q], runs.ref_logits, contexts[q], held)) for q in differing}
    print("differences by reason:")
    for text, count in collections.Counter(reason.values()).most_common():
        print(f"  {count:4d}  {text}")
    print("first differing questions (id | reference | ours | reason):")
    for qid in differing[:10]:
        margin = exact[qid][1] - exact[qid][2] if qid in exact else float("nan")
        print(f"  {qid} | {ref_answers[qid]!r} | {our_answers[qid]!r} | {reason[qid]}"
              f" | margin of the reference's exact best {margin:.3g}")


def print_levers(args: argparse.Namespace, setup: Setup, features: datasets.Dataset) -> None:
    print()
    print("levers: the forward alone over ours' windows (same weights), one change at a time")
    table = lever_table(setup.probe.model, features, setup.windows.max_seq_length, args.batch_size)
    base = table[0][1]
    print("| forward variant | seconds | vs the reference's forward |")
    print("|---|---:|---:|")
    for name, seconds in table:
        print(f"| {name} | {seconds:.2f} | {base / seconds:.2f}x |")


def main(args: argparse.Namespace) -> None:
    setup = set_up(args)
    runs = timed_runs(args, setup)
    machine = print_header(args, setup, runs)
    print_stage_table(runs)
    agreement = print_agreement(setup, runs)
    if args.levers:
        print_levers(args, setup, runs.our_features)
    print(f"prediction files under {setup.root}")
    print(json.dumps({
        "benchmark": NAME, "reference_s": round(runs.ref_t["total"], 3), "ours_s": round(runs.our_t["total"], 3),
        "ratio": round(runs.ratio, 3), "identical": agreement >= AGREEMENT, "machine": machine,
    }))


def _fed_tokens(lengths: np.ndarray, batch_size: int) -> int:
    """Tokens ours feeds the encoder: windows sorted by length, each batch padded to its longest."""
    ordered = np.sort(lengths)[::-1]
    return int(sum(ordered[i] * len(ordered[i : i + batch_size]) for i in range(0, len(ordered), batch_size)))


def probe_tokenize(examples, tokenizer) -> list[list[int]]:
    return tokenizer([ex.question.lstrip() for ex in examples], add_special_tokens=False)["input_ids"]


def _examples_dataset(examples) -> datasets.Dataset:
    return datasets.Dataset.from_dict({"id": [ex.id for ex in examples], "context": [ex.context for ex in examples]})


if __name__ == "__main__":
    main(parse_args())
