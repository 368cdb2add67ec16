# SPDX-License-Identifier: BSD-3-Clause
"""JAX's jax.nn.dot_product_attention (XLA on the CPU) as an attnfuzz kernel, in attnfuzz's
(FlashAttention's) conventions. scripts/real_kernels.sh runs it:

    fuzz_attention --kernel-py examples/python/jax_attention.py:dot_product_attention \\
        --py-framework jax --python build-tools/real-kernels/bin/python --configs pr.json

Where JAX's convention differs from attnfuzz's, the adapter bridges it:
- `is_causal` is aligned top-left (query i sees keys j <= i); attnfuzz's causal mask is aligned
  bottom-right (j <= i + Sk - Sq). So is `local_window_size`. Both go into one boolean `mask`
  built about the bottom-right diagonal instead.
- ALiBi is not an argument: it is the `bias` -slope_h * |i + Sk - Sq - j|, in fp32.
- A row that sees no key (causal with Sq > Sk, or a window left of every key) gets no defined
  output from JAX; attnfuzz's convention is 0, written here.
- Soft-capping, packed (varlen) batches, paged K/V and the log-sum-exp are not in JAX's API: not
  declared, so those cases are skipped naming the feature.
With --py-framework jax the bridge hands the inputs as JAX arrays (copies: a JAX array has no
strides of its own) and `out` as its shape and dtype; the function returns the output, which the
bridge checks and copies into the harness's buffer.
"""
import jax
import jax.numpy as jnp
import numpy as np
from attention_conventions import visible_keys

# The CPU, also where jax[cuda] is installed: set before the first computation (the bridge has
# imported jax already, so the JAX_PLATFORMS variable would come too late).
jax.config.update("jax_platforms", "cpu")


def dot_product_attention(q, k, v, out, *, softmax_scale, causal, window_size, softcap,
                          alibi_slopes, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                          block_table, lse):
    seq_len_q, seq_len_k = q.shape[1], k.shape[1]
    visible = visible_keys(seq_len_q, seq_len_k, causal, window_size)
    bias = None
    if alibi_slopes is not None:
        distance = np.abs(np.arange(seq_len_q)[:, None] + seq_len_k - seq_len_q -
                          np.arange(seq_len_k)[None, :]).astype(np.float32)
        bias = -alibi_slopes.astype(jnp.float32)[None, :, None, None] * distance[None, None]
    result = jax.nn.dot_product_attention(q, k, v, bias=bias,
                                          mask=jnp.asarray(visible[None, None, :, :]),
                                          scale=softmax_scale)
    sees_a_key = jnp.asarray(visible.any(axis=1))[None, :, None, None]
    return jnp.where(sees_a_key, result, 0).astype(out.dtype)


# The backward: jax.vjp through the function (the bridge's, as autograd for torch).
dot_product_attention.attnfuzz_features = {"sliding_window", "alibi", "backward"}
dot_product_attention.attnfuzz_device = "cpu"
dot_product_attention.attnfuzz_framework = "jax"  # for attnfuzz.check
