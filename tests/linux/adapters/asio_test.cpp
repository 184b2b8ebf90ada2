// SPDX-License-Identifier: MIT
// The Asio adapter (loopcanary/linux/asio.hpp), compiled into this file through
// ASIO_CUSTOM_HANDLER_TRACKING: real io_contexts run by loop threads of a port_linux::Setup,
// handlers that compute, wait on a lock or never return until released, an idle loop, and one
// io_context run by several threads. The handlers are plain Asio handlers: none of them names
// loopcanary, but for the one that opens a scope of its own.
#include <asio.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "adapter_rig.hpp"
#include "loopcanary/linux/asio.hpp"

using namespace lctest;

namespace {

using Work = asio::executor_work_guard<asio::io_context::executor_type>;

// One loop thread running `io` until it runs out of work, `prefer` lifting it first.
std::thread run_loop(AdapterRig& rig, asio::io_context& io, const char* name, bool prefer = false) {
  return std::thread([&rig, &io, name, prefer] {
    if (prefer) prefer_this_thread();
    lx::ScopedLoop loop(rig.setup, name);
    ASSERT_TRUE(loop.ok());
    io.run();
  });
}

// An io_context with one posted handler that runs `handler`, run by a loop thread "asio" (the
// adapted-loop interface of adapter_rig.hpp's scenarios).
struct PostLoop {
  asio::io_context io;
  explicit PostLoop(std::function<void()> handler) { asio::post(io, std::move(handler)); }
  std::thread run(AdapterRig& rig) { return run_loop(rig, io, "asio"); }
};

}  // namespace

TEST(AsioAdapter, OperationsAreNamedByAsiosNames) {
  EXPECT_STREQ(lx::asio_event("io_context", "post").name, "io_context.post");
  EXPECT_STREQ(lx::asio_event("deadline_timer", "async_wait").name, "deadline_timer.async_wait");
  EXPECT_STREQ(lx::asio_event("socket", "async_receive(null_buffers)").name, "socket.async_receive(null_buffers)");
  // A copy of the text names the same Event as the literal (the cache keys on addresses only
  // to skip the look-up).
  const std::string object = "socket";
  const std::string op = "async_send";
  EXPECT_EQ(&lx::asio_event(object.c_str(), op.c_str()), &lx::asio_event("socket", "async_send"));
  EXPECT_EQ(&lx::asio_event("io_context", "post"), &lx::asio_event("io_context", "post"));
  // Unknown pairs and nulls: the one fallback.
  EXPECT_EQ(&lx::asio_event("io_context", "async_frobnicate"), &lx::kAsioHandler);
  EXPECT_EQ(&lx::asio_event("post", "io_context"), &lx::kAsioHandler);
  EXPECT_EQ(&lx::asio_event(nullptr, "post"), &lx::kAsioHandler);
  EXPECT_EQ(&lx::asio_event("io_context", nullptr), &lx::kAsioHandler);
  EXPECT_STREQ(lx::kAsioHandler.name, "asio.handler");
}

// A posted handler computing 200 ms: a final record of "io_context.execute" (asio::post on an
// executor is Asio's execute), cause running, the samples on top in the handler's function,
// under the scope the handler opened.
TEST(AsioAdapter, ComputingHandlerIsARunningBlockNamedByItsOperation) {
  AdapterRig rig;
  rig.start();
  asio::io_context io;
  asio::post(io, [] {
    LOOPCANARY_SCOPE(*lx::this_thread_loop(), "asio-test-scope");
    lc_test_spin_for(200'000'000);
  });
  std::thread loop = run_loop(rig, io, "asio", true);
  loop.join();
  lc::BlockRecord final;
  ASSERT_TRUE(rig.collector.wait_for_phase(lc::Phase::final, final));
  EXPECT_TRUE(event_named(final, "io_context.execute")) << (final.event ? final.event->name : "null");
  EXPECT_STREQ(final.loop, "asio");
  EXPECT_GE(us_of(final, final.duration_ticks), 199'000u);
  EXPECT_LT(us_of(final, final.duration_ticks), 5'000'000u);
  bool scoped = false;
  for (std::uint8_t i = 0; i < final.sample_count; ++i) {
    const lc::Sample& s = final.samples[i];
    if (s.scope_count > 0 && std::strcmp(reinterpret_cast<const char*>(s.frames[0]), "asio-test-scope") == 0) {
      scoped = true;
    }
  }
  if (!kThreadSanitizer) {
    EXPECT_TRUE(scoped) << "the handler's LOOPCANARY_SCOPE is in the samples";
  }
  expect_running_in(final, "lc_test_spin_for");
}

// A timer's handler waiting 200 ms on a lock another thread holds: "deadline_timer.async_wait",
// cause waiting.
TEST(AsioAdapter, HandlerWaitingOnALockIsAWaitingBlock) {
  AdapterRig rig;
  rig.start();
  asio::io_context io;
  std::mutex mutex;
  mutex.lock();
  std::promise<void> entered;
  asio::steady_timer timer(io, std::chrono::milliseconds(1));
  timer.async_wait([&](const asio::error_code&) {
    entered.set_value();
    lc_test_wait_on_lock(mutex);
  });
  std::thread loop = run_loop(rig, io, "asio");
  entered.get_future().wait();
  lc_test_sleep_until(monotonic_ns() + 200'000'000);  // the workload: hold the lock 200 ms
  mutex.unlock();
  loop.join();
  lc::BlockRecord final;
  ASSERT_TRUE(rig.collector.wait_for_phase(lc::Phase::final, final));
  EXPECT_TRUE(event_named(final, "deadline_timer.async_wait")) << (final.event ? final.event->name : "null");
  EXPECT_GE(us_of(final, final.duration_ticks), 190'000u);
  ASSERT_TRUE(final.has_thread_cpu);
  EXPECT_LT(final.thread_cpu_us * 5, us_of(final, final.window_ticks)) << evidence(final);
  expect_names_this_thread_as_holder(final, mutex);
  expect_waiting(final);
}

// A handler that does not return until the test releases it: a hang report while it is stuck,
// its stacks in the waiting function; then the final record.
TEST(AsioAdapter, HandlerThatNeverReturnsIsAHangWithStacks) {
  check_callback_that_never_returns_is_a_hang_with_stacks<PostLoop>(lx::asio_event("io_context", "execute"));
}

// An io_context with work but nothing to run for six thresholds: its wait in epoll is outside
// every dispatch, so no report at all; the handlers before and after the wait were dispatches.
TEST(AsioAdapter, IdleLoopIsNeverABlock) {
  AdapterRig rig;
  rig.start();
  asio::io_context io;
  Work work(io.get_executor());
  std::promise<lx::PortMonitor*> first;
  std::promise<void> second;
  lc::LoopStats stats;
  std::thread loop([&] {
    lx::ScopedLoop scoped(rig.setup, "asio");
    ASSERT_TRUE(scoped.ok());
    io.run();
    stats = scoped.monitor().stats();
  });
  asio::post(io, [&] { first.set_value(lx::this_thread_loop()); });
  EXPECT_NE(first.get_future().get(), nullptr) << "the handler ran on the loop";
  lc_test_sleep_until(monotonic_ns() + 300'000'000);  // the workload: 300 ms of nothing to do
  asio::post(io, [&] { second.set_value(); });
  second.get_future().wait();
  work.reset();
  loop.join();
  EXPECT_EQ(stats.dispatches, 2u);
  EXPECT_EQ(stats.blocks, 0u);
  EXPECT_TRUE(rig.collector.records().empty()) << rig.collector.records().size() << " reports";
}

// Three threads running one io_context, each a loop of its own: three handlers that meet (so
// each runs on a different thread) then compute 150 ms give three final records, one per loop.
TEST(AsioAdapter, SeveralThreadsRunningOneContextAreLoopsOfTheirOwn) {
  constexpr int kThreads = 3;
  AdapterRig rig;
  rig.start();
  asio::io_context io;
  Work work(io.get_executor());
  std::mutex mutex;
  std::condition_variable met;
  int arrived = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.push_back(run_loop(rig, io, "asio"));
  for (int i = 0; i < kThreads; ++i) {
    asio::post(io, [&] {
      {
        std::unique_lock<std::mutex> lock(mutex);
        ++arrived;
        met.notify_all();
        met.wait(lock, [&] { return arrived == kThreads; });
      }
      lc_test_spin_for(150'000'000);
    });
  }
  std::set<std::string> loops;  // of the final records, filled under the collector's lock
  lc::BlockRecord last;
  const bool all = rig.collector.wait_for(
      [&](const lc::BlockRecord& r) {
        if (r.phase == lc::Phase::final) loops.insert(r.loop);
        return loops.size() == kThreads;
      },
      last);
  work.reset();
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(all) << loops.size() << " loops reported";
  EXPECT_EQ(loops, (std::set<std::string>{"asio", "asio-2", "asio-3"}));
  for (const lc::BlockRecord& r : rig.collector.records()) {
    if (r.phase != lc::Phase::final) continue;
    EXPECT_TRUE(event_named(r, "io_context.execute"));
    EXPECT_GE(us_of(r, r.duration_ticks), 149'000u);
  }
}
