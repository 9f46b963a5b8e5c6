"""`bio-mrc evaluate` on SQuAD 2.0 files against ``evaluate-v2.0.py``'s published algorithm, written out below on its
own (not the package's code): every number agrees, with and without ``--na-probs``, on files of unanswerable
questions, gold texts that normalise to nothing, whitespace predictions and tied no-answer probabilities."""

import collections
import json
import random
import re
import string

import pytest

from bio_mrc.cli import main

CONTEXT = "the cat and a dog. blue Cat. Éclair über 1,000 the dog!"
GOLD_TEXTS = ["cat", "the", "a dog", "blue Cat.", "Éclair", "1,000", "the dog!", "."]
WORDS = ["the", "a", "An", "cat", "Cat.", "dog", "", " ", ".", "blue", "a cat", "the dog!", "Éclair", "über", "1,000"]


def official_normalize(s):
    s = "".join(ch for ch in s.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(re.compile(r"\b(a|an|the)\b", re.UNICODE), " ", s).split())


def official_f1(gold, pred):
    gold_toks = official_normalize(gold).split() if gold else []
    pred_toks = official_normalize(pred).split() if pred else []
    num_same = sum((collections.Counter(gold_toks) & collections.Counter(pred_toks)).values())
    if not gold_toks or not pred_toks:
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision, recall = num_same / len(pred_toks), num_same / len(gold_toks)
    return 2 * precision * recall / (precision + recall)


def official_best(preds, scores, na_probs, has_ans):
    cur = best = sum(1 for k in has_ans if not has_ans[k])
    thresh = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in scores:
            continue
        cur += scores[qid] if has_ans[qid] else (-1 if preds[qid] else 0)
        if cur > best:
            best, thresh = cur, na_probs[qid]
    return 100.0 * best / len(scores), thresh


def official_v2(qas, preds, na_probs=None):
    """``evaluate-v2.0.py``'s main, its default ``--na-prob-thresh`` of 1.0, on one paragraph's questions."""
    probs = na_probs if na_probs is not None else {k: 0.0 for k in preds}
    has_ans = {qa["id"]: bool(qa["answers"]) for qa in qas}
    exact, f1 = {}, {}
    for qa in qas:
        golds = [a["text"] for a in qa["answers"] if official_normalize(a["text"])] or [""]
        exact[qa["id"]] = max(int(official_normalize(g) == official_normalize(preds[qa["id"]])) for g in golds)
        f1[qa["id"]] = max(official_f1(g, preds[qa["id"]]) for g in golds)
    cut = [{q: (float(not has_ans[q]) if probs[q] > 1.0 else s) for q, s in raw.items()} for raw in (exact, f1)]
    out = {}
    for prefix, ids in (("", list(has_ans)), ("HasAns_", [k for k in has_ans if has_ans[k]]),
                        ("NoAns_", [k for k in has_ans if not has_ans[k]])):
        if ids:
            out.update({f"{prefix}exact": 100.0 * sum(cut[0][k] for k in ids) / len(ids),
                        f"{prefix}f1": 100.0 * sum(cut[1][k] for k in ids) / len(ids), f"{prefix}total": len(ids)})
    if na_probs is not None:
        out["best_exact"], out["best_exact_thresh"] = official_best(preds, exact, na_probs, has_ans)
        out["best_f1"], out["best_f1_thresh"] = official_best(preds, f1, na_probs, has_ans)
    return out


def made_up_files(seed, folder):
    rng = random.Random(seed)
    qas, preds, na_probs = [], {}, {}
    for i in range(rng.randint(1, 8)):
        texts = [rng.choice(GOLD_TEXTS) for _ in range(rng.randint(1, 3))] if rng.random() < 0.6 else []
        qas.append({"id": f"q{i}", "question": "what?", "is_impossible": not texts,
                    "answers": [{"text": t, "answer_start": CONTEXT.find(t)} for t in texts]})
        preds[f"q{i}"] = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 3)))
        na_probs[f"q{i}"] = rng.choice([0.0, 0.5, 0.5, 1.0, 1.5, -2.0, 3, rng.random()])  # ties, and other scales
    order = list(na_probs)
    rng.shuffle(order)  # the tie order is the na_probs file's
    na_probs = {k: na_probs[k] for k in order}
    files = {"data": {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": CONTEXT, "qas": qas}]}]},
             "preds": preds, "na": na_probs}
    for name, value in files.items():
        (folder / f"{name}.json").write_text(json.dumps(value), encoding="utf-8")
    return qas, preds, na_probs


@pytest.mark.parametrize("seed", range(30))
def test_evaluate_agrees_with_the_official_v2_script(tmp_path, capsys, seed):
    qas, preds, na_probs = made_up_files(seed, tmp_path)
    for options, probs in (([], None), (["--na-probs", str(tmp_path / "na.json")], na_probs)):
        capsys.readouterr()
        assert main(["evaluate", "--data", str(tmp_path / "data.json"), "--predictions", str(tmp_path / "preds.json"),
                     *options]) == 0
        assert json.loads(capsys.readouterr().out) == official_v2(qas, preds, probs)
