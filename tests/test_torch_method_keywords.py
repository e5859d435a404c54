"""Tensor methods called with PyTorch's keyword (and positional) spellings, against
PyTorch itself (issue 36, item 6).

Two parts:

* a table of calls (:data:`CASES`) written as model, training and scientific code
  writes them (``x.div(y, rounding_mode="floor")``, ``x.sum(dim=1, keepdim=True,
  dtype=...)``, ``x.scatter(dim=0, index=i, src=s, reduce="add")``...), each run on a
  torch tensor and on an arraykit CPU tensor holding the same values; results must agree
  in type, shape, dtype and values;
* a signature sweep (:func:`keyword_gaps`): for every public method both
  ``torch.Tensor`` and ``arraykit.Tensor`` have and whose arraykit signature names its
  parameters, every keyword in PyTorch's signature lines (docstrings: torch's C methods
  have no ``inspect.signature``) must be one arraykit accepts, less the names PyTorch's
  docstrings print but PyTorch itself refuses (:data:`TORCH_REFUSES`, each checked to
  raise in torch) and the names arraykit leaves out on purpose (:data:`NOT_TAKEN`);
  :func:`schema_keyword_gaps` does the same with the names of torch's operator schemas
  (``aten::div``...), which its Python binding takes (``copy_(other=)``).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import arraykit as ak
from torch_keyword_audit import arraykit_names, shared_methods, torch_names

RNG = np.random.default_rng(36)
X = RNG.permutation(24).reshape(2, 3, 4).astype(np.float32) / 4 - 2  # distinct values
Y = RNG.permutation(24).reshape(2, 3, 4).astype(np.float32) / 8 + 0.5  # positive
M = np.array([[1.0, 2.0, 0.5], [3.0, -1.0, 4.0]], np.float32)
IDX = np.array([[0, 1, 0], [1, 0, 1]], np.int64)


def _tensor(lib, a):
    if lib is torch:
        return torch.tensor(a)
    return ak.asarray(a, device="cpu")


class Env:
    """The tensors of one case, built by ``lib`` (torch or arraykit) from shared values."""

    def __init__(self, lib):
        self.lib = lib
        self.x, self.y = _tensor(lib, X), _tensor(lib, Y)
        self.m, self.i = _tensor(lib, M), _tensor(lib, IDX)
        self.n = _tensor(lib, (X * 4).astype(np.int64))  # integers, negative ones included
        self.mask = _tensor(lib, X > 0)

    def t(self, a, dtype=None):
        return _tensor(self.lib, np.asarray(a, dtype))


CASES = {
    # arithmetic: other=, alpha=, rounding_mode=, exponent=
    "add other= alpha=": lambda e: e.x.add(other=e.y, alpha=2),
    "add alpha= scalar": lambda e: e.x.add(3.0, alpha=0.5),
    "add_ alpha=": lambda e: e.x.clone().add_(e.y, alpha=-1),
    "sub other= alpha=": lambda e: e.x.sub(other=e.y, alpha=3),
    "subtract alpha=": lambda e: e.x.subtract(e.y, alpha=2),
    "sub_ alpha=": lambda e: e.x.clone().sub_(other=e.y, alpha=2),
    "mul other=": lambda e: e.x.mul(other=e.y),
    "multiply other=": lambda e: e.x.multiply(other=2.5),
    "mul_ other=": lambda e: e.x.clone().mul_(other=e.y),
    "div other=": lambda e: e.x.div(other=e.y),
    "div rounding_mode=floor": lambda e: e.x.div(e.y, rounding_mode="floor"),
    "div rounding_mode=trunc": lambda e: e.x.div(other=e.y, rounding_mode="trunc"),
    "div rounding_mode=None": lambda e: e.x.div(e.y, rounding_mode=None),
    "div int floor": lambda e: e.n.div(3, rounding_mode="floor"),
    "div int trunc": lambda e: e.n.div(e.t([3, -2, 5, 7], np.int64), rounding_mode="trunc"),
    "div_ rounding_mode=": lambda e: e.x.clone().div_(e.y, rounding_mode="floor"),
    "div_ int trunc": lambda e: e.n.clone().div_(4, rounding_mode="trunc"),
    "divide rounding_mode=": lambda e: e.x.divide(e.y, rounding_mode="trunc"),
    "divide_ rounding_mode=": lambda e: e.x.clone().divide_(2.0, rounding_mode="floor"),
    "true_divide other=": lambda e: e.x.true_divide(other=e.y),
    "floor_divide other=": lambda e: e.x.floor_divide(other=e.y),
    "remainder other=": lambda e: e.x.remainder(other=1.5),
    "fmod other=": lambda e: e.x.fmod(other=1.5),
    "pow exponent=": lambda e: e.x.pow(exponent=2),
    "pow exponent= tensor": lambda e: e.y.pow(exponent=e.x),
    "pow_ exponent=": lambda e: e.y.clone().pow_(exponent=3),
    "float_power exponent=": lambda e: e.y.float_power(exponent=2),
    "atan2 other=": lambda e: e.x.atan2(other=e.y),
    "hypot other=": lambda e: e.x.hypot(other=e.y),
    "maximum other=": lambda e: e.x.maximum(other=e.y),
    "minimum other=": lambda e: e.x.minimum(other=e.y),
    "fmax other=": lambda e: e.x.fmax(other=e.y),
    "fmin other=": lambda e: e.x.fmin(other=e.y),
    "logaddexp other=": lambda e: e.x.logaddexp(other=e.y),
    "copysign other=": lambda e: e.y.copysign(other=e.x),
    "xlogy other=": lambda e: e.y.xlogy(other=e.y),
    "eq other=": lambda e: e.x.eq(other=e.y),
    "ne other=": lambda e: e.x.ne(other=0.5),
    "lt other=": lambda e: e.x.lt(other=e.y),
    "le other=": lambda e: e.x.le(other=0.0),
    "gt other=": lambda e: e.x.gt(other=e.y),
    "ge other=": lambda e: e.x.ge(other=0.0),
    "greater other=": lambda e: e.x.greater(other=e.y),
    "logical_and other=": lambda e: e.mask.logical_and(other=e.x < 1),
    "bitwise_and other=": lambda e: e.n.bitwise_and(other=e.n + 3),
    "gcd other=": lambda e: e.n.gcd(other=e.n + 6),
    "lerp end= weight=": lambda e: e.x.lerp(end=e.y, weight=0.25),
    "addcmul tensor1= tensor2= value=": lambda e: e.x.addcmul(tensor1=e.y, tensor2=e.x, value=2),
    "addcdiv value=": lambda e: e.x.addcdiv(e.x, e.y, value=0.5),
    "clamp min= max=": lambda e: e.x.clamp(min=-1.0, max=1.0),
    "clamp min= tensor": lambda e: e.x.clamp(min=e.y - 1),
    "clamp max= only": lambda e: e.x.clamp(max=0.5),
    "clamp_ min=": lambda e: e.x.clone().clamp_(min=0.0),
    "clip min= max=": lambda e: e.x.clip(min=-0.5, max=0.5),
    "clamp_min min=": lambda e: e.x.clamp_min(min=0.25),
    "clamp_max max=": lambda e: e.x.clamp_max(max=0.25),
    "round decimals=": lambda e: (e.y * 3.3).round(decimals=1),
    "nan_to_num nan= posinf= neginf=": lambda e: e.x.log().nan_to_num(nan=0.0, posinf=9.0,
                                                                      neginf=-9.0),
    "logit eps=": lambda e: (e.y / 4).logit(eps=1e-3),
    "isclose other= rtol= atol=": lambda e: e.x.isclose(other=e.x + 1e-3, rtol=0, atol=1e-2),
    "allclose other= atol=": lambda e: e.x.allclose(other=e.x + 1e-3, atol=1e-2),
    "heaviside values=": lambda e: e.x.heaviside(values=e.y),
    "where condition= other=": lambda e: e.x.where(condition=e.mask, other=e.y),
    "where scalar other": lambda e: e.x.where(e.mask, 0.0),
    "masked_fill mask= value=": lambda e: e.x.masked_fill(mask=e.mask, value=-1.0),
    "masked_fill tensor value": lambda e: e.x.masked_fill(e.mask, e.t(7.0, np.float32)),
    "masked_fill_ mask= value=": lambda e: e.x.clone().masked_fill_(mask=e.mask, value=0.0),
    "fill_ value=": lambda e: e.x.clone().fill_(value=3.0),
    "softmax dim=": lambda e: e.x.softmax(dim=1),
    "softmax dim= dtype=": lambda e: e.x.softmax(dim=-1, dtype=e.lib.float64),
    "log_softmax dim=": lambda e: e.x.log_softmax(dim=2),
    # reductions: dim=, keepdim=, dtype=, correction=/unbiased=
    "sum dim= keepdim=": lambda e: e.x.sum(dim=1, keepdim=True),
    "sum dim= list": lambda e: e.x.sum(dim=[0, 2]),
    "sum dim= dtype=": lambda e: e.x.sum(dim=0, dtype=e.lib.float64),
    "sum dtype= only": lambda e: e.n.sum(dtype=e.lib.float32),
    "sum positional keepdim": lambda e: e.x.sum(2, True),
    "nansum dim=": lambda e: e.x.nansum(dim=1, keepdim=True),
    "prod dim= keepdim= dtype=": lambda e: e.y.prod(dim=2, keepdim=True, dtype=e.lib.float64),
    "mean dim= keepdim=": lambda e: e.x.mean(dim=(0, 2), keepdim=True),
    "mean dtype=": lambda e: e.n.mean(dim=1, dtype=e.lib.float64),
    "nanmean dim=": lambda e: e.x.nanmean(dim=2),
    "std dim= correction=": lambda e: e.x.std(dim=1, correction=0),
    "std dim= unbiased=": lambda e: e.x.std(dim=2, unbiased=False, keepdim=True),
    "std positional unbiased": lambda e: e.x.std(1, False, True),
    "std unbiased only": lambda e: e.x.std(unbiased=False),
    "var dim= keepdim= correction=": lambda e: e.x.var(dim=[0, 1], keepdim=True, correction=2),
    "var positional": lambda e: e.x.var(0, True),
    "max dim=": lambda e: e.x.max(dim=1),
    "max dim= keepdim=": lambda e: e.x.max(dim=2, keepdim=True),
    "max other=": lambda e: e.x.max(other=e.y),
    "min dim=": lambda e: e.x.min(dim=0),
    "min positional keepdim": lambda e: e.x.min(1, True),
    "amax dim= keepdim=": lambda e: e.x.amax(dim=(0, 2), keepdim=True),
    "amin dim=": lambda e: e.x.amin(dim=1),
    "aminmax dim= keepdim=": lambda e: e.x.aminmax(dim=1, keepdim=True),
    "argmax dim= keepdim=": lambda e: e.x.argmax(dim=1, keepdim=True),
    "argmin dim=": lambda e: e.x.argmin(dim=2),
    "all dim=": lambda e: e.mask.all(dim=2),
    "any dim= keepdim=": lambda e: e.mask.any(dim=1, keepdim=True),
    "logsumexp dim= keepdim=": lambda e: e.x.logsumexp(dim=1, keepdim=True),
    "count_nonzero dim=": lambda e: e.mask.count_nonzero(dim=1),
    "norm p= dim= keepdim=": lambda e: e.x.norm(p=1, dim=2, keepdim=True),
    "norm positional": lambda e: e.x.norm(2, 1),
    "norm p=fro": lambda e: e.x.norm(p="fro"),
    "norm dim= only": lambda e: e.x.norm(dim=1),
    "norm p=inf": lambda e: e.x.norm(p=float("inf"), dim=0),
    "median dim= keepdim=": lambda e: e.x.median(dim=1, keepdim=True),
    "nanmedian dim=": lambda e: e.x.nanmedian(dim=2),
    "mode dim=": lambda e: e.n.abs().mode(dim=2),
    "kthvalue k= dim=": lambda e: e.x.kthvalue(k=2, dim=1),
    "quantile q= dim= keepdim=": lambda e: e.x.quantile(q=0.25, dim=2, keepdim=True),
    "quantile interpolation=": lambda e: e.x.quantile(0.4, dim=1, interpolation="lower"),
    "cumsum dim=": lambda e: e.x.cumsum(dim=1),
    "cumsum dim= dtype=": lambda e: e.n.cumsum(dim=2, dtype=e.lib.float64),
    "cumsum_ dim=": lambda e: e.x.clone().cumsum_(dim=0),
    "cumprod dim= dtype=": lambda e: e.y.cumprod(dim=2, dtype=e.lib.float64),
    "cummax dim=": lambda e: e.x.cummax(dim=2),
    "cummin dim=": lambda e: e.x.cummin(dim=1),
    "logcumsumexp dim=": lambda e: e.x.logcumsumexp(dim=2),
    "diff n= dim= prepend=": lambda e: e.x.diff(n=1, dim=1, prepend=e.x[:, :1]),
    "dist other= p=": lambda e: e.x.dist(other=e.y, p=1),
    "renorm p= dim= maxnorm=": lambda e: e.x.renorm(p=2, dim=0, maxnorm=1.0),
    "histc bins= min= max=": lambda e: e.x.histc(bins=4, min=-2, max=4),
    "bincount weights= minlength=": lambda e: e.n.abs().flatten().bincount(
        weights=e.x.abs().flatten(), minlength=12),
    "cov correction=": lambda e: e.m.cov(correction=0),
    # sorting and selection
    "sort dim= descending=": lambda e: e.x.sort(dim=1, descending=True),
    "sort stable= dim=": lambda e: e.n.sort(stable=True, dim=2),
    "sort stable= only": lambda e: e.n.sort(stable=True),
    "sort positional": lambda e: e.x.sort(0, True),
    "argsort dim= descending=": lambda e: e.x.argsort(dim=2, descending=True),
    "argsort stable=": lambda e: e.n.argsort(stable=True, dim=1),
    "topk k= dim= largest= sorted=": lambda e: e.x.topk(k=2, dim=1, largest=False, sorted=True),
    "topk positional": lambda e: e.x.topk(3, 2),
    "msort": lambda e: e.x.msort(),
    "unique sorted= return_inverse= return_counts=": lambda e: e.n.unique(
        sorted=True, return_inverse=True, return_counts=True),
    "unique dim=": lambda e: e.n.abs().unique(dim=0),
    # indexing: dim=, index=, src=/value=, reduce=
    "gather dim= index=": lambda e: e.m.gather(dim=1, index=e.i),
    "gather sparse_grad=": lambda e: e.m.gather(0, e.i, sparse_grad=False),
    "scatter dim= index= src=": lambda e: e.m.scatter(dim=1, index=e.i[:, :2], src=e.m * 10),
    "scatter value=": lambda e: e.m.scatter(1, e.i[:, :2], value=-5.0),
    "scatter dim= index= value=": lambda e: e.m.scatter(dim=0, index=e.i, value=2.0),
    "scatter reduce=add": lambda e: e.m.scatter(0, e.i, e.m, reduce="add"),
    "scatter reduce=multiply": lambda e: e.m.scatter(0, e.i, e.m, reduce="multiply"),
    "scatter value reduce=": lambda e: e.m.scatter(1, e.i, 3.0, reduce="add"),
    "scatter_ src= reduce=": lambda e: e.m.clone().scatter_(0, e.i, src=e.m, reduce="add"),
    "scatter_ value=": lambda e: e.m.clone().scatter_(1, e.i, value=9.0),
    "scatter_add dim= index= src=": lambda e: e.m.scatter_add(dim=1, index=e.i, src=e.m),
    "scatter_add_ src=": lambda e: e.m.clone().scatter_add_(0, e.i, src=e.m),
    "scatter_reduce reduce= include_self=": lambda e: e.m.scatter_reduce(
        dim=1, index=e.i, src=e.m * 2, reduce="amax", include_self=False),
    "scatter_reduce mean": lambda e: e.m.scatter_reduce(0, e.i, e.m, reduce="mean"),
    "index_select dim= index=": lambda e: e.x.index_select(dim=1, index=e.t([2, 0], np.int64)),
    "index_add dim= index= source= alpha=": lambda e: e.m.index_add(
        dim=0, index=e.t([1, 0], np.int64), source=e.m, alpha=2),
    "index_add_ alpha=": lambda e: e.m.clone().index_add_(1, e.t([2, 2, 0], np.int64), e.m,
                                                         alpha=-1),
    "index_copy source=": lambda e: e.m.index_copy(0, e.t([1, 0], np.int64), source=e.m * 3),
    "index_copy_ source=": lambda e: e.m.clone().index_copy_(dim=1, index=e.t([2, 0, 1], np.int64),
                                                            source=e.m),
    "index_fill dim= index= value=": lambda e: e.m.index_fill(dim=1, index=e.t([0, 2], np.int64),
                                                             value=-3.0),
    "index_put indices= values= accumulate=": lambda e: e.m.index_put(
        indices=(e.t([0, 1, 0], np.int64), e.t([2, 2, 2], np.int64)),
        values=e.t([1.0, 2.0, 3.0], np.float32), accumulate=True),
    "masked_select mask=": lambda e: e.x.masked_select(mask=e.mask),
    "masked_scatter mask= source=": lambda e: e.x.masked_scatter(mask=e.mask, source=e.y),
    "take index=": lambda e: e.x.take(index=e.t([0, 5, 23], np.int64)),
    "take_along_dim indices= dim=": lambda e: e.x.take_along_dim(
        indices=e.x.argsort(dim=2), dim=2),
    "put index= source= accumulate=": lambda e: e.m.put(
        index=e.t([0, 4, 0], np.int64), source=e.t([1.0, 2.0, 3.0], np.float32),
        accumulate=True),
    "put_ accumulate=": lambda e: e.m.clone().put_(e.t([0, 4], np.int64),
                                                   e.t([1.0, 2.0], np.float32), accumulate=True),
    "nonzero as_tuple=": lambda e: e.mask.nonzero(as_tuple=True),
    "narrow dim= start= length=": lambda e: e.x.narrow(dim=2, start=1, length=2),
    "select dim= index=": lambda e: e.x.select(dim=1, index=2),
    # shapes
    "view size=": lambda e: e.x.view(size=(4, 6)),
    "view dtype=": lambda e: e.x.view(dtype=e.lib.int32),
    "view -1": lambda e: e.x.view(-1, 4),
    "reshape shape=": lambda e: e.x.reshape(shape=(3, 8)),
    "view_as other=": lambda e: e.x.view_as(other=e.x.flatten()),
    "reshape_as other=": lambda e: e.x.reshape_as(other=e.m.flatten().repeat(4)),
    "expand_as other=": lambda e: e.x[:1].expand_as(other=e.x),
    "expand size= -1": lambda e: e.x[:, :1].expand(size=(-1, 3, -1)),
    "permute dims=": lambda e: e.x.permute(dims=(2, 0, 1)),
    "permute list": lambda e: e.x.permute([1, 2, 0]),
    "transpose dim0= dim1=": lambda e: e.x.transpose(dim0=0, dim1=2),
    "transpose_ dim0= dim1=": lambda e: e.x.clone().transpose_(dim0=1, dim1=2),
    "swapaxes axis0= axis1=": lambda e: e.x.swapaxes(axis0=0, axis1=1),
    "swapdims dim0= dim1=": lambda e: e.x.swapdims(dim0=1, dim1=2),
    "movedim source= destination=": lambda e: e.x.movedim(source=0, destination=2),
    "moveaxis source= destination=": lambda e: e.x.moveaxis(source=(0, 1), destination=(2, 0)),
    "flatten start_dim= end_dim=": lambda e: e.x.flatten(start_dim=1, end_dim=2),
    "flatten start_dim=": lambda e: e.x.flatten(start_dim=1),
    "unflatten dim= sizes=": lambda e: e.x.unflatten(dim=2, sizes=(2, 2)),
    "unflatten -1": lambda e: e.x.unflatten(1, (3, -1)),
    "squeeze dim=": lambda e: e.x[:1].squeeze(dim=0),
    "squeeze dim= tuple": lambda e: e.x[:1, :, :1].squeeze(dim=(0, 2)),
    "squeeze_ dim=": lambda e: e.x[:1].clone().squeeze_(dim=0),
    "unsqueeze dim=": lambda e: e.x.unsqueeze(dim=-1),
    "unsqueeze_ dim=": lambda e: e.x.clone().unsqueeze_(dim=1),
    "flip dims=": lambda e: e.x.flip(dims=(0, 2)),
    "fliplr": lambda e: e.m.fliplr(),
    "roll shifts= dims=": lambda e: e.x.roll(shifts=(1, -1), dims=(1, 2)),
    "roll shifts= flat": lambda e: e.x.roll(shifts=5),
    "rot90 k= dims=": lambda e: e.x.rot90(k=1, dims=(1, 2)),
    "repeat": lambda e: e.m.repeat(2, 1, 3),
    "repeat_interleave repeats= dim=": lambda e: e.x.repeat_interleave(repeats=2, dim=1),
    "repeat_interleave tensor repeats": lambda e: e.m.repeat_interleave(
        e.t([1, 0, 2], np.int64), dim=1),
    "repeat_interleave output_size=": lambda e: e.m.repeat_interleave(
        e.t([2, 1], np.int64), dim=0, output_size=3),
    "tile dims=": lambda e: e.m.tile(dims=(2, 1)),
    "split split_size= dim=": lambda e: e.x.split(split_size=2, dim=2),
    "split sizes dim=": lambda e: e.x.split([1, 2], dim=1),
    "split_with_sizes split_sizes= dim=": lambda e: e.x.split_with_sizes(split_sizes=[3, 1],
                                                                        dim=2),
    "chunk chunks= dim=": lambda e: e.x.chunk(chunks=2, dim=2),
    "chunk uneven": lambda e: e.x.chunk(2, 1),
    "tensor_split sections= dim=": lambda e: e.x.tensor_split(sections=3, dim=2),
    "tensor_split indices= dim=": lambda e: e.x.tensor_split(indices=[1, 3], dim=2),
    "tensor_split positional": lambda e: e.x.tensor_split(2, 1),
    "unbind dim=": lambda e: e.x.unbind(dim=1),
    "hsplit sections": lambda e: e.x.hsplit(3),
    "hsplit sections=": lambda e: e.x.hsplit(sections=3),
    "vsplit indices=": lambda e: e.x.vsplit(indices=[1]),
    "dsplit sections=": lambda e: e.x.dsplit(sections=2),
    "tril diagonal=": lambda e: e.m.tril(diagonal=1),
    "triu diagonal=": lambda e: e.x.triu(diagonal=-1),
    "triu_ diagonal=": lambda e: e.m.clone().triu_(diagonal=1),
    "diagonal offset= dim1= dim2=": lambda e: e.x.diagonal(offset=1, dim1=1, dim2=2),
    "diag diagonal=": lambda e: e.m.diag(diagonal=1),
    "diag_embed offset= dim1= dim2=": lambda e: e.m.diag_embed(offset=1, dim1=0, dim2=2),
    "unfold dimension= size= step=": lambda e: e.x.unfold(dimension=2, size=2, step=1),
    "sum_to_size size=": lambda e: e.x.sum_to_size(size=(1, 3, 1)),
    "contiguous memory_format=": lambda e: e.x.transpose(0, 1).contiguous(
        memory_format=e.lib.contiguous_format),
    "clone memory_format=": lambda e: e.x.clone(memory_format=e.lib.preserve_format),
    # products
    "matmul other=": lambda e: e.m.matmul(other=e.m.T),
    "mm mat2=": lambda e: e.m.mm(mat2=e.m.T),
    "bmm mat2=": lambda e: e.x.bmm(mat2=e.x.transpose(1, 2)),
    "mv vec=": lambda e: e.m.mv(vec=e.t([1.0, 2.0, 3.0], np.float32)),
    "dot tensor=": lambda e: e.m[0].dot(tensor=e.m[1]),
    "outer vec2=": lambda e: e.m[0].outer(vec2=e.m[1]),
    "cross other= dim=": lambda e: e.m.cross(other=e.m.flip(0), dim=1),
    "addmm mat1= mat2= beta= alpha=": lambda e: e.m[:, :2].addmm(
        mat1=e.m, mat2=e.m.T, beta=0.5, alpha=2),
    "baddbmm batch1= batch2= beta= alpha=": lambda e: e.x[:, :, :3].baddbmm(
        batch1=e.x, batch2=e.x.transpose(1, 2), beta=0.5, alpha=2),
    "kron other=": lambda e: e.m.kron(other=e.m[:1]),
    "trace": lambda e: e.m[:, :2].trace(),
    "matrix_power n=": lambda e: e.m[:, :2].matrix_power(n=3),
    # conversions and creation
    "to dtype=": lambda e: e.x.to(dtype=e.lib.float64),
    "to device= dtype=": lambda e: e.x.to(device="cpu", dtype=e.lib.int32),
    "to positional device dtype": lambda e: e.x.to("cpu", e.lib.float16),
    "to other tensor": lambda e: e.x.to(e.n),
    "to dtype copy=": lambda e: e.x.to(e.lib.float32, copy=True),
    "to non_blocking=": lambda e: e.x.to("cpu", non_blocking=True),
    "type dtype=": lambda e: e.x.type(dtype=e.lib.int64),
    "type_as other=": lambda e: e.x.type_as(other=e.n),
    "float memory_format=": lambda e: e.n.float(memory_format=e.lib.preserve_format),
    "double": lambda e: e.n.double(),
    "new_zeros size dtype=": lambda e: e.x.new_zeros((2, 3), dtype=e.lib.int64),
    "new_zeros varargs": lambda e: e.x.new_zeros(2, 3),
    "new_zeros device= requires_grad=": lambda e: e.x.new_zeros((2,), device="cpu",
                                                                requires_grad=False),
    "new_ones requires_grad=": lambda e: e.x.new_ones(2, requires_grad=True).requires_grad,
    "new_full requires_grad=": lambda e: e.x.new_full((2,), 1.0,
                                                      requires_grad=True).requires_grad,
    "new_tensor requires_grad=": lambda e: e.x.new_tensor([1.0], requires_grad=True).requires_grad,
    "new_ones size=": lambda e: e.x.new_ones(size=(2, 2), dtype=e.lib.float64),
    "new_full size= fill_value=": lambda e: e.x.new_full(size=(2, 3), fill_value=1.5),
    "new_full dtype= device=": lambda e: e.x.new_full((3,), 7, dtype=e.lib.int32, device="cpu"),
    "new_tensor data= dtype=": lambda e: e.x.new_tensor(data=[1, 2], dtype=e.lib.float64),
    "new_empty size= shape": lambda e: e.x.new_empty(size=(2, 5)).shape,
    "size dim=": lambda e: e.x.size(dim=1),
    "stride dim=": lambda e: e.x.stride(dim=0),
    "numpy force=": lambda e: e.x.numpy(force=True),
    "copy_ non_blocking=": lambda e: e.x.clone().copy_(e.y, non_blocking=False),
    "copy_ other=": lambda e: e.x.clone().copy_(other=e.y[:1]),  # the binding's name, not src
    "broadcast_to size=": lambda e: e.m[:1].broadcast_to(size=(4, 3)),
    "expand implicit=": lambda e: e.m[:1].expand(3, 3, implicit=False),
    "is_pinned device=": lambda e: e.x.is_pinned(device=None),
    "requires_grad_ requires_grad=": lambda e: e.x.clone().requires_grad_(
        requires_grad=True).requires_grad,
}

def _numpy(v):
    if isinstance(v, torch.Tensor):
        return v.detach().numpy()
    return np.asarray(v)


def _compare(got, want, name):
    if isinstance(want, torch.Size):
        assert tuple(got) == tuple(want), name
        return
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), (name, got)
        if hasattr(want, "_fields"):  # (values, indices) named tuples
            assert tuple(got._fields) == tuple(want._fields), name
        for g, w in zip(got, want):
            _compare(g, w, name)
        return
    if isinstance(want, np.ndarray):
        np.testing.assert_array_equal(np.asarray(got), want)
        return
    if not isinstance(want, torch.Tensor):
        assert type(got) is type(want) and got == pytest.approx(want), (name, got, want)
        return
    assert isinstance(got, ak.Tensor), (name, type(got))
    assert got.shape == tuple(want.shape), (name, got.shape, want.shape)
    assert got.dtype.name == str(want.dtype).removeprefix("torch."), (name, got.dtype, want.dtype)
    np.testing.assert_allclose(_numpy(got), _numpy(want), rtol=2e-6, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_pytorch_keyword_spelling_gives_torchs_value(name):
    want = CASES[name](Env(torch))
    got = CASES[name](Env(ak))
    _compare(got, want, name)


# ----------------------------------------------------------------------------- the sweep

# Keywords torch's docstrings or operator schemas print for a method but torch's method
# refuses (each is tried on torch in test_torch_refuses_these_keywords): an argument of
# another overload (a TorchScript one), or a stale name. arraykit may still take one as
# its own name (copy_'s src, dot's other, as arraykit.dot).
TORCH_REFUSES = {
    "div": {"value"}, "div_": {"value"}, "divide": {"value"}, "floor_divide": {"value"},
    "mul": {"value"}, "mul_": {"value"}, "multiply": {"value"}, "true_divide": {"value"},
    "matmul": {"tensor2"}, "index_copy_": {"tensor"}, "narrow": {"dimension"},
    "narrow_copy": {"dimension"}, "remainder": {"divisor"}, "take": {"indices"},
    "type_as": {"tensor"}, "view": {"shape"}, "to_sparse": {"sparseDims"},
    "dot": {"other"}, "where": {"y"}, "copy_": {"src"}, "arctanh_": {"other"}, "atanh_": {"other"},
    "bmm": {"batch2", "out_dtype"}, "divide_": {"value"}, "floor_divide_": {"value"},
    "multiply_": {"value"}, "true_divide_": {"value"}, "remainder_": {"divisor"},
    "fmod": {"divisor"}, "fmod_": {"divisor"}, "dsplit": {"split_size_or_sections"},
    "hsplit": {"split_size_or_sections"}, "vsplit": {"split_size_or_sections"},
    "index_copy": {"tensor2"}, "masked_scatter": {"tensor"},
    # from the operator schemas (schema_keyword_gaps)
    "mm": {"out_dtype"}, "addmm": {"out_dtype"},
    "baddbmm": {"out_dtype"}, "split": {"split_sizes"}, "to": {"layout", "pin_memory", "other"},
}

_REFUSED_CALLS = {
    ("div", "value"): lambda x: x.div(value=2.0),
    ("div_", "value"): lambda x: x.div_(value=2.0),
    ("divide", "value"): lambda x: x.divide(value=2.0),
    ("floor_divide", "value"): lambda x: x.floor_divide(value=2.0),
    ("mul", "value"): lambda x: x.mul(value=2.0),
    ("mul_", "value"): lambda x: x.mul_(value=2.0),
    ("multiply", "value"): lambda x: x.multiply(value=2.0),
    ("true_divide", "value"): lambda x: x.true_divide(value=2.0),
    ("matmul", "tensor2"): lambda x: x.matmul(tensor2=x.T),
    ("index_copy_", "tensor"): lambda x: x.index_copy_(0, torch.tensor([1, 0]), tensor=x),
    ("narrow", "dimension"): lambda x: x.narrow(dimension=1, start=0, length=1),
    ("narrow_copy", "dimension"): lambda x: x.narrow_copy(dimension=1, start=0, length=1),
    ("remainder", "divisor"): lambda x: x.remainder(divisor=2.0),
    ("take", "indices"): lambda x: x.take(indices=torch.tensor([0])),
    ("type_as", "tensor"): lambda x: x.type_as(tensor=x),
    ("view", "shape"): lambda x: x.view(shape=(3, 2)),
    ("to_sparse", "sparseDims"): lambda x: x.to_sparse(sparseDims=1),
    ("copy_", "src"): lambda x: x.copy_(src=x),
    ("dot", "other"): lambda x: x[0].dot(other=x[1]),
    ("where", "y"): lambda x: x.where(x > 1, y=x),
    ("arctanh_", "other"): lambda x: (x / 9).arctanh_(other=x),
    ("atanh_", "other"): lambda x: (x / 9).atanh_(other=x),
    ("bmm", "batch2"): lambda x: x[None].bmm(batch2=x.T[None]),
    ("divide_", "value"): lambda x: x.divide_(value=2.0),
    ("floor_divide_", "value"): lambda x: x.floor_divide_(value=2.0),
    ("multiply_", "value"): lambda x: x.multiply_(value=2.0),
    ("true_divide_", "value"): lambda x: x.true_divide_(value=2.0),
    ("remainder_", "divisor"): lambda x: x.remainder_(divisor=2.0),
    ("fmod", "divisor"): lambda x: x.fmod(divisor=2.0),
    ("fmod_", "divisor"): lambda x: x.fmod_(divisor=2.0),
    ("dsplit", "split_size_or_sections"): lambda x: x[None].dsplit(split_size_or_sections=3),
    ("hsplit", "split_size_or_sections"): lambda x: x.hsplit(split_size_or_sections=3),
    ("vsplit", "split_size_or_sections"): lambda x: x.vsplit(split_size_or_sections=2),
    ("index_copy", "tensor2"): lambda x: x.index_copy(0, torch.tensor([1, 0]), tensor2=x),
    ("masked_scatter", "tensor"): lambda x: x.masked_scatter(x > 2, tensor=x),
    ("mm", "out_dtype"): lambda x: x.mm(x.T, out_dtype=torch.float32),
    ("bmm", "out_dtype"): lambda x: x[None].bmm(x.T[None], out_dtype=torch.float32),
    ("addmm", "out_dtype"): lambda x: x[:, :2].addmm(x, x.T, out_dtype=torch.float32),
    ("baddbmm", "out_dtype"): lambda x: x[None, :, :2].baddbmm(x[None], x.T[None],
                                                              out_dtype=torch.float32),
    ("split", "split_sizes"): lambda x: x.split(split_sizes=[1, 2], dim=1),
    ("to", "layout"): lambda x: x.to(dtype=torch.float64, layout=torch.strided),
    ("to", "pin_memory"): lambda x: x.to(dtype=torch.float64, pin_memory=False),
    ("to", "other"): lambda x: x.to(other=x),
}

# Keywords arraykit does not take, each with its reason.
NOT_TAKEN = {
    # arraykit has one layout (strided) and pins memory only through x.pin_memory().
    "new_empty": {"layout", "pin_memory"}, "new_empty_strided": {"layout", "pin_memory"},
    "new_full": {"layout", "pin_memory"}, "new_ones": {"layout", "pin_memory"},
    "new_tensor": {"layout", "pin_memory"}, "new_zeros": {"layout", "pin_memory"},
    # a ``from`` keyword cannot be a Python parameter name; arraykit's random_/uniform_
    # take (from, to) positionally, as almost all code calls them
    "random_": {"from"}, "uniform_": {"from", "to"},
    # to/type: torch's signature lines print (*args, **kwargs); arraykit's names its keywords
    "to": {"args", "kwargs"}, "type": {"kwargs"},
}


def accepted_keywords(method, depth=0):
    """The keyword names arraykit's ``method`` accepts. A method written as
    ``method(self, *args, **kwargs)`` forwarding to a namespace function or to the
    out-of-place method (``_method_of``, ``_forward``, ``_inplace_twin``) accepts what the
    function it closes over accepts; None when no signature is found."""
    names = arraykit_names(method)
    if names is not None or depth > 3:
        return names
    for cell in getattr(method, "__closure__", None) or ():
        inner = cell.cell_contents
        if callable(inner) and not isinstance(inner, type):
            names = accepted_keywords(inner, depth + 1)
            if names is not None:
                return names
    return None


def keyword_gaps():
    """``{method: sorted keywords}`` PyTorch takes and arraykit's method lacks, and how
    many methods were compared (those whose keywords cannot be found are left to
    :data:`CASES`)."""
    gaps, compared = {}, 0
    for name, theirs, ours in shared_methods():
        accepted = accepted_keywords(ours)
        if accepted is None:
            continue
        compared += 1
        wanted = torch_names(name, theirs, method=True) - {"self", "input", "out"}
        lacking = wanted - accepted - TORCH_REFUSES.get(name, set()) - NOT_TAKEN.get(name, set())
        if lacking:
            gaps[name] = sorted(lacking)
    return gaps, compared


def schema_keyword_gaps():
    """As :func:`keyword_gaps`, with PyTorch's names read from its operator schemas
    (``aten::name``, the names its Python binding takes: ``copy_``'s is ``other``, where
    the docstring says ``src``), the overloads of a Tensor ``self`` without ``out``."""
    gaps, compared = {}, 0
    for name, _, ours in shared_methods():
        accepted = accepted_keywords(ours)
        schemas = torch._C._jit_get_schemas_for_operator("aten::" + name)
        if accepted is None or not schemas:
            continue
        compared += 1
        wanted = set()
        for schema in schemas:
            args = schema.arguments
            if (args and args[0].name == "self" and str(args[0].type) == "Tensor"
                    and not any(a.is_out for a in args)):
                wanted |= {a.name for a in args[1:]}
        lacking = wanted - accepted - TORCH_REFUSES.get(name, set()) - NOT_TAKEN.get(name, set())
        if lacking:
            gaps[name] = sorted(lacking)
    return gaps, compared


# The two sweeps read the installed PyTorch's signatures: they hold for the pinned one
# (other releases add, rename or drop keywords: 2.11's schemas name ``outdim``, ``names``).
PINNED_TORCH = pytest.mark.skipif(
    not torch.__version__.startswith("2.13.0"),
    reason=f"the sweep compares against torch 2.13.0's signatures, not {torch.__version__}'s")


@PINNED_TORCH
def test_every_keyword_of_pytorchs_operator_schemas_is_accepted():
    gaps, compared = schema_keyword_gaps()
    assert compared > 300
    assert gaps == {}


@PINNED_TORCH
def test_every_pytorch_method_keyword_is_accepted():
    gaps, compared = keyword_gaps()
    assert compared > 450  # the sweep reaches the methods (not an empty comparison)
    assert gaps == {}


@pytest.mark.parametrize("key", sorted(_REFUSED_CALLS))
def test_torch_refuses_these_keywords(key):
    assert key[1] in TORCH_REFUSES[key[0]]
    with pytest.raises(TypeError):
        _REFUSED_CALLS[key](torch.arange(6.0).reshape(2, 3))


def test_refusals_are_all_checked():
    assert {(n, k) for n, ks in TORCH_REFUSES.items() for k in ks} == set(_REFUSED_CALLS)


# ----------------------------------------------------------------------------- around the table

NAMESPACE = {  # the namespace functions that gained PyTorch's keywords with the methods
    "scatter value=": lambda e: e.lib.scatter(e.m, 1, e.i, value=4.0),
    "scatter reduce=": lambda e: e.lib.scatter(e.m, 0, e.i, e.m, reduce="multiply"),
    "gather sparse_grad=": lambda e: e.lib.gather(e.m, 1, e.i, sparse_grad=False),
    "tensor_split sections=": lambda e: e.lib.tensor_split(e.x, sections=2, dim=1),
    "hsplit indices=": lambda e: e.lib.hsplit(e.x, indices=[2]),
}


@pytest.mark.parametrize("name", sorted(NAMESPACE))
def test_namespace_functions_take_the_same_keywords(name):
    _compare(NAMESPACE[name](Env(ak)), NAMESPACE[name](Env(torch)), name)


def test_in_place_spellings_write_into_the_tensor():
    for lib in (torch, ak):
        e = Env(lib)
        n = e.n.clone()
        assert n.div_(3, rounding_mode="floor") is n
        np.testing.assert_array_equal(np.asarray(n.tolist()), np.floor_divide(X * 4, 3))
        m = e.m.clone()
        assert m.scatter_(0, e.i, src=e.m, reduce="add") is m
        np.testing.assert_allclose(np.asarray(m.tolist()), [[2.0, 1.0, 1.0], [6.0, 1.0, 8.0]])


def test_the_standards_and_earlier_spellings_are_unchanged():
    x, y = ak.asarray(X, device="cpu"), ak.asarray(Y, device="cpu")
    np.testing.assert_allclose(np.asarray(x.div(y)), X / Y, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(x.pow(2)), X**2, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ak.pow(y, other=2)), Y**2, rtol=1e-6)
    assert x.round().tolist() == np.round(X).tolist()
    assert x[0, 0].dot(other=y[0, 0]).item() == pytest.approx(float(X[0, 0] @ Y[0, 0]))
    assert x.view(ak.int32).dtype == ak.int32 and x.tile(2, 1, 1).shape == (4, 3, 4)
    assert [t.shape[1] for t in x.tensor_split([1], 1)] == [1, 2]


@pytest.mark.parametrize("call, message", [
    (lambda e: e.m.scatter(1, e.i, e.m, value=1.0), "got both"),
    (lambda e: e.x.max(1, other=e.y), "got both"),
    (lambda e: e.x.view(4, 6, dtype=ak.int32), "not both"),
    (lambda e: e.x.tile(2, dims=(2,)), "got both"),
    (lambda e: e.x.sum_to_size(1, size=(1,)), "got both"),
    (lambda e: e.x.tensor_split(2, sections=2), "takes one of"),
    (lambda e: e.x.hsplit(sections=3, indices=[1]), "takes one of"),
    (lambda e: e.x[0, 0].dot(e.y[0, 0], other=e.y[0, 0]), "exactly one"),
])
def test_both_spellings_of_one_parameter_raise(call, message):
    with pytest.raises(TypeError, match=message):
        call(Env(ak))


def test_rounding_mode_is_checked():
    with pytest.raises(ValueError, match="rounding_mode"):
        ak.asarray(X).div(2.0, rounding_mode="round")
    with pytest.raises(RuntimeError, match="add or multiply"):
        ak.asarray(M).scatter(0, ak.asarray(IDX), 1.0, reduce="sum")
