# SPDX-License-Identifier: BSD-3-Clause
"""Standalone reproductions, in plain PyTorch, of the CUDA SDPA failures attnfuzz found
(docs/validation/real-kernels.md). Each runs in a process of its own, since a CUDA fault ends the
process's context; each prints what PyTorch did. No attnfuzz code is involved.

    python3 docs/validation/repro/sdpa_cuda_faults.py
"""
import subprocess
import sys

CASES = {
    # Q, K, V as views into buffers whose rows are padded by one element (row stride 65 halves,
    # 130 bytes): valid strided tensors, last dimension contiguous.
    "flash, rows padded by one element": ("FLASH_ATTENTION", "padded", 2, 4, 65, 130),
    "PyTorch's choice, rows padded by one element": (None, "padded", 2, 4, 65, 130),
    "efficient, rows padded by one element": ("EFFICIENT_ATTENTION", "padded", 2, 4, 65, 130),
    "cuDNN, rows padded by one element": ("CUDNN_ATTENTION", "padded", 2, 4, 65, 130),
    "math, rows padded by one element (control)": ("MATH", "padded", 2, 4, 65, 130),
    "flash, contiguous rows (control)": ("FLASH_ATTENTION", "contiguous", 2, 4, 65, 130),
    # Decode with more sequences than a grid dimension holds: 65537 sequences of one query.
    "flash, 65537 sequences": ("FLASH_ATTENTION", "contiguous", 65537, 1, 1, 2),
    "PyTorch's choice, 65537 sequences": (None, "contiguous", 65537, 1, 1, 2),
    "efficient, 65537 sequences": ("EFFICIENT_ATTENTION", "contiguous", 65537, 1, 1, 2),
    "flash, 65535 sequences (control)": ("FLASH_ATTENTION", "contiguous", 65535, 1, 1, 2),
}

CHILD = r"""
import sys, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
backend, form, batch, heads, seq_q, seq_k = eval(sys.argv[1])
torch.manual_seed(0)
dim, pad = 64, (1 if form == "padded" else 0)
def tensor(seq):
    # [batch, seq, heads, dim + pad], viewed as [batch, heads, seq, dim]
    buffer = torch.randn(batch, seq, heads, dim + pad, device="cuda", dtype=torch.float16)
    return buffer[..., :dim].transpose(1, 2)
q, k, v = tensor(seq_q), tensor(seq_k), tensor(seq_k)
with sdpa_kernel([SDPBackend.MATH]):
    reference = F.scaled_dot_product_attention(q.float(), k.float(), v.float())
try:
    if backend:
        with sdpa_kernel([getattr(SDPBackend, backend)]):
            out = F.scaled_dot_product_attention(q, k, v)
    else:
        out = F.scaled_dot_product_attention(q, k, v)
    torch.cuda.synchronize()
    error = (out.float() - reference).abs().max().item()
    print("ran: max |error| against fp32 SDPA %.3g" % error)
except Exception as e:
    print("raised %s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0]))
"""


def main():
    import torch
    print("torch", torch.__version__, "on", torch.cuda.get_device_name(0))
    for name, args in CASES.items():
        try:
            run = subprocess.run([sys.executable, "-c", CHILD, repr(args)], capture_output=True,
                                 text=True, timeout=120)
        except subprocess.TimeoutExpired:
            print("%-48s %s" % (name + ":", "no answer in 120 s (a hang)"))
            continue
        lines = [line for line in (run.stdout + run.stderr).splitlines()
                 if line and "Warning" not in line and "scaled_dot_product" not in line]
        print("%-48s %s" % (name + ":", lines[-1] if lines else "exit %d" % run.returncode))


if __name__ == "__main__":
    main()
