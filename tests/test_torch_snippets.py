"""Snippets in the style of PyTorch's introductory material, run with ``torch``
replaced by ``arraykit``.

Each snippet is Python source that uses ``torch`` and ``print``. It runs twice:
once with ``torch`` bound to PyTorch and once with ``torch`` bound to arraykit,
each time with a ``print`` that records its arguments. Every recorded value must
match: tensors and NumPy arrays in shape, dtype and values (as they were when
printed); sizes, strides, booleans, numbers and dtypes as they are; strings after
``torch`` is replaced by ``arraykit``.

The PyTorch side runs on the CPU; snippets about the CPU's memory (NumPy sharing it,
``is_cpu``) run their arraykit side with the CPU as arraykit's default device, which
follows JAX's.
"""

from __future__ import annotations

import textwrap

import jax
import numpy as np
import pytest
import torch

import arraykit as ak

SNIPPETS = {}
CPU_SNIPPETS = set()


def snippet(name, source, cpu=False):
    SNIPPETS[name] = textwrap.dedent(source)
    if cpu:
        CPU_SNIPPETS.add(name)


snippet("storage and strides", """
    x = torch.arange(12).view(3, 4)
    print(x.stride(), x.storage_offset(), x.is_contiguous(), x.dim(), x.numel())
    y = x.t()
    print(y.shape, y.stride(), y.is_contiguous(), y.data_ptr() == x.data_ptr())
    z = y.contiguous()
    print(z.stride(), z.is_contiguous(), z.data_ptr() == x.data_ptr())
    row, col = x[1], x[:, 2]
    print(row.storage_offset(), row.stride(), col.storage_offset(), col.stride())
    row[0] = 100
    print(x)
    print(x.untyped_storage().nbytes(), x.element_size(), x.nbytes, x.itemsize)
    print(x.view(2, 6).shape, x.view(-1).shape, x.view(2, -1).stride())
    try:
        y.view(12)
    except RuntimeError:
        print("view needs compatible strides; use reshape")
    print(y.reshape(12), y.flatten().stride())
    e = torch.tensor([[1], [2], [3]]).expand(3, 4)
    print(e.stride(), e.is_contiguous(), e.contiguous().stride())
    s = x[::2, 1::2]
    print(s.stride(), s.storage_offset(), s.shape)
    p = torch.zeros(2, 3, 4).permute(2, 0, 1)
    print(p.shape, p.stride(), p.is_contiguous())
    n = x.narrow(1, 1, 2)
    print(n.stride(), n.storage_offset())
    u = x.unsqueeze(0)
    print(u.shape, u.stride())
    print(torch.zeros(2, 3, 4, 5).to(memory_format=torch.channels_last).stride())
""")

snippet("indexing", """
    x = torch.arange(16.).reshape(4, 4)
    print(x[1:3, ::2])
    print(x[x > 10])
    print(x[[0, 2], [1, 3]])
    print(x[:, [0, 3]])
    print(x[..., -1], x[None, 0].shape, x[1, 2].item())
    mask = x % 3 == 0
    print(torch.masked_select(x, mask), x.masked_select(mask).shape)
    print(x.index_select(0, torch.tensor([2, 0])))
    print(torch.gather(x, 1, torch.tensor([[0], [1], [2], [3]])))
    print(x.nonzero().shape, (x > 13).nonzero(as_tuple=True))
    x[x > 12] = 0
    print(x)
    x.index_fill_(1, torch.tensor([0]), -1)
    x.masked_fill_(x == 5, 50)
    print(x)
    index = torch.tensor([[0, 1, 2, 0], [2, 0, 1, 1]])
    print(torch.zeros(3, 4).scatter_(0, index, torch.ones(2, 4)))
    print(torch.zeros(3, 4).scatter_add_(0, torch.tensor([[0, 0, 2, 0], [0, 0, 1, 1]]), torch.ones(2, 4)))
    print(torch.zeros(5).index_add_(0, torch.tensor([0, 4, 4]), torch.tensor([1., 2., 3.])))
    print(torch.where(x > 0, x, torch.zeros_like(x)))
    v = x[1]
    v[:] = 7
    print(x[1], x.sum(), x.max(1), x.argmax())
""")

snippet("broadcasting", """
    a = torch.ones(3, 1)
    b = torch.arange(4.)
    print((a + b).shape, a * b)
    c = torch.arange(3.).view(3, 1)
    print(c - b)
    print(torch.broadcast_shapes((2, 1, 3), (4, 1)))
    x = torch.arange(6.).reshape(2, 3)
    print(x - x.mean(dim=0, keepdim=True))
    print(x / x.sum(1, keepdim=True))
    try:
        torch.ones(2, 3) + torch.ones(3, 2)
    except Exception:
        print("shapes (2, 3) and (3, 2) do not broadcast")
    y = torch.zeros(2, 3)
    y += torch.tensor([1., 2., 3.])
    print(y)
    e = torch.arange(3).expand(2, 3)
    print(e.stride(), e + 1)
    print(torch.ones(2, 1, 3).expand(2, 4, 3).sum(1))
    print(x.unsqueeze(1).shape, (x.unsqueeze(1) - x.unsqueeze(0)).shape)
    print(torch.zeros(3).expand_as(x).stride())
""")

snippet("memory", """
    x = torch.zeros(1000, 1000)
    print(x.element_size() * x.nelement(), x.nbytes)
    y = x[::2]
    print(y.is_contiguous(), y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr())
    z = y.clone()
    print(z.is_contiguous(), z.data_ptr() == x.data_ptr(), z.shape)
    x.add_(1)
    print(y[0, 0], z[0, 0])
    w = x.view(-1)
    w[0] = 5
    print(x[0, 0])
    print(x.float().data_ptr() == x.data_ptr(), x.to(torch.float64).data_ptr() == x.data_ptr())
    print(x.double().dtype, x.half().element_size(), x.bfloat16().dtype, x.long().dtype)
    print(x.int().dtype, x.bool().dtype, x.type(), x.type(torch.int32).dtype)
    print(x.is_cuda, x.is_cpu, x.device == torch.device("cpu"), x.cpu() is x)
    a = torch.ones(3)
    b = a
    b += 1
    print(a)
    c = a.clone()
    c += 1
    print(a, c)
    d = a.new_zeros(2, 2)
    print(d, d.dtype, a.new_full((2,), 5.0))
    t = torch.ones(2, 3).t()
    print(t.is_contiguous(), t.contiguous().stride(), t.clone().stride())
""", cpu=True)

snippet("numpy bridge", """
    a = torch.ones(5)
    b = a.numpy()
    print(b)
    a.add_(1)
    print(a)
    print(b)
    n = np.ones(5)
    t = torch.from_numpy(n)
    np.add(n, 1, out=n)
    print(n)
    print(t)
    m = np.zeros((2, 3))
    s = torch.from_numpy(m)
    s.add_(1.0)
    print(m)
    m[0, 0] = 7.0
    print(s)
    s[1, 2] = -1.0
    print(m)
    m = m + 1.0
    print(s, m)
    print(s.dtype, torch.tensor(np.ones(2)).dtype, torch.from_numpy(np.arange(3)).dtype)
    c = torch.tensor(n)
    n[0] = 100.0
    print(c)
    r = torch.from_numpy(np.arange(6.0).reshape(2, 3)).t()
    print(r.stride(), r.numpy().strides, r.numpy().flags.writeable)
    q = np.arange(10.0)
    v = torch.from_numpy(q[2:8:2])
    v.mul_(10)
    print(q, v.stride())
    back = v.numpy()
    back[0] = -5.0
    print(q[2], v[0])
""", cpu=True)


def snapshot(value):
    """``value`` as printed now: tensors and arrays copied, tuples element-wise."""
    if isinstance(value, (torch.Tensor, ak.Tensor)):
        return value.clone()
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, tuple):
        return tuple(snapshot(v) for v in value)
    return value


def run(name, module):
    """Run snippet ``name`` with ``torch`` bound to ``module``; the printed values."""
    printed = []
    namespace = {"torch": module, "np": np, "print": lambda *args: printed.append(snapshot(args))}
    exec(compile(SNIPPETS[name], f"<snippet {name}>", "exec"), namespace)
    return printed


def check(got, want, where):
    if isinstance(want, torch.Tensor):
        assert isinstance(got, ak.Tensor), where
        assert got.shape == tuple(want.shape), where
        assert got.dtype.name == str(want.dtype).removeprefix("torch."), where
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, err_msg=where)
    elif isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray) and got.dtype == want.dtype, where
        np.testing.assert_array_equal(got, want, err_msg=where)
    elif isinstance(want, torch.dtype):
        assert got.name == str(want).removeprefix("torch."), where
    elif isinstance(want, tuple):  # torch.Size, strides, named tuples, printed argument lists
        assert isinstance(got, tuple) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            check(g, w, f"{where}[{i}]")
    elif isinstance(want, str):
        assert got == want.replace("torch", "arraykit"), where
    else:
        assert type(got) is type(want) and got == want, (where, got, want)


@pytest.mark.parametrize("name", SNIPPETS)
def test_snippet_prints_what_pytorch_prints(name):
    want = run(name, torch)
    if name in CPU_SNIPPETS:
        with jax.default_device(jax.devices("cpu")[0]):
            got = run(name, ak)
    else:
        got = run(name, ak)
    assert len(got) == len(want)
    for line, (g, w) in enumerate(zip(got, want)):
        check(g, w, f"{name}, print #{line + 1}")
