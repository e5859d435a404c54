"""``arraykit.compile``: compiled modules and functions against eager arraykit and PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import arraykit as ak

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
X = RNG.standard_normal((6, 4)).astype(np.float32)
Y = RNG.integers(0, 3, 6)


class Net(ak.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = ak.nn.Linear(4, 8)
        self.norm = ak.nn.BatchNorm1d(8)
        self.fc2 = ak.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(ak.nn.functional.relu(self.norm(self.fc1(x))))


def _torch_net(net):
    t = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(),
                            torch.nn.Linear(8, 3))
    names = {"0": "fc1", "1": "norm", "3": "fc2"}
    state = {k: torch.tensor(np.asarray(v)) for k, v in net.state_dict().items()}
    t.load_state_dict({f"{i}.{k.split('.', 1)[1]}": state[f"{n}.{k.split('.', 1)[1]}"]
                       for i, n in names.items() for k in state if k.startswith(n + ".")})
    return t


def test_training_loop_matches_torch_and_compiles_once():
    net = Net()
    reference = _torch_net(net)
    model = ak.compile(net)
    opt = ak.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    t_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    x, y = ak.asarray(X), ak.asarray(Y)
    for _ in range(3):
        loss = ak.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        t_loss = torch.nn.functional.cross_entropy(reference(torch.tensor(X)), torch.tensor(Y))
        t_loss.backward()
        np.testing.assert_allclose(float(loss), t_loss.item(), rtol=1e-5)
        np.testing.assert_allclose(np.asarray(net.fc1.weight.grad), reference[0].weight.grad.numpy(),
                                   rtol=1e-4, atol=1e-6)
        opt.step()
        t_opt.step()
        opt.zero_grad()
        t_opt.zero_grad()
    np.testing.assert_allclose(np.asarray(net.norm.running_var), reference[1].running_var.numpy(), rtol=1e-5)
    assert int(net.norm.num_batches_tracked) == 3
    assert model._compiled.compile_count == 1
    model.eval()
    reference.eval()
    with ak.no_grad():
        got = model(x)
    np.testing.assert_allclose(np.asarray(got), reference(torch.tensor(X)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    model(ak.asarray(X[:2]))  # a new shape compiles once more
    assert model._compiled.compile_count == 3


def test_gradients_equal_eager_for_inputs_and_parameters():
    net = Net()
    twin = Net()
    twin.load_state_dict(net.state_dict())
    model = ak.compile(net)
    xs = [ak.asarray(X).requires_grad_() for _ in range(2)]
    outs = [model(xs[0]), twin(xs[1])]
    for out in outs:
        (out * ak.asarray(np.arange(3, dtype=np.float32))).sum().backward()
    np.testing.assert_allclose(np.asarray(outs[0].detach()), np.asarray(outs[1].detach()),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(xs[0].grad), np.asarray(xs[1].grad), rtol=1e-5, atol=1e-6)
    for (name, p), q in zip(net.named_parameters(), twin.parameters()):
        # fc1.bias's gradient is zero up to rounding (a batch norm follows): atol
        np.testing.assert_allclose(np.asarray(p.grad), np.asarray(q.grad), rtol=1e-5, atol=1e-5,
                                   err_msg=name)
    assert outs[0].grad_fn is not None


def test_optimized_module_behaves_as_torch():
    net = ak.nn.Linear(2, 3)
    model = ak.compile(net)
    t_model = torch.compile(torch.nn.Linear(2, 3))
    assert type(model).__name__ == type(t_model).__name__ == "OptimizedModule"
    assert isinstance(model, ak.nn.Module)
    assert list(model.state_dict()) == list(t_model.state_dict())
    assert [n for n, _ in model.named_parameters()] == [n for n, _ in t_model.named_parameters()]
    assert model._orig_mod is net and model.weight is net.weight and model.in_features == 2
    model.eval()
    assert not net.training
    model.train()
    assert net.training
    model.load_state_dict({k: v * 0 for k, v in model.state_dict().items()})
    assert float(ak.sum(ak.abs(net.weight))) == 0.0
    with pytest.raises(AttributeError):
        _ = model.missing_attribute


def test_function_closing_over_tensors_and_pytree_outputs():
    w = ak.asarray(RNG.standard_normal((4, 3)).astype(np.float32)).requires_grad_()
    wt = torch.tensor(np.asarray(w.detach()), requires_grad=True)

    @ak.compile
    def f(x, *, scale=2.0):
        y = x @ w
        return {"y": y * scale, "count": 3, "best": ak.argmax(y, axis=1)}

    x = ak.asarray(X).requires_grad_()
    xt = torch.tensor(X, requires_grad=True)
    out = f(x, scale=3.0)
    assert out["count"] == 3 and out["best"].dtype == ak.int64
    out["y"].sum().backward()
    ((xt @ wt) * 3.0).sum().backward()
    np.testing.assert_allclose(np.asarray(w.grad), wt.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(x.grad), xt.grad.numpy(), rtol=1e-5, atol=1e-6)
    with ak.no_grad():
        w.mul_(2)  # changed in place: the next call reads it
    np.testing.assert_allclose(np.asarray(f(x, scale=1.0)["y"].detach()), X @ np.asarray(w.detach()),
                               rtol=1e-5, atol=1e-5)
    assert f.__name__ == "f"


def test_integer_only_outputs_record_nothing():
    w = ak.ones(3, requires_grad=True)
    f = ak.compile(lambda x: ak.argmax(x * w))
    assert int(f(ak.asarray([1.0, 3.0, 2.0]))) == 1


def test_compiled_module_inside_jit_step():
    net = ak.nn.Linear(4, 2)
    twin = ak.nn.Linear(4, 2)
    twin.load_state_dict(net.state_dict())
    results = []
    for model in (ak.compile(net), twin):
        opt = ak.optim.SGD(model.parameters(), lr=0.05)

        @ak.jit
        def step(x, model=model, opt=opt):
            opt.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss

        results.append([float(step(ak.asarray(X))) for _ in range(3)])
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(net.weight.detach()), np.asarray(twin.weight.detach()), rtol=1e-6)


def test_options_as_torch():
    net = ak.nn.Linear(2, 2)
    assert ak.compile(net, disable=True) is net
    for kwargs in ({"mode": "max-autotune"}, {"fullgraph": True, "dynamic": False},
                   {"backend": "eager"}, {"options": {"trace.enabled": False}}):
        assert isinstance(ak.compile(net, **kwargs), ak.compiler.OptimizedModule)
    decorator = ak.compile(mode="reduce-overhead")
    assert isinstance(decorator(net), ak.compiler.OptimizedModule)
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        ak.compile(net, mode="fastest")
    with pytest.raises(RuntimeError, match="Either mode or options"):
        ak.compile(net, mode="default", options={})
    with pytest.raises(ValueError, match="backend"):
        ak.compile(net, backend="my_backend")
    with pytest.raises(TypeError, match="module or a callable"):
        ak.compile(3)


def test_recompile_limit():
    f = ak.compile(lambda x: x * 2, recompile_limit=1)
    f(ak.ones(2))
    with pytest.raises(RuntimeError, match="max_compiles=1"):
        f(ak.ones(3))
