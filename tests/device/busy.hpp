// SPDX-License-Identifier: MIT
// Busy work of the device tests' handlers: plain arithmetic in one function, so that every PC
// sample of a handler that computes lands in busy_compute (the host check names it).
#pragma once

#include <cstdint>

#include "loopcanary/time.hpp"

/// `iterations` rounds of integer (and, on FPU builds, floating-point) arithmetic, no calls.
/// Returns a value that depends on every round, so none is optimised away.
std::uint32_t busy_compute(std::uint32_t iterations);

namespace loopcanary::device_test {

/// Computes in busy_compute(), `chunk` iterations at a time, until the port clock
/// (device_port::Clock, device_port.hpp) reads at least `length` ticks after `begin`: the few
/// clock reads are here, nearly all the time is in busy_compute. Timed by the clock rather than
/// by an iteration count, so it holds when host load upsets QEMU's timing in a real-time run.
/// Loop context, after the port's init().
void spend_ticks(tick_t begin, tick_t length, std::uint32_t chunk);

}  // namespace loopcanary::device_test
