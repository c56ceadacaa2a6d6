// MemoryProvider on the memfd 4 KiB tier: the tier that works on every machine.
#include "alloc/provider.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "tests/unit/alloc/recording_mapper.h"
#include "tests/unit/alloc/smaps.h"

namespace onchip::alloc {
namespace {

std::unique_ptr<MemoryProvider> Make4k(DmaMapper* mapper = nullptr, size_t retain = size_t{32} << 20) {
  ProviderOptions o;
  o.first_tier = Tier::kMemfd4k;
  o.allow_fallback = false;
  o.mapper = mapper;
  o.retain_empty_bytes = retain;
  auto p = MemoryProvider::Create(o);
  EXPECT_TRUE(p.has_value()) << p.error().describe();
  return std::move(*p);
}

bool AllZero(const void* p, size_t n) {
  auto* b = static_cast<const unsigned char*>(p);
  return std::all_of(b, b + n, [](unsigned char c) { return c == 0; });
}

TEST(Provider4k, AlignmentAndSizeMatrix) {
  auto p = Make4k();
  std::vector<void*> live;
  for (size_t align = 8; align <= (size_t{2} << 20); align <<= 1) {
    for (size_t size : {size_t{1}, size_t{8}, size_t{63}, size_t{64}, size_t{100}, size_t{4096},
                        size_t{65536} + 3, size_t{2} << 20}) {
      auto a = p->Allocate(size, align);
      ASSERT_TRUE(a.has_value()) << size << "/" << align << ": " << a.error().describe();
      EXPECT_EQ(reinterpret_cast<uintptr_t>(a->addr) % align, 0u) << size << "/" << align;
      EXPECT_GE(a->length, size);
      EXPECT_EQ(a->tier, Tier::kMemfd4k);
      EXPECT_TRUE(AllZero(a->addr, a->length)) << size << "/" << align;
      std::memset(a->addr, 0xa5, size);  // usable to its full size
      live.push_back(a->addr);
    }
  }
  for (void* q : live) ASSERT_TRUE(p->Free(q).has_value());
  EXPECT_EQ(p->stats().of(Tier::kMemfd4k).live_buffers, 0u);
  EXPECT_EQ(p->stats().of(Tier::kMemfd4k).bytes_in_use, 0u);
}

TEST(Provider4k, RejectsBadRequests) {
  auto p = Make4k();
  auto zero = p->Allocate(0, 8);
  ASSERT_FALSE(zero.has_value());
  EXPECT_EQ(zero.error().errno_value(), EINVAL);
  for (size_t bad_align : {size_t{3}, size_t{24}, size_t{4} << 20}) {
    auto a = p->Allocate(64, bad_align);
    ASSERT_FALSE(a.has_value()) << bad_align;
    EXPECT_EQ(a.error().errno_value(), EINVAL);
  }
  auto huge = p->Allocate(~size_t{0} - 4096, 8);
  ASSERT_FALSE(huge.has_value());
  EXPECT_EQ(huge.error().errno_value(), ENOMEM);
  auto tag = p->Allocate(64, 8, 8);
  ASSERT_FALSE(tag.has_value());
  EXPECT_EQ(tag.error().errno_value(), EINVAL);
}

TEST(Provider4k, FreedMemoryComesBackZeroed) {
  auto p = Make4k();
  for (size_t size : {size_t{8}, size_t{4096}, size_t{1} << 20, size_t{2} << 20, size_t{5} << 20}) {
    auto a = p->Allocate(size, 64);
    ASSERT_TRUE(a.has_value());
    std::memset(a->addr, 0xff, a->length);
    void* addr = a->addr;
    ASSERT_TRUE(p->Free(addr).has_value());
    auto b = p->Allocate(size, 64);
    ASSERT_TRUE(b.has_value());
    if (size <= (size_t{2} << 20)) {
      EXPECT_EQ(b->addr, addr) << "same block reused";
    }
    EXPECT_TRUE(AllZero(b->addr, b->length)) << size;
    ASSERT_TRUE(p->Free(b->addr).has_value());
  }
}

TEST(Provider4k, SmallBuffersShareARegion) {
  auto p = Make4k();
  std::vector<void*> dbrs;
  for (int i = 0; i < 1000; ++i) {
    auto a = p->Allocate(8, 8);
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(a->length, 64u) << "one cache line per doorbell record";
    dbrs.push_back(a->addr);
  }
  EXPECT_EQ(p->stats().of(Tier::kMemfd4k).regions, 1u);
  EXPECT_EQ(p->stats().of(Tier::kMemfd4k).region_bytes, size_t{2} << 20);
  std::sort(dbrs.begin(), dbrs.end());
  EXPECT_EQ(std::adjacent_find(dbrs.begin(), dbrs.end()), dbrs.end());
  for (void* q : dbrs) ASSERT_TRUE(p->Free(q).has_value());
}

TEST(Provider4k, DoubleFreeForeignAndInteriorPointersAreRejected) {
  auto p = Make4k();
  auto a = p->Allocate(4096, 4096);
  auto keep = p->Allocate(4096, 4096);
  auto big = p->Allocate(size_t{3} << 20, 4096);
  ASSERT_TRUE(a && keep && big);
  std::memset(keep->addr, 0x5a, 4096);

  int on_stack = 0;
  std::vector<char> heap(128);
  struct Case {
    void* ptr;
    const char* what;
  } foreign[] = {{&on_stack, "free: pointer not from this provider"},
                 {heap.data(), "free: pointer not from this provider"},
                 {nullptr, "free: pointer not from this provider"},
                 {static_cast<char*>(a->addr) + 64, "free: pointer is inside a buffer, not its start"},
                 {static_cast<char*>(a->addr) + 8, "free: pointer is inside a buffer, not its start"},
                 {static_cast<char*>(big->addr) + 4096, "free: pointer is inside a buffer, not its start"}};
  for (const Case& c : foreign) {
    auto r = p->Free(c.ptr);
    ASSERT_FALSE(r.has_value()) << c.ptr;
    EXPECT_EQ(r.error().errno_value(), EINVAL);
    EXPECT_STREQ(r.error().what(), c.what);
  }
  ASSERT_TRUE(p->Free(a->addr).has_value());
  auto twice = p->Free(a->addr);
  ASSERT_FALSE(twice.has_value());
  EXPECT_EQ(twice.error().errno_value(), EINVAL);
  EXPECT_STREQ(twice.error().what(), "free: buffer already freed");
  ASSERT_TRUE(p->Free(big->addr).has_value());
  auto big_twice = p->Free(big->addr);
  ASSERT_FALSE(big_twice.has_value());
  EXPECT_EQ(big_twice.error().errno_value(), EINVAL);

  EXPECT_EQ(p->stats().rejected_frees, 8u);
  // Nothing was corrupted: the neighbour is intact and still live.
  EXPECT_TRUE(std::all_of(static_cast<unsigned char*>(keep->addr), static_cast<unsigned char*>(keep->addr) + 4096,
                          [](unsigned char c) { return c == 0x5a; }));
  EXPECT_TRUE(p->Describe(keep->addr).has_value());
  EXPECT_EQ(p->stats().of(Tier::kMemfd4k).live_buffers, 1u);
  ASSERT_TRUE(p->Free(keep->addr).has_value());
}

TEST(Provider4k, FdAndOffsetReachTheSameBytes) {
  auto p = Make4k();
  auto pad = p->Allocate(12345, 64);
  auto a = p->Allocate(8192, 4096);
  ASSERT_TRUE(pad && a);
  ASSERT_GE(a->fd, 0);
  // Another mapping of the file (what a device daemon would do with the passed fd) sees writes.
  int fd = dup(a->fd);
  ASSERT_GE(fd, 0);
  void* view = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(a->fd_offset));
  ASSERT_NE(view, MAP_FAILED);
  std::memcpy(a->addr, "through the buffer", 19);
  EXPECT_STREQ(static_cast<char*>(view), "through the buffer");
  std::memcpy(static_cast<char*>(view) + 4096, "through the fd", 15);
  EXPECT_STREQ(static_cast<char*>(a->addr) + 4096, "through the fd");
  munmap(view, 8192);
  close(fd);
  ASSERT_TRUE(p->Free(a->addr).has_value());
  ASSERT_TRUE(p->Free(pad->addr).has_value());
}

TEST(Provider4k, MemoryIsSharedAndNotInheritedByFork) {
  auto p = Make4k();
  auto a = p->Allocate(4096, 4096);
  auto big = p->Allocate(size_t{4} << 20, 4096);
  ASSERT_TRUE(a && big);
  for (void* q : {a->addr, big->addr}) {
    auto facts = testing::FactsFor(q);
    ASSERT_TRUE(facts.has_value());
    EXPECT_TRUE(facts->has_flag("dc")) << "MADV_DONTFORK (VM_DONTCOPY) missing: " << facts->vm_flags;
    EXPECT_TRUE(facts->has_flag("sh")) << "not a shared mapping: " << facts->vm_flags;
  }
  ASSERT_TRUE(p->Free(a->addr).has_value());
  ASSERT_TRUE(p->Free(big->addr).has_value());
}

TEST(Provider4k, MapsEachRegionOnceAndBuffersReuseIt) {
  testing::RecordingMapper mapper;
  {
    auto p = Make4k(&mapper, /*retain=*/0);
    std::vector<Allocation> small;
    for (int i = 0; i < 100; ++i) {
      auto a = p->Allocate(4096, 4096);
      ASSERT_TRUE(a.has_value());
      small.push_back(*a);
    }
    ASSERT_EQ(mapper.maps.size(), 1u) << "one region, one mapping";
    const auto& m = mapper.maps[0];
    for (const Allocation& a : small) {
      ASSERT_TRUE(a.dma_mapped);
      EXPECT_EQ(a.iova, m.iova + (static_cast<char*>(a.addr) - static_cast<char*>(m.addr)));
    }
    auto big = p->Allocate(size_t{6} << 20, 64);
    ASSERT_TRUE(big.has_value());
    ASSERT_EQ(mapper.maps.size(), 2u);
    EXPECT_EQ(big->iova, mapper.maps[1].iova);
    EXPECT_EQ(mapper.maps[1].length, size_t{6} << 20);
    ASSERT_TRUE(p->Free(big->addr).has_value());
    ASSERT_EQ(mapper.unmaps.size(), 1u) << "a large buffer's region goes back at once";
    EXPECT_EQ(mapper.unmaps[0].iova, mapper.maps[1].iova);
    for (const Allocation& a : small) ASSERT_TRUE(p->Free(a.addr).has_value());
    EXPECT_EQ(mapper.unmaps.size(), 2u) << "empty region released (retain_empty_bytes = 0)";
    EXPECT_EQ(p->stats().dma_maps, 2u);
    EXPECT_EQ(p->stats().of(Tier::kMemfd4k).regions, 0u);

    mapper.fail_next = true;
    auto failed = p->Allocate(64, 64);
    ASSERT_FALSE(failed.has_value());
    EXPECT_EQ(failed.error().errno_value(), EFAULT);
    EXPECT_EQ(p->stats().of(Tier::kMemfd4k).regions, 0u) << "region given back when mapping fails";
    auto ok = p->Allocate(64, 64);
    ASSERT_TRUE(ok.has_value());
    ASSERT_TRUE(p->Free(ok->addr).has_value());
  }
  EXPECT_EQ(mapper.maps.size(), mapper.unmaps.size());
}

TEST(Provider4k, RetainsEmptyRegionsUpToTheBudget) {
  testing::RecordingMapper mapper;
  auto p = Make4k(&mapper, /*retain=*/size_t{2} << 20);
  for (int i = 0; i < 50; ++i) {
    auto a = p->Allocate(1024, 64);
    ASSERT_TRUE(a.has_value());
    ASSERT_TRUE(p->Free(a->addr).has_value());
  }
  EXPECT_EQ(mapper.maps.size(), 1u) << "alloc/free cycles reuse the retained region";
  EXPECT_EQ(mapper.unmaps.size(), 0u);
}

TEST(Provider4k, ThreadsAllocateAndFreeConcurrently) {
  auto p = Make4k();
  constexpr int kThreads = 8, kRounds = 3000;
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<std::pair<unsigned char*, size_t>> mine;
      for (int i = 0; i < kRounds; ++i) {
        if (mine.size() < 64 && (mine.empty() || rng() % 2)) {
          size_t size = size_t{8} << (rng() % 14);  // 8 B .. 64 KiB
          auto a = p->Allocate(size, size_t{8} << (rng() % 10));
          if (!a) {
            ++errors;
            continue;
          }
          auto* b = static_cast<unsigned char*>(a->addr);
          if (b[0] != 0 || b[size - 1] != 0) ++errors;  // zeroed, and nobody else's
          std::memset(b, t + 1, size);
          mine.emplace_back(b, size);
        } else {
          size_t i2 = rng() % mine.size();
          auto [b, size] = mine[i2];
          if (b[0] != t + 1 || b[size - 1] != t + 1) ++errors;  // nobody scribbled on it
          if (!p->Free(b)) ++errors;
          mine.erase(mine.begin() + static_cast<long>(i2));
        }
      }
      for (auto [b, size] : mine) {
        if (!p->Free(b)) ++errors;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  auto s = p->stats().of(Tier::kMemfd4k);
  EXPECT_EQ(s.live_buffers, 0u);
  EXPECT_EQ(s.allocations, s.frees);
  EXPECT_EQ(p->stats().rejected_frees, 0u);
}

TEST(ProviderOptions, ForcedTierFromTheEnvironment) {
  setenv("ONCHIP_ALLOC_TIER", "4k", 1);
  setenv("ONCHIP_ALLOC_FALLBACK", "0", 1);
  auto o = ProviderOptions::FromEnvironment();
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->first_tier, Tier::kMemfd4k);
  EXPECT_FALSE(o->allow_fallback);
  setenv("ONCHIP_ALLOC_TIER", "hugetlb", 1);
  EXPECT_EQ(ProviderOptions::FromEnvironment()->first_tier, Tier::kMemfdHugetlb);
  setenv("ONCHIP_ALLOC_TIER", "bogus", 1);
  auto bad = ProviderOptions::FromEnvironment();
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().errno_value(), EINVAL);
  unsetenv("ONCHIP_ALLOC_TIER");
  unsetenv("ONCHIP_ALLOC_FALLBACK");
  EXPECT_EQ(ProviderOptions::FromEnvironment()->first_tier, Tier::kDpdkHugepages);
}

}  // namespace
}  // namespace onchip::alloc
