"""THE REFERENCE: the Hugging Face extractive-QA recipe, re-implemented for the benchmarks.

Nothing in this module is bio_mrc. It is the common recipe of Hugging Face's
``examples/pytorch/question-answering/run_qa.py`` (with its ``utils_qa.py``) and
the question-answering notebook, written out so that every benchmark in this folder
(``bench_inference.py``, ``bench_training.py``, ``bench_postprocess.py``,
``bench_features.py``) compares bio_mrc against one and the same reference:

* ``reference_load_squad``: the raw SQuAD JSON flattened into a ``datasets.Dataset``
  of questions (the rows ``load_dataset("squad")`` yields);
* ``reference_prepare_train_features``: ``prepare_train_features``, training windows
  with ``truncation="only_second"``, ``max_length``/``stride``, ``padding="max_length"``
  (every window padded to the full length) and start/end token positions of the first
  answer (the ``[CLS]`` index where the window does not hold the whole answer);
* ``reference_prepare_validation_features``: ``prepare_validation_features``, the same
  windows for prediction, with offsets set to ``None`` outside the context;
* ``reference_training_arguments`` / ``reference_trainer``: a plain
  ``AutoModelForQuestionAnswering`` (``BertForQuestionAnswering``: the encoder and one
  ``Linear(H, 2)``) under ``Trainer`` with its defaults: the random sampler, fixed-width
  batches through ``default_data_collator``;
* ``reference_predict``: the forward as ``Trainer.predict`` runs it (file order, fixed
  batches, ``default_data_collator``, ``torch.no_grad()``);
* ``reference_postprocess_qa_predictions``: ``postprocess_qa_predictions``, per window the
  top-20 start x top-20 end logits in Python loops, the n-best list and the files.

The recipe has no ``max_query_length`` (it keeps whole questions) and reads features'
rows through the ``Dataset`` (``features[i]``), as it does in the original.
"""

from __future__ import annotations

import collections
import json
import os
from typing import Any

import datasets
import numpy as np
import torch
from torch.utils.data import DataLoader
from transformers import Trainer, TrainingArguments, default_data_collator

N_BEST = 20
MAX_ANSWER_LENGTH = 30


def reference_load_squad(path: str, limit: int | None) -> datasets.Dataset:
    """Raw SQuAD JSON -> one row per question, as the ``squad`` loading script yields them."""
    with open(path, encoding="utf-8") as handle:
        raw = json.load(handle)
    rows: dict[str, list[Any]] = {"id": [], "title": [], "context": [], "question": [], "answers": []}
    for article in raw["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                if limit is not None and len(rows["id"]) >= limit:
                    break
                rows["id"].append(qa["id"])
                rows["title"].append(article.get("title", ""))
                rows["context"].append(paragraph["context"])
                rows["question"].append(qa["question"])
                rows["answers"].append(
                    {"text": [a["text"] for a in qa["answers"]], "answer_start": [a["answer_start"] for a in qa["answers"]]}
                )
    return datasets.Dataset.from_dict(rows)


def _reference_windows(examples, tokenizer, max_length: int, doc_stride: int):
    """The recipe's tokenisation, shared by its two feature functions: question and context as a pair, the
    context cut into overlapping windows of ``max_length``, each padded to it."""
    pad_on_right = tokenizer.padding_side == "right"
    examples["question"] = [q.lstrip() for q in examples["question"]]
    tokenized = tokenizer(
        examples["question" if pad_on_right else "context"],
        examples["context" if pad_on_right else "question"],
        truncation="only_second" if pad_on_right else "only_first",
        max_length=max_length,
        stride=doc_stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding="max_length",
    )
    return tokenized, pad_on_right


def reference_prepare_validation_features(examples, tokenizer, max_length: int, doc_stride: int):
    """``prepare_validation_features`` of the recipe: every window padded to ``max_length``."""
    tokenized, pad_on_right = _reference_windows(examples, tokenizer, max_length, doc_stride)
    sample_mapping = tokenized.pop("overflow_to_sample_mapping")
    tokenized["example_id"] = []
    for i in range(len(tokenized["input_ids"])):
        sequence_ids = tokenized.sequence_ids(i)
        context_index = 1 if pad_on_right else 0
        tokenized["example_id"].append(examples["id"][sample_mapping[i]])
        tokenized["offset_mapping"][i] = [
            (o if sequence_ids[k] == context_index else None) for k, o in enumerate(tokenized["offset_mapping"][i])
        ]
    return tokenized


def reference_prepare_train_features(examples, tokenizer, max_length: int, doc_stride: int):
    """``prepare_train_features`` of the recipe: every window padded to ``max_length``; start/end
    token positions of the first answer, or the ``[CLS]`` index when the window lacks part of it."""
    tokenized, pad_on_right = _reference_windows(examples, tokenizer, max_length, doc_stride)
    sample_mapping = tokenized.pop("overflow_to_sample_mapping")
    offset_mapping = tokenized.pop("offset_mapping")
    tokenized["start_positions"] = []
    tokenized["end_positions"] = []
    for i, offsets in enumerate(offset_mapping):
        input_ids = tokenized["input_ids"][i]
        cls_index = input_ids.index(tokenizer.cls_token_id)
        sequence_ids = tokenized.sequence_ids(i)
        answers = examples["answers"][sample_mapping[i]]
        if len(answers["answer_start"]) == 0:
            tokenized["start_positions"].append(cls_index)
            tokenized["end_positions"].append(cls_index)
            continue
        start_char = answers["answer_start"][0]
        end_char = start_char + len(answers["text"][0])
        token_start_index = 0
        while sequence_ids[token_start_index] != (1 if pad_on_right else 0):
            token_start_index += 1
        token_end_index = len(input_ids) - 1
        while sequence_ids[token_end_index] != (1 if pad_on_right else 0):
            token_end_index -= 1
        if not (offsets[token_start_index][0] <= start_char and offsets[token_end_index][1] >= end_char):
            tokenized["start_positions"].append(cls_index)
            tokenized["end_positions"].append(cls_index)
        else:
            while token_start_index < len(offsets) and offsets[token_start_index][0] <= start_char:
                token_start_index += 1
            tokenized["start_positions"].append(token_start_index - 1)
            while offsets[token_end_index][1] >= end_char:
                token_end_index -= 1
            tokenized["end_positions"].append(token_end_index + 1)
    return tokenized


def reference_train_features(examples: datasets.Dataset, tokenizer, max_length: int, doc_stride: int,
                             batch_size: int = 1000) -> datasets.Dataset:
    """The recipe's ``train_dataset.map(prepare_train_features, batched=True, remove_columns=...)``."""
    return examples.map(
        reference_prepare_train_features, batched=True, batch_size=batch_size, remove_columns=examples.column_names,
        fn_kwargs={"tokenizer": tokenizer, "max_length": max_length, "doc_stride": doc_stride},
    )


def reference_training_arguments(output_dir: str, batch_size: int = 16, learning_rate: float = 3e-5, seed: int = 42,
                                 **overrides: Any) -> TrainingArguments:
    """The recipe's ``TrainingArguments``: Trainer's defaults (random sampler, no length grouping) with
    the batch size, learning rate and seed set; nothing logged to outside services, no checkpoints."""
    options = dict(
        output_dir=output_dir, per_device_train_batch_size=batch_size, learning_rate=learning_rate, seed=seed,
        report_to="none", save_strategy="no", disable_tqdm=True,
    )
    options.update(overrides)
    return TrainingArguments(**options)


def reference_trainer(model, args: TrainingArguments, train_features: datasets.Dataset, tokenizer=None,
                      callbacks=None) -> Trainer:
    """``Trainer(model, args, train_dataset, data_collator=default_data_collator, tokenizer)``: the
    default ``RandomSampler``, every batch ``default_data_collator``-stacked at the padded width."""
    return Trainer(
        model=model, args=args, train_dataset=train_features, data_collator=default_data_collator,
        processing_class=tokenizer, callbacks=list(callbacks or []),
    )


@torch.no_grad()
def reference_predict(model, features: datasets.Dataset, batch_size: int, precision: str = "fp32") -> tuple[np.ndarray, np.ndarray]:
    """``Trainer.predict``: unused columns removed, sequential batches, ``torch.no_grad()``, each batch on the model's
    device; ``precision`` bf16 is the recipe run with ``--bf16`` (autocast), fp32 its default."""
    model.eval()
    inputs = features.remove_columns([c for c in features.column_names if c not in ("input_ids", "attention_mask", "token_type_ids")])
    loader = DataLoader(inputs, batch_size=batch_size, shuffle=False, collate_fn=default_data_collator)
    starts, ends = [], []
    for batch in loader:
        with torch.autocast(device_type=model.device.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
            out = model(**{name: tensor.to(model.device) for name, tensor in batch.items()})
        starts.append(out.start_logits.float().cpu().numpy())
        ends.append(out.end_logits.float().cpu().numpy())
    return np.concatenate(starts), np.concatenate(ends)


def reference_postprocess_qa_predictions(
    examples, features, predictions, version_2_with_negative=False, n_best_size=N_BEST,
    max_answer_length=MAX_ANSWER_LENGTH, null_score_diff_threshold=0.0, output_dir=None,
):
    """``postprocess_qa_predictions`` of the recipe (utils_qa.py), loops and all."""
    all_start_logits, all_end_logits = predictions
    example_id_to_index = {k: i for i, k in enumerate(examples["id"])}
    features_per_example = collections.defaultdict(list)
    for i, feature in enumerate(features):
        features_per_example[example_id_to_index[feature["example_id"]]].append(i)
    all_predictions = collections.OrderedDict()
    all_nbest_json = collections.OrderedDict()
    scores_diff_json = collections.OrderedDict()
    for example_index, example in enumerate(examples):
        feature_indices = features_per_example[example_index]
        min_null_prediction = None
        prelim_predictions = []
        for feature_index in feature_indices:
            start_logits = all_start_logits[feature_index]
            end_logits = all_end_logits[feature_index]
            offset_mapping = features[feature_index]["offset_mapping"]
            token_is_max_context = features[feature_index].get("token_is_max_context", None)
            feature_null_score = start_logits[0] + end_logits[0]
            if min_null_prediction is None or min_null_prediction["score"] > feature_null_score:
                min_null_prediction = {
                    "offsets": (0, 0), "score": feature_null_score,
                    "start_logit": start_logits[0], "end_logit": end_logits[0],
                }
            prelim_predictions += _reference_window_candidates(
                start_logits, end_logits, offset_mapping, token_is_max_context, n_best_size, max_answer_length)
        if version_2_with_negative and min_null_prediction is not None:
            prelim_predictions.append(min_null_prediction)
            null_score = min_null_prediction["score"]
        predictions_ = _reference_nbest(prelim_predictions, min_null_prediction, example["context"],
                                        version_2_with_negative, n_best_size)
        if not version_2_with_negative:
            all_predictions[example["id"]] = predictions_[0]["text"]
        else:
            i = 0
            while predictions_[i]["text"] == "":
                i += 1
            best_non_null_pred = predictions_[i]
            score_diff = null_score - best_non_null_pred["start_logit"] - best_non_null_pred["end_logit"]
            scores_diff_json[example["id"]] = float(score_diff)
            all_predictions[example["id"]] = "" if score_diff > null_score_diff_threshold else best_non_null_pred["text"]
        all_nbest_json[example["id"]] = [
            {k: (float(v) if isinstance(v, (np.float16, np.float32, np.float64)) else v) for k, v in pred.items()}
            for pred in predictions_
        ]
    if output_dir is not None:
        _write_reference_files(output_dir, all_predictions, all_nbest_json, scores_diff_json if version_2_with_negative else None)
    return all_predictions


def _reference_nbest(prelim_predictions, min_null_prediction, context, version_2_with_negative, n_best_size):
    """One example's n-best list as the recipe builds it: the ``n_best_size`` best candidates (the null one added for
    SQuAD 2.0 where they lack it), each given its text and its softmax probability over the list."""
    predictions = sorted(prelim_predictions, key=lambda x: x["score"], reverse=True)[:n_best_size]
    if version_2_with_negative and min_null_prediction is not None and not any(p["offsets"] == (0, 0) for p in predictions):
        predictions.append(min_null_prediction)
    for pred in predictions:
        offsets = pred.pop("offsets")
        pred["text"] = context[offsets[0] : offsets[1]]
    if len(predictions) == 0 or (len(predictions) == 1 and predictions[0]["text"] == ""):
        predictions.insert(0, {"text": "empty", "start_logit": 0.0, "end_logit": 0.0, "score": 0.0})
    scores = np.array([pred.pop("score") for pred in predictions])
    exp_scores = np.exp(scores - np.max(scores))
    probs = exp_scores / exp_scores.sum()
    for prob, pred in zip(probs, predictions):
        pred["probability"] = prob
    return predictions


def _reference_window_candidates(start_logits, end_logits, offset_mapping, token_is_max_context, n_best_size, max_answer_length):
    """One window's candidate spans: the top-``n_best_size`` starts x ends, checked as the recipe checks them."""
    prelim_predictions = []
    start_indexes = np.argsort(start_logits)[-1 : -n_best_size - 1 : -1].tolist()
    end_indexes = np.argsort(end_logits)[-1 : -n_best_size - 1 : -1].tolist()
    for start_index in start_indexes:
        for end_index in end_indexes:
            if (
                start_index >= len(offset_mapping)
                or end_index >= len(offset_mapping)
                or offset_mapping[start_index] is None
                or len(offset_mapping[start_index]) < 2
                or offset_mapping[end_index] is None
                or len(offset_mapping[end_index]) < 2
            ):
                continue
            if end_index < start_index or end_index - start_index + 1 > max_answer_length:
                continue
            if token_is_max_context is not None and not token_is_max_context.get(str(start_index), False):
                continue
            prelim_predictions.append({
                "offsets": (offset_mapping[start_index][0], offset_mapping[end_index][1]),
                "score": start_logits[start_index] + end_logits[end_index],
                "start_logit": start_logits[start_index],
                "end_logit": end_logits[end_index],
            })
    return prelim_predictions


def _write_reference_files(output_dir, all_predictions, all_nbest_json, scores_diff_json):
    """The recipe's prediction files (``null_odds.json`` only for SQuAD 2.0)."""
    with open(os.path.join(output_dir, "predictions.json"), "w") as writer:
        writer.write(json.dumps(all_predictions, indent=4) + "\n")
    with open(os.path.join(output_dir, "nbest_predictions.json"), "w") as writer:
        writer.write(json.dumps(all_nbest_json, indent=4) + "\n")
    if scores_diff_json is not None:
        with open(os.path.join(output_dir, "null_odds.json"), "w") as writer:
            writer.write(json.dumps(scores_diff_json, indent=4) + "\n")
