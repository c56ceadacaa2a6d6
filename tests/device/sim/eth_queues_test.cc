// The objects of a raw packet QP on the software ConnectX: TIS, SQ, RQ and TIR created, queried
// and destroyed; SQ and RQ numbers taken from the QP numbers; MODIFY_SQ / MODIFY_RQ state rules;
// each refusal with its status and syndrome and nothing made; the references between them
// (RES_BUSY while used) and ownership; a forced teardown releasing them all.
#include <cstring>

#include "tests/device/sim/queues.h"
#include "uapi/prm/hca.h"
#include "uapi/prm/wq.h"

namespace onchip::sim::testing {
namespace {

using prm::CommandStatus;
using SqC = prm::sqc_bits<prm::create_sq_in::ctx.bit_offset>;
using SqW = prm::wq_bits<SqC::wq.bit_offset>;
using RqC = prm::rqc_bits<prm::create_rq_in::ctx.bit_offset>;
using RqW = prm::wq_bits<RqC::wq.bit_offset>;
using TisC = prm::tisc_bits<prm::create_tis_in::ctx.bit_offset>;
using TirC = prm::tirc_bits<prm::create_tir_in::ctx.bit_offset>;
using QSq = prm::sqc_bits<prm::query_sq_out::sq_context.bit_offset>;
using QRq = prm::rqc_bits<prm::query_rq_out::rq_context.bit_offset>;
using QTir = prm::tirc_bits<prm::query_tir_out::tir_context.bit_offset>;
using QTis = prm::tisc_bits<prm::query_tis_out::tis_context.bit_offset>;

class EthQueuesTest : public QueueTest {
 protected:
  void SetUp() override {
    QueueTest::SetUp();
    pd_ = AllocPd();
    cqn_ = NewCq(NewEq());
    td_ = AllocTd();
  }

  uint32_t AllocTd(uint16_t uid = 0) {
    auto in = prm::CommandIn<prm::alloc_transport_domain_in>(prm::ALLOC_TRANSPORT_DOMAIN);
    in.set(prm::alloc_transport_domain_in::uid, uid);
    auto r = Exec(in, 16);
    EXPECT_TRUE(Ok(r));
    return static_cast<uint32_t>(r.get(prm::alloc_transport_domain_out::transport_domain));
  }
  Reply DeallocTd(uint32_t td) {
    auto in = prm::CommandIn<prm::dealloc_transport_domain_in>(prm::DEALLOC_TRANSPORT_DOMAIN);
    in.set(prm::dealloc_transport_domain_in::transport_domain, td);
    return Exec(in, 16);
  }

  prm::Message<prm::create_tis_in> TisIn(uint32_t td, uint16_t uid = 0) {
    auto in = prm::CommandIn<prm::create_tis_in>(prm::CREATE_TIS);
    in.set(prm::create_tis_in::uid, uid).set(TisC::transport_domain, td);
    return in;
  }
  uint32_t NewTis() {
    auto r = Exec(TisIn(td_), 16);
    EXPECT_TRUE(Ok(r));
    return static_cast<uint32_t>(r.get(prm::create_tis_out::tisn));
  }

  // An SQ of 2^log_sz 64-byte basic blocks (64: one page) on this fixture's PD, CQ and UAR.
  prm::Message<prm::create_sq_in> SqIn(uint32_t tisn, uint32_t log_sz = 6, uint32_t pages = 1) {
    auto in = prm::CommandIn<prm::create_sq_in>(prm::CREATE_SQ, 0, 8 * pages);
    in.set(SqC::cqn, cqn_)
        .set(SqC::tis_lst_sz, 1)
        .set(SqC::tis_num_0, tisn)
        .set(SqC::flush_in_error_en, 1)
        .set(SqW::wq_type, prm::WQ_TYPE_CYCLIC)
        .set(SqW::pd, pd_)
        .set(SqW::uar_page, uar_)
        .set(SqW::dbr_addr, kQpDbrIova)
        .set(SqW::log_wq_stride, 6)
        .set(SqW::log_wq_sz, log_sz);
    prm::Bits b(in.bytes().subspan(prm::size_bytes<prm::create_sq_in>));
    for (uint32_t i = 0; i < pages; ++i)
      b.set(prm::Element<64>{i * 64, "pas"}, kQueueIova + uint64_t{i} * 4096);
    return in;
  }
  // An RQ of 2^log_sz WQEs of 2^log_stride bytes (16 x 64 B: one page).
  prm::Message<prm::create_rq_in> RqIn(uint32_t log_sz = 4, uint32_t log_stride = 6) {
    auto in = prm::CommandIn<prm::create_rq_in>(prm::CREATE_RQ, 0, 8);
    in.set(RqC::cqn, cqn_)
        .set(RqC::vsd, 1)
        .set(RqW::wq_type, prm::WQ_TYPE_CYCLIC)
        .set(RqW::pd, pd_)
        .set(RqW::dbr_addr, kQpDbrIova)
        .set(RqW::log_wq_stride, log_stride)
        .set(RqW::log_wq_sz, log_sz);
    prm::Bits(in.bytes().subspan(prm::size_bytes<prm::create_rq_in>))
        .set(prm::Element<64>{0, "pas"}, kQueueIova);
    return in;
  }
  prm::Message<prm::create_tir_in> TirIn(uint32_t rqn) {
    auto in = prm::CommandIn<prm::create_tir_in>(prm::CREATE_TIR);
    in.set(TirC::disp_type, prm::TIRC_DISP_TYPE_DIRECT)
        .set(TirC::inline_rqn, rqn)
        .set(TirC::transport_domain, td_)
        .set(TirC::self_lb_block, 2);
    return in;
  }
  template <class M>
  uint32_t Created(const M& in) {
    auto r = Exec(in, 16);
    EXPECT_TRUE(Ok(r));
    return static_cast<uint32_t>(r.get(prm::create_sq_out::sqn));  // every create_*_out: bits 0x48
  }
  template <class L, class F>
  Reply Simple(uint16_t opcode, F field, uint32_t n, std::size_t out = 16) {
    auto in = prm::CommandIn<L>(opcode);
    in.set(field, n);
    return Exec(in, out);
  }
  Reply ModifySq(uint32_t sqn, uint32_t cur, uint32_t next, uint64_t bitmask = 0) {
    using In = prm::modify_sq_in;
    auto in = prm::CommandIn<In>(prm::MODIFY_SQ);
    in.set(In::sqn, sqn)
        .set(In::sq_state, cur)
        .set(In::modify_bitmask, bitmask)
        .set(prm::sqc_bits<In::ctx.bit_offset>::state, next);
    return Exec(in, 16);
  }
  Reply ModifyRq(uint32_t rqn, uint32_t cur, uint32_t next) {
    using In = prm::modify_rq_in;
    auto in = prm::CommandIn<In>(prm::MODIFY_RQ);
    in.set(In::rqn, rqn).set(In::rq_state, cur).set(prm::rqc_bits<In::ctx.bit_offset>::state, next);
    return Exec(in, 16);
  }
  template <class M>
  ::testing::AssertionResult RefusedUnchanged(const M& in, CommandStatus status, Syndrome s) {
    const auto before = sim_->counters();
    auto r = Exec(in, 16);
    auto verdict = Refused(r, status, s);
    if (!verdict) return verdict;
    const auto after = sim_->counters();
    if (after.sqs != before.sqs || after.rqs != before.rqs || after.tises != before.tises ||
        after.tirs != before.tirs)
      return ::testing::AssertionFailure() << "an object was made";
    if (const char* broken = sim_->firmware().CheckInvariants())
      return ::testing::AssertionFailure() << broken;
    return ::testing::AssertionSuccess();
  }

  uint32_t pd_ = 0, cqn_ = 0, td_ = 0;
};

TEST_F(EthQueuesTest, CreateQueryDestroyRoundTrip) {
  const uint32_t tisn = NewTis();
  const uint32_t sqn = Created(SqIn(tisn));
  const uint32_t rqn = Created(RqIn());
  const uint32_t tirn = Created(TirIn(rqn));
  const uint32_t qpn = NewQp(pd_, cqn_);
  // One number space for QPs, SQs and RQs.
  EXPECT_NE(sqn, rqn);
  EXPECT_NE(qpn, sqn);
  EXPECT_NE(qpn, rqn);
  auto c = sim_->counters();
  EXPECT_EQ(c.tises, 1u);
  EXPECT_EQ(c.sqs, 1u);
  EXPECT_EQ(c.rqs, 1u);
  EXPECT_EQ(c.tirs, 1u);

  auto qs = Simple<prm::query_sq_in>(prm::QUERY_SQ, prm::query_sq_in::sqn, sqn,
                                     prm::size_bytes<prm::query_sq_out> + 8);
  ASSERT_TRUE(Ok(qs));
  EXPECT_EQ(qs.get(QSq::state), prm::SQC_STATE_RST);
  EXPECT_EQ(qs.get(QSq::cqn), cqn_);
  EXPECT_EQ(qs.get(QSq::tis_num_0), tisn);
  EXPECT_EQ(qs.get(prm::wq_bits<QSq::wq.bit_offset>::log_wq_sz), 6u);
  EXPECT_EQ(qs.get(prm::Element<64>{prm::query_sq_out::size_bits, "pas"}), kQueueIova);
  auto qr = Simple<prm::query_rq_in>(prm::QUERY_RQ, prm::query_rq_in::rqn, rqn,
                                     prm::size_bytes<prm::query_rq_out> + 8);
  ASSERT_TRUE(Ok(qr));
  EXPECT_EQ(qr.get(QRq::state), prm::RQC_STATE_RST);
  EXPECT_EQ(qr.get(prm::wq_bits<QRq::wq.bit_offset>::pd), pd_);
  auto qt = Simple<prm::query_tir_in>(prm::QUERY_TIR, prm::query_tir_in::tirn, tirn,
                                      prm::size_bytes<prm::query_tir_out>);
  ASSERT_TRUE(Ok(qt));
  EXPECT_EQ(qt.get(QTir::inline_rqn), rqn);
  EXPECT_EQ(qt.get(QTir::transport_domain), td_);
  auto qi = Simple<prm::query_tis_in>(prm::QUERY_TIS, prm::query_tis_in::tisn, tisn,
                                      prm::size_bytes<prm::query_tis_out>);
  ASSERT_TRUE(Ok(qi));
  EXPECT_EQ(qi.get(QTis::transport_domain), td_);

  // Held while used.
  EXPECT_TRUE(Refused(Simple<prm::destroy_tis_in>(prm::DESTROY_TIS, prm::destroy_tis_in::tisn, tisn),
                      CommandStatus::RES_BUSY, Syndrome::TIS_BUSY));
  EXPECT_TRUE(Refused(Simple<prm::destroy_rq_in>(prm::DESTROY_RQ, prm::destroy_rq_in::rqn, rqn),
                      CommandStatus::RES_BUSY, Syndrome::RQ_BUSY));
  EXPECT_TRUE(Refused(DeallocTd(td_), CommandStatus::RES_BUSY, Syndrome::TD_BUSY));
  EXPECT_TRUE(Refused(Simple<prm::destroy_cq_in>(prm::DESTROY_CQ, prm::destroy_cq_in::cqn, cqn_),
                      CommandStatus::RES_BUSY, Syndrome::CQ_BUSY));
  EXPECT_EQ(sim_->firmware().CheckInvariants(), nullptr);

  // In mlx5_ib's order: TIR, RQ, SQ, TIS.
  ASSERT_TRUE(Ok(DestroyQp(qpn)));
  ASSERT_TRUE(Ok(Simple<prm::destroy_tir_in>(prm::DESTROY_TIR, prm::destroy_tir_in::tirn, tirn)));
  ASSERT_TRUE(Ok(Simple<prm::destroy_rq_in>(prm::DESTROY_RQ, prm::destroy_rq_in::rqn, rqn)));
  ASSERT_TRUE(Ok(Simple<prm::destroy_sq_in>(prm::DESTROY_SQ, prm::destroy_sq_in::sqn, sqn)));
  ASSERT_TRUE(Ok(Simple<prm::destroy_tis_in>(prm::DESTROY_TIS, prm::destroy_tis_in::tisn, tisn)));
  ASSERT_TRUE(Ok(DeallocTd(td_)));
  c = sim_->counters();
  EXPECT_EQ(c.tises + c.sqs + c.rqs + c.tirs + c.qps, 0u);
  EXPECT_TRUE(Refused(Simple<prm::destroy_sq_in>(prm::DESTROY_SQ, prm::destroy_sq_in::sqn, sqn),
                      CommandStatus::BAD_RES_ERR, Syndrome::SQ_UNKNOWN));
  EXPECT_TRUE(Refused(Simple<prm::query_rq_in>(prm::QUERY_RQ, prm::query_rq_in::rqn, rqn,
                                               prm::size_bytes<prm::query_rq_out> + 8),
                      CommandStatus::BAD_RES_ERR, Syndrome::RQ_UNKNOWN));
  EXPECT_EQ(sim_->firmware().CheckInvariants(), nullptr);
}

TEST_F(EthQueuesTest, WorkQueueStateMachine) {
  const uint32_t sqn = Created(SqIn(NewTis()));
  const uint32_t rqn = Created(RqIn());
  // The current state must be the queue's.
  EXPECT_TRUE(Refused(ModifySq(sqn, prm::SQC_STATE_RDY, prm::SQC_STATE_ERR),
                      CommandStatus::BAD_RES_STATE_ERR, Syndrome::WQ_BAD_STATE));
  EXPECT_TRUE(Refused(ModifySq(sqn, prm::SQC_STATE_RST, prm::SQC_STATE_RDY, 1),
                      CommandStatus::BAD_PARAM_ERR, Syndrome::WQ_MODIFY_BITMASK));
  EXPECT_TRUE(Ok(ModifySq(sqn, prm::SQC_STATE_RST, prm::SQC_STATE_RDY)));
  EXPECT_TRUE(Ok(ModifySq(sqn, prm::SQC_STATE_RDY, prm::SQC_STATE_RDY)));
  EXPECT_TRUE(Ok(ModifySq(sqn, prm::SQC_STATE_RDY, prm::SQC_STATE_ERR)));
  EXPECT_TRUE(Refused(ModifySq(sqn, prm::SQC_STATE_ERR, prm::SQC_STATE_RDY),
                      CommandStatus::BAD_PARAM_ERR, Syndrome::WQ_TRANSITION));
  EXPECT_TRUE(Refused(ModifySq(sqn, prm::SQC_STATE_ERR, 2), CommandStatus::BAD_PARAM_ERR,
                      Syndrome::WQ_TRANSITION));
  auto q = Simple<prm::query_sq_in>(prm::QUERY_SQ, prm::query_sq_in::sqn, sqn,
                                    prm::size_bytes<prm::query_sq_out> + 8);
  EXPECT_EQ(q.get(QSq::state), prm::SQC_STATE_ERR);
  EXPECT_TRUE(Ok(ModifySq(sqn, prm::SQC_STATE_ERR, prm::SQC_STATE_RST)));

  EXPECT_TRUE(Ok(ModifyRq(rqn, prm::RQC_STATE_RST, prm::RQC_STATE_RDY)));
  EXPECT_TRUE(Refused(ModifyRq(rqn, prm::RQC_STATE_RST, prm::RQC_STATE_RDY),
                      CommandStatus::BAD_RES_STATE_ERR, Syndrome::WQ_BAD_STATE));
  EXPECT_TRUE(Ok(ModifyRq(rqn, prm::RQC_STATE_RDY, prm::RQC_STATE_RST)));
  auto r = Simple<prm::query_rq_in>(prm::QUERY_RQ, prm::query_rq_in::rqn, rqn,
                                    prm::size_bytes<prm::query_rq_out> + 8);
  EXPECT_EQ(r.get(QRq::state), prm::RQC_STATE_RST);
  EXPECT_EQ(sim_->firmware().CheckInvariants(), nullptr);
}

TEST_F(EthQueuesTest, SqRefusalsNameTheCheck) {
  const uint32_t tisn = NewTis();
  auto linked = SqIn(tisn);
  linked.set(SqW::wq_type, prm::WQ_TYPE_LINKED_LIST);
  EXPECT_TRUE(RefusedUnchanged(linked, CommandStatus::BAD_PARAM_ERR, Syndrome::WQ_TYPE));
  auto stride = SqIn(tisn);
  stride.set(SqW::log_wq_stride, 5);
  EXPECT_TRUE(RefusedUnchanged(stride, CommandStatus::BAD_PARAM_ERR, Syndrome::WQ_STRIDE));
  auto size = SqIn(tisn);
  size.set(SqW::log_wq_sz, 16);
  EXPECT_TRUE(RefusedUnchanged(size, CommandStatus::BAD_PARAM_ERR, Syndrome::WQ_SIZE));
  auto no_tis = SqIn(tisn);
  no_tis.set(SqC::tis_lst_sz, 0);
  EXPECT_TRUE(RefusedUnchanged(no_tis, CommandStatus::BAD_PARAM_ERR, Syndrome::SQ_TIS));
  EXPECT_TRUE(RefusedUnchanged(SqIn(tisn + 1), CommandStatus::BAD_RES_ERR,
                               Syndrome::SQ_TIS_UNKNOWN));
  auto hairpin = SqIn(tisn);
  hairpin.set(SqC::hairpin, 1);
  EXPECT_TRUE(RefusedUnchanged(hairpin, CommandStatus::BAD_PARAM_ERR, Syndrome::WQ_UNSUPPORTED));
  auto umem = SqIn(tisn);
  umem.set(SqW::wq_umem_valid, 1);
  EXPECT_TRUE(RefusedUnchanged(umem, CommandStatus::BAD_PARAM_ERR, Syndrome::WQ_UNSUPPORTED));
  auto state = SqIn(tisn);
  state.set(SqC::state, prm::SQC_STATE_RDY);
  EXPECT_TRUE(RefusedUnchanged(state, CommandStatus::BAD_PARAM_ERR, Syndrome::WQ_STATE));
  auto cq = SqIn(tisn);
  cq.set(SqC::cqn, cqn_ + 1);
  EXPECT_TRUE(RefusedUnchanged(cq, CommandStatus::BAD_RES_ERR, Syndrome::WQ_CQ_UNKNOWN));
  auto pd = SqIn(tisn);
  pd.set(SqW::pd, pd_ + 1);
  EXPECT_TRUE(RefusedUnchanged(pd, CommandStatus::BAD_RES_ERR, Syndrome::WQ_PD_UNKNOWN));
  auto uar = SqIn(tisn);
  uar.set(SqW::uar_page, uar_ + 1);
  EXPECT_TRUE(RefusedUnchanged(uar, CommandStatus::BAD_RES_ERR, Syndrome::WQ_UAR_UNKNOWN));
  auto dbr = SqIn(tisn);
  dbr.set(SqW::dbr_addr, kQpDbrIova + 4);
  EXPECT_TRUE(RefusedUnchanged(dbr, CommandStatus::BAD_PARAM_ERR, Syndrome::WQ_DBR_ALIGNMENT));
  dbr.set(SqW::dbr_addr, kUnmappedIova);
  EXPECT_TRUE(RefusedUnchanged(dbr, CommandStatus::BAD_PARAM_ERR, Syndrome::WQ_DBR_UNMAPPED));
  // 128 basic blocks need two pages.
  EXPECT_TRUE(RefusedUnchanged(SqIn(tisn, 7, 1), CommandStatus::BAD_PARAM_ERR,
                               Syndrome::WQ_PAS_COUNT));
  EXPECT_TRUE(Ok(Exec(SqIn(tisn, 7, 2), 16)));
  // Another owner's TIS.
  auto other = SqIn(tisn);
  other.set(prm::create_sq_in::uid, 3);
  EXPECT_TRUE(RefusedUnchanged(other, CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
}

TEST_F(EthQueuesTest, RqTisAndTirRefusals) {
  auto rmp = RqIn();
  rmp.set(RqC::mem_rq_type, prm::RQC_MEM_RQ_TYPE_MEMORY_RQ_RMP);
  EXPECT_TRUE(RefusedUnchanged(rmp, CommandStatus::BAD_PARAM_ERR, Syndrome::RQ_MEM_TYPE));
  EXPECT_TRUE(RefusedUnchanged(RqIn(4, 3), CommandStatus::BAD_PARAM_ERR, Syndrome::WQ_STRIDE));
  EXPECT_TRUE(RefusedUnchanged(RqIn(4, 10), CommandStatus::BAD_PARAM_ERR, Syndrome::WQ_STRIDE));
  auto fcs = RqIn();
  fcs.set(RqC::scatter_fcs, 1);
  EXPECT_TRUE(RefusedUnchanged(fcs, CommandStatus::BAD_PARAM_ERR, Syndrome::WQ_UNSUPPORTED));
  auto uar = RqIn();
  uar.set(RqW::uar_page, uar_);
  EXPECT_TRUE(RefusedUnchanged(uar, CommandStatus::BAD_PARAM_ERR, Syndrome::WQ_UNSUPPORTED));

  auto tls = TisIn(td_);
  tls.set(TisC::tls_en, 1);
  EXPECT_TRUE(RefusedUnchanged(tls, CommandStatus::BAD_PARAM_ERR, Syndrome::TIS_UNSUPPORTED));
  EXPECT_TRUE(RefusedUnchanged(TisIn(td_ + 1), CommandStatus::BAD_RES_ERR,
                               Syndrome::TIS_TD_UNKNOWN));
  EXPECT_TRUE(RefusedUnchanged(TisIn(td_, 4), CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));

  const uint32_t rqn = Created(RqIn());
  auto indirect = TirIn(rqn);
  indirect.set(TirC::disp_type, prm::TIRC_DISP_TYPE_INDIRECT);
  EXPECT_TRUE(RefusedUnchanged(indirect, CommandStatus::BAD_PARAM_ERR, Syndrome::TIR_INDIRECT));
  auto lro = TirIn(rqn);
  lro.set(TirC::lro_max_ip_payload_size, 4);
  EXPECT_TRUE(RefusedUnchanged(lro, CommandStatus::BAD_PARAM_ERR, Syndrome::TIR_UNSUPPORTED));
  EXPECT_TRUE(RefusedUnchanged(TirIn(rqn + 1), CommandStatus::BAD_RES_ERR,
                               Syndrome::TIR_RQ_UNKNOWN));
  auto td = TirIn(rqn);
  td.set(TirC::transport_domain, td_ + 1);
  EXPECT_TRUE(RefusedUnchanged(td, CommandStatus::BAD_RES_ERR, Syndrome::TIR_TD_UNKNOWN));
}

TEST_F(EthQueuesTest, ForcedTeardownReleasesEverything) {
  const uint32_t tisn = NewTis();
  Created(SqIn(tisn));
  Created(TirIn(Created(RqIn())));
  auto force = prm::CommandIn<prm::teardown_hca_in>(prm::TEARDOWN_HCA);
  force.set(prm::teardown_hca_in::profile, prm::TEARDOWN_HCA_FORCE_CLOSE);
  ASSERT_TRUE(Ok(Exec(force, 16)));
  const auto c = sim_->counters();
  EXPECT_EQ(c.tises + c.sqs + c.rqs + c.tirs + c.transport_domains, 0u);
  EXPECT_EQ(sim_->firmware().CheckInvariants(), nullptr);
}

}  // namespace
}  // namespace onchip::sim::testing
