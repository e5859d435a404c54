"""Recurrent layers as pure JAX kernels (launched through
:func:`arraykit.kernels.launch.apply`, so their gradients are JAX's VJP of the scan).

Gate order and equations are PyTorch's:

* ``RNN_TANH``/``RNN_RELU``: ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``;
* ``LSTM`` (gates i, f, g, o): ``c' = f * c + i * g``, ``h' = o * tanh(c')``, then
  ``h' = h' W_hr^T`` with a projection (``proj_size``);
* ``GRU`` (gates r, z, n): ``n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn))``,
  ``h' = (1 - z) * n + z * h``.

The input projection of every time step is one matmul before the loop; the loop
itself is one ``lax.scan`` per layer and direction, all inside one kernel.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _dot(a, w, precision):
    """``a @ w.T`` over the last axis of ``a``."""
    return lax.dot_general(a, w, (((a.ndim - 1,), (1,)), ((), ())), precision=precision)


def _split(weights, bias, proj):
    """``(w_ih, w_hh, b_ih, b_hh, w_hr)`` from PyTorch's per-direction list (absent: None)."""
    w_ih, w_hh = weights[0], weights[1]
    b_ih, b_hh = (weights[2], weights[3]) if bias else (None, None)
    w_hr = weights[-1] if proj else None
    return w_ih, w_hh, b_ih, b_hh, w_hr


def input_gates(mode, x, w_ih, b_ih, b_hh, precision):
    """The input's share of the gates, ``x W_ih^T + b_ih`` (plus ``b_hh`` except for
    the GRU, whose ``b_hn`` sits inside ``r * (...)``)."""
    gx = _dot(x, w_ih, precision)
    if b_ih is not None:
        gx = gx + b_ih
        if mode != "GRU":
            gx = gx + b_hh
    return gx


def step(mode, gx, h, c, w_hh, b_hh, w_hr, precision):
    """One time step from the input gates ``gx``: ``(h', c')`` (``c'`` None but for the LSTM)."""
    gh = _dot(h, w_hh, precision)
    if mode == "GRU":
        if b_hh is not None:
            gh = gh + b_hh
        xr, xz, xn = jnp.split(gx, 3, axis=-1)
        hr, hz, hn = jnp.split(gh, 3, axis=-1)
        r = jax.nn.sigmoid(xr + hr)
        z = jax.nn.sigmoid(xz + hz)
        n = jnp.tanh(xn + r * hn)
        return (1 - z) * n + z * h, None
    gates = gx + gh
    if mode == "RNN_TANH":
        return jnp.tanh(gates), None
    if mode == "RNN_RELU":
        return jax.nn.relu(gates), None
    i, f, g, o = jnp.split(gates, 4, axis=-1)
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    h = jax.nn.sigmoid(o) * jnp.tanh(c)
    if w_hr is not None:
        h = _dot(h, w_hr, precision)
    return h, c


def _direction(mode, x, h, c, weights, bias, proj, reverse, precision):
    """One layer in one direction over ``x`` (T, B, I): ``(outputs (T, B, H), h_n, c_n)``."""
    w_ih, w_hh, b_ih, b_hh, w_hr = _split(weights, bias, proj)
    gx = input_gates(mode, x, w_ih, b_ih, b_hh, precision)

    def advance(carry, g):
        h, c = step(mode, g, *carry, w_hh, b_hh, w_hr, precision)
        return (h, c), h

    (h, c), out = lax.scan(advance, (h, c), gx, reverse=reverse)
    return out, h, c


def recurrent(x, h0, *rest):
    """A whole multi-layer (bidirectional) RNN, LSTM or GRU.

    Operands: ``x`` (T, B, I), or (B, T, I) with ``batch_first``; ``h0``
    (layers * directions, B, H_out); for the LSTM ``c0`` (layers * directions, B, H);
    PyTorch's flat weight list (per layer and direction ``w_ih, w_hh[, b_ih, b_hh][,
    w_hr]``); with dropout, the scaled keep masks (layers - 1, T, B, H_out *
    directions) applied to every layer's output but the last. The last entry is
    ``options = (mode, layers, directions, bias, proj, batch_first, dropout,
    precision)``. Returns ``(output, h_n[, c_n])``.
    """
    *arrays, (mode, layers, directions, bias, proj, batch_first, dropout, precision) = rest
    lstm = mode == "LSTM"
    c0 = arrays.pop(0) if lstm else None
    masks = arrays.pop() if dropout else None
    per = 2 + 2 * bias + (proj > 0)
    if batch_first:
        x = jnp.swapaxes(x, 0, 1)
    hs, cs = [], []
    for layer in range(layers):
        outs = []
        for d in range(directions):
            index = layer * directions + d
            weights = arrays[index * per:(index + 1) * per]
            out, h, c = _direction(mode, x, h0[index], c0[index] if lstm else None, weights,
                                   bias, proj, d == 1, precision)
            outs.append(out)
            hs.append(h)
            cs.append(c)
        x = outs[0] if directions == 1 else jnp.concatenate(outs, axis=-1)
        if masks is not None and layer < layers - 1:
            x = x * masks[layer]
    output = jnp.swapaxes(x, 0, 1) if batch_first else x
    if lstm:
        return output, jnp.stack(hs), jnp.stack(cs)
    return output, jnp.stack(hs)


def cell(x, h, *rest):
    """One step of ``RNNCell``/``LSTMCell``/``GRUCell`` on ``x`` (B, I) and ``h`` (B, H)
    (then ``c`` for the LSTM), weights ``w_ih, w_hh[, b_ih, b_hh]``; options
    ``(mode, bias, precision)``. Returns ``h'`` (a tuple ``(h', c')`` for the LSTM)."""
    *arrays, (mode, bias, precision) = rest
    c = arrays.pop(0) if mode == "LSTM" else None
    w_ih, w_hh, b_ih, b_hh, _ = _split(arrays, bias, 0)
    gx = input_gates(mode, x, w_ih, b_ih, b_hh, precision)
    h, c = step(mode, gx, h, c, w_hh, b_hh, None, precision)
    return (h, c) if mode == "LSTM" else h


def keep_masks(key, shape, keep, dtype):
    """Dropout's scaled keep masks: ``1 / keep`` where kept, else 0 (all 0 when ``keep`` is 0)."""
    kept = jax.random.bernoulli(key, keep, shape)
    return jnp.where(kept, 1 / keep if keep else 0.0, 0.0).astype(dtype)
