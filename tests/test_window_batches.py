"""Training batches read as one Arrow table per batch pad exactly as rows read one by one."""

import numpy as np
import pytest
import torch

from bio_mrc.features.collate import WindowBatches, WindowCollator
from bio_mrc.features.targets import MISSING_ANNOTATOR
from bio_mrc.features.windows import FeatureConfig, build_features
from bio_mrc.types import Example

DECODING_COLUMNS = ["offset_mapping", "word_offsets", "example_index", "answer_in_window"]
CONTEXT = "the normans came from normandy in france . they spoke french and lived by the sea ."


def several_annotators():
    """Questions with one, two and three annotators, so (seq, K) tag columns have different K across windows."""
    return [
        Example("two", "where from ?", CONTEXT, (((22, 40),), ((34, 40),))),
        Example("one", "who ?", CONTEXT, (((4, 11),),)),
        Example("three", "what language ?", CONTEXT, (((50, 56),), ((43, 56),), ((50, 56),))),
        Example("none", "why ?", CONTEXT, ()),
    ]


def windows(examples, tokenizer, config):
    return build_features(examples, tokenizer, config).remove_columns(DECODING_COLUMNS)


def assert_same_batches(features, collator, index_sets):
    batches = WindowBatches(features)
    for indices in index_sets:
        by_rows = collator([features[i] for i in indices])
        by_table = collator(batches.__getitems__(indices))
        assert list(by_rows) == list(by_table)
        for key in by_rows:
            assert by_rows[key].dtype == by_table[key].dtype, key
            assert torch.equal(by_rows[key], by_table[key]), key


@pytest.mark.parametrize("config", [
    FeatureConfig(40, 12, 10, "soft", "one-hot", "subword"),
    FeatureConfig(64, 16, 16, "soft", "soft", "word"),  # start/end as distributions over positions
    FeatureConfig(64, 16, 16, "marginal", "one-hot", "word"),  # (seq, K) integer tags, K varying
    FeatureConfig(48, 16, 12, "one-hot", "one-hot", "subword"),
])
def test_table_batches_equal_row_batches(sample_v1, tiny_tokenizer, config):
    examples = [*sample_v1.examples, *several_annotators()]
    features = windows(examples, tiny_tokenizer, config)
    rng = np.random.default_rng(0)
    index_sets = [rng.choice(len(features), size=min(5, len(features)), replace=False).tolist() for _ in range(8)]
    assert_same_batches(features, WindowCollator(pad_token_id=3), [*index_sets, list(range(len(features)))])


def test_marginal_tags_of_different_annotator_counts_pad_with_missing(tiny_tokenizer):
    features = windows(several_annotators(), tiny_tokenizer, FeatureConfig(64, 16, 16, "marginal", "one-hot", "word"))
    batch = WindowCollator()(WindowBatches(features).__getitems__([0, 1, 2]))
    tags = batch["bio_targets"]
    assert tags.shape[:2] == batch["input_ids"].shape and tags.shape[2] == 3 and tags.dtype == torch.long
    assert (tags[1, :, 1:] == MISSING_ANNOTATOR).all()  # the one-annotator question's window


def test_width_is_the_longest_window_rounded_up_to_eight(sample_v1, tiny_tokenizer):
    features = windows(sample_v1.examples, tiny_tokenizer, FeatureConfig(40, 12, 10, "soft", "one-hot", "subword"))
    batches = WindowBatches(features)
    lengths = batches.lengths
    assert lengths == [len(row["input_ids"]) for row in features]
    shortest = int(np.argmin(lengths))
    batch = WindowCollator()(batches.__getitems__([shortest]))
    assert batch["input_ids"].shape[1] == -(-lengths[shortest] // 8) * 8
    assert (batch["attention_mask"][0, lengths[shortest]:] == 0).all()
    assert len(batches) == len(features) and batches[shortest] == features[shortest]


def test_the_trainer_groups_by_the_arrow_lengths_in_the_order_rows_gave(sample_v1, tiny_tokenizer, tmp_path):
    from transformers import TrainingArguments

    from bio_mrc.training.trainer import EpochSeededLengthGroupedSampler, HeadRateTrainer

    features = windows(sample_v1.examples, tiny_tokenizer, FeatureConfig(40, 12, 10, "soft", "one-hot", "subword"))
    args = TrainingArguments(str(tmp_path), per_device_train_batch_size=4, train_sampling_strategy="group_by_length",
                             report_to="none", use_cpu=True, seed=7)
    model = torch.nn.Linear(1, 1)
    by_table = HeadRateTrainer(model=model, args=args, train_dataset=WindowBatches(features))._get_train_sampler()
    by_rows = HeadRateTrainer(model=model, args=args, train_dataset=features)._get_train_sampler()
    assert type(by_table) is EpochSeededLengthGroupedSampler and type(by_rows) is EpochSeededLengthGroupedSampler
    for epoch in (0, 1):
        by_table.set_epoch(epoch), by_rows.set_epoch(epoch)
        assert list(by_table) == list(by_rows)


def test_batches_are_read_by_workers_on_a_gpu_and_in_the_training_process_on_a_cpu():
    from bio_mrc.training.trainer import GPU_LOADER_WORKERS, _loading_arguments

    assert _loading_arguments("cpu") == {"dataloader_num_workers": 0, "dataloader_pin_memory": False}
    gpu = _loading_arguments("cuda")
    assert 1 <= gpu["dataloader_num_workers"] <= GPU_LOADER_WORKERS and gpu["dataloader_pin_memory"]
    assert gpu["logging_nan_inf_filter"] is False  # no GPU sync each step
    assert_training_arguments_accept(gpu)


def assert_training_arguments_accept(values):
    from transformers import TrainingArguments

    TrainingArguments("unused", report_to="none", use_cpu=True, **{k: v for k, v in values.items() if k != "dataloader_pin_memory"})


def test_integer_tags_of_one_annotator_pad_alike_from_rows_and_from_a_table():
    # (seq,) integer tags, which BIOHead takes as (batch, seq): padded to 8 with MISSING_ANNOTATOR either way.
    import pyarrow as pa

    rows = [{"input_ids": [5, 6, 7], "bio_targets": [2, 0, 1]}, {"input_ids": [5, 6], "bio_targets": [2, 2]}]
    expected = torch.tensor([[2, 0, 1, *[MISSING_ANNOTATOR] * 5], [2, 2, *[MISSING_ANNOTATOR] * 6]])
    for batch in (WindowCollator()(rows), WindowCollator()(pa.Table.from_pylist(rows))):
        assert torch.equal(batch["bio_targets"], expected) and batch["bio_targets"].dtype == torch.long


@pytest.mark.parametrize("position, attended, refused", [
    (3, [1, 1, 1, 1], False), (-100, [1, 1, 1, 1], False),  # the last token; no label
    (4, [1, 1, 1, 1], True),  # padding once the batch is 8 wide: scored against a logit masked to the float's least
    (9, [1, 1, 1, 1], True),  # past the batch's width
    (3, [1, 1, 1, 0], True),  # a token the window's own mask leaves out
])
def test_a_gold_position_the_window_does_not_attend_to_is_refused_from_rows_and_from_a_table(position, attended, refused):
    """A span head's loss on such a batch was about 1.7e38 (or an index error past the width), finite and silent."""
    from bio_mrc.errors import DataFormatError

    rows = [{"input_ids": [5, 6, 7, 8], "attention_mask": attended, "start_positions": 1, "end_positions": position},
            {"input_ids": [5, 6, 7, 8, 9, 10], "attention_mask": [1] * 6, "start_positions": 2, "end_positions": 2}]
    import datasets

    table = WindowBatches(datasets.Dataset.from_list(rows)).__getitems__([0, 1])
    for batch in (rows, table):
        if refused:
            with pytest.raises(DataFormatError, match=rf"^end_positions {position} of the batch's window 0 is no token"):
                WindowCollator()(batch)
        else:
            assert WindowCollator()(batch)["end_positions"].tolist() == [position, 2]


def test_loader_workers_are_counted_from_the_cores_where_no_affinity_call_exists(monkeypatch):
    # macOS and Windows have no os.sched_getaffinity: the count is os.cpu_count()'s, one worker for two cores
    from bio_mrc import cpu_budget
    from bio_mrc.training import trainer

    monkeypatch.delattr(cpu_budget.os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(cpu_budget, "cgroup_quota", lambda: None)  # no quota (the CPU quota's own: tests/test_cpu_budget.py)
    counts = {}
    for cores in (None, 1, 6, 64):
        monkeypatch.setattr(cpu_budget.os, "cpu_count", lambda n=cores: n)
        counts[cores] = trainer._loading_arguments("cuda")["dataloader_num_workers"]
    assert counts == {None: 1, 1: 1, 6: 3, 64: trainer.GPU_LOADER_WORKERS}


def test_windows_and_collator_survive_pickling_as_spawned_workers_receive_them(sample_v1, tiny_tokenizer):
    import pickle

    features = windows(sample_v1.examples, tiny_tokenizer, FeatureConfig(40, 12, 10, "soft", "one-hot", "subword"))
    batches, collator = WindowBatches(features), WindowCollator(pad_token_id=3)
    copied, copied_collator = pickle.loads(pickle.dumps((batches, collator)))
    indices = list(range(len(features)))
    assert copied.lengths == batches.lengths
    by_original, by_copy = collator(batches.__getitems__(indices)), copied_collator(copied.__getitems__(indices))
    assert list(by_original) == list(by_copy) and all(torch.equal(by_original[k], by_copy[k]) for k in by_original)


@pytest.mark.slow  # each spawned worker imports torch and the package
def test_spawned_loader_workers_give_the_batches_the_training_process_reads(sample_v1, tiny_tokenizer):
    # macOS and Windows start worker processes by spawning: what they read arrives pickled, with no forked memory
    from torch.utils.data import DataLoader

    features = windows(sample_v1.examples, tiny_tokenizer, FeatureConfig(40, 12, 10, "soft", "one-hot", "subword"))
    batches, collator = WindowBatches(features), WindowCollator(pad_token_id=3)
    alone = list(DataLoader(batches, batch_size=4, collate_fn=collator))
    spawned = list(DataLoader(batches, batch_size=4, collate_fn=collator, num_workers=2, multiprocessing_context="spawn"))
    assert len(spawned) == len(alone) > 1
    for a, b in zip(alone, spawned):
        assert list(a) == list(b) and all(torch.equal(a[key], b[key]) for key in a)
