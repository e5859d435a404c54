"""``MultiheadAttention`` on :func:`arraykit.nn.functional.multi_head_attention_forward`."""


from __future__ import annotations

from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from .allocation import _empty
from .linear import Linear

__all__ = ["MultiheadAttention"]


class NonDynamicallyQuantizableLinear(Linear):
    """The :class:`Linear` PyTorch uses as ``MultiheadAttention.out_proj`` (same
    parameters and ``state_dict`` keys)."""


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads, as ``torch.nn.MultiheadAttention``.

    Parameters as PyTorch's: ``in_proj_weight`` (3E, E) and ``in_proj_bias`` (3E,),
    or ``q_proj_weight``, ``k_proj_weight`` (E, kdim), ``v_proj_weight`` (E, vdim)
    when ``kdim``/``vdim`` differ from ``embed_dim``; ``out_proj`` (a Linear);
    ``bias_k``/``bias_v`` (1, 1, E) with ``add_bias_kv``. Xavier-uniform projections,
    zero biases. Inputs are (L, N, E), or (N, L, E) with ``batch_first``, or unbatched (L, E).
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                f"num_heads={num_heads} instead"
            )
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise ValueError(f"embed_dim must be divisible by num_heads, got embed_dim={embed_dim} "
                             f"and num_heads={num_heads}")
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(_empty((3 * embed_dim, embed_dim), device, dtype))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.register_parameter("in_proj_weight", None)
            self.q_proj_weight = Parameter(_empty((embed_dim, embed_dim), device, dtype))
            self.k_proj_weight = Parameter(_empty((embed_dim, self.kdim), device, dtype))
            self.v_proj_weight = Parameter(_empty((embed_dim, self.vdim), device, dtype))
        self.register_parameter(
            "in_proj_bias", Parameter(_empty((3 * embed_dim,), device, dtype)) if bias else None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, device=device,
                                                        dtype=dtype)
        if add_bias_kv:
            self.bias_k = Parameter(_empty((1, 1, embed_dim), device, dtype))
            self.bias_v = Parameter(_empty((1, 1, embed_dim), device, dtype))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for weight in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        """``(output, weights)``: weights (N, L, S) averaged over the heads, (N, heads, L, S)
        without ``average_attn_weights``, None without ``need_weights``. Boolean masks
        mark positions masked out; floating masks are added to the scores."""
        batched = query.ndim == 3
        if self.batch_first and batched:  # keep self-attention recognisable (query is key)
            swapped = {}
            query, key, value = (swapped.setdefault(id(t), t.transpose(0, 1)) for t in (query, key, value))
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim, q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and batched:
            out = out.transpose(0, 1)
        return out, weights
