# SPDX-License-Identifier: BSD-3-Clause
"""attnfuzz.check: fuzz_attention run on a Python function, as a subprocess, its JSON report
returned and its verdict raised."""
import inspect
import json
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

# fuzz_attention's exit codes (docs/usage.md).
_EXIT_PASS, _EXIT_FAIL, _EXIT_SKIP = 0, 1, 2
_MAX_MESSAGE_LINES = 120


class CheckFailed(AssertionError):
    """A case (or a property) failed. The message holds the failing cases' rows and the command
    that replays each; `report` is the matrix run's JSON report (None when the run wrote none)."""

    def __init__(self, message, report=None, output=""):
        super().__init__(message)
        self.report = report
        self.output = output


class NothingRan(Exception):
    """Nothing passed or failed (exit 2): every case was skipped (the kernel supports none of them,
    or they need a GPU), or every case that ran is a known failure."""

    def __init__(self, message, report=None):
        super().__init__(message)
        self.report = report


class HarnessError(RuntimeError):
    """The harness refused the run (exit 3): a kernel that does not import, a bad flag or file."""


for _error in (CheckFailed, NothingRan, HarnessError):
    _error.__module__ = "attnfuzz"  # as tracebacks name them: attnfuzz.CheckFailed


def harness_path():
    """The fuzz_attention to run: $ATTNFUZZ_HARNESS, else the one installed with this package
    (pip install), else fuzz_attention on PATH."""
    given = os.environ.get("ATTNFUZZ_HARNESS")
    if given:
        return given
    installed = Path(__file__).resolve().parent / "bin" / "fuzz_attention"
    if installed.is_file():
        return str(installed)
    on_path = shutil.which("fuzz_attention")
    if on_path:
        return on_path
    raise HarnessError("attnfuzz: no fuzz_attention: install the package (pip install .), put "
                       "fuzz_attention on PATH or name it in $ATTNFUZZ_HARNESS")


def kernel_spec(fn):
    """What --kernel-py names `fn` by: `PACKAGE.MODULE:FUNCTION` for a function of a package's
    module (imported in the harness as here, through PYTHONPATH), else `FILE.py:FUNCTION`. A
    string is taken as a spec already."""
    if isinstance(fn, (str, os.PathLike)):
        return os.fspath(fn)
    name = getattr(fn, "__name__", None)
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    if name is None or module is None or getattr(module, name, None) is not fn:
        raise TypeError(f"attnfuzz.check: {fn!r} is not a function its module holds by its name; "
                        "the harness imports the module in its own processes and looks the "
                        "function up there (define it at module level, not in a function or as a "
                        "lambda)")
    file_name = os.path.basename(getattr(module, "__file__", "") or "")
    if module.__name__ != "__main__" and ("." in module.__name__ or file_name == "__init__.py"):
        return f"{module.__name__}:{name}"
    source = inspect.getsourcefile(fn) or getattr(module, "__file__", None)
    if not source:
        raise TypeError(f"attnfuzz.check: {fn!r} comes from no file the harness could import")
    return f"{os.path.abspath(source)}:{name}"


def _framework_of(fn):
    """The function's `attnfuzz_framework`; else torch for a device function or one whose module
    uses torch (anything of it imported: `import torch.nn.functional as F` too), jax for one whose
    module uses jax; else numpy (a spec string too)."""
    declared = getattr(fn, "attnfuzz_framework", None)
    if declared:
        return declared
    if getattr(fn, "attnfuzz_device", "cpu") == "cuda":
        return "torch"
    roots = set()
    for value in getattr(fn, "__globals__", {}).values():
        origin = value.__name__ if inspect.ismodule(value) else getattr(value, "__module__", None)
        if isinstance(origin, str):
            roots.add(origin.split(".")[0])
    for framework in ("torch", "jax"):
        if framework in roots:
            return framework
    return "numpy"


def _shipped_matrix(name):
    """A matrix shipped with the harness, by name (`edges` or `edges.json`), or None."""
    file_name = name if name.endswith(".json") else name + ".json"
    harness = Path(harness_path()).resolve()
    package = Path(__file__).resolve().parent
    # The harness's installation, this package's (pip install), the source tree (python/attnfuzz).
    for folder in (harness.parent.parent / "share" / "attnfuzz" / "matrix",
                   package / "share" / "attnfuzz" / "matrix",
                   package.parent.parent / "corpus" / "matrix"):
        if (folder / file_name).is_file():
            return folder / file_name
    return None


def _written(document, folder, name):
    """`document` as a JSON file in `folder`, for a flag that takes a file; its path."""
    path = Path(folder) / name
    path.write_text(json.dumps(document))
    return str(path)


def _matrix_file(configs, folder):
    """--configs' file for `configs`: a path, a shipped matrix's name, a matrix document (dict) or
    a list of cases (dicts of case keys)."""
    if isinstance(configs, (list, tuple)):
        configs = {"name": "check", "cases": list(configs)}
    if isinstance(configs, dict):
        return _written(configs, folder, "matrix.json")
    path = Path(os.fspath(configs))
    if path.is_file():
        return str(path)
    if re.fullmatch(r"[\w-]+(\.json)?", str(configs)):
        shipped = _shipped_matrix(str(configs))
        if shipped is not None:
            return str(shipped)
    raise HarnessError(f"attnfuzz.check: configs={configs!r}: no such file, nor a matrix shipped "
                       "with the harness (pr, edges, variants, seed27, ...)")


def _known_failures_file(known_failures, folder):
    """--known-failures' file: a path, the document (dict) or its entries (dicts)."""
    if isinstance(known_failures, (list, tuple)):
        known_failures = {"known_failures": list(known_failures)}
    if isinstance(known_failures, dict):
        return _written(known_failures, folder, "known_failures.json")
    return os.fspath(known_failures)


def _user_paths():
    """This process's sys.path less the interpreter's own folders (its standard library and
    installed packages, which the harness's interpreter has of its own): where the user's modules
    are (the working directory, a test's folder, pytest's `pythonpath`, a conftest's additions)."""
    own = {sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")}
    own.update(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        own.add(site.getusersitepackages())
    own = {os.path.realpath(path) + os.sep for path in own if path}
    paths = []
    for entry in sys.path:
        path = os.path.realpath(entry or os.getcwd())
        if not os.path.isdir(path):
            continue  # the standard library's zip file, and entries that do not exist
        if not any((path + os.sep).startswith(folder) for folder in own) and path not in paths:
            paths.append(path)
    return paths


def _environment():
    """The harness's environment: the function's module, and what it imports, import there
    through this process's own paths."""
    environment = dict(os.environ)
    existing = environment.get("PYTHONPATH")
    environment["PYTHONPATH"] = os.pathsep.join(_user_paths() + ([existing] if existing else []))
    return environment


def _excerpt(text):
    """The harness's output, its first and last lines when it is long: the first failing rows,
    and the replay lines and the summary, which come last."""
    lines = text.rstrip("\n").splitlines()
    if len(lines) > _MAX_MESSAGE_LINES:
        half = _MAX_MESSAGE_LINES // 2
        lines = lines[:half] + [f"... {len(lines) - 2 * half} lines left out ..."] + lines[-half:]
    return "\n".join(lines)


def _run(command, environment, timeout):
    try:
        return subprocess.run(command, capture_output=True, text=True, env=environment,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as expired:
        raise HarnessError(f"attnfuzz.check: the harness ran past timeout={timeout} s: "
                           f"{' '.join(command)}") from expired


def check(fn, *, configs=None, properties_budget=0.0, properties=(), framework=None,
          known_failures=None, flags=(), python=None, workdir=None, timeout=None):
    """Runs fuzz_attention on `fn` and returns the matrix run's JSON report (a dict, the format of
    docs/report.md).

    fn: a module-level function taking attnfuzz's call (docs/python.md), or a spec string
        (`FILE.py:FUNCTION`, `MODULE:FUNCTION`).
    configs: a matrix file, a shipped matrix's name ("edges"), a matrix document (dict) or a list
        of cases (dicts); default: the harness's default matrix (pr.json).
    properties_budget: seconds of property search after the matrix (0: none); `properties`
        names some (default: all).
    framework: "numpy", "torch" or "jax"; default: the function's `attnfuzz_framework`, else
        torch for a device function or when its module uses PyTorch, jax when it uses JAX, else
        numpy.
    known_failures: a --known-failures file, or its entries (a list of dicts, or the document).
    flags: more fuzz_attention flags, e.g. ["--repeats", "3"].
    python: the interpreter the harness hosts; default: this one (sys.executable).
    workdir: where reports and the property search's minimal cases go; default: a temporary
        folder, removed when the check passes (kept, and named, when it fails: the replay lines
        point into it).
    timeout: seconds for each harness run; default: none.

    Raises CheckFailed when a case or a property fails, NothingRan when nothing passed or failed,
    HarnessError when the harness refuses the run.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this function's
    if "ATTNFUZZ_KERNEL_PY" in os.environ:
        # The harness imports the function's module in its own processes: a script that checks a
        # function of its own at its top level would start harnesses without end.
        raise HarnessError("attnfuzz.check called inside a harness's process: guard the call "
                           "with `if __name__ == \"__main__\":`")
    spec = kernel_spec(fn)
    if workdir is None:
        folder = tempfile.mkdtemp(prefix="attnfuzz-check-")
        try:
            report = check(fn, configs=configs, properties_budget=properties_budget,
                           properties=properties, framework=framework,
                           known_failures=known_failures, flags=flags, python=python,
                           workdir=folder, timeout=timeout)
        except CheckFailed as failed:
            failed.args = (f"{failed.args[0]}\n(the files the replay lines name are kept in "
                           f"{folder})",)
            raise
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        shutil.rmtree(folder, ignore_errors=True)
        return report
    folder = Path(workdir)
    folder.mkdir(parents=True, exist_ok=True)
    base = [harness_path(), "--kernel-py", spec, "--python", python or sys.executable,
            "--py-framework", framework or _framework_of(fn), "--progress-every", "0", *flags]
    environment = _environment()

    report_path = folder / "report.json"
    report_path.unlink(missing_ok=True)
    command = [*base, "--quiet", "--json", str(report_path)]
    if configs is not None:
        command += ["--configs", _matrix_file(configs, folder)]
    if known_failures is not None:
        command += ["--known-failures", _known_failures_file(known_failures, folder)]
    done = _run(command, environment, timeout)
    report = json.loads(report_path.read_text()) if report_path.is_file() else None
    if done.returncode == _EXIT_FAIL:
        raise CheckFailed(f"attnfuzz: {spec} failed:\n{_excerpt(done.stdout)}", report,
                          done.stdout)
    if done.returncode == _EXIT_SKIP:
        reasons = done.stdout.partition("skipped because:\n")[2]
        raise NothingRan(f"attnfuzz: {spec}: nothing passed or failed; "
                         + (f"skipped because:\n{_excerpt(reasons)}" if reasons else
                            f"the run:\n{_excerpt(done.stdout)}"), report)
    if done.returncode != _EXIT_PASS or report is None:
        raise HarnessError(f"attnfuzz: {spec}: fuzz_attention exited {done.returncode}:\n"
                           f"{_excerpt(done.stderr or done.stdout)}")

    if properties_budget > 0:
        command = [*base, "--properties", "--budget", str(properties_budget), "--regressions",
                   str(folder / "regressions")]
        for name in properties:
            command += ["--property", name]
        searched = _run(command, environment, timeout)
        if searched.returncode == _EXIT_FAIL:
            raise CheckFailed(f"attnfuzz: {spec} failed a property:\n{_excerpt(searched.stdout)}",
                              report, searched.stdout)
        if searched.returncode not in (_EXIT_PASS, _EXIT_SKIP):
            raise HarnessError(f"attnfuzz: {spec}: fuzz_attention --properties exited "
                               f"{searched.returncode}:\n"
                               f"{_excerpt(searched.stderr or searched.stdout)}")
    return report
