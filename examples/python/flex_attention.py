# SPDX-License-Identifier: BSD-3-Clause
"""PyTorch's torch.nn.attention.flex_attention, compiled (torch.compile, inductor's C++ backend on
the CPU), as an attnfuzz kernel in attnfuzz's (FlashAttention's) conventions.
scripts/real_kernels.sh runs it:

    fuzz_attention --kernel-py examples/python/flex_attention.py:flex_attention_cpu \\
        --py-framework torch --python build-tools/real-kernels/bin/python --configs pr.json

flex_attention has no causal, window, soft-capping or ALiBi arguments: each is a mod, written here
in attnfuzz's terms.
- Causal and the window are a `mask_mod` about the bottom-right diagonal i + Sk - Sq (flex has no
  alignment of its own), turned into a block mask.
- Soft-capping and ALiBi are a `score_mod`; flex applies `scale` before it, as attnfuzz does:
  softcap * tanh(s / softcap), then - slope_h * |i + Sk - Sq - j|.
- The values the mods read (the diagonal's offset, the window, the cap, the slopes) are tensors,
  not Python numbers: torch.compile guards on a closure's numbers and would compile again for each
  new value, and after `torch._dynamo.config.recompile_limit` compilations fall back to eager
  code, which is not the kernel under test. Shapes are dynamic for the same reason, but flex
  still compiles anew for each batch, head count, head dimension and dtype (a few seconds each on
  the CPU, once per worker; inductor keeps them on disk for later runs): the limit is lifted;
  reaching it would be an error (the case fails saying so), and so would a graph break
  (fullgraph), never a silent fall back to eager code.
- q, k and v are passed as [batch, heads, seq, head_dim] transposed views (no copy).
- A row that sees no key comes out 0 from flex, as attnfuzz expects.
- The log-sum-exp (`return_lse`) is not supported by torch.compile on the CPU in PyTorch 2.9 (it is
  on the GPU: flex_attention_cuda declares it), nor are packed (varlen) batches or paged K/V
  flex's: not declared, so those cases are skipped.
"""
import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

torch._dynamo.config.recompile_limit = 1 << 20
torch._dynamo.config.accumulated_recompile_limit = 1 << 20
torch._dynamo.config.fail_on_recompile_limit_hit = True
_compiled = torch.compile(flex_attention, dynamic=True, fullgraph=True)


def _flex_attention(q, k, v, out, lse, softmax_scale, causal, window_size, softcap,
                    alibi_slopes):
    seq_len_q, seq_len_k = q.shape[1], k.shape[1]
    offset = torch.tensor(seq_len_k - seq_len_q, device=q.device)
    left, right = (torch.tensor(extent, device=q.device) for extent in window_size)
    has_left, has_right = window_size[0] >= 0, window_size[1] >= 0

    block_mask = None
    if causal or has_left or has_right:
        def visible(b, h, query, key):
            diagonal = query + offset
            seen = key >= 0
            if causal:
                seen = seen & (key <= diagonal)
            if has_right:
                seen = seen & (key <= diagonal + right)
            if has_left:
                seen = seen & (key >= diagonal - left)
            return seen

        block_mask = create_block_mask(visible, None, None, seq_len_q, seq_len_k, device=q.device)

    score_mod = None
    if softcap > 0 or alibi_slopes is not None:
        cap = torch.tensor(softcap, dtype=torch.float32, device=q.device)

        def modified(score, b, h, query, key):
            if softcap > 0:
                score = cap * torch.tanh(score / cap)
            if alibi_slopes is not None:
                score = score - alibi_slopes[h] * torch.abs(query + offset - key)
            return score

        score_mod = modified

    result = _compiled(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                       score_mod=score_mod, block_mask=block_mask, scale=softmax_scale,
                       enable_gqa=k.shape[2] != q.shape[2], return_lse=lse is not None)
    if lse is not None:
        result, log_sum_exp = result
        lse.copy_(log_sum_exp)  # [batch, heads, seq_len_q], natural log, as attnfuzz's
    out.copy_(result.transpose(1, 2))


def flex_attention_cpu(q, k, v, out, *, softmax_scale, causal, window_size, softcap, alibi_slopes,
                       cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, block_table, lse):
    _flex_attention(q, k, v, out, lse, softmax_scale, causal, window_size, softcap, alibi_slopes)


# No backward: PyTorch 2.9.1's compiled flex_attention backward does not compile on the CPU
# (docs/validation/real-kernels.md, docs/validation/repro/sdpa_cpu_backward.py).
flex_attention_cpu.attnfuzz_features = {"sliding_window", "softcap", "alibi"}
flex_attention_cpu.attnfuzz_device = "cpu"


def flex_attention_cuda(q, k, v, out, *, softmax_scale, causal, window_size, softcap, alibi_slopes,
                        cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, block_table, lse):
    """The same on the GPU (Triton kernels), where flex returns the log-sum-exp too: CUDA tensors
    over the harness's device buffers, on its stream. Not yet run on a GPU (scripts/real_kernels.sh
    --gpu runs it)."""
    _flex_attention(q, k, v, out, lse, softmax_scale, causal, window_size, softcap, alibi_slopes)


flex_attention_cuda.attnfuzz_features = {"sliding_window", "softcap", "alibi", "return_lse"}
flex_attention_cuda.attnfuzz_device = "cuda"
