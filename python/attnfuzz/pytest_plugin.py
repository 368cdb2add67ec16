# SPDX-License-Identifier: BSD-3-Clause
"""The `attnfuzz` pytest fixture: a kernel's own test suite gains

    def test_attention(attnfuzz):
        attnfuzz.check(my_attention)

Registered by the package's entry point (pip install), or with `-p attnfuzz.pytest_plugin` (from
a source tree; under that name, the option is harmless where the package is installed too).
Settings for every check: `--attnfuzz-budget S` on the command line (seconds of property search),
or the ini options `attnfuzz_properties_budget`, `attnfuzz_configs` and `attnfuzz_known_failures`
(a path relative to the ini file's folder). A check where nothing could run skips its test.
"""
from pathlib import Path

import pytest

from attnfuzz._check import NothingRan, check


def pytest_addoption(parser):
    group = parser.getgroup("attnfuzz")
    group.addoption("--attnfuzz-budget", type=float, default=None, metavar="S",
                    help="seconds of attnfuzz property search after each check's matrix "
                         "(default: the ini's attnfuzz_properties_budget, else none)")
    parser.addini("attnfuzz_properties_budget", "seconds of property search per check", default="0")
    parser.addini("attnfuzz_configs", "the matrix every check runs (default: pr.json)", default="")
    parser.addini("attnfuzz_known_failures", "a --known-failures file for every check",
                  default="")


class Checker:
    """attnfuzz.check with the session's settings and the test's own folder."""

    def __init__(self, config, folder):
        self._folder = folder
        budget = config.getoption("--attnfuzz-budget")
        self._defaults = {
            "properties_budget": float(budget if budget is not None
                                       else config.getini("attnfuzz_properties_budget") or 0),
        }
        base = Path(str(config.inipath)).parent if config.inipath else Path(str(config.rootpath))
        if config.getini("attnfuzz_configs"):
            configs = config.getini("attnfuzz_configs")
            self._defaults["configs"] = (str(base / configs) if (base / configs).is_file()
                                         else configs)
        if config.getini("attnfuzz_known_failures"):
            self._defaults["known_failures"] = str(base / config.getini("attnfuzz_known_failures"))
        self.reports = []
        self._checks = 0  # each check's own folder, failed ones included

    def check(self, fn, **settings):
        """attnfuzz.check(fn, ...), the session's settings under the given ones; skips the test
        when nothing could run."""
        __tracebackhide__ = True
        arguments = {**self._defaults, "workdir": self._folder / f"check{self._checks}",
                     **settings}
        self._checks += 1
        try:
            report = check(fn, **arguments)
        except NothingRan as nothing:
            pytest.skip(str(nothing))
        self.reports.append(report)
        return report


@pytest.fixture
def attnfuzz(request, tmp_path):
    """Checks attention functions with attnfuzz (`attnfuzz.check(fn, ...)`)."""
    return Checker(request.config, tmp_path)
