// The parent-domain hook, driven exactly as libibverbs' mlx5 provider drives it (through the
// function pointers stored in ibv_parent_domain_init_attr), over the memfd 4 KiB tier.
#include "alloc/parent_domain_allocator.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

namespace onchip::alloc {
namespace {

constexpr uint64_t kQp = Mlx5ResourceType(ResourceType::kQp);
constexpr uint64_t kDbr = Mlx5ResourceType(ResourceType::kDbr);
constexpr uint64_t kCq = Mlx5ResourceType(ResourceType::kCq);

class ParentDomainHook : public ::testing::Test {
 protected:
  void SetUp() override {
    ProviderOptions o;
    o.first_tier = Tier::kMemfd4k;
    o.allow_fallback = false;
    auto p = MemoryProvider::Create(o);
    ASSERT_TRUE(p.has_value());
    provider_ = std::move(*p);
    hook_ = std::make_unique<ParentDomainAllocator>(*provider_);
    hook_->Install(attr_);
  }
  void* Alloc(size_t size, size_t align, uint64_t type) { return attr_.alloc(nullptr, attr_.pd_context, size, align, type); }
  void Free(void* p, uint64_t type) { attr_.free(nullptr, attr_.pd_context, p, type); }

  std::unique_ptr<MemoryProvider> provider_;
  std::unique_ptr<ParentDomainAllocator> hook_;
  ibv_parent_domain_init_attr attr_{};
};

TEST_F(ParentDomainHook, InstallFillsTheAttr) {
  EXPECT_EQ(attr_.alloc, &ParentDomainAllocator::Alloc);
  EXPECT_EQ(attr_.free, &ParentDomainAllocator::Free);
  EXPECT_EQ(attr_.pd_context, hook_.get());
  EXPECT_EQ(attr_.comp_mask, static_cast<uint32_t>(IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
                                                    IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT));
  EXPECT_EQ(kDbr, (uint64_t{1} << 32) | 3);
  EXPECT_EQ(ClassifyResourceType(kCq), ResourceType::kCq);
  EXPECT_EQ(ClassifyResourceType((uint64_t{2} << 32) | 1), ResourceType::kOther);
  EXPECT_EQ(ClassifyResourceType((uint64_t{1} << 32) | 9), ResourceType::kOther);
}

TEST_F(ParentDomainHook, DoorbellRecordsAreEightByteAlignedZeroedAndOnTheirOwnLines) {
  std::vector<void*> dbrs;
  for (int i = 0; i < 256; ++i) {
    void* p = Alloc(8, 8, kDbr);
    ASSERT_NE(p, nullptr);
    ASSERT_NE(p, IBV_ALLOCATOR_USE_DEFAULT);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    EXPECT_EQ(*static_cast<uint64_t*>(p), 0u);
    *static_cast<uint64_t*>(p) = 0xdeadbeef;
    dbrs.push_back(p);
  }
  ResourceStats s = hook_->stats(ResourceType::kDbr);
  EXPECT_EQ(s.allocations, 256u);
  EXPECT_EQ(s.live, 256u);
  EXPECT_EQ(s.bytes_in_use, 256u * 64);
  EXPECT_EQ(provider_->stats().of(Tier::kMemfd4k).regions, 1u);
  for (void* p : dbrs) Free(p, kDbr);
  s = hook_->stats(ResourceType::kDbr);
  EXPECT_EQ(s.frees, 256u);
  EXPECT_EQ(s.live, 0u);
  EXPECT_EQ(s.bytes_in_use, 0u);
}

TEST_F(ParentDomainHook, QueueBuffersHonourAlignmentFromEightBytesToTwoMegabytes) {
  for (size_t align = 8; align <= (size_t{2} << 20); align <<= 1) {
    void* p = Alloc(3 * 4096, align, kQp);
    ASSERT_NE(p, nullptr) << align;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u) << align;
    Free(p, kQp);
  }
  EXPECT_EQ(hook_->stats(ResourceType::kQp).allocations, 19u);
  EXPECT_EQ(hook_->stats(ResourceType::kQp).live, 0u);
}

TEST_F(ParentDomainHook, FailuresReturnNullWithErrno) {
  errno = 0;
  EXPECT_EQ(Alloc(0, 8, kCq), nullptr);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(Alloc(4096, 3000, kCq), nullptr);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(attr_.alloc(nullptr, nullptr, 64, 64, kCq), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(hook_->stats(ResourceType::kCq).failed_allocations, 2u);
  // Above 2 MiB alignment the provider's default allocator takes over, by the verbs contract.
  EXPECT_EQ(Alloc(size_t{8} << 20, size_t{4} << 20, kQp), IBV_ALLOCATOR_USE_DEFAULT);
  EXPECT_EQ(hook_->stats(ResourceType::kQp).defaulted, 1u);
}

TEST_F(ParentDomainHook, BadFreesAreCountedNeverFatal) {
  void* keep = Alloc(4096, 4096, kCq);
  void* p = Alloc(4096, 4096, kCq);
  ASSERT_NE(keep, nullptr);
  ASSERT_NE(p, nullptr);
  std::memset(keep, 0x11, 4096);
  Free(p, kCq);
  Free(p, kCq);  // double free
  int local = 0;
  Free(&local, kCq);  // foreign
  Free(static_cast<char*>(keep) + 128, kCq);  // interior
  Free(nullptr, kCq);  // ignored, like free(NULL)
  ResourceStats s = hook_->stats(ResourceType::kCq);
  EXPECT_EQ(s.rejected_frees, 3u);
  EXPECT_EQ(s.frees, 1u);
  EXPECT_EQ(s.live, 1u);
  EXPECT_EQ(provider_->stats().rejected_frees, 3u);
  EXPECT_EQ(static_cast<unsigned char*>(keep)[4095], 0x11) << "a rejected free touched memory";
  Free(keep, kCq);
  EXPECT_EQ(hook_->stats(ResourceType::kCq).live, 0u);
}

TEST_F(ParentDomainHook, FreeUnderAnotherTypeIsCountedAgainstTheOwner) {
  void* p = Alloc(4096, 4096, kQp);
  ASSERT_NE(p, nullptr);
  Free(p, kCq);
  EXPECT_EQ(hook_->stats(ResourceType::kCq).type_mismatches, 1u);
  EXPECT_EQ(hook_->stats(ResourceType::kQp).frees, 1u);
  EXPECT_EQ(hook_->stats(ResourceType::kQp).live, 0u);
}

TEST_F(ParentDomainHook, CLinkageEntryPointsAreTheSameHook) {
  void* p = onchip_parent_domain_alloc(nullptr, hook_.get(), 64, 64, kDbr);
  ASSERT_NE(p, nullptr);
  onchip_parent_domain_free(nullptr, hook_.get(), p, kDbr);
  EXPECT_EQ(hook_->stats(ResourceType::kDbr).frees, 1u);
}

TEST_F(ParentDomainHook, ConcurrentQueuesAndDoorbells) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([this, t] {
      for (int i = 0; i < 2000; ++i) {
        uint64_t type = (i + t) % 2 ? kDbr : kQp;
        void* p = type == kDbr ? Alloc(8, 8, type) : Alloc(16384, 4096, type);
        if (p == nullptr) continue;
        Free(p, type);
      }
    });
  }
  for (auto& th : threads) th.join();
  ResourceStats total = hook_->total();
  EXPECT_EQ(total.allocations, 8000u);
  EXPECT_EQ(total.frees, 8000u);
  EXPECT_EQ(total.live, 0u);
  EXPECT_EQ(total.rejected_frees, 0u);
}

}  // namespace
}  // namespace onchip::alloc
