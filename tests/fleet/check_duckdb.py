#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fleet.duckdb (tests/fleet/CMakeLists.txt): the SQL of docs/fleet.md run on DuckDB
(@duckdb/node-api, pinned in package.json / package-lock.json, installed with `npm ci` into
--modules in the build tree when not there yet) over the fleet gives, group by group, what
`loopcanary report --format json --by ...` gives on the same files: blocks, hangs, worst / p50 /
p95, the cause mix, events, qualifiers, culprits and kept samples. Exit 77 (skipped) when node or
npm is missing or the package cannot be installed (offline with an empty npm cache)."""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

CAUSES = ["running", "waiting", "starved", "unknown"]
HERE = os.path.dirname(os.path.abspath(__file__))


def skip(reason):
    print("SKIP: " + reason, file=sys.stderr)
    sys.exit(77)


def install(modules):
    """The pinned package in `modules`/node_modules (npm ci, from the cache when it can)."""
    with open(os.path.join(HERE, "package.json"), encoding="utf-8") as f:
        want = json.load(f)["dependencies"]["@duckdb/node-api"]
    installed = os.path.join(modules, "node_modules", "@duckdb", "node-api", "package.json")
    if os.path.exists(installed):
        with open(installed, encoding="utf-8") as f:
            if json.load(f)["version"] == want:
                return
    npm = shutil.which("npm")
    if not npm:
        skip("npm not found: @duckdb/node-api cannot be installed (.ci/run installs node and npm)")
    os.makedirs(modules, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(os.path.join(HERE, name), modules)
    result = subprocess.run([npm, "ci", "--prefer-offline", "--no-audit", "--no-fund"], cwd=modules,
                            capture_output=True, text=True)
    if result.returncode != 0:
        skip(f"npm ci of @duckdb/node-api {want} failed (offline without it in the npm cache?):\n{result.stderr[-2000:]}")


def main():
    parser = argparse.ArgumentParser()
    for name in ("tool", "fleet", "doc", "modules"):
        parser.add_argument("--" + name, required=True)
    parser.add_argument("--by", nargs="+", default=["culprit", "qualifier", "event", "cause", "loop"])
    parser.add_argument("--print", action="store_true", help="print the timings (benchmarks)")
    args = parser.parse_args()
    node = shutil.which("node")
    if not node:
        skip("node not found (.ci/run installs nodejs)")
    install(args.modules)
    script = os.path.join(args.modules, "duckdb_report.mjs")  # next to its node_modules
    shutil.copy(os.path.join(HERE, "duckdb_report.mjs"), script)
    result = subprocess.run([node, script, args.doc, args.fleet, *args.by], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"duckdb_report.mjs: exit {result.returncode}\n{result.stderr}")
    sql = json.loads(result.stdout)

    failures = []
    logs = glob.glob(os.path.join(args.fleet, "*.jsonl"))
    units = {os.path.basename(p).split(".")[0] for p in logs}
    for by in args.by:
        report = subprocess.run([args.tool, "report", args.fleet, "--by", by, "--format", "json"],
                                capture_output=True, text=True)
        if report.returncode != 0:
            sys.exit(f"loopcanary report --by {by}: exit {report.returncode}\n{report.stderr}")
        groups = {g["key"]: g for g in json.loads(report.stdout)["groups"]}
        rows = {r["key"]: r for r in sql[by]}
        if set(groups) != set(rows):
            failures.append(f"--by {by}: report's groups {sorted(groups)}, SQL's {sorted(rows)}")
            continue
        for key, g in groups.items():
            r = rows[key]
            got = {"blocks": int(r["blocks"]), "hangs": int(r["hangs"]), "worst_ms": float(r["worst_ms"]),
                   "p50_ms": float(r["p50_ms"]), "p95_ms": float(r["p95_ms"]),
                   "causes": {c: int(r[c]) for c in CAUSES}, "samples": int(r["samples"])}
            want = {"blocks": g["blocks"], "hangs": g["hangs"], "worst_ms": g["worst_ms"], "p50_ms": g["p50_ms"],
                    "p95_ms": g["p95_ms"], "causes": {c: g["causes"][c] for c in CAUSES},
                    "samples": g["samples"]}
            for mix in ("events", "qualifiers", "culprits"):
                if g[mix + "_other"] == 0:  # the report lists them all
                    got[mix] = {e["key"]: int(e["value"]) for e in r[mix]}
                    want[mix] = g[mix]
            if not g["percentiles_exact"]:
                failures.append(f"--by {by} {key}: the report's percentiles are not exact: the fleet is too large")
            if got != want:
                failures.append(f"--by {by} group {key}:\n  report {want}\n  SQL    {got}")
        if by == "qualifier" and len(groups) < 3:
            failures.append(f"the fleet has {len(groups)} firmware versions, want several")
    if len(units) < 3:
        failures.append(f"the fleet has {len(units)} units, want several")
    if failures:
        print("\n".join(failures), file=sys.stderr)
        return 1
    print(f"duckdb: {len(logs)} files of {len(units)} units; every group of --by {' '.join(args.by)} equal; "
          f"seconds {sql['seconds']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
