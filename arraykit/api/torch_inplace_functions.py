"""PyTorch's namespace spellings of in-place methods: ``arraykit.exp_(x)`` is
``x.exp_()``, ``arraykit.clamp_(x, 0, 1)`` is ``x.clamp_(0, 1)``.

Each function calls the tensor's method, so it writes through ``x``'s layout (a view
writes into its base), keeps autograd's rules for writes (RuntimeError on a leaf
that requires grad while grad mode is on, as PyTorch) and returns ``x`` itself.
"""

from __future__ import annotations

from ..tensors.tensor_type import require_tensor
from .naming import named

# PyTorch's in-place namespace functions whose method arraykit's Tensor has.
INPLACE_NAMES = (
    "abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
    "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_",
    "clamp_min_", "clip_", "conj_physical_", "cos_", "cosh_", "deg2rad_", "detach_", "erf_", "erfc_", "exp2_",
    "exp_", "expm1_", "fill_", "fix_", "floor_", "frac_", "gcd_", "i0_", "lcm_", "ldexp_",
    "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_",
    "rad2deg_", "reciprocal_", "relu_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_",
    "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_",
)

__all__ = list(INPLACE_NAMES)


def _inplace_function(name):
    def function(input, *args, **kwargs):  # noqa: A002 (PyTorch's name)
        return getattr(require_tensor(input, name), name)(*args, **kwargs)
    return named(function, name, f"``arraykit.{name}(x, ...)``: ``x.{name}(...)``, written "
                 "into ``x`` through its layout; returns ``x``.")


globals().update({name: _inplace_function(name) for name in INPLACE_NAMES})
