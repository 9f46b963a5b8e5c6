"""Post-processing alone (window logits -> answers): bio_mrc's decoding vs the recipe's loops.

Both sides turn the SAME real logits into one answer per question, in the same process, on the
CPU, one after the other (``--repeats N`` alternates them and reports the medians). The logits are
the trained model's (default: the quick preset's joint model ``runs/quick*/models/joint-seed42-*``,
max_seq_length 256, stride 96) over every window of SQuAD v1.1 dev (``--limit`` to shorten),
computed once by bio_mrc's forward (``run_windows``) and cached in
``runs/bench-postprocess/*.npz``: a rerun, or a shorter ``--limit`` (a prefix of a cached run),
skips the forward. Positions past a window's last token carry ``-inf`` on both sides. Nothing is
written to disk by either side (the recipe's files and ours are for ``bench_inference.py``).

THE REFERENCE (``reference_recipe.py``, shared by the benchmarks of this folder) is
``postprocess_qa_predictions`` of the Hugging Face recipe (utils_qa.py): per question, per window,
the top-20 start x top-20 end logits in Python loops with the offset checks, the min-null rule,
the n-best (20) by ``s + e`` with softmax probabilities, reading the windows' rows through the
``datasets.Dataset`` that ``prepare_validation_features`` made (offsets ``None`` outside the
context), as the recipe does. Its windows are built (untimed) with the model's window settings
and checked to be ours.

OURS is what ``bio-mrc predict`` does after the forward: the windows' offset and mask columns
into padded arrays (``bio_mrc.inference.forward.window_outputs``, as ``run_windows`` ends), then
``decode(outputs, examples, "span", DecodeConfig())``: the exact banded span search, each span
read in the window where its first token has the most context among the windows that hold the
whole span (BERT's rule, which the recipe does not apply), n-best 20, max answer length 30 tokens. Both stages are in ours' time. Beside it, on the same
``WindowOutputs``: the BIO decoding and the joint decoding (with the model's tuned BIO length
prior), which the recipe has no counterpart for.

Agreement: every question's answer text is compared. Every difference is classified on the
reference's own logits and offsets: the exact best span (``bench_inference.exact_reference_answers``,
bio_mrc's band search) and, independently, a brute-force search over every (start, end) pair of
the question's windows, with BERT's maximum-context rule computed on the recipe's windows
(``recipe_max_context.py``, shared with ``bench_inference.py``: a span is read only in the window where its first token has the most
context among those holding the whole span, as ours decodes). A difference is the recipe's pruning where ours is the best span under
the rule and the recipe's answer scores lower (or is its ``"empty"`` placeholder); it is the rule
where ours is that best span and the recipe's span (its own top candidate, found again) starts on
a token with more context in another window that holds it whole. The recipe is then run again (untimed) with the
rule applied: its own ``token_is_max_context`` check marks the starts, and a start's ends the rule does not read
there are dropped from its candidates; its differences from ours classified alike. ``identical`` (the
JSON's last field but one) is true when every difference from the recipe is its pruning or the
rule, and every difference from the recipe with the rule is its pruning.

    python benchmarks/bench_postprocess.py [--limit 0] [--repeats 3] [--model DIR] [--cache-dir runs/bench-postprocess]

The last line is one JSON object:
``{"benchmark": "postprocess", "reference_s": ..., "ours_s": ..., "ratio": ..., "identical": ..., "machine": ...}``
(ratio = reference seconds / ours).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import sys
from pathlib import Path
from unittest import mock

import datasets
import numpy as np
import torch
import transformers
from torch.utils.data import DataLoader
from transformers import default_data_collator

from bench_inference import exact_reference_answers
from bio_mrc.data.squad import load_squad
from bio_mrc.decoding.postprocess import DecodeConfig, decode
from bio_mrc.features.windows import FeatureConfig, build_features
from bio_mrc.inference import TrainedModel
from bio_mrc.inference.forward import window_outputs
from recipe_max_context import (
    MAX_CONTEXT,
    MAX_CONTEXT_REASON,
    Searched,
    held_best,
    max_context_of,
    rule_explains,
    rule_window_candidates,
    rows_by_question,
    search,
)
from reference_recipe import (
    reference_load_squad,
    reference_postprocess_qa_predictions,
    reference_prepare_validation_features,
)

import _common


def parse_args() -> argparse.Namespace:
    """The options, with the model and data checked: a missing one ends here, before any work."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="Prints where the logits came from (cache or forward), each side's time, our BIO and joint "
               "decodings' times, the agreement and every difference's class; the last line is the JSON summary.")
    parser.add_argument("--model", default=None, help=f"bio_mrc model folder (default: the newest {_common.QUICK_MODEL_GLOB})")
    _common.add_data_arguments(parser, "squad-v1.1/dev.json", "SQuAD JSON (v1.1 dev)")
    parser.add_argument("--limit", type=int, default=0, help="first N questions of the file; 0 = all (10,570 on v1.1 dev)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per side (alternating); medians are reported")
    parser.add_argument("--cache-dir", default=None,
                        help="where the windows' logits are cached (.npz; default: runs/bench-postprocess in the repository)")
    parser.add_argument("--batch-size", type=int, default=64, help="batch size of the one forward that fills the cache")
    args = parser.parse_args()
    args.model = _common.model_dir(args.model)
    args.data = _common.data_file(args, "squad-v1.1/dev.json")
    args.cache_dir = args.cache_dir or str(_common.repo_path("runs/bench-postprocess"))
    return args


NAME = "postprocess"


# ---------------------------------------------------------------------------------------------
# The logits: computed once by bio_mrc's forward, cached
# ---------------------------------------------------------------------------------------------


def cached_logits(cache_dir: Path, model, ref_features: datasets.Dataset, ids: list[str], model_dir: str, data: str,
                  batch_size: int) -> tuple[dict[str, np.ndarray], str]:
    """(start, end, bio) logits of every window, (F, max_seq_length[, 3]) float32, as the recipe's
    forward gives them (every window padded to max_seq_length), from a cache of this model and data
    file holding at least these questions (a prefix of it), else from that forward (then cached)."""
    n = len(ref_features)
    stem = f"{Path(model_dir).name}-{Path(data).stem}-padded"
    for path in sorted(cache_dir.glob(f"{stem}-q*.npz"), key=lambda p: -int(p.stem.rsplit("-q", 1)[1])):
        with np.load(path) as saved:
            cached_ids = saved["question_ids"]
            if len(cached_ids) < len(ids) or list(cached_ids[: len(ids)]) != ids or len(saved["start"]) < n:
                continue
            return {k: saved[k][:n] for k in ("start", "end", "bio")}, f"cache {path}"
    logits, seconds = _common.timed(lambda: recipe_forward(model, ref_features, batch_size))
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / f"{stem}-q{len(ids)}.npz"
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, question_ids=np.array(ids), model=np.array(model_dir), **logits)
    os.replace(tmp, path)
    return logits, f"the recipe's forward {seconds:.1f} s, cached in {path}"


@torch.no_grad()
def recipe_forward(model, features: datasets.Dataset, batch_size: int) -> dict[str, np.ndarray]:
    """``reference_predict``'s loop (file order, fixed batches, every window at max_seq_length,
    ``default_data_collator``, ``no_grad``), also keeping the BIO head's logits for ours' other decodings."""
    model.eval()
    inputs = features.select_columns([c for c in ("input_ids", "attention_mask", "token_type_ids") if c in features.column_names])
    loader = DataLoader(inputs, batch_size=batch_size, shuffle=False, collate_fn=default_data_collator)
    out = collections.defaultdict(list)
    for batch in loader:
        result = model(**batch)
        out["start"].append(result.start_logits.float().numpy())
        out["end"].append(result.end_logits.float().numpy())
        out["bio"].append(result.bio_logits.float().numpy())
    return {k: np.concatenate(v) for k, v in out.items()}


# ---------------------------------------------------------------------------------------------
# OURS: the windows' columns into arrays (window_outputs, as run_windows ends), then decode
# ---------------------------------------------------------------------------------------------


def head_logits(logits: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The cached logits under the names ``window_outputs`` takes."""
    names = {"start": "start_logits", "end": "end_logits", "bio": "bio_logits"}
    return {names[k]: v for k, v in logits.items() if k in names and v is not None}


def run_ours(features, logits, examples, decoding: str, config: DecodeConfig) -> tuple[dict[str, str], dict[str, float]]:
    times = _common.StageTimes()
    with times.stage("arrays"):
        outputs = window_outputs(features, head_logits(logits))
    with times.stage("decode"):
        predictions = decode(outputs, examples, decoding, config)
    return {p.id: p.answer for p in predictions}, times


# ---------------------------------------------------------------------------------------------
# Agreement diagnosis: brute force over every pair, independent of bio_mrc (recipe_max_context.py)
# ---------------------------------------------------------------------------------------------

PRUNING = "pruning"


def classify(ref: str, ours: str, exact_text: str, searched: Searched) -> str:
    """Why the reference's answer ``ref`` is not ours, on the reference's own logits. Any explanation needs ours to
    be the brute force's best span under the rule, the brute force's unrestricted best to be ``exact_text`` (the
    exact band search's), and the recipe's own top candidate to be its answer."""
    ours_is_held_best = held_best(ours, exact_text, searched)
    recipe_span = searched.ref_text == ref
    if rule_explains(ref, ours, exact_text, searched):
        return MAX_CONTEXT_REASON
    if ref == "empty" and searched.ref_held is None and ours_is_held_best:
        return f"{PRUNING}: no top-20 x top-20 pair passes the offset checks; the recipe answers its placeholder 'empty'"
    if ours_is_held_best and recipe_span and searched.ref_held and searched.ref_score < searched.held_best:
        return f"{PRUNING}: the best span's start or end is outside the top 20; the recipe returns a lower-scoring span"
    if recipe_span and searched.ref_held and searched.ref_score == searched.held_best:
        return "tie: the recipe's span scores exactly the best score under the rule (another span of equal score is ours)"
    return "other (not explained by pruning or the max-context rule)"


def reference_with_max_context(examples, ref_features, logits: tuple[np.ndarray, np.ndarray],
                               held: list[np.ndarray]) -> dict[str, str]:
    """The recipe's answers with the rule: each window's candidates those of :func:`rule_window_candidates` (its
    own ``token_is_max_context`` check, and the ends the rule reads), the rest of the recipe as it is (untimed: the
    windows' rows as plain dicts, the row's first ends where the recipe reads its check)."""
    rows = [{"example_id": qid, "offset_mapping": offsets, "token_is_max_context": first_end}
            for qid, offsets, first_end in zip(ref_features["example_id"], ref_features["offset_mapping"], held)]
    with mock.patch.object(sys.modules[reference_postprocess_qa_predictions.__module__], "_reference_window_candidates",
                           rule_window_candidates):
        return dict(reference_postprocess_qa_predictions(examples, rows, logits))


@dataclasses.dataclass
class Setup:
    """Untimed: both sides' windows (checked to be the same) and the logits they share."""

    windows: FeatureConfig
    examples: list
    features: datasets.Dataset
    our_feature_s: float
    ref_examples: datasets.Dataset
    ref_features: datasets.Dataset
    ref_feature_s: float
    ids: list[str]
    offset_differences: int
    logits: dict[str, np.ndarray]
    source: str  # where the logits came from: the cache or the forward
    span_config: DecodeConfig
    tuned: DecodeConfig  # with the model's tuned BIO length prior


@dataclasses.dataclass
class Timings:
    """Median seconds of each side and of ours' other decodings, and the last run's answers."""

    ref_t: dict[str, float]
    our_t: dict[str, float]
    bio_t: dict[str, float]
    joint_t: dict[str, float]
    ref_answers: dict[str, str]
    our_answers: dict[str, str]

    @property
    def ratio(self) -> float:
        return self.ref_t["total"] / self.our_t["total"]


def reference_windows(data: str, limit: int | None, tokenizer, windows: FeatureConfig) -> tuple[datasets.Dataset, datasets.Dataset]:
    """The recipe's examples and its windows of them."""
    examples = reference_load_squad(data, limit)
    return examples, examples.map(
        reference_prepare_validation_features, batched=True, remove_columns=examples.column_names,
        fn_kwargs={"tokenizer": tokenizer, "max_length": windows.max_seq_length, "doc_stride": windows.doc_stride},
    )


def set_up(args: argparse.Namespace) -> Setup:
    """The model (tokenizer, windows, tuned prior), both sides' windows, the logits; nothing here is in the ratio."""
    datasets.disable_progress_bars()
    transformers.logging.set_verbosity_error()
    limit = args.limit or None
    trained = TrainedModel.load(args.model)  # released on return: the model is not held during the timed runs
    windows = trained.features
    examples = load_squad(args.data, limit=limit).examples
    features, our_feature_s = _common.timed(
        lambda: build_features(examples, trained.tokenizer, windows, with_targets=False, desc="windows"))
    (ref_examples, ref_features), ref_feature_s = _common.timed(
        lambda: reference_windows(args.data, limit, trained.tokenizer, windows))
    ids = [ex.id for ex in examples]
    same_windows, offset_differences = check_same_windows(ref_features, features, ids)
    if not same_windows:
        raise SystemExit("the recipe's windows are not ours (count or question per window): the logits cannot be shared")
    logits, source = cached_logits(Path(args.cache_dir), trained.model, ref_features, ids, args.model, args.data, args.batch_size)
    return Setup(windows, examples, features, our_feature_s, ref_examples, ref_features, ref_feature_s, ids,
                 offset_differences, logits, source, DecodeConfig(), trained.decode_config(DecodeConfig()))


def timed_runs(args: argparse.Namespace, setup: Setup) -> Timings:
    """The reference, then ours (span), BIO and joint, alternating ``--repeats`` times."""
    features, logits, examples = setup.features, setup.logits, setup.examples
    ref_logits = (logits["start"], logits["end"])

    def ours_span() -> tuple[dict[str, str], dict[str, float]]:
        answers, times = run_ours(features, logits, examples, "span", setup.span_config)
        return answers, {**times, "total": times["arrays"] + times["decode"]}

    sides = {
        "reference": lambda: (dict(reference_postprocess_qa_predictions(setup.ref_examples, setup.ref_features, ref_logits)), {}),
        "span": ours_span,
        "bio": lambda: run_ours(features, logits, examples, "bio", setup.tuned),
        "joint": lambda: run_ours(features, logits, examples, "joint", setup.tuned),
    }

    def progress(repeat: int, latest: dict[str, dict[str, float]]) -> None:
        print(f"run {repeat + 1}/{args.repeats}: reference {latest['reference']['total']:.2f} s, ours (span) "
              f"{latest['span']['total']:.2f} s, bio decode {latest['bio']['decode']:.2f} s, "
              f"joint decode {latest['joint']['decode']:.2f} s", flush=True)

    medians, last = _common.alternate(sides, args.repeats, after_repeat=progress)
    return Timings(*(medians[side] for side in sides), last["reference"], last["span"])


def print_header(args: argparse.Namespace, setup: Setup) -> str:
    """What ran, on what, and the windows; returns the machine's description (the JSON line names it)."""
    windows, n = setup.windows, len(setup.examples)
    print()
    print(f"post-processing alone, SQuAD v1.1 {Path(args.data).name}, {n} questions, {len(setup.features)} windows, model {args.model} "
          f"(max_seq_length {windows.max_seq_length}, stride {windows.doc_stride}); logits: {setup.source}")
    machine = _common.machine_description()
    print(f"machine: {machine}; numpy {np.__version__}, datasets {datasets.__version__}; {_common.command_load_and_date()} "
          f"at the end; median of {args.repeats} run(s) per side")
    print(f"windows (untimed): ours {setup.our_feature_s:.2f} s, the recipe's {setup.ref_feature_s:.2f} s; the same windows on both sides "
          f"(count, question of each, token ids); context offsets differ in {setup.offset_differences} window(s) (ours extends a token "
          f"over a following combining mark its tokenizer drops, e.g. 'ɐ̯')")
    return machine


def print_table(setup: Setup, timings: Timings) -> None:
    ref_t, our_t, ratio, n = timings.ref_t, timings.our_t, timings.ratio, len(setup.examples)
    print()
    print("| post-processing (same logits) | seconds | questions/s | vs the reference |")
    print("|---|---:|---:|---:|")
    print(f"| reference: postprocess_qa_predictions (top-20 x top-20 loops) | {ref_t['total']:.2f} | {n / ref_t['total']:.0f} | 1.00x |")
    print(f"| **ours, span**: arrays {our_t['arrays']:.2f} + decode {our_t['decode']:.2f} | **{our_t['total']:.2f}** | "
          f"{n / our_t['total']:.0f} | **{ratio:.2f}x** |")
    print(f"| ours, span, decode alone | {our_t['decode']:.2f} | {n / our_t['decode']:.0f} | {ref_t['total'] / our_t['decode']:.2f}x |")
    for name, t_ in (("bio", timings.bio_t), ("joint", timings.joint_t)):
        print(f"| ours, {name} (length prior {setup.tuned.bio_length_prior}): arrays {t_['arrays']:.2f} + decode {t_['decode']:.2f} | "
              f"{t_['arrays'] + t_['decode']:.2f} | {n / (t_['arrays'] + t_['decode']):.0f} | "
              f"{ref_t['total'] / (t_['arrays'] + t_['decode']):.2f}x |")
    print()
    print(f"ratio (reference / ours, span): {ratio:.2f}x")


def print_agreement(setup: Setup, timings: Timings) -> bool:
    """The share of same answers and every difference's class, against the recipe as it is and against the recipe
    with BERT's max-context rule (untimed); returns ``identical`` (see the docstring)."""
    ref_logits = (setup.logits["start"], setup.logits["end"])
    held = max_context_of(setup.ref_features)
    exact = exact_reference_answers(setup.ref_features, ref_logits, setup.ref_examples)
    unexplained = print_against(setup, "the recipe", timings.ref_answers, timings.our_answers, held, exact, rule=False)
    with_rule = reference_with_max_context(setup.ref_examples, setup.ref_features, ref_logits, held)
    unexplained_with_rule = print_against(setup, "the recipe with BERT's max-context rule", with_rule, timings.our_answers,
                                          held, exact, rule=True)
    identical = unexplained == unexplained_with_rule == 0
    print(f"identical wherever the recipe's pruning does not miss the best span, the max-context rule aside: {identical} "
          f"({unexplained} difference(s) from the recipe not explained by pruning or the rule, {unexplained_with_rule} from "
          "the recipe with the rule not explained by pruning)")
    return identical


def print_against(setup: Setup, name: str, ref_answers: dict[str, str], our_answers: dict[str, str], held: list[np.ndarray],
                  exact: dict[str, tuple[str, float, float]], rule: bool) -> int:
    """The share of same answers and every difference's class against ``name`` (the recipe, with the max-context rule
    where ``rule``); the differences not explained by its pruning (or, without the rule, by the rule)."""
    n = len(setup.examples)
    differing = [q for q in setup.ids if our_answers[q] != ref_answers.get(q)]
    print(f"against {name}: same answer text on {n - len(differing)}/{n} questions = {100 * (n - len(differing)) / n:.2f}%")
    reasons = print_differences(setup, ref_answers, our_answers, differing, held, exact, rule) if differing else collections.Counter()
    explained_by = (PRUNING,) if rule else (PRUNING, MAX_CONTEXT)
    return len(differing) - sum(c for r, c in reasons.items() if r.startswith(explained_by))


def print_differences(setup: Setup, ref_answers: dict[str, str], our_answers: dict[str, str], differing: list[str],
                      held: list[np.ndarray], exact: dict[str, tuple[str, float, float]], rule: bool) -> collections.Counter:
    """Each differing question classified on the reference's own logits (exact search and brute force); the counts."""
    ref_features, ref_logits = setup.ref_features, (setup.logits["start"], setup.logits["end"])
    rows_of = rows_by_question(ref_features)
    contexts = {ex.id: ex.context for ex in setup.examples}
    reasons = collections.Counter()
    details = []
    for qid in differing:
        searched = search(ref_features, rows_of[qid], ref_logits, contexts[qid], held, rule)
        reason = classify(ref_answers[qid], our_answers[qid], exact.get(qid, ("",))[0], searched)
        reasons[reason] += 1
        details.append((qid, ref_answers[qid], our_answers[qid], searched, reason))
    print("  differences by reason:")
    for reason, count in reasons.most_common():
        print(f"  {count:4d}  {reason}")
    print("  differing questions (id | reference | ours | best score | best score the max-context rule reads | "
          "the reference's span's score | the rule reads it there):")
    for qid, ref, ours, searched, _reason in details[:20]:
        print(f"    {qid} | {ref!r} | {ours!r} | {searched.best:.3f} | {searched.held_best:.3f} | {searched.ref_score:.3f} | "
              f"{searched.ref_held}")
    return reasons


def main(args: argparse.Namespace) -> None:
    setup = set_up(args)
    timings = timed_runs(args, setup)
    machine = print_header(args, setup)
    print_table(setup, timings)
    identical = print_agreement(setup, timings)
    print(json.dumps({"benchmark": NAME, "reference_s": round(timings.ref_t["total"], 3), "ours_s": round(timings.our_t["total"], 3),
                      "ratio": round(timings.ratio, 3), "identical": bool(identical), "machine": machine}))


def check_same_windows(ref_features: datasets.Dataset, features: datasets.Dataset, ids: list[str]) -> tuple[bool, int]:
    """(the recipe's windows are ours: count, question of each, unpadded token ids; the number of
    windows whose context offsets differ)."""
    if len(ref_features) != len(features):
        print(f"windows differ in number: the recipe's {len(ref_features)}, ours {len(features)}")
        return False, -1
    same = [ids[i] for i in features["example_index"]] == list(ref_features["example_id"])
    differ = 0
    rows = zip(ref_features["input_ids"], features["input_ids"], ref_features["offset_mapping"], features["offset_mapping"])
    for ref_ids, our_ids, ref_offsets, offsets in rows:
        same &= list(ref_ids[: len(our_ids)]) == list(our_ids) and all(i == 0 for i in ref_ids[len(our_ids):])
        ours = [tuple(o) if o[0] >= 0 else None for o in offsets]
        ref = [tuple(o) if o is not None else None for o in ref_offsets[: len(offsets)]]
        differ += ours != ref
    return bool(same), differ


if __name__ == "__main__":
    main(parse_args())
