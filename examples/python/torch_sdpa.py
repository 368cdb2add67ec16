# SPDX-License-Identifier: BSD-3-Clause
"""PyTorch's torch.nn.functional.scaled_dot_product_attention as attnfuzz kernels, one function per
backend, in attnfuzz's (FlashAttention's) conventions. scripts/real_kernels.sh runs them:

    fuzz_attention --kernel-py examples/python/torch_sdpa.py:sdpa_math --py-framework torch \\
        --python build-tools/real-kernels/bin/python --configs corpus/matrix/pr.json

sdpa_math and sdpa_flash run on the CPU (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION); sdpa
leaves the choice to PyTorch; the *_cuda functions are the CUDA backends (math, flash, efficient,
cuDNN, PyTorch's choice), handed CUDA tensors on the harness's stream. Where SDPA's convention
differs from attnfuzz's, the adapter bridges it:
- SDPA takes [batch, heads, seq, head_dim]: q, k, v are passed as transposed views of attnfuzz's
  [batch, seq, heads, head_dim] (no copy; their strides stay the harness's).
- `is_causal` is aligned top-left (query i sees keys j <= i); attnfuzz's causal mask is aligned
  bottom-right (j <= i + Sk - Sq). With Sq == Sk and no window they agree and `is_causal` is
  passed; otherwise a boolean `attn_mask` built about the bottom-right diagonal, with the window.
- A row that sees no key comes out NaN from SDPA; attnfuzz's convention is 0, written here.
- GQA: `enable_gqa=True` when there are fewer key/value heads than query heads.
- The backward pass is SDPA's own, through autograd: the bridge runs the function on q, k, v that
  require grad and asks autograd for their gradients under dO (on a CUDA device, not yet run).
- ALiBi would be a float `attn_mask` in the input dtype: its rounding to fp16/bf16 is error that
  an fp32 bias has not, so it is not declared; nor are soft-capping, packed batches, paged K/V and
  the log-sum-exp, which SDPA has no arguments for.
"""
import contextlib

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from attention_conventions import visible_keys


def _attention(backends, q, k, v, out, softmax_scale, causal, window_size):
    seq_len_q, seq_len_k = q.shape[1], k.shape[1]
    windowed = window_size != (-1, -1)
    mask = None
    is_causal = causal and seq_len_q == seq_len_k and not windowed
    if (causal or windowed) and not is_causal:
        visible = visible_keys(seq_len_q, seq_len_k, causal, window_size)
        mask = torch.from_numpy(visible).to(q.device)
    with sdpa_kernel(backends) if backends else contextlib.nullcontext():
        result = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=mask,
            is_causal=is_causal, scale=softmax_scale, enable_gqa=k.shape[2] != q.shape[2])
    result = result.transpose(1, 2)
    if mask is not None:
        result = torch.where(mask.any(dim=1)[None, :, None, None], result, 0)
    out.copy_(result)


def _needs_no_mask(problem):
    """CUDA's flash backend takes no `attn_mask`: the cases that need one are not its."""
    aligned = problem["seq_len_q"] == problem["seq_len_k"]
    if problem["window_size"] != (-1, -1) or (problem["causal"] and not aligned):
        return "SDPA's CUDA flash backend takes no attn_mask (windows, causal with Sq != Sk)"
    return None


def _no_grouped_heads(problem):
    """PyTorch 2.9's CUDA efficient and cuDNN backends take no `enable_gqa` (flash and math do)."""
    if problem["kv_heads"] != problem["heads"]:
        return "SDPA's CUDA efficient and cuDNN backends take no grouped-query attention"
    return None


def _unaligned_rows_or_past_grid(problem, backend):
    """Two faults of SDPA's CUDA backends that PyTorch's checks let through
    (docs/validation/real-kernels.md, with standalone reproductions): Q, K or V rows that are not
    16-byte aligned (strides not multiples of 8 elements: the flash backend faults, cuDNN returns
    wrong values silently, NaN where the rows' padding holds NaN) and a batch or head count past
    the 65535 blocks of a grid dimension (flash and cuDNN fail to launch). Declined so that a run
    goes on to judge the rest."""
    # O is not handed to SDPA (the adapter copies its result into it): Q, K and V only.
    strides = [s for name in ("q", "k", "v") for s in problem[name + "_strides"]]
    if any(s % 8 for s in strides):
        return (f"SDPA's {backend} is wrong on rows not 16-byte aligned (strides not multiples "
                "of 8 elements): PyTorch's bug, docs/validation/real-kernels.md")
    if problem["batch"] > 65535 or problem["heads"] > 65535:
        return (f"SDPA's {backend} fails past 65535 sequences or heads: PyTorch's bug, "
                "docs/validation/real-kernels.md")
    return None


def _flash_cuda_supports(problem):
    """The flash backend's mask limits and its faults (above)."""
    return _needs_no_mask(problem) or _unaligned_rows_or_past_grid(problem, "CUDA flash backend")


def _cudnn_supports(problem):
    """cuDNN's limits as PyTorch states them (no grouped heads, no key length of 1) and its faults
    (above)."""
    reason = _no_grouped_heads(problem)
    if reason:
        return reason
    if problem["seq_len_k"] == 1:
        return "SDPA's cuDNN backend takes no key/value sequence of length 1"
    return _unaligned_rows_or_past_grid(problem, "cuDNN backend")


def _default_choice_cuda_supports(problem):
    """PyTorch's own choice takes cuDNN or flash where it can, with their faults (above). Where it
    would take the efficient or math backend instead, the decline costs those cases (PyTorch does
    not say beforehand which backend it takes)."""
    return _unaligned_rows_or_past_grid(problem, "choice of backend (cuDNN or flash)")


def _cpu_flash_backward_supports(problem):
    """SDPA's CPU flash backward (and PyTorch's choice, which takes it on the CPU) loses precision
    in dK and dV over a GQA group, growing with the group (docs/validation/real-kernels.md, with a
    standalone reproduction): declined so that a run judges the rest."""
    if problem["kv_heads"] != problem["heads"]:
        return ("SDPA's CPU flash backward loses precision in dK and dV over a GQA group: "
                "PyTorch's bug, docs/validation/real-kernels.md")
    return None


def _backend_function(backends, name, device="cpu", supports=None, supports_backward=None):
    def attention(q, k, v, out, *, softmax_scale, causal, window_size, softcap, alibi_slopes,
                  cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, block_table, lse):
        _attention(backends, q, k, v, out, softmax_scale, causal, window_size)

    attention.__name__ = name
    # The backward: PyTorch's own autograd through SDPA (the bridge's `out.backward(dout)`).
    attention.attnfuzz_features = {"sliding_window", "backward"}
    attention.attnfuzz_device = device
    if supports is not None:
        attention.attnfuzz_supports = supports
    if supports_backward is not None:
        attention.attnfuzz_supports_backward = supports_backward
    return attention


sdpa_math = _backend_function([SDPBackend.MATH], "sdpa_math")
sdpa_flash = _backend_function([SDPBackend.FLASH_ATTENTION], "sdpa_flash",
                               supports_backward=_cpu_flash_backward_supports)
# PyTorch chooses:
sdpa = _backend_function(None, "sdpa", supports_backward=_cpu_flash_backward_supports)

# The CUDA backends: CUDA tensors over the harness's device buffers, on its stream
# (scripts/real_kernels.sh --gpu runs them; their verdicts are in docs/validation/real-kernels.md).
sdpa_math_cuda = _backend_function([SDPBackend.MATH], "sdpa_math_cuda", "cuda")
sdpa_flash_cuda = _backend_function([SDPBackend.FLASH_ATTENTION], "sdpa_flash_cuda", "cuda",
                                    _flash_cuda_supports)
sdpa_efficient_cuda = _backend_function([SDPBackend.EFFICIENT_ATTENTION], "sdpa_efficient_cuda",
                                        "cuda", _no_grouped_heads)
sdpa_cudnn_cuda = _backend_function([SDPBackend.CUDNN_ATTENTION], "sdpa_cudnn_cuda", "cuda",
                                    _cudnn_supports)
sdpa_cuda = _backend_function(None, "sdpa_cuda", "cuda", _default_choice_cuda_supports)
