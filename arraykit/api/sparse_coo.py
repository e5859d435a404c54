"""PyTorch's sparse COO tensors as ``x.to_sparse()`` makes them, backed by dense storage,
and the ``is_*`` flags of ``torch.Tensor`` that name layouts and device types.

arraykit's kernels read strided storage only, so a ``SparseCOOTensor`` keeps its
elements in a dense storage (zeros included) and answers PyTorch's COO questions
from it: ``indices()`` (``(sparse_dim, nnz)`` int64, the positions of the non-zero
elements in C order, i.e. coalesced), ``values()`` (``(nnz, *dense_shape)``),
``_nnz()``, ``sparse_dim()``, ``dense_dim()``, ``coalesce()``/``is_coalesced()``,
``to_dense()``. It is a ``arraykit.Tensor``, so a sparse buffer registered in a
module's ``__init__`` works, and every operation on it computes as on its dense
values; the results are ordinary (dense) tensors, where PyTorch would keep some
sparse. ``indices()``, ``values()`` and ``_nnz()`` read the values on the host (the
count of non-zeros decides their shapes). Memory is the dense tensor's.
"""

from __future__ import annotations

import operator

from ..core import dtypes as D
from ..tensors.tensor_type import Tensor, require_tensor
from . import creation as C
from . import manipulation as M
from . import searching as S
from . import utility as U

__all__ = ["SparseCOOTensor"]


class SparseCOOTensor(Tensor):
    """A tensor in PyTorch's sparse COO layout, its elements kept in dense storage
    (``x.to_sparse()``; see ``arraykit.api.sparse_coo``)."""

    __slots__ = ("_sparse_dim",)

    @property
    def is_sparse(self):
        """True: the tensor is in the sparse COO layout."""
        return True

    def sparse_dim(self):
        """The number of sparse dimensions (the leading ones)."""
        return self._sparse_dim

    def dense_dim(self):
        """The number of dense dimensions (the trailing ones, whole slices per index)."""
        return self.ndim - self._sparse_dim

    def _dense(self):
        return Tensor._make(self._storage, self._layout, self._dtype)

    def _nonzero_mask(self):
        dense = self._dense() != 0
        trailing = tuple(range(self._sparse_dim, self.ndim))
        return U.any(dense, axis=trailing) if trailing else dense

    def indices(self):
        """``(sparse_dim, nnz)`` int64: the positions holding a non-zero element (or a
        non-zero dense slice), in C order (coalesced)."""
        if self._sparse_dim == 0:
            return C.zeros((0, 1), dtype=D.int64, device=self.device)
        return M.stack(S.nonzero(self._nonzero_mask()))

    def values(self):
        """``(nnz, *dense_shape)``: the elements (or dense slices) at ``indices()``."""
        if self._sparse_dim == 0:
            return self._dense().reshape((1,) + self.shape)
        return self._dense()[tuple(S.nonzero(self._nonzero_mask()))]

    def _nnz(self):
        """The number of stored (non-zero) elements or dense slices."""
        if self._sparse_dim == 0:
            return 1  # one dense slice, as PyTorch's to_sparse(0)
        return int(S.count_nonzero(self._nonzero_mask()).item())

    def coalesce(self):
        """``self``: its indices are unique and sorted already."""
        return self

    def is_coalesced(self):
        """True: the indices are unique and sorted."""
        return True

    def to_dense(self, dtype=None, *, masked_grad=None):
        """A strided tensor of the same elements (a copy; ``dtype=`` converts)."""
        dense = self._dense().clone()
        return dense if dtype is None else dense.to(dtype)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        """``self`` (RuntimeError for another ``sparse_dim``: convert ``to_dense()`` first,
        as PyTorch asks)."""
        _check_layout(layout, blocksize)
        if sparse_dim is not None and operator.index(sparse_dim) != self._sparse_dim:
            raise RuntimeError(f"to_sparse: the tensor has sparse_dim={self._sparse_dim}, "
                               f"got sparse_dim={sparse_dim}; call to_dense() first")
        return self

    def __repr__(self):
        return (f"tensor(indices={self.indices()!r},\n       values={self.values()!r},\n"
                f"       size={self.shape}, nnz={self._nnz()}, layout=sparse_coo)")

    __str__ = __repr__


_COO_NAMES = (None, "sparse_coo", "torch.sparse_coo")


def _check_layout(layout, blocksize):
    if str(layout) not in map(str, _COO_NAMES) or blocksize is not None:
        raise ValueError(
            f"to_sparse: arraykit has the sparse COO layout only (layout=None or "
            f"'sparse_coo', no blocksize), got layout={layout!r}, blocksize={blocksize!r}")


def _to_sparse(x, sparse_dim, layout, blocksize, dense_dim):
    require_tensor(x, "to_sparse")
    _check_layout(layout, blocksize)
    if dense_dim is not None:
        if sparse_dim is not None and sparse_dim + dense_dim != x.ndim:
            raise RuntimeError(f"to_sparse: sparse_dim={sparse_dim} + dense_dim={dense_dim} "
                               f"must be the tensor's {x.ndim} dimensions")
        sparse_dim = x.ndim - operator.index(dense_dim)
    sparse_dim = x.ndim if sparse_dim is None else operator.index(sparse_dim)
    low = 1 if x.ndim else 0  # PyTorch keeps at least one sparse dimension
    if not low <= sparse_dim <= x.ndim:
        raise RuntimeError(f"to_sparse: sparse_dim={sparse_dim} is out of range for a "
                           f"{x.ndim}-dimensional tensor ({low} to {x.ndim})")
    copy = x.clone()
    sparse = SparseCOOTensor._make(copy._storage, copy._layout, copy._dtype)
    sparse._sparse_dim = sparse_dim
    return sparse


def _tensor_to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    return _to_sparse(self, sparse_dim, layout, blocksize, dense_dim)


def _tensor_to_dense(self, dtype=None, *, masked_grad=None):
    return self if dtype is None else self.to(dtype)


def _attach(name, fn, doc):
    fn.__name__, fn.__qualname__, fn.__doc__ = name, f"Tensor.{name}", doc
    setattr(Tensor, name, fn)


_attach("to_sparse", _tensor_to_sparse, """``x.to_sparse(sparse_dim=None, *, layout=None,
dense_dim=None)``: ``x`` in the sparse COO layout, a ``SparseCOOTensor`` (a copy;
the leading ``sparse_dim`` dimensions sparse, all by default).""")
_attach("to_dense", _tensor_to_dense, """``x.to_dense(dtype=None)``: ``x`` itself (a strided
tensor is dense), or ``x.to(dtype)``.""")

_FALSE_FLAGS = {
    "is_sparse": "the sparse COO layout (``SparseCOOTensor``)",
    "is_sparse_csr": "the sparse CSR layout, which arraykit does not have",
    "is_quantized": "a quantized dtype, which arraykit does not have",
    "is_mkldnn": "PyTorch's MKL-DNN layout, which arraykit does not have",
    "is_nested": "a nested (jagged) tensor, which arraykit does not have",
    "is_meta": "the meta device (shapes without data), which arraykit does not have",
    "is_xpu": "an Intel GPU (PyTorch's xpu device); arraykit's devices are JAX's cpu and gpu",
    "is_mps": "an Apple GPU (PyTorch's mps device); arraykit's devices are JAX's cpu and gpu",
    "is_ipu": "a Graphcore IPU; arraykit's devices are JAX's cpu and gpu",
    "is_maia": "a MAIA accelerator; arraykit's devices are JAX's cpu and gpu",
    "is_mtia": "an MTIA accelerator; arraykit's devices are JAX's cpu and gpu",
    "is_vulkan": "a Vulkan device; arraykit's devices are JAX's cpu and gpu",
    "is_xla": "a torch_xla device (PyTorch's xla device type; arraykit's cpu and gpu "
              "devices report is_cpu/is_cuda even though JAX runs them through XLA)",
}


def _false(self):
    return False


def _attach_flags():
    for name, what in _FALSE_FLAGS.items():
        setattr(Tensor, name, property(_false, doc=f"Whether the tensor is {what}. Always False."))
    Tensor.is_sparse = property(
        _false, doc="Whether the tensor is in the sparse COO layout. False for a strided "
                    "tensor (True for a ``SparseCOOTensor``, from ``x.to_sparse()``).")


_attach_flags()
