# SPDX-License-Identifier: BSD-3-Clause
"""A kernel's own test suite checked by attnfuzz's pytest fixture: PyTorch's SDPA on the CPU (math
and flash backends, through the adapters of torch_sdpa.py) on the shipped edge matrix. With the
attnfuzz package installed (`pip install .`) the fixture is there:

    pytest examples/python/test_sdpa.py

Without PyTorch the tests skip, saying so. A failing case fails its test with the table's rows and
the command that replays each."""
import pytest

pytest.importorskip("torch", reason="PyTorch is not installed (scripts/real_kernels.sh makes an "
                                    "environment with it)")
import torch_sdpa  # noqa: E402  (beside this file)


@pytest.mark.parametrize("backend", ["sdpa_math", "sdpa_flash"])
def test_sdpa_passes_the_edge_matrix(attnfuzz, backend):
    report = attnfuzz.check(getattr(torch_sdpa, backend), configs="edges")
    # The adapter's own mask was judged: causal with seq_len_q != seq_len_k, aligned bottom-right.
    assert any(result["status"] == "pass" and result["config"]["causal"]
               and result["config"]["seq_len_q"] != result["config"]["seq_len_k"]
               for result in report["results"])
