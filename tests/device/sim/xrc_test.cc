// XRC in the firmware: ALLOC/DEALLOC_XRCD, CREATE/DESTROY/QUERY/ARM_XRC_SRQ and XRC QPs (the
// initiator with a send queue only, the target with no ring and its domain). Each command's good
// path, every refusal with its status and syndrome and nothing changed (objects, counters, the
// tables' invariants), the references (a domain held by its SRQs and QPs, an XRC SRQ holding
// its CQ and PD), and the transitions the target takes like an RC QP.
#include <vector>

#include "tests/device/sim/queues.h"
#include "uapi/prm/hca.h"
#include "uapi/prm/xrc.h"

namespace onchip::sim::testing {
namespace {

using prm::CommandStatus;
using XIn = prm::create_xrc_srq_in;
using X = prm::xrc_srqc_bits<XIn::xrc_srq_context_entry.bit_offset>;
using QX = prm::xrc_srqc_bits<prm::query_xrc_srq_out::xrc_srq_context_entry.bit_offset>;
using QpInL = prm::create_qp_in;
constexpr auto qpc = QpInL::qpc;

class XrcTest : public QueueTest {
 protected:
  void SetUp() override {
    QueueTest::SetUp();
    pd_ = AllocPd();
    eqn_ = NewEq();
    cqn_ = NewCq(eqn_);
    xrcd_ = NewXrcd();
  }

  Reply AllocXrcd(uint16_t uid = 0) {
    auto in = prm::CommandIn<prm::alloc_xrcd_in>(prm::ALLOC_XRCD);
    in.set(prm::alloc_xrcd_in::uid, uid);
    return Exec(in, 16);
  }
  uint32_t NewXrcd(uint16_t uid = 0) {
    auto r = AllocXrcd(uid);
    EXPECT_TRUE(Ok(r));
    return static_cast<uint32_t>(r.get(prm::alloc_xrcd_out::xrcd));
  }
  Reply DeallocXrcd(uint32_t xrcd, uint16_t uid = 0) {
    auto in = prm::CommandIn<prm::dealloc_xrcd_in>(prm::DEALLOC_XRCD);
    in.set(prm::dealloc_xrcd_in::xrcd, xrcd).set(prm::dealloc_xrcd_in::uid, uid);
    return Exec(in, 16);
  }

  // CREATE_XRC_SRQ of 64 WQEs of 64 bytes (one page) in `xrcd`, completing on `cqn`.
  prm::Message<XIn> XrcSrqIn(uint32_t xrcd, uint32_t cqn, uint16_t uid = 0) {
    auto in = prm::CommandIn<XIn>(prm::CREATE_XRC_SRQ, 0, 8);
    in.set(XIn::uid, uid)
        .set(X::log_xrc_srq_size, 6)
        .set(X::log_rq_stride, 2)
        .set(X::pd, pd_)
        .set(X::xrcd, xrcd)
        .set(X::cqn, cqn)
        .set(X::user_index_equal_xrc_srqn, 1)
        .set(X::db_record_addr_h, kSrqDbrIova >> 32)
        .set(X::db_record_addr_l, (kSrqDbrIova & 0xffffffff) >> 2)
        .set(XIn::pas[0], kQueueIova);
    return in;
  }
  Reply CreateXrcSrq(const prm::Message<XIn>& in) { return Exec(in, 16); }
  uint32_t NewXrcSrq() {
    auto r = CreateXrcSrq(XrcSrqIn(xrcd_, cqn_));
    EXPECT_TRUE(Ok(r));
    return static_cast<uint32_t>(r.get(prm::create_xrc_srq_out::xrc_srqn));
  }
  Reply DestroyXrcSrq(uint32_t srqn, uint16_t uid = 0) {
    auto in = prm::CommandIn<prm::destroy_xrc_srq_in>(prm::DESTROY_XRC_SRQ);
    in.set(prm::destroy_xrc_srq_in::xrc_srqn, srqn).set(prm::destroy_xrc_srq_in::uid, uid);
    return Exec(in, 16);
  }
  Reply QueryXrcSrq(uint32_t srqn, uint16_t uid = 0) {
    auto in = prm::CommandIn<prm::query_xrc_srq_in>(prm::QUERY_XRC_SRQ);
    in.set(prm::query_xrc_srq_in::xrc_srqn, srqn).set(prm::mbox_in::uid, uid);
    return Exec(in, prm::size_bytes<prm::query_xrc_srq_out> + 8);
  }
  Reply ArmXrcSrq(uint32_t srqn, uint32_t lwm, uint16_t op_mod = prm::ARM_XRC_SRQ_IN_OP_MOD_XRC_SRQ) {
    auto in = prm::CommandIn<prm::arm_xrc_srq_in>(prm::ARM_XRC_SRQ, op_mod);
    in.set(prm::arm_xrc_srq_in::xrc_srqn, srqn).set(prm::arm_xrc_srq_in::lwm, lwm);
    return Exec(in, 16);
  }

  // The initiator: an RC-shaped send queue, no receive queue.
  prm::Message<QpInL> IniIn(uint32_t xrcd = 0) {
    QpShape shape;
    shape.st = prm::QP_ST_XRC;
    shape.log_rq = -1;
    auto in = QpIn(pd_, cqn_, shape);
    in.set(qpc.xrcd, xrcd);
    return in;
  }
  // The target as onchip's driver sends it: no ring, no PD or CQ, the domain.
  prm::Message<QpInL> TgtIn(uint32_t xrcd, uint16_t uid = 0) {
    auto in = prm::CommandIn<QpInL>(prm::CREATE_QP);
    in.set(QpInL::uid, uid)
        .set(qpc.st, prm::QP_ST_XRC)
        .set(qpc.pm_state, prm::QP_PM_MIGRATED)
        .set(qpc.no_sq, 1)
        .set(qpc.rq_type, prm::ZERO_LEN_RQ)
        .set(qpc.xrcd, xrcd);
    return in;
  }

  // Refused with `status` / `syndrome`, and nothing changed.
  template <class M>
  ::testing::AssertionResult RefusedUnchanged(const M& in, std::size_t out_len,
                                              CommandStatus status, Syndrome syndrome) {
    const auto before = sim_->counters();
    auto r = Exec(in, out_len);
    auto verdict = Refused(r, status, syndrome);
    if (!verdict) return verdict;
    const auto after = sim_->counters();
    if (after.xrcds != before.xrcds || after.srqs != before.srqs || after.qps != before.qps ||
        after.cqs != before.cqs || after.pds != before.pds)
      return ::testing::AssertionFailure() << "the objects changed";
    if (after.commands_failed != before.commands_failed + 1)
      return ::testing::AssertionFailure() << "not counted as failed";
    if (const char* broken = sim_->firmware().CheckInvariants())
      return ::testing::AssertionFailure() << broken;
    return ::testing::AssertionSuccess();
  }

  uint32_t pd_ = 0, eqn_ = 0, cqn_ = 0, xrcd_ = 0;
};

TEST_F(XrcTest, DomainsAreNumberedOwnedAndCounted) {
  EXPECT_EQ(sim_->counters().xrcds, 1u);
  const uint32_t second = NewXrcd();
  EXPECT_NE(second, xrcd_);
  EXPECT_NE(second, 0u);
  EXPECT_EQ(sim_->counters().xrcds, 2u);
  EXPECT_TRUE(RefusedUnchanged(prm::CommandIn<prm::dealloc_xrcd_in>(prm::DEALLOC_XRCD), 16,
                               CommandStatus::BAD_RES_ERR, Syndrome::XRCD_UNKNOWN));
  auto other = prm::CommandIn<prm::dealloc_xrcd_in>(prm::DEALLOC_XRCD);
  other.set(prm::dealloc_xrcd_in::xrcd, second).set(prm::dealloc_xrcd_in::uid, 5);
  EXPECT_TRUE(RefusedUnchanged(other, 16, CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  auto bad_mod = prm::CommandIn<prm::alloc_xrcd_in>(prm::ALLOC_XRCD, 1);
  EXPECT_TRUE(RefusedUnchanged(bad_mod, 16, CommandStatus::BAD_PARAM_ERR, Syndrome::BAD_OP_MOD));
  auto reserved = prm::CommandIn<prm::alloc_xrcd_in>(prm::ALLOC_XRCD);
  reserved.bytes()[9] = std::byte{1};  // reserved_at_40
  EXPECT_TRUE(RefusedUnchanged(reserved, 16, CommandStatus::BAD_PARAM_ERR, Syndrome::RESERVED_NOT_ZERO));
  ASSERT_TRUE(Ok(DeallocXrcd(second)));
  EXPECT_TRUE(Refused(DeallocXrcd(second), CommandStatus::BAD_RES_ERR, Syndrome::XRCD_UNKNOWN));
  EXPECT_EQ(sim_->counters().xrcds, 1u);
  EXPECT_EQ(sim_->firmware().CheckInvariants(), nullptr);
}

TEST_F(XrcTest, XrcSrqRoundTripAndReferences) {
  auto in = XrcSrqIn(xrcd_, cqn_);
  in.set(X::lwm, 5);
  auto r = CreateXrcSrq(in);
  ASSERT_TRUE(Ok(r));
  const uint32_t srqn = static_cast<uint32_t>(r.get(prm::create_xrc_srq_out::xrc_srqn));
  EXPECT_EQ(sim_->counters().srqs, 1u);

  auto q = QueryXrcSrq(srqn);
  ASSERT_TRUE(Ok(q));
  EXPECT_EQ(q.get(QX::state), prm::SRQ_STATE_GOOD);
  EXPECT_EQ(q.get(QX::log_xrc_srq_size), 6u);
  EXPECT_EQ(q.get(QX::xrcd), xrcd_);
  EXPECT_EQ(q.get(QX::cqn), cqn_);
  EXPECT_EQ(q.get(QX::pd), pd_);
  EXPECT_EQ(q.get(QX::lwm), 5u);
  EXPECT_EQ(q.get(prm::query_xrc_srq_out::pas[0]), kQueueIova);

  // It holds its domain, its CQ and its PD.
  EXPECT_TRUE(RefusedUnchanged(prm::CommandIn<prm::dealloc_xrcd_in>(prm::DEALLOC_XRCD)
                                   .set(prm::dealloc_xrcd_in::xrcd, xrcd_),
                               16, CommandStatus::RES_BUSY, Syndrome::XRCD_BUSY));
  EXPECT_TRUE(Refused(DestroyCq(cqn_), CommandStatus::RES_BUSY, Syndrome::CQ_BUSY));
  auto dealloc_pd = prm::CommandIn<prm::dealloc_pd_in>(prm::DEALLOC_PD);
  dealloc_pd.set(prm::dealloc_pd_in::pd, pd_);
  EXPECT_TRUE(Refused(Exec(dealloc_pd, 16), CommandStatus::RES_BUSY, Syndrome::PD_BUSY));

  // The plain SRQ commands refuse it.
  EXPECT_TRUE(Refused(DestroySrq(srqn), CommandStatus::BAD_RES_ERR, Syndrome::SRQ_TYPE));
  EXPECT_TRUE(Refused(QuerySrq(srqn), CommandStatus::BAD_RES_ERR, Syndrome::SRQ_TYPE));
  EXPECT_TRUE(Refused(ArmRq(srqn, 1), CommandStatus::BAD_RES_ERR, Syndrome::SRQ_TYPE));
  // No QP receives from it through rq_type SRQ.
  QpShape shape;
  shape.log_rq = -1;
  auto on_srq = QpIn(pd_, cqn_, shape);
  on_srq.set(qpc.rq_type, prm::SRQ_RQ).set(qpc.srqn_rmpn_xrqn, srqn);
  EXPECT_TRUE(RefusedUnchanged(on_srq, 16, CommandStatus::BAD_RES_ERR, Syndrome::QP_SRQ_TYPE));

  // ARM_XRC_SRQ sets the watermark, below the ring size, with its op_mod.
  ASSERT_TRUE(Ok(ArmXrcSrq(srqn, 9)));
  EXPECT_EQ(QueryXrcSrq(srqn).get(QX::lwm), 9u);
  EXPECT_TRUE(Refused(ArmXrcSrq(srqn, 64), CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_LWM));
  EXPECT_TRUE(Refused(ArmXrcSrq(srqn, 1, 0), CommandStatus::BAD_PARAM_ERR, Syndrome::BAD_OP_MOD));
  EXPECT_TRUE(Refused(QueryXrcSrq(srqn, 7), CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  EXPECT_TRUE(Refused(DestroyXrcSrq(srqn, 7), CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));

  ASSERT_TRUE(Ok(DestroyXrcSrq(srqn)));
  EXPECT_EQ(sim_->counters().srqs, 0u);
  EXPECT_TRUE(Refused(DestroyXrcSrq(srqn), CommandStatus::BAD_RES_ERR, Syndrome::SRQ_UNKNOWN));
  EXPECT_TRUE(Refused(QueryXrcSrq(srqn), CommandStatus::BAD_RES_ERR, Syndrome::SRQ_UNKNOWN));
  EXPECT_TRUE(Ok(DeallocXrcd(xrcd_)));
  EXPECT_TRUE(Ok(DestroyCq(cqn_)));
  EXPECT_EQ(sim_->firmware().CheckInvariants(), nullptr);

  // The XRC commands refuse a plain SRQ.
  const uint32_t plain = NewSrq(pd_);
  EXPECT_TRUE(Refused(DestroyXrcSrq(plain), CommandStatus::BAD_RES_ERR, Syndrome::SRQ_TYPE));
  EXPECT_TRUE(Refused(QueryXrcSrq(plain), CommandStatus::BAD_RES_ERR, Syndrome::SRQ_TYPE));
  EXPECT_TRUE(Refused(ArmXrcSrq(plain, 1), CommandStatus::BAD_RES_ERR, Syndrome::SRQ_TYPE));
}

TEST_F(XrcTest, XrcSrqRefusalsChangeNothing) {
  struct Case {
    const char* what;
    prm::Message<XIn> in;
    CommandStatus status;
    Syndrome syndrome;
  };
  std::vector<Case> cases;
  auto add = [&](const char* what, auto field, uint64_t v, CommandStatus st, Syndrome s) {
    auto in = XrcSrqIn(xrcd_, cqn_);
    in.set(field, v);
    cases.push_back({what, std::move(in), st, s});
  };
  const uint32_t other_xrcd = NewXrcd(/*uid=*/3);
  const uint32_t other_pd = AllocPd(3);
  add("unknown domain", X::xrcd, xrcd_ + 100, CommandStatus::BAD_RES_ERR, Syndrome::SRQ_XRCD_UNKNOWN);
  add("no domain", X::xrcd, 0, CommandStatus::BAD_RES_ERR, Syndrome::SRQ_XRCD_UNKNOWN);
  add("another's domain", X::xrcd, other_xrcd, CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER);
  add("unknown CQ", X::cqn, cqn_ + 100, CommandStatus::BAD_RES_ERR, Syndrome::SRQ_CQ_UNKNOWN);
  add("unknown PD", X::pd, pd_ + 100, CommandStatus::BAD_RES_ERR, Syndrome::SRQ_PD_UNKNOWN);
  add("another's PD", X::pd, other_pd, CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER);
  // (log_xrc_srq_size is 4 bits and log_max_srq_sz 15: no size is too large here.)
  add("stride", X::log_rq_stride, 7, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_STRIDE);
  add("lwm", X::lwm, 64, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_LWM);
  add("page size", X::log_page_size, 40, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_PAGE_SIZE);
  add("page offset", X::page_offset, 1, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_PAGE_OFFSET);
  add("state", X::state, prm::SRQ_STATE_ERROR, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_STATE);
  add("wqe_cnt", X::wqe_cnt, 3, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_STATE);
  add("signature", X::wq_signature, 1, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_UNSUPPORTED);
  add("cyclic", X::basic_cyclic_rcv_wqe, 1, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_UNSUPPORTED);
  add("umem record", X::dbr_umem_valid, 1, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_UNSUPPORTED);
  add("umem buffer", XIn::xrc_srq_umem_valid, 1, CommandStatus::BAD_PARAM_ERR,
      Syndrome::SRQ_UNSUPPORTED);
  add("record unmapped", X::db_record_addr_h, 0x7f, CommandStatus::BAD_PARAM_ERR,
      Syndrome::SRQ_DBR_UNMAPPED);
  add("page unmapped", XIn::pas[0], 0x7f00000000ull, CommandStatus::BAD_PARAM_ERR,
      Syndrome::SRQ_PAS_UNMAPPED);
  add("page unaligned", XIn::pas[0], kQueueIova + 8, CommandStatus::BAD_PARAM_ERR,
      Syndrome::SRQ_PAS_ENTRY);
  add("op_mod", XIn::op_mod, 1, CommandStatus::BAD_PARAM_ERR, Syndrome::BAD_OP_MOD);
  {
    auto in = XrcSrqIn(xrcd_, cqn_);
    in.bytes()[16 + 1] = std::byte{0xff};  // reserved_at_8 of the context
    cases.push_back({"reserved", std::move(in), CommandStatus::BAD_PARAM_ERR,
                     Syndrome::RESERVED_NOT_ZERO});
  }
  {
    auto in = XrcSrqIn(xrcd_, cqn_);
    in.set(X::log_xrc_srq_size, 8);  // 16 KiB: four pages, one given
    cases.push_back({"page count", std::move(in), CommandStatus::BAD_PARAM_ERR,
                     Syndrome::SRQ_PAS_COUNT});
  }
  for (const Case& c : cases)
    EXPECT_TRUE(RefusedUnchanged(c.in, 16, c.status, c.syndrome)) << c.what;
  // And a plain CREATE_SRQ with a domain or a CQ in its context is still refused.
  auto plain = SrqIn(pd_);
  plain.set(prm::srqc_bits<prm::create_srq_in::srq_context_entry.bit_offset>::xrcd, xrcd_);
  EXPECT_TRUE(RefusedUnchanged(plain, 16, CommandStatus::BAD_PARAM_ERR, Syndrome::SRQ_XRC));
}

TEST_F(XrcTest, InitiatorQpSendsOnly) {
  auto r = CreateQp(IniIn());
  ASSERT_TRUE(Ok(r));
  const uint32_t ini = static_cast<uint32_t>(r.get(prm::create_qp_out::qpn));
  auto with_domain = CreateQp(IniIn(xrcd_));
  ASSERT_TRUE(Ok(with_domain));
  const uint32_t ini2 = static_cast<uint32_t>(with_domain.get(prm::create_qp_out::qpn));
  EXPECT_TRUE(RefusedUnchanged(prm::CommandIn<prm::dealloc_xrcd_in>(prm::DEALLOC_XRCD)
                                   .set(prm::dealloc_xrcd_in::xrcd, xrcd_),
                               16, CommandStatus::RES_BUSY, Syndrome::XRCD_BUSY));
  // A receive ring, or no send queue without being the target, is no initiator.
  QpShape rq;
  rq.st = prm::QP_ST_XRC;
  EXPECT_TRUE(RefusedUnchanged(QpIn(pd_, cqn_, rq), 16, CommandStatus::BAD_PARAM_ERR, Syndrome::QP_RQ_TYPE));
  EXPECT_TRUE(RefusedUnchanged(IniIn(xrcd_ + 50), 16, CommandStatus::BAD_RES_ERR, Syndrome::QP_XRCD_UNKNOWN));
  // RC's transitions take it to RTS.
  DriveTo(ini, prm::QP_ST_XRC, prm::QP_STATE_RTS);
  EXPECT_EQ(QpState(ini), prm::QP_STATE_RTS);
  ASSERT_TRUE(Ok(DestroyQp(ini)));
  ASSERT_TRUE(Ok(DestroyQp(ini2)));
  EXPECT_TRUE(Ok(DeallocXrcd(xrcd_)));
  EXPECT_EQ(sim_->firmware().CheckInvariants(), nullptr);
}

TEST_F(XrcTest, TargetQpHasOnlyItsDomain) {
  const auto before = sim_->counters();
  auto r = CreateQp(TgtIn(xrcd_));
  ASSERT_TRUE(Ok(r));
  const uint32_t tgt = static_cast<uint32_t>(r.get(prm::create_qp_out::qpn));
  EXPECT_EQ(sim_->counters().qps, before.qps + 1);
  // It holds the domain, and nothing else: the CQ and the PD may go.
  EXPECT_TRUE(Refused(DeallocXrcd(xrcd_), CommandStatus::RES_BUSY, Syndrome::XRCD_BUSY));
  EXPECT_EQ(sim_->firmware().CheckInvariants(), nullptr);

  EXPECT_TRUE(RefusedUnchanged(TgtIn(0), 16, CommandStatus::BAD_RES_ERR, Syndrome::QP_XRCD_UNKNOWN));
  EXPECT_TRUE(RefusedUnchanged(TgtIn(xrcd_ + 50), 16, CommandStatus::BAD_RES_ERR, Syndrome::QP_XRCD_UNKNOWN));
  EXPECT_TRUE(RefusedUnchanged(TgtIn(xrcd_, /*uid=*/4), 16, CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  auto with_rq = TgtIn(xrcd_);
  with_rq.set(qpc.rq_type, prm::NON_ZERO_RQ);
  EXPECT_TRUE(RefusedUnchanged(with_rq, 16, CommandStatus::BAD_PARAM_ERR, Syndrome::QP_RQ_TYPE));
  // A domain on an RC QP is still refused.
  auto rc = QpIn(pd_, cqn_);
  rc.set(qpc.xrcd, xrcd_);
  EXPECT_TRUE(RefusedUnchanged(rc, 16, CommandStatus::BAD_PARAM_ERR, Syndrome::QP_UNSUPPORTED));

  // RC's fields on every transition; the access bits land in the context.
  ASSERT_TRUE(Ok(Modify(Rst2Init(tgt, prm::QP_ST_RC))));
  ASSERT_TRUE(Ok(Modify(Init2Rtr(tgt, prm::QP_ST_RC))));
  ASSERT_TRUE(Ok(Modify(Rtr2Rts(tgt, prm::QP_ST_RC))));
  auto q = QueryQp(tgt);
  ASSERT_TRUE(Ok(q));
  EXPECT_EQ(q.get(prm::query_qp_out::qpc.state), prm::QP_STATE_RTS);
  EXPECT_EQ(q.get(prm::query_qp_out::qpc.rre), 1u);
  EXPECT_EQ(q.get(prm::query_qp_out::qpc.rae), 1u);
  EXPECT_EQ(q.get(prm::query_qp_out::qpc.log_rra_max), 4u);
  EXPECT_EQ(q.get(prm::query_qp_out::qpc.xrcd), xrcd_);
  // A mask bit RC does not take on this transition is refused for XRC too.
  auto bad = Transition<prm::rts2rts_qp_in>(prm::RTS2RTS_QP, tgt, prm::QP_OPTPAR_Q_KEY);
  EXPECT_TRUE(Refused(Modify(bad), CommandStatus::BAD_PARAM_ERR, Syndrome::QP_OPT_PARAM));

  ASSERT_TRUE(Ok(DestroyQp(tgt)));
  EXPECT_TRUE(Ok(DeallocXrcd(xrcd_)));
  EXPECT_EQ(sim_->firmware().CheckInvariants(), nullptr);
}

TEST_F(XrcTest, TeardownCountsDomains) {
  auto graceful = prm::CommandIn<prm::teardown_hca_in>(prm::TEARDOWN_HCA);
  graceful.set(prm::teardown_hca_in::profile, prm::TEARDOWN_HCA_GRACEFUL_CLOSE);
  EXPECT_TRUE(Refused(Exec(graceful, 16), CommandStatus::RES_BUSY, Syndrome::TEARDOWN_BUSY));
  ASSERT_TRUE(Ok(CreateQp(TgtIn(xrcd_))));
  auto force = prm::CommandIn<prm::teardown_hca_in>(prm::TEARDOWN_HCA);
  force.set(prm::teardown_hca_in::profile, prm::TEARDOWN_HCA_FORCE_CLOSE);
  ASSERT_TRUE(Ok(Exec(force, 16)));
  EXPECT_EQ(sim_->counters().xrcds, 0u);
  EXPECT_EQ(sim_->counters().qps, 0u);
  EXPECT_EQ(sim_->firmware().CheckInvariants(), nullptr);
}

}  // namespace
}  // namespace onchip::sim::testing
