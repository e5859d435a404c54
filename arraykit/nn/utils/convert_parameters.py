"""``parameters_to_vector`` and ``vector_to_parameters``, as ``torch.nn.utils``."""

from __future__ import annotations

from ...tensors.tensor_type import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _parameter_list(parameters, name):
    if isinstance(parameters, Tensor):
        raise TypeError(f"{name}: expected an iterable of tensors, got a Tensor")
    params = list(parameters)
    for p in params:
        if not isinstance(p, Tensor):
            raise TypeError(f"{name}: parameters must be tensors, got {type(p).__name__}")
    return params


def parameters_to_vector(parameters):
    """The values of ``parameters`` (an iterable of tensors) flattened and concatenated
    into one 1-D tensor (differentiable)."""
    from ...api.manipulation import concat

    params = _parameter_list(parameters, "parameters_to_vector")
    devices = {p.device for p in params}
    if len(devices) > 1:
        raise TypeError(f"parameters_to_vector: parameters on several devices {sorted(map(str, devices))}")
    return concat([p.reshape(-1) for p in params])


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of the 1-D tensor ``vec`` into ``parameters`` (in place,
    without recording gradients), as many elements as each has."""
    from ...autograd.mode import no_grad

    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    if vec.ndim != 1:
        raise ValueError(f"vector_to_parameters: vec must be 1-D, got shape {vec.shape}")
    params = _parameter_list(parameters, "vector_to_parameters")
    total = sum(p.numel() for p in params)
    if total != vec.shape[0]:
        raise ValueError(f"vector_to_parameters: vec has {vec.shape[0]} elements, the parameters {total}")
    start = 0
    with no_grad():
        for p in params:
            n = p.numel()
            p.copy_(vec[start:start + n].reshape(p.shape))
            start += n
