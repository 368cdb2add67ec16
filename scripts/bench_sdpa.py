#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention on the shapes bench_cuda_flash times, for comparison.

Model width 2048 (heads = 2048 / head_dim), 16384 tokens per batch (batch = 16384 / seq_len), fp16,
causal and not; each figure is the median of --runs timed calls (CUDA events) after --warmup ones,
once with the flash backend alone and once with PyTorch's own choice. Causal FLOPs count the
visible half, as bench_cuda_flash does.

    python3 scripts/bench_sdpa.py [--runs 30] [--warmup 5]
"""
import argparse
import contextlib
import statistics
import sys

MODEL_WIDTH = 2048
TOKENS = 16384


def median_milliseconds(function, warmup, runs, torch):
    for _ in range(warmup):
        function()
    times = []
    for _ in range(runs):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        function()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    arguments = parser.parse_args()
    try:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as error:
        print(f"bench_sdpa: skipped: PyTorch is not installed ({error})")
        return 2
    if not torch.cuda.is_available():
        print("bench_sdpa: skipped: PyTorch sees no CUDA device")
        return 2
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"{'causal':7} {'D':6} {'B':5} {'H':6} {'S':6} {'backend':8} {'ms':>10} {'TFLOP/s':>10}")
    # "auto" leaves the choice to PyTorch, as a user's model would.
    backends = {"flash": lambda: sdpa_kernel([SDPBackend.FLASH_ATTENTION]),
                "auto": contextlib.nullcontext}
    for causal in (False, True):
        for head_dim in (64, 128):
            for seq_len in (512, 1024, 2048, 4096):
                batch, heads = TOKENS // seq_len, MODEL_WIDTH // head_dim
                q, k, v = (torch.randn(batch, heads, seq_len, head_dim, device="cuda",
                                       dtype=torch.float16) for _ in range(3))
                flops = 4 * batch * heads * seq_len * seq_len * head_dim * (0.5 if causal else 1)
                for name, backend_choice in backends.items():
                    with backend_choice():
                        milliseconds = median_milliseconds(
                            lambda: torch.nn.functional.scaled_dot_product_attention(
                                q, k, v, is_causal=causal),
                            arguments.warmup, arguments.runs, torch)
                    print(f"{'yes' if causal else 'no':7} {head_dim:<6} {batch:<5} {heads:<6} "
                          f"{seq_len:<6} {name:8} {milliseconds:10.3f} "
                          f"{flops / (milliseconds * 1e-3) / 1e12:10.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
