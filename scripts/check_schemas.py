#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Checks docs/schema/ against the harness: matrices and --describe output against
# matrix.schema.json, reports of real runs (failures, skips, crashes, hangs, --bench, --baseline)
# against report.schema.json, and that broken documents are rejected (no vacuous pass).
# Exit codes: 0 all checks hold, 1 one failed, 77 the jsonschema module is missing (skip).
import argparse
import concurrent.futures
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import jsonschema
except ImportError:
    print("check_schemas: skipped: no jsonschema module (Debian package python3-jsonschema)")
    sys.exit(77)

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_DIR = ROOT / "docs" / "schema"
MATRIX_DIR = ROOT / "corpus" / "matrix"
HARNESS_ERROR = 3  # fuzz_attention's exit code for a file it refuses


class Checks:
    """Counts and prints the outcome of each check."""

    def __init__(self):
        self.passed = 0
        self.failures = []

    def ok(self, label):
        self.passed += 1
        print(f"ok    {label}")

    def fail(self, label, why):
        self.failures.append(label)
        print(f"FAIL  {label}: {why}")

    def expect(self, condition, label, why):
        if condition:
            self.ok(label)
        else:
            self.fail(label, why)


def load_json(path):
    return json.loads(Path(path).read_bytes())


def error_lines(validator, document, limit=3):
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    return ["/" + "/".join(str(p) for p in e.absolute_path) + ": " + e.message[:200]
            for e in errors[:limit]]


def validate(checks, validator, document, label):
    errors = error_lines(validator, document)
    checks.expect(not errors, label, "; ".join(errors))


def expect_rejected(checks, validator, document, label):
    checks.expect(not validator.is_valid(document), f"rejected: {label}",
                  "the schema accepts it")


def sub_validator(schema, definition):
    """A validator of one of `schema`'s $defs, its local references still resolving."""
    return jsonschema.Draft202012Validator(
        {"$ref": f"#/$defs/{definition}", "$defs": schema["$defs"]})


def undescribed_properties(schema):
    """JSON pointers of the fields of closed objects (additionalProperties false: the schema's
    declarations, not the refinements in if/then/else) that have no description, directly or
    through a local $ref."""
    missing = []

    def described(node):
        while "description" not in node and "$ref" in node:
            node = schema["$defs"][node["$ref"].split("/")[-1]]
        return "description" in node

    def walk(node, pointer):
        if isinstance(node, dict):
            closed = node.get("additionalProperties") is False
            declared = node.get("properties", {}) if closed else {}
            for name, value in declared.items():
                if isinstance(value, dict) and not described(value):
                    missing.append(f"{pointer}/properties/{name}")
            for key, value in node.items():
                walk(value, f"{pointer}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{pointer}/{index}")

    walk(schema, "")
    return missing


class Harness:
    """Runs fuzz_attention in a scratch folder."""

    def __init__(self, binary, folder):
        self.binary = str(binary)
        self.folder = folder

    def run(self, arguments, timeout=120):
        return subprocess.run([self.binary, *arguments], cwd=self.folder, capture_output=True,
                              text=True, errors="replace", timeout=timeout, check=False)

    def accepts_matrix(self, path):
        """Whether --describe reads the matrix file (exit 0) or refuses it (exit 3), and why."""
        done = self.run(["--describe", str(path)])
        if done.returncode not in (0, HARNESS_ERROR):
            raise RuntimeError(f"--describe {path} exited {done.returncode}: {done.stderr[-300:]}")
        return done.returncode == 0, done.stderr.strip()


def check_schemas_themselves(checks, schemas):
    """Returns whether both schemas are valid schemas (the other checks need them to be)."""
    valid = True
    for name, schema in schemas.items():
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
            checks.ok(f"{name} is a valid draft 2020-12 schema")
        except jsonschema.exceptions.SchemaError as error:
            checks.fail(f"{name} is a valid draft 2020-12 schema", error.message)
            valid = False
            continue
        missing = undescribed_properties(schema)
        checks.expect(not missing, f"{name}: every declared field has a description",
                      ", ".join(missing[:5]))
    return valid


def check_shared_enums(checks, report_schema, matrix_schema):
    """A report's config is a matrix case entry: its value sets must be the matrix file's."""
    config = report_schema["$defs"]["config"]["properties"]
    for key in ("dtype", "data", "layout"):
        checks.expect(config[key]["enum"] == matrix_schema["$defs"][key]["enum"],
                      f"report config.{key} and matrix {key} list the same values",
                      f"{config[key]['enum']} != {matrix_schema['$defs'][key]['enum']}")


def listed_after(message, marker):
    """The comma-separated names after `marker` in a harness message, up to ')'."""
    found = re.search(re.escape(marker) + r"([^)]*)\)", message)
    return [name.strip() for name in found.group(1).split(",")] if found else None


def check_names_against_harness(checks, harness, matrix_schema, report_schema, scratch):
    """The keys and values the harness's own error messages list are the schemas'."""
    defs = matrix_schema["$defs"]
    matrix = jsonschema.Draft202012Validator(matrix_schema)
    injection = sub_validator(report_schema, "injection")
    probes = [
        ({"name": "x", "bogus": 1}, "(expected ", list(matrix_schema["properties"]),
         "top-level keys"),
        ({"name": "x", "cases": [{"bogus": 1}]}, "(case keys: ",
         list(defs["case_entry"]["properties"]), "case keys (in their order)"),
        ({"name": "x", "cases": [{"data": "?"}]}, "expected one of ", defs["data"]["enum"],
         "data distributions"),
        ({"name": "x", "cases": [{"dtype": "?"}]}, "expected one of ", defs["dtype"]["enum"],
         "dtypes"),
        ({"name": "x", "cases": [{"layout": "?"}]}, "expected one of ", defs["layout"]["enum"],
         "layouts"),
    ]
    for document, marker, in_schema, what in probes:
        path = scratch / "probe.json"
        path.write_text(json.dumps(document))
        accepted, message = harness.accepts_matrix(path)
        listed = None if accepted else listed_after(message, marker)
        checks.expect(listed == in_schema, f"matrix schema's {what} are the harness's",
                      f"harness: {listed}; schema: {in_schema}")
    path = scratch / "probe.json"
    path.write_text(json.dumps({"name": "x", "cases": [{"inject": "?"}]}))
    kinds = listed_after(harness.accepts_matrix(path)[1] + ")", "kinds: ") or []
    injections = [f"{tensor}:{kind}:3" for tensor in "qkv" for kind in kinds]
    bad = [text for text in injections
           if not matrix.is_valid({"name": "x", "cases": [{"inject": text}]})
           or not injection.is_valid(text)]
    checks.expect(kinds and not bad, f"every injection kind the harness names validates ({kinds})",
                  f"refused: {bad}")


# Matrices both the harness and the schema must refuse: each breaks one rule the schema states.
BAD_MATRICES = {
    "an unknown top-level key": {"name": "x", "cases": [{"batch": 1}], "casses": []},
    "an unknown case key": {"name": "x", "cases": [{"batch": 1, "num_head": 2}]},
    "an unknown key in defaults": {"name": "x", "defaults": {"sequence": 4}, "cases": [{}]},
    "an unknown key in matrix": {"name": "x", "matrix": {"seq_len": [4], "heads_kv": 1}},
    "no name": {"cases": [{"batch": 1}]},
    "an empty name": {"name": "", "cases": [{"batch": 1}]},
    "a control character in the name": {"name": "a\nb", "cases": [{"batch": 1}]},
    "no cases at all": {"name": "x"},
    "an empty cases array": {"name": "x", "cases": []},
    "an empty axis": {"name": "x", "cases": [{"seq_len": []}]},
    "an array in defaults": {"name": "x", "defaults": {"seq_len": [4, 8]}, "cases": [{}]},
    "a zero batch": {"name": "x", "cases": [{"batch": 0}]},
    "a negative seed": {"name": "x", "cases": [{"seed": -1}]},
    "a string for a number": {"name": "x", "cases": [{"head_dim": "64"}]},
    "an unknown dtype": {"name": "x", "cases": [{"dtype": "fp32"}]},
    "a zero softmax_scale": {"name": "x", "cases": [{"softmax_scale": 0}]},
    "an injection count of 0": {"name": "x", "cases": [{"inject": "v:large:0"}]},
    "a case that is not an object": {"name": "x", "cases": [[1]]},
    "an include that is not a list": {"name": "x", "include": "edges.json"},
}
# Matrices both must accept: the keys' less common forms.
GOOD_MATRICES = {
    "aliases beside their keys": {"name": "x", "cases": [
        {"batch": 2, "batch_size": 2, "heads": 4, "num_heads": 4, "kv_heads": 2}]},
    "every key, arrays and scalars": {
        "name": "every key", "defaults": {"head_dim": 32, "dtype": "bf16", "seed": 7},
        "matrix": {"seq_len": [3, 5], "causal": [False, True]},
        "cases": [{"batch": 1, "heads": 2, "kv_heads": 1, "seq_len_q": 4, "seq_len_k": [1, 9],
                   "data": ["uniform", "flat_softmax"], "kernel": "cpu_flash", "layout": "bhsd",
                   "row_padding": 8, "placement": ["shared", "qkv_packed"],
                   "softmax_scale": 0.5, "inject": ["none", "q:none:0", "k:subnormal:2"]}]},
    "the largest seed": {"name": "x", "cases": [{"seed": 18446744073709551615}]},
    "an include only": {"name": "x", "include": ["bench_small.json"]},
}


def check_matrices(checks, harness, matrix_schema, scratch):
    matrix = jsonschema.Draft202012Validator(matrix_schema)
    for path in sorted(MATRIX_DIR.glob("*.json")) + sorted(
            (ROOT / "corpus" / "regressions").glob("*.json")):
        validate(checks, matrix, load_json(path), f"matrix {path.relative_to(ROOT)}")
    folder = scratch / "matrices"
    folder.mkdir()
    for path in MATRIX_DIR.glob("*.json"):
        shutil.copy(path, folder)  # so that includes resolve beside the probes
    for verdict, cases in (("refused", BAD_MATRICES), ("accepted", GOOD_MATRICES)):
        for what, document in cases.items():
            path = folder / "probe.json"
            path.write_text(json.dumps(document))
            by_harness, message = harness.accepts_matrix(path)
            by_schema = matrix.is_valid(document)
            agree = by_harness == by_schema == (verdict == "accepted")
            checks.expect(agree, f"{verdict} by harness and schema: {what}",
                          f"harness {'accepts' if by_harness else 'refuses'} ({message[-160:]}), "
                          f"schema {'accepts' if by_schema else 'refuses'}")


def check_fuzzer_corpus(checks, harness, matrix_schema, scratch):
    """The schema is never stricter than the harness: each JSON object of the matrix parser's
    fuzzing corpus that the schema refuses, the harness refuses too."""
    matrix = jsonschema.Draft202012Validator(matrix_schema)
    refused = []
    for path in sorted((ROOT / "corpus" / "matrix_parser").iterdir()):
        try:
            document = load_json(path)
        except (ValueError, RecursionError):  # not JSON, or nested past Python's stack
            continue
        if isinstance(document, dict) and not matrix.is_valid(document):
            refused.append(path)

    def harness_verdict(index_and_path):
        index, path = index_and_path
        folder = scratch / f"corpus{index % 4}"
        copy_path = folder / f"input{index}.json"
        shutil.copy(path, copy_path)
        return path, harness.accepts_matrix(copy_path)[0]

    for index in range(4):
        folder = scratch / f"corpus{index}"
        folder.mkdir()
        for path in MATRIX_DIR.glob("*.json"):
            shutil.copy(path, folder)
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        verdicts = list(pool.map(harness_verdict, enumerate(refused)))
    accepted = [path.name for path, by_harness in verdicts if by_harness]
    checks.expect(not accepted,
                  f"the harness refuses all {len(refused)} corpus/matrix_parser inputs the "
                  "schema refuses", f"the harness accepts {accepted[:5]}")


def check_describe(checks, harness, matrix_schema):
    matrix = jsonschema.Draft202012Validator(matrix_schema)
    seeds = sorted((ROOT / "corpus" / "seeds").iterdir())[:1]
    regressions = sorted((ROOT / "corpus" / "regressions").glob("*.json"))[:1]
    for path in [*seeds, *regressions, MATRIX_DIR / "bench_small.json"]:
        done = harness.run(["--describe", str(path)])
        label = f"--describe {path.relative_to(ROOT)}"
        if done.returncode != 0:
            checks.fail(label, f"exit {done.returncode}: {done.stderr[-300:]}")
            continue
        validate(checks, matrix, json.loads(done.stdout), label)


def report_runs(plugins):
    """The runs whose reports are checked: (label, arguments, exit codes allowed)."""
    edges = str(MATRIX_DIR / "edges.json")
    small = str(MATRIX_DIR / "bench_small.json")
    bench = ["--configs", small, "--bench", "--bench-seconds", "0.1", "--bench-rounds", "2"]
    runs = [
        ("plain", ["--configs", edges, "--shard", "1/40", "--stream", "plain.jsonl"], (0,)),
        ("planted drop_last_key_tile",
         ["--configs", edges, "--shard", "1/40", "--plant", "drop_last_key_tile"], (1,)),
        ("planted partial_last_query_tile_unwritten",
         ["--configs", edges, "--case", "edges/0", "--plant",
          "partial_last_query_tile_unwritten"], (1,)),
        ("planted masked_row_nan",
         ["--configs", edges, "--case", "edges/85", "--plant", "masked_row_nan"], (0, 1)),
        ("declared accumulation",
         ["--configs", edges, "--shard", "2/40", "--plant", "pv_fp16_accumulation",
          "--accumulation", "input/32"], (0,)),
        ("known failures",
         ["--configs", edges, "--case", "edges/16[01]", "--plant", "causal_off_by_one",
          "--known-failures", "known.json"], (0,)),
        ("skips", ["--configs", "skips.json"], (0, 1, 2)),
        # No usable GPU (or a build without CUDA): every case skipped as unavailable.
        ("unavailable", ["--configs", "skips.json", "--backend", "cuda"], (0, 1, 2)),
        ("out of memory", ["--configs", "skips.json", "--case", "skips/1", "--memory-limit", "1"],
         (0, 2)),
        ("bench", [*bench, "--case", "bench_small/0", "--case", "bench_small/1"], (0,)),
        ("bench against a baseline",
         [*bench, "--case", "bench_small/1", "--case", "bench_small/2", "--baseline",
          "report_bench.json", "--plant", "slow_extra_pass"], (0, 1)),
        ("bench side by side",
         [*bench, "--case", "bench_small/1", "--plant", "slow_extra_pass", "--against-plant",
          "none"], (0, 1)),
    ]
    if plugins.get("crash"):
        runs.append(("crashed worker", ["--configs", "faults.json", "--kernel-lib",
                                        plugins["crash"]], (1,)))
    if plugins.get("hang"):
        runs.append(("hung worker", ["--configs", "faults.json", "--kernel-lib", plugins["hang"],
                                     "--case-timeout", "1"], (1,)))
    return runs


# Small matrices the report runs read: a skip of each kind, and the shapes faulty plugins act on.
SCRATCH_MATRICES = {
    "skips.json": {"name": "skips", "defaults": {"heads": 1, "seq_len": 65, "head_dim": 32},
                   "cases": [{"head_dim": 192}, {}]},  # unsupported by cpu_flash; runs
    "faults.json": {"name": "faults", "defaults": {"heads": 1, "head_dim": 32},
                    "cases": [{"seq_len": [97, 113]}]},  # tests/plugins/faulty_attention.c: 97
    # Not a matrix: --known-failures' list, of the causal case the known-failures run fails.
    "known.json": {"known_failures": [{"where": {"causal": True}, "reason": "a planted bug",
                                       "issue": "https://example.org/planted"}]},
}


def check_counts(checks, report, label):
    """What the schema cannot say: the summary's counts are the results' tallies."""
    results = report["results"]
    summary = report["summary"]
    tallies = {status: sum(r["status"] == status for r in results)
               for status in ("pass", "fail", "skip", "known")}
    counted = (summary["total"], summary["passed"], summary["failed"], summary["skipped"],
               summary["known"])
    checks.expect(counted == (len(results), tallies["pass"], tallies["fail"], tallies["skip"],
                              tallies["known"]),
                  f"{label}: summary counts are the results'", f"{counted} vs {tallies}")
    if "bench" in report:
        timed = sum("performance" in r for r in results)
        checks.expect(report["bench"]["timed"] == timed, f"{label}: bench.timed counts the timed",
                      f"{report['bench']['timed']} != {timed}")


def check_reports(checks, harness, schemas, scratch, plugins):
    report = jsonschema.Draft202012Validator(schemas["report"])
    case = sub_validator(schemas["report"], "case")
    matrix = jsonschema.Draft202012Validator(schemas["matrix"])
    for name, document in SCRATCH_MATRICES.items():
        (scratch / name).write_text(json.dumps(document))
    reports = {}
    seen = {key: set() for key in ("status", "skip_cause", "fault", "verdict", "output_tail",
                                   "baseline")}
    for label, arguments, codes in report_runs(plugins):
        path = "report_" + re.sub(r"\W+", "_", label) + ".json"  # report_bench.json: a baseline
        done = harness.run([*arguments, "--quiet", "--json", path])
        if done.returncode not in codes:
            checks.fail(f"report of the {label} run", f"fuzz_attention exited {done.returncode} "
                        f"(expected {codes}): {(done.stdout + done.stderr)[-400:]}")
            continue
        document = load_json(scratch / path)
        reports[label] = document
        validate(checks, report, document, f"report of the {label} run ({len(document['results'])}"
                 f" cases, exit {done.returncode})")
        check_counts(checks, document, label)
        configs_ok = all(matrix.is_valid({"name": "x", "cases": [r["config"]]})
                         for r in document["results"])
        checks.expect(configs_ok, f"{label}: each result's config is a valid matrix case entry",
                      "one is not")
        for result in document["results"]:
            seen["status"].add(result["status"])
            seen["skip_cause"].add(result.get("skip_cause"))
            seen["output_tail"].add("output_tail" in result)
            first = (result["correctness"] or {}).get("first_failure")
            seen["fault"].add(first and first["fault"])
            seen["verdict"].add(result.get("performance", {}).get("baseline", {}).get("verdict"))
        if "bench" in document:
            seen["baseline"].add(document["bench"]["baseline"] is not None)
    stream = (scratch / "plain.jsonl").read_text().splitlines() if reports.get("plain") else []
    bad_lines = [n for n, line in enumerate(stream) if not case.is_valid(json.loads(line))]
    checks.expect(stream and not bad_lines, f"{len(stream)} --stream lines validate as cases",
                  f"lines {bad_lines[:5]} do not")
    for key, values in seen.items():
        print(f"      covered {key}: {sorted(str(value) for value in values)}")
    checks.expect({"pass", "fail", "skip", "known"} <= seen["status"]
                  and seen["baseline"] == {True, False},
                  "the reports cover pass, fail, skip, known and --bench with and without "
                  "--baseline",
                  f"statuses {seen['status']}, baselines {seen['baseline']}")
    return reports


def renamed(document, path, new_name):
    """A copy of `document` with the member at `path` (keys and indices) renamed, or removed
    when `new_name` is None."""
    changed = copy.deepcopy(document)
    parent = changed
    for step in path[:-1]:
        parent = parent[step]
    value = parent.pop(path[-1])
    if new_name is not None:
        parent[new_name] = value
    return changed


def check_rejections(checks, schemas, reports):
    report = jsonschema.Draft202012Validator(schemas["report"])
    plain = reports.get("plain")
    if plain is None:
        checks.fail("rejections", "no plain report to break")
        return
    broken = {
        "summary.passed renamed to passes": renamed(plain, ["summary", "passed"], "passes"),
        "results[0].status removed": renamed(plain, ["results", 0, "status"], None),
        "results renamed to cases": renamed(plain, ["results"], "cases"),
        "environment.git_commit removed": renamed(plain, ["environment", "git_commit"], None),
        "config.seq_len_q renamed to seq_q": renamed(plain, ["results", 0, "config", "seq_len_q"],
                                                      "seq_q"),
        "correctness.error_ratio renamed": renamed(plain, ["results", 0, "correctness",
                                                           "error_ratio"], "ratio"),
    }
    wrong = copy.deepcopy(plain)
    wrong["results"][0]["status"] = "passed"
    broken["status passed (not pass)"] = wrong
    wrong = copy.deepcopy(plain)
    wrong["schema_version"] = 2
    broken["schema_version 2"] = wrong
    wrong = copy.deepcopy(plain)
    wrong["summary"]["total"] = "7"
    broken["summary.total as a string"] = wrong
    timed = reports.get("bench against a baseline")
    if timed is not None:
        broken["performance.median_time_ms renamed"] = renamed(
            timed, ["results", 0, "performance", "median_time_ms"], "median_ms")
        broken["bench.baseline.regressions removed"] = renamed(
            timed, ["bench", "baseline", "regressions"], None)
    for what, document in broken.items():
        expect_rejected(checks, report, document, f"report with {what}")


def find_plugins(arguments):
    """The faulty plugins of tests/plugins/faulty_attention.c, given or beside the harness."""
    beside = Path(arguments.harness).resolve().parent / "tests"
    found = {}
    for kind, given, name in (("crash", arguments.crash_plugin, "libplugin_fault_segfault.so"),
                              ("hang", arguments.hang_plugin, "libplugin_fault_hang.so")):
        path = Path(given) if given else beside / name
        if path.is_file():
            found[kind] = str(path.resolve())
        else:
            print(f"      note: no {kind} plugin at {path}: that run's report is not checked")
    return found


def main():
    parser = argparse.ArgumentParser(
        description="Validates the harness's JSON against docs/schema/*.schema.json.")
    parser.add_argument("--harness", default=str(ROOT / "build" / "fuzz_attention"),
                        help="the fuzz_attention binary (default: build/fuzz_attention)")
    parser.add_argument("--crash-plugin", help="libplugin_fault_segfault.so (default: beside "
                        "the harness, in tests/)")
    parser.add_argument("--hang-plugin", help="libplugin_fault_hang.so (default: likewise)")
    arguments = parser.parse_args()
    if not Path(arguments.harness).is_file():
        print(f"check_schemas: no harness at {arguments.harness}")
        return 1
    schemas = {name: load_json(SCHEMA_DIR / f"{name}.schema.json")
               for name in ("report", "matrix")}
    checks = Checks()
    if not check_schemas_themselves(checks, schemas):
        return 1
    plugins = find_plugins(arguments)
    with tempfile.TemporaryDirectory(prefix="check_schemas.") as folder:
        scratch = Path(folder)
        harness = Harness(Path(arguments.harness).resolve(), scratch)
        check_shared_enums(checks, schemas["report"], schemas["matrix"])
        check_names_against_harness(checks, harness, schemas["matrix"], schemas["report"],
                                    scratch)
        check_matrices(checks, harness, schemas["matrix"], scratch)
        check_fuzzer_corpus(checks, harness, schemas["matrix"], scratch)
        check_describe(checks, harness, schemas["matrix"])
        reports = check_reports(checks, harness, schemas, scratch, plugins)
        check_rejections(checks, schemas, reports)
    print(f"check_schemas: {checks.passed} passed, {len(checks.failures)} failed")
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
