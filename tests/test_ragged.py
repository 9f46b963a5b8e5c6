"""List columns read from Arrow: RaggedColumn pads exactly as the row-by-row lists would, and columns built in numpy
(an answer's windows, a WindowTable) read as the Arrow ones."""

import numpy as np
import pytest
from datasets import Dataset

from bio_mrc.features.ragged import RaggedColumn, arrow_list_column, ragged_column
from bio_mrc.features.window_table import WindowTable


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


@pytest.mark.parametrize("rows, dtype, width", [
    ([[5, 6, 7], [8], [], [9, 10]], np.int32, None),
    ([np.array([1, 0, 1], dtype=np.int64), np.array([], dtype=np.int64)], np.int8, None),
    ([np.array([[0, 2], [3, 4]]), np.zeros((0, 2), dtype=np.int64), np.array([[7, 8]])], np.int64, 2),
    ([], np.int64, None),
])
def test_a_column_built_in_numpy_is_the_arrow_column_read_back(rows, dtype, width):
    """An answer's windows skip Arrow (ragged_column); training's go through it (arrow_list_column, from_arrow): the
    forward pass must read the same values, of the same type, row for row."""
    ours, arrows = ragged_column(rows, dtype, width), RaggedColumn.from_arrow(arrow_list_column(rows, dtype, width))
    assert ours.values.dtype == arrows.values.dtype and len(ours) == len(arrows) == len(rows)
    assert ours.lengths.tolist() == arrows.lengths.tolist() and ours.starts.tolist() == arrows.starts.tolist()
    assert [ours.row(r).tolist() for r in range(len(rows))] == [arrows.row(r).tolist() for r in range(len(rows))]
    if rows:
        assert ours.padded(fill=-1).tolist() == arrows.padded(fill=-1).tolist()


def test_window_tables_joined_read_as_one_and_refuse_what_they_do_not_hold():
    first = WindowTable({"example_index": np.array([0, 0]), "input_ids": ragged_column([[5, 6], [7]], np.int32)})
    second = WindowTable({"example_index": np.array([1]), "input_ids": ragged_column([[8, 9, 10]], np.int32)})
    joined = WindowTable.joined([first, second])
    assert len(joined) == 3 and joined.column_names == ["example_index", "input_ids"]
    assert joined["example_index"].tolist() == [0, 0, 1]
    assert joined.ragged(["input_ids"])["input_ids"].padded(fill=-1).tolist() == [[5, 6, -1], [7, -1, -1], [8, 9, 10]]
    assert len(WindowTable.joined([])) == 0 and WindowTable.joined([first]) is first
    with pytest.raises(TypeError, match="'input_ids' holds a list a window"):
        joined["input_ids"]
    with pytest.raises(TypeError, match=r"\['example_index'\] hold one value a window"):
        joined.ragged(["example_index"])
    with pytest.raises(KeyError, match="no column 'tag_mask'"):
        joined.ragged(["tag_mask"])
    with pytest.raises(ValueError, match="one row a window"):
        WindowTable({"example_index": np.array([0]), "input_ids": ragged_column([[5], [6]], np.int32)})
    with pytest.raises(ValueError, match="different columns"):
        WindowTable.joined([first, WindowTable({"example_index": np.array([2])})])
