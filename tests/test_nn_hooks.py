"""PyTorch's overridable module hooks: a subclass that overrides one behaves as the same
subclass of the torch module does (``_conv_forward``, ConvTranspose's ``_output_padding``,
BatchNorm's ``_check_input_dim``, the RNNs' ``check_forward_args``/``permute_hidden``,
``Module._apply``, ``_save_to_state_dict``/``_load_from_state_dict``, extra state,
``extra_repr``, ``_get_name``, ``reset_parameters``)."""

import collections
import re

import numpy as np
import pytest
import torch

import arraykit as ak
from arraykit import nn

LIBS = {"arraykit": (ak, nn), "torch": (torch, torch.nn)}


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)


def _copy_params(ours, theirs):
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})


# ------------------------------------------------------------------ convolutions


def _conv_subclass(base):
    class Scaled(base):
        """Doubles the weight and drops the bias in its own _conv_forward (as a model
        file's subclass casting dtypes does)."""

        calls = 0

        def _conv_forward(self, input, weight, bias):
            type(self).calls += 1
            return super()._conv_forward(input, weight * 2, None)

    return Scaled


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("padding_mode", ["zeros", "reflect"])
def test_conv_forward_calls_the_overridden_conv_forward(dims, padding_mode):
    shape = (2, 3) + (6,) * dims
    x = np.random.default_rng(dims).standard_normal(shape).astype(np.float32)
    results = {}
    for name, (lib, lib_nn) in LIBS.items():
        cls = _conv_subclass(getattr(lib_nn, f"Conv{dims}d"))
        results[name] = cls(3, 4, 3, padding=1, padding_mode=padding_mode)
    _copy_params(results["arraykit"], results["torch"])
    ours = results["arraykit"](ak.asarray(x))
    theirs = results["torch"](torch.tensor(x))
    assert type(results["arraykit"]).calls == type(results["torch"]).calls == 1
    np.testing.assert_allclose(_np(ours), _np(theirs), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("lib_name", LIBS)
def test_conv_transpose_calls_the_overridden_output_padding_with_torchs_arguments(lib_name):
    lib, lib_nn = LIBS[lib_name]
    seen = []

    class Recording(lib_nn.ConvTranspose2d):
        def _output_padding(self, input, output_size, stride, padding, kernel_size,
                            num_spatial_dims, dilation=None):
            seen.append((tuple(stride), tuple(padding), tuple(kernel_size), num_spatial_dims,
                         tuple(dilation)))
            return super()._output_padding(input, output_size, stride, padding, kernel_size,
                                           num_spatial_dims, dilation)

    layer = Recording(2, 3, 3, stride=2, padding=1)
    out = layer(lib.zeros(1, 2, 4, 4), output_size=[8, 8])
    assert tuple(out.shape) == (1, 3, 8, 8)
    assert seen == [((2, 2), (1, 1), (3, 3), 2, (1, 1))]


def test_output_padding_matches_torchs_for_every_valid_size():
    ours, theirs = nn.ConvTranspose1d(1, 1, 3, stride=3), torch.nn.ConvTranspose1d(1, 1, 3, stride=3)
    for size in (12, 13, 14):
        args = ([size], (3,), (0,), (3,), 1, (1,))
        assert tuple(ours._output_padding(ak.zeros((1, 1, 4)), *args)) == tuple(
            theirs._output_padding(torch.zeros(1, 1, 4), *args))


# ------------------------------------------------------------------ normalization and RNNs


@pytest.mark.parametrize("lib_name", LIBS)
def test_batchnorm_calls_the_overridden_check_input_dim(lib_name):
    lib, lib_nn = LIBS[lib_name]

    class Strict(lib_nn.BatchNorm1d):
        def _check_input_dim(self, input):
            if input.ndim != 3:
                raise ValueError("Strict wants (N, C, L)")

    with pytest.raises(ValueError, match="Strict wants"):
        Strict(3)(lib.zeros(4, 3))
    assert tuple(Strict(3)(lib.zeros(4, 3, 2)).shape) == (4, 3, 2)


@pytest.mark.parametrize("lib_name", LIBS)
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_rnns_call_check_forward_args_and_permute_hidden(lib_name, kind):
    lib, lib_nn = LIBS[lib_name]
    calls = collections.Counter()

    class Recording(getattr(lib_nn, kind)):
        def check_forward_args(self, input, hidden, batch_sizes):
            calls["check_forward_args"] += 1
            assert batch_sizes is None and tuple(input.shape) == (5, 2, 3)
            super().check_forward_args(input, hidden, batch_sizes)

        def permute_hidden(self, hx, permutation):
            calls["permute_hidden"] += 1
            return super().permute_hidden(hx, permutation)

    layer = Recording(3, 4)
    layer(lib.zeros(5, 2, 3))
    assert calls == {"check_forward_args": 1, "permute_hidden": 1}  # the returned state's
    h0 = lib.zeros(1, 2, 4)
    layer(lib.zeros(5, 2, 3), (h0, h0) if kind == "LSTM" else h0)
    assert calls == {"check_forward_args": 2, "permute_hidden": 3}  # the given state's too


@pytest.mark.parametrize("kind", ["RNN", "LSTM"])
def test_rnn_hidden_size_errors_match_torch(kind):
    messages = []
    for lib, lib_nn in LIBS.values():
        layer = getattr(lib_nn, kind)(3, 4)
        h = lib.zeros(1, 2, 5)
        with pytest.raises(RuntimeError) as info:
            layer(lib.zeros(5, 2, 3), (h, lib.zeros(1, 2, 4)) if kind == "LSTM" else h)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


# ------------------------------------------------------------------ Module's hooks


def _recording_apply_model(lib_nn, log):
    class Child(lib_nn.Linear):
        def _apply(self, fn, recurse=True):
            log.append(type(self).__name__)
            return super()._apply(fn, recurse)

    return lib_nn.Sequential(Child(2, 2), lib_nn.ReLU(), lib_nn.Sequential(Child(2, 1)))


def test_module_apply_goes_through_each_submodules_apply():
    logs = {}
    for name, (lib, lib_nn) in LIBS.items():
        logs[name] = []
        model = _recording_apply_model(lib_nn, logs[name])
        model.double()
        assert model[0].weight.dtype == lib.float64
    assert logs["arraykit"] == logs["torch"] == ["Child", "Child"]


def _versioned(lib_nn):
    class Versioned(lib_nn.Module):
        """Saves its weight as 'w' plus a marker; loads checkpoints of an older version
        that named it 'kernel' (the usual reason to override these hooks)."""

        def __init__(self):
            super().__init__()
            self.w = lib_nn.Parameter(torch_or_ak(lib_nn).zeros(3))

        def _save_to_state_dict(self, destination, prefix, keep_vars):
            super()._save_to_state_dict(destination, prefix, keep_vars)
            destination[prefix + "marker"] = torch_or_ak(lib_nn).ones(1)

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                                  missing_keys, unexpected_keys, error_msgs):
            if prefix + "kernel" in state_dict:
                state_dict[prefix + "w"] = state_dict.pop(prefix + "kernel")
            state_dict.pop(prefix + "marker", None)
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                          missing_keys, unexpected_keys, error_msgs)

    return Versioned


def torch_or_ak(lib_nn):
    return torch if lib_nn is torch.nn else ak


def test_save_and_load_hooks_are_called_per_module():
    for lib, lib_nn in LIBS.values():
        model = lib_nn.Sequential(_versioned(lib_nn)(), lib_nn.Linear(3, 1))
        assert list(model.state_dict()) == ["0.w", "0.marker", "1.weight", "1.bias"]
        old = {"0.kernel": np.arange(3.0, dtype=np.float32),
               "1.weight": np.ones((1, 3), np.float32), "1.bias": np.zeros(1, np.float32)}
        result = model.load_state_dict({k: lib.tensor(v) for k, v in old.items()})
        assert not result.missing_keys and not result.unexpected_keys
        assert _np(model[0].w).tolist() == [0.0, 1.0, 2.0]


def test_load_state_dict_reports_as_torch_and_writes_nothing_on_error():
    reports = []
    for lib, lib_nn in LIBS.values():
        model = lib_nn.Sequential(lib_nn.Linear(2, 2), lib_nn.Linear(2, 1))
        before = {k: _np(v).copy() for k, v in model.state_dict().items()}
        bad = {"0.weight": lib.ones(2, 2), "0.bias": lib.ones(2), "1.weight": lib.ones(1, 3),
               "2.bias": lib.ones(1)}
        with pytest.raises(RuntimeError) as info:
            model.load_state_dict(bad)
        reports.append(re.sub(r"torch\.Size\(\[(\d+), (\d+)\]\)", r"(\1, \2)", str(info.value)))
        loose = lib_nn.Sequential(lib_nn.Linear(2, 2), lib_nn.Linear(2, 1))
        keys = loose.load_state_dict({"0.weight": lib.ones(2, 2), "extra": lib.ones(1)},
                                     strict=False)
        assert keys.missing_keys == ["0.bias", "1.weight", "1.bias"]
        assert keys.unexpected_keys == ["extra"]
        if lib is ak:  # arraykit checks every entry before writing any
            after = {k: _np(v) for k, v in model.state_dict().items()}
            assert all(np.array_equal(before[k], after[k]) for k in before)
    assert reports[0] == reports[1]


def test_extra_state_is_saved_and_restored():
    for lib, lib_nn in LIBS.values():
        class Stateful(lib_nn.Module):
            def __init__(self):
                super().__init__()
                self.counter = 0

            def get_extra_state(self):
                return {"counter": self.counter}

            def set_extra_state(self, state):
                self.counter = state["counter"]

        source, target = Stateful(), Stateful()
        source.counter = 7
        state = source.state_dict()
        assert list(state) == ["_extra_state"]
        target.load_state_dict(state)
        assert target.counter == 7
        with pytest.raises(RuntimeError, match="Missing key"):
            target.load_state_dict({})


def test_assign_makes_the_checkpoint_tensors_the_parameters():
    for lib, lib_nn in LIBS.values():
        layer = lib_nn.Linear(2, 1)
        weight = lib.ones(1, 2)
        layer.load_state_dict({"weight": weight, "bias": lib.zeros(1)}, assign=True)
        assert isinstance(layer.weight, lib_nn.Parameter) and layer.weight.requires_grad
        with lib.no_grad():
            weight[0, 0] = 5.0  # the parameter shares the checkpoint tensor's memory
        assert float(layer.weight[0, 0]) == 5.0


def test_repr_uses_get_name_and_extra_repr():
    reprs = []
    for lib, lib_nn in LIBS.values():
        class Block(lib_nn.Linear):
            def _get_name(self):
                return "MyBlock"

            def extra_repr(self):
                return "custom=1"

        reprs.append(repr(lib_nn.Sequential(Block(2, 2))))
    assert reprs[0] == reprs[1] == "Sequential(\n  (0): MyBlock(custom=1)\n)"


@pytest.mark.parametrize("name, args", [
    ("Linear", (2, 3)), ("Bilinear", (2, 2, 3)), ("Conv2d", (2, 3, 3)),
    ("ConvTranspose1d", (2, 3, 3)), ("Embedding", (5, 2)), ("LayerNorm", (4,)),
    ("BatchNorm2d", (3,)), ("GroupNorm", (2, 4)), ("RNN", (3, 4)), ("LSTMCell", (3, 4)),
    ("PReLU", ()), ("MultiheadAttention", (4, 2)),
])
def test_constructors_call_the_overridden_reset_parameters(name, args):
    counts = {}
    for lib_name, (lib, lib_nn) in LIBS.items():
        base = getattr(lib_nn, name)
        hook = "_reset_parameters" if name == "MultiheadAttention" else "reset_parameters"

        def reset(self, base=base, hook=hook, lib_name=lib_name):
            counts[lib_name] = counts.get(lib_name, 0) + 1
            return getattr(base, hook)(self)

        getattr(base(*args), hook)  # the base class has the hook
        type("Counting", (base,), {hook: reset})(*args)
    assert counts["arraykit"] == counts["torch"] >= 1
