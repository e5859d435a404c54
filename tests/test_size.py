"""``x.size``: the array API's element count that is also PyTorch's ``x.size()``, and
:class:`arraykit.Size` against ``torch.Size``."""

from __future__ import annotations

import copy
import math
import pickle

import pytest
import torch

import arraykit as ak

SHAPES = [(), (0,), (5,), (2, 3), (2, 0, 4), (1, 2, 3, 4)]


@pytest.mark.parametrize("shape", SHAPES)
def test_size_is_the_standard_int(shape):
    x = ak.zeros(shape)
    assert isinstance(x.size, int) and x.size == math.prod(x.shape) == x.numel()
    assert int(x.size) == x.size and x.size + 1 == math.prod(shape) + 1
    assert repr(x.size) == repr(math.prod(shape)) and hash(x.size) == hash(math.prod(shape))
    assert pickle.loads(pickle.dumps(x.size)) == x.size
    assert copy.deepcopy(x.size) == x.size
    assert isinstance(x.shape, tuple) and x.shape == shape


@pytest.mark.parametrize("shape", SHAPES)
def test_size_call_is_pytorchs(shape):
    x, t = ak.zeros(shape), torch.zeros(shape)
    got, want = x.size(), t.size()
    assert isinstance(got, ak.Size) and isinstance(got, tuple)
    assert got == want and tuple(got) == tuple(want) == x.shape
    assert got.numel() == want.numel()
    assert repr(got) == repr(want).replace("torch.", "arraykit.")
    assert str(got) == str(want).replace("torch.", "arraykit.")
    for d in range(-len(shape), len(shape)):
        assert x.size(d) == t.size(d) and x.size(dim=d) == t.size(dim=d)
        assert type(x.size(d)) is int


@pytest.mark.parametrize("shape, dim", [((2, 3), 2), ((2, 3), -3), ((), 0), ((), -1), ((4,), 1)])
def test_size_of_a_bad_dim_raises_index_error(shape, dim):
    with pytest.raises(IndexError) as want:
        torch.zeros(shape).size(dim)
    with pytest.raises(IndexError) as got:
        ak.zeros(shape).size(dim)
    assert str(got.value) == str(want.value)


def test_size_of_a_non_int_dim_raises_type_error():
    # PyTorch 2.13 raises TypeError; 2.11 looks the str up as a dimension name (named
    # tensors) and raises RuntimeError "Name 'a' not found in Tensor[None]."
    with pytest.raises((TypeError, RuntimeError)) as want:
        torch.zeros(2).size("a")
    if want.type is RuntimeError:
        assert "Name 'a' not found" in str(want.value)
    with pytest.raises(TypeError):
        ak.zeros(2).size("a")


def test_size_type_behaves_as_torch_size():
    s, ts = ak.Size([2, 3, 4]), torch.Size([2, 3, 4])
    assert isinstance(s[1:], ak.Size) and s[1:] == ts[1:] and s[-1] == ts[-1] == 4
    assert isinstance(s + (5,), ak.Size) and s + (5,) == ts + (5,)
    assert isinstance((1,) + s, ak.Size) and (1,) + s == (1,) + ts
    assert isinstance(s * 2, ak.Size) and s * 2 == ts * 2
    assert ak.Size() == () and ak.Size().numel() == torch.Size().numel() == 1
    assert pickle.loads(pickle.dumps(s)) == s and type(pickle.loads(pickle.dumps(s))) is ak.Size
    assert ak.Size([ak.tensor(3)]) == (3,)
    with pytest.raises(TypeError):
        torch.Size([2.0])
    with pytest.raises(TypeError):
        ak.Size([2.0])


def test_size_in_a_model_and_under_jit():
    def head_split(lib, x):
        b, t, c = x.size()
        return x.view(b, t, 2, c // 2).transpose(1, 2).reshape(b * 2, x.size(1), x.size(-1) // 2)

    x = ak.arange(24.0).reshape(2, 3, 4)
    want = head_split(torch, torch.arange(24.0).reshape(2, 3, 4))
    assert head_split(ak, x).tolist() == want.tolist()
    jitted = ak.jit(lambda x: head_split(ak, x))
    assert jitted(x).tolist() == want.tolist()
    assert ak.zeros(x.size()).shape == (2, 3, 4)
    assert ak.zeros(*x.size()).shape == (2, 3, 4)
