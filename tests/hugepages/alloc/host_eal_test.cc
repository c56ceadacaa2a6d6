// tier2: a host application (a trading stack) initialised DPDK before onchip: the provider adopts
// that EAL, never re-initialises it and never cleans it up.
#include <gtest/gtest.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <unistd.h>

#include <string>

#include "alloc/eal.h"
#include "alloc/hugepage_pool.h"
#include "alloc/provider.h"
#include "tests/hugepages/free_hugepages.h"

namespace onchip::alloc {
namespace {

TEST(HostEal, IsAdoptedNotReinitialised) {
  if (auto why = onchip::testing::MissingFreeHugepages(8)) GTEST_SKIP() << *why;
  // The host's own rte_eal_init, with its own arguments.
  std::string prefix = "--file-prefix=host-" + std::to_string(getpid());
  char* argv[] = {const_cast<char*>("host"), const_cast<char*>("--in-memory"), const_cast<char*>("--no-pci"),
                  const_cast<char*>("--single-file-segments"), const_cast<char*>("--no-telemetry"),
                  const_cast<char*>("--log-level=lib.eal:error"), prefix.data(), nullptr};
  ASSERT_GE(rte_eal_init(7, argv), 0) << rte_strerror(rte_errno);

  ProviderOptions o;
  o.allow_fallback = false;
  o.eal.args = {"--this-would-fail-if-onchip-called-rte_eal_init"};
  auto p = MemoryProvider::Create(o);
  ASSERT_TRUE(p.has_value()) << p.error().describe();
  EXPECT_EQ(Eal::origin(), Eal::Origin::kHost);
  auto a = (*p)->Allocate(8192, 4096);
  ASSERT_TRUE(a.has_value()) << a.error().describe();
  EXPECT_EQ(a->tier, Tier::kDpdkHugepages);
  ASSERT_TRUE((*p)->Free(a->addr).has_value());
  p->reset();
  ASSERT_TRUE(Eal::Shutdown().has_value());  // forgets the adoption; the host's EAL stays up
  EXPECT_GT(rte_lcore_count(), 0u);
  EXPECT_EQ(rte_eal_cleanup(), 0);  // the host cleans up its own EAL
}

}  // namespace
}  // namespace onchip::alloc
