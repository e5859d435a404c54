"""einops on arraykit tensors (arraykit/einops/backend.py), against einops on PyTorch."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import arraykit as ak

einops = pytest.importorskip("einops")
torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3, 4)).astype(np.float32)
Y = RNG.standard_normal((2, 3, 5)).astype(np.float32)

CASES = [
    ("rearrange", lambda e, x, y: e.rearrange(x, "a b c -> c (a b)")),
    ("rearrange split", lambda e, x, y: e.rearrange(x, "a b (c d) -> (a d) b c", d=2)),
    ("rearrange list", lambda e, x, y: e.rearrange([x, x * 2], "n a b c -> a n b c")),
    ("reduce mean", lambda e, x, y: e.reduce(x, "a b c -> a c", "mean")),
    ("reduce max", lambda e, x, y: e.reduce(x, "a b (c two) -> a b c", "max", two=2)),
    ("reduce sum", lambda e, x, y: e.reduce(x, "a b c -> b", "sum")),
    ("reduce prod", lambda e, x, y: e.reduce(x, "a b c -> a b", "prod")),
    ("reduce min", lambda e, x, y: e.reduce(x, "a b c -> c a", "min")),
    ("repeat", lambda e, x, y: e.repeat(x, "a b c -> a r b c", r=3)),
    ("repeat merge", lambda e, x, y: e.repeat(x, "a b c -> (a r) b (c s)", r=2, s=2)),
    ("einsum", lambda e, x, y: e.einsum(x, y, "a b c, a b d -> a c d")),
    ("unpack", lambda e, x, y: e.unpack(e.pack([x, y], "a b *")[0], [(4,), (5,)], "a b *")[1]),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_torch(name, fn):
    xt = torch.tensor(X, requires_grad=True)
    yt = torch.tensor(Y, requires_grad=True)
    expected = fn(einops, xt, yt)
    xa = ak.asarray(X).requires_grad_()
    ya = ak.asarray(Y).requires_grad_()
    got = fn(einops, xa, ya)
    assert isinstance(got, ak.Tensor)
    assert got.shape == tuple(expected.shape)
    assert got.dtype == ak.float32
    np.testing.assert_allclose(np.asarray(got.detach()), expected.detach().numpy(), rtol=1e-5, atol=1e-6)
    weights = RNG.standard_normal(tuple(expected.shape)).astype(np.float32)
    (expected * torch.tensor(weights)).sum().backward()
    (got * ak.asarray(weights)).sum().backward()
    np.testing.assert_allclose(np.asarray(xa.grad), xt.grad.numpy(), rtol=1e-5, atol=1e-6)
    if yt.grad is not None:
        np.testing.assert_allclose(np.asarray(ya.grad), yt.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_pack_matches_torch():
    packed_t, shapes_t = einops.pack([torch.tensor(X), torch.tensor(Y)], "a b *")
    packed, shapes = einops.pack([ak.asarray(X), ak.asarray(Y)], "a b *")
    assert shapes == shapes_t
    np.testing.assert_array_equal(np.asarray(packed), packed_t.numpy())


def test_integer_tensors_and_mean_of_integers():
    xi = ak.asarray(np.arange(24, dtype=np.int64).reshape(2, 3, 4))
    ti = torch.arange(24).reshape(2, 3, 4)
    got = einops.reduce(xi, "a b c -> a", "sum")
    assert got.dtype == ak.int64
    np.testing.assert_array_equal(np.asarray(got), einops.reduce(ti, "a b c -> a", "sum").numpy())
    with pytest.raises(NotImplementedError, match="non-floating"):
        einops.reduce(xi, "a b c -> a", "mean")


def test_under_jit_with_backward():
    w = ak.asarray(RNG.standard_normal((4, 6)).astype(np.float32)).requires_grad_()
    wt = torch.tensor(np.asarray(w.detach()), requires_grad=True)

    def loss(module, x, weight):
        h = module.rearrange(x, "a b c -> (a b) c") @ weight
        h = module.rearrange(h, "(a b) (h d) -> a h b d", a=2, h=2)
        return module.reduce(h, "a h b d -> a", "mean").pow(2).sum()

    @ak.jit
    def step(x):
        w.grad = None
        out = loss(einops, x, w)
        out.backward()
        return out

    expected = loss(einops, torch.tensor(X), wt)
    expected.backward()
    for _ in range(2):
        got = step(ak.asarray(X))
        np.testing.assert_allclose(float(got), expected.item(), rtol=1e-5)
        np.testing.assert_allclose(np.asarray(w.grad), wt.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert step.compile_count <= 2


def test_einops_not_imported_when_missing():
    code = (
        "import sys; sys.modules['einops'] = None\n"
        "import arraykit\n"
        "assert 'arraykit.einops' not in sys.modules\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
