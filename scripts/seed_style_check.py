#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The seed's check, for comparison: PyTorch's scaled_dot_product_attention on the 27 configs of
corpus/matrix/seed27.json against an fp32 reference, one torch.allclose per config with a fixed
atol and rtol, timed end to end; with --attnfuzz, fuzz_attention on the same matrix timed beside it
in the same run.

What the two check is not the same: the seed's check compares one kernel's output with an fp32
SDPA under one fixed tolerance (so a bug smaller than it passes, and a correct kernel on data with
large outputs may fail); attnfuzz compares every element with a float64 oracle under a bound
derived for that element, applies FlashAttention's 2x rule and the bias test, and reruns the kernel
for determinism. The figure says what the stronger check costs.

    python3 scripts/seed_style_check.py [--device cuda] [--atol 1e-3] [--rtol 1e-3] [--limit N]
                                        [--attnfuzz build/fuzz_attention]

Exit 0 when every config passed allclose and fuzz_attention (when run) exited 0; 1 otherwise;
2 without PyTorch or the device asked for.
"""
import argparse
import itertools
import json
import pathlib
import subprocess
import sys
import time

MATRIX = pathlib.Path(__file__).resolve().parent.parent / "corpus" / "matrix" / "seed27.json"


def seed_configs(limit):
    """The matrix's cases: every combination of its axes over its defaults, in file order."""
    matrix = json.loads(MATRIX.read_text())
    axes = matrix["matrix"]
    names = list(axes)
    configs = []
    for values in itertools.product(*(axes[name] for name in names)):
        config = dict(matrix["defaults"])
        config.update(zip(names, values))
        configs.append(config)
    return configs[:limit] if limit else configs


def run_seed_check(torch, configs, device, atol, rtol):
    """Seconds for the whole check and the configs that failed it."""
    functional = torch.nn.functional
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16}
    failed = []
    started = time.perf_counter()
    for index, config in enumerate(configs):
        generator = torch.Generator(device=device).manual_seed(config.get("seed", 1) + index)
        shape = (config["batch"], config["heads"], config["seq_len"], config["head_dim"])
        q, k, v = (torch.randn(shape, generator=generator, device=device,
                               dtype=dtypes[config["dtype"]]) for _ in range(3))
        causal = bool(config.get("causal", False))
        out = functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        reference = functional.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                            is_causal=causal)
        if not torch.allclose(out.float(), reference, atol=atol, rtol=rtol):
            failed.append(index)
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - started, failed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="torch device (default cuda)")
    parser.add_argument("--atol", type=float, default=1e-3)
    parser.add_argument("--rtol", type=float, default=1e-3)
    parser.add_argument("--limit", type=int, default=0, help="only the first N configs")
    parser.add_argument("--attnfuzz", help="fuzz_attention to time on the same matrix")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("seed_style_check: PyTorch is not installed", file=sys.stderr)
        return 2
    if args.device == "cuda" and not torch.cuda.is_available():
        print("seed_style_check: no CUDA device for PyTorch", file=sys.stderr)
        return 2
    configs = seed_configs(args.limit)
    seconds, failed = run_seed_check(torch, configs, args.device, args.atol, args.rtol)
    print(f"seed-style check (SDPA against an fp32 SDPA, allclose atol={args.atol} "
          f"rtol={args.rtol}, {args.device}): {len(configs)} configs, {len(failed)} failed, "
          f"{seconds:.2f} s")
    status = 1 if failed else 0
    if args.attnfuzz:
        command = [args.attnfuzz, "--configs", str(MATRIX), "--quiet"]
        if args.limit:
            for index in range(len(configs)):
                command += ["--case", f"seed27/{index}"]
        started = time.perf_counter()
        result = subprocess.run(command, check=False)
        attnfuzz_seconds = time.perf_counter() - started
        print(f"attnfuzz (every element against a float64 oracle, derived bounds, the 2x rule, "
              f"the bias test, a determinism rerun): exit {result.returncode}, "
              f"{attnfuzz_seconds:.2f} s")
        status = status or (0 if result.returncode == 0 else 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
