// tier2: the DPDK EAL hugepage tier, end to end. Needs reserved 2 MiB hugepages
// (echo 256 > /proc/sys/vm/nr_hugepages as root); skips with the reason otherwise.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "alloc/eal.h"
#include "alloc/hugepage_pool.h"
#include "alloc/parent_domain_allocator.h"
#include "alloc/provider.h"
#include "tests/hugepages/free_hugepages.h"
#include "tests/unit/alloc/recording_mapper.h"
#include "tests/unit/alloc/smaps.h"

namespace onchip::alloc {
namespace {

constexpr uint64_t kNeedFree = 32;  // 64 MiB

class DpdkHugepages : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = onchip::testing::MissingFreeHugepages(kNeedFree)) GTEST_SKIP() << *why;
    ProviderOptions o;
    o.first_tier = Tier::kDpdkHugepages;
    o.allow_fallback = false;
    o.mapper = &mapper_;
    auto p = MemoryProvider::Create(o);
    ASSERT_TRUE(p.has_value()) << p.error().describe();
    provider_ = std::move(*p);
  }

  testing::RecordingMapper mapper_;
  std::unique_ptr<MemoryProvider> provider_;
};

TEST_F(DpdkHugepages, BuffersAreHugepageBackedAlignedZeroedAndForkSafe) {
  std::vector<Allocation> live;
  for (size_t align = 8; align <= (size_t{2} << 20); align <<= 2) {
    for (size_t size : {size_t{8}, size_t{4096}, size_t{100000}, size_t{2} << 20}) {
      auto a = provider_->Allocate(size, align);
      ASSERT_TRUE(a.has_value()) << a.error().describe();
      EXPECT_EQ(a->tier, Tier::kDpdkHugepages);
      EXPECT_EQ(a->page_size, size_t{2} << 20);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(a->addr) % align, 0u);
      auto* b = static_cast<unsigned char*>(a->addr);
      EXPECT_EQ(b[0], 0);
      EXPECT_EQ(b[a->length - 1], 0);
      std::memset(b, 0xc3, size);
      live.push_back(*a);
    }
  }
  auto facts = testing::FactsFor(live[0].addr);
  ASSERT_TRUE(facts.has_value());
  EXPECT_EQ(facts->kernel_page_size, size_t{2} << 20) << "the kernel maps it with 2 MiB pages";
  EXPECT_TRUE(facts->has_flag("dc")) << facts->vm_flags;
  for (const Allocation& a : live) ASSERT_TRUE(provider_->Free(a.addr).has_value());
  auto again = provider_->Allocate(size_t{2} << 20, 64);
  ASSERT_TRUE(again.has_value());
  auto* b = static_cast<unsigned char*>(again->addr);
  EXPECT_TRUE(std::all_of(b, b + again->length, [](unsigned char c) { return c == 0; }));
  ASSERT_TRUE(provider_->Free(again->addr).has_value());
}

TEST_F(DpdkHugepages, MemsegFdAndOffsetReachTheSameBytes) {
  auto small = provider_->Allocate(4096, 4096);
  auto big = provider_->Allocate(size_t{6} << 20, 4096);  // a region of three pages
  ASSERT_TRUE(small && big);
  for (const Allocation* a : {&*small, &*big}) {
    ASSERT_GE(a->fd, 0);
    // mmap needs a page-aligned offset: map the hugepage that holds the buffer.
    uint64_t page_off = a->fd_offset & ~uint64_t{(2 << 20) - 1};
    uint64_t in_page = a->fd_offset - page_off;
    size_t len = ((in_page + a->length + (2 << 20) - 1) / (2 << 20)) * (2 << 20);
    void* view = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, static_cast<off_t>(page_off));
    ASSERT_NE(view, MAP_FAILED) << strerror(errno);
    auto* v = static_cast<unsigned char*>(view) + in_page;
    auto* b = static_cast<unsigned char*>(a->addr);
    b[0] = 0x42;
    b[a->length - 1] = 0x24;
    EXPECT_EQ(v[0], 0x42);
    EXPECT_EQ(v[a->length - 1], 0x24) << "the whole region is one range of the file";
    munmap(view, len);
  }
  ASSERT_TRUE(provider_->Free(small->addr).has_value());
  ASSERT_TRUE(provider_->Free(big->addr).has_value());
}

TEST_F(DpdkHugepages, OneDmaMappingPerRegion) {
  std::vector<void*> live;
  for (int i = 0; i < 200; ++i) {
    auto a = provider_->Allocate(8, 8);
    ASSERT_TRUE(a.has_value());
    ASSERT_TRUE(a->dma_mapped);
    live.push_back(a->addr);
  }
  EXPECT_EQ(mapper_.maps.size(), 1u);
  EXPECT_EQ(provider_->stats().of(Tier::kDpdkHugepages).regions, 1u);
  for (void* p : live) ASSERT_TRUE(provider_->Free(p).has_value());
}

TEST_F(DpdkHugepages, EalIsSharedAndOutlivesProvidersUntilShutdown) {
  EXPECT_TRUE(Eal::Running());
  EXPECT_EQ(Eal::origin(), Eal::Origin::kOnchip);
  ProviderOptions o;
  o.allow_fallback = false;
  auto second = MemoryProvider::Create(o);  // reuses the EAL: rte_eal_init runs once
  ASSERT_TRUE(second.has_value()) << second.error().describe();
  auto busy = Eal::Shutdown();
  ASSERT_FALSE(busy.has_value());
  EXPECT_EQ(busy.error().errno_value(), EBUSY);
  auto a = (*second)->Allocate(64, 64);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->tier, Tier::kDpdkHugepages);
  ASSERT_TRUE((*second)->Free(a->addr).has_value());
}

// A forked child inherits the EAL's state but not its threads, and the hugepages stay shared
// with the parent: the child may not allocate there. Acquire says so (ENOTSUP), and a provider
// the child creates starts at memfd hugetlb; the parent's EAL goes on.
TEST_F(DpdkHugepages, AForkedChildDoesWithoutItsParentsEal) {
  EXPECT_FALSE(Eal::InheritedByFork());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (!Eal::InheritedByFork()) _exit(1);
    auto lease = Eal::Acquire(EalOptions::FromEnvironment());
    if (lease || lease.error().errno_value() != ENOTSUP) _exit(2);
    ProviderOptions o;  // DPDK first, fallback allowed: the defaults
    auto p = MemoryProvider::Create(o);
    if (!p) _exit(3);
    auto a = (*p)->Allocate(4096, 4096);
    if (!a || a->tier == Tier::kDpdkHugepages) _exit(4);
    if (!(*p)->Free(a->addr)) _exit(5);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  auto a = provider_->Allocate(64, 64);
  ASSERT_TRUE(a.has_value()) << a.error().describe();
  EXPECT_EQ(a->tier, Tier::kDpdkHugepages);
  ASSERT_TRUE(provider_->Free(a->addr).has_value());
}

TEST_F(DpdkHugepages, ParentDomainHookServesEveryMlx5TypeFromHugepages) {
  ParentDomainAllocator hook(*provider_);
  ibv_parent_domain_init_attr attr{};
  hook.Install(attr);
  const struct {
    ResourceType type;
    size_t size, align;
  } calls[] = {{ResourceType::kQp, 65536, 4096},  {ResourceType::kRwq, 8192, 4096},
               {ResourceType::kDbr, 8, 8},         {ResourceType::kSrq, 16384, 4096},
               {ResourceType::kCq, 262144, 4096}};
  std::vector<std::pair<void*, uint64_t>> got;
  for (const auto& c : calls) {
    uint64_t rt = Mlx5ResourceType(c.type);
    void* p = attr.alloc(nullptr, attr.pd_context, c.size, c.align, rt);
    ASSERT_NE(p, nullptr);
    ASSERT_NE(p, IBV_ALLOCATOR_USE_DEFAULT);
    auto d = provider_->Describe(p);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->tier, Tier::kDpdkHugepages);
    EXPECT_EQ(hook.stats(c.type).live, 1u);
    got.emplace_back(p, rt);
  }
  for (auto [p, rt] : got) attr.free(nullptr, attr.pd_context, p, rt);
  EXPECT_EQ(hook.total().live, 0u);
  EXPECT_EQ(hook.total().rejected_frees, 0u);
}

// Tears the EAL down after every test so LSan sees DPDK's own allocations returned.
class EalTeardown : public ::testing::Environment {
 public:
  void TearDown() override {
    auto r = Eal::Shutdown();
    EXPECT_TRUE(r.has_value()) << r.error().describe();
  }
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new EalTeardown);

}  // namespace
}  // namespace onchip::alloc
