#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fleet.schema (tests/fleet/CMakeLists.txt): every JSON line loopcanary writes validates against
its JSON Schema in docs/schema/ (draft 2020-12, Debian python3-jsonschema): the demo's block and
health records in every scenario `loopcanary-sim --help` lists (virtual time), the tool's
`decode` (a device capture with a record from the previous boot) and `symbolize` lines, the
tool's fixture of blocks that waited, and `report --format json` under every --by and on those
blocks. Every phase occurs. And the schemas are strict enough to catch a breaking change: a
record with a field renamed, retyped or dropped, an unknown field or an unknown phase fails. Exit 77 (skipped) when python3-jsonschema is missing."""
import argparse
import copy
import glob
import json
import os
import re
import shutil
import subprocess
import sys

try:
    import jsonschema
except ImportError:
    print("SKIP: python3-jsonschema not installed (.ci/run installs it)", file=sys.stderr)
    sys.exit(77)

failures = []


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)}: exit {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result.stdout


def main():
    parser = argparse.ArgumentParser()
    for name in ("sim", "tool", "schemas", "capture", "work"):
        parser.add_argument("--" + name, required=True)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)  # a fresh run: no record of an earlier one
    os.makedirs(args.work)
    validators = {}
    for name in ("block-record", "health-record", "report"):
        with open(os.path.join(args.schemas, name + ".schema.json"), encoding="utf-8") as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(schema)
        validators[name] = jsonschema.Draft202012Validator(schema)

    def validate(kind, record, where):
        errors = sorted(validators[kind].iter_errors(record), key=lambda e: list(e.path))
        for e in errors[:3]:
            failures.append(f"{where}: {kind}: {'/'.join(map(str, e.path))}: {e.message}")
        return not errors

    def validate_line(line, where):
        record = json.loads(line)
        kind = "health-record" if record.get("kind") == "health" else "block-record"
        validate(kind, record, where)
        return record

    # The scenarios, as the demo's --help lists them.
    help_text = run([args.sim, "--help"])
    section = help_text[help_text.index("--scenario"):help_text.index("--threshold-ms")]
    scenarios = [s for s in re.findall(r"^\s{20,}([a-z]+) +\S", section, re.M) if s != "all"]
    if len(scenarios) < 6:
        sys.exit(f"found scenarios {scenarios} in --help")
    counts, phases, samples = {}, set(), None
    for scenario in scenarios:
        directory = os.path.join(args.work, scenario)
        run([args.sim, "--time", "virtual", "--scenario", scenario, "--log-dir", directory])
        n = 0
        for path in sorted(glob.glob(os.path.join(directory, "*.jsonl"))):
            with open(path, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    record = validate_line(line, f"{scenario}: {os.path.basename(path)}:{number}")
                    phases.add(record.get("phase", record.get("kind")))
                    if samples is None and record.get("phase") == "final" and record["stacks"]:
                        samples = record
                    n += 1
        counts[scenario] = n
        if n == 0:
            failures.append(f"scenario {scenario}: no record written")
    want = {"in_progress", "hang", "final", "deadline_miss", "health"}
    if not want <= phases:
        failures.append(f"the scenarios wrote {sorted(phases)}, not every one of {sorted(want)}")

    # The tool's lines: decode (a previous boot), symbolize (file and line), report (every --by).
    for number, line in enumerate(run([args.tool, "decode", args.capture]).splitlines(), 1):
        validate_line(line, f"decode:{number}")
    logs = os.path.join(args.work, scenarios[1])
    for number, line in enumerate(run([args.tool, "symbolize", logs]).splitlines(), 1):
        validate_line(line, f"symbolize:{number}")
    every = [os.path.join(args.work, scenario) for scenario in scenarios]
    for by in ("culprit", "event", "qualifier", "cause", "loop"):
        validate("report", json.loads(run([args.tool, "report", *every, "--by", by, "--format", "json"])),
                 f"report --by {by}")
    # Blocks that waited (the tool's fixture of the core's JSON lines): the report's waits section.
    waits = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tool", "fixtures", "waits.jsonl")
    for number, line in enumerate(open(waits, encoding="utf-8"), 1):
        validate_line(line, f"waits.jsonl:{number}")
    report = json.loads(run([args.tool, "report", waits, "--format", "json"]))
    if not report["waits"]["objects"]:
        failures.append("report of waits.jsonl: no wait object")
    validate("report", report, "report of waits.jsonl")

    # Breaking changes the schemas must catch.
    if samples is None:
        failures.append("no final record with samples to change")
    else:
        def renamed(r):
            r["duration_ms"] = r.pop("duration_us")
        def retyped(r):
            r["dispatch"] = str(r["dispatch"])
        def nested_retyped(r):
            r["stacks"][0]["pcs"] = [int(pc, 16) for pc in r["stacks"][0]["pcs"]] or [1]
        def dropped(r):
            del r["cause"]
        def added(r):
            r["severity"] = "high"
        def bad_phase(r):
            r["phase"] = "done"
        def version(r):
            r["format_version"] += 1
        for change in (renamed, retyped, nested_retyped, dropped, added, bad_phase, version):
            record = copy.deepcopy(samples)
            change(record)
            if validators["block-record"].is_valid(record):
                failures.append(f"a record changed by {change.__name__} still validates: the schema is too loose")

    if failures:
        print("\n".join(failures[:40]), file=sys.stderr)
        return 1
    print(f"schemas: records per scenario {counts}; phases {sorted(phases)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
