"""NumPy's keywords on names consumers probe the namespace for: ``median(x, axis=,
keepdims=)`` as scikit-learn calls it has NumPy's meaning (the mean of the two middle
elements), while PyTorch's ``median(x)`` / ``median(x, dim)`` keep PyTorch's."""

import numpy as np
import pytest
import torch

import arraykit as ak

_X = np.array([[3.0, 1.0, 4.0, 1.0], [5.0, 9.0, 2.0, 6.0], [np.nan, 2.0, 7.0, 1.0]])

_NUMPY_FORMS = [
    {"axis": None}, {"axis": 0}, {"axis": 1}, {"axis": -1, "keepdims": True},
    {"axis": (0, 1)}, {"keepdims": True}, {"axis": None, "keepdims": False},
]


@pytest.mark.parametrize("name", ["median", "nanmedian"])
@pytest.mark.parametrize("kwargs", _NUMPY_FORMS, ids=repr)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_median_with_numpy_keywords_is_numpys(name, kwargs, dtype):
    x = _X.astype(dtype)
    got = getattr(ak, name)(ak.asarray(x), **kwargs)
    expected = getattr(np, name)(x, **kwargs)
    assert isinstance(got, ak.Tensor)
    assert got.dtype == getattr(ak, dtype)
    assert got.shape == expected.shape
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-6)


def test_median_of_integers_with_numpy_keywords_is_floating():
    got = ak.median(ak.asarray([1, 2, 3, 4]), axis=0)
    assert got.dtype == ak.float32  # the default float dtype
    assert got.item() == np.median([1, 2, 3, 4]) == 2.5


def test_median_in_pytorchs_spellings_stays_pytorchs():
    x = _X[:2]
    t, tt = ak.asarray(x), torch.tensor(x)
    assert ak.median(t).item() == torch.median(tt).item() == 3.0  # the lower median
    values, indices = ak.median(t, 1)
    expected = torch.median(tt, 1)
    np.testing.assert_array_equal(np.asarray(values), expected.values.numpy())
    np.testing.assert_array_equal(x[np.arange(2), np.asarray(indices)], values)
    assert t.median(dim=0, keepdim=True).values.shape == (1, 4)


def test_median_gradient_with_numpy_keywords_matches_torch_quantile():
    x = _X[:2]
    t = ak.asarray(x, device="cpu")
    t.requires_grad_(True)
    ak.median(t, axis=1).sum().backward()
    tt = torch.tensor(x, requires_grad=True)
    torch.quantile(tt, 0.5, dim=1).sum().backward()  # the NumPy median's values
    np.testing.assert_allclose(np.asarray(t.grad), tt.grad.numpy())


def test_median_refuses_both_spellings():
    with pytest.raises(TypeError, match="dim=/keepdim= and NumPy's axis="):
        ak.median(ak.asarray(_X), 0, axis=1)
    with pytest.raises(IndexError, match="axis"):
        ak.median(ak.asarray(_X), axis=2)
