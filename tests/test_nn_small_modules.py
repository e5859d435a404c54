"""Small nn modules (activations, dropouts, losses, distances, EmbeddingBag, parameter
containers), nn.init and nn.utils' flattening, against torch.nn: reprs, state_dict keys
and shapes, loading a torch state_dict through NumPy, forward values and gradients."""

import math

import numpy as np
import pytest
import torch

import arraykit as ak
from arraykit import nn
from arraykit.nn import init, utils
from device_checks import raises_checked

X = np.random.default_rng(0).standard_normal((2, 4, 3))

# constructor calls evaluated against both namespaces
MODULES = [
    "Identity(3, x=1)", "Softmax(dim=1)", "LogSoftmax(dim=-1)", "Softmin(dim=0)", "Tanh()",
    "Sigmoid()", "LeakyReLU(0.2)", "LeakyReLU(inplace=True)", "ELU(alpha=0.5)", "SELU()",
    "CELU(alpha=2.0)", "PReLU()", "PReLU(num_parameters=4, init=0.1)", "Softplus(beta=2.0)",
    "Mish()", "Hardswish()", "Hardsigmoid()", "Hardtanh(-2.0, 2.0)", "ReLU6(inplace=True)",
    "GLU(dim=1)", "Threshold(0.1, 20.0)", "LogSigmoid()", "Softsign()", "Tanhshrink()",
    "Softshrink(0.3)", "Hardshrink()", "RReLU()", "CosineSimilarity(dim=2)",
    "PairwiseDistance(p=1.0)", "Dropout1d(0.2)", "Dropout2d()", "Dropout3d(0.1, True)",
    "AlphaDropout(0.3)",
]


def _build(lib, call):
    return eval(call, {}, vars(lib.nn))


def _state(module):
    return {k: tuple(v.shape) for k, v in module.state_dict().items()}


@pytest.mark.parametrize("call", MODULES)
def test_module_repr_state_and_eval_forward_match_torch(call):
    ours, theirs = _build(ak, call), _build(torch, call)
    assert repr(ours) == repr(theirs)
    assert _state(ours) == _state(theirs)
    ours.load_state_dict({k: ak.asarray(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    ours.eval()
    theirs = theirs.eval().double()
    x, t = ak.asarray(X).requires_grad_(), torch.tensor(X, requires_grad=True)
    # a non-leaf input: in-place modules write into it
    args, targs = ((x, x * 2 + 1), (t, t * 2 + 1)) if "Distance" in call or "Cosine" in call else ((x * 1,), (t * 1,))
    out, tout = ours(*args), theirs(*targs)
    rtol = 1e-7 if "Hardsigmoid" in call else 1e-10  # torch rounds 1/6 to float32
    np.testing.assert_allclose(np.asarray(out.tolist()), tout.detach().numpy(), rtol=rtol, atol=1e-12)
    g = np.cos(np.arange(tout.numel())).reshape(tout.shape)
    (out * ak.asarray(g)).sum().backward()
    (tout * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad.tolist()), t.grad.numpy(), rtol=rtol, atol=1e-12)


def test_prelu_weight_is_a_parameter_with_torchs_gradient():
    ours, theirs = nn.PReLU(4, init=0.3, dtype=ak.float64), torch.nn.PReLU(4, init=0.3).double()
    x = np.random.default_rng(1).standard_normal((3, 4, 2))
    ours(ak.asarray(x)).sum().backward()
    theirs(torch.tensor(x)).sum().backward()
    assert [n for n, _ in ours.named_parameters()] == ["weight"]
    np.testing.assert_allclose(np.asarray(ours.weight.grad.tolist()), theirs.weight.grad.numpy(), rtol=1e-12)


LOSSES = [
    ("NLLLoss(weight=W)", "cls"), ("BCELoss(weight=W)", "prob"),
    ("BCEWithLogitsLoss(pos_weight=W)", "bin"), ("L1Loss(reduction='sum')", "real"),
    ("SmoothL1Loss(beta=0.5)", "real"), ("HuberLoss(delta=0.3)", "real"),
    ("KLDivLoss(reduction='batchmean', log_target=True)", "real"),
    ("CosineEmbeddingLoss(margin=0.2)", "pair"), ("MarginRankingLoss(0.1)", "rank"),
    ("TripletMarginLoss(margin=0.5, swap=True)", "triplet"), ("PoissonNLLLoss()", "count"),
    ("GaussianNLLLoss(full=True)", "gauss"), ("MultiLabelSoftMarginLoss(weight=W)", "bin"),
    ("HingeEmbeddingLoss()", "sign"), ("SoftMarginLoss()", "sign"),
    ("MultiMarginLoss(p=2, weight=W)", "cls"), ("CrossEntropyLoss(label_smoothing=0.1)", "cls"),
    ("MSELoss(size_average=False)", "real"),
]


def _loss_inputs(kind, rng):
    x = rng.standard_normal((4, 3))
    y = rng.standard_normal((4, 3))
    return {
        "cls": [x, np.array([0, 2, 1, 1])], "prob": [1 / (1 + np.exp(-x)), (y > 0) * 1.0],
        "bin": [x, (y > 0) * 1.0], "real": [x, y], "pair": [x, y, np.sign(y[:, 0])],
        "rank": [x[:, 0], y[:, 0], np.sign(y[:, 1])], "triplet": [x, y, y[::-1].copy()],
        "count": [x, np.abs(np.round(y * 3))], "gauss": [x, y, np.abs(y) + 0.1],
        "sign": [x, np.sign(y)],
    }[kind]


@pytest.mark.parametrize("call,kind", LOSSES, ids=[c for c, _ in LOSSES])
def test_loss_modules_match_torch(call, kind):
    w = np.array([0.5, 2.0, 1.0])
    ours = eval(call, {"W": ak.asarray(w)}, vars(nn))
    with pytest.warns(UserWarning) if "size_average" in call else _nothing():
        theirs = eval(call, {"W": torch.tensor(w)}, vars(torch.nn))
    assert repr(ours) == repr(theirs)
    assert _state(ours) == _state(theirs)
    inputs = _loss_inputs(kind, np.random.default_rng(2))
    args = [ak.asarray(a) for a in inputs]
    targs = [torch.tensor(a) for a in inputs]
    args[0].requires_grad_()
    targs[0].requires_grad_()
    out, tout = ours(*args), theirs(*targs)
    out.backward()
    tout.backward()
    np.testing.assert_allclose(float(out), tout.item(), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(args[0].grad.tolist()), targs[0].grad.numpy(), rtol=1e-9, atol=1e-12)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_dropout_modules_train_and_eval():
    x = ak.ones((8, 16, 5))
    m = nn.Dropout1d(0.5)
    y = np.asarray(m(x).tolist())
    assert set(np.unique(y)) <= {0.0, 2.0}
    assert np.all(y == y[:, :, :1])  # whole channels
    assert 0 < (y[:, :, 0] == 0).mean() < 1
    m.eval()
    assert m(x) is x
    with pytest.raises(RuntimeError, match="Expected 2D or 3D input"):
        nn.Dropout1d()(ak.ones((2, 3, 4, 5)))
    z = np.asarray(nn.Dropout3d(0.5)(ak.ones((2, 6, 2, 2, 2))).tolist())
    assert np.all(z.reshape(2, 6, -1) == z.reshape(2, 6, -1)[:, :, :1])


def test_alpha_dropout_keeps_moments():
    x = ak.randn(20000, dtype=ak.float64)
    y = np.asarray(nn.AlphaDropout(0.2)(x).tolist())
    t = torch.nn.AlphaDropout(0.2)(torch.randn(20000, dtype=torch.float64)).numpy()
    assert abs(y.mean() - t.mean()) < 0.05 and abs(y.std() - t.std()) < 0.05
    np.testing.assert_allclose(np.unique(np.round(np.asarray(
        nn.functional.alpha_dropout(ak.zeros(1000), 0.3, True).tolist()), 6)),
        np.unique(np.round(torch.nn.functional.alpha_dropout(torch.zeros(1000), 0.3, True).numpy(), 6)))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_matches_torch(mode):
    theirs = torch.nn.EmbeddingBag(10, 3, mode=mode, padding_idx=2, dtype=torch.float64)
    ours = nn.EmbeddingBag(10, 3, mode=mode, padding_idx=2, dtype=ak.float64)
    assert repr(ours) == repr(theirs) and _state(ours) == _state(theirs)
    ours.load_state_dict({"weight": ak.asarray(theirs.weight.detach().numpy())})
    idx = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 1])
    offsets = np.array([0, 4, 4, 7])
    out = ours(ak.asarray(idx), ak.asarray(offsets))
    tout = theirs(torch.tensor(idx), torch.tensor(offsets))
    g = np.cos(np.arange(12.0)).reshape(4, 3)
    (out * ak.asarray(g)).sum().backward()
    (tout * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(np.asarray(out.tolist()), tout.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(ours.weight.grad.tolist()), theirs.weight.grad.numpy(), rtol=1e-12)
    two_d = ours(ak.asarray(idx.reshape(2, 5)))
    np.testing.assert_allclose(np.asarray(two_d.tolist()),
                               theirs(torch.tensor(idx.reshape(2, 5))).detach().numpy(), rtol=1e-12)


def test_embedding_bag_per_sample_weights_max_norm_and_errors():
    w = np.random.default_rng(3).standard_normal((6, 2)) * 3
    idx, offsets, psw = np.array([0, 1, 1, 5]), np.array([0, 2]), np.array([0.5, 1.0, 2.0, -1.0])
    wa, wt = ak.asarray(w), torch.tensor(w)
    got = nn.functional.embedding_bag(ak.asarray(idx), wa, ak.asarray(offsets), mode="sum",
                                      per_sample_weights=ak.asarray(psw), max_norm=1.0)
    expected = torch.nn.functional.embedding_bag(torch.tensor(idx), wt, torch.tensor(offsets), mode="sum",
                                                 per_sample_weights=torch.tensor(psw), max_norm=1.0)
    np.testing.assert_allclose(np.asarray(got.tolist()), expected.numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(wa.tolist()), wt.numpy(), rtol=1e-12)  # renormed in place
    with pytest.raises(NotImplementedError, match="per_sample_weights"):
        nn.functional.embedding_bag(ak.asarray(idx), wa, ak.asarray(offsets), mode="mean",
                                    per_sample_weights=ak.asarray(psw))
    with pytest.raises(ValueError, match="offsets has to be None"):
        nn.functional.embedding_bag(ak.asarray(idx.reshape(2, 2)), wa, ak.asarray(offsets))
    with raises_checked(IndexError, match="out of range"):
        nn.functional.embedding_bag(ak.asarray([7]), wa, ak.asarray([0]))


def test_embedding_bag_scale_grad_by_freq_divides_by_the_count():
    """PyTorch's CPU kernel misattributes the counts (a known quirk); the documented rule
    (each occurrence's gradient divided by its index's frequency) is the oracle."""
    w = ak.ones((4, 1)).requires_grad_()
    nn.functional.embedding_bag(ak.asarray([1, 1, 2, 1, 3]), w, ak.asarray([0, 2]), mode="sum",
                                scale_grad_by_freq=True).sum().backward()
    np.testing.assert_allclose(np.asarray(w.grad.tolist())[:, 0], [0.0, 1.0, 1.0, 1.0])


def test_one_hot_matches_torch():
    idx = np.array([[0, 3], [2, 1]])
    for n in (-1, 5):
        np.testing.assert_array_equal(
            np.asarray(nn.functional.one_hot(ak.asarray(idx), n).tolist()),
            torch.nn.functional.one_hot(torch.tensor(idx), n).numpy())
    assert nn.functional.one_hot(ak.asarray(idx)).dtype == ak.int64
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        nn.functional.one_hot(ak.asarray([0, 3]), 3)
    with pytest.raises(RuntimeError, match="non-negative"):
        nn.functional.one_hot(ak.asarray([-1, 0]), 3)


def test_parameter_containers_match_torch_keys_and_load():
    ours = nn.ParameterList([nn.Parameter(ak.ones(2)), ak.zeros((3, 1))])
    theirs = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(2)), torch.zeros(3, 1)])
    assert _state(ours) == _state(theirs) and len(ours) == 2
    ours.append(ak.ones(4))
    assert isinstance(ours[-1], nn.Parameter) and ours[2].requires_grad
    d = nn.ParameterDict({"a": ak.ones(2), "b": nn.Parameter(ak.zeros(1))})
    td = torch.nn.ParameterDict({"a": torch.ones(2), "b": torch.nn.Parameter(torch.zeros(1))})
    assert _state(d) == _state(td) and list(d.keys()) == ["a", "b"] and "a" in d

    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.ps = nn.ParameterList([ak.zeros(2), ak.zeros(3)])
            self.pd = nn.ParameterDict({"w": ak.zeros(2)})

    h = Holder()
    assert [n for n, _ in h.named_parameters()] == ["ps.0", "ps.1", "pd.w"]
    h.load_state_dict({"ps.0": ak.ones(2), "ps.1": ak.ones(3), "pd.w": ak.ones(2)})
    assert float(h.ps[1].sum()) == 3.0


def test_init_functions():
    ak.manual_seed(0)
    w = ak.empty((50, 20), dtype=ak.float64)
    init.orthogonal_(w, gain=2.0)
    a = np.asarray(w.tolist())
    np.testing.assert_allclose(a.T @ a, 4 * np.eye(20), atol=1e-10)
    init.eye_(w)
    np.testing.assert_array_equal(np.asarray(w.tolist()), np.eye(50, 20))
    conv = ak.empty((4, 2, 3, 3))
    init.dirac_(conv, groups=2)
    tconv = torch.empty(4, 2, 3, 3)
    torch.nn.init.dirac_(tconv, groups=2)
    np.testing.assert_array_equal(np.asarray(conv.tolist()), tconv.numpy())
    t = ak.empty((20000,), dtype=ak.float64)
    init.trunc_normal_(t, mean=1.0, std=2.0, a=-1.0, b=2.0)
    v = np.asarray(t.tolist())
    ref = torch.nn.init.trunc_normal_(torch.empty(20000, dtype=torch.float64), 1.0, 2.0, -1.0, 2.0).numpy()
    assert v.min() >= -1.0 and v.max() <= 2.0
    assert abs(v.mean() - ref.mean()) < 0.03 and abs(v.std() - ref.std()) < 0.03
    s = ak.empty((10, 7))
    init.sparse_(s, 0.25, std=0.1)
    np.testing.assert_array_equal((np.asarray(s.tolist()) == 0).sum(0), [math.ceil(2.5)] * 7)
    with pytest.raises(ValueError, match="2 dimensions"):
        init.eye_(ak.empty((2, 2, 2)))
    assert {"trunc_normal_", "eye_", "dirac_", "orthogonal_", "sparse_"} <= set(init.__all__)


def test_parameters_to_vector_round_trip():
    m = nn.Linear(3, 2)
    tm = torch.nn.Linear(3, 2)
    m.load_state_dict({k: ak.asarray(v.detach().numpy()) for k, v in tm.state_dict().items()})
    v = utils.parameters_to_vector(m.parameters())
    tv = torch.nn.utils.parameters_to_vector(tm.parameters())
    np.testing.assert_allclose(np.asarray(v.tolist()), tv.detach().numpy())
    utils.vector_to_parameters(v * 2, m.parameters())
    np.testing.assert_allclose(np.asarray(m.weight.tolist()), 2 * tm.weight.detach().numpy(), rtol=1e-6)
    assert m.weight.requires_grad
    with pytest.raises(ValueError, match="elements"):
        utils.vector_to_parameters(v[:3], m.parameters())
