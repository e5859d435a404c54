"""arraykit.nn recurrent layers (RNN, LSTM, GRU and their cells) against torch.nn, with
weights copied from the torch module through state_dict -> NumPy -> load_state_dict:
outputs, final states, every parameter's and input's gradient, float32 and float64,
batch_first both ways, bidirectional, several layers, proj_size, initial states,
unbatched input, dropout, errors; and under arraykit.jit (one compilation per
sequence length)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import arraykit as ak
from arraykit import nn
from arraykit.kernels import launch

TORCH = {"RNN": torch.nn.RNN, "LSTM": torch.nn.LSTM, "GRU": torch.nn.GRU, "RNNCell": torch.nn.RNNCell,
         "LSTMCell": torch.nn.LSTMCell, "GRUCell": torch.nn.GRUCell}
DTYPES = {np.float32: (torch.float32, 1e-5), np.float64: (torch.float64, 1e-10)}


def pair(name, dtype=np.float32, **kw):
    """An arraykit layer and a torch layer with the same weights."""
    torch.manual_seed(0)
    t = TORCH[name](**kw).to(DTYPES[dtype][0])
    m = getattr(nn, name)(**kw)
    if dtype == np.float64:
        m.double()
    m.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    return m, t


def leaves(out):
    """The tensors of a (nested) result, in order."""
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in leaves(o)]
    return [out]


def call(module, args):
    """``module(x)``, ``module(x, h)`` or ``module(x, (h, c))``."""
    if len(args) <= 2:
        return module(*args)
    return module(args[0], tuple(args[1:]))


def compare(m, t, inputs, dtype):
    """Forward values, then gradients of sum(result * w) for every parameter and input."""
    tol = DTYPES[dtype][1] * 10
    rng = np.random.default_rng(1)
    a_in = [None if x is None else ak.asarray(x).requires_grad_() for x in inputs]
    t_in = [None if x is None else torch.tensor(x, requires_grad=True) for x in inputs]

    out, tout = call(m, a_in), call(t, t_in)
    a_res, t_res = leaves(out), leaves(tout)
    assert len(a_res) == len(t_res)
    total, ttotal = 0, 0
    for a, b in zip(a_res, t_res):
        assert a.shape == tuple(b.shape) and a.dtype == getattr(ak, str(b.dtype).split(".")[1])
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=tol, atol=tol)
        w = rng.standard_normal(b.shape).astype(dtype)
        total = total + (a * ak.asarray(w)).sum()
        ttotal = ttotal + (b * torch.tensor(w)).sum()
    total.backward()
    ttotal.backward()
    tparams = dict(t.named_parameters())
    assert [n for n, _ in m.named_parameters()] == list(tparams)
    for name, p in m.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tparams[name].grad.numpy(), rtol=tol * 10,
                                   atol=tol * 10, err_msg=name)
    for a, b in zip(a_in, t_in):
        if a is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=tol * 10, atol=tol * 10)
    return out


def states(rng, dtype, *shapes):
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


F32, F64 = np.float32, np.float64
LAYERS = [
    ("LSTM", dict(input_size=3, hidden_size=4), F32),
    ("LSTM", dict(input_size=3, hidden_size=4, num_layers=2, bidirectional=True), F64),
    ("LSTM", dict(input_size=3, hidden_size=5, num_layers=2, proj_size=2, batch_first=True), F32),
    ("LSTM", dict(input_size=3, hidden_size=5, bidirectional=True, proj_size=3, bias=False), F64),
    ("GRU", dict(input_size=3, hidden_size=4, num_layers=2, bidirectional=True, batch_first=True), F32),
    ("GRU", dict(input_size=3, hidden_size=4, bias=False), F64),
    ("RNN", dict(input_size=3, hidden_size=4, num_layers=2), F64),
    ("RNN", dict(input_size=3, hidden_size=4, nonlinearity="relu", bidirectional=True), F32),
]


def _ids(case):
    name, kw, dtype = case
    options = [f"{k}={v}" for k, v in kw.items() if k not in ("input_size", "hidden_size")]
    return "-".join([name, *options, np.dtype(dtype).name])


@pytest.mark.parametrize("name,kw,dtype", LAYERS, ids=[_ids(c) for c in LAYERS])
def test_layers_match_torch(name, kw, dtype):
    m, t = pair(name, dtype, **kw)
    rng = np.random.default_rng(0)
    steps, batch = 5, 2
    shape = (batch, steps, 3) if kw.get("batch_first") else (steps, batch, 3)
    x = rng.standard_normal(shape).astype(dtype)
    compare(m, t, [x], dtype)  # zero initial states
    m.zero_grad()
    t.zero_grad()
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    out_size = kw.get("proj_size") or kw["hidden_size"]
    if name == "LSTM":
        h0, c0 = states(rng, dtype, (layers, batch, out_size), (layers, batch, kw["hidden_size"]))
        compare(m, t, [x, h0, c0], dtype)
    else:
        (h0,) = states(rng, dtype, (layers, batch, out_size))
        compare(m, t, [x, h0], dtype)


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_unbatched_input(name):
    kw = dict(input_size=3, hidden_size=4, bidirectional=True)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    hidden = states(rng, np.float32, *[(2, 4)] * (2 if name == "LSTM" else 1))
    m, t = pair(name, **kw)
    out = compare(m, t, [x, *hidden], np.float32)
    assert out[0].shape == (5, 8)
    m_bf, t_bf = pair(name, batch_first=True, **kw)
    compare(m_bf, t_bf, [x], np.float32)


def test_parameters_init_and_repr_as_torch():
    for kw in (dict(input_size=10, hidden_size=4, num_layers=2, bidirectional=True, proj_size=2,
                    batch_first=True, dropout=0.1),
               dict(input_size=10, hidden_size=4, bias=False)):
        m, t = nn.LSTM(**kw), torch.nn.LSTM(**kw)
        assert {k: v.shape for k, v in m.state_dict().items()} == {
            k: tuple(v.shape) for k, v in t.state_dict().items()}
        assert repr(m) == repr(t)
        bound = 1 / np.sqrt(4)
        values = np.concatenate([p.numpy().ravel() for p in m.parameters()])
        assert values.min() >= -bound and values.max() <= bound and values.std() > bound / 3
    for name in ("GRU", "RNN"):
        assert repr(getattr(nn, name)(3, 4, 2)) == repr(TORCH[name](3, 4, 2))
    assert repr(nn.RNN(3, 4, nonlinearity="relu", bias=False)) == repr(torch.nn.RNN(3, 4, nonlinearity="relu", bias=False))
    assert len(nn.LSTM(3, 4, 2, bidirectional=True).all_weights) == 4
    for name in ("RNNCell", "LSTMCell", "GRUCell"):
        m, t = getattr(nn, name)(3, 4, bias=False), TORCH[name](3, 4, bias=False)
        assert repr(m) == repr(t)
        assert [(k, v.shape) for k, v in m.state_dict().items()] == [
            (k, tuple(v.shape)) for k, v in t.state_dict().items()]
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu")) == repr(torch.nn.RNNCell(3, 4, nonlinearity="relu"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name,kw", [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}),
                                     ("LSTMCell", {}), ("GRUCell", {}), ("GRUCell", {"bias": False})])
def test_cells_match_torch(name, kw, dtype):
    m, t = pair(name, dtype, input_size=3, hidden_size=4, **kw)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3)).astype(dtype)
    compare(m, t, [x], dtype)
    n_states = 2 if name == "LSTMCell" else 1
    for batch_shape in [(2,), ()]:
        m.zero_grad()
        t.zero_grad()
        xs = rng.standard_normal(batch_shape + (3,)).astype(dtype)
        compare(m, t, [xs, *states(rng, dtype, *[batch_shape + (4,)] * n_states)], dtype)


def test_lstm_training_loop_with_cells_matches_layer():
    """An LSTMCell stepped over time gives the one-layer LSTM's output."""
    layer = nn.LSTM(3, 4)
    cell = nn.LSTMCell(3, 4)
    cell.load_state_dict({k[:-3]: v for k, v in layer.state_dict().items()})
    x = ak.asarray(np.random.default_rng(0).standard_normal((5, 2, 3)).astype(np.float32))
    out, (_, c) = layer(x)
    hc = None
    for step in range(5):
        hc = cell(x[step], hc)
        np.testing.assert_allclose(hc[0].numpy(), out[step].numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hc[1].numpy(), c[0].numpy(), rtol=1e-5, atol=1e-6)


def test_errors_as_torch():
    lstm = nn.LSTM(10, 4)
    with pytest.raises(RuntimeError, match=r"input.size\(-1\) must be equal to input_size. Expected 10, got 7"):
        lstm(ak.zeros((5, 3, 7)))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(1, 3, 4\), got \[1, 2, 4\]"):
        lstm(ak.zeros((5, 3, 10)), (ak.zeros((1, 2, 4)), ak.zeros((1, 3, 4))))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size \(1, 3, 4\), got \[1, 3, 5\]"):
        lstm(ak.zeros((5, 3, 10)), (ak.zeros((1, 3, 4)), ak.zeros((1, 3, 5))))
    with pytest.raises(ValueError, match="LSTM: Expected input to be 2D or 3D, got 4D"):
        lstm(ak.zeros((5, 3, 10, 1)))
    with pytest.raises(ValueError, match="RNN input dtype"):
        lstm(ak.zeros((5, 3, 10), dtype=ak.float64))
    with pytest.raises(RuntimeError, match="For batched 3-D input, hx should also be 3-D but got 2-D"):
        nn.GRU(10, 4)(ak.zeros((5, 3, 10)), ak.zeros((3, 4)))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(2, 3, 4\), got \[1, 3, 4\]"):
        nn.RNN(10, 4, 2)(ak.zeros((5, 3, 10)), ak.zeros((1, 3, 4)))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 7 expected 10"):
        nn.LSTMCell(10, 4)(ak.zeros((3, 7)))
    with pytest.raises(RuntimeError, match="Input batch size 3 doesn't match hidden0 batch size 2"):
        nn.GRUCell(10, 4)(ak.zeros((3, 10)), ak.zeros((2, 4)))
    with pytest.raises(RuntimeError, match="hidden0 has inconsistent hidden_size: got 5, expected 4"):
        nn.RNNCell(10, 4)(ak.zeros((3, 10)), ak.zeros((3, 5)))
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.GRU(3, 4, dropout=1.5)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.LSTM(3, 4, dropout=0.2)


def test_dropout_between_layers():
    kw = dict(input_size=3, hidden_size=4, num_layers=2, dropout=1.0, bidirectional=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m, t = pair("LSTM", **kw)
    x = np.random.default_rng(0).standard_normal((5, 2, 3)).astype(np.float32)
    compare(m, t, [x], np.float32)  # p = 1 drops everything: deterministic, as torch's
    m, t = pair("GRU", input_size=3, hidden_size=4, num_layers=2, dropout=0.5)
    xa = ak.asarray(x)
    ak.manual_seed(3)
    first = m(xa)[0].numpy()
    second = m(xa)[0].numpy()
    ak.manual_seed(3)
    np.testing.assert_array_equal(m(xa)[0].numpy(), first)  # draws from arraykit.random
    assert not np.allclose(first, second)
    m.eval()
    t.eval()
    compare(m, t, [x], np.float32)  # no dropout in eval mode
    m.train()
    m0, _ = pair("GRU", input_size=3, hidden_size=4, num_layers=2, dropout=0.0)
    np.testing.assert_array_equal(m0(xa)[0].numpy(), m0(xa)[0].numpy())


def test_one_kernel_compiled_once_per_sequence_length():
    m = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    x = ak.asarray(np.random.default_rng(0).standard_normal((6, 2, 3)).astype(np.float32))
    with ak.no_grad():
        m(x)
        before = launch.cache_info()["traces"]
        m(x)
        m(x[:, :1])  # a batch-1 view: another shape
        after_view = launch.cache_info()["traces"]
        m(x)
    assert launch.cache_info()["traces"] == after_view and after_view - before <= 2


def test_lstm_under_jit_matches_eager_and_compiles_once_per_length():
    m = nn.LSTM(3, 4, num_layers=2, batch_first=True)
    params = list(m.parameters())

    def loss_and_grads(x, h0, c0):
        out, (h, c) = m(x, (h0, c0))
        loss = (out * out).mean() + h.sum() + c.sum()
        return loss, ak.autograd.grad(loss, params)

    rng = np.random.default_rng(0)
    h0, c0 = (ak.asarray(rng.standard_normal((2, 2, 4)).astype(np.float32)) for _ in range(2))
    xs = [ak.asarray(rng.standard_normal((2, n, 3)).astype(np.float32)) for n in (5, 5, 7, 7, 5)]
    jitted = ak.jit(loss_and_grads)
    for x in xs:
        loss, grads = loss_and_grads(x, h0, c0)
        jloss, jgrads = jitted(x, h0, c0)
        np.testing.assert_allclose(jloss.item(), loss.item(), rtol=1e-5)
        for g, jg in zip(grads, jgrads):
            np.testing.assert_allclose(jg.numpy(), g.numpy(), rtol=1e-4, atol=1e-6)
    assert jitted.compile_count == 2  # lengths 5 and 7


@pytest.mark.parametrize("batch_first,side", [(False, "right"), (True, "left")])
def test_pad_sequence_matches_torch(batch_first, side):
    from arraykit.nn.utils.rnn import pad_sequence

    rng = np.random.default_rng(0)
    seqs = [rng.standard_normal((n, 2)).astype(np.float32) for n in (3, 1, 4)]
    a = [ak.asarray(s).requires_grad_() for s in seqs]
    t = [torch.tensor(s, requires_grad=True) for s in seqs]
    out = pad_sequence(a, batch_first=batch_first, padding_value=-1.5, padding_side=side)
    tout = torch.nn.utils.rnn.pad_sequence(t, batch_first=batch_first, padding_value=-1.5,
                                           padding_side=side)
    np.testing.assert_array_equal(out.numpy(), tout.detach().numpy())
    w = rng.standard_normal(tout.shape).astype(np.float32)
    (out * ak.asarray(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    for x, y in zip(a, t):
        np.testing.assert_array_equal(x.grad.numpy(), y.grad.numpy())


def test_strided_input_and_states():
    """A transposed (non-contiguous) input and a sliced initial state read in place."""
    m = nn.GRU(3, 4)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    h = rng.standard_normal((1, 2, 8)).astype(np.float32)
    xt, ht = ak.asarray(x).transpose(0, 1), ak.asarray(h)[..., ::2]
    assert not xt.is_contiguous() and not ht.is_contiguous()
    out, hn = m(xt, ht)
    ref, ref_h = m(ak.asarray(np.ascontiguousarray(x.transpose(1, 0, 2))),
                   ak.asarray(np.ascontiguousarray(h[..., ::2])))
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    np.testing.assert_array_equal(hn.numpy(), ref_h.numpy())
