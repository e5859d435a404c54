"""``x.to_sparse()`` (a dense-backed sparse COO tensor) and the ``is_*`` flags of
``torch.Tensor``, against torch 2.13."""

import numpy as np
import pytest
import torch

import arraykit as ak
from arraykit import nn

X = np.array([[[0.0, 2.0], [0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [3.0, 4.0], [0.0, 0.0]]])


@pytest.mark.parametrize("sparse_dim", [None, 1, 2, 3])
def test_to_sparse_answers_as_torch(sparse_dim):
    args = () if sparse_dim is None else (sparse_dim,)
    s, ts = ak.asarray(X).to_sparse(*args), torch.tensor(X).to_sparse(*args)
    assert s.is_sparse and ts.is_sparse
    assert (s.sparse_dim(), s.dense_dim(), s._nnz()) == (ts.sparse_dim(), ts.dense_dim(), ts._nnz())
    assert s.shape == tuple(ts.shape) and s.is_coalesced() and s.coalesce() is s
    np.testing.assert_array_equal(np.asarray(s.indices()), ts.indices().numpy())
    assert s.indices().dtype == ak.int64
    np.testing.assert_array_equal(np.asarray(s.values()), ts.values().numpy())
    dense = s.to_dense()
    assert not dense.is_sparse and type(dense) is ak.Tensor
    np.testing.assert_array_equal(np.asarray(dense), X)


def test_to_sparse_is_a_copy_and_computes_as_dense():
    t = ak.asarray(X[0])
    s = t.to_sparse()
    t[0, 1] = 9.0
    assert s.to_dense()[0, 1].item() == 2.0
    product = s @ ak.ones((2, 2), dtype=ak.float64)
    assert type(product) is ak.Tensor and product.tolist() == [[2.0, 2.0], [0.0, 0.0], [1.0, 1.0]]
    assert s.to_sparse() is s and t.to_dense() is t
    scalar, torch_scalar = ak.asarray(5.0).to_sparse(), torch.tensor(5.0).to_sparse()
    assert (scalar._nnz(), scalar.sparse_dim()) == (torch_scalar._nnz(), torch_scalar.sparse_dim())
    assert scalar.values().tolist() == torch_scalar.values().tolist()
    assert tuple(scalar.indices().shape) == tuple(torch_scalar.indices().shape)
    assert "nnz=2" in repr(s) and "layout=sparse_coo" in str(s)


def test_to_sparse_gradient_reaches_the_dense_tensor():
    t = ak.asarray(X, device="cpu")
    t.requires_grad_(True)
    (t.to_sparse().to_dense() * ak.asarray(X, device="cpu")).sum().backward()
    np.testing.assert_array_equal(np.asarray(t.grad), X)


def test_to_sparse_refuses_what_it_cannot_represent():
    t = ak.asarray(X)
    with pytest.raises(ValueError, match="sparse COO layout only.*sparse_csr"):
        t.to_sparse(layout="sparse_csr")
    for sparse_dim in (0, 4):  # torch refuses both
        with pytest.raises(RuntimeError):
            torch.tensor(X).to_sparse(sparse_dim)
        with pytest.raises(RuntimeError, match=f"sparse_dim={sparse_dim} is out of range"):
            t.to_sparse(sparse_dim)
    with pytest.raises(RuntimeError, match="has sparse_dim=3, got sparse_dim=1"):
        t.to_sparse().to_sparse(1)


class _Graph(nn.Module):
    def __init__(self, lib_eye):
        super().__init__()
        self.register_buffer("adjacency", lib_eye(3).to_sparse())

    def forward(self, x):
        return self.adjacency @ x


def test_a_sparse_buffer_registered_in_init_works():
    model = _Graph(ak.eye)
    assert list(model.state_dict()) == ["adjacency"] and model.adjacency.is_sparse
    assert model(ak.ones((3, 2))).tolist() == [[1.0, 1.0]] * 3


FLAGS = sorted(n for n in dir(torch.Tensor) if n.startswith("is_")
               and isinstance(getattr(torch.Tensor, n), type(torch.Tensor.is_cuda)))


@pytest.mark.parametrize("flag", FLAGS)
def test_device_and_layout_flags_match_torch_on_the_cpu(flag):
    t = ak.asarray(X[0], device="cpu")
    assert getattr(t, flag) == getattr(torch.tensor(X[0]), flag)


def test_is_cuda_follows_the_device():
    t = ak.asarray(X)
    assert t.is_cuda == (t.device.platform == "gpu") and t.is_cpu == (t.device.platform == "cpu")
    assert not (t.is_xpu or t.is_mps or t.is_meta or t.is_quantized)
