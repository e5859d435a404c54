"""Scaled dot-product attention (see :mod:`arraykit.nn.attention_kernels`)."""

from __future__ import annotations

import math

import jax.numpy as jnp

from ...api.autocasting import coerce
from ...core import layout as L
from ...kernels.launch import apply
from ...tensors.tensor_type import require_tensor
from .. import attention_kernels as AK
from .arguments import _floating

__all__ = ["scaled_dot_product_attention"]


# ---------------------------------------------------------------------- attention


def _scaled_dot_product_attention(q, k, v, *rest):
    *mask, options = rest
    return AK.attention(q, k, v, mask[0] if mask else None, options)


def _scaled_dot_product_attention_math(q, k, v, *rest):
    *mask, options = rest
    return AK.attention_math(q, k, v, mask[0] if mask else None, None, options)


def _scaled_dot_product_attention_dropout(key, q, k, v, *rest):
    *mask, options = rest
    return AK.attention_math(q, k, v, mask[0] if mask else None, key, options)


def _attention_shapes(q, k, v, enable_gqa):
    """(query heads per key/value head, batch shape of the output); errors as PyTorch's."""
    if min(q.ndim, k.ndim, v.ndim) < 2:
        raise ValueError(
            "scaled_dot_product_attention: query, key and value need at least 2 dimensions "
            f"(..., L or S, E), got shapes {q.shape}, {k.shape} and {v.shape}"
        )
    if k.shape[-1] != q.shape[-1]:
        raise ValueError(
            f"scaled_dot_product_attention: query's last dimension {q.shape[-1]} must equal "
            f"key's {k.shape[-1]} (query {q.shape}, key {k.shape})"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"scaled_dot_product_attention: key and value must have the same length S, got "
            f"key {k.shape} and value {v.shape}"
        )
    kb, vb = k.shape[:-2], v.shape[:-2]
    groups = 1
    if enable_gqa and q.ndim >= 3 and k.ndim >= 3 and q.shape[-3] != k.shape[-3]:
        hq, hk = q.shape[-3], k.shape[-3]
        if v.ndim < 3 or v.shape[-3] != hk or hq % hk:
            raise ValueError(
                "scaled_dot_product_attention: enable_gqa needs the query heads (dimension -3) "
                "to be a multiple of the key/value heads, and key and value to have as many "
                f"heads, got query {q.shape}, key {k.shape}, value {v.shape}"
            )
        groups = hq // hk
        kb, vb = kb[:-1] + (hq,), vb[:-1] + (hq,)
    try:
        batch = L.broadcast_shapes(q.shape[:-2], kb, vb)
    except ValueError as e:
        raise ValueError(
            f"scaled_dot_product_attention: the batch dimensions of query {q.shape}, key "
            f"{k.shape} and value {v.shape} do not broadcast ({e}); for fewer key/value heads "
            "than query heads pass enable_gqa=True"
        ) from None
    return groups, batch


def _fused_attention_fits(q, k, v, mask):
    """Whether ``jax.nn.dot_product_attention`` takes these operands as they are (its
    softmax runs in float32: float64 inputs take the plain form)."""
    rank = q.ndim
    if q.dtype.np.itemsize > 4:
        return False
    if rank < 3 or k.ndim != rank or v.ndim != rank or v.shape[-1] != q.shape[-1]:
        return False
    if not q.shape[:-3] == k.shape[:-3] == v.shape[:-3] or k.shape[-3] != v.shape[-3]:
        return False
    if q.shape[-3] % k.shape[-3]:
        return False
    return mask is None or mask.ndim < 3 or (mask.ndim <= rank and mask.shape[-3] in (1, q.shape[-3]))


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False):
    """``softmax(query @ key.mT * scale + mask) @ value`` as
    ``torch.nn.functional.scaled_dot_product_attention``.

    query ``(..., Hq, L, E)``, key ``(..., H, S, E)``, value ``(..., H, S, Ev)``.
    ``attn_mask`` is boolean (True takes part) or floating (added to the scores),
    broadcastable to ``(..., Hq, L, S)``; ``is_causal`` masks column ``j > i`` of row
    ``i`` (not together with ``attn_mask``); ``scale`` defaults to ``1 / sqrt(E)``;
    ``dropout_p`` drops attention weights with masks from the default generator of
    the query's device (rescaling the rest by ``1 / (1 - p)``); ``enable_gqa`` lets
    ``Hq`` be a multiple of ``H``, query head ``n`` reading key/value head
    ``n // (Hq // H)``. A row with every score masked gives zeros. Lowers to
    ``jax.nn.dot_product_attention`` without dropout (on a GPU, cuDNN's fused kernel
    for 16-bit inputs without a mask and with ``L == S``, when cuDNN takes the shapes;
    JAX's XLA form for the rest), and to plain XLA for dropout, float64, ``Ev != E``
    and batch dimensions that broadcast.
    """
    q = _floating(query, "scaled_dot_product_attention")
    k = _floating(key, "scaled_dot_product_attention")
    v = _floating(value, "scaled_dot_product_attention")
    q, k, v = coerce("attention", q, k, v)
    if not q.dtype == k.dtype == v.dtype:
        raise ValueError(
            "scaled_dot_product_attention: expected query, key and value to have the same dtype, "
            f"got query {q.dtype}, key {k.dtype} and value {v.dtype}"
        )
    groups, batch = _attention_shapes(q, k, v, enable_gqa)
    scores_shape = batch + (q.shape[-2], k.shape[-2])
    kind = None
    if attn_mask is not None:
        require_tensor(attn_mask, "scaled_dot_product_attention")
        if is_causal:
            raise RuntimeError(
                "scaled_dot_product_attention: attn_mask should not be given together with "
                "is_causal=True (PyTorch's reference backend refuses it too); include the "
                "causal mask in attn_mask instead"
            )
        if attn_mask.dtype.kind == "bool":
            kind = "bool"
        elif attn_mask.dtype.kind == "float":
            kind = "float"
        else:
            raise TypeError(
                f"scaled_dot_product_attention: attn_mask must be boolean or floating, got "
                f"{attn_mask.dtype}"
            )
        if L.broadcast_shapes(attn_mask.shape, scores_shape) != scores_shape:
            raise ValueError(
                f"scaled_dot_product_attention: attn_mask of shape {attn_mask.shape} does not "
                f"broadcast to the attention weights' shape {scores_shape}"
            )
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"scaled_dot_product_attention: dropout_p must be in [0, 1], got {dropout_p}")
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    options = (kind, bool(is_causal), scale, groups, 1.0 - float(dropout_p))
    operands = (q, k, v) if attn_mask is None else (q, k, v, attn_mask)
    if dropout_p > 0:
        from ...random import draw

        return draw(_scaled_dot_product_attention_dropout, operands, (options,), None, q.device)
    if _fused_attention_fits(q, k, v, attn_mask):
        # cuDNN: 16-bit, no mask, and L == S (where top-left and bottom-right causal agree)
        cudnn = (q.device.platform == "gpu" and kind is None and q.shape[-2] == k.shape[-2]
                 and q.dtype.np in (jnp.bfloat16, jnp.float16))
        return apply(_scaled_dot_product_attention, operands,
                     (options + ("cudnn" if cudnn else None,),))
    return apply(_scaled_dot_product_attention_math, operands, (options,))
