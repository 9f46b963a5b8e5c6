"""Property cross-checks of the official metrics against the published scripts' algorithms, written out below on their
own (not the package's code): SQuAD ``evaluate-v1.1.py`` and ``evaluate-v2.0.py`` (raw scores, the no-answer
threshold, ``HasAns``/``NoAns``, the best-threshold search) and MultiSpanQA's ``eval_script.py`` (exact and partial
match over span sets), on hostile texts: empty, blank, punctuation or articles alone, Unicode spaces and punctuation,
case, repeated gold answers, unknown ids, ties and non-finite no-answer probabilities, one question, all answerable
or none. Every number agrees to 1e-9; so does ``evaluate --baseline``'s paired difference with the scores it is of."""

import collections
import difflib
import math
import re
import string

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bio_mrc import registry
from bio_mrc.metrics.multispan_official import multispan_metrics
from bio_mrc.metrics.paired_scores import paired_scores
from bio_mrc.metrics.squad_official import per_question_scores, squad_v1_metrics, squad_v2_metrics

from .conftest import property_examples

PIECES = ["", " ", "\t", "\u00a0", "\u2003", "\u3000", "\u200b", "the", "The", "A", "an", ".", ",", "'", "-", "\u2019",
          "\u201c", "\u2014", "\uff0c", "Paris", "paris", "PARIS", "France", "New", "York", "1,000", "1000", "caf\u00e9",
          "cafe\u0301", "\u0130", "stra\u00dfe", "STRASSE", "a.b", "_", "x" * 210]
TEXT = st.lists(st.sampled_from(PIECES), max_size=4).map(" ".join) | st.lists(st.sampled_from(PIECES), max_size=3).map("".join)
PROBABILITY = st.sampled_from([0.0, 0.5, 1.0, -1.0, 2.0, math.inf, math.nan, 0.25]) | st.floats(0, 1)
SETTINGS = settings(max_examples=property_examples(150), deadline=None)


def normalize(s):
    s = "".join(ch for ch in s.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", s).split())


def v1_question(pred, truths):
    def f1(gold):
        p, g = normalize(pred).split(), normalize(gold).split()
        same = sum((collections.Counter(p) & collections.Counter(g)).values())
        return 0 if same == 0 else 2 * (same / len(p)) * (same / len(g)) / (same / len(p) + same / len(g))
    return max(normalize(pred) == normalize(t) for t in truths), max(f1(t) for t in truths)


def v1_reference(dataset, preds):
    exact = f1 = 0
    for qid, truths in dataset.items():
        if qid in preds:  # an unanswered question counts 0
            e, f = v1_question(preds[qid], truths)
            exact, f1 = exact + e, f1 + f
    return {"exact_match": 100.0 * exact / len(dataset), "f1": 100.0 * f1 / len(dataset)}


def v2_pair(gold, pred):
    g, p = (normalize(gold).split() if gold else []), (normalize(pred).split() if pred else [])
    same = sum((collections.Counter(g) & collections.Counter(p)).values())
    if not g or not p:
        return int(normalize(gold) == normalize(pred)), int(g == p)
    f1 = 0 if same == 0 else 2 * (same / len(p)) * (same / len(g)) / (same / len(p) + same / len(g))
    return int(normalize(gold) == normalize(pred)), f1


def v2_best(preds, scores, na_probs, has_ans):
    score = best = sum(1 for k in has_ans if not has_ans[k])
    threshold = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid in scores:
            score += scores[qid] if has_ans[qid] else (-1 if preds[qid] else 0)
            if score > best:
                best, threshold = score, na_probs[qid]
    return 100.0 * best / len(scores), threshold


def v2_reference(dataset, preds, na_probs=None, thresh=1.0):
    has_ans = {qid: bool(truths) for qid, truths in dataset.items()}
    probs = {k: 0.0 for k in preds} if na_probs is None else na_probs
    raw = {}
    for qid, truths in dataset.items():
        golds = [t for t in truths if normalize(t)] or [""]
        pairs = [v2_pair(g, preds[qid]) for g in golds]
        raw[qid] = (max(e for e, _ in pairs), max(f for _, f in pairs))
    cut = {qid: ((float(not has_ans[qid]),) * 2 if probs[qid] > thresh else s) for qid, s in raw.items()}
    out = {}
    for prefix, ids in (("", list(dataset)), ("HasAns_", [q for q in dataset if has_ans[q]]),
                        ("NoAns_", [q for q in dataset if not has_ans[q]])):
        if ids:
            out.update({f"{prefix}exact": 100.0 * sum(cut[k][0] for k in ids) / len(ids),
                        f"{prefix}f1": 100.0 * sum(cut[k][1] for k in ids) / len(ids), f"{prefix}total": len(ids)})
    if na_probs is not None:
        for i, name in enumerate(("exact", "f1")):
            out[f"best_{name}"], out[f"best_{name}_thresh"] = v2_best(preds, {q: s[i] for q, s in raw.items()},
                                                                       na_probs, has_ans)
    return out


def multispan_reference(golds, preds):
    golds = {k: {normalize(x) for x in v} for k, v in golds.items()}
    preds = {k: {normalize(x) for x in v} for k, v in preds.items()}
    n_gold = n_pred = correct = credit_p = credit_r = 0
    for k, gold in golds.items():
        pred = preds[k]
        n_gold, n_pred = n_gold + max(len(gold), 1), n_pred + max(len(pred), 1)
        correct += 1 if not gold and not pred else len(gold & pred)
        if not gold or not pred or pred == {""}:
            same = 1 if not gold and (not pred or pred == {""}) else 0
            credit_p, credit_r = credit_p + same, credit_r + same
            continue
        lcs = np.array([[difflib.SequenceMatcher(None, g, p).find_longest_match(0, len(g), 0, len(p)).size
                         for p in pred] for g in gold], dtype=float)
        share_p = np.divide(lcs, [[len(p) for p in pred]], out=np.zeros_like(lcs), where=lcs > 0)  # 0 where nothing shared
        share_r = np.divide(lcs, [[len(g)] for g in gold], out=np.zeros_like(lcs), where=lcs > 0)
        credit_p, credit_r = credit_p + share_p.max(axis=0).sum(), credit_r + share_r.max(axis=1).sum()

    def prf(cp, cr):
        p, r = (cp / n_pred if n_pred else 0), (cr / n_gold if n_gold else 0)
        return 100 * p, 100 * r, 100 * (2 * p * r / (p + r) if p + r else 0)
    names = ("em_precision", "em_recall", "em_f1", "pm_precision", "pm_recall", "pm_f1")
    return dict(zip(names, (*prf(correct, correct), *prf(credit_p, credit_r))))


def assert_same(expected, got):
    assert list(expected) == list(got)
    for key, value in expected.items():
        assert (math.isnan(value) and math.isnan(got[key])) or got[key] == pytest.approx(value, abs=1e-9), key


@st.composite
def squad_cases(draw, unanswerable=True):
    n = draw(st.integers(1, 6))
    alternatives = st.integers(0 if unanswerable else 1, 3)
    dataset = {}
    for i in range(n):
        truths = draw(st.lists(TEXT, min_size=draw(alternatives), max_size=3))
        dataset[f"q{i}"] = truths + truths[:1] * draw(st.integers(0, 1))  # a gold answer given twice
    preds = {qid: draw(st.sampled_from(truths) if truths and draw(st.booleans()) else TEXT) for qid, truths in dataset.items()}
    if draw(st.booleans()):
        preds["unknown"] = draw(TEXT)  # an id the data lacks: ignored
    probs = {qid: draw(PROBABILITY) for qid in draw(st.permutations(list(preds)))}  # ties walked in this order
    return dataset, preds, probs


@SETTINGS
@given(squad_cases(), st.sampled_from([1.0, 0.5, 0.0]))
def test_squad_v2_equals_the_official_algorithm(case, thresh):
    dataset, preds, probs = case
    assert_same(v2_reference(dataset, preds), squad_v2_metrics(dataset, preds))
    assert_same(v2_reference(dataset, preds, probs, thresh), squad_v2_metrics(dataset, preds, probs, thresh))
    em, f1 = per_question_scores(dataset, preds, list(dataset), "2.0", probs, thresh)
    expected = v2_reference(dataset, preds, probs, thresh)
    assert (em.mean(), f1.mean()) == pytest.approx((expected["exact"], expected["f1"]), abs=1e-9)


@SETTINGS
@given(squad_cases(unanswerable=False), st.data())
def test_squad_v1_equals_the_official_algorithm(case, data):
    dataset, preds, _ = case
    answered = {qid: pred for qid, pred in preds.items() if data.draw(st.booleans())}
    assert_same(v1_reference(dataset, answered), squad_v1_metrics(dataset, answered))
    em, f1 = per_question_scores(dataset, preds, list(dataset), "1.1")
    expected = v1_reference(dataset, preds)
    assert (em.mean(), f1.mean()) == pytest.approx((expected["exact_match"], expected["f1"]), abs=1e-9)


SPANS = st.lists(TEXT, max_size=3)


@SETTINGS
@given(st.lists(st.tuples(SPANS, SPANS, st.integers(0, 3)), min_size=1, max_size=5))
def test_multispan_equals_the_official_algorithm(questions):
    """Spans repeated, in any order, gold spans among the predicted ones, [""] and [] on either side."""
    gold = {f"q{i}": spans for i, (spans, _, _) in enumerate(questions)}
    preds = {f"q{i}": predicted + gold_spans[:shared][::-1] for i, (gold_spans, predicted, shared) in enumerate(questions)}
    assert_same(multispan_reference(gold, preds), multispan_metrics(gold, preds))


@SETTINGS
@given(squad_cases(), st.data())
def test_the_paired_difference_is_of_the_official_scores(case, data):
    """With each side's no-answer probabilities, new − old of ``exact`` and ``f1`` is the official scores' difference
    (its default threshold of 1 applied on both sides), however the probabilities lie."""
    dataset, new, new_probs = case
    old = {qid: data.draw(TEXT) for qid in new}
    old_probs = {qid: data.draw(PROBABILITY) for qid in new}
    finite = {qid: (p if math.isfinite(p) else 3.0) for qid, p in new_probs.items()}  # files hold finite numbers
    paired = paired_scores(registry.TASKS["squad-v2.0"], dataset, new, old, 20, na_probs=finite, baseline_na_probs=old_probs)
    expected_new, expected_old = v2_reference(dataset, new, finite), v2_reference(dataset, old, old_probs)
    for column, metric in (("em", "exact"), ("f1", "f1")):
        assert paired.differences[column].diff == pytest.approx(expected_new[metric] - expected_old[metric], abs=1e-9)
