"""PyTorch's positional forms where the standard's parameters are keyword-only:
``stack(ts, 1)``, ``sum(x, 1, True)``, ``sort(x, 0, True)``, ``x.split(split_size=)``...
give PyTorch's results, while the standard's spellings keep theirs."""

import numpy as np
import pytest
import torch

import arraykit as ak
from torch_keyword_audit import TORCH_REFUSES_POSITIONALLY, positional_gaps

X = np.arange(24.0).reshape(2, 3, 4) % 7


def _values(result):
    return result.values if isinstance(result, tuple) else result


CASES = {
    "stack": lambda lib, t: lib.stack([t, t * 2], 1),
    "stack tensors=": lambda lib, t: lib.stack(tensors=[t, t], dim=3),
    "concat": lambda lib, t: lib.concat([t, t], 2),
    "concat tensors=": lambda lib, t: lib.concat(tensors=[t, t], dim=0),
    "cat": lambda lib, t: lib.cat([t, t], 1),
    "sum": lambda lib, t: lib.sum(t, 1),
    "sum keepdim": lambda lib, t: lib.sum(t, (0, 2), True),
    "prod": lambda lib, t: lib.prod(t + 1, 2),
    "mean": lambda lib, t: lib.mean(t, 0, True),
    "max": lambda lib, t: lib.max(t, 1),
    "min keepdim": lambda lib, t: lib.min(t, 2, True),
    "all": lambda lib, t: lib.all(t > 1, 1),
    "any keepdim": lambda lib, t: lib.any(t > 5, 2, True),
    "argmax": lambda lib, t: lib.argmax(t, 1),
    "argmin keepdim": lambda lib, t: lib.argmin(t, 2, True),
    "count_nonzero": lambda lib, t: lib.count_nonzero(t, 2),
    "std": lambda lib, t: lib.std(t, 1),
    "var": lambda lib, t: lib.var(t, 2),
    "sort": lambda lib, t: lib.sort(t, 1, True),
    "argsort": lambda lib, t: lib.argsort(t + 0.01 * lib.arange(4), 0, True),
    "flip": lambda lib, t: lib.flip(t, (0, 2)),
    "roll": lambda lib, t: lib.roll(t, 2, 1),
    "tensordot": lambda lib, t: lib.tensordot(t, t.permute(2, 1, 0), 1),
    "put": lambda lib, t: lib.put(t, lib.tensor([0, 0, 5]), lib.tensor([1.0, 2.0, 3.0], dtype=t.dtype), True),
    "split": lambda lib, t: lib.split(t, 3, 2)[0],
    "split sizes": lambda lib, t: lib.split(t, [1, 2], 1)[1],
    "method split split_size=": lambda lib, t: t.split(split_size=[1, 2], dim=1)[1],
    "method split split_size= int": lambda lib, t: t.split(split_size=3, dim=2)[1],
}


@pytest.mark.parametrize("name", CASES)
def test_positional_forms_give_torchs_results(name):
    got = CASES[name](ak, ak.asarray(X))
    expected = CASES[name](torch, torch.tensor(X))
    assert isinstance(got, tuple) == isinstance(expected, tuple)  # (values, indices) as torch
    np.testing.assert_allclose(np.asarray(_values(got)), _values(expected).numpy(), rtol=1e-6)
    if isinstance(expected, tuple):
        np.testing.assert_array_equal(np.asarray(got.indices), expected.indices.numpy())


def test_the_standards_forms_are_unchanged():
    t = ak.asarray(X)
    assert ak.stack([t, t], axis=1).shape == (2, 2, 3, 4)
    assert ak.concat([t, t], axis=None).shape == (48,)
    assert ak.max(t, axis=1).shape == (2, 4)  # one tensor, not (values, indices)
    assert ak.sum(t, axis=(0, 1), keepdims=True).shape == (1, 1, 4)
    assert ak.sort(t, axis=0, descending=True).shape == (2, 3, 4)
    np.testing.assert_allclose(np.asarray(ak.std(t, axis=1)), np.std(X, axis=1))  # correction=0
    np.testing.assert_allclose(np.asarray(ak.std(t, 1)), np.std(X, axis=1, ddof=1))  # PyTorch's


@pytest.mark.parametrize("call, message", [
    (lambda t: ak.stack([t, t], 1, axis=2), "got both axis=2 and PyTorch's dim="),
    (lambda t: ak.concat([t], tensors=[t]), "got both a positional arrays and PyTorch's tensors="),
    (lambda t: ak.stack(dim=0), r"missing its sequence of tensors"),
    (lambda t: ak.sum(t, 1, axis=0), "got both axis=0 and PyTorch's dim="),
    (lambda t: t.split([1, 2], 1, split_size=[1, 2]), "split_size"),
])
def test_both_spellings_raise(call, message):
    with pytest.raises(TypeError, match=message):
        call(ak.asarray(X))


def test_positional_audit_finds_no_gaps():
    """tests/torch_keyword_audit.py: every positional form in PyTorch's signature lines
    binds in arraykit, but for the ones PyTorch itself refuses (next test)."""
    assert positional_gaps() == {}


_REFUSED = {
    "Tensor.sum": lambda x: x.sum(0, True, torch.float64),
    "Tensor.prod": lambda x: x.prod(0, True, torch.float64),
    "Tensor.round": lambda x: x.round(2),
    "Tensor.cpu": lambda x: x.cpu(torch.contiguous_format),
    "Tensor.cuda": lambda x: x.cuda(None, False, torch.contiguous_format),
    "mm": lambda x: torch.mm(x[0], x[0].T, torch.float32),
    "bmm": lambda x: torch.bmm(x, x.transpose(1, 2), torch.float32),
    "addmm": lambda x: torch.addmm(x[0, :, :3], x[0], x[0].T, torch.float32),
    "baddbmm": lambda x: torch.baddbmm(x[:, :, :3], x, x.transpose(1, 2), torch.float32),
    "Tensor.new_empty_strided": lambda x: x.new_empty_strided((2,), (1,), torch.float64),
    "Tensor.dim_order": lambda x: x.dim_order(False),
}


@pytest.mark.parametrize("name", sorted(TORCH_REFUSES_POSITIONALLY))
def test_the_audits_exceptions_are_refused_by_torch(name):
    with pytest.raises((TypeError, NotImplementedError, RuntimeError)):
        _REFUSED[name](torch.ones(2, 3, 4, dtype=torch.float32))


METHOD_KEYWORDS = {  # PyTorch's keyword names of varargs methods (torch accepts each)
    "view size=": lambda t: t.view(size=(4, 6)),
    "reshape shape=": lambda t: t.reshape(shape=(6, 4)),
    "permute dims=": lambda t: t.permute(dims=(2, 0, 1)),
    "expand size=": lambda t: t[:1].expand(size=(3, 3, 4)),
    "flip dims=": lambda t: t.flip(dims=[0, 2]),
    "repeat repeats=": lambda t: t.repeat(repeats=(1, 2, 1)),
    "new_zeros size=": lambda t: t.new_zeros(size=(2, 5)),
    "new_ones size=": lambda t: t.new_ones(size=(3,)),
    "new_empty size=": lambda t: t.new_empty(size=(3,)).fill_(2.0),
}


@pytest.mark.parametrize("name", METHOD_KEYWORDS)
def test_method_keywords_give_torchs_results(name):
    got = METHOD_KEYWORDS[name](ak.asarray(X))
    expected = METHOD_KEYWORDS[name](torch.tensor(X))
    assert got.dtype == ak.float64
    np.testing.assert_array_equal(np.asarray(got), expected.numpy())


@pytest.mark.parametrize("call", [
    lambda t: t.view(4, 6, size=(4, 6)), lambda t: t.reshape(6, 4, shape=(6, 4)),
    lambda t: t.permute(2, 0, 1, dims=(2, 0, 1)), lambda t: t.flip(0, dims=[0]),
    lambda t: t.repeat(1, 2, 1, repeats=(1, 2, 1)), lambda t: t.new_zeros(2, size=(2,)),
])
def test_method_keywords_and_positions_together_raise(call):
    with pytest.raises(TypeError, match="got both positional"):
        call(ak.asarray(X))
