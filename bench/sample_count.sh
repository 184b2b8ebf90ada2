#!/bin/sh
# SPDX-License-Identifier: MIT
# Instructions of one stack sample of the Linux port, counted in QEMU's execution log
# (docs/benchmarks.md, "Linux port on AArch64"). Builds bench/linux_sample_driver.cpp, linked
# statically, against the Release libraries of BUILD_DIR with that build's compiler (the
# aarch64 preset's cross compiler, or the host's), runs it under user-mode QEMU once per depth
# and prints, per sample, the instructions of the loop thread's side (the signal handler's entry
# until the thread is back in the interrupted code, the sigreturn trampoline included) and of
# the watchdog's side (Platform::capture_stack, from lc_sample_once's entry until its return),
# then the floor of the same run (one clock read: lc_run_clock_reads(2000) -
# lc_run_clock_reads(1000), per read).
#
#   bench/sample_count.sh BUILD_DIR [DEPTH...]        (default depths: 8 16)
#
# The driver's ELF machine picks qemu-aarch64 with aarch64-linux-gnu-nm, or qemu-x86_64 with nm;
# QEMU and NM override them; SAMPLES (default 16) samples per run; KEEP_LOG=1 keeps each log as
# /tmp/loopcanary-sample-count-depthN.log. Every translated block's instructions (-d in_asm)
# times its runs (-d exec, with nochain so each run is logged), by QEMU's CPU index (one per
# thread). lc_deep, where the loop thread spins between samples, is left out of the log
# (-dfilter). What QEMU does for the kernel (signal delivery, system calls) is no guest
# instruction and is not counted.
set -eu

if [ $# -lt 1 ] || [ ! -f "$1/core/libloopcanary.a" ] || [ ! -f "$1/port/libloopcanary_port_linux.a" ]; then
  echo "usage: $0 BUILD_DIR [DEPTH...]  (BUILD_DIR: a Release build with the Linux port)" >&2
  exit 2
fi
build=$1
shift
[ $# -gt 0 ] || set -- 8 16
samples=${SAMPLES:-16}
src=$(cd "$(dirname "$0")/.." && pwd)
cxx=$(sed -n 's/^set(CMAKE_CXX_COMPILER "\(.*\)")$/\1/p' "$build"/CMakeFiles/*/CMakeCXXCompiler.cmake | head -n 1)
[ -n "$cxx" ] || { echo "$0: no C++ compiler found in $build/CMakeFiles" >&2; exit 2; }

driver=$(mktemp /tmp/loopcanary-sample-driver-XXXXXX)
log=$(mktemp /tmp/loopcanary-sample-count-XXXXXX)
trap 'rm -f "$driver" "$log"' EXIT
"$cxx" -std=c++17 -O3 -DNDEBUG -fno-exceptions -fno-rtti -fno-omit-frame-pointer -I"$src/core/include" \
  -I"$src/port/linux/include" -I"$build/generated/include" -static "$src/bench/linux_sample_driver.cpp" \
  "$build/port/libloopcanary_port_linux.a" "$build/core/libloopcanary.a" -pthread -o "$driver"
echo "$("$cxx" --version | head -n 1), -O3, static; $(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt") libraries"

case $(LC_ALL=C readelf -h "$driver" | sed -n 's/^ *Machine: *//p') in
  AArch64) qemu=${QEMU:-qemu-aarch64}; nm=${NM:-aarch64-linux-gnu-nm}; clock=cntvct ;;
  *X86-64) qemu=${QEMU:-qemu-x86_64}; nm=${NM:-nm}; clock=tsc ;;
  *) echo "$0: $driver is neither AArch64 nor x86-64" >&2; exit 2 ;;
esac

# "address size" of the function whose symbol matches the extended regular expression $1.
symbol() {
  "$nm" -S "$driver" | awk -v re="$1" '$3 ~ /^[tT]$/ && $4 ~ re { print $1, $2; found = 1; exit }
                                       END { if (!found) exit 1 }' ||
    { echo "$0: no symbol matching $1 in $driver (a static build of the sample driver?)" >&2; exit 1; }
}
handler=$(symbol '^_ZN10loopcanary10port_linux6detail.*sample_handler')
deep=$(symbol '^lc_deep$')
body=$(symbol '^lc_loop_body$')
once=$(symbol '^lc_sample_once$')
runs=$(symbol '^lc_run_samples$')
reads=$(symbol '^lc_run_clock_reads$')
floor=$(symbol '^lc_run_floor$')

# lc_deep's range is left out of the log: the log holds [0, lc_deep) and [its end, top).
# shellcheck disable=SC2086
set -- $deep "$@"
filter=$(printf '0..0x%x,0x%x..0xffffffffffffffff' $((0x$1 - 1)) $((0x$1 + 0x$2)))
shift 2

for depth in "$@"; do
  LOOPCANARY_CLOCK=$clock "$qemu" -d in_asm,exec,nochain -dfilter "$filter" -D "$log" "$driver" "$depth" "$samples"
  awk -v handler="$handler" -v body="$body" -v once="$once" -v runs="$runs" -v reads="$reads" \
      -v floor="$floor" -v depth="$depth" '
    function hex(h,  i, n) {
      n = 0; h = tolower(h); sub(/^0x/, "", h); sub(/:$/, "", h)
      for (i = 1; i <= length(h); ++i) n = n * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
      return n
    }
    function range(spec, which,  p) { split(spec, p, " "); lo[which] = hex(p[1]); hi[which] = hex(p[1]) + hex(p[2]) }
    function inside(pc, which) { return pc >= lo[which] && pc < hi[which] }
    # The region open on `cpu` ends; its instructions are added to list `kind`.
    function close_region(cpu) {
      if (!(cpu in open)) return
      k = open[cpu]; count[k] += 1; list[k, count[k]] = acc[cpu]; delete open[cpu]
    }
    function median(k,  i, j, t, v, n) {
      n = count[k]
      for (i = 1; i <= n; ++i) v[i] = list[k, i]
      for (i = 2; i <= n; ++i) for (j = i; j > 1 && v[j - 1] > v[j]; --j) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
      return v[int((n + 1) / 2)]
    }
    function spread(k,  i, a, b) {
      a = list[k, 1]; b = a
      for (i = 2; i <= count[k]; ++i) { if (list[k, i] < a) a = list[k, i]; if (list[k, i] > b) b = list[k, i] }
      return a ".." b
    }
    BEGIN {
      range(handler, "handler"); range(body, "body"); range(once, "once"); range(runs, "runs")
      range(reads, "reads"); range(floor, "floor")
    }
    /^IN:/ { block = 1; start = -1; next }
    block && /^0x[0-9a-f]+:/ { if (start < 0) { start = hex($1); n[start] = 0 } n[start]++; next }
    /^$/ || /^-+$/ { block = 0 }
    /^Trace [0-9]+:/ {
      cpu = $2; sub(/:$/, "", cpu)
      split($4, f, "/"); pc = hex(f[2])
      if (cpu in open) {
        k = open[cpu]
        if ((k == "loop" && (pc == lo["handler"] || inside(pc, "body"))) ||
            (k == "watchdog" && inside(pc, "runs")) || (k == "floor" && inside(pc, "floor"))) close_region(cpu)
      }
      if (pc == lo["handler"]) open[cpu] = "loop"
      else if (pc == lo["once"]) open[cpu] = "watchdog"
      else if (pc == lo["reads"]) open[cpu] = "floor"
      if (cpu in open) {
        if (!(pc in n)) { print "no translation logged for 0x" f[2] > "/dev/stderr"; bad = 1 }
        acc[cpu] = (pc == lo["handler"] || pc == lo["once"] || pc == lo["reads"]) ? n[pc] : acc[cpu] + n[pc]
      }
    }
    END {
      for (cpu in open) close_region(cpu)
      if (bad || count["floor"] != 2 || count["loop"] < 1 || count["watchdog"] != count["loop"]) {
        printf "depth %d: unexpected log (%d loop sides, %d watchdog sides, %d floor runs)\n",
               depth, count["loop"], count["watchdog"], count["floor"] > "/dev/stderr"
        exit 1
      }
      read = (list["floor", 2] - list["floor", 1]) / 1000
      printf "depth %d, %d samples: loop thread %s (median %d), watchdog %s (median %d); one clock read %g\n",
             depth, count["loop"], spread("loop"), median("loop"), spread("watchdog"), median("watchdog"), read
      printf "  per sample, loop thread:"; for (i = 1; i <= count["loop"]; ++i) printf " %d", list["loop", i]; printf "\n"
      printf "  per sample, watchdog:   "; for (i = 1; i <= count["watchdog"]; ++i) printf " %d", list["watchdog", i]; printf "\n"
      printf "  median / one clock read: loop thread %.0f x, watchdog %.0f x\n", median("loop") / read, median("watchdog") / read
    }' "$log"
  if [ "${KEEP_LOG:-0}" = 1 ]; then cp "$log" "/tmp/loopcanary-sample-count-depth$depth.log"; fi
done
