// alloc/mapping.h: the mapping facts smaps gives for an address, and KernelPageSize's rules.
#include "alloc/mapping.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdint>

namespace onchip::alloc {
namespace {

constexpr size_t kPage = 4096;

TEST(Mapping, AnonymousMemoryIsOneMappingOnFourKibPages) {
  void* p = mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  ASSERT_EQ(madvise(p, 4 * kPage, MADV_DONTFORK), 0);
  auto m = MappingOf(static_cast<char*>(p) + 5000);
  ASSERT_TRUE(m) << m.error().describe();
  EXPECT_LE(m->start, reinterpret_cast<uintptr_t>(p));
  EXPECT_GE(m->end, reinterpret_cast<uintptr_t>(p) + 4 * kPage);
  EXPECT_EQ(m->kernel_page_size, kPage);
  EXPECT_TRUE(m->has_flag("dc")) << m->vm_flags;
  EXPECT_FALSE(m->has_flag("sh")) << m->vm_flags;
  EXPECT_EQ(KernelPageSize(p, 4 * kPage), kPage);
  munmap(p, 4 * kPage);
}

TEST(Mapping, ARangeOutsideOneMappingIsEfault) {
  // Three pages with different protections are three mappings; the middle one is then unmapped.
  auto* p = static_cast<char*>(
      mmap(nullptr, 3 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  ASSERT_EQ(mprotect(p + 2 * kPage, kPage, PROT_READ), 0);
  EXPECT_EQ(KernelPageSize(p, 2 * kPage), kPage);
  EXPECT_EQ(KernelPageSize(p, 2 * kPage + 1).error().errno_value(), EFAULT);  // spans two
  ASSERT_EQ(munmap(p + kPage, kPage), 0);
  EXPECT_EQ(MappingOf(p + kPage).error().errno_value(), EFAULT);  // unmapped
  EXPECT_EQ(KernelPageSize(p, 0).error().errno_value(), EFAULT);
  munmap(p, kPage);
  munmap(p + 2 * kPage, kPage);
}

TEST(Mapping, HugetlbMemoryIsOnTwoMebibytePages) {
  constexpr size_t kHuge = size_t{2} << 20;
  void* p = mmap(nullptr, kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
                 -1, 0);
  if (p == MAP_FAILED) GTEST_SKIP() << "no free 2 MiB hugepage (nr_hugepages)";
  EXPECT_EQ(KernelPageSize(p, kHuge), kHuge);
  auto m = MappingOf(p);
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->has_flag("ht")) << m->vm_flags;
  munmap(p, kHuge);
}

}  // namespace
}  // namespace onchip::alloc
