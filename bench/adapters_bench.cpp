// SPDX-License-Identifier: MIT
// What each adapter (port/linux/adapters) adds per handler over the bare begin/end pair, in one
// run (docs/benchmarks.md, "Adapters"):
//
//   loopcanary_adapters_bench --benchmark_repetitions=10 --benchmark_enable_random_interleaving=true
//                             --benchmark_report_aggregates_only=true
//
//   BM_ClockRead           one read of the port's clock (Clock::now()): the floor of any stamp
//   BM_BareBeginEnd        begin() + end() on the loop's PortMonitor: the adapters' floor
//   BM_AsioHooks           Asio's hooks for one handler as the adapter defines them: the
//                          operation named at its start (asio_event, cache hit), the completion's
//                          invocation_begin/end (this_thread_loop(), begin, end)
//   BM_AsioPostRun/0, /1   asio::post of an empty handler and io_context::run_one, without a loop
//                          on the thread (/0: the hooks find none) and with one (/1); this file is
//                          built with the adapter, so Asio without it is not in this program
//   BM_UvTurn/0, /1        one uv_run(UV_RUN_NOWAIT) turn running one idle callback, the loop
//                          bare (/0) and watched by a ScopedUvLoop (/1)
//   BM_GlibIteration/0, /1 one g_main_context_iteration(FALSE) dispatching one idle source, the
//                          context bare (/0) and watched by a ScopedGlibLoop (/1)
//
// The adapter's cost per handler: BM_AsioHooks, and the differences /1 - /0.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "loopcanary/linux/setup.hpp"
#include "loopcanary/loopcanary.hpp"

#if LOOPCANARY_BENCH_ASIO
#include <asio.hpp>

#include "loopcanary/linux/asio.hpp"
#endif
#if LOOPCANARY_BENCH_UV
#include "loopcanary/linux/uv.hpp"
#endif
#if LOOPCANARY_BENCH_GLIB
#include "loopcanary/linux/glib.hpp"
#endif

namespace lc = loopcanary;
namespace lx = loopcanary::port_linux;

namespace {

constexpr lc::Event kBenchEvent{"bench"};

// One Setup for the program: its watchdog thread polls the loops as in a real process.
lx::Setup& canary() {
  static lx::Setup setup;
  if (!setup.started()) {
    lx::SetupConfig config;
    config.environment = false;
    config.stderr_reports = false;
    setup.start(config);
  }
  return setup;
}

void label(benchmark::State& state) {
  state.SetLabel(std::string(lx::clock_info().name) + " @ " + std::to_string(lx::clock_info().tick_hz) + " Hz");
}

void BM_ClockRead(benchmark::State& state) {
  label(state);
  for (auto _ : state) {
    lc::tick_t t = lx::Clock::now();
    benchmark::DoNotOptimize(t);
  }
}
BENCHMARK(BM_ClockRead);

void BM_BareBeginEnd(benchmark::State& state) {
  label(state);
  lx::ScopedLoop loop(canary(), "bench");
  if (!loop.ok()) return state.SkipWithError("no loop");
  for (auto _ : state) {
    loop.monitor().begin(kBenchEvent);
    loop.monitor().end();
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_BareBeginEnd);

#if LOOPCANARY_BENCH_ASIO
void BM_AsioHooks(benchmark::State& state) {
  struct Handler : lx::AsioTrackedHandler {};
  lx::ScopedLoop loop(canary(), "bench");
  if (!loop.ok()) return state.SkipWithError("no loop");
  asio::io_context io;
  Handler handler;
  const std::uint32_t before = loop.monitor().stats().dispatches;  // a reused loop keeps its counts
  for (auto _ : state) {
    lx::asio_creation(io, handler, "io_context", nullptr, 0, "post");
    lx::AsioCompletion completion(handler);
    completion.invocation_begin();
    completion.invocation_end();
    benchmark::ClobberMemory();
  }
  if (loop.monitor().stats().dispatches - before != static_cast<std::uint32_t>(state.iterations())) {
    state.SkipWithError("dispatch count does not match the iterations");
  }
}
BENCHMARK(BM_AsioHooks);

void BM_AsioPostRun(benchmark::State& state) {
  const bool watched = state.range(0) != 0;
  lx::Setup unused;  // not started: a loop of it is refused, and this_thread_loop() stays null
  lx::ScopedLoop loop(watched ? canary() : unused, "bench");
  if (loop.ok() != watched) return state.SkipWithError("loop");
  asio::io_context io;
  const auto work = asio::make_work_guard(io);  // run_one() never finds the context out of work
  std::int64_t ran = 0;
  const std::uint32_t before = loop.monitor().stats().dispatches;
  for (auto _ : state) {
    asio::post(io, [&ran] { ++ran; });
    io.run_one();
  }
  if (ran != state.iterations()) state.SkipWithError("handler count does not match the iterations");
  if (watched && loop.monitor().stats().dispatches - before != static_cast<std::uint32_t>(state.iterations())) {
    state.SkipWithError("dispatch count does not match the iterations");
  }
}
BENCHMARK(BM_AsioPostRun)->Arg(0)->Arg(1);
#endif

#if LOOPCANARY_BENCH_UV
void BM_UvTurn(benchmark::State& state) {
  uv_loop_t uv;
  uv_loop_init(&uv);
  uv_idle_t idle;
  std::int64_t ran = 0;
  uv_idle_init(&uv, &idle);
  idle.data = &ran;
  uv_idle_start(&idle, [](uv_idle_t* h) { ++*static_cast<std::int64_t*>(h->data); });
  {
    lx::Setup unused;
    lx::ScopedUvLoop watch(state.range(0) != 0 ? canary() : unused, state.range(0) != 0 ? &uv : nullptr, "bench");
    const std::uint32_t before = watch.loop().monitor().stats().dispatches;
    for (auto _ : state) uv_run(&uv, UV_RUN_NOWAIT);
    // Each turn ends the dispatch its previous turn (or the watch) began.
    if (state.range(0) != 0 &&
        watch.loop().monitor().stats().dispatches - before != static_cast<std::uint32_t>(state.iterations())) {
      state.SkipWithError("dispatch count does not match the turns");
    }
  }
  if (ran < state.iterations()) state.SkipWithError("callback count does not match the turns");
  uv_close(reinterpret_cast<uv_handle_t*>(&idle), nullptr);
  uv_run(&uv, UV_RUN_DEFAULT);
  uv_loop_close(&uv);
}
BENCHMARK(BM_UvTurn)->Arg(0)->Arg(1);
#endif

#if LOOPCANARY_BENCH_GLIB
void BM_GlibIteration(benchmark::State& state) {
  GMainContext* context = g_main_context_new();
  std::int64_t ran = 0;
  GSource* idle = g_idle_source_new();
  g_source_set_callback(
      idle,
      [](gpointer count) -> gboolean {
        ++*static_cast<std::int64_t*>(count);
        return G_SOURCE_CONTINUE;
      },
      &ran, nullptr);
  g_source_attach(idle, context);
  g_source_unref(idle);
  g_main_context_acquire(context);
  {
    lx::Setup unused;
    lx::ScopedGlibLoop watch(state.range(0) != 0 ? canary() : unused, context, "bench");
    if (watch.ok() != (state.range(0) != 0)) return state.SkipWithError("watch");
    const std::uint32_t before = watch.loop().monitor().stats().dispatches;
    for (auto _ : state) g_main_context_iteration(context, FALSE);
    if (watch.ok() && watch.loop().monitor().stats().dispatches - before != static_cast<std::uint32_t>(state.iterations())) {
      state.SkipWithError("dispatch count does not match the iterations");
    }
  }
  if (ran != state.iterations()) state.SkipWithError("callback count does not match the iterations");
  g_main_context_release(context);
  g_main_context_unref(context);
}
BENCHMARK(BM_GlibIteration)->Arg(0)->Arg(1);
#endif

}  // namespace

BENCHMARK_MAIN();
