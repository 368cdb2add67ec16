# SPDX-License-Identifier: BSD-3-Clause
"""A small numpy attention for the Python bridge's tests (fuzz_attention --kernel-py): float64
arithmetic, every variant of the C ABI's version 2, and planted bugs switched by the environment
variable ATTNFUZZ_TEST_PLANT, each the Python twin of a plant of kernels/planted_bug.h. With no
plant it must pass every case the harness throws at it; with one, fail."""
import math
import os

import numpy as np

PLANT = os.environ.get("ATTNFUZZ_TEST_PLANT", "none")
PLANTS = (
    "none", "causal_off_by_one", "gqa_modulo", "scale_ignored", "masked_row_nan",
    "window_edge_off_by_one", "softcap_before_scale", "alibi_top_left", "lse_log2",
    "varlen_offset_wrong_end", "block_table_logical_page", "query_scaled_in_place",
)
if PLANT not in PLANTS:
    raise ValueError("ATTNFUZZ_TEST_PLANT=%s: one of %s" % (PLANT, ", ".join(PLANTS)))


def sequence_keys(k, v, b, keys, cu_seqlens_k, block_table):
    """Sequence b's K and V rows: paged through the block table, packed, or dense."""
    if block_table is not None:
        page_size = k.shape[1]
        rows = np.arange(keys)
        pages = np.asarray(block_table[b])[rows // page_size]
        if PLANT == "block_table_logical_page":
            pages = b * block_table.shape[1] + rows // page_size
        return k[pages, rows % page_size], v[pages, rows % page_size]
    if cu_seqlens_k is not None:
        first = int(cu_seqlens_k[b])
        return k[first:first + keys], v[first:first + keys]
    return k[b], v[b]


def attention(q, k, v, out, *, softmax_scale, causal, window_size, softcap, alibi_slopes,
              cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, block_table, lse):
    heads, kv_heads, head_dim = q.shape[-2], k.shape[-2], q.shape[-1]
    group = heads // kv_heads
    batch = len(cu_seqlens_q) - 1 if cu_seqlens_q is not None else q.shape[0]
    scale = 1.0 / math.sqrt(head_dim) if PLANT == "scale_ignored" else softmax_scale
    window_left, window_right = window_size
    for b in range(batch):
        if cu_seqlens_q is not None:
            start = int(cu_seqlens_q[b + 1 if PLANT == "varlen_offset_wrong_end" else b])
            rows = int(cu_seqlens_q[b + 1]) - int(cu_seqlens_q[b])
            q_b, out_b = q[start:start + rows], out[start:start + rows]
        else:
            q_b, out_b = q[b], out[b]
        queries = q_b.shape[0]
        keys = (int(cu_seqlens_k[b + 1]) - int(cu_seqlens_k[b]) if cu_seqlens_k is not None
                else max_seqlen_k)
        k_b, v_b = sequence_keys(k, v, b, keys, cu_seqlens_k, block_table)
        i = np.arange(queries)[:, None]
        j = np.arange(keys)[None, :]
        diagonal = i + keys - queries
        visible = np.ones((queries, keys), dtype=bool)
        if causal:
            visible &= j <= diagonal + (1 if PLANT == "causal_off_by_one" else 0)
        if window_left >= 0:
            visible &= j >= diagonal - window_left - (1 if PLANT == "window_edge_off_by_one" else 0)
        if window_right >= 0:
            visible &= j <= diagonal + window_right
        for h in range(heads):
            kv = h % kv_heads if PLANT == "gqa_modulo" else h // group
            raw = q_b[:, h].astype(np.float64) @ k_b[:, kv].astype(np.float64).T
            if softcap > 0 and PLANT == "softcap_before_scale":
                scores = softcap * np.tanh(raw / softcap) * scale
            else:
                scores = raw * scale
                if softcap > 0:
                    scores = softcap * np.tanh(scores / softcap)
            if alibi_slopes is not None:
                distance = np.abs(i - j) if PLANT == "alibi_top_left" else np.abs(diagonal - j)
                scores = scores - float(alibi_slopes[h]) * distance
            scores = np.where(visible, scores, -np.inf)
            sees_a_key = visible.any(axis=1) if keys > 0 else np.zeros(queries, dtype=bool)
            row_max = np.where(sees_a_key, scores.max(axis=1, initial=-np.inf), 0.0)
            weights = np.exp(scores - row_max[:, None])
            row_sum = weights.sum(axis=1)
            values = weights @ v_b[:, kv].astype(np.float64)
            with np.errstate(invalid="ignore", divide="ignore"):
                if PLANT == "masked_row_nan":
                    output = values / row_sum[:, None]
                else:
                    output = np.where(sees_a_key[:, None],
                                      values / np.where(sees_a_key, row_sum, 1.0)[:, None], 0.0)
                row_lse = np.where(sees_a_key, row_max + np.log(np.where(sees_a_key, row_sum, 1.0)),
                                   -np.inf)
            out_b[:, h, :] = output.astype(out.dtype)
            if lse is not None:
                stored = row_lse / math.log(2) if PLANT == "lse_log2" else row_lse
                if cu_seqlens_q is not None:
                    lse[h, start:start + queries] = stored
                else:
                    lse[b, h, :] = stored
    if PLANT == "query_scaled_in_place":
        q *= 2  # the caller's Q, written


attention.attnfuzz_features = {"varlen", "paged_kv", "sliding_window", "softcap", "alibi",
                               "return_lse"}
