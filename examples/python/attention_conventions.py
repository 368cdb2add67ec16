# SPDX-License-Identifier: BSD-3-Clause
"""What the adapters of this folder share: attnfuzz's (FlashAttention's) masks, written out for
libraries whose own causal and window arguments are aligned top-left."""
import numpy as np


def visible_keys(seq_len_q, seq_len_k, causal, window_size):
    """[Sq, Sk] booleans: which keys each query sees, about the bottom-right diagonal i + Sk - Sq
    (causal: j <= diagonal; window (left, right), -1 unbounded: diagonal - left <= j <=
    diagonal + right)."""
    row = np.arange(seq_len_q)[:, None]
    key = np.arange(seq_len_k)[None, :]
    diagonal = row + seq_len_k - seq_len_q
    visible = np.ones((seq_len_q, seq_len_k), dtype=bool)
    left, right = window_size
    if causal:
        visible &= key <= diagonal
    if right >= 0:
        visible &= key <= diagonal + right
    if left >= 0:
        visible &= key >= diagonal - left
    return visible
