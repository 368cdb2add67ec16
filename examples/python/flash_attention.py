# SPDX-License-Identifier: BSD-3-Clause
"""FlashAttention 2 (the `flash_attn` package) as attnfuzz kernels: attnfuzz's call is
FlashAttention's Python API, so each adapter is a call. Device functions (CUDA tensors over the
harness's buffers, on its stream); not yet run on a GPU (scripts/real_kernels.sh --gpu runs them).

    fuzz_attention --kernel-py examples/python/flash_attention.py:flash_attn_func \\
        --py-framework torch --python VENV/bin/python --configs variants.json

Needs flash_attn 2.6 or later (softcap, the packed log-sum-exp [heads, total_q]). Where the
conventions differ:
- flash_attn returns the output (and, asked for, the log-sum-exp) instead of writing them: copied
  into `out` and `lse` here.
- Paged K/V goes through flash_attn_with_kvcache, which takes the keys each sequence has as
  `cache_seqlens`, not `cu_seqlens_k`: their differences.
- A row that sees no key is 0 in flash_attn's output and +inf in its log-sum-exp, which attnfuzz
  accepts (include/attnfuzz/attnfuzz_plugin.h: -inf or +inf).
"""
import flash_attn
import torch


def flash_attn_func(q, k, v, out, *, softmax_scale, causal, window_size, softcap, alibi_slopes,
                    cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, block_table, lse):
    common = dict(softmax_scale=softmax_scale, causal=causal, window_size=window_size,
                  softcap=softcap, alibi_slopes=alibi_slopes, return_attn_probs=lse is not None)
    if block_table is not None:
        cache_seqlens = (cu_seqlens_k[1:] - cu_seqlens_k[:-1] if cu_seqlens_k is not None
                         else torch.full((q.shape[0],), max_seqlen_k, dtype=torch.int32,
                                         device=q.device))
        result = flash_attn.flash_attn_with_kvcache(
            q, k, v, cache_seqlens=cache_seqlens, block_table=block_table,
            softmax_scale=softmax_scale, causal=causal, window_size=window_size, softcap=softcap,
            alibi_slopes=alibi_slopes, return_softmax_lse=lse is not None)
    elif cu_seqlens_q is not None:
        result = flash_attn.flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k,
                                                   max_seqlen_q, max_seqlen_k, **common)
    else:
        result = flash_attn.flash_attn_func(q, k, v, **common)
    if lse is None:
        out.copy_(result)
    else:
        out.copy_(result[0])
        lse.copy_(result[1])


flash_attn_func.attnfuzz_features = {"varlen", "paged_kv", "sliding_window", "softcap", "alibi",
                                     "return_lse"}
flash_attn_func.attnfuzz_device = "cuda"


def _supports(problem):
    """What this adapter's calls take (flash_attn 2.6 or later: softcap, packed log-sum-exp)."""
    if problem["page_size"]:
        if problem["page_size"] % 256:
            return "flash_attn's paged K/V takes pages of a multiple of 256 rows"
        if problem["varlen_q"]:
            return ("this adapter sends paged K/V through flash_attn_with_kvcache, which takes "
                    "whole query batches")
    elif problem["varlen_q"] != problem["varlen_k"]:
        return "flash_attn_varlen_func packs queries and keys both, or neither"
    return None


flash_attn_func.attnfuzz_supports = _supports
