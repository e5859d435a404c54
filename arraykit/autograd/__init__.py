"""Automatic differentiation: eager ``backward()`` with PyTorch's rules.

Gradient rules live in one place: every kernel is a JAX function, and its
recorded node's backward is JAX's VJP of that very kernel (reads through views
included), so every namespace function, view and in-place write is
differentiable by construction (see :mod:`arraykit.autograd.graph`).
"""

from ..kernels.launch import register_recorder
from ..tensors.tensor_type import Tensor
from . import tensor_grad
from .function import Function, FunctionCtx
from .functional import grad as functional_grad
from .functional import value_and_grad, vjp
from .mode import (
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
    set_grad_enabled,
)
from .recording import Recorder

__all__ = [
    "Function", "FunctionCtx", "grad", "backward", "functional_grad", "value_and_grad", "vjp",
    "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
    "is_inference_mode_enabled",
]

register_recorder(Recorder(Tensor))
tensor_grad.install(Tensor)


def _as_list(x):
    if x is None:
        return None
    return list(x) if isinstance(x, (list, tuple)) else [x]


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False):
    """Gradients of ``outputs`` with respect to ``inputs`` (a tuple, one per input),
    without touching any ``.grad``; ``grad_outputs`` weights non-scalar outputs."""
    outputs = _as_list(outputs)
    inputs = _as_list(inputs)
    grad_outputs = _as_list(grad_outputs) or [None] * len(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    return tensor_grad.grad_of(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False):
    """Accumulate the gradients of ``tensors`` into the leaves' ``.grad``."""
    tensors = _as_list(tensors)
    grad_tensors = _as_list(grad_tensors) or [None] * len(tensors)
    if retain_graph is None:
        retain_graph = create_graph
    tensor_grad.backward_all(tensors, grad_tensors, retain_graph, create_graph)
