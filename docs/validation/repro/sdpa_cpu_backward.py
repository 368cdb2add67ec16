# SPDX-License-Identifier: BSD-3-Clause
"""Standalone reproductions, in plain PyTorch on the CPU, of the backward-pass findings attnfuzz
made (docs/validation/real-kernels.md). No attnfuzz code is involved.

    python3 docs/validation/repro/sdpa_cpu_backward.py

1. SDPA's CPU flash backend (SDPBackend.FLASH_ATTENTION, and PyTorch's own choice, which takes it)
   with grouped-query attention: dK and dV of a key/value head lose precision as the group grows,
   while the math backend's stay within one rounding. Printed: the largest error against float64
   in roundings of the gradient's largest element (max |error| / (u * max |exact|)).
2. flex_attention's backward on the CPU, compiled as its documentation asks: it does not compile.
"""
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.flex_attention import flex_attention


def key_value_gradients(backend, q, k, v, grad_out):
    q, k, v = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    with sdpa_kernel([backend]):
        out = F.scaled_dot_product_attention(q, k, v, scale=q.shape[-1] ** -0.5, enable_gqa=True)
    out.backward(grad_out)
    return k.grad, v.grad


def grouped_query_precision():
    print("1. dK, dV of one key/value head against float64: decode (Sq=1, Sk=257, D=64), "
          "worst of 5 draws, in roundings of the largest element")
    torch.manual_seed(0)
    for dtype, u in ((torch.float16, 2.0 ** -11), (torch.bfloat16, 2.0 ** -8)):
        for group in (1, 8, 32, 128):
            worst = {}
            for _ in range(5):
                q, grad_out = (torch.randn(1, group, 1, 64).to(dtype) for _ in range(2))
                k, v = (torch.randn(1, 1, 257, 64).to(dtype) for _ in range(2))
                exact = key_value_gradients(SDPBackend.MATH, q.double(), k.double(), v.double(),
                                            grad_out.double())
                for name, backend in (("math", SDPBackend.MATH),
                                      ("flash", SDPBackend.FLASH_ATTENTION)):
                    got = key_value_gradients(backend, q, k, v, grad_out)
                    for part, g, r in zip(("dK", "dV"), got, exact):
                        error = ((g.double() - r).abs().max() / (u * r.abs().max())).item()
                        key = name + " " + part
                        worst[key] = max(worst.get(key, 0.0), error)
            print("  %-14s group %3d: %s" % (dtype, group, "  ".join(
                "%s %.1f" % item for item in worst.items())))


def flex_backward_on_the_cpu():
    print("2. flex_attention compiled, forward and backward on the CPU (B=2, H=4, Sq=70, Sk=150, "
          "D=64, no mask)")
    for dtype in (torch.float16, torch.float32):
        torch._dynamo.reset()
        compiled = torch.compile(flex_attention, fullgraph=True)
        q = torch.randn(2, 4, 70, 64, dtype=dtype, requires_grad=True)
        k, v = (torch.randn(2, 4, 150, 64, dtype=dtype, requires_grad=True) for _ in range(2))
        try:
            out = compiled(q, k, v)
            out.backward(torch.randn_like(out))
            print("  %s: ran" % dtype)
        except Exception as error:  # what PyTorch raised, one line
            print("  %s: raised %s: %s" % (dtype, type(error).__name__,
                                           str(error).splitlines()[0][:120]))


if __name__ == "__main__":
    print("torch", torch.__version__)
    grouped_query_precision()
    flex_backward_on_the_cpu()
