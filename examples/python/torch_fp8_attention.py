# SPDX-License-Identifier: BSD-3-Clause
"""A reference fp8 path written in PyTorch, as an attnfuzz kernel: the inputs dequantized as a
framework dequantizes them (each fp8 element to float32, times its (batch, KV head) descale
factor, FlashAttention 3's q_descale, k_descale, v_descale), then SDPA's math backend in float32.
scripts/real_kernels.sh runs it on corpus/matrix/fp8.json:

    fuzz_attention --kernel-py examples/python/torch_fp8_attention.py:fp8_sdpa_math \\
        --py-framework torch --python build-tools/real-kernels/bin/python \\
        --configs corpus/matrix/fp8.json

It declares fp8 inputs and sliding windows (torch_sdpa.py's mask); the other variants are not its.
"""
import torch
from torch.nn.attention import SDPBackend

from torch_sdpa import _attention


def _dequantized(x, descale):
    """x ([batch, seq, heads, head_dim], fp8 or 16-bit) in float32, each head times the factor of
    its sequence and KV head (descale: [batch, kv_heads], or None)."""
    values = x.to(torch.float32)
    if descale is None:
        return values
    factors = descale.repeat_interleave(x.shape[2] // descale.shape[1], dim=1)  # [batch, heads]
    return values * factors[:, None, :, None]


def fp8_sdpa_math(q, k, v, out, *, softmax_scale, causal, window_size, softcap, alibi_slopes,
                  cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, block_table, lse,
                  q_descale=None, k_descale=None, v_descale=None):
    _attention([SDPBackend.MATH], _dequantized(q, q_descale), _dequantized(k, k_descale),
               _dequantized(v, v_descale), out, softmax_scale, causal, window_size)


fp8_sdpa_math.attnfuzz_features = {"sliding_window", "fp8_inputs"}
