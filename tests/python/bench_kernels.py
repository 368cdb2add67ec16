# SPDX-License-Identifier: BSD-3-Clause
"""Functions for bench/bench_python_bridge.cpp: what the bridge costs a call, apart from the
function's own work."""


def does_nothing(q, k, v, out, **keywords):
    """Takes the tensors and returns: the call's whole cost is the bridge's."""


does_nothing.attnfuzz_features = {"varlen", "paged_kv", "sliding_window", "softcap", "alibi",
                                  "return_lse"}
