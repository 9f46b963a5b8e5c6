"""The checks of a model's weight values on load: NaN and infinity found in any floating tensor, in any dtype and place,
as ``isfinite(...).all()`` finds them, and the magnitude of each tensor as ``abs().max()`` reads it."""

import pytest
import torch

from bio_mrc.errors import ModelFormatError
from bio_mrc.model import MAX_WEIGHT_MAGNITUDE, check_weight_values, non_finite_weights, value_range

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", [1, 2, 31, 4099, 1_000_003])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_non_finite_value_anywhere_is_found_as_isfinite_finds_it(dtype, size, bad):
    generator = torch.Generator().manual_seed(size)
    for place in sorted({0, size // 2, size - 1}):
        values = torch.randn(size, generator=generator).to(dtype)
        values[place] = bad
        low, high = value_range(values)
        assert not (torch.isfinite(torch.tensor([low, high])).all())
        assert bool(torch.isfinite(values).all()) is False


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_range_of_finite_values_is_their_least_and_greatest(dtype):
    values = (torch.randn(257, 33, generator=torch.Generator().manual_seed(1)) * 50).to(dtype).t()  # not contiguous
    low, high = value_range(values)
    assert (low, high) == (float(values.min()), float(values.max()))
    assert max(map(abs, (low, high))) == float(values.abs().max())


def test_an_empty_tensor_has_a_finite_range():
    assert value_range(torch.empty(0)) == (0.0, 0.0)
    assert value_range(torch.empty(3, 0, dtype=torch.bfloat16)) == (0.0, 0.0)


class _Weights(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = torch.nn.Linear(4, 3)
        self.empty = torch.nn.Parameter(torch.empty(0))
        self.register_buffer("counts", torch.arange(5))  # not floating: never read
        self.register_buffer("scale", torch.ones(3, dtype=torch.bfloat16))


def test_each_tensor_holding_nan_or_infinity_is_named_in_order():
    model = _Weights()
    assert non_finite_weights(model) == []
    with torch.no_grad():
        model.first.bias[1] = float("inf")
        model.scale[2] = float("nan")
    assert non_finite_weights(model) == ["first.bias", "scale"]
    with pytest.raises(ModelFormatError, match=r"NaN or infinite values \(first\.bias, scale\)"):
        check_weight_values(model, "here")


def test_a_value_past_the_magnitude_no_encoder_holds_is_refused_and_one_at_it_is_kept():
    model = _Weights()
    with torch.no_grad():
        model.first.weight[2, 3] = -MAX_WEIGHT_MAGNITUDE
    check_weight_values(model, "here")
    with torch.no_grad():
        model.first.weight[2, 3] = -2 * MAX_WEIGHT_MAGNITUDE
    with pytest.raises(ModelFormatError, match=r"beyond ±1e\+06 \(first\.weight\)"):
        check_weight_values(model, "here")


class _Tied(_Weights):
    def __init__(self) -> None:
        super().__init__()
        self.second = torch.nn.Linear(4, 3)
        self.second.weight = self.first.weight  # one tensor under two names


def test_each_tensor_is_reduced_once_for_both_checks(monkeypatch):
    """check_weight_values reduced every tensor twice, once for NaN and infinity and once for its magnitude; one
    reduction answers both, the names in each refusal as before: a tied tensor once, however many names it has."""
    model, reductions, aminmax = _Tied(), [], torch.aminmax
    monkeypatch.setattr(torch, "aminmax", lambda tensor: reductions.append(tensor.shape) or aminmax(tensor))
    check_weight_values(model, "here")
    assert sorted(reductions) == sorted([(3, 4), (3,), (3,), (3,)])  # first.weight (second's too), the biases, scale
    with torch.no_grad():
        model.first.weight[0, 0] = 3e37
    with pytest.raises(ModelFormatError, match=r"beyond ±1e\+06 \(first\.weight, second\.weight\)"):
        check_weight_values(model, "here")
    with torch.no_grad():
        model.first.weight[0, 0] = float("nan")
        model.scale[0] = float("inf")
    with pytest.raises(ModelFormatError, match=r"NaN or infinite values \(first\.weight, scale\)"):
        check_weight_values(model, "here")
