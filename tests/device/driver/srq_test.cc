// Shared receive queues on the software ConnectX: sizes as libmlx5 computes them, the limit
// watermark through ARM_RQ, the checks and their errnos, the parent domain's allocator, and the
// QPs that pin an SRQ.
#include <infiniband/mlx5dv.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "driver/srq.h"
#include "tests/device/fixture.h"
#include "tests/device/work_requests.h"

namespace onchip::testing {
namespace {

class SrqTest : public DriverPdTest {
 protected:
  ibv_srq* Create(uint32_t max_wr, uint32_t max_sge, uint32_t limit = 0) {
    ibv_srq_init_attr a{};
    a.attr.max_wr = max_wr;
    a.attr.max_sge = max_sge;
    a.attr.srq_limit = limit;
    ibv_srq* srq = v::create_srq(pd_, &a);
    last_ = a.attr;
    return srq;
  }
  ibv_srq_attr last_{};
};

TEST_F(SrqTest, SizesAreLibmlx5s) {
  ibv_srq* srq = Create(100, 3);
  ASSERT_NE(srq, nullptr) << strerror(errno);
  // Stride roundup_pow2(max(32, 16 + 3 * 16)) = 64; WQEs roundup_pow2(101) = 128.
  const driver::Srq* s = driver::Srq::From(srq);
  EXPECT_EQ(s->wqe_shift, 6u);
  EXPECT_EQ(s->wqe_count, 128u);
  EXPECT_EQ(last_.max_wr, 127u);
  EXPECT_EQ(last_.max_sge, 3u);
  EXPECT_EQ(srq->pd, pd_);
  EXPECT_EQ(sim_->counters().srqs, 1u);
  ibv_srq_attr q{};
  ASSERT_EQ(v::query_srq(srq, &q), 0);
  EXPECT_EQ(q.max_wr, 127u);
  EXPECT_EQ(q.max_sge, 3u);
  EXPECT_EQ(q.srq_limit, 0u);
  EXPECT_EQ(v::destroy_srq(srq), 0);
  EXPECT_EQ(sim_->counters().srqs, 0u);
}

// libmlx5 takes max_wr 0 and max_sge 0 (pyverbs' SrqInitAttr() asks for both, and its
// huge-page test expects the SRQ): one WQE of one SGE, reported back as such.
TEST_F(SrqTest, ZeroSizesGetOneWqeOfOneSge) {
  ibv_srq* srq = Create(0, 0);
  ASSERT_NE(srq, nullptr) << strerror(errno);
  EXPECT_EQ(last_.max_wr, 1u);
  EXPECT_EQ(last_.max_sge, 1u);
  EXPECT_EQ(driver::Srq::From(srq)->wqe_count, 2u);
  const ibv_sge none{.addr = 0, .length = 0, .lkey = 0};
  EXPECT_EQ(Post(srq, Recv(1, none)), 0);
  EXPECT_EQ(Post(srq, Recv(2, none)), ENOMEM);
  EXPECT_EQ(v::destroy_srq(srq), 0);
}

TEST_F(SrqTest, LimitArmsThroughArmRq) {
  ibv_srq* srq = Create(16, 1, 4);
  ASSERT_NE(srq, nullptr) << strerror(errno);
  ibv_srq_attr q{};
  ASSERT_EQ(v::query_srq(srq, &q), 0);
  EXPECT_EQ(q.srq_limit, 4u);
  ibv_srq_attr m{};
  m.srq_limit = 9;
  EXPECT_EQ(v::modify_srq(srq, &m, IBV_SRQ_LIMIT), 0);
  ASSERT_EQ(v::query_srq(srq, &q), 0);
  EXPECT_EQ(q.srq_limit, 9u);
  // Not below the ring (32 WQEs): EINVAL. Resizing: mlx5 cannot.
  const auto before = sim_->counters().commands;
  m.srq_limit = 32;
  EXPECT_EQ(v::modify_srq(srq, &m, IBV_SRQ_LIMIT), EINVAL);
  m.max_wr = 64;
  EXPECT_EQ(v::modify_srq(srq, &m, IBV_SRQ_MAX_WR), EINVAL);
  EXPECT_EQ(v::modify_srq(srq, &m, 1 << 5), EINVAL);
  EXPECT_EQ(sim_->counters().commands, before);
  EXPECT_EQ(v::destroy_srq(srq), 0);
}

TEST_F(SrqTest, CreateChecks) {
  errno = 0;
  EXPECT_EQ(Create(1u << sim_->config().log_max_srq_sz, 1), nullptr);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(Create(16, 64), nullptr);  // 16 + 64 * 16 > max_wqe_sz_rq
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(Create(16, 1, 32), nullptr);  // the device refuses a limit not below its ring
  EXPECT_EQ(errno, EINVAL);
  ibv_srq_init_attr_ex ex{};
  ex.attr.max_wr = 16;
  ex.attr.max_sge = 1;
  ex.pd = pd_;
  ex.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE;
  ex.srq_type = IBV_SRQT_XRC;  // without its XRC domain and CQ
  errno = 0;
  EXPECT_EQ(v::create_srq_ex(verbs_, &ex), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ex.srq_type = IBV_SRQT_TM;
  errno = 0;
  EXPECT_EQ(v::create_srq_ex(verbs_, &ex), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  ex.srq_type = IBV_SRQT_BASIC;
  ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE;  // no PD
  errno = 0;
  EXPECT_EQ(v::create_srq_ex(verbs_, &ex), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ex.comp_mask = IBV_SRQ_INIT_ATTR_PD | (1u << 10);
  errno = 0;
  EXPECT_EQ(v::create_srq_ex(verbs_, &ex), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ex.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE;
  ex.srq_context = this;
  ibv_srq* srq = v::create_srq_ex(verbs_, &ex);
  ASSERT_NE(srq, nullptr) << strerror(errno);
  EXPECT_EQ(srq->srq_context, this);
  EXPECT_EQ(srq->context, verbs_);
  EXPECT_EQ(ex.attr.max_wr, 31u);
  EXPECT_EQ(v::destroy_srq(srq), 0);
  EXPECT_EQ(sim_->counters().srqs, 0u);
}

TEST_F(SrqTest, ParentDomainAllocatorSeesTheSrqAndDbrTypes) {
  RecordingAllocator r;
  ibv_pd* pad = r.ParentDomain(verbs_, pd_);
  ASSERT_NE(pad, nullptr);
  ibv_srq_init_attr a{};
  a.attr.max_wr = 8;
  a.attr.max_sge = 1;
  ibv_srq* srq = v::create_srq(pad, &a);
  ASSERT_NE(srq, nullptr) << strerror(errno);
  EXPECT_EQ(r.allocs, (std::vector<uint64_t>{MLX5DV_RES_TYPE_SRQ, MLX5DV_RES_TYPE_DBR}));
  EXPECT_EQ(v::dealloc_pd(pad), EBUSY);
  EXPECT_EQ(v::destroy_srq(srq), 0);
  EXPECT_EQ(v::dealloc_pd(pad), 0);
}

TEST_F(SrqTest, CloseReleasesALiveSrq) {
  ibv_srq* srq = Create(8, 1);
  ASSERT_NE(srq, nullptr);
  const auto report = ctx_->Close();
  EXPECT_FALSE(report.first_error) << report.describe();
  EXPECT_EQ(report.of(driver::ObjectKind::kSrq), 1u);
  EXPECT_EQ(sim_->counters().srqs, 0u);
  EXPECT_EQ(v::destroy_srq(srq), 0);
  EXPECT_EQ(v::dealloc_pd(pd_), 0);
  ctx_.reset();
}

}  // namespace
}  // namespace onchip::testing
