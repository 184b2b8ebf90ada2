// SPDX-License-Identifier: MIT
// The GLib adapter (loopcanary/linux/glib.hpp): real GMainContexts iterated by
// loop threads of a port_linux::Setup, timeout callbacks that compute, wait on a lock or never
// return until released, and a context idle in its poll for six thresholds.
#include <glib.h>

#include <atomic>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "adapter_rig.hpp"
#include "loopcanary/linux/glib.hpp"

using namespace lctest;

namespace {

// A context of its own with a GMainLoop and one timeout due in 1 ms whose callback runs
// `callback`; the loop quits after it unless `keep_running`.
struct TimeoutLoop {
  GMainContext* context = g_main_context_new();
  GMainLoop* main_loop = g_main_loop_new(context, FALSE);
  std::function<void()> callback;
  bool keep_running = false;
  lc::LoopStats stats;

  explicit TimeoutLoop(std::function<void()> f, bool keep = false) : callback(std::move(f)), keep_running(keep) {
    GSource* source = g_timeout_source_new(1);
    g_source_set_callback(
        source,
        [](gpointer self) -> gboolean {
          auto* t = static_cast<TimeoutLoop*>(self);
          t->callback();
          if (!t->keep_running) g_main_loop_quit(t->main_loop);
          return G_SOURCE_REMOVE;
        },
        this, nullptr);
    g_source_attach(source, context);
    g_source_unref(source);
  }
  ~TimeoutLoop() {
    g_main_loop_unref(main_loop);
    g_main_context_unref(context);
  }

  std::thread run(AdapterRig& rig, bool prefer = false) {
    return std::thread([this, &rig, prefer] {
      if (prefer) prefer_this_thread();
      lx::ScopedGlibLoop watch(rig.setup, context, "glib");
      ASSERT_TRUE(watch.ok());
      g_main_loop_run(main_loop);
      stats = watch.loop().monitor().stats();
    });
  }
};

}  // namespace

// A timeout callback computing 200 ms: a final record of "glib.iteration", cause running, the
// samples on top in the callback's function.
TEST(GlibAdapter, ComputingCallbackIsARunningBlock) {
  AdapterRig rig;
  rig.start();
  TimeoutLoop glib([] { lc_test_spin_for(200'000'000); });
  glib.run(rig, true).join();
  lc::BlockRecord final;
  ASSERT_TRUE(rig.collector.wait_for_phase(lc::Phase::final, final));
  EXPECT_TRUE(event_named(final, "glib.iteration"));
  EXPECT_EQ(final.event, &lx::kGlibIteration);
  EXPECT_STREQ(final.loop, "glib");
  EXPECT_GE(us_of(final, final.duration_ticks), 199'000u);
  EXPECT_LT(us_of(final, final.duration_ticks), 5'000'000u);
  expect_running_in(final, "lc_test_spin_for");
}

// A timeout callback waiting 200 ms on a lock another thread holds: cause waiting.
TEST(GlibAdapter, CallbackWaitingOnALockIsAWaitingBlock) {
  check_callback_waiting_on_a_lock_is_a_waiting_block<TimeoutLoop>(lx::kGlibIteration);
}

// A callback that does not return until the test releases it: a hang report while it is stuck,
// its stacks in the waiting function.
TEST(GlibAdapter, CallbackThatNeverReturnsIsAHangWithStacks) {
  check_callback_that_never_returns_is_a_hang_with_stacks<TimeoutLoop>(lx::kGlibIteration);
}

// A running GMainLoop with nothing to do for six thresholds: it waits in its poll, outside
// every dispatch, so no report at all; its iterations were dispatches. The test thread quits it.
TEST(GlibAdapter, IdleLoopIsNeverABlock) {
  AdapterRig rig;
  rig.start();
  std::promise<void> first;
  TimeoutLoop glib([&] { first.set_value(); }, true);
  std::thread loop = glib.run(rig);
  first.get_future().wait();
  lc_test_sleep_until(monotonic_ns() + 300'000'000);  // the workload: 300 ms of nothing to do
  g_main_loop_quit(glib.main_loop);
  loop.join();
  EXPECT_GE(glib.stats.dispatches, 1u) << "the timeout's iteration ended before the wait";
  EXPECT_EQ(glib.stats.blocks, 0u);
  EXPECT_TRUE(rig.collector.records().empty()) << rig.collector.records().size() << " reports";
}

// The watch puts the context's poll function back; refused, it leaves it alone.
TEST(GlibAdapter, ThePollFunctionIsRestoredAndARefusalLeavesItAlone) {
  AdapterRig rig;
  rig.start();
  GMainContext* context = g_main_context_new();
  const GPollFunc own = g_main_context_get_poll_func(context);
  std::thread([&] {
    {
      lx::ScopedGlibLoop watch(rig.setup, context, "glib");
      ASSERT_TRUE(watch.ok());
      EXPECT_NE(g_main_context_get_poll_func(context), own);
      EXPECT_TRUE(g_main_context_iteration(context, FALSE) == FALSE) << "nothing ready";
    }
    EXPECT_EQ(g_main_context_get_poll_func(context), own);
    lx::ScopedLoop first(rig.setup, "busy");
    lx::ScopedGlibLoop second(rig.setup, context, "glib");
    EXPECT_FALSE(second.ok());
    EXPECT_EQ(g_main_context_get_poll_func(context), own);
  }).join();
  g_main_context_unref(context);
}
