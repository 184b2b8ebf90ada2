#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fleet.pprof (tests/fleet/CMakeLists.txt): `loopcanary export --format pprof` read by Go's own
pprof (`go tool pprof -raw` and `-top`, Debian golang-go). Over the fleet: the profile parses;
its sample total equals the samples of the blocks (`report --format json`, samples)
plus those of the deadline-miss records (counted in the JSON Lines here); the samples of each
group's worst block add up to its worst duration in `blocked`; the top function is report's top
culprit; every sample carries every label. Symbolised records (`loopcanary symbolize`) give
functions with file and line; a device capture exports the same way. Exit 77 (skipped) when go
is missing."""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

LABELS = ["block_id", "cause", "event", "loop", "phase", "qualifier"]
WAIT_LABELS = ["holder", "wait"]
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
    return condition


def run(command, env=None):
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)}: exit {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result.stdout, result.stderr


def parse_raw(text):
    """go tool pprof -raw: the sample types, the samples (values, location IDs, labels) and the
    locations (ID -> text)."""
    lines = text.splitlines()
    start = lines.index("Samples:")
    types = lines[start + 1].replace("[dflt]", "").split()
    samples, locations, section = [], {}, "samples"
    for line in lines[start + 2:]:
        if line == "Locations":
            section = "locations"
            continue
        if line == "Mappings":
            break
        if section == "samples":
            m = re.match(r"^\s+([0-9 ]+): ([0-9 ]*)$", line)
            if m:
                samples.append({"values": [int(v) for v in m.group(1).split()],
                                "locations": [int(v) for v in m.group(2).split()], "labels": {}})
            elif line.strip():
                check(samples, f"a label line before any sample: {line!r}")
                labels = dict(re.findall(r"(\w+):\[([^\]]*)\]", line))
                samples[-1]["labels"].update(labels)
        else:
            m = re.match(r"^\s+(\d+): (.*)$", line)
            if m:
                locations[int(m.group(1))] = m.group(2)
    return types, samples, locations


def top_rows(text):
    """go tool pprof -top: the samples shown (after the filters) and the (flat, name) rows."""
    total = int(re.search(r"accounting for (\d+), [0-9.]+% of \d+ total", text).group(1))
    rows = []
    for line in text.splitlines():
        m = re.match(r"^\s+(\d+)\s+[0-9.]+%\s+[0-9.]+%\s+\d+\s+[0-9.]+%\s+(.*)$", line)
        if m:
            rows.append((int(m.group(1)), m.group(2)))
    return total, rows


def records(directory):
    for path in sorted(glob.glob(os.path.join(directory, "*.jsonl"))):
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    yield json.loads(line)


def main():
    parser = argparse.ArgumentParser()
    for name in ("tool", "fleet", "seeds", "capture", "work"):
        parser.add_argument("--" + name, required=True)
    args = parser.parse_args()
    go = shutil.which("go")
    if not go:
        print("SKIP: go not found: `go tool pprof` is Debian golang-go (.ci/run installs it)", file=sys.stderr)
        return 77
    os.makedirs(args.work, exist_ok=True)
    env = dict(os.environ, HOME=args.work, GOCACHE=os.path.join(args.work, "gocache"), GOPROXY="off")

    def pprof(*options):
        return run([go, "tool", "pprof", *options], env)[0]

    profile = os.path.join(args.work, "fleet.pb.gz")
    _, summary = run([args.tool, "export", "--format", "pprof", args.fleet, "-o", profile])
    report = json.loads(run([args.tool, "report", args.fleet, "--format", "json"])[0])
    check(len(report["groups"]) >= 2, f"the fleet has {len(report['groups'])} culprit groups, want several")

    types, samples, locations = parse_raw(pprof("-raw", profile))
    check(types == ["samples/count", "blocked/nanoseconds"], f"sample types {types}")
    check(samples, "no samples")
    waited = 0
    for s in samples:
        labels = s["labels"]
        # A block that waited also names its main wait object and, for a lock, the holder.
        waited += 1 if "wait" in labels else 0
        check(sorted(k for k in labels if k not in WAIT_LABELS) == LABELS and all(labels.values())
              and ("holder" not in labels or "wait" in labels),
              f"sample {s['values']} {s['locations']} has labels {labels}, want every one of {LABELS}"
              f" (and {WAIT_LABELS} where it waited)")
        check(len(s["values"]) == 2 and s["locations"], f"sample {s}")
    check(waited > 0, "no sample carries a wait label: the fleet's radio hangs waited on the bus the radio held")

    misses = [r for r in records(args.fleet) if r.get("phase") == "deadline_miss"]
    # Every sample of each record, by its stack table (samples.taken).
    block_samples = sum(g["samples"] for g in report["groups"])
    miss_samples = sum(r["samples"]["taken"] for r in misses)
    total = sum(s["values"][0] for s in samples)
    check(total == block_samples + miss_samples,
          f"pprof holds {total} samples, the records {block_samples} (blocks) + {miss_samples} (deadline misses)")
    check(miss_samples > 0, "the fleet has no deadline misses with samples: the test misses a phase")
    by_phase = {}
    for s in samples:
        by_phase[s["labels"]["phase"]] = by_phase.get(s["labels"]["phase"], 0) + s["values"][0]
    check(by_phase.get("deadline_miss", 0) == miss_samples,
          f"phase deadline_miss holds {by_phase.get('deadline_miss', 0)} samples, the records {miss_samples}")
    miss_ns = sum(r["duration_us"] * 1000 for r in misses if r["samples"]["taken"])
    got_miss_ns = sum(s["values"][1] for s in samples if s["labels"]["phase"] == "deadline_miss")
    check(got_miss_ns == miss_ns, f"deadline misses: {got_miss_ns} ns blocked, the records' lateness {miss_ns} ns")
    for g in report["groups"]:
        ns = sum(s["values"][1] for s in samples
                 if s["labels"]["block_id"] == g["worst_block"] and s["labels"]["phase"] != "deadline_miss")
        check(ns == round(g["worst_ms"] * 1e6),
              f"group {g['key']}: worst block {g['worst_block']} has {ns} ns blocked, report {g['worst_ms']} ms")

    top_total, rows = top_rows(pprof("-top", profile))
    check(top_total == total, f"-top total {top_total}, -raw {total}")
    check(rows and rows[0][1] == report["groups"][0]["key"],
          f"-top's top function {rows[:1]}, report's top culprit {report['groups'][0]['key']}")
    blocks_total, rows = top_rows(pprof("-top", "-tagignore=deadline_miss", profile))
    check(blocks_total == block_samples, f"-top without deadline misses: {blocks_total} samples, report {block_samples}")
    check(rows and rows[0][1] == report["groups"][0]["key"],
          f"-top without deadline misses: top function {rows[:1]}, report's {report['groups'][0]['key']}")

    # Symbolised records: a version's log through `loopcanary symbolize`, then exported.
    seed = sorted(glob.glob(os.path.join(args.seeds, "*", "*.jsonl")))[0]
    symbolised = os.path.join(args.work, "symbolised.jsonl")
    run([args.tool, "symbolize", seed, "-o", symbolised])
    profile = os.path.join(args.work, "symbolised.pb.gz")
    run([args.tool, "export", "--format", "pprof", symbolised, "-o", profile])
    _, _, locations = parse_raw(pprof("-raw", profile))
    with_lines = [text for text in locations.values() if re.search(r"thermostat::\S+ \S+\.cpp:[1-9][0-9]* ", text)]
    check(with_lines, f"no location of a thermostat:: function with file and line: {locations}")

    # A damaged record: a module offset past its PC, a duration past 2^63 ns. The profile still
    # parses: no mapping for that PC, the blocked value clamped to int64.
    with open(seed, encoding="utf-8") as f:
        record = next(r for r in map(json.loads, f) if r.get("phase") == "final" and r["stacks"] and r.get("linux"))
    for frame in record["linux"]["frames"]:
        frame["offset"] = "0xffffffffffffffff"
    record["duration_us"] = 2**64 - 1
    damaged = os.path.join(args.work, "damaged.jsonl")
    with open(damaged, "w", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
    profile = os.path.join(args.work, "damaged.pb.gz")
    run([args.tool, "export", "--format", "pprof", damaged, "-o", profile])
    _, samples, _ = parse_raw(pprof("-raw", profile))
    blocked = sum(s["values"][1] for s in samples)
    check(blocked == (2**63 - 1) // 1000 * 1000, f"damaged record: {blocked} ns blocked, want the int64 clamp")

    # A device capture (binary packets) exports the same way.
    profile = os.path.join(args.work, "device.pb.gz")
    run([args.tool, "export", "--format", "pprof", args.capture, "-o", profile])
    report = json.loads(run([args.tool, "report", args.capture, "--format", "json"])[0])
    _, samples, _ = parse_raw(pprof("-raw", profile))
    total = sum(s["values"][0] for s in samples)
    check(total == sum(g["samples"] for g in report["groups"]) and total > 0,
          f"device capture: pprof {total} samples, report {sum(g['samples'] for g in report['groups'])}")
    for s in samples:
        check(sorted(s["labels"]) == LABELS, f"device capture: sample labels {s['labels']}")

    if failures:
        print("\n".join(failures), file=sys.stderr)
        print(summary, file=sys.stderr)
        return 1
    print(f"pprof: {len(samples)} device samples; fleet checks passed ({summary.strip().splitlines()[-1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
