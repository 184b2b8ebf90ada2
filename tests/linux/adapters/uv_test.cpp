// SPDX-License-Identifier: MIT
// The libuv adapter (loopcanary/linux/uv.hpp): real uv loops run by loop threads of
// a port_linux::Setup, timer and I/O callbacks that compute, a timer callback that waits on a
// lock or never returns until released, and a loop idle in its poll for six thresholds.
#include <uv.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>

#include "adapter_rig.hpp"
#include "loopcanary/linux/uv.hpp"

using namespace lctest;

namespace {

// A uv loop with one timer due in 1 ms whose callback runs `callback`, run to completion by a
// loop thread watched through ScopedUvLoop.
struct TimerLoop {
  uv_loop_t loop{};
  uv_timer_t timer{};
  std::function<void()> callback;
  lc::LoopStats stats;

  explicit TimerLoop(std::function<void()> f) : callback(std::move(f)) {
    EXPECT_EQ(uv_loop_init(&loop), 0);
    EXPECT_EQ(uv_timer_init(&loop, &timer), 0);
    timer.data = this;
    EXPECT_EQ(uv_timer_start(&timer, [](uv_timer_t* t) { static_cast<TimerLoop*>(t->data)->callback(); }, 1, 0), 0);
  }
  ~TimerLoop() { EXPECT_EQ(uv_loop_close(&loop), 0); }

  std::thread run(AdapterRig& rig, bool prefer = false) {
    return std::thread([this, &rig, prefer] {
      if (prefer) prefer_this_thread();
      {
        lx::ScopedUvLoop watch(rig.setup, &loop, "uv");
        ASSERT_TRUE(watch.ok()) << watch.error();
        uv_run(&loop, UV_RUN_DEFAULT);
        uv_close(reinterpret_cast<uv_handle_t*>(&timer), nullptr);
        stats = watch.loop().monitor().stats();
      }  // the watch's last turn closes the timer too
    });
  }
};

}  // namespace

// A timer callback computing 200 ms: a final record of "uv.iteration", cause running, the
// samples on top in the callback's function.
TEST(UvAdapter, ComputingCallbackIsARunningBlock) {
  AdapterRig rig;
  rig.start();
  TimerLoop uv([] { lc_test_spin_for(200'000'000); });
  uv.run(rig, true).join();
  lc::BlockRecord final;
  ASSERT_TRUE(rig.collector.wait_for_phase(lc::Phase::final, final));
  EXPECT_TRUE(event_named(final, "uv.iteration"));
  EXPECT_EQ(final.event, &lx::kUvIteration);
  EXPECT_STREQ(final.loop, "uv");
  EXPECT_GE(us_of(final, final.duration_ticks), 199'000u);
  EXPECT_LT(us_of(final, final.duration_ticks), 5'000'000u);
  expect_running_in(final, "lc_test_spin_for");
}

// An I/O callback (an async handle's, which libuv runs in its poll phase, right after its wait)
// computing 200 ms: a final record too, the callback's function in the samples.
TEST(UvAdapter, ComputingIoCallbackIsARunningBlock) {
  AdapterRig rig;
  rig.start();
  TimerLoop uv([] {});
  uv_async_t wake{};
  ASSERT_EQ(uv_async_init(&uv.loop, &wake,
                          [](uv_async_t* a) {
                            lc_test_spin_for(200'000'000);
                            uv_close(reinterpret_cast<uv_handle_t*>(a), nullptr);
                          }),
            0);
  ASSERT_EQ(uv_async_send(&wake), 0);
  uv.run(rig, true).join();
  lc::BlockRecord final;
  ASSERT_TRUE(rig.collector.wait_for_phase(lc::Phase::final, final));
  EXPECT_EQ(final.event, &lx::kUvIteration);
  EXPECT_GE(us_of(final, final.duration_ticks), 199'000u);
  expect_running_in(final, "lc_test_spin_for");
}

// A timer callback waiting 200 ms on a lock another thread holds: cause waiting.
TEST(UvAdapter, CallbackWaitingOnALockIsAWaitingBlock) {
  check_callback_waiting_on_a_lock_is_a_waiting_block<TimerLoop>(lx::kUvIteration);
}

// A callback that does not return until the test releases it: a hang report while it is stuck,
// its stacks in the waiting function.
TEST(UvAdapter, CallbackThatNeverReturnsIsAHangWithStacks) {
  check_callback_that_never_returns_is_a_hang_with_stacks<TimerLoop>(lx::kUvIteration);
}

// A loop kept alive by an async handle and nothing else to do for six thresholds: it waits in
// its poll, outside every dispatch, so no report at all; its turns were dispatches.
TEST(UvAdapter, IdleLoopIsNeverABlock) {
  AdapterRig rig;
  rig.start();
  std::promise<void> first;
  TimerLoop uv([&] { first.set_value(); });
  uv_async_t wake{};
  ASSERT_EQ(uv_async_init(&uv.loop, &wake, [](uv_async_t* a) { uv_close(reinterpret_cast<uv_handle_t*>(a), nullptr); }), 0);
  std::thread loop = uv.run(rig);
  first.get_future().wait();
  lc_test_sleep_until(monotonic_ns() + 300'000'000);  // the workload: 300 ms of nothing to do
  ASSERT_EQ(uv_async_send(&wake), 0);
  loop.join();
  EXPECT_GE(uv.stats.dispatches, 1u) << "the timer's turn ended before the wait";
  EXPECT_EQ(uv.stats.blocks, 0u);
  EXPECT_TRUE(rig.collector.records().empty()) << rig.collector.records().size() << " reports";
}

// Refusals: no loop, or the thread a loop already; the uv loop then runs unwatched.
TEST(UvAdapter, RefusalsAreReported) {
  AdapterRig rig;
  rig.start();
  std::thread([&] {
    lx::ScopedUvLoop none(rig.setup, nullptr, "uv");
    EXPECT_FALSE(none.ok());
    EXPECT_EQ(none.error(), UV_EINVAL);
  }).join();
  std::thread([&] {
    lx::ScopedLoop first(rig.setup, "busy");
    uv_loop_t loop{};
    ASSERT_EQ(uv_loop_init(&loop), 0);
    {
      lx::ScopedUvLoop second(rig.setup, &loop, "uv");
      EXPECT_FALSE(second.ok());
      EXPECT_EQ(second.error(), UV_EBUSY);
    }
    EXPECT_EQ(uv_run(&loop, UV_RUN_DEFAULT), 0);
    EXPECT_EQ(uv_loop_close(&loop), 0) << "no handle left open";
  }).join();
}
