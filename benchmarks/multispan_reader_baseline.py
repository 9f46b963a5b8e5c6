"""The multi-span reader's single-span check: the SQuAD model *before* multi-span training on the evaluation's
questions whose gold answer is one span, scored as the reader's report scores them (SQuAD v1.1 F1 of the spans
each multi-span decoding gives, joined), so the report's per-data-set "single-span questions" column can be
compared with the model the cross-validation started from (a reader must not start splitting one-span answers).

    python benchmarks/multispan_reader_baseline.py --config benchmarks/ablations/multispan_reader_cpu_reduced.json \\
        [--data-dir ../shared/data] [--output baseline.json]

The model is the config's ``init_from``; the questions are its evaluation's (``eval`` and ``eval_also``), the same
ones in the same order. The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bio_mrc.answer_text import normalize_answer
from bio_mrc.data.squad import gold_texts
from bio_mrc.data.sources import default_data_dir
from bio_mrc.harness.compare import resolve_splits
from bio_mrc.harness.config import load_config
from bio_mrc.harness.models import resolve_init_from
from bio_mrc.inference import AnswerExtractor, TrainedModel
from bio_mrc.metrics.squad_official import per_question_scores


def single_span_scores(extractor: AnswerExtractor, examples) -> dict[str, dict[str, float]]:
    """Per decoding, SQuAD F1 and EM of the joined multi-span answer on the one-span questions of ``examples``,
    and the share of those questions answered with more than one text (normalised as the metrics normalise it:
    the mentions of one text are one answer)."""
    chosen = [ex for ex in examples if len(ex.answers) == 1 and len(ex.answers[0]) == 1]
    if not chosen:
        return {}
    outputs = extractor.trained.windows(chosen, progress=True)
    gold, ids = gold_texts(chosen), [ex.id for ex in chosen]
    scores = {}
    for decoding in extractor.trained.decodings:
        predictions = extractor.predict(outputs, chosen, multi_span=True, decoding=decoding)
        em, f1 = per_question_scores(gold, {p.id: " ".join(p.answers) for p in predictions}, ids, "1.1")
        split = sum(len({normalize_answer(text) for text in p.answers}) > 1 for p in predictions) / len(predictions)
        scores[decoding] = {"questions": len(ids), "f1": float(f1.mean()), "em": float(em.mean()), "split_share": split}
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--output")
    args = parser.parse_args()
    config = load_config(args.config)
    splits = resolve_splits(config, Path(args.data_dir) if args.data_dir else default_data_dir())
    model_dir = resolve_init_from(config.runs[0].train.init_from)
    extractor = AnswerExtractor(TrainedModel.load(model_dir), decode_config=config.decode)
    parts = splits.eval.parts or [splits.eval]
    result = {"model": str(model_dir), "data_sets": [
        {"description": part.description, "single_span": single_span_scores(extractor, part.examples)} for part in parts]}
    if args.output:
        Path(args.output).write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
