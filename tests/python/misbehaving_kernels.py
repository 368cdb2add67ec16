# SPDX-License-Identifier: BSD-3-Clause
"""Python functions that misuse the bridge's conventions, each as a user's kernel might: the
harness must say what went wrong, case by case, and keep running."""
import numpy as np

from reference_attention import attention as reference

EVERY_VARIANT = reference.attnfuzz_features - {"backward"}
WITH_A_BACKWARD = reference.attnfuzz_features


def raises(q, k, v, out, **keywords):
    raise ValueError("the kernel gave up")  # this line is named in the failing case's reason


def returns_the_output(q, k, v, out, **keywords):
    """Correct, but returns a new array instead of writing `out`: accepted and copied."""
    result = np.zeros(out.shape, dtype=out.dtype)
    reference(q, k, v, result, **keywords)
    return result


returns_the_output.attnfuzz_features = EVERY_VARIANT


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


def declares_a_backward_numpy_cannot_take(q, k, v, out, **keywords):
    """Declares "backward" with no attnfuzz_backward: numpy has no autograd to stand in."""
    reference(q, k, v, out, **keywords)


declares_a_backward_numpy_cannot_take.attnfuzz_features = {"backward"}


def backward_that_raises(q, k, v, out, **keywords):
    reference(q, k, v, out, **keywords)


def _raise_in_backward(dout, q, k, v, out, lse, dq, dk, dv, **keywords):
    raise ArithmeticError("the backward gave up")  # named in the failing case's reason


backward_that_raises.attnfuzz_features = WITH_A_BACKWARD
backward_that_raises.attnfuzz_backward = _raise_in_backward


def backward_returning_two_gradients(q, k, v, out, **keywords):
    reference(q, k, v, out, **keywords)


backward_returning_two_gradients.attnfuzz_features = WITH_A_BACKWARD
backward_returning_two_gradients.attnfuzz_backward = (
    lambda dout, q, k, v, out, lse, dq, dk, dv, **keywords: (dq, dk))


def backward_only_without_softcap(q, k, v, out, **keywords):
    reference(q, k, v, out, **keywords)


backward_only_without_softcap.attnfuzz_features = WITH_A_BACKWARD
backward_only_without_softcap.attnfuzz_backward = reference.attnfuzz_backward
backward_only_without_softcap.attnfuzz_supports_backward = lambda problem: (
    "no soft cap in this backward" if problem["softcap"] > 0 else None)
