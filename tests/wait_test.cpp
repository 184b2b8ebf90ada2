// SPDX-License-Identifier: MIT
// Wait objects in the watchdog and its records, in virtual time (port "sim": 1 tick = 1 us, a
// poll every 10 ms): a loop off the CPU has what it waits on read with each sample (Hal::read_wait),
// counted by object and holder; a loop that computes has it read only where its CPU readings
// cannot tell (the dispatch's first sample); a holder that is a watched loop is named as it.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "loopcanary/evidence.hpp"
#include "loopcanary/loopcanary.hpp"
#include "loopcanary/port/sim.hpp"
#include "sim_rig.hpp"

namespace {

namespace lc = loopcanary;
namespace sim = loopcanary::sim;
using lc::BlockRecord;
using lc::Phase;
using lc::WaitKind;
using lc::tick_t;
using sim::ms;

constexpr tick_t kPeriod = ms(10);
constexpr lc::Event kWork{"work"};

lc::WaitObject mutex_at(std::uint64_t address) {
  lc::WaitObject o;
  o.kind = WaitKind::mutex;
  o.address = address;
  return o;
}

class WaitTest : public testing::Test {
 protected:
  using Rig = lc::test::SimRig<lc::StaticWatchdog<2, 16>>;

  WaitTest() : rig(0) {
    journal.id = 4242;
    journal.name = "journal";
    journal.pc = 0x4000'1234;
    rig.thread.id = 7;
    rig.thread.pc = 0x1000'0042;  // every sample has a stack
    rig.machine.set_pc_capture(true);
  }

  // A 100 ms threshold, sampled every 10 ms, armed at 25 ms, a hang at 500 ms; the dispatch
  // begins at a poll.
  testing::AssertionResult start() {
    lc::MonitorConfig config;
    config.name = "main";
    config.threshold_us = 100'000;
    config.sample_interval_us = 10'000;
    config.hang_limit_us = 500'000;
    return rig.start(config, kPeriod);
  }

  // One dispatch running `body`; its final record.
  template <class Body>
  std::optional<BlockRecord> block(Body&& body) {
    rig.align();
    const std::uint32_t number = rig.monitor.stats().dispatches + 1u;
    rig.dispatch(kWork, body);
    rig.idle(kPeriod);
    return rig.find(number, Phase::final);
  }

  Rig rig;
  sim::Thread journal;  // a thread that holds locks
};

TEST_F(WaitTest, ALoopWaitingOnAHeldMutexNamesTheMutexTheHolderAndItsStack) {
  ASSERT_TRUE(start());
  const std::optional<BlockRecord> r =
      block([&] { rig.scheduler->wait_on(rig.thread, mutex_at(0x7f00a0), &journal, ms(150)); });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->cause, lc::Cause::waiting);
  ASSERT_EQ(r->wait.count, 1u);
  const lc::WaitSeen& seen = r->wait.objects[0];
  EXPECT_EQ(seen.object.kind, WaitKind::mutex);
  EXPECT_EQ(seen.object.address, 0x7f00a0u);
  EXPECT_EQ(seen.object.owner, 4242u);
  EXPECT_STREQ(seen.object.owner_name, "journal");
  EXPECT_EQ(seen.owner_loop, nullptr) << "journal is no watched loop";
  ASSERT_EQ(seen.holder_pc_count, 1u);
  EXPECT_EQ(seen.holder_frames[0], 0x4000'1234u);
  // Every sample of the dispatch read the wait: one per poll from the arming poll on.
  EXPECT_GT(r->samples_taken, 10u);
  EXPECT_EQ(seen.samples, r->samples_taken);
  EXPECT_EQ(rig.machine.wait_reads(), r->samples_taken);
  EXPECT_EQ(r->wait.other, 0u);

  std::vector<char> text(1u << 16);
  ASSERT_FALSE(lc::format_text(*r, text.data(), text.size()).truncated);
  EXPECT_NE(std::string(text.data()).find("\ncause = waiting on mutex 0x7f00a0 held by 'journal' (tid 4242); holder in 0x40001234\n"),
            std::string::npos)
      << text.data();
}

TEST_F(WaitTest, AComputingLoopHasItsWaitReadOnlyWhereItsCpuCannotTell) {
  ASSERT_TRUE(start());
  // The machine would say "mutex" if asked: the watchdog must not ask while the loop runs.
  rig.thread.waiting_on = mutex_at(0x1000);
  const std::optional<BlockRecord> r = block([&] { rig.compute(ms(150)); });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->cause, lc::Cause::running);
  EXPECT_GT(r->samples_taken, 10u);
  // The arming poll's sample has no earlier CPU reading in the dispatch: read once, there.
  EXPECT_EQ(rig.machine.wait_reads(), 1u);
  ASSERT_EQ(r->wait.count, 1u);
  EXPECT_EQ(r->wait.objects[0].samples, 1u);
}

TEST_F(WaitTest, ReadingsCountUnderTheirObjectAndHolderMostSamplesFirstTheRestAsOther) {
  ASSERT_TRUE(start());
  sim::Thread other_holder;
  other_holder.id = 99;
  const std::optional<BlockRecord> r = block([&] {
    rig.scheduler->wait_on(rig.thread, mutex_at(0xA0), &journal, ms(30));       // 3 samples
    rig.scheduler->wait_on(rig.thread, mutex_at(0xA0), &other_holder, ms(20));  // same lock, other holder
    rig.scheduler->wait_on(rig.thread, mutex_at(0xA0), &journal, ms(30));       // 3 more: 6
    for (std::uint64_t address = 0xB0; address < 0xB0 + 4 * 8; address += 8) {  // 4 locks, 1 sample each
      rig.scheduler->wait_on(rig.thread, mutex_at(address), nullptr, ms(10));
    }
    rig.scheduler->wait_on(rig.thread, mutex_at(0xA0), &journal, ms(10));
  });
  ASSERT_TRUE(r.has_value());
  static_assert(lc::kWaitObjects == 4, "the counts below assume the default LOOPCANARY_WAIT_OBJECTS");
  ASSERT_EQ(r->wait.count, 4u);
  std::uint32_t counted = r->wait.other;
  for (std::uint8_t i = 0; i < r->wait.count; ++i) counted += r->wait.objects[i].samples;
  EXPECT_EQ(counted, r->samples_taken) << "every sample counted once";
  EXPECT_EQ(r->wait.objects[0].object.address, 0xA0u);
  EXPECT_EQ(r->wait.objects[0].object.owner, 4242u);
  EXPECT_EQ(r->wait.objects[1].object.address, 0xA0u);
  EXPECT_EQ(r->wait.objects[1].object.owner, 99u);
  EXPECT_GE(r->wait.objects[0].samples, r->wait.objects[1].samples);
  EXPECT_EQ(r->wait.other, 2u) << "two of the four one-sample locks did not fit";
}

TEST_F(WaitTest, AHolderThatIsAWatchedLoopIsNamedAsThatLoop) {
  // A second loop, "journal", on the journal thread.
  sim::PortMonitor second{sim::Clock{rig.time}};
  lc::MonitorConfig config;
  config.name = "journal";
  config.tick_hz = sim::kTickHz;
  config.threshold_us = 100'000;
  config.context = &journal;
  ASSERT_EQ(second.init(config), lc::Status::ok);
  ASSERT_TRUE(start());
  ASSERT_EQ(rig.watchdog.add(second), lc::Status::ok);
  const std::optional<BlockRecord> r =
      block([&] { rig.scheduler->wait_on(rig.thread, mutex_at(0x7f00a0), &journal, ms(150)); });
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->wait.count, 1u);
  ASSERT_NE(r->wait.objects[0].owner_loop, nullptr);
  EXPECT_STREQ(r->wait.objects[0].owner_loop, "journal");
}

TEST_F(WaitTest, EachRecordHoldsOnlyTheWaitsOfItsOwnDispatch) {
  ASSERT_TRUE(start());
  const std::optional<BlockRecord> first =
      block([&] { rig.scheduler->wait_on(rig.thread, mutex_at(0xA0), &journal, ms(150)); });
  const std::optional<BlockRecord> second = block([&] { rig.wait(ms(150)); });
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(first->wait.count, 1u);
  EXPECT_EQ(second->cause, lc::Cause::waiting);
  EXPECT_EQ(second->wait.count, 0u) << "the thread waited on nothing the machine could name";
  EXPECT_EQ(second->wait.other, 0u);
}

TEST_F(WaitTest, TwoThreadsEachHoldingWhatTheOtherWaitsOnAreNamedAsADeadlockInTheHang) {
  ASSERT_TRUE(start());
  rig.thread.name = "main-loop";
  // journal waits on the lock at 0xB0, which the loop's thread holds; the loop waits on 0xA0,
  // which journal holds.
  journal.waiting_on = mutex_at(0xB0);
  journal.holder = &rig.thread;
  rig.align();
  rig.dispatch(kWork, [&] { rig.scheduler->wait_on(rig.thread, mutex_at(0xA0), &journal, ms(600)); });
  const std::optional<BlockRecord> hang = rig.find(1, Phase::hang);
  ASSERT_TRUE(hang.has_value());
  ASSERT_EQ(hang->wait.count, 1u);
  const lc::WaitSeen& lock = hang->wait.objects[0];
  EXPECT_EQ(lock.object.owner, 4242u);
  ASSERT_EQ(lock.chain_count, 1u);
  EXPECT_EQ(lock.chain[0].address, 0xB0u);
  EXPECT_EQ(lock.chain[0].owner, 7u);
  EXPECT_STREQ(lock.chain[0].owner_name, "main-loop");
  EXPECT_TRUE(lock.deadlock);
  char text[256];
  lc::format_wait(lock, text, sizeof text);
  EXPECT_STREQ(text,
               "mutex 0xa0 held by 'journal' (tid 4242), which waits on mutex 0xb0 held by 'main-loop' (tid 7): "
               "deadlock");
}

TEST_F(WaitTest, AChainOfHoldersThatEndsIsNoDeadlock) {
  ASSERT_TRUE(start());
  sim::Thread flash;  // journal waits on the flash driver's lock; the flash driver sleeps
  flash.id = 99;
  flash.name = "flash";
  journal.waiting_on = mutex_at(0xB0);
  journal.holder = &flash;
  const std::optional<BlockRecord> r =
      block([&] { rig.scheduler->wait_on(rig.thread, mutex_at(0xA0), &journal, ms(150)); });
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->wait.count, 1u);
  const lc::WaitSeen& lock = r->wait.objects[0];
  ASSERT_EQ(lock.chain_count, 1u);
  EXPECT_EQ(lock.chain[0].owner, 99u);
  EXPECT_FALSE(lock.deadlock);
}

TEST_F(WaitTest, AnEvidenceWatchdogNeverReadsWaits) {
  sim::VirtualTime time(0);
  sim::Machine machine;
  sim::Thread thread;
  sim::PortMonitor monitor{sim::Clock{time}};
  lc::MonitorConfig config;
  config.tick_hz = sim::kTickHz;
  config.threshold_us = 100'000;
  config.context = &thread;
  ASSERT_EQ(monitor.init(config), lc::Status::ok);
  static lc::StaticEvidenceRing<4096> ring;
  ring.open(lc::ResetCause::unknown);
  lc::StaticEvidenceWatchdog<1> watchdog;
  ASSERT_EQ(watchdog.init(lc::WatchdogConfig{}, machine.hal(), ring), lc::Status::ok);
  ASSERT_EQ(watchdog.add(monitor), lc::Status::ok);
  sim::Scheduler scheduler(time, machine, watchdog, kPeriod);
  {
    LOOPCANARY_DISPATCH(monitor, kWork);
    scheduler.wait_on(thread, mutex_at(0xA0), nullptr, ms(150));
  }
  scheduler.idle(kPeriod);
  EXPECT_GT(watchdog.stats().reports, 0u);
  EXPECT_EQ(machine.wait_reads(), 0u);
}

}  // namespace
