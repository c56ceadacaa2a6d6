// Completion queues on the software ConnectX: CREATE_CQ as libmlx5 and mlx5_ib size and check
// it, the ring and doorbell record the device is told about, the extended CQ's attribute
// checks, parent-domain memory with the CQ and DBR resource types (a resize's ring too), a
// refused resize, moderation through ibv_modify_cq, and teardown.
#include <infiniband/mlx5dv.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "driver/cq.h"
#include "driver/parent_domain.h"
#include "driver/uar.h"
#include "tests/device/fixture.h"
#include "uapi/prm/cq.h"
#include "uapi/prm/cqe.h"

namespace onchip::testing {
namespace {

class CqTest : public DriverTest {
 protected:
  prm::Message<prm::query_cq_out> QueryCq(uint32_t cqn, std::size_t pages = 1) {
    prm::Message<prm::query_cq_in> in;
    in.set(prm::query_cq_in::opcode, prm::QUERY_CQ).set(prm::query_cq_in::cqn, cqn);
    auto out = driver::cmd::Run<prm::query_cq_out>(device().commander(), in, pages * 8);
    EXPECT_TRUE(out) << out.error().describe();
    return out ? std::move(*out) : prm::Message<prm::query_cq_out>();
  }
  ibv_cq_ex* CreateEx(ibv_cq_init_attr_ex attr) { return v::create_cq_ex(verbs_, &attr); }
};

using Ctx = prm::cqc_bits<prm::query_cq_out::cq_context.bit_offset>;

TEST_F(CqTest, EntriesAreAPowerOfTwoAboveCqe) {
  for (auto [cqe, reported] : {std::pair{1, 1}, {2, 3}, {3, 3}, {4, 7}, {100, 127}, {128, 255}}) {
    ibv_cq* cq = v::create_cq(verbs_, cqe, nullptr, 0);
    ASSERT_NE(cq, nullptr) << strerror(errno);
    EXPECT_EQ(cq->cqe, reported) << cqe;
    EXPECT_EQ(cq->context, verbs_);
    EXPECT_EQ(sim_->counters().cqs, 1u);
    const driver::Cq* c = driver::Cq::From(cq);
    auto out = QueryCq(c->cqn, (c->ring.size() + 4095) / 4096);
    EXPECT_EQ(out.get(Ctx::log_cq_size), c->log_entries);
    EXPECT_EQ(uint32_t{1} << c->log_entries, uint32_t(reported) + 1);
    EXPECT_EQ(v::destroy_cq(cq), 0);
  }
  EXPECT_EQ(sim_->counters().cqs, 0u);
}

TEST_F(CqTest, TheDeviceKnowsTheRingTheRecordTheEqAndTheUar) {
  ibv_cq* cq = v::create_cq(verbs_, 200, nullptr, 0);  // 256 entries: 16 KiB, four pages
  ASSERT_NE(cq, nullptr) << strerror(errno);
  const driver::Cq* c = driver::Cq::From(cq);
  auto out = QueryCq(c->cqn, 4);
  EXPECT_EQ(out.get(Ctx::cqe_sz), 0u);  // 64-byte CQEs
  EXPECT_EQ(out.get(Ctx::log_page_size), 0u);
  EXPECT_EQ(out.get(Ctx::c_eqn_or_apu_element), device().comp_eqn());
  EXPECT_EQ(out.get(Ctx::uar_page), c->arm_register->uar_index);
  EXPECT_EQ(out.get(Ctx::dbr_addr), c->doorbell.iova());
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_EQ(out.get(prm::query_cq_out::pas[i]), c->ring.iova() + i * 4096) << i;
  // Software owns nothing yet: every CQE is invalid, the record is zero.
  for (uint32_t i = 0; i < c->entries(); ++i)
    ASSERT_EQ(uint8_t(c->cqe(i)[63]), prm::kCqeInitialOpOwn) << i;
  const auto* record = static_cast<const uint32_t*>(c->doorbell.data());
  EXPECT_EQ(record[0], 0u);
  EXPECT_EQ(record[1], 0u);
  // The arm register is the shared UAR's, the one the completion EQ sits on.
  auto shared = device().uars().Shared();
  ASSERT_TRUE(shared);
  EXPECT_EQ(c->arm_register, *shared);
  EXPECT_EQ(v::destroy_cq(cq), 0);
}

TEST_F(CqTest, CreateCqChecks) {
  const auto before = sim_->counters().commands;
  errno = 0;
  EXPECT_EQ(v::create_cq(verbs_, 0, nullptr, 0), nullptr);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(v::create_cq(verbs_, -1, nullptr, 0), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // log_max_cq_sz 22: 2^22 - 1 completions fit, 2^22 do not.
  errno = 0;
  EXPECT_EQ(v::create_cq(verbs_, 1 << sim_->config().log_max_cq_sz, nullptr, 0), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // One completion vector (the completion EQ).
  EXPECT_EQ(verbs_->num_comp_vectors, 1);
  errno = 0;
  EXPECT_EQ(v::create_cq(verbs_, 1, nullptr, 1), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(sim_->counters().commands, before);  // refused before the device
}

TEST_F(CqTest, TheLargestCqTheDeviceAllows) {
  ibv_cq* cq = v::create_cq(verbs_, (1 << 16) - 1, nullptr, 0);
  ASSERT_NE(cq, nullptr) << strerror(errno);
  EXPECT_EQ(cq->cqe, (1 << 16) - 1);
  EXPECT_EQ(v::destroy_cq(cq), 0);
}

TEST_F(CqTest, ExtendedCqChecks) {
  ibv_cq_init_attr_ex attr{};
  attr.cqe = 16;
  attr.comp_mask = 1u << 5;
  errno = 0;
  EXPECT_EQ(CreateEx(attr), nullptr);
  EXPECT_EQ(errno, EINVAL);
  attr.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
  attr.flags = 1u << 7;
  errno = 0;
  EXPECT_EQ(CreateEx(attr), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // The device has no cq_oi.
  attr.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
  errno = 0;
  EXPECT_EQ(CreateEx(attr), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  attr.flags = 0;
  attr.wc_flags = IBV_WC_EX_WITH_CVLAN;
  errno = 0;
  EXPECT_EQ(CreateEx(attr), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  attr.wc_flags = 0;
  attr.cqe = 0;
  errno = 0;
  EXPECT_EQ(CreateEx(attr), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // A plain PD is no allocator.
  ibv_pd* pd = v::alloc_pd(verbs_);
  ASSERT_NE(pd, nullptr);
  attr.cqe = 16;
  attr.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
  attr.parent_domain = pd;
  errno = 0;
  EXPECT_EQ(CreateEx(attr), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(sim_->counters().cqs, 0u);
  EXPECT_EQ(v::dealloc_pd(pd), 0);
}

TEST_F(CqTest, ExtendedCqWithTimestampsAndSingleThreaded) {
  ibv_cq_init_attr_ex attr{};
  attr.cqe = 31;
  attr.wc_flags = driver::kCqSupportedWcFlags;
  attr.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
  attr.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
  ibv_cq_ex* cq = CreateEx(attr);
  ASSERT_NE(cq, nullptr) << strerror(errno);
  EXPECT_EQ(cq->cqe, 31);
  // The provider op sets the context; libibverbs' __lib_ibv_create_cq_ex then runs
  // verbs_init_cq (cq_context, channel, counters), as verbs_events_test checks through it.
  EXPECT_EQ(cq->context, verbs_);
  const driver::Cq* c = driver::Cq::From(cq);
  EXPECT_TRUE(c->single_threaded);
  EXPECT_EQ(c->wc_flags, attr.wc_flags);
  EXPECT_EQ(v::destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
}

struct Allocation {
  void* ptr;
  uint64_t type;
};
struct Recorder {
  std::vector<Allocation> allocs;
  std::vector<uint64_t> frees;
};
void* RecordingAlloc(ibv_pd*, void* ctx, size_t size, size_t alignment, uint64_t type) {
  void* p = nullptr;
  if (posix_memalign(&p, alignment < 4096 ? 4096 : alignment, size) != 0) return nullptr;
  std::memset(p, 0x5a, size);
  static_cast<Recorder*>(ctx)->allocs.push_back({p, type});
  return p;
}
void RecordingFree(ibv_pd*, void* ctx, void* ptr, uint64_t type) {
  static_cast<Recorder*>(ctx)->frees.push_back(type);
  std::free(ptr);
}

TEST_F(CqTest, ParentDomainAllocatorSeesTheCqAndDbrTypes) {
  Recorder recorder;
  ibv_pd* pd = v::alloc_pd(verbs_);
  ASSERT_NE(pd, nullptr);
  ibv_parent_domain_init_attr pattr{};
  pattr.pd = pd;
  pattr.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
  pattr.alloc = RecordingAlloc;
  pattr.free = RecordingFree;
  pattr.pd_context = &recorder;
  ibv_pd* pad = v::alloc_parent_domain(verbs_, &pattr);
  ASSERT_NE(pad, nullptr) << strerror(errno);

  ibv_cq_init_attr_ex attr{};
  attr.cqe = 63;
  attr.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
  attr.parent_domain = pad;
  ibv_cq_ex* cq = CreateEx(attr);
  ASSERT_NE(cq, nullptr) << strerror(errno);
  ASSERT_EQ(recorder.allocs.size(), 2u);
  EXPECT_EQ(recorder.allocs[0].type, MLX5DV_RES_TYPE_CQ);
  EXPECT_EQ(recorder.allocs[1].type, MLX5DV_RES_TYPE_DBR);
  const driver::Cq* c = driver::Cq::From(cq);
  EXPECT_EQ(c->ring.data(), recorder.allocs[0].ptr);
  EXPECT_TRUE(c->ring.custom());
  // Custom memory is taken as it comes, but the CQEs and the record are the driver's to set.
  EXPECT_EQ(uint8_t(c->cqe(0)[63]), prm::kCqeInitialOpOwn);
  EXPECT_EQ(static_cast<const uint32_t*>(c->doorbell.data())[0], 0u);
  EXPECT_EQ(v::dealloc_pd(pad), EBUSY);  // the CQ's memory came through it
  // A resize takes its ring from the same allocator, then gives the old one back.
  ASSERT_EQ(v::resize_cq(ibv_cq_ex_to_cq(cq), 200), 0);
  EXPECT_EQ(cq->cqe, 255);
  ASSERT_EQ(recorder.allocs.size(), 3u);
  EXPECT_EQ(recorder.allocs[2].type, MLX5DV_RES_TYPE_CQ);
  EXPECT_EQ(c->ring.data(), recorder.allocs[2].ptr);
  ASSERT_EQ(recorder.frees.size(), 1u);
  EXPECT_EQ(recorder.frees[0], MLX5DV_RES_TYPE_CQ);
  EXPECT_EQ(QueryCq(c->cqn, 4).get(prm::query_cq_out::pas[0]), c->ring.iova());
  EXPECT_EQ(v::destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
  EXPECT_EQ(recorder.frees.size(), 3u);
  EXPECT_EQ(v::dealloc_pd(pad), 0);
  EXPECT_EQ(v::dealloc_pd(pd), 0);
}

TEST_F(CqTest, AFirmwareRefusalLeavesNothing) {
  sim_->firmware().InjectFailure({.count = 1, .opcode = prm::CREATE_CQ});
  errno = 0;
  EXPECT_EQ(v::create_cq(verbs_, 8, nullptr, 0), nullptr);
  EXPECT_NE(errno, 0);
  EXPECT_EQ(sim_->counters().cqs, 0u);
}

TEST_F(CqTest, ARefusedResizeLeavesTheCqAsItWas) {
  ibv_cq* cq = v::create_cq(verbs_, 8, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  const driver::Cq* c = driver::Cq::From(cq);
  const void* ring = c->ring.data();
  sim_->firmware().InjectFailure({.count = 1, .opcode = prm::MODIFY_CQ});
  EXPECT_NE(v::resize_cq(cq, 100), 0);
  EXPECT_EQ(cq->cqe, 15);
  EXPECT_EQ(c->ring.data(), ring);
  EXPECT_EQ(QueryCq(c->cqn).get(Ctx::log_cq_size), 4u);
  // It still resizes afterwards.
  ASSERT_EQ(v::resize_cq(cq, 100), 0);
  EXPECT_EQ(cq->cqe, 127);
  EXPECT_EQ(QueryCq(c->cqn, 2).get(Ctx::log_cq_size), 7u);
  EXPECT_EQ(v::destroy_cq(cq), 0);
}

TEST_F(CqTest, ResizeWithoutTheDevicesCqResizeIsEopnotsupp) {
  sim::DeviceConfig config;
  config.cq_resize = false;
  Open(config);
  ibv_cq* cq = v::create_cq(verbs_, 8, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  const auto before = sim_->counters().commands;
  EXPECT_EQ(v::resize_cq(cq, 100), EOPNOTSUPP);
  EXPECT_EQ(v::resize_cq(cq, 15), 0);  // the same entry count asks nothing of the device
  EXPECT_EQ(v::resize_cq(cq, -1), EINVAL);
  EXPECT_EQ(sim_->counters().commands, before);
  EXPECT_EQ(cq->cqe, 15);
  EXPECT_EQ(v::destroy_cq(cq), 0);
}

TEST_F(CqTest, ModifyCqSetsModeration) {
  ibv_cq* cq = v::create_cq(verbs_, 8, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  const uint32_t cqn = driver::Cq::From(cq)->cqn;
  ibv_modify_cq_attr attr{};
  const auto before = sim_->counters().commands;
  EXPECT_EQ(v::modify_cq(cq, &attr), EINVAL);  // empty attr_mask
  attr.attr_mask = IBV_CQ_ATTR_RESERVED;
  EXPECT_EQ(v::modify_cq(cq, &attr), EINVAL);
  attr.attr_mask = IBV_CQ_ATTR_MODERATE;
  attr.moderate.cq_period = 4096;  // cq_period is 12 bits
  EXPECT_EQ(v::modify_cq(cq, &attr), EINVAL);
  EXPECT_EQ(sim_->counters().commands, before);
  attr.moderate.cq_count = 16;
  attr.moderate.cq_period = 4095;
  ASSERT_EQ(v::modify_cq(cq, &attr), 0);
  auto out = QueryCq(cqn);
  EXPECT_EQ(out.get(Ctx::cq_max_count), 16u);
  EXPECT_EQ(out.get(Ctx::cq_period), 4095u);
  attr.moderate.cq_count = 0;
  attr.moderate.cq_period = 0;
  ASSERT_EQ(v::modify_cq(cq, &attr), 0);
  out = QueryCq(cqn);
  EXPECT_EQ(out.get(Ctx::cq_max_count), 0u);
  EXPECT_EQ(out.get(Ctx::cq_period), 0u);
  EXPECT_EQ(v::destroy_cq(cq), 0);
}

TEST_F(CqTest, CloseReleasesALiveCq) {
  ibv_cq* cq = v::create_cq(verbs_, 8, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  const auto report = ctx_->Close();
  EXPECT_FALSE(report.first_error) << report.describe();
  EXPECT_EQ(report.of(driver::ObjectKind::kCq), 1u);
  EXPECT_EQ(sim_->counters().cqs, 0u);
  EXPECT_EQ(sim_->counters().eqs, 0u);
  EXPECT_EQ(v::destroy_cq(cq), 0);  // the handle frees without a command
  ctx_.reset();
}

}  // namespace
}  // namespace onchip::testing
