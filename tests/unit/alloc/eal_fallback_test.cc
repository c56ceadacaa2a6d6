// The first link of the chain failing: an EAL that cannot start (bad arguments, or no hugepages)
// is reported once and the provider carries on with the next tier. Own binary: rte_eal_init can
// be attempted only once per process.
#include <gtest/gtest.h>

#include <cerrno>

#include "alloc/eal.h"
#include "alloc/fallback_report.h"
#include "alloc/provider.h"

namespace onchip::alloc {
namespace {

ProviderOptions BrokenEal(bool fallback) {
  ProviderOptions o;
  o.first_tier = Tier::kDpdkHugepages;
  o.allow_fallback = fallback;
  o.eal.args = {"--in-memory", "--no-pci", "--this-is-not-an-eal-option"};
  return o;
}

TEST(EalFallback, WithoutFallbackTheEalErrorIsReturned) {
  auto p = MemoryProvider::Create(BrokenEal(false));
  ASSERT_FALSE(p.has_value());
  // ENOMEM when no hugepages are reserved (nothing attempted), else rte_eal_init's EINVAL.
  EXPECT_TRUE(p.error().errno_value() == EINVAL || p.error().errno_value() == ENOMEM) << p.error().describe();
  EXPECT_FALSE(Eal::Running());
}

TEST(EalFallback, NextTierServesAndTheFallbackIsReportedOnce) {
  int before = FallbackReports();
  auto p = MemoryProvider::Create(BrokenEal(true));
  ASSERT_TRUE(p.has_value()) << p.error().describe();
  EXPECT_NE((*p)->current_tier(), Tier::kDpdkHugepages);
  auto a = (*p)->Allocate(4096, 4096);
  ASSERT_TRUE(a.has_value()) << a.error().describe();
  EXPECT_NE(a->tier, Tier::kDpdkHugepages);
  // One report per tier that failed: the EAL's, and memfd-hugetlb's too when no hugepages are
  // reserved (the run then lands on 4 KiB pages).
  const int reported = FallbackReports() - before;
  EXPECT_EQ(reported, a->tier == Tier::kMemfdHugetlb ? 1 : 2);
  ASSERT_TRUE((*p)->Free(a->addr).has_value());

  // A second provider meets the same failure: not reported again.
  auto q = MemoryProvider::Create(BrokenEal(true));
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(FallbackReports(), before + reported);
}

}  // namespace
}  // namespace onchip::alloc
