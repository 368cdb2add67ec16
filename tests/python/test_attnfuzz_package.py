# SPDX-License-Identifier: BSD-3-Clause
"""The attnfuzz package (python/attnfuzz) on the numpy reference kernel: attnfuzz.check returns the
report of a passing kernel and raises with the failing rows and replay lines for a planted bug;
known failures, shipped matrices by name, a package's module, properties; clear errors for what
the harness cannot run; the pytest fixture passes, fails and skips a kernel's own test.

Run by tests/python/package_check.sh (CTest: python.attnfuzz_package), which puts python/ on
PYTHONPATH and names the built harness in $ATTNFUZZ_HARNESS."""
import json
import os
import re
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import attnfuzz

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import misbehaving_kernels  # noqa: E402
import reference_attention  # noqa: E402

pytest_plugins = ["pytester"]

# Four small cases: a partial key tile and causal with seq_len_q != seq_len_k among them.
SMALL = [{"batch": 1, "heads": 2, "head_dim": 64, "seq_len_q": 70, "seq_len_k": [100, 128],
          "causal": [False, True]}]


def test_a_correct_kernel_passes_and_its_report_comes_back():
    report = attnfuzz.check(reference_attention.attention, configs=SMALL)
    assert report["summary"]["passed"] == 4
    assert {result["kernel_name"] for result in report["results"]} == {
        "reference_attention-attention"}


def test_a_planted_bug_raises_naming_the_failing_cases_and_how_to_replay_them(monkeypatch):
    monkeypatch.setenv("ATTNFUZZ_TEST_PLANT", "causal_off_by_one")
    with pytest.raises(attnfuzz.CheckFailed) as failed:
        attnfuzz.check(reference_attention.attention, configs=SMALL)
    message = str(failed.value)
    assert "FAIL check/" in message
    assert "replay a failing case:" in message
    assert "--kernel-py " + str(HERE / "reference_attention.py") + ":attention" in message
    assert failed.value.report["summary"]["failed"] == 2  # the causal cases
    assert isinstance(failed.value, AssertionError)  # pytest shows it as a failed assertion
    # The matrix file the replay lines name outlives the check.
    kept = re.search(r"kept in (\S+)\)", message).group(1)
    assert (Path(kept) / "matrix.json").is_file()


def test_a_long_output_keeps_its_first_rows_and_its_last_lines_the_replay_lines():
    excerpt = attnfuzz._check._excerpt("\n".join(f"line {n}" for n in range(500)))
    assert "line 0" in excerpt and "line 499" in excerpt and "lines left out" in excerpt
    assert len(excerpt.splitlines()) <= 121


def test_known_failures_make_the_planted_failures_known_and_the_check_pass(monkeypatch):
    monkeypatch.setenv("ATTNFUZZ_TEST_PLANT", "causal_off_by_one")
    listed = [{"where": {"causal": True}, "reason": "a planted bug", "issue": "https://x/1"}]
    report = attnfuzz.check(reference_attention.attention, configs=SMALL, known_failures=listed)
    assert (report["summary"]["passed"], report["summary"]["known"]) == (2, 2)
    monkeypatch.delenv("ATTNFUZZ_TEST_PLANT")
    with pytest.raises(attnfuzz.CheckFailed, match="lists it as a known failure"):
        attnfuzz.check(reference_attention.attention, configs=SMALL, known_failures=listed)


def test_a_shipped_matrix_is_named_by_its_name_and_a_matrix_file_by_its_path(tmp_path):
    report = attnfuzz.check(reference_attention.attention, configs="edges", flags=[
        "--case", "edges/1*"])
    assert report["summary"]["matrix_name"] == "edges"
    matrix = tmp_path / "mine.json"
    matrix.write_text(json.dumps({"name": "mine", "cases": [{"seq_len": 33, "head_dim": 32}]}))
    assert attnfuzz.check(reference_attention.attention, configs=matrix)["summary"]["passed"] == 1
    with pytest.raises(attnfuzz.HarnessError, match="no such file, nor a matrix shipped"):
        attnfuzz.check(reference_attention.attention, configs="no_such_matrix")


def test_a_function_of_a_package_imports_there_as_here(tmp_path, monkeypatch):
    package = tmp_path / "my_kernels"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "scale.py").write_text("FACTOR = 1.0\n")
    (package / "attention.py").write_text(textwrap.dedent("""
        from .scale import FACTOR  # a relative import: needs the package, not the file
        from reference_attention import attention as reference

        def attention(q, k, v, out, *, softmax_scale, **rest):
            reference(q, k, v, out, softmax_scale=softmax_scale * FACTOR, **rest)
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    from my_kernels.attention import attention
    assert attnfuzz.kernel_spec(attention) == "my_kernels.attention:attention"
    assert attnfuzz.check(attention, configs=SMALL)["summary"]["passed"] == 4


def test_the_property_search_runs_after_the_matrix_and_its_failure_raises(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNFUZZ_TEST_PLANT", "gqa_modulo")
    with pytest.raises(attnfuzz.CheckFailed, match="failed a property") as failed:
        # SMALL has no GQA case: the matrix passes, the search finds the wrong head mapping.
        attnfuzz.check(reference_attention.attention, configs=SMALL, properties_budget=20,
                       properties=["matches_oracle"], workdir=tmp_path)
    assert failed.value.report["summary"]["passed"] == 4
    assert list((tmp_path / "regressions").glob("matches_oracle-*.json"))


def test_nothing_that_could_run_raises_nothing_ran():
    with pytest.raises(attnfuzz.NothingRan, match="only fp16, not bfloat16"):
        attnfuzz.check(misbehaving_kernels.only_fp16, configs=[{"dtype": "bf16", "seq_len": 9}])


def test_what_the_harness_cannot_run_is_a_harness_error_and_a_lambda_a_type_error(tmp_path):
    with pytest.raises(attnfuzz.HarnessError, match="no_such_kernel.py"):
        attnfuzz.check(str(tmp_path / "no_such_kernel.py") + ":attention", configs=SMALL)
    with pytest.raises(TypeError, match="module level"):
        attnfuzz.check(lambda q, k, v, out, **keywords: None)


def test_the_framework_follows_what_the_functions_module_uses():
    def function_of(**module_globals):
        namespace = dict(module_globals)
        exec("def attention(q, k, v, out, **keywords): pass", namespace)
        return namespace["attention"]

    jax_array = type("Array", (), {"__module__": "jax._src.array"})  # `from jax import Array`
    torch_function = type("F", (), {"__module__": "torch.nn.functional"})
    assert attnfuzz._check._framework_of(function_of(np=np)) == "numpy"
    assert attnfuzz._check._framework_of(function_of(Array=jax_array)) == "jax"
    assert attnfuzz._check._framework_of(function_of(F=torch_function)) == "torch"
    on_the_gpu = function_of(np=np)
    on_the_gpu.attnfuzz_device = "cuda"
    assert attnfuzz._check._framework_of(on_the_gpu) == "torch"


def test_a_check_inside_a_harness_process_is_refused(monkeypatch):
    monkeypatch.setenv("ATTNFUZZ_KERNEL_PY", "script.py:attention")
    with pytest.raises(attnfuzz.HarnessError, match="__name__"):
        attnfuzz.check(reference_attention.attention, configs=SMALL)


def test_the_fixture_passes_fails_and_skips_a_kernels_own_tests(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(HERE), *sys.path]))
    pytester.makeini("""
        [pytest]
        attnfuzz_known_failures = known.json
        """)
    pytester.makefile(".json", known=json.dumps({"known_failures": [
        {"case": "check/3", "reason": "listed", "issue": "https://x/2"}]}))
    pytester.makepyfile(test_kernel=f"""
        import reference_attention
        import misbehaving_kernels
        SMALL = {SMALL!r}

        def test_passes(attnfuzz):
            report = attnfuzz.check(reference_attention.attention, configs=SMALL)
            assert report["summary"]["passed"] == 4

        def test_fails(attnfuzz):
            attnfuzz.check(misbehaving_kernels.returns_float32, configs=SMALL)

        def test_skips(attnfuzz):
            attnfuzz.check(misbehaving_kernels.only_fp16, configs=[{{"dtype": "bf16"}}])
        """)
    result = pytester.runpytest_subprocess("-p", "attnfuzz.pytest_plugin", "-rs")
    result.assert_outcomes(passed=0, failed=2, skipped=1)
    # test_passes failed only because check/3 is listed and passes: the ini's list was used.
    result.stdout.fnmatch_lines(["*lists it as a known failure (listed; https://x/2)*",
                                 "*returned an output of dtype float32; expected float16*",
                                 "*only fp16, not bfloat16*"])
