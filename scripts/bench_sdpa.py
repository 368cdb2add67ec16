#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""PyTorch's scaled_dot_product_attention on the shapes bench_cuda_flash times, for comparison.

Model width 2048 (heads = 2048 / head_dim), 16384 tokens per batch (batch = 16384 / seq_len), fp16,
causal and not; each figure is the median of --runs timed calls (CUDA events) after --warmup ones,
once with the flash backend alone and once with PyTorch's own choice. Causal FLOPs count the
visible half, as bench_cuda_flash does.

    python3 scripts/bench_sdpa.py [--runs 30] [--warmup 5]
    python3 scripts/bench_sdpa.py --report bench.json

With --report, the shapes are instead the timed cases of a `fuzz_attention --bench --json` report
(corpus/matrix/bench.json by default), each printed beside the report's median for its kernel;
the L2 cache is overwritten before each call, as the harness does. PyTorch aligns a causal mask
with S_q != S_k at the top left, the harness at the bottom right: such rows compare the same work
only when S_q == S_k.
"""
import argparse
import contextlib
import json
import statistics
import sys

MODEL_WIDTH = 2048
TOKENS = 16384


def median_milliseconds(function, warmup, runs, torch, flush=None):
    for _ in range(warmup):
        function()
    times = []
    for _ in range(runs):
        if flush is not None:
            flush.add_(1)
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        function()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def bench_report_cases(path, arguments, torch):
    """SDPA on each timed case of a --bench report, beside the report's median."""
    with open(path) as report_file:
        report = json.load(report_file)
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16}
    # Twice the L2 cache, overwritten before each call (the harness flushes the same way).
    l2_bytes = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(2 * l2_bytes // 4, device="cuda", dtype=torch.float32)
    print(f"{'case':16} {'shape':44} {'kernel':12} {'kernel ms':>10} {'sdpa ms':>10} "
          f"{'ratio':>7}")
    for result in report["results"]:
        performance = result.get("performance")
        if not performance:
            continue
        config = result["config"]
        batch, heads, kv_heads = config["batch"], config["heads"], config["kv_heads"]
        seq_len_q, seq_len_k = config["seq_len_q"], config["seq_len_k"]
        head_dim, dtype, causal = config["head_dim"], dtypes[config["dtype"]], config["causal"]
        q = torch.randn(batch, heads, seq_len_q, head_dim, device="cuda", dtype=dtype)
        k, v = (torch.randn(batch, kv_heads, seq_len_k, head_dim, device="cuda", dtype=dtype)
                for _ in range(2))
        if kv_heads != heads:  # every PyTorch version: the K/V heads repeated for each group
            k = k.repeat_interleave(heads // kv_heads, dim=1)
            v = v.repeat_interleave(heads // kv_heads, dim=1)
        milliseconds = median_milliseconds(
            lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal),
            arguments.warmup, arguments.runs, torch, flush)
        shape = (f"B={batch} H={heads}/{kv_heads} Sq={seq_len_q} Sk={seq_len_k} D={head_dim} "
                 f"{config['dtype']}{' causal' if causal else ''}")
        kernel_ms = performance["median_time_ms"]
        print(f"{result['case_id']:16} {shape:44} {result['kernel_name']:12} {kernel_ms:10.3f} "
              f"{milliseconds:10.3f} {kernel_ms / milliseconds:7.2f}", flush=True)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--report", help="a fuzz_attention --bench --json report: time its cases")
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
    if arguments.report:
        return bench_report_cases(arguments.report, arguments, torch)
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
