// The driver on 2 MiB hugepages: default queue buffers come from hugepage regions, and a host MR
// on hugetlb memory is described with 2 MiB MTT entries (log_page_size 21) whose bytes the
// device reaches at the right host addresses. Skips with the reason without reserved hugepages.
#include <infiniband/mlx5dv.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "alloc/provider.h"
#include "driver/queue_buffer.h"
#include "tests/device/fixture.h"

namespace onchip::testing {
namespace {

constexpr uint64_t kMiB2 = uint64_t{2} << 20;
constexpr size_t kBytes = 4 << 20;

class HugepageQueueMemoryTest : public DriverTest {
 protected:
  void SetUp() override {
    void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) {
      GTEST_SKIP() << "no 4 MiB of 2 MiB hugepages (" << strerror(errno)
                   << "); reserve some: echo 64 > /proc/sys/vm/nr_hugepages";
    }
    huge_ = static_cast<char*>(p);
    DriverTest::SetUp();
    pd_ = v::alloc_pd(verbs_);
    ASSERT_NE(pd_, nullptr);
  }
  void TearDown() override {
    if (huge_ == nullptr) return;
    EXPECT_EQ(v::dealloc_pd(pd_), 0);
    DriverTest::TearDown();
    munmap(huge_, kBytes);
  }
  uint64_t Mtt(const prm::Message<prm::query_mkey_out>& q, uint64_t i) {
    return q.get(prm::Element<64>{prm::query_mkey_out::bsf0_klm0_pas_mtt0_1.bit_offset + i * 64, "mtt"});
  }
  char* huge_ = nullptr;
  ibv_pd* pd_ = nullptr;
};

TEST_F(HugepageQueueMemoryTest, MrOnHugepagesUsesTwoMebibyteEntries) {
  ibv_mr* mr = v::reg_mr(pd_, huge_, kBytes, reinterpret_cast<uintptr_t>(huge_),
                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ASSERT_NE(mr, nullptr) << strerror(errno);
  auto q = QueryMkey(mr->lkey);
  EXPECT_EQ(q.get(kQueriedMkc.log_page_size), 21u);
  EXPECT_EQ(q.get(kQueriedMkc.translations_octword_size), 1u);  // 2 entries, one octoword
  EXPECT_EQ(q.get(kQueriedMkc.start_addr), reinterpret_cast<uintptr_t>(huge_));
  EXPECT_EQ(Mtt(q, 0) % kMiB2, 0u);
  EXPECT_EQ(Mtt(q, 1), Mtt(q, 0) + kMiB2);

  // Bytes the device writes through the key, in either page and across their boundary.
  const std::byte bytes[8] = {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4},
                              std::byte{5}, std::byte{6}, std::byte{7}, std::byte{8}};
  for (uint64_t off : {uint64_t{100}, kMiB2 - 4, kMiB2 + 12345, kBytes - 8}) {
    const uint64_t va = reinterpret_cast<uintptr_t>(huge_) + off;
    ASSERT_TRUE(sim_->firmware().WriteMkeyHost(mr->lkey, va, bytes)) << off;
    EXPECT_EQ(std::memcmp(huge_ + off, bytes, sizeof bytes), 0) << off;
  }
  EXPECT_EQ(v::dereg_mr(mr), 0);
}

TEST_F(HugepageQueueMemoryTest, SmallerOrMisalignedRangesKeepFourKibEntries) {
  // Less than a hugepage: 4 KiB entries (nothing to save, nothing more exposed).
  ibv_mr* small = v::reg_mr(pd_, huge_ + 4096, 1 << 20, reinterpret_cast<uintptr_t>(huge_ + 4096),
                            IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(small, nullptr) << strerror(errno);
  EXPECT_EQ(QueryMkey(small->lkey).get(kQueriedMkc.log_page_size), 12u);
  EXPECT_EQ(v::dereg_mr(small), 0);
  // An iova that disagrees with the address modulo 2 MiB cannot share 2 MiB pages with it.
  ibv_mr* shifted = v::reg_mr(pd_, huge_, kBytes, 0x10000000 + 4096, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(shifted, nullptr) << strerror(errno);
  auto q = QueryMkey(shifted->lkey);
  EXPECT_EQ(q.get(kQueriedMkc.log_page_size), 12u);
  EXPECT_EQ(q.get(kQueriedMkc.translations_octword_size), kBytes / 4096 / 2);
  const std::byte bytes[4] = {std::byte{4}, std::byte{3}, std::byte{2}, std::byte{1}};
  ASSERT_TRUE(sim_->firmware().WriteMkeyHost(shifted->lkey, 0x10000000 + 4096 + kMiB2, bytes));
  EXPECT_EQ(std::memcmp(huge_ + kMiB2, bytes, sizeof bytes), 0);
  EXPECT_EQ(v::dereg_mr(shifted), 0);
}

TEST_F(HugepageQueueMemoryTest, DefaultQueueBuffersLiveOnHugepages) {
  auto b = driver::QueueBuffer::Allocate(driver::Pd::From(pd_), 4096, 4096, MLX5DV_RES_TYPE_QP);
  ASSERT_TRUE(b) << b.error().describe();
  auto d = device().memory().Describe(b->data());
  ASSERT_TRUE(d);
  EXPECT_NE(d->tier, alloc::Tier::kMemfd4k) << "the provider fell back to 4 KiB pages";
  EXPECT_EQ(d->page_size, kMiB2);
  const std::byte bytes[4] = {std::byte{7}, std::byte{7}, std::byte{7}, std::byte{7}};
  ASSERT_TRUE(sim_->iommu().Write(b->iova(), bytes));
  EXPECT_EQ(std::memcmp(b->data(), bytes, sizeof bytes), 0);
}

// libmlx5's MLX_<QUEUE>_ALLOC_TYPE=HUGE is served from hugepages (pyverbs' huge-page test
// creates a CQ, a QP and an SRQ so); tests/device/driver has the refusal without them.
TEST_F(HugepageQueueMemoryTest, HugeAllocTypeIsServed) {
  ASSERT_EQ(setenv("MLX_QP_ALLOC_TYPE", "HUGE", 1), 0);
  auto b = driver::QueueBuffer::Allocate(driver::Pd::From(pd_), 4096, 4096, MLX5DV_RES_TYPE_QP);
  ASSERT_EQ(unsetenv("MLX_QP_ALLOC_TYPE"), 0);
  ASSERT_TRUE(b) << b.error().describe();
  auto d = device().memory().Describe(b->data());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->page_size, kMiB2);
}

}  // namespace
}  // namespace onchip::testing
