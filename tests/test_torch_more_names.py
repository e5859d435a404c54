"""PyTorch's namespace and method names added for issue 36 item 8, against torch 2.13:
values, dtypes and gradients (through ``test_torch_namespace.check``), in-place forms
writing through views with torch's autograd, and torch's spellings of the
``nn.functional`` functions with ATen's signatures."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import arraykit as ak
from arraykit.api import torch_inplace_functions
from test_torch_namespace import I, M, POS, SQ, UNIT, V, W, check, same

NANS = np.array([[1.0, np.nan, 2.0, -np.inf], [np.nan, 0.5, np.inf, -1.0]], np.float32)
EVEN = np.array([[12, -18, 0, 7], [8, 27, -5, 0]], np.int64)
ODD = np.array([[4, 6, 9, 3], [-12, 9, 10, 0]], np.int64)

POINTWISE = {
    "clamp_min clamp_max": (lambda lib, x: (lib.clamp_min(x, 0.5), lib.clamp_max(x, 1.0),
                                           x.clamp_min(-1.0), x.clamp_max(2.0)), M),
    "deg2rad rad2deg": (lambda lib, x: (lib.deg2rad(x * 90), x.rad2deg()), M),
    "deg2rad int": (lambda lib, x: lib.deg2rad(x), I),
    "exp2 logaddexp2": (lambda lib, x, y: (lib.exp2(x), x.exp2(), lib.logaddexp2(x, y),
                                           x.logaddexp2(y)), M, M[::-1].copy()),
    "fmax fmin": (lambda lib, x, y: (lib.fmax(x, y), lib.fmin(x, y), x.fmax(y), x.fmin(y)),
                  NANS, NANS[::-1].copy()),
    "fmax ties": (lambda lib, x, y: (lib.fmax(x, y), lib.fmin(x, y)), M, M * (M > 1)),
    "gcd lcm": (lambda lib, x, y: (lib.gcd(x, y), lib.lcm(x, y), x.gcd(y), x.lcm(y)), EVEN, ODD),
    "heaviside": (lambda lib, x, v: lib.heaviside(x, v), M * (M > 0.6), M[::-1].copy()),
    "i0 sinc": (lambda lib, x: (lib.i0(x), lib.sinc(x), x.i0(), x.sinc()), M * (M > 0.6)),
    "sinc int": (lambda lib, x: lib.sinc(x), I),
    "logit": (lambda lib, x: (lib.logit(x), x.logit(0.1)), (UNIT + 1) / 2.1),
    "polygamma": (lambda lib, x: (lib.polygamma(1, x), x.polygamma(2), lib.polygamma(0, x)), POS),
    "mvlgamma": (lambda lib, x: (lib.mvlgamma(x, 1), x.mvlgamma(3)), POS + 1),
    "igamma igammac": (lambda lib, a, x: (lib.igammac(a, x), x.igamma(a)), POS, POS[::-1].copy()),
    "angle": (lambda lib, x: lib.angle(x), NANS),
    "angle int": (lambda lib, x: x.angle(), I),
    "angle complex": (lambda lib, x: lib.angle(x), (M[0] + 1j * M[1]).astype(np.complex64)),
    "isposinf isneginf isreal": (lambda lib, x: (lib.isposinf(x), x.isneginf(), lib.isreal(x)),
                                 NANS),
    "isreal complex": (lambda lib, x: lib.isreal(x), np.array([1 + 0j, 2j, -1], np.complex64)),
    "conj_physical": (lambda lib, x: (lib.conj_physical(x), x.conj_physical()),
                      (M[0] + 1j * M[1]).astype(np.complex64)),
    "div rounding": (lambda lib, x, y: (lib.div(x, y, rounding_mode="trunc"),
                                        lib.div(x, y, rounding_mode="floor"), lib.div(x, y)),
                     M * 3, M[::-1].copy() + 0.25),
    "div rounding int": (lambda lib, x, y: (lib.div(x, y, rounding_mode="trunc"),
                                            lib.div(x, y, rounding_mode="floor")),
                         EVEN, ODD + (ODD == 0)),
    "sub alpha": (lambda lib, x, y: lib.sub(x, y, alpha=2), M, M[::-1].copy()),
    "methods as functions": (lambda lib, x, y: (
        lib.clone(x), lib.detach(x), lib.t(x), lib.dot(x[0], y[1]), lib.ger(x[0], y[1]),
        lib.masked_fill(x, x > 1, 0.5), lib.addcmul(x, x, y, value=2),
        lib.addcdiv(x, x, y + 10, value=-1), lib.fix(x * 1.5), lib.fill(x, 2.0)),
        M, M[::-1].copy()),
}


# torch refuses these gradients (heaviside's; igamma's in its first argument); arraykit
# gives JAX's (see docs/pytorch.md), so only the values are compared here.
NO_TORCH_GRADIENT = {"heaviside", "igamma igammac"}


@pytest.mark.parametrize("name", POINTWISE)
def test_pointwise_against_torch(name):
    case, *arrays = POINTWISE[name]
    check(case, *arrays, grad=name not in NO_TORCH_GRADIENT)


def test_igamma_gradient_in_x_against_torch():
    a = POS[::-1].copy()
    x, t = ak.asarray(POS).requires_grad_(), torch.from_numpy(POS).requires_grad_()
    (ak.igamma(ak.asarray(a), x) * 2 + ak.asarray(a).igammac(x)).sum().backward()
    (torch.igamma(torch.from_numpy(a), t) * 2 + torch.from_numpy(a).igammac(t)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-4)


def test_predicates_against_torch():
    for array in (M, I, np.array([True]), np.array([1 + 2j], np.complex64), np.uint8([3])):
        t, x = torch.from_numpy(array), ak.asarray(array)
        for name in ("is_complex", "is_signed", "is_conj", "is_neg"):
            assert getattr(ak, name)(x) == getattr(torch, name)(t), (name, array.dtype)
            assert getattr(x, name)() == getattr(t, name)(), (name, array.dtype)
        assert ak.resolve_conj(x) is x and x.resolve_neg() is x
    assert ak.is_same_size(ak.asarray(M), ak.asarray(M * 2))
    assert not ak.asarray(M).is_same_size(ak.asarray(M[:1]))
    assert ak.is_nonzero(ak.asarray([[2.0]])) is True and ak.asarray(0).is_nonzero() is False
    for bad in (M, M[:0]):
        with pytest.raises(RuntimeError, match="ambiguous"):
            torch.is_nonzero(torch.from_numpy(bad))
        with pytest.raises(RuntimeError, match="ambiguous"):
            ak.is_nonzero(ak.asarray(bad))


def test_errors_name_the_values():
    with pytest.raises(RuntimeError, match="integer operands, got arraykit.float32"):
        ak.gcd(ak.asarray(M), ak.asarray(M))
    with pytest.raises(RuntimeError, match="different dtypes: arraykit.float32 and arraykit.float64"):
        ak.heaviside(ak.asarray(M), ak.asarray(M, dtype=ak.float64))
    with pytest.raises(RuntimeError, match="non-integer n, got -1"):
        ak.polygamma(-1, ak.asarray(POS))
    with pytest.raises(RuntimeError, match=r"greater than \(p-1\)/2 = 1.0 for p = 3"):
        ak.mvlgamma(ak.asarray(POS), 3)
    with pytest.raises(ValueError, match="'round'"):
        ak.div(ak.asarray(M), 2, rounding_mode="round")


# ----------------------------------------------------------------------------- in place


def _inplace_case(name):
    """(method call, input array) for the in-place function ``name``."""
    other = {"xlogy_": (2.0,), "ldexp_": None, "clamp_": (-0.2, 1.2), "clip_": (None, 1.2),
             "clamp_min_": (0.7,), "clamp_max_": (1.2,), "fill_": (3.0,)}  # bounds off M's values
    if name in ("gcd_", "lcm_"):
        return (lambda lib, x: getattr(lib, name)(x, x.flip(0) + 1)), ODD
    if name in ("acosh_", "arccosh_"):
        return (lambda lib, x: getattr(lib, name)(x)), POS + 1
    if name in ("atanh_", "arctanh_", "logit_", "erf_", "asin_", "acos_", "arcsin_", "arccos_"):
        return (lambda lib, x: getattr(lib, name)(x)), (UNIT + 1) / 2.5
    if name == "ldexp_":
        return (lambda lib, x: lib.ldexp_(x, lib.tensor(3))), M
    args = other.get(name, ())
    return (lambda lib, x: getattr(lib, name)(x, *args)), (POS if name in (
        "log_", "log2_", "log10_", "sqrt_", "rsqrt_", "log1p_") else M)


@pytest.mark.parametrize("name", sorted(set(torch_inplace_functions.INPLACE_NAMES)
                                        - {"detach_", "relu_"}))
def test_inplace_functions_write_through_a_view_with_torchs_gradient(name):
    op, array = _inplace_case(name)
    results = []
    for lib in (torch, ak):
        leaf = (torch.from_numpy(array.astype(np.float32) if array.dtype != np.int64 else array)
                if lib is torch else ak.asarray(array))
        floating = array.dtype != np.int64
        if floating:
            leaf.requires_grad_()
        base = leaf * 1 if floating else leaf.clone()
        view = base[1:]  # written through a view: the base sees the write
        assert op(lib, view) is view
        values = base.detach().numpy().copy()
        grad = None
        if floating:
            try:
                (base * base).sum().backward()
            except NotImplementedError:  # torch lacks some in-place derivatives (acosh_...):
                leaf.grad = None         # its out-of-place function's gradient is the oracle
                out = getattr(torch, name[:-1])(leaf[1:] * 1)
                (leaf[:1] * leaf[:1]).sum().add((out * out).sum()).backward()
            grad = leaf.grad.numpy().copy()
        results.append((values, grad))
    (want, want_grad), (got, got_grad) = results
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    if want_grad is not None:
        np.testing.assert_allclose(got_grad, want_grad, rtol=1e-4, atol=1e-5)


def test_inplace_on_a_leaf_that_requires_grad_raises_as_torch():
    for lib, leaf in ((torch, torch.ones(3, requires_grad=True)),
                      (ak, ak.ones(3).requires_grad_())):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            lib.sinc_(leaf)
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            leaf.clamp_min_(0.5)
    x = ak.ones(3).requires_grad_()
    with ak.no_grad():
        ak.exp2_(x)
    np.testing.assert_allclose(x.detach().numpy(), 2.0)


def test_inplace_methods_against_torch():
    cases = {
        "polygamma_": lambda x: x.polygamma_(1), "mvlgamma_": lambda x: x.add_(1).mvlgamma_(2),
        "igamma_": lambda x: x.igamma_(x.flip(0) + 0.5), "heaviside_": lambda x: x.heaviside_(x),
        "deg2rad_": lambda x: x.deg2rad_(), "rad2deg_": lambda x: x.rad2deg_(),
        "exp2_": lambda x: x.exp2_(), "i0_": lambda x: x.i0_(), "logit_": lambda x: x.logit_(),
        "igammac_": lambda x: x.igammac_(x.flip(0) + 0.5), "sinc_": lambda x: x.sinc_(),
    }
    for name, op in cases.items():
        results = []
        for lib in (torch, ak):
            leaf = lib.asarray(POS / 4) if lib is ak else torch.from_numpy(POS / 4)
            leaf.requires_grad_()
            x = leaf * 1
            assert op(x) is x
            if name not in ("heaviside_", "igamma_", "igammac_"):  # torch has none
                (x * x).sum().backward()
            results.append((x.detach().numpy(), None if leaf.grad is None else leaf.grad.numpy()))
        (want, want_grad), (got, got_grad) = results
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
        if want_grad is not None:
            np.testing.assert_allclose(got_grad, want_grad, rtol=1e-4, atol=1e-5, err_msg=name)


def test_inplace_refuses_a_dtype_it_cannot_hold():
    with pytest.raises(TypeError):
        ak.asarray(I).sinc_()
    with pytest.raises(RuntimeError):
        torch.from_numpy(I.copy()).sinc_()


# ----------------------------------------------------------------------------- nn spellings

RNG = np.random.default_rng(3)
X4 = RNG.standard_normal((2, 3, 5, 5)).astype(np.float32)
X3 = RNG.standard_normal((2, 3, 7)).astype(np.float32)
W2 = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
C3 = RNG.standard_normal(3).astype(np.float32)
P23 = (np.abs(RNG.standard_normal((2, 3))) + 0.1).astype(np.float32)
LABELS = np.array([[1.0, -1.0, 1.0], [-1.0, 1.0, 1.0]], np.float32)

NN = {
    "same as functional": (lambda lib, x, x3, w: (
        lib.conv2d(x, w, None, 1, 1), lib.max_pool2d(x, 2), lib.avg_pool1d(x3, 3, 2),
        lib.max_pool1d(x3, 2), lib.adaptive_avg_pool1d(x3, 4), lib.adaptive_max_pool1d(x3, 3),
        lib.max_pool1d_with_indices(x3, 2), lib.celu(x, 0.5), lib.selu(x), lib.hardshrink(x, 0.3),
        lib.threshold(x, 0.1, -2.0), lib.pixel_shuffle(x[:, :1].repeat(1, 4, 1, 1), 2),
        lib.channel_shuffle(x, 3), lib.cosine_similarity(x3, x3.flip(0)),
        lib.pairwise_distance(x3[0], x3[1]), lib.pdist(x3[0]),
        lib.conv_transpose1d(x3, w[:, :, 0].transpose(0, 1)[:, :3].contiguous()),
        lib.prelu(x, lib.full((3,), 0.2)), lib.rrelu(x)), X4, X3, W2),
    "norms with ATen's arguments": (lambda lib, x, w, b: (
        lib.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, False),
        lib.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False),
        lib.layer_norm(x, (5, 5), None, None, 1e-5, False),
        lib.group_norm(x, 3, w, b, 1e-5, False), lib.rms_norm(x, (5,))), X4, C3, C3[::-1].copy()),
    "losses with reduction codes": (lambda lib, x, y, lab: (
        lib.binary_cross_entropy_with_logits(x, y.sigmoid(), None, None, 2),
        lib.cosine_embedding_loss(x, y, lab[:, 0], 0.1, 0),
        lib.hinge_embedding_loss(x, lab, 0.5, 1), lib.kl_div(x.log_softmax(1), y.softmax(1), 2),
        lib.kl_div(x, y, 1, log_target=True), lib.margin_ranking_loss(x, y, lab, 0.2, 1),
        lib.poisson_nll_loss(x, y.abs(), True, True, 1e-8, 1),
        lib.triplet_margin_loss(x, y, y.flip(0), 1.0, 2.0, 1e-6, True, 0)),
        P23, P23[::-1].copy(), LABELS),
    "dropouts that keep everything": (lambda lib, x: (
        lib.dropout(x, 0.5, False), lib.alpha_dropout(x, 0.0, True),
        lib.feature_dropout(x, 0.3, False), lib.feature_alpha_dropout(x, 0.2, False)), X4),
}


@pytest.mark.parametrize("name", NN)
def test_nn_spellings_against_torch(name):
    case, *arrays = NN[name]
    check(case, *arrays, rtol=1e-4)


def test_ctc_loss_with_a_reduction_code():
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((6, 2, 4)).astype(np.float32)
    targets = np.array([[1, 2, 1], [3, 3, 0]], np.int64)
    got = ak.ctc_loss(ak.asarray(logits).log_softmax(2), ak.asarray(targets), [6, 5], [3, 2], 0, 2)
    want = torch.ctc_loss(torch.from_numpy(logits).log_softmax(2), torch.from_numpy(targets),
                          [6, 5], [3, 2], 0, 2)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4)


def test_functional_spellings_are_the_same_objects():
    F = ak.nn.functional
    for name in ("conv1d", "conv2d", "max_pool2d", "celu_", "selu", "pixel_shuffle", "pdist",
                 "rms_norm", "threshold_", "prelu"):
        assert getattr(ak, name) is getattr(F, name), name
    with pytest.raises(ValueError, match="reduction must be PyTorch's code .* got 'mean'"):
        ak.kl_div(ak.asarray(P23), ak.asarray(P23), "mean")


def test_feature_dropout_zeroes_whole_channels_and_writes_in_place():
    x = ak.ones((64, 8, 3))
    out = ak.feature_dropout(x, 0.5, True).numpy()
    per_channel = out.reshape(64 * 8, 3)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert np.all(per_channel.min(1) == per_channel.max(1))  # a channel is kept or dropped whole
    assert 0.3 < (per_channel[:, 0] == 0).mean() < 0.7
    y = ak.ones((4, 3, 2))
    assert ak.dropout_(y, 1.0, True) is y and not np.any(y.numpy())
    z = ak.ones((4, 3, 2))
    ak.feature_dropout_(z, 0.0, True)
    np.testing.assert_array_equal(z.numpy(), 1.0)
    with pytest.raises(RuntimeError, match="channel dimension"):
        ak.feature_dropout(ak.ones(3), 0.5, True)


def test_dropout_drops_with_torchs_scale():
    x = ak.ones(20000)
    out = ak.dropout(x, 0.25, True).numpy()
    assert set(np.unique(out)) == {0.0, np.float32(1 / 0.75)}
    assert abs((out == 0).mean() - 0.25) < 0.02


def test_view_spelling_results_are_views():
    x = ak.asarray(M)
    same(ak.t(x), torch.t(torch.from_numpy(M)), view=True)
    assert ak.detach(x)._storage is x._storage
    assert ak.clone(x)._storage is not x._storage
