# SPDX-License-Identifier: MIT
# The overload scenario in virtual time, figure by figure: runs `loopcanary-sim --scenario
# overload --time virtual --format json` and checks its summary against values computed here
# from the scenario's and the firmware's parameters (sim/demo/scenarios.hpp, thermostat.hpp,
# the handlers in thermostat.cpp). cmake -P with:
#   PROGRAM   the loopcanary-sim executable
#   EMULATOR  optional: what runs a cross build's programs, "|" between its arguments
#             (tests/CMakeLists.txt, LOOPCANARY_TEST_EMULATOR); empty in a native build
cmake_minimum_required(VERSION 3.25)
string(REPLACE "|" ";" EMULATOR "${EMULATOR}")

# ---- The parameters ------------------------------------------------------------------------

set(threshold_us 100000)         # the default --threshold-ms
set(overload_us 8000000)         # kOverloadUs
set(chunk_period_us 5000)        # kOverloadChunkPeriodUs
# The run: 200 ms start-up, the overload, the gap after a scenario (300 ms + threshold), 200 ms
# for the last records (make_plan).
math(EXPR run_us "200000 + ${overload_us} + 300000 + ${threshold_us} + 200000")
math(EXPR chunks "${overload_us} / ${chunk_period_us}")
# Each handler's time, microseconds: CPU (busy, Burn) and waits (wait_us), as the handlers spend
# them; the virtual clock advances by exactly these, so the loop's busy time is their sum.
set(work_sensor_drdy 330)        # I2C read 250 + filter 80
set(work_control_tick 300)       # input 50 + compute 200 + output 50
set(work_relay_check 50)
set(work_display_tick 1200)      # render 1000 + flush 200
set(work_radio_rx 150)
set(work_button 50)
set(work_cloud_sync 400)         # the SPI exchange; the radio holds no bus in this scenario
set(work_ota_chunk 4800)         # store 3000 + hash 1800 (Workload)
set(work_ota_verify 0)           # not dispatched in this scenario
set(work_log_flush 0)
set(work_schedule_update 0)
set(control_period_us 10000)     # kControlPeriodUs, kControlDeadlineUs
set(control_deadline_us 5000)
set(display_period_us 50000)     # kDisplayPeriodUs, kDisplayDeadlineUs
set(display_deadline_us 25000)

# ---- Run -----------------------------------------------------------------------------------

execute_process(COMMAND ${EMULATOR} ${PROGRAM} --scenario overload --time virtual --format json
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE code TIMEOUT 300)
set(failures "")
# expect(<message> <condition...>): a failure when the condition (if() syntax) is false.
macro(expect message)
  if(NOT (${ARGN}))
    string(APPEND failures "${message}\n")
  endif()
endmacro()
if(NOT code EQUAL 0)
  message(FATAL_ERROR "exit status ${code}\n--- stderr ---\n${err}")
endif()

# A JSON number the summary prints with one decimal ("8201.8") in tenths (82018). string(JSON)
# reads it as a double ("88.099999999999994", "8800"): rounded to the nearest tenth here.
function(tenths out_var)
  string(JSON value GET "${out}" ${ARGN})
  if(NOT value MATCHES "^([0-9]+)(\\.([0-9]*))?$")
    message(FATAL_ERROR "${ARGN}: '${value}' is not a number")
  endif()
  set(whole "${CMAKE_MATCH_1}")
  string(SUBSTRING "${CMAKE_MATCH_3}00" 0 2 digits)
  string(SUBSTRING "${digits}" 0 1 first)
  string(SUBSTRING "${digits}" 1 1 second)
  math(EXPR result "${whole} * 10 + ${first}")
  if(second GREATER_EQUAL 5)
    math(EXPR result "${result} + 1")
  endif()
  set(${out_var} "${result}" PARENT_SCOPE)
endfunction()

# ---- Nothing blocks ------------------------------------------------------------------------

string(JSON blocks LENGTH "${out}" blocks)
string(JSON loop_blocks GET "${out}" loop blocks)
string(JSON loop_hangs GET "${out}" loop hangs)
string(JSON in_progress GET "${out}" watchdog in_progress)
string(JSON hangs GET "${out}" watchdog hang)
string(JSON finals GET "${out}" watchdog final)
expect("no dispatch may block: ${blocks} block groups, loop blocks ${loop_blocks}, hangs ${loop_hangs}"
  blocks EQUAL 0 AND loop_blocks EQUAL 0 AND loop_hangs EQUAL 0)
expect("no block record: ${in_progress} in progress, ${hangs} hang, ${finals} final"
  in_progress EQUAL 0 AND hangs EQUAL 0 AND finals EQUAL 0)
tenths(longest loop longest_ms)
math(EXPR chunk_tenths "${work_ota_chunk} / 100")
expect("the longest dispatch is ${longest} tenths of a ms, not one chunk's ${chunk_tenths}" longest EQUAL chunk_tenths)

# ---- Per event: counts, and the busy time they add up to ----------------------------------

string(JSON event_count LENGTH "${out}" events)
math(EXPR last "${event_count} - 1")
set(busy_us 0)
set(deadline_misses_total 0)
foreach(i RANGE ${last})
  string(JSON name GET "${out}" events ${i} event)
  string(JSON dispatched GET "${out}" events ${i} dispatched)
  string(JSON type_blocks GET "${out}" events ${i} blocks)
  string(JSON lost GET "${out}" events ${i} lost)
  string(JSON skips GET "${out}" events ${i} timer_skips)
  string(JSON misses GET "${out}" events ${i} deadline_misses)
  string(JSON missed GET "${out}" events ${i} missed_periods)
  tenths(rate events ${i} rate_per_s)
  if(NOT DEFINED work_${name})
    string(APPEND failures "unexpected event type ${name}\n")
    continue()
  endif()
  math(EXPR busy_us "${busy_us} + ${dispatched} * ${work_${name}}")
  math(EXPR deadline_misses_total "${deadline_misses_total} + ${misses}")
  expect("${name}: ${type_blocks} blocks, ${lost} lost; expected none" type_blocks EQUAL 0 AND lost EQUAL 0)
  # rate = dispatched per second of the run, rounded down to a tenth.
  math(EXPR expected_rate "${dispatched} * 10000000 / ${run_us}")
  expect("${name}: rate ${rate} tenths /s, expected ${expected_rate} (${dispatched} in ${run_us} us)" rate EQUAL expected_rate)
  set(${name}_dispatched ${dispatched})
  set(${name}_skips ${skips})
  set(${name}_misses ${misses})
  set(${name}_missed ${missed})
  set(${name}_rate ${rate})
  foreach(field period_ms deadline_ms p99_ms)
    tenths(${name}_${field} events ${i} ${field})
  endforeach()
endforeach()

# Every chunk the radio delivered was stored: the chunks queue up, none is lost.
expect("ota_chunk: ${ota_chunk_dispatched} dispatched, expected ${chunks}" ota_chunk_dispatched EQUAL chunks)

# The periodic events: as configured; each missed period is one the timer skipped (its message
# was still queued), so dispatched + skipped is every period due before the end of the run.
foreach(name control display)
  set(event ${name}_tick)
  math(EXPR period_tenths "${${name}_period_us} / 100")
  math(EXPR deadline_tenths "${${name}_deadline_us} / 100")
  expect("${event}: period ${${event}_period_ms}, deadline ${${event}_deadline_ms} tenths of a ms; expected ${period_tenths}, ${deadline_tenths}"
    ${event}_period_ms EQUAL period_tenths AND ${event}_deadline_ms EQUAL deadline_tenths)
  math(EXPR due "(${run_us} - 1) / ${${name}_period_us}")
  math(EXPR seen "${${event}_dispatched} + ${${event}_skips}")
  expect("${event}: ${${event}_dispatched} dispatched + ${${event}_skips} skipped = ${seen}, expected ${due} periods" seen EQUAL due)
  expect("${event}: ${${event}_missed} missed periods, but the timer skipped ${${event}_skips}"
    ${event}_missed EQUAL ${event}_skips)
  expect("${event}: no deadline miss" ${event}_misses GREATER 0)
  expect("${event}: p99 lateness ${${event}_p99_ms} tenths of a ms, not above its deadline"
    ${event}_p99_ms GREATER deadline_tenths)
  # Below the rate it is due at (20 /s for the display).
  math(EXPR due_rate "10000000 / ${${name}_period_us}")
  expect("${event}: rate ${${event}_rate} tenths /s, not below its ${due_rate}" ${event}_rate LESS due_rate)
endforeach()

# ---- The loop: window, busy, idle, load, rate ---------------------------------------------

tenths(window loop window_ms)
tenths(busy loop busy_ms)
tenths(idle loop idle_ms)
tenths(load loop load_percent)
tenths(idle_share loop idle_percent)
tenths(loop_rate loop rate_per_s)
string(JSON loop_dispatches GET "${out}" loop dispatches)
math(EXPR run_tenths "${run_us} / 100")
expect("window ${window} tenths of a ms, expected the run: ${run_tenths}" window EQUAL run_tenths)
math(EXPR busy_tenths "${busy_us} / 100")
expect("busy ${busy} tenths of a ms, expected the handlers' sum ${busy_us} us" busy EQUAL busy_tenths)
# The loop is busy or waiting, nothing else, in virtual time.
math(EXPR idle_us "${run_us} - ${busy_us}")
math(EXPR idle_tenths "${idle_us} / 100")
expect("idle ${idle} tenths of a ms, expected the rest of the run: ${idle_us} us" idle EQUAL idle_tenths)
math(EXPR expected_load "${busy_us} * 1000 / ${run_us}")
math(EXPR expected_idle "${idle_us} * 1000 / ${run_us}")
expect("load ${load}, idle ${idle_share} per mille; expected ${expected_load}, ${expected_idle}"
  load EQUAL expected_load AND idle_share EQUAL expected_idle)
# The chunks alone (radio_rx and ota_chunk, each) make 90.0 % of the run: the load is above it.
math(EXPR chunks_load "${chunks} * (${work_radio_rx} + ${work_ota_chunk}) * 1000 / ${run_us}")
expect("load ${load} per mille: not above the chunks' own ${chunks_load} and 900"
  load GREATER chunks_load AND load GREATER 900)
math(EXPR expected_loop_rate "${loop_dispatches} * 10000000 / ${run_us}")
expect("loop rate ${loop_rate} tenths /s, expected ${expected_loop_rate}" loop_rate EQUAL expected_loop_rate)

# Every deadline miss the core counted came to the run_sink as a record.
string(JSON miss_records GET "${out}" watchdog deadline_misses)
string(JSON notes_dropped GET "${out}" watchdog notes_dropped)
expect("${miss_records} deadline-miss records (${notes_dropped} notes dropped) for ${deadline_misses_total} deadline misses"
  miss_records EQUAL deadline_misses_total AND notes_dropped EQUAL 0)

if(failures)
  message(FATAL_ERROR "${PROGRAM} --scenario overload --time virtual --format json\n${failures}--- stdout ---\n${out}")
endif()
message(STATUS "overload: load ${load} per mille, ${chunks} chunks, display ${display_tick_dispatched} frames "
  "(${display_tick_rate} tenths /s), ${display_tick_misses} display deadline misses, ${display_tick_missed} missed periods")
