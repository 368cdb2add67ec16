# SPDX-License-Identifier: BSD-3-Clause
"""The example C plugin's kernel (examples/cpu_plugin, ABI version 1) called from Python through
ctypes: the same arithmetic as `fuzz_attention --kernel-lib`, so that a run through the bridge
differs from the plugin's own only by what the bridge costs (scripts/bench_bridge_cpu_time.py).
The library is $ATTNFUZZ_C_KERNEL."""
import ctypes
import os
import sys

import numpy as np

# The ABI's structs as the bridge reads them (bridges/python/bridge_glue.py), filled in here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bridges",
                                "python"))
from bridge_glue import Problem as _Problem  # noqa: E402
from bridge_glue import Strides as _Strides  # noqa: E402
from bridge_glue import Tensors as _Tensors  # noqa: E402

_library = ctypes.CDLL(os.environ["ATTNFUZZ_C_KERNEL"])
_forward = _library.attnfuzz_plugin_forward
_forward.argtypes = [ctypes.POINTER(_Problem), ctypes.POINTER(_Tensors), ctypes.c_char_p,
                     ctypes.c_size_t]
_error = ctypes.create_string_buffer(512)


def _strides(array):
    """[batch, seq, head] element strides of a [batch, seq, head, head_dim] array."""
    return _Strides(*(stride // array.itemsize for stride in array.strides[:3]))


def attention(q, k, v, out, *, softmax_scale, causal, **variants):
    problem = _Problem(q.shape[0], q.shape[2], k.shape[2], q.shape[1], k.shape[1], q.shape[3],
                       0 if q.dtype == np.float16 else 1, int(causal), softmax_scale,
                       _strides(q), _strides(k), _strides(v), _strides(out))
    tensors = _Tensors(q.ctypes.data, k.ctypes.data, v.ctypes.data, out.ctypes.data, None)
    if _forward(ctypes.byref(problem), ctypes.byref(tensors), _error, len(_error)) != 0:
        raise RuntimeError(_error.value.decode(errors="replace"))
