"""List columns read from Arrow: RaggedColumn pads exactly as the row-by-row lists would."""

import numpy as np
import pytest
from datasets import Dataset

from bio_mrc.features.ragged import RaggedColumn


@pytest.fixture()
def dataset():
    return Dataset.from_dict({
        "ids": [[5, 6, 7], [8], [], [9, 10]],
        "offsets": [[[0, 2], [3, 4], [5, 9]], [[1, 1]], [], [[7, 8], [8, 12]]],
        "scalar": [1, 2, 3, 4],
    })


def test_pads_every_row_with_the_fill(dataset):
    column = RaggedColumn.from_dataset(dataset, "ids")
    assert column.lengths.tolist() == [3, 1, 0, 2]
    expected = [[5, 6, 7], [8, -1, -1], [-1, -1, -1], [9, 10, -1]]
    assert column.padded(fill=-1).tolist() == expected


def test_pads_chosen_rows_to_their_longest_or_a_given_width(dataset):
    column = RaggedColumn.from_dataset(dataset, "ids")
    assert column.padded(rows=[3, 1]).tolist() == [[9, 10], [8, 0]]
    assert column.padded(rows=[1], width=3, dtype=np.int64).dtype == np.int64
    assert column.padded(rows=[0], width=2).tolist() == [[5, 6]]  # a narrower width cuts


def test_fixed_length_items_keep_their_shape(dataset):
    offsets = RaggedColumn.from_dataset(dataset, "offsets").padded(fill=-1)
    assert offsets.shape == (4, 3, 2)
    assert offsets[1].tolist() == [[1, 1], [-1, -1], [-1, -1]]
    assert offsets[3].tolist() == [[7, 8], [8, 12], [-1, -1]]


def test_follows_a_selection_and_a_shuffle(dataset):
    chosen = dataset.select([3, 0]).shuffle(seed=1).flatten_indices().select([1, 0])
    column = RaggedColumn.from_dataset(chosen, "ids")
    rows = [row["ids"] for row in chosen]
    assert [r[: n].tolist() for r, n in zip(column.padded(), column.lengths)] == rows


def test_the_same_as_rows_read_one_by_one_on_real_windows(sample_v1, tiny_tokenizer):
    from bio_mrc.features.windows import FeatureConfig, build_features

    features = build_features(sample_v1.examples, tiny_tokenizer, FeatureConfig(48, 16, 12))
    features = features.select(range(len(features) - 1, 1, -1))  # a selection, in reverse
    for name, fill in (("input_ids", 0), ("offset_mapping", -1), ("tag_mask", 0)):
        padded = RaggedColumn.from_dataset(features, name).padded(fill=fill)
        for i, row in enumerate(features[name]):
            assert padded[i, : len(row)].tolist() == row
            assert (padded[i, len(row):] == fill).all()


def test_refuses_a_column_that_is_not_a_list(dataset):
    with pytest.raises(TypeError, match="'scalar' is not a list column"):
        RaggedColumn.from_dataset(dataset, "scalar")


def test_several_columns_read_at_once_are_each_read_alone(dataset):
    chosen = dataset.select([3, 0, 2])
    columns = RaggedColumn.columns_of(chosen, ["ids", "offsets"])
    assert list(columns) == ["ids", "offsets"]
    for name, column in columns.items():
        alone = RaggedColumn.from_dataset(chosen, name)
        assert column.lengths.tolist() == alone.lengths.tolist()
        assert column.padded(fill=-1).tolist() == alone.padded(fill=-1).tolist()
    assert columns["ids"].padded(fill=-1).tolist() == [[9, 10, -1], [5, 6, 7], [-1, -1, -1]]
    with pytest.raises(TypeError, match="'scalar' is not a list column"):
        RaggedColumn.columns_of(chosen, ["ids", "scalar"])
