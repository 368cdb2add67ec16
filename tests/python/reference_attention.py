# SPDX-License-Identifier: BSD-3-Clause
"""A small numpy attention for the Python bridge's tests (fuzz_attention --kernel-py): float64
arithmetic, every variant of the C ABI's version 2, a backward pass (version 3's, as the function's
attnfuzz_backward), and planted bugs switched by the environment variable ATTNFUZZ_TEST_PLANT, each
the Python twin of a plant of kernels/planted_bug.h (the backward's, of
ATTNFUZZ_BACKWARD_PLANTED_BUGS). With no plant it must pass every case the harness throws at it;
with one, fail."""
import math
import os

import numpy as np

PLANT = os.environ.get("ATTNFUZZ_TEST_PLANT", "none")
PLANTS = (
    "none", "causal_off_by_one", "gqa_modulo", "scale_ignored", "masked_row_nan",
    "window_edge_off_by_one", "softcap_before_scale", "alibi_top_left", "lse_log2",
    "varlen_offset_wrong_end", "block_table_logical_page", "query_scaled_in_place",
    "backward_rowsum_dropped", "backward_gqa_modulo", "backward_softcap_slope_forgotten",
    "backward_dk_unscaled",
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


def sequence_rows(b, cu_seqlens, dense_rows):
    """Sequence b's first row and row count in a packed tensor (None, rows: dense)."""
    if cu_seqlens is None:
        return None, dense_rows
    return int(cu_seqlens[b]), int(cu_seqlens[b + 1]) - int(cu_seqlens[b])


def visible_keys(queries, keys, causal, window_size):
    """[queries, keys]: which keys each query sees, about the bottom-right diagonal."""
    window_left, window_right = window_size
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
    return visible


def masked_scores(q_h, k_h, scale, softcap, slope, visible):
    """The scores after scale, soft cap and ALiBi, -inf where masked, and the soft cap's
    derivative (1 - tanh^2, or 1 without one)."""
    queries, keys = visible.shape
    raw = q_h.astype(np.float64) @ k_h.astype(np.float64).T
    slope_of_cap = np.ones_like(raw)
    if softcap > 0 and PLANT == "softcap_before_scale":
        scores = softcap * np.tanh(raw / softcap) * scale
    else:
        scores = raw * scale
        if softcap > 0:
            capped = np.tanh(scores / softcap)
            scores = softcap * capped
            slope_of_cap = 1.0 - capped * capped
    if slope is not None:
        i = np.arange(queries)[:, None]
        j = np.arange(keys)[None, :]
        distance = np.abs(i - j) if PLANT == "alibi_top_left" else np.abs(i + keys - queries - j)
        scores = scores - slope * distance
    return np.where(visible, scores, -np.inf), slope_of_cap


def attention(q, k, v, out, *, softmax_scale, causal, window_size, softcap, alibi_slopes,
              cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, block_table, lse,
              q_descale=None, k_descale=None, v_descale=None):
    """Every input read as float64 (fp8 ones through ml_dtypes), each fp8 tensor's elements times
    their (batch, KV head) descale factor."""
    heads, kv_heads, head_dim = q.shape[-2], k.shape[-2], q.shape[-1]
    group = heads // kv_heads
    batch = len(cu_seqlens_q) - 1 if cu_seqlens_q is not None else q.shape[0]
    scale = 1.0 / math.sqrt(head_dim) if PLANT == "scale_ignored" else softmax_scale
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
        visible = visible_keys(queries, keys, causal, window_size)
        for h in range(heads):
            kv = h % kv_heads if PLANT == "gqa_modulo" else h // group
            q_factor, k_factor, v_factor = (1.0 if factors is None else float(factors[b, kv])
                                            for factors in (q_descale, k_descale, v_descale))
            scores, _ = masked_scores(q_b[:, h].astype(np.float64) * q_factor,
                                      k_b[:, kv].astype(np.float64) * k_factor, scale, softcap,
                                      None if alibi_slopes is None else float(alibi_slopes[h]),
                                      visible)
            sees_a_key = visible.any(axis=1) if keys > 0 else np.zeros(queries, dtype=bool)
            row_max = np.where(sees_a_key, scores.max(axis=1, initial=-np.inf), 0.0)
            weights = np.exp(scores - row_max[:, None])
            row_sum = weights.sum(axis=1)
            values = weights @ (v_b[:, kv].astype(np.float64) * v_factor)
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


def attention_backward(dout, q, k, v, out, lse, dq, dk, dv, *, softmax_scale, causal,
                       window_size, softcap, alibi_slopes, cu_seqlens_q, cu_seqlens_k,
                       max_seqlen_q, max_seqlen_k, block_table, deterministic):
    """dQ, dK and dV in float64 from the handed O and log-sum-exp: P = exp(S - lse),
    dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(dO O)) times the soft cap's slope,
    dQ = scale dS K, dK = scale dS^T Q, dK and dV summed over each GQA group."""
    heads, kv_heads = q.shape[-2], k.shape[-2]
    group = heads // kv_heads
    batch = len(cu_seqlens_q) - 1 if cu_seqlens_q is not None else q.shape[0]
    for b in range(batch):
        start, queries = sequence_rows(b, cu_seqlens_q, q.shape[-3])
        rows_q = slice(start, start + queries) if start is not None else b
        q_b, o_b, do_b = q[rows_q], out[rows_q], dout[rows_q]
        lse_b = lse[:, start:start + queries] if start is not None else lse[b]
        first_key, keys = sequence_rows(b, cu_seqlens_k, max_seqlen_k)
        k_b, v_b = sequence_keys(k, v, b, keys, cu_seqlens_k, block_table)
        visible = visible_keys(queries, keys, causal, window_size)
        dq_b = np.zeros((queries, heads, q.shape[-1]))
        dk_b = np.zeros((keys, kv_heads, k.shape[-1]))
        dv_b = np.zeros_like(dk_b)
        for h in range(heads):
            kv = h % kv_heads if PLANT == "backward_gqa_modulo" else h // group
            scores, slope_of_cap = masked_scores(
                q_b[:, h], k_b[:, kv], softmax_scale, softcap,
                None if alibi_slopes is None else float(alibi_slopes[h]), visible)
            row_lse = lse_b[h].astype(np.float64)[:, None]
            with np.errstate(invalid="ignore"):
                p = np.where(np.isfinite(row_lse), np.exp(scores - row_lse), 0.0)
            do_h = do_b[:, h].astype(np.float64)
            d_p = do_h @ v_b[:, kv].astype(np.float64).T
            rowsum = (do_h * o_b[:, h].astype(np.float64)).sum(axis=1, keepdims=True)
            d_s = p * (d_p if PLANT == "backward_rowsum_dropped" else d_p - rowsum)
            if PLANT != "backward_softcap_slope_forgotten":
                d_s = d_s * slope_of_cap
            dq_b[:, h] = softmax_scale * (d_s @ k_b[:, kv].astype(np.float64))
            key_scale = 1.0 if PLANT == "backward_dk_unscaled" else softmax_scale
            dk_b[:, kv] += key_scale * (d_s.T @ q_b[:, h].astype(np.float64))
            dv_b[:, kv] += p.T @ do_h
        dq[rows_q] = dq_b.astype(dq.dtype)
        if block_table is not None:
            page_size = k.shape[1]
            rows = np.arange(keys)
            pages = np.asarray(block_table[b])[rows // page_size]
            dk[pages, rows % page_size] = dk_b.astype(dk.dtype)
            dv[pages, rows % page_size] = dv_b.astype(dv.dtype)
        else:
            rows_k = slice(first_key, first_key + keys) if first_key is not None else b
            dk[rows_k] = dk_b.astype(dk.dtype)
            dv[rows_k] = dv_b.astype(dv.dtype)


attention.attnfuzz_features = {"varlen", "paged_kv", "sliding_window", "softcap", "alibi",
                               "return_lse", "backward", "fp8_inputs"}
attention.attnfuzz_backward = attention_backward
