# SPDX-License-Identifier: BSD-3-Clause
"""attnfuzz from Python: run the harness on an attention function and get its report.

    import attnfuzz
    report = attnfuzz.check(my_attention)                  # pr.json; raises when a case fails
    attnfuzz.check(my_attention, configs="edges", properties_budget=60)

The function takes attnfuzz's call (docs/python.md) and is run by the harness, `fuzz_attention
--kernel-py`, in worker processes of its own: a crash or a hang costs a case, not the caller.
With pytest the `attnfuzz` fixture (attnfuzz.pytest_plugin) does the same, skipping a test when
nothing could run.
"""
from attnfuzz._check import (CheckFailed, HarnessError, NothingRan, check, harness_path,
                             kernel_spec)

__all__ = ["check", "harness_path", "kernel_spec", "CheckFailed", "HarnessError", "NothingRan"]
