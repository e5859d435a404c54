"""Scaled dot-product attention (see :mod:`arraykit.nn.attention_kernels`) and PyTorch's
multi-head attention on it."""

from __future__ import annotations

import math

import jax.numpy as jnp

from ...api.autocasting import coerce
from ...core import layout as L
from ...kernels.launch import apply
from ...tensors.tensor_type import require_tensor
from .. import attention_kernels as AK
from .arguments import _floating

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


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
    """Whether ``jax.nn.dot_product_attention`` takes these operands as they are: 16-bit
    inputs only (its XLA form multiplies float32 at the backend's default precision,
    TF32 on a GPU, and its softmax runs in float32: 32- and 64-bit inputs take the plain
    form, whose products run at full precision as arraykit's matmul does)."""
    rank = q.ndim
    if q.dtype.np.itemsize > 2:
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
    ``jax.nn.dot_product_attention`` for 16-bit inputs without dropout (on a GPU, cuDNN's
    fused kernel without a mask and with ``L == S``, when cuDNN takes the shapes; JAX's
    XLA form for the rest), and to plain XLA at full precision for float32 and float64,
    dropout, ``Ev != E`` and batch dimensions that broadcast.
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


# ---------------------------------------------------------------------- multi-head attention


def _additive_mask(mask, name, dtype):
    """A boolean mask (True: masked out) as ``-inf``/0 of ``dtype``; a floating mask as it is."""
    if mask is None:
        return None
    require_tensor(mask, "multi_head_attention_forward")
    if mask.dtype.kind == "bool":
        from ...api.creation import zeros

        return zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, float("-inf"))
    if mask.dtype.kind != "float":
        raise TypeError(f"only bool and floating types of {name} are supported, got {mask.dtype}")
    return mask


def _append_zero_column(mask):
    """``mask`` with one more column of zeros (PyTorch's ``pad(mask, (0, 1))``)."""
    if mask is None:
        return None
    from ...api.creation import zeros
    from ...api.manipulation import concat

    column = zeros(mask.shape[:-1] + (1,), dtype=mask.dtype, device=mask.device)
    return concat([mask, column], axis=-1)


def _mha_batched(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Whether the inputs are batched (3-D); PyTorch's shape checks."""
    q, k, v = query.ndim, key.ndim, value.ndim
    if q not in (2, 3):
        raise ValueError(f"query should be unbatched 2D or batched 3D tensor but received {q}-D query tensor")
    batched = q == 3
    kind = "batched (3-D)" if batched else "unbatched (2-D)"
    if k != q or v != q:
        raise ValueError(f"For {kind} `query`, expected `key` and `value` to be {q}-D but found "
                         f"{k}-D and {v}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.ndim != q - 1:
        raise ValueError(f"For {kind} `query`, expected `key_padding_mask` to be `None` or "
                         f"{q - 1}-D but found {key_padding_mask.ndim}-D tensor instead")
    if attn_mask is not None:
        if attn_mask.ndim not in (2, 3):
            raise ValueError(f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                             f"but found {attn_mask.ndim}-D tensor instead")
        expected = (num_heads, query.shape[0], key.shape[0])
        if not batched and attn_mask.ndim == 3 and attn_mask.shape != expected:
            raise ValueError(f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}")
    return batched


def _in_projection(query, key, value, weights, biases):
    """``query``, ``key`` and ``value`` through their own projections ``(weight, bias)``."""
    from .dense import linear

    return tuple(linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))


def _checked_attn_mask(attn_mask, batch_heads, tgt_len, src_len):
    """``attn_mask`` as ``(1 or N * heads, L, S)``; PyTorch's errors for other shapes."""
    if attn_mask.ndim == 2:
        if attn_mask.shape != (tgt_len, src_len):
            raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                               f"{(tgt_len, src_len)}.")
        return attn_mask.unsqueeze(0)
    if attn_mask.shape != (batch_heads, tgt_len, src_len):
        raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                           f"{(batch_heads, tgt_len, src_len)}.")
    return attn_mask


def _heads(t, batch_heads, head_dim, static, name):
    """``(S, N, E)`` -> ``(N * heads, S, head_dim)``, or the given ``static`` one, checked."""
    if static is None:
        return t.reshape(t.shape[0], batch_heads, head_dim).transpose(0, 1)
    if static.shape[0] != batch_heads or static.shape[2] != head_dim:
        raise ValueError(f"expecting {name} of shape ({batch_heads}, S, {head_dim}), got {static.shape}")
    return static


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p,
                                 out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """Multi-head attention as ``torch.nn.functional.multi_head_attention_forward``.

    query ``(L, N, E)``, key ``(S, N, kdim)``, value ``(S, N, vdim)`` (or unbatched
    without ``N``). The input projections are the rows of ``in_proj_weight``
    ``(3E, E)`` (or ``q/k/v_proj_weight`` with ``use_separate_proj_weight``) and the
    chunks of ``in_proj_bias``; ``bias_k``/``bias_v`` ``(1, 1, E)`` append one key
    and value, ``add_zero_attn`` one of zeros. ``key_padding_mask`` ``(N, S)`` and
    ``attn_mask`` ``(L, S)`` or ``(N * heads, L, S)`` are boolean (True: masked out)
    or floating (added to the scores); ``is_causal`` is a hint that ``attn_mask`` is
    the causal mask (it must be given). Returns ``(output (L, N, E), weights)``, the
    weights ``(N, L, S)`` averaged over the heads (``(N, heads, L, S)`` without
    ``average_attn_weights``) when ``need_weights``, else None; without weights it
    runs on :func:`scaled_dot_product_attention`. Dropout acts on the attention
    weights while ``training``.
    """
    from ...api.creation import zeros
    from ...api.manipulation import concat
    from ...api.matrix_products import matmul
    from .activation import softmax
    from .dense import linear
    from .dropouts import dropout

    for t in (query, key, value):
        require_tensor(t, "multi_head_attention_forward")
    batched = _mha_batched(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    key_padding_mask = _additive_mask(key_padding_mask, "key_padding_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
            "method `generate_square_subsequent_mask` to create this mask."
        )
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the causal mask itself, left to scaled_dot_product_attention
    else:
        attn_mask = _additive_mask(attn_mask, "attn_mask", query.dtype)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise ValueError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise ValueError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    biases = (None,) * 3 if in_proj_bias is None else in_proj_bias.chunk(3)
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise ValueError(f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                             f"{value.shape[:2]}")
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise ValueError("use_separate_proj_weight is True but q_proj_weight, k_proj_weight or "
                             "v_proj_weight is None")
        q, k, v = _in_projection(query, key, value, (q_proj_weight, k_proj_weight, v_proj_weight),
                                 biases)
    else:
        if key.shape != value.shape:
            raise ValueError(f"key shape {key.shape} does not match value shape {value.shape}")
        if in_proj_weight is None:
            raise ValueError("use_separate_proj_weight is False but in_proj_weight is None")
        if query is key is value:  # self-attention: one matmul
            q, k, v = linear(query, in_proj_weight, in_proj_bias).chunk(3, dim=-1)
        else:
            q, k, v = _in_projection(query, key, value, in_proj_weight.chunk(3), biases)
    batch_heads = bsz * num_heads
    if attn_mask is not None:
        attn_mask = _checked_attn_mask(attn_mask, batch_heads, tgt_len, key.shape[0])
    if (bias_k is None) != (bias_v is None):
        raise ValueError("bias_k and bias_v must be given together")
    if bias_k is not None:
        if static_k is not None or static_v is not None:
            raise ValueError("bias cannot be added to static key or value.")
        k = concat([k, bias_k.repeat(1, bsz, 1)])
        v = concat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask = _append_zero_column(attn_mask)
        key_padding_mask = _append_zero_column(key_padding_mask)
    q = q.reshape(tgt_len, batch_heads, head_dim).transpose(0, 1)
    k = _heads(k, batch_heads, head_dim, static_k, "static_k")
    v = _heads(v, batch_heads, head_dim, static_v, "static_v")
    if add_zero_attn:
        k = concat([k, zeros((batch_heads, 1, head_dim), dtype=k.dtype, device=k.device)], axis=1)
        v = concat([v, zeros((batch_heads, 1, head_dim), dtype=v.dtype, device=v.device)], axis=1)
        attn_mask = _append_zero_column(attn_mask)
        key_padding_mask = _append_zero_column(key_padding_mask)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        if key_padding_mask.shape != (bsz, src_len):
            raise ValueError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                             f"{key_padding_mask.shape}")
        padding = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len)
        padding = padding.reshape(batch_heads, 1, src_len)
        attn_mask = padding if attn_mask is None else attn_mask + padding
    if not training:
        dropout_p = 0.0
    if need_weights:
        scores = matmul(q * math.sqrt(1.0 / head_dim), k.mT)
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = softmax(scores, dim=-1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = matmul(weights, v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not batched:
            weights = weights.squeeze(0)
    else:
        if attn_mask is not None:
            attn_mask = (attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1
                         else attn_mask.reshape(bsz, num_heads, -1, src_len))
        out = scaled_dot_product_attention(q.reshape(bsz, num_heads, tgt_len, head_dim),
                                           k.reshape(bsz, num_heads, src_len, head_dim),
                                           v.reshape(bsz, num_heads, src_len, head_dim),
                                           attn_mask, dropout_p, bool(is_causal))
        out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
        weights = None
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    return (out if batched else out.squeeze(1)), weights
