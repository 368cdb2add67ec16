#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What a case costs in CPU time through the Python bridge against the same kernel through the C
ABI: fuzz_attention on a matrix (default: the built-in pr.json without seed27's cases, on which
the example's naive kernel takes minutes a case, dwarfing what the bridge costs) with the example
C plugin (`--kernel-lib`, examples/cpu_plugin) and with the same library called from Python through ctypes
(`--kernel-py tests/python/c_plugin_kernel.py:attention`), alternating, --rounds times each. A
run's CPU time is its user + system time with its workers' (getrusage of the waited-for
children); per case, over the cases that ran. Prints each run, then the ratio of the medians.

    python3 scripts/bench_bridge_cpu_time.py [--build build] [--python PATH] [--rounds 3]
        [--configs FILE] [--case PATTERN ...]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(command, environment, report):
    before = cpu_seconds()
    done = subprocess.run([*command, "--quiet", "--progress-every", "0", "--json", str(report)],
                          env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    spent = cpu_seconds() - before
    if done.returncode != 0:
        sys.exit(f"bench_bridge_cpu_time: {' '.join(command)} exited {done.returncode}: "
                 f"{done.stderr[-2000:]}")
    summary = json.loads(report.read_text())["summary"]
    ran = summary["passed"] + summary["failed"]
    return spent, ran, summary["skipped"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--python", default=str(ROOT / "build-tools" / "python" / "bin" / "python"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--configs", default=None)
    parser.add_argument("--case", action="append", default=None,
                        help="a --case pattern (repeatable; default: edges/* and variants/*)")
    arguments = parser.parse_args()
    build = Path(arguments.build)
    library = build / "examples" / "libexample_cpu_attention.so"
    harness = [str(build / "fuzz_attention"), "--backend", "cpu"]
    if arguments.configs:
        harness += ["--configs", arguments.configs]
    for pattern in arguments.case or ([] if arguments.configs else ["edges/*", "variants/*"]):
        harness += ["--case", pattern]
    ways = {
        "C ABI": [*harness, "--kernel-lib", str(library)],
        "bridge": [*harness, "--kernel-py", str(ROOT / "tests" / "python" / "c_plugin_kernel.py")
                   + ":attention", "--python", arguments.python],
    }
    environment = dict(os.environ, ATTNFUZZ_C_KERNEL=str(library))
    per_case = {way: [] for way in ways}
    with tempfile.TemporaryDirectory() as folder:
        for round_index in range(arguments.rounds):
            for way, command in ways.items():
                spent, ran, skipped = run(command, environment, Path(folder) / "report.json")
                per_case[way].append(spent / ran)
                print(f"round {round_index + 1} {way:7s}: {spent:7.2f} s CPU over {ran} cases "
                      f"({skipped} skipped): {1e3 * spent / ran:7.2f} ms a case", flush=True)
    medians = {way: statistics.median(values) for way, values in per_case.items()}
    ratio = medians["bridge"] / medians["C ABI"]
    print(f"median CPU a case: C ABI {1e3 * medians['C ABI']:.2f} ms, bridge "
          f"{1e3 * medians['bridge']:.2f} ms: the bridge's is {ratio:.3f} times the C ABI's")


if __name__ == "__main__":
    main()
