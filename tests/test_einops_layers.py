"""einops' layers on arraykit (arraykit/einops/layers.py) against einops' PyTorch layers:
values, gradients, ``state_dict`` both ways, ``arraykit.jit``, and a model file whose
``from einops.layers.torch import ...`` is changed to ``arraykit.einops.layers``."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
import types

import numpy as np
import pytest

import arraykit as ak

einops = pytest.importorskip("einops")
torch = pytest.importorskip("torch")
layers = pytest.importorskip("arraykit.einops.layers")
from einops.layers import torch as torch_layers  # noqa: E402 (after the skip)

RNG = np.random.default_rng(0)


def _close(got, expected, what="", rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(got), expected.detach().numpy(), rtol=rtol, atol=atol,
                               err_msg=what)


def _both(fn, x):
    """``fn(torch_input)`` and ``fn(arraykit_input)`` with input gradients of a random
    weighted sum: (torch out, arraykit out, torch grad, arraykit grad)."""
    xt = torch.tensor(x, requires_grad=True)
    xa = ak.asarray(x).requires_grad_()
    out_t, out_a = fn(torch_layers, xt), fn(layers, xa)
    weights = RNG.standard_normal(tuple(out_t.shape)).astype(np.float32)
    (out_t * torch.tensor(weights)).sum().backward()
    (out_a * ak.asarray(weights)).sum().backward()
    return out_t, out_a, xt.grad, xa.grad


LAYERS = [
    ("rearrange patches", lambda m, x: m.Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=2, p2=2)(x)),
    ("rearrange ellipsis", lambda m, x: m.Rearrange("b ... w -> b w ...")(x)),
    ("reduce max pool", lambda m, x: m.Reduce("b c (h 2) (w 2) -> b c h w", "max")(x)),
    ("reduce mean", lambda m, x: m.Reduce("b c h w -> b c", "mean")(x)),
    ("reduce sum", lambda m, x: m.Reduce("b c h w -> c", "sum")(x)),
    ("reduce min keep axis", lambda m, x: m.Reduce("b c h w -> b c () w", "min")(x)),
    ("reduce prod", lambda m, x: m.Reduce("b c (h h2) w -> b c h", "prod", h2=2)(x)),
]


@pytest.mark.parametrize("fn", [c[1] for c in LAYERS], ids=[c[0] for c in LAYERS])
def test_rearrange_and_reduce_match_torch(fn):
    x = RNG.uniform(0.5, 1.5, (2, 3, 4, 6)).astype(np.float32)
    out_t, out_a, grad_t, grad_a = _both(fn, x)
    assert isinstance(out_a, ak.Tensor) and out_a.shape == tuple(out_t.shape)
    _close(out_a, out_t)
    _close(grad_a, grad_t)


EINMIX = [
    ("linear with bias", ("t b cin -> t b cout", "cin cout", "cout"), dict(cin=6, cout=5), (4, 2, 6)),
    ("no bias", ("t b cin -> t b cout", "cin cout", None), dict(cin=6, cout=5), (4, 2, 6)),
    ("mix along height", ("b h w -> b hout w", "h hout", "hout"), dict(h=4, hout=3), (2, 4, 6)),
    ("multi-head groups", ("b t (head cin) -> b t (head cout)", "head cin cout", "head cout"),
     dict(head=2, cin=3, cout=4), (2, 5, 6)),
    ("ellipsis", ("b ... c -> b ... d", "c d", "d"), dict(c=6, d=2), (2, 3, 4, 6)),
    ("patch embedding", ("b c (h ph) (w pw) -> b (h w) d", "c ph pw d", "d"),
     dict(c=3, ph=2, pw=2, d=5), (2, 3, 4, 4)),
    ("channel-wise scale", ("b t c -> b t c", "c", None), dict(c=6), (2, 3, 6)),
]


@pytest.mark.parametrize("spec", [c[1:] for c in EINMIX], ids=[c[0] for c in EINMIX])
def test_einmix_loads_torch_state_dict_and_matches(spec):
    (pattern, weight_shape, bias_shape), lengths, x_shape = spec
    torch.manual_seed(0)
    tm = torch_layers.EinMix(pattern, weight_shape=weight_shape, bias_shape=bias_shape, **lengths)
    am = layers.EinMix(pattern, weight_shape=weight_shape, bias_shape=bias_shape, **lengths)
    t_state = tm.state_dict()
    assert list(am.state_dict()) == list(t_state)
    assert {k: tuple(v.shape) for k, v in am.state_dict().items()} == {k: tuple(v.shape) for k, v in t_state.items()}
    am.load_state_dict(t_state)  # PyTorch's tensors, as they come out of the torch layer
    assert repr(am) == repr(tm)
    x = RNG.standard_normal(x_shape).astype(np.float32)
    out_t, out_a, grad_t, grad_a = _both(lambda m, v: (tm if m is torch_layers else am)(v), x)
    _close(out_a, out_t)
    _close(grad_a, grad_t)
    t_params = dict(tm.named_parameters())
    assert [n for n, _ in am.named_parameters()] == list(t_params)
    for name, p in am.named_parameters():
        _close(p.grad, t_params[name].grad, name)


def test_einmix_state_dict_loads_into_torch():
    am = layers.EinMix("b (h p) c -> b h d", weight_shape="p c d", bias_shape="d", p=2, c=3, d=4)
    tm = torch_layers.EinMix("b (h p) c -> b h d", weight_shape="p c d", bias_shape="d", p=2, c=3, d=4)
    tm.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in am.state_dict().items()})
    x = RNG.standard_normal((2, 6, 3)).astype(np.float32)
    with torch.no_grad():
        expected = tm(torch.tensor(x))
    _close(am(ak.asarray(x)), expected)


def test_einmix_initialisation_is_einops_uniform_he():
    am = layers.EinMix("t b cin -> t b cout", weight_shape="cin cout", bias_shape="cout", cin=300, cout=200)
    weight, bias = np.asarray(am.weight.detach()), np.asarray(am.bias.detach())
    assert am.weight.dtype == ak.float32 and am.bias.shape == (1, 1, 200)
    assert am.weight.requires_grad and am.bias.requires_grad
    w_bound, b_bound = (3 / 300) ** 0.5, (1 / 300) ** 0.5
    assert np.abs(weight).max() <= w_bound and np.abs(bias).max() <= b_bound
    # uniform on [-bound, bound]: standard deviation bound / sqrt(3), 60000 draws
    assert abs(weight.std() - w_bound / 3**0.5) < 0.02 * w_bound
    assert abs(weight.mean()) < 0.01 * w_bound


def test_errors_are_einops_errors():
    for m in (torch_layers, layers):
        with pytest.raises(einops.EinopsError, match="Dimension cout of weight should be specified"):
            m.EinMix("t b cin -> t b cout", weight_shape="cin cout", cin=3)
    with pytest.raises(einops.EinopsError):
        layers.Rearrange("b c -> b c d")(ak.ones((2, 3)))
    with pytest.raises(einops.EinopsError, match="Shape mismatch"):
        layers.Rearrange("b (c d) -> b c d", d=4)(ak.ones((2, 6)))


def test_layers_pickle_and_deepcopy():
    layer = layers.Reduce("b c (h 2) -> b c h", "max")
    for clone in (pickle.loads(pickle.dumps(layer)), copy.deepcopy(layer)):
        assert type(clone) is layers.Reduce and repr(clone) == "Reduce('b c (h 2) -> b c h', 'max')"
        x = ak.asarray(RNG.standard_normal((2, 3, 4)).astype(np.float32))
        np.testing.assert_array_equal(np.asarray(clone(x)), np.asarray(layer(x)))
    mix = layers.EinMix("b c -> b d", weight_shape="c d", c=3, d=2)
    clone = copy.deepcopy(mix)
    np.testing.assert_array_equal(np.asarray(clone.weight.detach()), np.asarray(mix.weight.detach()))


def test_a_jitted_training_step_matches_torch():
    def build(m, nn):
        return nn.Sequential(
            m.Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=2, p2=2),
            m.EinMix("b n d -> b n e", weight_shape="d e", bias_shape="e", d=12, e=8),
            m.Reduce("b n e -> b e", "mean"),
        )

    torch.manual_seed(0)
    tm = build(torch_layers, torch.nn)
    am = build(layers, ak.nn)
    am.load_state_dict(tm.state_dict())
    t_opt = torch.optim.SGD(tm.parameters(), lr=0.1)
    a_opt = ak.optim.SGD(am.parameters(), lr=0.1)
    x = RNG.standard_normal((2, 3, 4, 4)).astype(np.float32)

    @ak.jit
    def step(v):
        a_opt.zero_grad()
        loss = am(v).pow(2).sum()
        loss.backward()
        a_opt.step()
        return loss

    for _ in range(3):
        t_opt.zero_grad()
        t_loss = tm(torch.tensor(x)).pow(2).sum()
        t_loss.backward()
        t_opt.step()
        _close(step(ak.asarray(x)), t_loss, "loss", rtol=1e-5)
    for name, p in tm.state_dict().items():
        _close(am.state_dict()[name], p, name, rtol=1e-5)
    assert step.compile_count <= 2


VIT = '''
import torch
import torch.nn as nn
from einops.layers.torch import Rearrange, Reduce


class Model(nn.Module):
    def __init__(self, channels=3, patch=4, dim=16, classes=10):
        super().__init__()
        self.to_patches = nn.Sequential(
            Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=patch, p2=patch),
            nn.LayerNorm(channels * patch * patch),
            nn.Linear(channels * patch * patch, dim),
        )
        self.pool = Reduce("b n d -> b d", "mean")
        self.head = nn.Linear(dim, classes)

    def forward(self, img):
        return self.head(self.pool(self.to_patches(img)))
'''


def _model_file(lib):
    """``VIT`` run as a model file: as written for PyTorch, or for arraykit with its
    einops import changed to ``arraykit.einops.layers`` and ``torch`` bound to arraykit."""
    source = VIT
    bound = {"torch": torch, "torch.nn": torch.nn}
    if lib is ak:
        source = source.replace("from einops.layers.torch import", "from arraykit.einops.layers import")
        assert "einops.layers.torch" not in source
        bound = {"torch": ak, "torch.nn": ak.nn}
    saved = {k: sys.modules.get(k) for k in bound}
    sys.modules.update(bound)
    try:
        module = types.ModuleType(f"vit_{lib.__name__}")
        exec(compile(source, "<vit>", "exec"), module.__dict__)
    finally:
        for k, v in saved.items():
            sys.modules[k] = v
    return module


def test_vit_model_file_runs_with_arraykit_layers():
    torch.manual_seed(0)
    tm = _model_file(torch).Model()
    am = _model_file(ak).Model()
    assert isinstance(am.to_patches[0], layers.Rearrange)
    am.load_state_dict({k: ak.asarray(v.numpy()) for k, v in tm.state_dict().items()})
    x = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)
    xt, xa = torch.tensor(x, requires_grad=True), ak.asarray(x).requires_grad_()
    out_t, out_a = tm(xt), am(xa)
    assert out_a.shape == (2, 10)
    _close(out_a, out_t, "logits", rtol=1e-4, atol=1e-5)
    target = RNG.integers(0, 10, 2)
    torch.nn.functional.cross_entropy(out_t, torch.tensor(target)).backward()
    ak.nn.functional.cross_entropy(out_a, ak.asarray(target)).backward()
    _close(xa.grad, xt.grad, "input gradient", rtol=1e-4, atol=1e-6)
    t_params = dict(tm.named_parameters())
    for name, p in am.named_parameters():
        _close(p.grad, t_params[name].grad, name, rtol=1e-4, atol=1e-6)


def test_arraykit_einops_without_einops_says_what_is_missing():
    code = (
        "import sys; sys.modules['einops'] = None\n"
        "import arraykit\n"
        "assert 'arraykit.einops' not in sys.modules\n"
        "try:\n"
        "    import arraykit.einops.layers\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "arraykit.einops needs the einops package: pip install einops (or arraykit[einops])"


def test_public_names_have_docstrings():
    """The API reference (docs/_ext/api_pages.py) is generated from these."""
    import arraykit.einops as ak_einops

    for namespace in (ak_einops, layers):
        for name in namespace.__all__:
            obj = getattr(namespace, name)
            assert (obj.__doc__ or "").strip(), name
            for member, value in vars(obj).items() if isinstance(obj, type) else ():
                if not member.startswith("_") and callable(value):
                    assert (value.__doc__ or "").strip(), f"{name}.{member}"
