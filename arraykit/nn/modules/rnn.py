"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their one-step cells.

A layer's forward is one kernel (:func:`arraykit.nn.rnn_kernels.recurrent`): every
layer and direction, the time loop a ``lax.scan``, gradients JAX's VJP of it. It is
compiled once per input shape (so once per sequence length), eagerly and under
``arraykit.jit``. Parameters, their names and order, initialisation, gate order,
shapes and errors are PyTorch's.
"""

from __future__ import annotations

import math
import numbers
import warnings

from ...api import creation as C
from ...core import precision as P
from ...kernels.launch import apply
from ...tensors.tensor_type import require_tensor
from .. import init
from .. import rnn_kernels as RK
from ..module import Module
from ..parameter import Parameter
from .allocation import _empty

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


def _check_sizes(input_size, hidden_size, bias):
    if not isinstance(bias, bool):
        raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
    for name, value in (("input_size", input_size), ("hidden_size", hidden_size)):
        if not isinstance(value, int):
            raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
        if value <= 0:
            raise ValueError(f"{name} must be greater than zero")


def _reset(module):
    """PyTorch's initialisation of recurrent weights: every parameter ``U(-1/√H, 1/√H)``."""
    bound = 1.0 / math.sqrt(module.hidden_size)
    for weight in module.parameters():
        init.uniform_(weight, -bound, bound)


def _precision(x):
    return P.dot_precision(x.dtype.np, x._storage.device)


def _check_dtype(x, weight):
    if x.dtype != weight.dtype:
        raise ValueError(
            f"RNN input dtype ({x.dtype}) does not match weight dtype ({weight.dtype}). Convert "
            f"input: input.to({weight.dtype}), or convert model: model.to({x.dtype})"
        )


class RNNBase(Module):
    """What ``RNN``, ``LSTM`` and ``GRU`` share: PyTorch's constructor, parameters
    ``weight_ih_l{k}``, ``weight_hh_l{k}``, ``bias_ih_l{k}``, ``bias_hh_l{k}`` (and
    ``weight_hr_l{k}`` with ``proj_size``; ``_reverse`` for the backward direction),
    and the forward over a (T, B, I), (B, T, I) with ``batch_first`` or unbatched (T, I)
    input."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if mode not in RK.GATES:
            raise ValueError("Unrecognized RNN mode: " + str(mode))
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of an "
                "element being zeroed"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
                f"num_layers={num_layers}", stacklevel=2)
        _check_sizes(input_size, hidden_size, bias)
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        directions = 2 if bidirectional else 1
        gates = RK.GATES[mode] * hidden_size
        out = proj_size or hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(directions):
                inputs = input_size if layer == 0 else out * directions
                shapes = [("weight_ih", (gates, inputs)), ("weight_hh", (gates, out))]
                if bias:
                    shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                names = [name + suffix for name, _ in shapes]
                for name, (_, shape) in zip(names, shapes):
                    setattr(self, name, Parameter(_empty(shape, device, dtype)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        """The parameters per layer and direction, as lists in PyTorch's order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self):
        """PyTorch's cuDNN weight compaction; arraykit's kernel reads the parameters as
        they are, so there is nothing to do."""

    def reset_parameters(self):
        """Draw every weight and bias from ``U(-1/√hidden_size, 1/√hidden_size)``."""
        _reset(self)

    def _hidden_shape(self, batch, size):
        return (self.num_layers * (2 if self.bidirectional else 1), batch, size)

    def check_input(self, input, batch_sizes):  # noqa: A002 (PyTorch's names)
        """PyTorch's hook: ``input`` (batched, 3-D) has the weights' dtype and
        ``input_size`` features (``batch_sizes`` is a packed sequence's, always None
        here)."""
        _check_dtype(input, self._flat_weights[0])
        if input.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                f"got {input.shape[-1]}"
            )

    def get_expected_hidden_size(self, input, batch_sizes):  # noqa: A002
        """PyTorch's hook: the shape ``h_0`` must have for ``input``."""
        batch = input.shape[0 if self.batch_first else 1]
        return self._hidden_shape(batch, self.proj_size or self.hidden_size)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        """PyTorch's hook: RuntimeError (``msg`` formatted with both shapes) unless
        ``hx`` has ``expected_hidden_size``."""
        require_tensor(hx, type(self).__name__)
        if tuple(hx.shape) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.shape)))

    def check_forward_args(self, input, hidden, batch_sizes):  # noqa: A002
        """PyTorch's hook, which :meth:`forward` calls with the batched input and the
        initial state: :meth:`check_input`, then :meth:`check_hidden_size` against
        :meth:`get_expected_hidden_size`."""
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        """PyTorch's hook: ``hx`` with its batch reordered by ``permutation`` (None, for
        arraykit has no packed sequences to sort: ``hx`` itself)."""
        if permutation is None:
            return hx
        return hx.index_select(1, permutation)

    def _states(self, x, hx, batched):
        """The initial states as a list (``[h0]``, ``[h0, c0]`` for the LSTM), batched,
        zeros where not given, checked by :meth:`check_forward_args`."""
        batch = x.shape[0 if self.batch_first else 1]
        sizes = [self.proj_size or self.hidden_size]
        lstm = self.mode == "LSTM"
        if lstm:
            sizes.append(self.hidden_size)
        if hx is None:
            states = [C.zeros(self._hidden_shape(batch, size), dtype=x.dtype, device=x.device)
                      for size in sizes]
        else:
            states = self._given_states(hx, batched, lstm)
        hidden = tuple(states) if lstm else states[0]
        if hx is not None:
            hidden = self.permute_hidden(hidden, None)
        self.check_forward_args(x, hidden, None)
        states = list(hidden) if lstm else [hidden]
        for s in states:
            _check_dtype(s, self._flat_weights[0])
        return states

    def _given_states(self, hx, batched, lstm):
        states = list(hx) if lstm else [hx]
        if lstm and len(states) != 2:
            raise RuntimeError(f"LSTM: hx must be a tuple (h_0, c_0), got {len(states)} tensors")
        for s in states:
            require_tensor(s, type(self).__name__)
        ranks = [s.ndim for s in states]
        want = 3 if batched else 2
        if any(r != want for r in ranks):
            kind = "batched 3-D" if batched else "unbatched 2-D"
            if lstm:
                got = ", ".join(f"{r}-D" for r in ranks)
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                   f"({got}) tensors")
            raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got {ranks[0]}-D tensor")
        return states if batched else [s.unsqueeze(1) for s in states]

    def _keep_masks(self, x):
        """Dropout's scaled keep masks between layers, or None (eval, no dropout, one layer)."""
        if not (self.training and self.dropout > 0 and self.num_layers > 1):
            return None
        from ...random import draw

        steps, batch = (x.shape[1], x.shape[0]) if self.batch_first else x.shape[:2]
        width = (self.proj_size or self.hidden_size) * (2 if self.bidirectional else 1)
        shape = (self.num_layers - 1, steps, batch, width)
        return draw(RK.keep_masks, (), (shape, 1.0 - self.dropout, x.dtype.np), None, x.device)

    def forward(self, input, hx=None):
        """``(output, h_n)`` (``(output, (h_n, c_n))`` for the LSTM) as PyTorch's."""
        name = {"LSTM": "LSTM", "GRU": "GRU"}.get(self.mode, "RNN")
        require_tensor(input, name)
        if input.ndim not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D tensor instead")
        batched = input.ndim == 3
        x = input if batched else input.unsqueeze(0 if self.batch_first else 1)
        states = self._states(x, hx, batched)
        masks = self._keep_masks(x)
        operands = (x, *states, *self._flat_weights) + (() if masks is None else (masks,))
        options = (self.mode, self.num_layers, 2 if self.bidirectional else 1, self.bias,
                   self.proj_size, self.batch_first, masks is not None, _precision(x))
        output, *finals = apply(RK.recurrent, operands, (options,), multiple=True)
        if not batched:
            output = output.squeeze(0 if self.batch_first else 1)
            finals = [f.squeeze(1) for f in finals]
        return output, self.permute_hidden(tuple(finals) if self.mode == "LSTM" else finals[0], None)

    def extra_repr(self):
        """PyTorch's summary: sizes and the options that differ from the defaults."""
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """Elman RNN, ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` with
    ``nonlinearity`` ``'tanh'`` (default) or ``'relu'``, as ``torch.nn.RNN``."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)


class LSTM(RNNBase):
    """Long short-term memory (gates i, f, g, o; a projection of ``h`` to ``proj_size``
    when it is positive), as ``torch.nn.LSTM``; forward returns ``(output, (h_n, c_n))``."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, device, dtype)

    def get_expected_cell_size(self, input, batch_sizes):  # noqa: A002 (PyTorch's names)
        """PyTorch's hook: the shape ``c_0`` must have for ``input``."""
        return self._hidden_shape(input.shape[0 if self.batch_first else 1], self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes):  # noqa: A002
        """PyTorch's hook for ``(h_0, c_0)``: :meth:`RNNBase.check_input`, then each state's
        size."""
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        """PyTorch's hook: both states' batches reordered by ``permutation`` (None:
        ``hx`` itself)."""
        if permutation is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)


class GRU(RNNBase):
    """Gated recurrent unit (gates r, z, n), as ``torch.nn.GRU``."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device=device, dtype=dtype)


# ---------------------------------------------------------------------- cells


class RNNCellBase(Module):
    """What the cells share: ``weight_ih`` (G*H, I), ``weight_hh`` (G*H, H),
    ``bias_ih``/``bias_hh`` (G*H,), PyTorch's initialisation, one-step kernel."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        _check_sizes(input_size, hidden_size, bias)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        gates = num_chunks * hidden_size
        self.weight_ih = Parameter(_empty((gates, input_size), device, dtype))
        self.weight_hh = Parameter(_empty((gates, hidden_size), device, dtype))
        self.bias_ih = Parameter(_empty((gates,), device, dtype)) if bias else None
        self.bias_hh = Parameter(_empty((gates,), device, dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        """Draw every weight and bias from ``U(-1/√hidden_size, 1/√hidden_size)``."""
        _reset(self)

    def _step(self, mode, input, states):
        """Run one step on ``input`` (B, I) or (I,) and ``states`` (tensors or None)."""
        name = type(self).__name__
        require_tensor(input, name)
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        _check_dtype(x, self.weight_ih)
        if x.shape[1] != self.input_size:
            raise RuntimeError(
                f"input has inconsistent input_size: got {x.shape[1]} expected {self.input_size}")
        checked = []
        for i, s in enumerate(states):
            if s is None:
                s = C.zeros((x.shape[0], self.hidden_size), dtype=x.dtype, device=x.device)
            else:
                require_tensor(s, name)
                if s.ndim not in (1, 2):
                    what = f"hx[{i}]" if len(states) > 1 else "hidden"
                    raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {s.ndim}D instead")
                if not batched:
                    s = s.unsqueeze(0)
                if s.shape[0] != x.shape[0]:
                    raise RuntimeError(
                        f"Input batch size {x.shape[0]} doesn't match hidden{i} batch size {s.shape[0]}")
                if s.shape[1] != self.hidden_size:
                    raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {s.shape[1]}, "
                                       f"expected {self.hidden_size}")
                _check_dtype(s, self.weight_ih)
            checked.append(s)
        weights = (self.weight_ih, self.weight_hh)
        if self.bias:
            weights += (self.bias_ih, self.bias_hh)
        options = (mode, self.bias, _precision(x))
        out = apply(RK.cell, (x, *checked, *weights), (options,), multiple=mode == "LSTM")
        if mode == "LSTM":
            return tuple(o if batched else o.squeeze(0) for o in out)
        return out if batched else out.squeeze(0)

    def extra_repr(self):
        """``input_size, hidden_size`` and the options that differ from the defaults."""
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s


class RNNCell(RNNCellBase):
    """One Elman RNN step, ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``, as
    ``torch.nn.RNNCell(input_size, hidden_size, bias=True, nonlinearity='tanh')``."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        """``h'`` (zeros for a missing ``hx``)."""
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        return self._step(mode, input, [hx])


class LSTMCell(RNNCellBase):
    """One LSTM step (gates i, f, g, o), as ``torch.nn.LSTMCell(input_size, hidden_size,
    bias=True)``; forward returns ``(h', c')``."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        """``(h', c')`` from ``hx = (h, c)`` (zeros when None)."""
        return self._step("LSTM", input, [None, None] if hx is None else list(hx))


class GRUCell(RNNCellBase):
    """One GRU step (gates r, z, n), as ``torch.nn.GRUCell(input_size, hidden_size,
    bias=True)``."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        """``h'`` (zeros for a missing ``hx``)."""
        return self._step("GRU", input, [hx])
