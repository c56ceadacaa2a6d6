#include "alloc/buddy_arena.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

namespace onchip::alloc {
namespace {

TEST(BuddyArena, OrderForCoversSizeAndAlignment) {
  EXPECT_EQ(BuddyArena::OrderFor(8, 8), 0u);
  EXPECT_EQ(BuddyArena::OrderFor(64, 1), 0u);
  EXPECT_EQ(BuddyArena::OrderFor(65, 1), 1u);
  EXPECT_EQ(BuddyArena::OrderFor(8, 4096), 6u);
  EXPECT_EQ(BuddyArena::OrderFor(4096, 64), 6u);
  EXPECT_EQ(BuddyArena::OrderFor(size_t{2} << 20, 8), 15u);
  EXPECT_EQ(BuddyArena::OrderFor(8, size_t{2} << 20), 15u);
}

TEST(BuddyArena, FillsWithSmallestBlocksThenRefuses) {
  BuddyArena arena;
  std::set<uint32_t> offsets;
  for (uint32_t i = 0; i < BuddyArena::kGranules; ++i) {
    auto off = arena.Allocate(0, 3);
    ASSERT_TRUE(off.has_value()) << i;
    EXPECT_EQ(*off % 64, 0u);
    EXPECT_TRUE(offsets.insert(*off).second) << "offset handed out twice: " << *off;
  }
  EXPECT_FALSE(arena.Allocate(0, 0).has_value());
  EXPECT_EQ(arena.bytes_in_use(), size_t{2} << 20);
  EXPECT_EQ(arena.largest_free_order(), -1);
  for (uint32_t off : offsets) {
    auto b = arena.BeginFree(off);
    ASSERT_TRUE(b.block.has_value());
    EXPECT_EQ(b.block->tag, 3);
    arena.FinishFree(off, b.block->order);
  }
  EXPECT_TRUE(arena.empty());
  // Everything merged back: the whole chunk is one block again.
  EXPECT_EQ(arena.largest_free_order(), static_cast<int>(BuddyArena::kMaxOrder));
  EXPECT_EQ(arena.Allocate(BuddyArena::kMaxOrder, 0), std::optional<uint32_t>(0));
}

TEST(BuddyArena, BlocksAreAlignedToTheirSizeAndDisjoint) {
  BuddyArena arena;
  std::mt19937 rng(7);
  std::vector<std::pair<uint32_t, unsigned>> live;
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      unsigned order = rng() % 10;
      auto off = arena.Allocate(order, 0);
      if (!off) continue;
      EXPECT_EQ(*off % (64u << order), 0u);
      for (auto& [o, k] : live) {
        uint32_t a_end = *off + (64u << order), b_end = o + (64u << k);
        ASSERT_TRUE(a_end <= o || b_end <= *off) << "overlap";
      }
      live.emplace_back(*off, order);
    } else {
      size_t i = rng() % live.size();
      auto b = arena.BeginFree(live[i].first);
      ASSERT_TRUE(b.block.has_value());
      EXPECT_EQ(b.block->order, live[i].second);
      arena.FinishFree(live[i].first, b.block->order);
      live.erase(live.begin() + static_cast<long>(i));
    }
    if (live.size() > 200) break;
  }
  size_t expect = 0;
  for (auto& [o, k] : live) expect += 64u << k;
  EXPECT_EQ(arena.bytes_in_use(), expect);
}

TEST(BuddyArena, RejectsDoubleFreeInteriorAndMisaligned) {
  BuddyArena arena;
  auto a = arena.Allocate(4, 1);  // 1 KiB
  auto b = arena.Allocate(4, 1);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(arena.BeginFree(*a + 64).fault, BuddyArena::FreeFault::kInterior);
  EXPECT_FALSE(arena.BeginFree(*a + 64).block.has_value());
  EXPECT_EQ(arena.BeginFree(*a + 8).fault, BuddyArena::FreeFault::kMisaligned);
  EXPECT_EQ(arena.BeginFree(uint32_t{4} << 20).fault, BuddyArena::FreeFault::kMisaligned);
  auto first = arena.BeginFree(*a);
  ASSERT_TRUE(first.block.has_value());
  // While in flight, and after it is back in the free lists, a second free is a double free.
  EXPECT_EQ(arena.BeginFree(*a).fault, BuddyArena::FreeFault::kNotLive);
  arena.FinishFree(*a, first.block->order);
  auto again = arena.BeginFree(*a);
  EXPECT_FALSE(again.block.has_value());
  EXPECT_EQ(again.fault, BuddyArena::FreeFault::kNotLive);
  // Never-allocated memory (part of a free block) reads as not live too.
  EXPECT_EQ(arena.BeginFree(uint32_t{1} << 20).fault, BuddyArena::FreeFault::kNotLive);
  // The live neighbour is untouched by all of this.
  EXPECT_TRUE(arena.Describe(*b).has_value());
  EXPECT_EQ(arena.bytes_in_use(), 1024u);
}

TEST(BuddyArena, RejectsTagAndOrderOutOfRange) {
  BuddyArena arena;
  EXPECT_FALSE(arena.Allocate(0, BuddyArena::kMaxTag + 1).has_value());
  EXPECT_FALSE(arena.Allocate(BuddyArena::kMaxOrder + 1, 0).has_value());
  EXPECT_TRUE(arena.empty());
}

}  // namespace
}  // namespace onchip::alloc
