// Protection, parent and thread domains on the software ConnectX, through rdma-core's calls:
// every documented result (rdma-core libibverbs/verbs.c ibv_alloc_pd, ibv_alloc_parent_domain;
// providers/mlx5/verbs.c mlx5_alloc_parent_domain, mlx5_alloc_td),
// the allocator hook as the driver's queue buffers use it, and the doorbell a QP would ring.
#include <infiniband/mlx5dv.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "driver/parent_domain.h"
#include "driver/queue_buffer.h"
#include "driver/td.h"
#include "driver/uar.h"
#include "tests/device/fixture.h"

namespace onchip::testing {
namespace {

using driver::QueueBuffer;

class DomainsTest : public DriverTest {};

ibv_parent_domain_init_attr PadAttr(ibv_pd* pd, ibv_td* td, uint32_t comp_mask) {
  ibv_parent_domain_init_attr attr{};
  attr.pd = pd;
  attr.td = td;
  attr.comp_mask = comp_mask;
  return attr;
}

// ---- protection domains ----

TEST_F(DomainsTest, PdIsAllocatedOnTheDeviceAndFreed) {
  ibv_pd* pd = v::alloc_pd(verbs_);
  ASSERT_NE(pd, nullptr) << strerror(errno);
  EXPECT_EQ(pd->context, verbs_);
  EXPECT_EQ(sim_->counters().pds, 1u);
  EXPECT_EQ(v::dealloc_pd(pd), 0);
  EXPECT_EQ(sim_->counters().pds, 0u);
}

TEST_F(DomainsTest, AContextNoDeviceServesIsRefused) {
  ibv_context foreign{};
  errno = 0;
  EXPECT_EQ(v::alloc_pd(&foreign), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ibv_td_init_attr attr{.comp_mask = 0};
  errno = 0;
  EXPECT_EQ(v::alloc_td(&foreign, &attr), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(DomainsTest, PdWithChildrenIsBusyAndStaysUsable) {
  ibv_pd* pd = v::alloc_pd(verbs_);
  ASSERT_NE(pd, nullptr);
  std::vector<char> buf(8192);
  ibv_mr* mr = v::reg_mr(pd, buf.data(), buf.size(), reinterpret_cast<uintptr_t>(buf.data()),
                         IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr) << strerror(errno);
  EXPECT_EQ(v::dealloc_pd(pd), EBUSY);
  // Still a PD: more children can come and go.
  ibv_mw* mw = v::alloc_mw(pd, IBV_MW_TYPE_1);
  ASSERT_NE(mw, nullptr) << strerror(errno);
  EXPECT_EQ(v::dereg_mr(mr), 0);
  EXPECT_EQ(v::dealloc_pd(pd), EBUSY);  // the window
  EXPECT_EQ(v::dealloc_mw(mw), 0);
  ibv_parent_domain_init_attr attr = PadAttr(pd, nullptr, 0);
  ibv_pd* pad = v::alloc_parent_domain(verbs_, &attr);
  ASSERT_NE(pad, nullptr) << strerror(errno);
  EXPECT_EQ(v::dealloc_pd(pd), EBUSY);  // the parent domain
  EXPECT_EQ(v::dealloc_pd(pad), 0);
  EXPECT_EQ(sim_->counters().pds, 1u);
  EXPECT_EQ(v::dealloc_pd(pd), 0);
}

// ---- parent domains ----

TEST_F(DomainsTest, ParentDomainNeedsAPd) {
  ibv_parent_domain_init_attr attr = PadAttr(nullptr, nullptr, 0);
  errno = 0;
  EXPECT_EQ(v::alloc_parent_domain(verbs_, &attr), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(DomainsTest, ParentDomainRefusesUnknownCompMaskBits) {
  ibv_pd* pd = v::alloc_pd(verbs_);
  ASSERT_NE(pd, nullptr);
  const auto before = sim_->counters().commands;
  for (uint32_t bit : {3u, 8u, 31u}) {
    ibv_parent_domain_init_attr attr = PadAttr(pd, nullptr, 1u << bit);
    errno = 0;
    EXPECT_EQ(v::alloc_parent_domain(verbs_, &attr), nullptr) << bit;
    EXPECT_EQ(errno, EINVAL) << bit;
  }
  EXPECT_EQ(sim_->counters().commands, before);
  // ALLOW_CC_UNPROTECTED_ALLOC (bit 2) is known upstream: accepted, nothing to do here.
  ibv_parent_domain_init_attr cc = PadAttr(pd, nullptr, 1u << 2);
  ibv_pd* pad = v::alloc_parent_domain(verbs_, &cc);
  ASSERT_NE(pad, nullptr) << strerror(errno);
  EXPECT_EQ(v::dealloc_pd(pad), 0);
  EXPECT_EQ(v::dealloc_pd(pd), 0);
}

TEST_F(DomainsTest, ParentDomainSharesThePdsHandleAndContext) {
  ibv_pd* pd = v::alloc_pd(verbs_);
  ibv_parent_domain_init_attr attr = PadAttr(pd, nullptr, 0);
  ibv_pd* pad = v::alloc_parent_domain(verbs_, &attr);
  ASSERT_NE(pad, nullptr);
  EXPECT_NE(pad, pd);
  EXPECT_EQ(pad->handle, pd->handle);
  EXPECT_EQ(pad->context, pd->context);
  EXPECT_EQ(sim_->counters().pds, 1u);  // no device object of its own
  // An MR on the parent domain lands on the wrapped PD.
  std::vector<char> buf(4096);
  ibv_mr* mr = v::reg_mr(pad, buf.data(), buf.size(), reinterpret_cast<uintptr_t>(buf.data()), 0);
  ASSERT_NE(mr, nullptr) << strerror(errno);
  EXPECT_EQ(QueryMkey(mr->lkey).get(kQueriedMkc.pd), driver::Pd::From(pd)->pdn);
  EXPECT_EQ(v::dereg_mr(mr), 0);
  EXPECT_EQ(v::dealloc_pd(pad), 0);
  EXPECT_EQ(v::dealloc_pd(pd), 0);
}

// A recording allocator in the shape libibverbs calls.
struct Recorder {
  struct Call {
    ibv_pd* pd;
    void* context;
    size_t size;
    size_t alignment;
    uint64_t type;
    void* ptr;
  };
  std::vector<Call> allocs, frees;
  enum class Mode { kAllocate, kUseDefault, kFail } mode = Mode::kAllocate;

  static void* Alloc(ibv_pd* pd, void* ctx, size_t size, size_t alignment, uint64_t type) {
    auto* self = static_cast<Recorder*>(ctx);
    void* p = nullptr;
    if (self->mode == Mode::kUseDefault) p = IBV_ALLOCATOR_USE_DEFAULT;
    if (self->mode == Mode::kAllocate && posix_memalign(&p, alignment, size) != 0) p = nullptr;
    self->allocs.push_back({pd, ctx, size, alignment, type, p});
    return p;
  }
  static void Free(ibv_pd* pd, void* ctx, void* ptr, uint64_t type) {
    auto* self = static_cast<Recorder*>(ctx);
    self->frees.push_back({pd, ctx, 0, 0, type, ptr});
    std::free(ptr);
  }
};

class ParentDomainAllocatorTest : public DomainsTest {
 protected:
  void SetUp() override {
    DomainsTest::SetUp();
    pd_ = v::alloc_pd(verbs_);
    ASSERT_NE(pd_, nullptr);
  }
  void TearDown() override {
    EXPECT_EQ(v::dealloc_pd(pd_), 0);
    DomainsTest::TearDown();
  }
  ibv_pd* Pad(uint32_t mask, ibv_td* td = nullptr) {
    ibv_parent_domain_init_attr attr{.pd = pd_,
                                     .td = td,
                                     .comp_mask = mask,
                                     .alloc = &Recorder::Alloc,
                                     .free = &Recorder::Free,
                                     .pd_context = &rec_};
    ibv_pd* pad = v::alloc_parent_domain(verbs_, &attr);
    EXPECT_NE(pad, nullptr) << strerror(errno);
    return pad;
  }
  ibv_pd* pd_ = nullptr;
  Recorder rec_;
};

TEST_F(ParentDomainAllocatorTest, EveryQueueBufferGoesThroughTheAllocatorWithItsType) {
  ibv_pd* pad = Pad(IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT);
  auto* dpd = driver::Pd::From(pad);
  struct Want {
    uint64_t type;
    size_t size, alignment;
  };
  const Want wants[] = {{MLX5DV_RES_TYPE_QP, 16384, 4096}, {MLX5DV_RES_TYPE_RWQ, 4096, 4096},
                        {MLX5DV_RES_TYPE_DBR, 8, 8},         {MLX5DV_RES_TYPE_SRQ, 8192, 4096},
                        {MLX5DV_RES_TYPE_CQ, 4096, 4096}};
  std::vector<QueueBuffer> buffers;
  for (const Want& w : wants) {
    auto b = QueueBuffer::Allocate(dpd, w.size, w.alignment, w.type);
    ASSERT_TRUE(b) << b.error().describe();
    EXPECT_TRUE(b->custom());
    buffers.push_back(std::move(*b));
  }
  ASSERT_EQ(rec_.allocs.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(rec_.allocs[i].pd, pad);  // the parent domain, as rdma-core passes it
    EXPECT_EQ(rec_.allocs[i].context, &rec_);
    EXPECT_EQ(rec_.allocs[i].size, wants[i].size);
    EXPECT_EQ(rec_.allocs[i].alignment, wants[i].alignment);
    EXPECT_EQ(rec_.allocs[i].type, wants[i].type);
    EXPECT_EQ(rec_.allocs[i].type >> 32, uint64_t{RDMA_DRIVER_MLX5});
    EXPECT_EQ(buffers[i].data(), rec_.allocs[i].ptr);
  }
  // Queues on it pin the parent domain.
  EXPECT_EQ(v::dealloc_pd(pad), EBUSY);
  buffers.clear();
  ASSERT_EQ(rec_.frees.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(rec_.frees[i].pd, pad);
    EXPECT_EQ(rec_.frees[i].type, wants[i].type);  // the same type it was allocated with
    EXPECT_EQ(rec_.frees[i].ptr, rec_.allocs[i].ptr);
  }
  EXPECT_EQ(v::dealloc_pd(pad), 0);
}

TEST_F(ParentDomainAllocatorTest, UseDefaultFallsBackToTheDriversZeroedMemory) {
  rec_.mode = Recorder::Mode::kUseDefault;
  ibv_pd* pad = Pad(IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT);
  auto b = QueueBuffer::Allocate(driver::Pd::From(pad), 10000, 4096, MLX5DV_RES_TYPE_CQ);
  ASSERT_TRUE(b) << b.error().describe();
  EXPECT_FALSE(b->custom());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % 4096, 0u);
  const auto* bytes = static_cast<const unsigned char*>(b->data());
  for (size_t i = 0; i < 10000; ++i) ASSERT_EQ(bytes[i], 0) << i;
  b->Reset();
  EXPECT_TRUE(rec_.frees.empty());  // the driver frees its own memory
  EXPECT_EQ(v::dealloc_pd(pad), 0);
}

TEST_F(ParentDomainAllocatorTest, NullFromTheAllocatorIsAFailure) {
  rec_.mode = Recorder::Mode::kFail;
  ibv_pd* pad = Pad(IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT);
  auto b = QueueBuffer::Allocate(driver::Pd::From(pad), 4096, 4096, MLX5DV_RES_TYPE_QP);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().errno_value(), ENOMEM);
  EXPECT_EQ(v::dealloc_pd(pad), 0);  // the failed buffer pinned nothing
}

TEST_F(ParentDomainAllocatorTest, CallbacksAreKeptOnlyWithTheirMaskBits) {
  // Without ALLOCATORS the callbacks are ignored: the driver allocates.
  ibv_pd* pad = Pad(IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT);
  auto* p = driver::ParentDomain::From(driver::Pd::From(pad));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->alloc, nullptr);
  EXPECT_EQ(p->free, nullptr);
  EXPECT_EQ(p->pd_context, &rec_);
  {
    auto b = QueueBuffer::Allocate(&p->pd, 64, 64, MLX5DV_RES_TYPE_DBR);
    ASSERT_TRUE(b);
    EXPECT_FALSE(b->custom());
  }
  EXPECT_TRUE(rec_.allocs.empty());
  EXPECT_EQ(v::dealloc_pd(pad), 0);
  // Without PD_CONTEXT the allocator runs with a NULL context.
  ibv_pd* pad2 = Pad(IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS);
  auto* p2 = driver::ParentDomain::From(driver::Pd::From(pad2));
  EXPECT_EQ(p2->pd_context, nullptr);
  EXPECT_NE(p2->alloc, nullptr);
  EXPECT_EQ(v::dealloc_pd(pad2), 0);
}

TEST_F(ParentDomainAllocatorTest, BufferChecksItsArguments) {
  auto* pd = driver::Pd::From(pd_);
  EXPECT_EQ(QueueBuffer::Allocate(pd, 0, 64, MLX5DV_RES_TYPE_QP).error().errno_value(), EINVAL);
  EXPECT_EQ(QueueBuffer::Allocate(pd, 64, 48, MLX5DV_RES_TYPE_QP).error().errno_value(), EINVAL);
  EXPECT_EQ(QueueBuffer::Allocate(pd, 64, 64, 7).error().errno_value(), EINVAL);
  // A plain PD's queues are pinned too (a PD with QPs cannot go).
  auto b = QueueBuffer::Allocate(pd, 64, 64, MLX5DV_RES_TYPE_QP);
  ASSERT_TRUE(b);
  EXPECT_EQ(v::dealloc_pd(pd_), EBUSY);
}

// ---- thread domains ----

TEST_F(DomainsTest, ThreadDomainCompMaskMustBeZero) {
  ibv_td_init_attr attr{.comp_mask = 1};
  errno = 0;
  EXPECT_EQ(v::alloc_td(verbs_, &attr), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(sim_->counters().uars, 1u);  // the shared UAR only (the completion EQ's, from bring-up)
}

TEST_F(DomainsTest, ThreadDomainOwnsADedicatedBlueFlameRegister) {
  ibv_td_init_attr attr{.comp_mask = 0};
  ibv_td* a = v::alloc_td(verbs_, &attr);
  ibv_td* b = v::alloc_td(verbs_, &attr);
  ASSERT_TRUE(a && b) << strerror(errno);
  EXPECT_EQ(a->context, verbs_);
  EXPECT_EQ(sim_->counters().uars, 3u);  // two dedicated, and the shared one
  const driver::Bfreg* bfa = driver::Td::From(a)->bf;
  const driver::Bfreg* bfb = driver::Td::From(b)->bf;
  EXPECT_NE(bfa->uar_index, bfb->uar_index);
  EXPECT_TRUE(bfa->blueflame);
  EXPECT_FALSE(bfa->need_lock);
  EXPECT_EQ(bfa->buf_size, (1u << sim_->config().log_bf_reg_size) / 2);
  // The register is the UAR page's BlueFlame area in BAR0.
  EXPECT_EQ(bfa->reg, device().bus().bar0() + uint64_t{bfa->uar_index} * 4096 + 0x800);
  EXPECT_EQ(v::dealloc_td(a), 0);
  EXPECT_EQ(v::dealloc_td(b), 0);
  EXPECT_EQ(sim_->counters().uars, 1u);
}

TEST_F(DomainsTest, ThreadDomainWithoutBlueFlameSharesTheNonCachedUar) {
  sim::DeviceConfig config;
  config.bf = false;
  Open(config);
  ibv_td_init_attr attr{.comp_mask = 0};
  ibv_td* a = v::alloc_td(verbs_, &attr);
  ibv_td* b = v::alloc_td(verbs_, &attr);
  ASSERT_TRUE(a && b) << strerror(errno);
  EXPECT_EQ(driver::Td::From(a)->bf, driver::Td::From(b)->bf);
  EXPECT_FALSE(driver::Td::From(a)->bf->blueflame);
  EXPECT_EQ(sim_->counters().uars, 1u);  // the shared UAR, which the completion EQ sits on too
  EXPECT_EQ(v::dealloc_td(a), 0);
  EXPECT_EQ(v::dealloc_td(b), 0);
  // The shared UAR stays for the device's life; Close returns it (TearDown checks).
}

TEST_F(DomainsTest, ThreadDomainHeldByAParentDomainIsBusy) {
  ibv_td_init_attr tattr{.comp_mask = 0};
  ibv_td* td = v::alloc_td(verbs_, &tattr);
  ibv_pd* pd = v::alloc_pd(verbs_);
  ASSERT_TRUE(td && pd);
  ibv_parent_domain_init_attr attr = PadAttr(pd, td, 0);
  ibv_pd* pad = v::alloc_parent_domain(verbs_, &attr);
  ASSERT_NE(pad, nullptr);
  EXPECT_EQ(v::dealloc_td(td), EBUSY);
  EXPECT_EQ(sim_->counters().uars, 2u);  // still there, still usable (beside the shared UAR)
  // A QP created on the parent domain rings the thread domain's register, without a lock.
  auto bf = driver::SendBfregFor(driver::Pd::From(pad));
  ASSERT_TRUE(bf);
  EXPECT_EQ(*bf, driver::Td::From(td)->bf);
  EXPECT_FALSE((*bf)->need_lock);
  // On the plain PD: the shared register, locked.
  auto shared = driver::SendBfregFor(driver::Pd::From(pd));
  ASSERT_TRUE(shared);
  EXPECT_NE(*shared, *bf);
  EXPECT_TRUE((*shared)->need_lock);
  EXPECT_EQ(v::dealloc_pd(pad), 0);
  EXPECT_EQ(v::dealloc_td(td), 0);
  EXPECT_EQ(v::dealloc_pd(pd), 0);
}

TEST_F(DomainsTest, BlueFlameHalvesAlternate) {
  ibv_td_init_attr attr{.comp_mask = 0};
  ibv_td* td = v::alloc_td(verbs_, &attr);
  ASSERT_NE(td, nullptr);
  driver::Bfreg* bf = driver::Td::From(td)->bf;
  std::byte* first = bf->NextHalf();
  std::byte* second = bf->NextHalf();
  EXPECT_EQ(second, first + bf->buf_size);
  EXPECT_EQ(bf->NextHalf(), first);
  EXPECT_EQ(v::dealloc_td(td), 0);
}

TEST_F(DomainsTest, CloseReleasesLiveDomainsInOrder) {
  ibv_td_init_attr tattr{.comp_mask = 0};
  ibv_td* td = v::alloc_td(verbs_, &tattr);
  ibv_pd* pd = v::alloc_pd(verbs_);
  ibv_parent_domain_init_attr attr = PadAttr(pd, td, 0);
  ibv_pd* pad = v::alloc_parent_domain(verbs_, &attr);
  ASSERT_TRUE(td && pd && pad);
  const auto report = ctx_->Close();
  EXPECT_FALSE(report.first_error) << report.describe();
  EXPECT_EQ(report.of(driver::ObjectKind::kParentDomain), 1u);
  EXPECT_EQ(report.of(driver::ObjectKind::kTd), 1u);
  EXPECT_EQ(report.of(driver::ObjectKind::kPd), 1u);
  EXPECT_EQ(sim_->counters().uars, 0u);
  EXPECT_EQ(sim_->counters().pds, 0u);
  // The handles outlive the device and free without commands.
  EXPECT_EQ(v::dealloc_pd(pad), 0);
  EXPECT_EQ(v::dealloc_td(td), 0);
  EXPECT_EQ(v::dealloc_pd(pd), 0);
  ctx_.reset();
}

}  // namespace
}  // namespace onchip::testing
