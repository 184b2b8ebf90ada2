#!/bin/sh
# SPDX-License-Identifier: MIT
# The host tool's benchmark (docs/benchmarks.md, "Host tool"): `loopcanary report` against
# `jq -c .event` over the same JSON Lines corpus, one core each (taskset -c 0): throughput in
# MB/s (10^6 bytes per second of wall time) and peak RSS (GNU time's "Maximum resident set size").
#
#   bench/tool_bench.sh BUILD_DIR [MB] [WORK_DIR]
#   bench/tool_bench.sh BUILD_DIR --packets [RECORDS] [WORK_DIR]
#   bench/tool_bench.sh BUILD_DIR --engines [MB] [WORK_DIR]
#
# --packets: the decode rate of binary captures instead: RECORDS (default 100000) typical device
# blocks (8 samples of 4 PCs, loopcanary_capture_corpus) in three forms: a capture of record
# packets, a capture of evidence packets (--evidence: the records assembled by the host), and the
# JSON Lines `loopcanary decode` writes for them. Checks first that both captures decode to
# RECORDS records, the same JSON lines. Then `loopcanary decode` of each capture and
# `loopcanary report` of each form, one core each: records/s, MB/s of input and peak RSS.
# --engines: the fleet engines (docs/fleet.md) on the same corpus: `loopcanary report` and
# `loopcanary export --format pprof` on one core (MB/s of input, output bytes, peak RSS), and the
# SQL of docs/fleet.md on DuckDB (tests/fleet/duckdb_report.mjs, --by culprit and qualifier) on
# one core and on every core (nproc): the load and each query's seconds, wall time and peak RSS. Needs
# node and @duckdb/node-api: in LOOPCANARY_DUCKDB_MODULES (a directory holding node_modules,
# e.g. build/test/tests/fleet/node after fleet.duckdb ran), else installed there by npm ci from
# tests/fleet/package-lock.json.
# BUILD_DIR: a build of this project with the targets loopcanary-sim, loopcanary and
# loopcanary_tool_corpus (e.g. the bench preset). MB: corpus size in 10^6 bytes (default 1100).
# WORK_DIR: where the corpus goes (default a new directory under /tmp), removed at the end.
# Needs jq, GNU time (/usr/bin/time) and taskset (Debian: jq, time, util-linux).
set -eu

build=${1:?usage: tool_bench.sh BUILD_DIR [MB] [WORK_DIR] | BUILD_DIR --packets [RECORDS] [WORK_DIR] | BUILD_DIR --engines [MB] [WORK_DIR]}
engines=
if [ "${2:-}" = "--engines" ]; then
  engines=yes
  shift
fi
if [ "${2:-}" = "--packets" ]; then
  records=${3:-100000}
  work=${4:-$(mktemp -d /tmp/loopcanary-tool-bench.XXXXXX)}
  tool=$build/sim/tool/loopcanary
  corpus_gen=$build/bench/loopcanary_capture_corpus
  for program in "$tool" "$corpus_gen" /usr/bin/time; do
    [ -x "$program" ] || { echo "tool_bench.sh: $program is missing" >&2; exit 1; }
  done
  command -v taskset >/dev/null || { echo "tool_bench.sh: taskset is missing" >&2; exit 1; }
  mkdir -p "$work"
  trap 'rm -rf "$work"' EXIT INT TERM
  echo "records capture: $("$corpus_gen" "$work/records.lcb" "$records")"
  echo "evidence capture: $("$corpus_gen" --evidence "$work/evidence.lcb" "$records")"
  # The records each capture decodes to: RECORDS of them, the same lines from both.
  "$tool" decode "$work/records.lcb" >"$work/records.jsonl" 2>/dev/null
  "$tool" decode "$work/evidence.lcb" 2>/dev/null | cmp -s - "$work/records.jsonl" || {
    echo "tool_bench.sh: the evidence capture does not decode to the records capture's records" >&2
    exit 1
  }
  decoded=$(wc -l <"$work/records.jsonl")
  [ "$decoded" -eq "$records" ] || { echo "tool_bench.sh: $decoded records decoded, $records written" >&2; exit 1; }
  echo "decoded: $decoded records from each capture, the same JSON lines ($(stat -c %s "$work/records.jsonl") bytes)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
  cat "$work/records.lcb" "$work/evidence.lcb" "$work/records.jsonl" >/dev/null
  for run in decode:records.lcb decode:evidence.lcb report:records.lcb report:evidence.lcb report:records.jsonl; do
    command=${run%%:*}
    input=$work/${run#*:}
    /usr/bin/time -f '%e %M' -o "$work/time" taskset -c 0 "$tool" "$command" "$input" >/dev/null 2>"$work/stderr" || {
      echo "tool_bench.sh: loopcanary $command ${run#*:} failed:" >&2
      tail -n 5 "$work/stderr" >&2
      exit 1
    }
    read -r seconds rss_kb <"$work/time"
    awk -v n="loopcanary $command ${run#*:}" -v r="$records" -v b="$(stat -c %s "$input")" -v s="$seconds" -v m="$rss_kb" \
      'BEGIN { printf "%-36s %10.0f records/s %8.1f MB/s %8.2f s %8.1f MB peak RSS\n", n, r / s, b / 1e6 / s, s, m / 1024 }'
  done
  echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  exit 0
fi
mb=${2:-1100}
work=${3:-$(mktemp -d /tmp/loopcanary-tool-bench.XXXXXX)}
sim=$build/sim/loopcanary-sim
tool=$build/sim/tool/loopcanary
corpus_gen=$build/bench/loopcanary_tool_corpus
for program in "$sim" "$tool" "$corpus_gen" /usr/bin/time; do
  [ -x "$program" ] || { echo "tool_bench.sh: $program is missing" >&2; exit 1; }
done
if [ -z "$engines" ]; then
  command -v jq >/dev/null || { echo "tool_bench.sh: jq is missing (apt-get install jq)" >&2; exit 1; }
fi
command -v taskset >/dev/null || { echo "tool_bench.sh: taskset is missing" >&2; exit 1; }

mkdir -p "$work"
trap 'rm -rf "$work"' EXIT INT TERM
"$sim" --time virtual --log-dir "$work/seed" >/dev/null 2>&1
"$corpus_gen" "$work"/seed/*.jsonl "$work/corpus.jsonl" "$((mb * 1000000))"
bytes=$(stat -c %s "$work/corpus.jsonl")

# Reads the corpus once so both programs start from the page cache.
cat "$work/corpus.jsonl" >/dev/null

measure() {  # NAME COMMAND...: one line "NAME  MB/s  peak RSS"
  name=$1
  shift
  /usr/bin/time -f '%e %M' -o "$work/time" taskset -c 0 "$@" >/dev/null 2>"$work/stderr" || {
    echo "tool_bench.sh: $name failed:" >&2
    tail -n 5 "$work/stderr" >&2
    exit 1
  }
  read -r seconds rss_kb <"$work/time"
  awk -v n="$name" -v b="$bytes" -v s="$seconds" -v r="$rss_kb" \
    'BEGIN { printf "%-28s %8.1f MB/s %8.1f s %8.1f MB peak RSS\n", n, b / 1e6 / s, s, r / 1024 }'
}

echo "corpus: $bytes bytes, $(wc -l <"$work/corpus.jsonl") records"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
if [ -n "$engines" ]; then
  source_dir=$(cd "$(dirname "$0")/.." && pwd)
  modules=${LOOPCANARY_DUCKDB_MODULES:-$work/node}
  if [ ! -d "$modules/node_modules/@duckdb/node-api" ]; then
    mkdir -p "$modules"
    cp "$source_dir/tests/fleet/package.json" "$source_dir/tests/fleet/package-lock.json" "$modules"
    (cd "$modules" && npm ci --prefer-offline --no-audit --no-fund >/dev/null)
  fi
  cp "$source_dir/tests/fleet/duckdb_report.mjs" "$modules/"
  measure "loopcanary report" "$tool" report "$work/corpus.jsonl"
  measure "loopcanary export pprof" "$tool" export --format pprof "$work/corpus.jsonl" -o "$work/corpus.pb.gz"
  echo "pprof: $(stat -c %s "$work/corpus.pb.gz") bytes; $(tail -n 1 "$work/stderr")"
  for cores in 1 "$(nproc)"; do
    pin="taskset -c 0"
    [ "$cores" != 1 ] && pin=
    /usr/bin/time -f '%e %M' -o "$work/time" $pin node "$modules/duckdb_report.mjs" "$source_dir/docs/fleet.md" "$work" \
      culprit qualifier >"$work/duckdb.json" 2>"$work/stderr" || {
      echo "tool_bench.sh: duckdb_report.mjs failed:" >&2
      tail -n 5 "$work/stderr" >&2
      exit 1
    }
    read -r seconds rss_kb <"$work/time"
    echo "duckdb ($cores cores): $seconds s wall, $((rss_kb / 1024)) MB peak RSS, load average $(cut -d' ' -f1 /proc/loadavg);" \
      "$(node -e 'const o = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log(JSON.stringify(o.seconds))' "$work/duckdb.json")"
  done
  exit 0
fi
measure "loopcanary report" "$tool" report "$work/corpus.jsonl"
measure "loopcanary report --by event" "$tool" report --by event "$work/corpus.jsonl"
measure "jq -c .event" jq -c .event "$work/corpus.jsonl"
