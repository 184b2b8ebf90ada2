// SPDX-License-Identifier: MIT
// SpscRing (lock-free single-producer single-consumer queue), exercised single-threaded
// against a reference model. Its concurrent behaviour is the concurrency suite's business.
//
// Index wrap: the ring uses free-running 32-bit counters, and has no hook to start them
// near UINT32_MAX, so the 2^32 wrap itself is not reached here (that would take ~4.3e9 pushes).
// The long runs below wrap the slot index (counter & mask) more than a hundred thousand times, at
// every fill level, which is where a wrong mask or a wrong fullness test would show.
#include <cstddef>
#include <cstdint>
#include <deque>

#include <gtest/gtest.h>

#include "loopcanary/spsc_ring.hpp"

namespace {

using loopcanary::SpscRing;
using loopcanary::SpscRingBase;

// A multi-word element, so a slot copied in part would show.
struct Item {
  std::uint32_t id = 0;
  std::uint64_t payload = 0;
  const char* tag = nullptr;
};

bool operator==(const Item& a, const Item& b) { return a.id == b.id && a.payload == b.payload && a.tag == b.tag; }

constexpr const char* kTag = "tag";

Item make_item(std::uint32_t id) { return Item{id, std::uint64_t{id} * 0x1'0000'0001u, kTag}; }

// Pushes ids first, first+1, ... until the ring refuses; returns how many were accepted.
std::uint32_t fill(SpscRingBase<Item>& ring, std::uint32_t first) {
  std::uint32_t n = 0;
  while (ring.push(make_item(first + n))) ++n;
  return n;
}

// Drives `ring` through `operations` pushes and pops in a deterministic but irregular pattern
// (bursts of 1..capacity+1 pushes, then of pops), checking every result against a std::deque.
// Returns the number of elements that went through the ring.
std::uint32_t run_against_model(SpscRingBase<Item>& ring, std::uint32_t operations) {
  std::deque<Item> model;
  std::uint32_t next_id = 0;
  std::uint32_t passed = 0;
  std::uint32_t lcg = 12345;
  std::uint32_t done = 0;
  while (done < operations) {
    lcg = lcg * 1664525u + 1013904223u;
    const std::uint32_t burst = 1u + (lcg >> 16) % (ring.capacity() + 1u);
    const bool pushing = (lcg & 0x100u) != 0;
    for (std::uint32_t i = 0; i < burst; ++i, ++done) {
      if (pushing) {
        const Item item = make_item(next_id);
        const bool room = model.size() < ring.capacity();
        EXPECT_EQ(ring.push(item), room) << "operation " << done;
        if (room) {
          model.push_back(item);
          ++next_id;
        }
      } else {
        Item out = make_item(0xFFFFFFFFu);
        const bool any = !model.empty();
        EXPECT_EQ(ring.pop(out), any) << "operation " << done;
        if (any) {
          EXPECT_TRUE(out == model.front()) << "operation " << done << ": got id " << out.id;
          model.pop_front();
          ++passed;
        }
      }
      EXPECT_EQ(ring.size(), model.size());
      if (::testing::Test::HasFailure()) return passed;
    }
  }
  return passed;
}

// Constant-initialisable: a static ring costs no start-up code.
constexpr loopcanary::detail::LateBoundSpscRing<Item> kUnboundRing;

TEST(SpscRing, UnboundRingRefusesPushAndIsEmptyUntilBound) {
  loopcanary::detail::LateBoundSpscRing<Item> ring;
  EXPECT_EQ(kUnboundRing.capacity(), 0u);
  EXPECT_EQ(ring.capacity(), 0u);
  EXPECT_FALSE(ring.push(make_item(1)));
  Item out = make_item(77);
  EXPECT_FALSE(ring.pop(out));
  EXPECT_TRUE(out == make_item(77));
  EXPECT_EQ(ring.size(), 0u);

  loopcanary::detail::Slot<Item> slots[2];
  ring.bind(slots, 2);
  EXPECT_EQ(ring.capacity(), 2u);
  EXPECT_EQ(fill(ring, 5), 2u);
  ring.bind(slots, 2);  // the same storage again: the contents stay
  ASSERT_TRUE(ring.pop(out));
  EXPECT_TRUE(out == make_item(5));
  EXPECT_EQ(ring.size(), 1u);
}

TEST(SpscRing, PopFromEmptyFailsAndLeavesOutputUntouched) {
  SpscRing<Item, 4> ring;
  Item out = make_item(77);
  EXPECT_FALSE(ring.pop(out));
  EXPECT_TRUE(out == make_item(77));
  EXPECT_TRUE(ring.empty());
  EXPECT_EQ(ring.size(), 0u);
}

TEST(SpscRing, FullRingRefusesPushAndOverwritesNothing) {
  SpscRing<Item, 4> ring;
  EXPECT_EQ(fill(ring, 10), 4u);
  EXPECT_EQ(ring.size(), 4u);
  EXPECT_FALSE(ring.push(make_item(99)));
  EXPECT_EQ(ring.size(), 4u);
  Item out;
  for (std::uint32_t id = 10; id < 14; ++id) {
    ASSERT_TRUE(ring.pop(out));
    EXPECT_TRUE(out == make_item(id)) << "expected id " << id << ", got " << out.id;
  }
  EXPECT_FALSE(ring.pop(out));
}

TEST(SpscRing, PopsInFifoOrderAndFreesSlotsOneByOne) {
  SpscRing<Item, 8> ring;
  EXPECT_EQ(fill(ring, 0), 8u);
  Item out;
  ASSERT_TRUE(ring.pop(out));
  EXPECT_EQ(out.id, 0u);
  // One slot freed: exactly one push fits, and it queues behind the seven still in the ring.
  EXPECT_TRUE(ring.push(make_item(100)));
  EXPECT_FALSE(ring.push(make_item(101)));
  for (std::uint32_t expected : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 100u}) {
    ASSERT_TRUE(ring.pop(out));
    EXPECT_EQ(out.id, expected);
  }
  EXPECT_TRUE(ring.empty());
}

TEST(SpscRing, SizeAndCapacity) {
  SpscRing<int, 16> ring;
  EXPECT_EQ(ring.capacity(), 16u);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(ring.push(i));
  EXPECT_EQ(ring.size(), 5u);
  EXPECT_FALSE(ring.empty());
  int out = 0;
  ASSERT_TRUE(ring.pop(out));
  EXPECT_EQ(ring.size(), 4u);
  EXPECT_EQ(ring.capacity(), 16u);
}

TEST(SpscRing, SmallestCapacityOfTwo) {
  SpscRing<int, 2> ring;
  EXPECT_EQ(ring.capacity(), 2u);
  EXPECT_TRUE(ring.push(1));
  EXPECT_TRUE(ring.push(2));
  EXPECT_FALSE(ring.push(3));
  int out = 0;
  ASSERT_TRUE(ring.pop(out));
  EXPECT_EQ(out, 1);
  EXPECT_TRUE(ring.push(3));
  ASSERT_TRUE(ring.pop(out));
  EXPECT_EQ(out, 2);
  ASSERT_TRUE(ring.pop(out));
  EXPECT_EQ(out, 3);
}

TEST(SpscRing, SlotIndexWrapsManyTimesAtEveryFillLevel) {
  SpscRing<Item, 4> ring;
  constexpr std::uint32_t kOperations = 1u << 21;
  const std::uint32_t passed = run_against_model(ring, kOperations);
  // Roughly half the operations are pops: the slot index wrapped far more than 2^k times.
  EXPECT_GT(passed, kOperations / 8u);
}

TEST(SpscRing, SteadyStreamKeepsOrderOverManyWraps) {
  SpscRing<std::uint32_t, 8> ring;
  std::uint32_t next_pop = 0;
  std::uint32_t next_push = 0;
  // Keep the ring 5 deep while a million elements pass through.
  for (; next_push < 5; ++next_push) ASSERT_TRUE(ring.push(next_push));
  for (; next_push < 1'000'000u; ++next_push) {
    ASSERT_TRUE(ring.push(next_push));
    std::uint32_t out = 0;
    ASSERT_TRUE(ring.pop(out));
    ASSERT_EQ(out, next_pop++);
    ASSERT_EQ(ring.size(), 5u);
  }
}

TEST(SpscRing, WorksThroughTheCapacityFreeBase) {
  SpscRing<Item, 2> small;
  SpscRing<Item, 32> large;
  // The same non-template-on-N code drives both.
  SpscRingBase<Item>& a = small;
  SpscRingBase<Item>& b = large;
  EXPECT_EQ(a.capacity(), 2u);
  EXPECT_EQ(b.capacity(), 32u);
  EXPECT_EQ(fill(a, 0), 2u);
  EXPECT_EQ(fill(b, 0), 32u);
  EXPECT_EQ(small.size(), 2u);
  EXPECT_EQ(large.size(), 32u);
  Item out;
  for (std::uint32_t id = 0; id < 32; ++id) {
    ASSERT_TRUE(b.pop(out));
    EXPECT_EQ(out.id, id);
  }
  EXPECT_FALSE(b.pop(out));
  EXPECT_GT(run_against_model(b, 10'000), 0u);
}

}  // namespace
