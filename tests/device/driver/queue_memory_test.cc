// Queue memory on the software ConnectX: default queue buffers are carved by the device's memory
// provider from regions mapped once through the bus, custom parent-domain memory is mapped with
// MapHost, and either way the device reaches data() at iova(). Host MRs on ordinary memory keep
// 4 KiB MTT entries, and what the device writes through the key lands at the host address.
// (The 2 MiB cases need hugepages: tests/hugepages/driver.)
#include <infiniband/mlx5dv.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "alloc/provider.h"
#include "driver/parent_domain.h"
#include "driver/queue_buffer.h"
#include "tests/device/fixture.h"

namespace onchip::testing {
namespace {

using driver::QueueBuffer;
constexpr uint64_t kMiB2 = uint64_t{2} << 20;

class QueueMemoryTest : public DriverPdTest {
 protected:
  // True when a device write of `bytes` at `iova` shows up at `host`.
  bool DeviceWriteLands(uint64_t iova, void* host) {
    const std::byte bytes[8] = {std::byte{0xd1}, std::byte{2}, std::byte{3}, std::byte{4},
                                std::byte{5},    std::byte{6}, std::byte{7}, std::byte{0xd8}};
    return sim_->iommu().Write(iova, bytes) && std::memcmp(host, bytes, sizeof bytes) == 0;
  }
};

TEST_F(QueueMemoryTest, DefaultBuffersShareOneMappedRegion) {
  auto* pd = driver::Pd::From(pd_);
  auto a = QueueBuffer::Allocate(pd, 64, 64, MLX5DV_RES_TYPE_DBR);
  ASSERT_TRUE(a) << a.error().describe();
  const size_t mappings = sim_->dma_mappings();
  auto b = QueueBuffer::Allocate(pd, 64, 64, MLX5DV_RES_TYPE_DBR);
  ASSERT_TRUE(b) << b.error().describe();
  EXPECT_FALSE(a->custom());
  EXPECT_EQ(sim_->dma_mappings(), mappings);  // the second buffer maps nothing new

  auto da = device().memory().Describe(a->data());
  auto db = device().memory().Describe(b->data());
  ASSERT_TRUE(da && db);
  // Two 64-byte blocks of one hugepage-sized region (one fd), not a page each.
  EXPECT_EQ(da->length, 64u);
  EXPECT_EQ(da->fd, db->fd);
  const auto pa = reinterpret_cast<uintptr_t>(a->data()), pb = reinterpret_cast<uintptr_t>(b->data());
  EXPECT_LT(pa > pb ? pa - pb : pb - pa, kMiB2);
  EXPECT_EQ(da->page_size, da->tier == alloc::Tier::kMemfd4k ? 4096u : kMiB2);
  EXPECT_GE(da->fd, 0);  // shareable: a device in another process can map it
  // The device reaches each buffer at its IOVA.
  EXPECT_TRUE(da->dma_mapped);
  EXPECT_EQ(da->iova, a->iova());
  EXPECT_NE(a->iova(), b->iova());
  EXPECT_EQ(a->iova() % 64, 0u);
  EXPECT_TRUE(DeviceWriteLands(a->iova(), a->data()));
  EXPECT_TRUE(DeviceWriteLands(b->iova(), b->data()));

  // Freed back to the provider, and zero when it comes out again.
  void* old = a->data();
  a->Reset();
  EXPECT_EQ(device().memory().Describe(old).error().errno_value(), EINVAL);
  auto c = QueueBuffer::Allocate(pd, 64, 64, MLX5DV_RES_TYPE_DBR);
  ASSERT_TRUE(c);
  const auto* bytes = static_cast<const unsigned char*>(c->data());
  for (size_t i = 0; i < 64; ++i) ASSERT_EQ(bytes[i], 0) << i;
}

TEST_F(QueueMemoryTest, DefaultBuffersHonourAlignmentUpToTwoMebibytes) {
  auto* pd = driver::Pd::From(pd_);
  for (size_t align : {size_t{8}, size_t{4096}, size_t{65536}}) {
    auto b = QueueBuffer::Allocate(pd, 100, align, MLX5DV_RES_TYPE_CQ);
    ASSERT_TRUE(b) << b.error().describe();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % align, 0u) << align;
    EXPECT_EQ(b->iova() % align, 0u) << align;
  }
  EXPECT_EQ(QueueBuffer::Allocate(pd, 64, 2 * kMiB2, MLX5DV_RES_TYPE_CQ).error().errno_value(),
            EINVAL);
}

// libmlx5's MLX_<QUEUE>_ALLOC_TYPE=HUGE demands hugepages for that kind of queue: on a provider
// of ordinary pages such a buffer is refused (ENOMEM), while the other kinds, and the other
// values, take the provider's pages. (On hugepages it is served: tests/hugepages/driver.)
TEST_F(QueueMemoryTest, HugeAllocTypeRefusesOrdinaryPages) {
  ASSERT_EQ(v::dealloc_pd(pd_), 0);
  ASSERT_EQ(setenv("ONCHIP_ALLOC_TIER", "4k", 1), 0);
  Open(Config());
  ASSERT_EQ(unsetenv("ONCHIP_ALLOC_TIER"), 0);
  pd_ = v::alloc_pd(verbs_);
  ASSERT_NE(pd_, nullptr);
  auto* pd = driver::Pd::From(pd_);

  ASSERT_EQ(setenv("MLX_CQ_ALLOC_TYPE", "huge", 1), 0);  // libmlx5 compares without case
  auto cq = QueueBuffer::Allocate(pd, 4096, 4096, MLX5DV_RES_TYPE_CQ);
  ASSERT_FALSE(cq);
  EXPECT_EQ(cq.error().errno_value(), ENOMEM);
  EXPECT_TRUE(QueueBuffer::Allocate(pd, 4096, 4096, MLX5DV_RES_TYPE_QP));
  EXPECT_TRUE(QueueBuffer::Allocate(pd, 64, 64, MLX5DV_RES_TYPE_DBR));
  ibv_cq* verbs_cq = v::create_cq(verbs_, 16, nullptr, 0);
  EXPECT_EQ(verbs_cq, nullptr);
  EXPECT_EQ(errno, ENOMEM);
  ASSERT_EQ(setenv("MLX_CQ_ALLOC_TYPE", "PREFER_HUGE", 1), 0);
  EXPECT_TRUE(QueueBuffer::Allocate(pd, 4096, 4096, MLX5DV_RES_TYPE_CQ));
  ASSERT_EQ(unsetenv("MLX_CQ_ALLOC_TYPE"), 0);

  ASSERT_EQ(setenv("MLX_SRQ_ALLOC_TYPE", "HUGE", 1), 0);
  EXPECT_FALSE(QueueBuffer::Allocate(pd, 4096, 4096, MLX5DV_RES_TYPE_SRQ));
  ASSERT_EQ(unsetenv("MLX_SRQ_ALLOC_TYPE"), 0);
  EXPECT_TRUE(QueueBuffer::Allocate(pd, 4096, 4096, MLX5DV_RES_TYPE_SRQ));
}

// A parent-domain allocator that records what it was asked for.
struct Recorder {
  std::vector<uint64_t> types;
  static void* Alloc(ibv_pd*, void* ctx, size_t size, size_t alignment, uint64_t type) {
    static_cast<Recorder*>(ctx)->types.push_back(type);
    void* p = nullptr;
    return posix_memalign(&p, alignment, size) == 0 ? p : nullptr;
  }
  static void Free(ibv_pd*, void*, void* ptr, uint64_t) { std::free(ptr); }
};

TEST_F(QueueMemoryTest, CustomAllocatorMemoryIsMappedForTheDeviceWhileItLives) {
  Recorder rec;
  ibv_parent_domain_init_attr attr{};
  attr.pd = pd_;
  attr.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
  attr.alloc = &Recorder::Alloc;
  attr.free = &Recorder::Free;
  attr.pd_context = &rec;
  ibv_pd* pad = v::alloc_parent_domain(verbs_, &attr);
  ASSERT_NE(pad, nullptr) << strerror(errno);
  const size_t before = sim_->dma_mappings();
  {
    auto dbr = QueueBuffer::Allocate(driver::Pd::From(pad), 8, 8, MLX5DV_RES_TYPE_DBR);
    auto cq = QueueBuffer::Allocate(driver::Pd::From(pad), 8192, 4096, MLX5DV_RES_TYPE_CQ);
    ASSERT_TRUE(dbr && cq);
    EXPECT_TRUE(dbr->custom() && cq->custom());
    ASSERT_EQ(rec.types.size(), 2u);
    EXPECT_EQ(rec.types[0], uint64_t{MLX5DV_RES_TYPE_DBR});
    EXPECT_EQ(rec.types[1], uint64_t{MLX5DV_RES_TYPE_CQ});
    EXPECT_EQ(sim_->dma_mappings(), before + 2);  // the pages under each, mapped
    // The IOVA keeps the buffer's offset inside its page.
    EXPECT_EQ(dbr->iova() % 4096, reinterpret_cast<uintptr_t>(dbr->data()) % 4096);
    EXPECT_TRUE(DeviceWriteLands(dbr->iova(), dbr->data()));
    EXPECT_TRUE(DeviceWriteLands(cq->iova() + 8192 - 8, static_cast<char*>(cq->data()) + 8192 - 8));
  }
  EXPECT_EQ(sim_->dma_mappings(), before);  // unmapped before the application's free
  EXPECT_EQ(v::dealloc_pd(pad), 0);
}

// ---- host MRs: the MTT page size ----

TEST_F(QueueMemoryTest, MrOnOrdinaryMemoryKeepsFourKibEntries) {
  constexpr size_t kBytes = 4 << 20;
  void* buf = nullptr;
  ASSERT_EQ(posix_memalign(&buf, kMiB2, kBytes), 0);
  std::memset(buf, 0, kBytes);
  ibv_mr* mr = v::reg_mr(pd_, buf, kBytes, reinterpret_cast<uintptr_t>(buf), IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr) << strerror(errno);
  auto q = QueryMkey(mr->lkey);
  EXPECT_EQ(q.get(kQueriedMkc.log_page_size), 12u);
  EXPECT_EQ(q.get(kQueriedMkc.translations_octword_size), kBytes / 4096 / 2);
  // Bytes the device writes through the key land where the application looks.
  const std::byte bytes[4] = {std::byte{9}, std::byte{8}, std::byte{7}, std::byte{6}};
  const uint64_t at = reinterpret_cast<uintptr_t>(buf) + 3 * (1 << 20) + 4094;  // across a page
  ASSERT_TRUE(sim_->firmware().WriteMkeyHost(mr->lkey, at, bytes));
  EXPECT_EQ(std::memcmp(reinterpret_cast<void*>(at), bytes, sizeof bytes), 0);
  EXPECT_EQ(v::dereg_mr(mr), 0);
  std::free(buf);
}

}  // namespace
}  // namespace onchip::testing
