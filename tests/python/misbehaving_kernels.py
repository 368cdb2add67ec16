# SPDX-License-Identifier: BSD-3-Clause
"""Python functions that misuse the bridge's conventions, each as a user's kernel might: the
harness must say what went wrong, case by case, and keep running."""
import numpy as np

from reference_attention import attention as reference

EVERY_FEATURE = reference.attnfuzz_features


def raises(q, k, v, out, **keywords):
    raise ValueError("the kernel gave up")  # this line is named in the failing case's reason


def returns_the_output(q, k, v, out, **keywords):
    """Correct, but returns a new array instead of writing `out`: accepted and copied."""
    result = np.zeros(out.shape, dtype=out.dtype)
    reference(q, k, v, result, **keywords)
    return result


returns_the_output.attnfuzz_features = EVERY_FEATURE


def returns_a_wrong_shape(q, k, v, out, **keywords):
    return np.zeros((1,), dtype=out.dtype)


def returns_float32(q, k, v, out, **keywords):
    return np.zeros(out.shape, dtype=np.float32)


def only_fp16(q, k, v, out, **keywords):
    reference(q, k, v, out, **keywords)


only_fp16.attnfuzz_supports = lambda problem: (
    None if problem["dtype"] == "float16" else "only fp16, not " + problem["dtype"])


def only_aligned_rows(q, k, v, out, **keywords):
    reference(q, k, v, out, **keywords)


def _unaligned_strides(problem):
    for name in ("q", "k", "v", "o"):
        strides = problem[name + "_strides"]
        if any(stride % 8 for stride in strides):
            return "rows not 16-byte aligned: %s_strides %s" % (name, tuple(strides))
    return None


only_aligned_rows.attnfuzz_supports = _unaligned_strides


def declares_an_unknown_feature(q, k, v, out, **keywords):
    reference(q, k, v, out, **keywords)


declares_an_unknown_feature.attnfuzz_features = {"varlen", "rotary"}


def runs_on_the_gpu(q, k, v, out, **keywords):
    """A device function handed to numpy, whose arrays cannot hold device memory: refused."""


runs_on_the_gpu.attnfuzz_device = "cuda"
