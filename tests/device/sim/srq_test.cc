// CREATE/DESTROY/QUERY_SRQ and ARM_RQ: the context and page list kept and queried back, each
// refusal with its status and syndrome and nothing changed, ownership, the SRQ held by the QPs
// receiving from it and holding its PD, the limit watermark, teardown.
#include <cstring>
#include <vector>

#include "tests/device/sim/queues.h"
#include "uapi/prm/hca.h"

namespace onchip::sim::testing {
namespace {

using prm::CommandStatus;
using In = prm::create_srq_in;
using S = prm::srqc_bits<In::srq_context_entry.bit_offset>;
using QS = prm::srqc_bits<prm::query_srq_out::srq_context_entry.bit_offset>;

class SrqTest : public QueueTest {
 protected:
  void SetUp() override {
    QueueTest::SetUp();
    pd_ = AllocPd();
  }
  ::testing::AssertionResult RefusedUnchanged(const prm::Message<In>& in, CommandStatus status,
                                              Syndrome syndrome) {
    const auto before = sim_->counters();
    auto r = CreateSrq(in);
    auto verdict = Refused(r, status, syndrome);
    if (!verdict) return verdict;
    if (r.get(prm::create_srq_out::srqn) != 0)
      return ::testing::AssertionFailure() << "refusal carries an srqn";
    const auto after = sim_->counters();
    if (after.srqs != before.srqs) return ::testing::AssertionFailure() << "an SRQ was made";
    if (after.commands_failed != before.commands_failed + 1)
      return ::testing::AssertionFailure() << "not counted as failed";
    if (const char* broken = sim_->firmware().CheckInvariants())
      return ::testing::AssertionFailure() << broken;
    return ::testing::AssertionSuccess();
  }
  // A QP receiving from `srqn`.
  prm::Message<prm::create_qp_in> QpOnSrq(uint32_t cqn, uint32_t srqn, uint16_t uid = 0) {
    QpShape shape;
    shape.log_rq = -1;
    auto in = QpIn(pd_, cqn, shape, uid);
    in.set(prm::create_qp_in::qpc.rq_type, prm::SRQ_RQ)
        .set(prm::create_qp_in::qpc.srqn_rmpn_xrqn, srqn);
    return in;
  }
  uint32_t pd_ = 0;
};

TEST_F(SrqTest, CreateQueryDestroyRoundTrip) {
  auto in = SrqIn(pd_, /*log_size=*/7, /*log_stride=*/2);  // 128 x 64 B: two pages
  in.set(S::lwm, 10);
  auto r = CreateSrq(in);
  ASSERT_TRUE(Ok(r));
  const uint32_t srqn = static_cast<uint32_t>(r.get(prm::create_srq_out::srqn));
  EXPECT_EQ(sim_->counters().srqs, 1u);

  auto q = QuerySrq(srqn);
  ASSERT_TRUE(Ok(q));
  EXPECT_EQ(q.get(QS::state), prm::SRQ_STATE_GOOD);
  EXPECT_EQ(q.get(QS::log_srq_size), 7u);
  EXPECT_EQ(q.get(QS::log_rq_stride), 2u);
  EXPECT_EQ(q.get(QS::pd), pd_);
  EXPECT_EQ(q.get(QS::lwm), 10u);
  EXPECT_EQ(q.get(QS::dbr_addr), kSrqDbrIova);
  EXPECT_EQ(q.get(prm::query_srq_out::pas[0]), kQueueIova);
  EXPECT_EQ(q.get(prm::query_srq_out::pas[1]), kQueueIova + 4096);
  EXPECT_EQ(q.get(prm::query_srq_out::pas[2]), 0u);

  const uint32_t srqn2 = NewSrq(pd_);
  EXPECT_NE(srqn2, srqn);
  ASSERT_TRUE(Ok(DestroySrq(srqn)));
  ASSERT_TRUE(Ok(DestroySrq(srqn2)));
  EXPECT_EQ(sim_->counters().srqs, 0u);
  EXPECT_TRUE(Refused(QuerySrq(srqn), CommandStatus::BAD_RES_ERR, Syndrome::SRQ_UNKNOWN));
  EXPECT_TRUE(Refused(DestroySrq(srqn), CommandStatus::BAD_RES_ERR, Syndrome::SRQ_UNKNOWN));
}

TEST_F(SrqTest, XrcSrqsAreRefused) {
  auto xrcd = SrqIn(pd_);
  xrcd.set(S::xrcd, 1);
  EXPECT_TRUE(RefusedUnchanged(xrcd, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_XRC));
  auto cqn = SrqIn(pd_);
  cqn.set(S::cqn, 1);
  EXPECT_TRUE(RefusedUnchanged(cqn, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_XRC));
}

TEST_F(SrqTest, UnsupportedFeaturesAreNamed) {
  for (auto set : {+[](prm::Message<In>& m) { m.set(S::wq_signature, 1); },
                   +[](prm::Message<In>& m) { m.set(S::cont_srq, 1); },
                   +[](prm::Message<In>& m) { m.set(S::rlky, 1); }}) {
    auto in = SrqIn(pd_);
    set(in);
    EXPECT_TRUE(RefusedUnchanged(in, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_UNSUPPORTED));
  }
}

TEST_F(SrqTest, StateAndWqeCountAreTheDevices) {
  auto state = SrqIn(pd_);
  state.set(S::state, prm::SRQ_STATE_ERROR);
  EXPECT_TRUE(RefusedUnchanged(state, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_STATE));
  auto count = SrqIn(pd_);
  count.set(S::wqe_cnt, 3);
  EXPECT_TRUE(RefusedUnchanged(count, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_STATE));
}

TEST_F(SrqTest, StrideWithinMaxWqeSzRq) {
  EXPECT_TRUE(Ok(CreateSrq(SrqIn(pd_, 3, 5))));  // 8 x 512 B
  EXPECT_TRUE(RefusedUnchanged(SrqIn(pd_, 2, 6), CommandStatus::BAD_PARAM_ERR,
                               Syndrome::SRQ_STRIDE));  // 1 KiB WQEs
}

TEST_F(SrqTest, WatermarkBelowTheRingAtCreation) {
  auto in = SrqIn(pd_, 6);
  in.set(S::lwm, 64);
  EXPECT_TRUE(RefusedUnchanged(in, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_LWM));
  in.set(S::lwm, 63);
  EXPECT_TRUE(Ok(CreateSrq(in)));
}

TEST_F(SrqTest, PdMustBeLiveAndOwned) {
  EXPECT_TRUE(RefusedUnchanged(SrqIn(pd_ + 1), CommandStatus::BAD_RES_ERR,
                               Syndrome::SRQ_PD_UNKNOWN));
  EXPECT_TRUE(RefusedUnchanged(SrqIn(AllocPd(5)), CommandStatus::BAD_RES_ERR,
                               Syndrome::NOT_OWNER));
  auto r = CreateSrq(SrqIn(AllocPd(5), 6, 2, 5));
  ASSERT_TRUE(Ok(r));
  const uint32_t srqn = static_cast<uint32_t>(r.get(prm::create_srq_out::srqn));
  EXPECT_TRUE(Refused(DestroySrq(srqn, 0), CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  EXPECT_TRUE(Refused(ArmRq(srqn, 1, 6), CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  EXPECT_TRUE(Refused(QuerySrq(srqn, 6), CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  EXPECT_TRUE(Ok(QuerySrq(srqn, 0)));
  EXPECT_TRUE(Ok(ArmRq(srqn, 1, 5)));
  EXPECT_TRUE(Ok(DestroySrq(srqn, 5)));
}

TEST_F(SrqTest, PageSizeOffsetAndPageList) {
  auto big = SrqIn(pd_);
  big.set(S::log_page_size, 28);
  EXPECT_TRUE(RefusedUnchanged(big, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_PAGE_SIZE));
  auto offset = SrqIn(pd_);
  offset.set(S::page_offset, 1);
  EXPECT_TRUE(RefusedUnchanged(offset, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_PAGE_OFFSET));
  // 128 x 64 B need two pages; one is wrong.
  auto fewer = prm::CommandIn<In>(prm::CREATE_SRQ, 0, 8);
  {
    auto full = SrqIn(pd_, 7);
    std::memcpy(fewer.bytes().data(), full.bytes().data(), fewer.bytes().size());
  }
  EXPECT_TRUE(RefusedUnchanged(fewer, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_PAS_COUNT));
  auto unaligned = SrqIn(pd_, 7);
  unaligned.set(In::pas[1], kQueueIova + 4096 + 8);
  EXPECT_TRUE(
      RefusedUnchanged(unaligned, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_PAS_ENTRY));
  auto unmapped = SrqIn(pd_, 7);
  unmapped.set(In::pas[0], kUnmappedIova);
  EXPECT_TRUE(
      RefusedUnchanged(unmapped, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_PAS_UNMAPPED));
}

TEST_F(SrqTest, DoorbellRecordAlignedAndMapped) {
  auto unaligned = SrqIn(pd_);
  unaligned.set(S::dbr_addr, kSrqDbrIova + 2);
  EXPECT_TRUE(
      RefusedUnchanged(unaligned, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_DBR_ALIGNMENT));
  auto word = SrqIn(pd_);
  word.set(S::dbr_addr, kSrqDbrIova + 4);  // one 32-bit word: 4-byte alignment is enough
  EXPECT_TRUE(Ok(CreateSrq(word)));
  auto unmapped = SrqIn(pd_);
  unmapped.set(S::dbr_addr, kUnmappedIova);
  EXPECT_TRUE(
      RefusedUnchanged(unmapped, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_DBR_UNMAPPED));
}

TEST_F(SrqTest, ReservedBitsAndOpMod) {
  auto ctx = SrqIn(pd_);
  ctx.set(prm::Field<S::bit_offset + 0x8, 24, "srqc reserved">{}, 1);
  EXPECT_TRUE(RefusedUnchanged(ctx, CommandStatus::BAD_PARAM_ERR, Syndrome::RESERVED_NOT_ZERO));
  auto header = SrqIn(pd_);
  header.set(prm::Field<0x40, 64, "create_srq_in reserved">{}, 1);
  EXPECT_TRUE(
      RefusedUnchanged(header, CommandStatus::BAD_PARAM_ERR, Syndrome::RESERVED_NOT_ZERO));
  auto op_mod = SrqIn(pd_);
  op_mod.set(In::op_mod, 1);
  EXPECT_TRUE(RefusedUnchanged(op_mod, CommandStatus::BAD_PARAM_ERR, Syndrome::BAD_OP_MOD));
}

TEST_F(SrqTest, QpsHoldTheSrqAndItsPd) {
  const uint32_t eqn = NewEq();
  const uint32_t cqn = NewCq(eqn);
  const uint32_t srqn = NewSrq(pd_);
  auto r = CreateQp(QpOnSrq(cqn, srqn));
  ASSERT_TRUE(Ok(r));
  const uint32_t qpn = static_cast<uint32_t>(r.get(prm::create_qp_out::qpn));
  auto q = QueryQp(qpn);
  EXPECT_EQ(q.get(prm::query_qp_out::qpc.rq_type), prm::SRQ_RQ);
  EXPECT_EQ(q.get(prm::query_qp_out::qpc.srqn_rmpn_xrqn), srqn);
  EXPECT_TRUE(Refused(DestroySrq(srqn), CommandStatus::RES_BUSY, Syndrome::SRQ_BUSY));
  auto dealloc = prm::CommandIn<prm::dealloc_pd_in>(prm::DEALLOC_PD);
  dealloc.set(prm::dealloc_pd_in::pd, pd_);
  ASSERT_TRUE(Ok(DestroyQp(qpn)));
  EXPECT_TRUE(Refused(Exec(dealloc, 16), CommandStatus::RES_BUSY, Syndrome::PD_BUSY));
  EXPECT_TRUE(Ok(DestroySrq(srqn)));
  EXPECT_TRUE(Ok(Exec(dealloc, 16)));
  EXPECT_EQ(sim_->firmware().CheckInvariants(), nullptr);
}

TEST_F(SrqTest, AQpUsesOnlyItsOwnSrq) {
  const uint32_t eqn = NewEq();
  const uint32_t uar5 = AllocUar(5);
  auto cq5 = CqIn(eqn, 7, 2, 5);
  cq5.set(prm::create_cq_in::cq_context.uar_page, uar5);
  auto c = CreateCq(cq5);
  ASSERT_TRUE(Ok(c));
  const uint32_t cqn5 = static_cast<uint32_t>(c.get(prm::create_cq_out::cqn));
  const uint32_t srqn = NewSrq(pd_);  // uid 0's
  pd_ = AllocPd(5);
  auto in = QpOnSrq(cqn5, srqn, 5);
  in.set(prm::create_qp_in::qpc.uar_page, uar5);
  const auto before = sim_->counters();
  EXPECT_TRUE(Refused(CreateQp(in), CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  EXPECT_EQ(sim_->counters().qps, before.qps);
  EXPECT_TRUE(Ok(DestroySrq(srqn)));
}

TEST_F(SrqTest, ArmSetsTheWatermark) {
  const uint32_t srqn = NewSrq(pd_);  // 64 WQEs
  ASSERT_TRUE(Ok(ArmRq(srqn, 16)));
  EXPECT_EQ(QuerySrq(srqn).get(QS::lwm), 16u);
  EXPECT_TRUE(Refused(ArmRq(srqn, 64), CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_LWM));
  EXPECT_EQ(QuerySrq(srqn).get(QS::lwm), 16u);
  EXPECT_TRUE(Refused(ArmRq(srqn, 1, 0, 0), CommandStatus::BAD_PARAM_ERR, Syndrome::BAD_OP_MOD));
  EXPECT_TRUE(Refused(ArmRq(srqn + 1, 1), CommandStatus::BAD_RES_ERR, Syndrome::SRQ_UNKNOWN));
  ASSERT_TRUE(Ok(ArmRq(srqn, 0)));
  EXPECT_EQ(QuerySrq(srqn).get(QS::lwm), 0u);
}

class SrqLimitsTest : public SrqTest {
 protected:
  sim::DeviceConfig Config() const override {
    sim::DeviceConfig c;
    c.log_max_srq = 1;  // SRQ numbers 0 and 1
    c.log_max_srq_sz = 6;
    return c;
  }
};

TEST_F(SrqLimitsTest, SizeWithinLogMaxSrqSz) {
  EXPECT_TRUE(
      RefusedUnchanged(SrqIn(pd_, 7), CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_SIZE));
  EXPECT_TRUE(Ok(CreateSrq(SrqIn(pd_, 6))));
}

TEST_F(SrqLimitsTest, SrqNumbersRunOut) {
  const uint32_t a = NewSrq(pd_);
  NewSrq(pd_);
  EXPECT_TRUE(RefusedUnchanged(SrqIn(pd_), CommandStatus::NO_RES_ERR, Syndrome::SRQ_EXHAUSTED));
  ASSERT_TRUE(Ok(DestroySrq(a)));
  EXPECT_EQ(NewSrq(pd_), a);
}

TEST_F(SrqTest, TeardownRefusesLiveSrqsAndForceFreesThem) {
  const uint32_t eqn = NewEq();
  const uint32_t cqn = NewCq(eqn);
  const uint32_t srqn = NewSrq(pd_);
  ASSERT_TRUE(Ok(CreateQp(QpOnSrq(cqn, srqn))));
  EXPECT_TRUE(Refused(Exec(prm::CommandIn<prm::teardown_hca_in>(prm::TEARDOWN_HCA), 16),
                      CommandStatus::RES_BUSY, Syndrome::TEARDOWN_BUSY));
  auto force = prm::CommandIn<prm::teardown_hca_in>(prm::TEARDOWN_HCA);
  force.set(prm::teardown_hca_in::profile, prm::TEARDOWN_HCA_FORCE_CLOSE);
  ASSERT_TRUE(Ok(Exec(force, 16)));
  const auto c = sim_->counters();
  EXPECT_EQ(c.srqs, 0u);
  EXPECT_EQ(c.qps, 0u);
  EXPECT_EQ(sim_->firmware().CheckInvariants(), nullptr);
}

}  // namespace
}  // namespace onchip::sim::testing
