# SPDX-License-Identifier: BSD-3-Clause
"""The Python side of fuzz_attention --kernel-py: runs inside the worker's embedded interpreter.

The C side (attnfuzz_python_bridge.cpp) is a plugin of the C ABI
(include/attnfuzz/attnfuzz_plugin.h, version 2's functions, handed version 4's problem and
tensors, and version 3's backward); it hands
this module the addresses of the ABI's problem and tensors, which are read here with ctypes, and
the user's function is called with views of the harness's own buffers (no copy), in
FlashAttention's Python-API conventions:

    fn(q, k, v, out, *, softmax_scale, causal, window_size, softcap, alibi_slopes,
       cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, block_table, lse)

q and out are [batch, seq_len_q, heads, head_dim] (packed: [total_q, heads, head_dim]); k and v
[batch, seq_len_k, kv_heads, head_dim] (packed: [total_k, ...]; paged: [pages, page_size, kv_heads,
head_dim]), each with the harness's strides; window_size is (left, right) with -1 for unbounded;
softcap is 0.0 when off; the index tensors are int32 or None; lse is an fp32 [batch, heads,
seq_len_q] tensor to write ([heads, total_q] packed), or None. The function writes `out`, or
returns the output, which is checked for shape, dtype and device, then copied into `out`. JAX
arrays cannot be written: with --py-framework jax the inputs are JAX arrays (copies), `out` and
`lse` jax.ShapeDtypeStruct, and the function returns the output, or (output, lse).

A function that declares "fp8_inputs" among its attnfuzz_features gets the cases with fp8 inputs
(the C ABI's version 4): q, k or v of dtype float8_e4m3fn or float8_e5m2 (ml_dtypes' with numpy
and jax, torch's own), and the keywords q_descale, k_descale and v_descale, FlashAttention 3's
descale factors: fp32 [batch, kv_heads] arrays, or None for a tensor without them. The element of
an fp8 tensor stands for its value times its factor.

A function that declares "backward" among its attnfuzz_features has a backward pass (the C ABI's
version 3): its `attnfuzz_backward` attribute, in FlashAttention's `_flash_attn_backward` order,

    bwd(dout, q, k, v, out, lse, dq, dk, dv, *, softmax_scale, causal, window_size, softcap,
        alibi_slopes, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, block_table,
        deterministic)

writing dq, dk, dv (laid out as q, k, v) or returning the three; or, without it, the function's
own autograd: with --py-framework torch the function runs again on q, k, v that require grad and
torch.autograd.grad(output, (q, k, v), dout) gives the gradients (`out.backward(dout)`); with
--py-framework jax, jax.vjp does.
"""
import contextlib
import ctypes
import importlib
import importlib.util
import os
import re
import sys
import traceback

FEATURE_BITS = {
    "varlen": 1,
    "paged_kv": 2,
    "sliding_window": 4,
    "softcap": 8,
    "alibi": 16,
    "return_lse": 32,
    # Version 3: what the backward pass is.
    "backward": 64,
    "nondeterministic_backward": 128,
    # Version 4: fp8 inputs, with the keywords q_descale, k_descale and v_descale.
    "fp8_inputs": 256,
}
# The ABI's dtype codes, by the framework's names; 2 and 3 are one byte per element.
DTYPE_NAMES = {0: "float16", 1: "bfloat16", 2: "float8_e4m3fn", 3: "float8_e5m2"}
FP8_NAMES = ("float8_e4m3fn", "float8_e5m2")
DESCALE_NAMES = {0: "none", 1: "per_tensor", 2: "per_kv_head"}
# The keyword arguments that are arrays (None when the case has none).
ARRAY_KEYWORDS = ("alibi_slopes", "cu_seqlens_q", "cu_seqlens_k", "block_table")
# Those a function that declares fp8_inputs gets too.
DESCALE_KEYWORDS = ("q_descale", "k_descale", "v_descale")
FRAMEWORKS = ("numpy", "torch", "jax")


class Strides(ctypes.Structure):
    _fields_ = [("batch", ctypes.c_int64), ("seq", ctypes.c_int64), ("head", ctypes.c_int64)]


class Problem(ctypes.Structure):
    _fields_ = [
        ("batch", ctypes.c_int64), ("heads", ctypes.c_int64), ("kv_heads", ctypes.c_int64),
        ("seq_len_q", ctypes.c_int64), ("seq_len_k", ctypes.c_int64), ("head_dim", ctypes.c_int64),
        ("dtype", ctypes.c_int32), ("causal", ctypes.c_int32), ("softmax_scale", ctypes.c_double),
        ("q_strides", Strides), ("k_strides", Strides), ("v_strides", Strides),
        ("o_strides", Strides),
    ]


class ProblemV2(ctypes.Structure):
    _fields_ = [
        ("base", Problem),
        ("window_left", ctypes.c_int64), ("window_right", ctypes.c_int64),
        ("softcap", ctypes.c_double), ("alibi", ctypes.c_int32), ("return_lse", ctypes.c_int32),
        ("varlen_q", ctypes.c_int32), ("varlen_k", ctypes.c_int32),
        ("total_q", ctypes.c_int64), ("total_k", ctypes.c_int64),
        ("page_size", ctypes.c_int64), ("pages", ctypes.c_int64),
        ("pages_per_sequence", ctypes.c_int64), ("lse_strides", Strides),
    ]


class Tensors(ctypes.Structure):
    _fields_ = [("q", ctypes.c_void_p), ("k", ctypes.c_void_p), ("v", ctypes.c_void_p),
                ("o", ctypes.c_void_p), ("cuda_stream", ctypes.c_void_p)]


class TensorsV2(ctypes.Structure):
    _fields_ = [
        ("base", Tensors),
        ("cu_seqlens_q", ctypes.c_void_p), ("cu_seqlens_k", ctypes.c_void_p),
        ("block_table", ctypes.c_void_p), ("alibi_slopes", ctypes.c_void_p),
        ("lse", ctypes.c_void_p),
    ]


class ProblemV4(ctypes.Structure):
    """Version 4's problem: what the bridge's version 2 functions are handed (the C ABI's
    attnfuzz_problem_v4, whose first member is the version 2 problem)."""
    _fields_ = [
        ("v2", ProblemV2),
        ("q_dtype", ctypes.c_int32), ("k_dtype", ctypes.c_int32), ("v_dtype", ctypes.c_int32),
        ("descale", ctypes.c_int32),
    ]


class TensorsV4(ctypes.Structure):
    _fields_ = [
        ("v2", TensorsV2),
        ("q_descale", ctypes.c_void_p), ("k_descale", ctypes.c_void_p),
        ("v_descale", ctypes.c_void_p),
    ]


class BackwardProblem(ctypes.Structure):
    _fields_ = [
        ("forward", ProblemV2),
        ("grad_output_strides", Strides), ("dq_strides", Strides), ("dk_strides", Strides),
        ("dv_strides", Strides), ("deterministic", ctypes.c_int32),
    ]


class BackwardTensors(ctypes.Structure):
    _fields_ = [("grad_output", ctypes.c_void_p), ("dq", ctypes.c_void_p),
                ("dk", ctypes.c_void_p), ("dv", ctypes.c_void_p)]


def dense_v4(problem):
    """A version 2 problem (the backward's) as version 4's: every input in the problem's dtype."""
    dtype = problem.base.dtype
    return ProblemV4(problem, dtype, dtype, dtype, 0)


def problem_dict(problem4):
    """The problem as a plain dict, for attnfuzz_supports(problem)."""
    problem = problem4.v2
    base = problem.base
    return {
        "q_dtype": DTYPE_NAMES[problem4.q_dtype], "k_dtype": DTYPE_NAMES[problem4.k_dtype],
        "v_dtype": DTYPE_NAMES[problem4.v_dtype], "descale": DESCALE_NAMES[problem4.descale],
        "batch": base.batch, "heads": base.heads, "kv_heads": base.kv_heads,
        "seq_len_q": base.seq_len_q, "seq_len_k": base.seq_len_k, "head_dim": base.head_dim,
        "dtype": DTYPE_NAMES[base.dtype], "causal": bool(base.causal),
        "softmax_scale": base.softmax_scale,
        "window_size": (problem.window_left, problem.window_right), "softcap": problem.softcap,
        "alibi": bool(problem.alibi), "return_lse": bool(problem.return_lse),
        "varlen_q": bool(problem.varlen_q), "varlen_k": bool(problem.varlen_k),
        "total_q": problem.total_q, "total_k": problem.total_k, "page_size": problem.page_size,
        # Element strides (batch, seq, head) of each tensor; the last dimension's is 1.
        **{name + "_strides": (int(s.batch), int(s.seq), int(s.head)) for name, s in (
            ("q", base.q_strides), ("k", base.k_strides), ("v", base.v_strides),
            ("o", base.o_strides))},
    }


def error_text(error, user_file):
    """One line: the exception's type, the innermost line of the user's file that the traceback
    passes through (else its innermost line), and its message last (a long message is what gets
    cut, not the place)."""
    frames = traceback.extract_tb(error.__traceback__)
    mine = [frame for frame in frames if user_file and os.path.abspath(frame.filename) == user_file]
    frame = (mine or frames or [None])[-1]
    where = "" if frame is None else " (%s:%d in %s)" % (frame.filename, frame.lineno, frame.name)
    message = str(error)
    return "%s%s%s" % (type(error).__name__, where, ": " + message if message else "")


class Kernel:
    """The user's function and what it declares."""

    def __init__(self, spec, framework):
        if framework not in FRAMEWORKS:
            raise ValueError("--py-framework %s: one of %s" % (framework, ", ".join(FRAMEWORKS)))
        self.framework = framework
        # The frameworks first: a file's neighbours, put first on sys.path below, must not shadow
        # them (a numpy.py beside the kernel).
        self.numpy = importlib.import_module("numpy")
        self.torch = importlib.import_module("torch") if framework == "torch" else None
        self.jax = importlib.import_module("jax") if framework == "jax" else None
        try:
            ml_dtypes = importlib.import_module("ml_dtypes")
            self.bfloat16 = ml_dtypes.bfloat16
            # numpy's fp8 dtypes, by the framework names of DTYPE_NAMES (those this ml_dtypes has).
            self.float8 = {name: getattr(ml_dtypes, name) for name in FP8_NAMES
                           if hasattr(ml_dtypes, name)}
        except ImportError:
            self.bfloat16 = None
            self.float8 = {}
        source, separator, function = spec.rpartition(":")
        if not separator or not source or not function:
            raise ValueError("expected FILE.py:FUNCTION or MODULE:FUNCTION")
        self.user_file = None
        if source.endswith(".py") or os.sep in source:
            if not source.endswith(".py"):
                raise ValueError("a file must end in .py: %s" % source)
            path = os.path.abspath(source)
            if not os.path.isfile(path):
                raise FileNotFoundError("no such file: %s" % path)
            self.user_file = path
            module_name = "attnfuzz_kernel_" + re.sub(r"\W", "_", os.path.basename(path)[:-3])
            sys.path.insert(0, os.path.dirname(path))  # its neighbours import as they would
            module_spec = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[module_name] = module
            module_spec.loader.exec_module(module)
            stem = os.path.basename(path)[:-3]
        else:
            # As `python -c` would: modules of the working directory import too (last, so that
            # they shadow nothing installed).
            sys.path.append(os.getcwd())
            module = importlib.import_module(source)
            self.user_file = os.path.abspath(getattr(module, "__file__", "") or "") or None
            stem = source.rsplit(".", 1)[-1]
        if not hasattr(module, function):
            raise AttributeError("%s has no function %s" % (source, function))
        self.fn = getattr(module, function)
        if not callable(self.fn):
            raise TypeError("%s.%s is not callable" % (source, function))
        self.name = re.sub(r"[^A-Za-z0-9_-]", "_", "%s-%s" % (stem, function))[:64]
        declared = getattr(self.fn, "attnfuzz_features", ())
        unknown = sorted(set(declared) - set(FEATURE_BITS))
        if unknown:
            raise ValueError("attnfuzz_features: unknown %s (known: %s)"
                             % (", ".join(unknown), ", ".join(FEATURE_BITS)))
        self.features = sum(FEATURE_BITS[name] for name in set(declared))
        self.backward_fn = getattr(self.fn, "attnfuzz_backward", None)
        self.user_supports_backward = getattr(self.fn, "attnfuzz_supports_backward", None)
        if "backward" in declared:
            if self.backward_fn is not None and not callable(self.backward_fn):
                raise TypeError("attnfuzz_backward is not callable")
            if self.backward_fn is None and framework == "numpy":
                raise ValueError("attnfuzz_features declares 'backward' but the function has no "
                                 "attnfuzz_backward: numpy has no autograd (with --py-framework "
                                 "torch or jax the function's own autograd is the backward)")
        else:
            for name in ("attnfuzz_backward", "attnfuzz_supports_backward",
                         "nondeterministic_backward"):
                if name in declared or getattr(self.fn, name, None) is not None:
                    raise ValueError("%s without 'backward' in attnfuzz_features: declare it to "
                                     "have the backward pass judged" % name)
        self.device = getattr(self.fn, "attnfuzz_device", "cpu")
        if self.device not in ("cpu", "cuda"):
            raise ValueError("attnfuzz_device: 'cpu' or 'cuda', not %r" % (self.device,))
        if self.device == "cuda" and self.torch is None:
            raise ValueError("attnfuzz_device 'cuda' needs --py-framework torch (%s arrays "
                             "live in host memory here)" % framework)
        self.user_supports = getattr(self.fn, "attnfuzz_supports", None)

    # ---- what runs ----

    def supports(self, problem_address):
        problem4 = ProblemV4.from_address(problem_address)
        problem = problem4.v2
        if problem.base.dtype == 1 and self.framework != "torch" and self.bfloat16 is None:
            return ("bf16 through --py-framework %s needs the ml_dtypes package (not importable)"
                    % self.framework)
        for code in (problem4.q_dtype, problem4.k_dtype, problem4.v_dtype):
            name = DTYPE_NAMES[code]
            if name not in FP8_NAMES:
                continue
            if self.framework == "torch" and not hasattr(self.torch, name):
                return "torch.%s: this PyTorch has no fp8 dtypes (2.1 and later do)" % name
            if self.framework != "torch" and name not in self.float8:
                return ("%s through --py-framework %s needs the ml_dtypes package (not importable)"
                        % (name, self.framework))
        if self.user_supports is None:
            return None
        try:
            reason = self.user_supports(problem_dict(problem4))
        except Exception as error:  # the user's predicate failed: say so, as a skip reason
            return "attnfuzz_supports raised " + error_text(error, self.user_file)
        if reason is None or reason is True:
            return None
        return "attnfuzz_supports returned False" if reason is False else str(reason)

    def forward(self, problem_address, tensors_address):
        """Calls the function once; returns None, or an error text."""
        problem = ProblemV4.from_address(problem_address)
        tensors = TensorsV4.from_address(tensors_address)
        try:
            arguments = self.arguments(problem, tensors)
        except Exception as error:
            return "the bridge could not make the tensors: " + error_text(error, None)
        if self.jax is not None:
            return self.forward_jax(*arguments)
        out = arguments[3]
        try:
            with self.stream_of(tensors.v2.base.cuda_stream):
                returned = self.fn(*arguments[:4], **arguments[4])
                if returned is None or returned is out:
                    return None
                return self.copy_returned(returned, out)
        except BaseException as error:  # SystemExit and KeyboardInterrupt are the function's too
            return error_text(error, self.user_file)

    def forward_jax(self, q, k, v, out, keywords):
        """JAX arrays cannot be written: the function is handed copies of the inputs as JAX
        arrays and `out` (and `lse`) as jax.ShapeDtypeStruct, and returns the output (with `lse`
        requested, the pair (output, lse)), which is checked and copied into the harness's
        buffers."""
        jax, lse = self.jax, keywords["lse"]
        try:
            inputs = [self.jax_copy(tensor) for tensor in (q, k, v)]
            arrays = self.jax_arrays(keywords)
        except Exception as error:
            return "the bridge could not make the JAX arrays: " + error_text(error, None)
        shapes = {"lse": None if lse is None else jax.ShapeDtypeStruct(lse.shape, lse.dtype)}
        try:
            returned = self.fn(*inputs, jax.ShapeDtypeStruct(out.shape, out.dtype),
                               **{**keywords, **arrays, **shapes})
            if lse is None:
                return self.copy_returned(returned, out)
            if not isinstance(returned, (tuple, list)) or len(returned) != 2:
                return ("with lse requested, a --py-framework jax function returns (output, lse); "
                        "it returned %s" % type(returned).__name__)
            return self.copy_returned(returned[0], out) or self.copy_returned(returned[1], lse)
        except BaseException as error:
            return error_text(error, self.user_file)

    def stream_of(self, address):
        """A device function runs on the harness's stream, which orders its work with the
        harness's copies and checks (its own streams must join it, as with any CUDA caller)."""
        if self.device != "cuda" or not address:
            return contextlib.nullcontext()
        torch = self.torch
        device = torch.cuda.current_device()  # the harness's, where its stream and buffers are
        return torch.cuda.stream(torch.cuda.ExternalStream(int(address), device=device))

    # ---- the backward pass (version 3) ----

    def supports_backward(self, problem_address):
        """Whether the backward runs the problem (the forward's support was asked already)."""
        problem = BackwardProblem.from_address(problem_address)
        if problem.forward.page_size > 0 and (self.backward_fn is None or self.jax is not None):
            return ("paged K/V: a backward that returns dK and dV (autograd, jax.vjp, a JAX "
                    "attnfuzz_backward) gives every page of the pool, those no sequence uses too; "
                    "an attnfuzz_backward that writes the used pages in place runs it")
        if self.user_supports_backward is None:
            return None
        try:
            reason = self.user_supports_backward(
                dict(problem_dict(dense_v4(problem.forward)),
                     deterministic=bool(problem.deterministic)))
        except Exception as error:
            return "attnfuzz_supports_backward raised " + error_text(error, self.user_file)
        if reason is None or reason is True:
            return None
        return "attnfuzz_supports_backward returned False" if reason is False else str(reason)

    def backward(self, problem_address, tensors_address, gradients_address):
        """Writes dQ, dK and dV once; returns None, or an error text."""
        problem = BackwardProblem.from_address(problem_address)
        forward = problem.forward
        tensors = TensorsV2.from_address(tensors_address)
        gradients = BackwardTensors.from_address(gradients_address)
        try:
            q, k, v, out, keywords = self.arguments(dense_v4(forward), TensorsV4(tensors))
            for name in DESCALE_KEYWORDS:  # no backward is handed fp8 inputs
                keywords.pop(name, None)
            dout = self.laid_out(forward, gradients.grad_output, problem.grad_output_strides,
                                 "query")
            targets = (self.laid_out(forward, gradients.dq, problem.dq_strides, "query"),
                       self.laid_out(forward, gradients.dk, problem.dk_strides, "key"),
                       self.laid_out(forward, gradients.dv, problem.dv_strides, "key"))
        except Exception as error:
            return "the bridge could not make the tensors: " + error_text(error, None)
        try:
            with self.stream_of(tensors.base.cuda_stream):
                if self.backward_fn is not None:
                    return self.backward_explicit(dout, q, k, v, out, keywords, targets,
                                                  bool(problem.deterministic),
                                                  forward.page_size > 0)
                if self.jax is not None:
                    return self.backward_vjp(dout, q, k, v, out, keywords, targets)
                return self.backward_autograd(dout, q, k, v, out, keywords, targets)
        except BaseException as error:
            return error_text(error, self.user_file)

    def writes_lse(self):
        """Whether the function's forward is asked for the log-sum-exp when autograd reruns it:
        only if it declares it (the backward always holds the harness's)."""
        return bool(self.features & FEATURE_BITS["return_lse"])

    def copy_gradients(self, returned, targets):
        """A backward that returns its gradients: (dq, dk, dv), each checked and copied."""
        if not isinstance(returned, (tuple, list)) or len(returned) != 3:
            if self.jax is not None:
                return "a --py-framework jax backward returns (dq, dk, dv); it returned %s" % (
                    type(returned).__name__)
            return ("a backward returns None (having written dq, dk and dv) or (dq, dk, dv); it "
                    "returned %s" % type(returned).__name__)
        for name, value, target in zip(("dq", "dk", "dv"), returned, targets):
            if value is target:
                continue
            if value is None:
                return "%s: the backward returned None for it" % name
            problem = self.copy_returned(value, target)
            if problem:
                return "%s: %s" % (name, problem.replace("an output", "a gradient"))
        return None

    def backward_explicit(self, dout, q, k, v, out, keywords, targets, deterministic, paged):
        """The function's attnfuzz_backward, handed the harness's buffers (JAX: copies, and the
        gradients' shapes)."""
        rest = {name: value for name, value in keywords.items() if name != "lse"}
        inputs = [dout, q, k, v, out, keywords["lse"]]
        outputs = list(targets)
        if self.jax is not None:
            inputs = [self.jax_copy(value) for value in inputs]
            rest.update(self.jax_arrays(rest))
            outputs = [self.jax.ShapeDtypeStruct(t.shape, t.dtype) for t in targets]
        returned = self.backward_fn(*inputs, *outputs, deterministic=deterministic, **rest)
        if returned is None and self.jax is None:
            return None
        if paged:
            return ("with paged K/V a backward writes the used pages of dk and dv in place: "
                    "returned pools would write pages no sequence uses")
        return self.copy_gradients(returned, targets)

    def backward_autograd(self, dout, q, k, v, out, keywords, targets):
        """`out.backward(dout)`: the function runs again on leaves over Q, K and V (no copy) that
        require grad, writing scratch tensors laid out as O and the log-sum-exp (the harness's
        are inputs here), and autograd gives the gradients."""
        torch = self.torch

        def scratch(like):
            return None if like is None else torch.empty_strided(
                like.shape, like.stride(), dtype=like.dtype, device=like.device)

        leaves = [tensor.detach().requires_grad_(True) for tensor in (q, k, v)]
        scratch_out = scratch(out)
        lse = scratch(keywords["lse"]) if self.writes_lse() else None
        with torch.enable_grad():
            returned = self.fn(*leaves, scratch_out, **dict(keywords, lse=lse))
            output = scratch_out if returned is None or returned is scratch_out else returned
            if tuple(getattr(output, "shape", ())) != tuple(out.shape):
                return "the function returned an output of shape %s; expected %s" % (
                    tuple(getattr(output, "shape", ())), tuple(out.shape))
            if not getattr(output, "requires_grad", False):
                return ("the output carries no autograd graph: a backward through autograd needs "
                        "it computed from q, k, v with torch operations (or an attnfuzz_backward)")
            computed = torch.autograd.grad(output, leaves, grad_outputs=dout.to(output.dtype),
                                           allow_unused=True)
        for target, gradient in zip(targets, computed):
            if gradient is None:  # an input the output does not depend on
                target.zero_()
            else:
                target.copy_(gradient)
        return None

    def backward_vjp(self, dout, q, k, v, out, keywords, targets):
        """jax.vjp through the function (the log-sum-exp asked for: its output's first part)."""
        jax = self.jax
        lse = keywords["lse"] if self.writes_lse() else None
        inputs = [self.jax_copy(value) for value in (q, k, v)]
        arrays = self.jax_arrays(keywords)
        shapes = {"lse": None if lse is None else jax.ShapeDtypeStruct(lse.shape, lse.dtype)}
        out_shape = jax.ShapeDtypeStruct(out.shape, out.dtype)

        def primal(q_, k_, v_):
            returned = self.fn(q_, k_, v_, out_shape, **{**keywords, **arrays, **shapes})
            return returned if lse is None else returned[0]

        _, pullback = jax.vjp(primal, *inputs)
        return self.copy_gradients(pullback(self.jax_copy(dout)), targets)

    def jax_copy(self, value):
        """A JAX array copied from a view of the harness's memory (None stays None). A copy:
        jnp.asarray would map aligned host memory, which the harness reuses after the call, into
        an array the function may keep."""
        return None if value is None else self.jax.numpy.array(value, copy=True)

    def jax_arrays(self, keywords):
        """The keyword arguments that are arrays, as JAX copies."""
        return {name: self.jax_copy(keywords[name]) for name in ARRAY_KEYWORDS + DESCALE_KEYWORDS
                if name in keywords}

    # ---- the tensors ----

    def view(self, address, shape, element_strides, kind):
        """A tensor over the harness's memory at `address`, of the framework asked for."""
        np = self.numpy
        itemsize = 4 if kind in ("float32", "int32") else 1 if kind in FP8_NAMES else 2
        typestr = {"float16": "<f2", "bfloat16": "<u2", "float32": "<f4", "int32": "<i4",
                   "float8_e4m3fn": "<u1", "float8_e5m2": "<u1"}[kind]

        class Memory:
            pass

        memory = Memory()
        interface = {
            "version": 3, "shape": tuple(int(n) for n in shape), "typestr": typestr,
            "data": (int(address), False),
            "strides": tuple(int(s) * itemsize for s in element_strides),
        }
        if self.device == "cuda":
            # Device memory: a CUDA tensor over it, on the device the pointer belongs to (no
            # copy); stream None: the caller orders it (forward runs on the harness's stream).
            memory.__cuda_array_interface__ = dict(interface, stream=None)
            device = self.torch.device("cuda", self.torch.cuda.current_device())
            tensor = self.torch.as_tensor(memory, device=device)
            if tensor.data_ptr() != int(address) and tensor.numel() > 0:
                raise RuntimeError("torch copied the harness's device buffer instead of viewing "
                                   "it (a default device set to the CPU, or a PyTorch before 2.5?)")
            # (fp8 kinds do not reach here yet: the harness hands fp8 inputs to host plugins only.)
            return self.torch_view(tensor, kind)
        memory.__array_interface__ = interface
        array = np.asarray(memory)
        if self.framework != "torch":  # numpy; jax's arrays are made from these (forward_jax)
            if kind == "bfloat16":
                return array.view(self.bfloat16)
            return array.view(self.float8[kind]) if kind in FP8_NAMES else array
        return self.torch_view(self.torch.from_dlpack(array), kind)

    def torch_view(self, tensor, kind):
        """`tensor` (16-bit or byte patterns) as the dtype `kind` names: bf16 and the fp8 dtypes
        reinterpret the bits (torch.float8_e4m3fn, torch.float8_e5m2)."""
        if kind == "bfloat16" or kind in FP8_NAMES:
            return tensor.view(getattr(self.torch, kind))
        return tensor

    def laid_out(self, problem, address, strides, role, kind=None):
        """A tensor at `address` with `strides`, shaped as Q and O are (role "query": [batch,
        seq_len_q, heads, head_dim], packed [total_q, heads, head_dim]) or as K and V are (role
        "key": kv_heads heads; packed [total_k, ...]; paged [pages, page_size, ...])."""
        base = problem.base
        kind = kind or DTYPE_NAMES[base.dtype]
        dim = base.head_dim
        if role == "query":
            outer, rows, heads, packed = (base.batch, problem.total_q if problem.varlen_q else
                                          base.seq_len_q, base.heads, problem.varlen_q)
        elif problem.page_size > 0:
            outer, rows, heads, packed = problem.pages, problem.page_size, base.kv_heads, False
        else:
            outer, rows, heads, packed = (base.batch, problem.total_k if problem.varlen_k else
                                          base.seq_len_k, base.kv_heads, problem.varlen_k)
        if packed:
            return self.view(address, (rows, heads, dim), (strides.seq, strides.head, 1), kind)
        return self.view(address, (outer, rows, heads, dim),
                         (strides.batch, strides.seq, strides.head, 1), kind)

    def arguments(self, problem4, tensors4):
        problem, tensors = problem4.v2, tensors4.v2
        base = problem.base
        q = self.laid_out(problem, tensors.base.q, base.q_strides, "query",
                          DTYPE_NAMES[problem4.q_dtype])
        out = self.laid_out(problem, tensors.base.o, base.o_strides, "query")
        k = self.laid_out(problem, tensors.base.k, base.k_strides, "key",
                          DTYPE_NAMES[problem4.k_dtype])
        v = self.laid_out(problem, tensors.base.v, base.v_strides, "key",
                          DTYPE_NAMES[problem4.v_dtype])

        def index(address, shape):
            return None if not address else self.view(address, shape, _contiguous(shape), "int32")

        lse = None
        if problem.return_lse and tensors.lse:
            strides = problem.lse_strides
            if problem.varlen_q:
                lse = self.view(tensors.lse, (base.heads, problem.total_q), (strides.head, 1),
                                "float32")
            else:
                lse = self.view(tensors.lse, (base.batch, base.heads, base.seq_len_q),
                                (strides.batch, strides.head, 1), "float32")
        keywords = {
            "softmax_scale": base.softmax_scale,
            "causal": bool(base.causal),
            "window_size": (int(problem.window_left), int(problem.window_right)),
            "softcap": float(problem.softcap),
            "alibi_slopes": None if not tensors.alibi_slopes else self.view(
                tensors.alibi_slopes, (base.heads,), (1,), "float32"),
            "cu_seqlens_q": index(tensors.cu_seqlens_q, (base.batch + 1,)),
            "cu_seqlens_k": index(tensors.cu_seqlens_k, (base.batch + 1,)),
            "max_seqlen_q": int(base.seq_len_q),
            "max_seqlen_k": int(base.seq_len_k),
            "block_table": index(tensors.block_table, (base.batch, problem.pages_per_sequence)),
            "lse": lse,
        }
        if self.features & FEATURE_BITS["fp8_inputs"]:
            # FlashAttention 3's descale factors: fp32 [batch, kv_heads], or None (a factor of 1).
            for name in DESCALE_KEYWORDS:
                address = getattr(tensors4, name)
                keywords[name] = None if not address else self.view(
                    address, (base.batch, base.kv_heads), (base.kv_heads, 1), "float32")
        return (q, k, v, out, keywords)

    def copy_returned(self, returned, out):
        """Checks a returned output against `out` and copies it there; an error text if it does
        not fit."""
        if returned is None:
            return ("the function returned None where an array was due: a --py-framework jax "
                    "function returns its output (and, asked for, the log-sum-exp)")
        shape = tuple(getattr(returned, "shape", ()))
        if shape != tuple(out.shape):
            return "the function returned an output of shape %s; expected %s" % (
                shape, tuple(out.shape))
        if getattr(returned, "dtype", None) != out.dtype:
            return "the function returned an output of dtype %s; expected %s" % (
                getattr(returned, "dtype", type(returned).__name__), out.dtype)
        if self.framework == "torch":
            if returned.device != out.device:
                return "the function returned an output on %s; expected %s" % (
                    returned.device, out.device)
            out.copy_(returned)
        else:
            self.numpy.copyto(out, returned)
        return None


def _contiguous(shape):
    strides, step = [], 1
    for extent in reversed(shape):
        strides.insert(0, step)
        step *= max(int(extent), 1)
    return strides


def load(spec, framework):
    """The kernel named by `spec`; raises with the reason when it cannot be loaded."""
    return Kernel(spec, framework)
