// tier2: the memfd MFD_HUGETLB tier, and its fallback to 4 KiB pages when the pool runs short.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "alloc/fallback_report.h"
#include "alloc/hugepage_pool.h"
#include "alloc/provider.h"
#include "tests/hugepages/free_hugepages.h"
#include "tests/unit/alloc/smaps.h"

namespace onchip::alloc {
namespace {

std::unique_ptr<MemoryProvider> MakeHugetlb(bool fallback) {
  ProviderOptions o;
  o.first_tier = Tier::kMemfdHugetlb;
  o.allow_fallback = fallback;
  auto p = MemoryProvider::Create(o);
  EXPECT_TRUE(p.has_value());
  return std::move(*p);
}


TEST(MemfdHugetlb, BuffersLiveOnTwoMegabytePages) {
  if (auto why = onchip::testing::MissingFreeHugepages(8)) GTEST_SKIP() << *why;
  auto p = MakeHugetlb(false);
  auto small = p->Allocate(8, 8);
  auto big = p->Allocate(size_t{5} << 20, 4096);
  ASSERT_TRUE(small.has_value()) << small.error().describe();
  ASSERT_TRUE(big.has_value()) << big.error().describe();
  for (const Allocation* a : {&*small, &*big}) {
    EXPECT_EQ(a->tier, Tier::kMemfdHugetlb);
    EXPECT_EQ(a->page_size, size_t{2} << 20);
    auto facts = testing::FactsFor(a->addr);
    ASSERT_TRUE(facts.has_value());
    EXPECT_EQ(facts->kernel_page_size, size_t{2} << 20);
    EXPECT_TRUE(facts->has_flag("dc")) << facts->vm_flags;
    EXPECT_TRUE(facts->has_flag("sh")) << facts->vm_flags;
  }
  auto* b = static_cast<unsigned char*>(big->addr);
  EXPECT_TRUE(std::all_of(b, b + big->length, [](unsigned char c) { return c == 0; }));
  ASSERT_TRUE(p->Free(small->addr).has_value());
  ASSERT_TRUE(p->Free(big->addr).has_value());
}

TEST(MemfdHugetlb, ShortPoolFallsBackToSmallPagesAndSaysSo) {
  if (auto why = onchip::testing::MissingFreeHugepages(1)) GTEST_SKIP() << *why;
  auto pool = ReadHugepagePool();
  // One page more than the pool has free: hugetlb must refuse, 4 KiB pages must serve.
  size_t bytes = (pool->free + 1) * (size_t{2} << 20);
  auto strict = MakeHugetlb(false);
  auto refused = strict->Allocate(bytes, 4096);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().errno_value(), ENOMEM) << refused.error().describe();

  int before = FallbackReports();
  auto p = MakeHugetlb(true);
  auto a = p->Allocate(bytes, 4096);
  ASSERT_TRUE(a.has_value()) << a.error().describe();
  EXPECT_EQ(a->tier, Tier::kMemfd4k);
  EXPECT_EQ(FallbackReports(), before + 1);
  // Short of memory is not permanent: the next small buffer still gets a hugepage.
  auto small = p->Allocate(64, 64);
  ASSERT_TRUE(small.has_value());
  EXPECT_EQ(small->tier, Tier::kMemfdHugetlb);
  // And the same shortage is not reported twice.
  auto b = p->Allocate(bytes, 4096);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(FallbackReports(), before + 1);
  for (void* q : {a->addr, small->addr, b->addr}) ASSERT_TRUE(p->Free(q).has_value());
  EXPECT_EQ(p->stats().of(Tier::kMemfdHugetlb).live_buffers + p->stats().of(Tier::kMemfd4k).live_buffers, 0u);
}

}  // namespace
}  // namespace onchip::alloc
