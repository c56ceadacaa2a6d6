// CREATE/DESTROY/QUERY_QP and the state transitions: the context, geometry and page list kept
// and queried back; each refusal with its status and syndrome and nothing changed; ownership of
// the QP, its PD, CQs and UAR; the references a QP holds; every transition from every state it
// may and may not start from; the fields each transition takes, ignores and checks; teardown.
#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tests/device/sim/queues.h"
#include "tools/sim/gid_table.h"
#include "uapi/prm/hca.h"

namespace onchip::sim::testing {
namespace {

using prm::CommandStatus;
using In = prm::create_qp_in;
constexpr auto qpc = In::qpc;
using QCtx = prm::qpc_bits<prm::query_qp_out::qpc.bit_offset>;

class QpTest : public QueueTest {
 protected:
  void SetUp() override {
    QueueTest::SetUp();
    eqn_ = NewEq();
    cqn_ = NewCq(eqn_);
    pd_ = AllocPd();
  }
  ::testing::AssertionResult RefusedUnchanged(const prm::Message<In>& in, CommandStatus status,
                                              Syndrome syndrome) {
    const auto before = sim_->counters();
    auto r = CreateQp(in);
    auto verdict = Refused(r, status, syndrome);
    if (!verdict) return verdict;
    if (r.get(prm::create_qp_out::qpn) != 0)
      return ::testing::AssertionFailure() << "refusal carries a qpn";
    const auto after = sim_->counters();
    if (after.qps != before.qps) return ::testing::AssertionFailure() << "a QP was made";
    if (after.commands_failed != before.commands_failed + 1)
      return ::testing::AssertionFailure() << "not counted as failed";
    if (const char* broken = sim_->firmware().CheckInvariants())
      return ::testing::AssertionFailure() << broken;
    return ::testing::AssertionSuccess();
  }
  uint32_t eqn_ = 0;
  uint32_t cqn_ = 0;
  uint32_t pd_ = 0;
};

TEST_F(QpTest, CreateQueryDestroyRoundTrip) {
  auto in = QpIn(pd_, cqn_);
  in.set(qpc.user_index, 77);
  auto r = CreateQp(in);
  ASSERT_TRUE(Ok(r));
  const uint32_t qpn = static_cast<uint32_t>(r.get(prm::create_qp_out::qpn));
  EXPECT_GE(qpn, 2u);  // 0 and 1 name the special QPs
  EXPECT_EQ(sim_->counters().qps, 1u);

  auto q = QueryQp(qpn);
  ASSERT_TRUE(Ok(q));
  EXPECT_EQ(q.get(QCtx::state), prm::QP_STATE_RST);
  EXPECT_EQ(q.get(QCtx::st), prm::QP_ST_RC);
  EXPECT_EQ(q.get(QCtx::pd), pd_);
  EXPECT_EQ(q.get(QCtx::cqn_snd), cqn_);
  EXPECT_EQ(q.get(QCtx::cqn_rcv), cqn_);
  EXPECT_EQ(q.get(QCtx::uar_page), uar_);
  EXPECT_EQ(q.get(QCtx::log_rq_size), 4u);
  EXPECT_EQ(q.get(QCtx::log_rq_stride), 2u);
  EXPECT_EQ(q.get(QCtx::log_sq_size), 6u);
  EXPECT_EQ(q.get(QCtx::user_index), 77u);
  EXPECT_EQ(q.get(QCtx::dbr_addr), kQpDbrIova);
  // 1 KiB of receive ring and 4 KiB of send ring: two pages.
  using Pas = prm::query_qp_out_bits<>;
  constexpr std::size_t kPas = Pas::qp_pas_or_qpc_ext_and_pas.bit_offset;
  EXPECT_EQ(q.get(prm::Field<kPas, 64, "pas0">{}), kQueueIova);
  EXPECT_EQ(q.get(prm::Field<kPas + 64, 64, "pas1">{}), kQueueIova + 4096);
  EXPECT_EQ(q.get(prm::Field<kPas + 128, 64, "pas2">{}), 0u);

  const uint32_t qpn2 = NewQp(pd_, cqn_);
  EXPECT_NE(qpn2, qpn);
  ASSERT_TRUE(Ok(DestroyQp(qpn)));
  ASSERT_TRUE(Ok(DestroyQp(qpn2)));
  EXPECT_EQ(sim_->counters().qps, 0u);
  EXPECT_TRUE(Refused(QueryQp(qpn), CommandStatus::BAD_RES_ERR, Syndrome::QP_UNKNOWN));
  EXPECT_TRUE(Refused(DestroyQp(qpn), CommandStatus::BAD_RES_ERR, Syndrome::QP_UNKNOWN));
}

TEST_F(QpTest, AQpHoldsItsCqsAndPd) {
  const uint32_t rcv = NewCq(eqn_);
  auto in = QpIn(pd_, cqn_);
  in.set(qpc.cqn_rcv, rcv);
  auto r = CreateQp(in);
  ASSERT_TRUE(Ok(r));
  const uint32_t qpn = static_cast<uint32_t>(r.get(prm::create_qp_out::qpn));
  EXPECT_TRUE(Refused(DestroyCq(cqn_), CommandStatus::RES_BUSY, Syndrome::CQ_BUSY));
  EXPECT_TRUE(Refused(DestroyCq(rcv), CommandStatus::RES_BUSY, Syndrome::CQ_BUSY));
  auto dealloc = prm::CommandIn<prm::dealloc_pd_in>(prm::DEALLOC_PD);
  dealloc.set(prm::dealloc_pd_in::pd, pd_);
  EXPECT_TRUE(Refused(Exec(dealloc, 16), CommandStatus::RES_BUSY, Syndrome::PD_BUSY));
  ASSERT_TRUE(Ok(DestroyQp(qpn)));
  EXPECT_TRUE(Ok(DestroyCq(cqn_)));
  EXPECT_TRUE(Ok(DestroyCq(rcv)));
  EXPECT_TRUE(Ok(Exec(dealloc, 16)));
}

// REG_UMR, the kernel's registration QP, has its own rules (umr_test.cc); XRC QPs theirs
// (xrc_test.cc).
TEST_F(QpTest, RcUcUdAndXrcOnly) {
  for (uint8_t st : {uint8_t{prm::QP_ST_RC}, uint8_t{prm::QP_ST_UC}, uint8_t{prm::QP_ST_UD}}) {
    QpShape shape;
    shape.st = st;
    auto r = CreateQp(QpIn(pd_, cqn_, shape));
    EXPECT_TRUE(Ok(r)) << int(st);
    EXPECT_TRUE(Ok(DestroyQp(static_cast<uint32_t>(r.get(prm::create_qp_out::qpn)))));
  }
  for (uint32_t st : {prm::QP_ST_MLX, prm::QP_ST_DCI, prm::QP_ST_QP0,
                      prm::QP_ST_QP1, prm::QP_ST_RAW_ETHERTYPE}) {
    auto in = QpIn(pd_, cqn_);
    in.set(qpc.st, st);
    EXPECT_TRUE(RefusedUnchanged(in, CommandStatus::BAD_PARAM_ERR, Syndrome::QP_ST_UNSUPPORTED))
        << int(st);
  }
}

TEST_F(QpTest, UnsupportedFeaturesAreNamed) {
  std::vector<prm::Message<In>> cases;
  auto add = [&](auto field, uint64_t v) {
    auto in = QpIn(pd_, cqn_);
    in.set(field, v);
    cases.push_back(std::move(in));
  };
  add(In::qpc_ext, 1);
  add(In::input_qpn, 100);
  add(In::ece, 1);
  add(In::wq_umem_valid, 1);
  add(In::wq_umem_id, 3);
  add(qpc.dbr_umem_valid, 1);
  add(qpc.wq_signature, 1);
  add(qpc.rlky, 1);
  add(qpc.offload_type, 1);
  add(qpc.cd_master, 1);
  add(qpc.counter_set_id, 1);
  add(qpc.ts_format, 2);
  add(qpc.cs_res, 1);
  add(qpc.xrcd, 1);
  for (const auto& in : cases)
    EXPECT_TRUE(RefusedUnchanged(in, CommandStatus::BAD_PARAM_ERR, Syndrome::QP_UNSUPPORTED));
  // The free-running and default timestamp formats are fine.
  auto ts = QpIn(pd_, cqn_);
  ts.set(qpc.ts_format, 1);
  EXPECT_TRUE(Ok(CreateQp(ts)));
}

TEST_F(QpTest, StateAndCountersAreTheDevices) {
  std::vector<prm::Message<In>> cases;
  auto add = [&](auto field, uint64_t v) {
    auto in = QpIn(pd_, cqn_);
    in.set(field, v);
    cases.push_back(std::move(in));
  };
  add(qpc.state, prm::QP_STATE_INIT);
  add(qpc.state, prm::QP_STATE_RTS);
  add(qpc.hw_sq_wqebb_counter, 1);
  add(qpc.sw_rq_counter, 1);
  add(qpc.last_acked_psn, 1);
  add(qpc.ssn, 1);
  add(qpc.cur_rnr_retry, 1);
  for (const auto& in : cases)
    EXPECT_TRUE(RefusedUnchanged(in, CommandStatus::BAD_PARAM_ERR, Syndrome::QP_STATE));
}

TEST_F(QpTest, ReceiveStrideWithinTheCap) {
  QpShape shape;
  shape.log_rq_stride = 5;  // 512 bytes: max_wqe_sz_rq
  shape.log_rq = 3;
  EXPECT_TRUE(Ok(CreateQp(QpIn(pd_, cqn_, shape))));
  shape.log_rq_stride = 6;  // 1 KiB
  EXPECT_TRUE(RefusedUnchanged(QpIn(pd_, cqn_, shape), CommandStatus::BAD_PARAM_ERR,
                               Syndrome::QP_RQ_STRIDE));
}

TEST_F(QpTest, ReceiveQueueTypes) {
  // Zero-length RQ: the buffer is the send ring alone.
  QpShape send_only;
  send_only.log_rq = -1;
  send_only.log_sq = 6;
  auto r = CreateQp(QpIn(pd_, cqn_, send_only));
  ASSERT_TRUE(Ok(r));
  // no_sq: the buffer is the receive ring alone.
  QpShape recv_only;
  recv_only.log_sq = -1;
  EXPECT_TRUE(Ok(CreateQp(QpIn(pd_, cqn_, recv_only))));
  // Neither ring.
  QpShape none;
  none.log_rq = -1;
  none.log_sq = -1;
  EXPECT_TRUE(RefusedUnchanged(QpIn(pd_, cqn_, none), CommandStatus::BAD_PARAM_ERR,
                               Syndrome::QP_RQ_TYPE));
  auto crq = QpIn(pd_, cqn_);
  crq.set(qpc.rq_type, prm::CRQ_RQ);
  EXPECT_TRUE(RefusedUnchanged(crq, CommandStatus::BAD_PARAM_ERR, Syndrome::QP_RQ_TYPE));
  auto srq = QpIn(pd_, cqn_);
  srq.set(qpc.rq_type, prm::SRQ_RQ).set(qpc.srqn_rmpn_xrqn, 3);
  EXPECT_TRUE(RefusedUnchanged(srq, CommandStatus::BAD_RES_ERR, Syndrome::QP_SRQ_UNKNOWN));
}

TEST_F(QpTest, MessageSizeWithinTheCap) {
  auto in = QpIn(pd_, cqn_);
  in.set(qpc.log_msg_max, 31);  // log_max_msg is 30
  EXPECT_TRUE(RefusedUnchanged(in, CommandStatus::BAD_PARAM_ERR, Syndrome::QP_MSG_SIZE));
}

TEST_F(QpTest, PdCqsAndUarMustBeLiveAndOwned) {
  auto pd = QpIn(pd_, cqn_);
  pd.set(qpc.pd, pd_ + 1);
  EXPECT_TRUE(RefusedUnchanged(pd, CommandStatus::BAD_RES_ERR, Syndrome::QP_PD_UNKNOWN));
  auto other_pd = QpIn(AllocPd(5), cqn_);
  EXPECT_TRUE(RefusedUnchanged(other_pd, CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));

  auto snd = QpIn(pd_, cqn_);
  snd.set(qpc.cqn_snd, cqn_ + 1);
  EXPECT_TRUE(RefusedUnchanged(snd, CommandStatus::BAD_RES_ERR, Syndrome::QP_CQ_UNKNOWN));
  auto rcv = QpIn(pd_, cqn_);
  rcv.set(qpc.cqn_rcv, cqn_ + 1);
  EXPECT_TRUE(RefusedUnchanged(rcv, CommandStatus::BAD_RES_ERR, Syndrome::QP_CQ_UNKNOWN));

  auto uar = QpIn(pd_, cqn_);
  uar.set(qpc.uar_page, uar_ + 1);
  EXPECT_TRUE(RefusedUnchanged(uar, CommandStatus::BAD_RES_ERR, Syndrome::QP_UAR_UNKNOWN));
  auto other_uar = QpIn(pd_, cqn_);
  other_uar.set(qpc.uar_page, AllocUar(5));
  EXPECT_TRUE(RefusedUnchanged(other_uar, CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));

  // A user context's QP: its PD, CQ and UAR must all be its own.
  const uint32_t uar5 = AllocUar(5);
  auto cq5 = CqIn(eqn_, 7, 2, 5);
  cq5.set(prm::create_cq_in::cq_context.uar_page, uar5);
  auto c = CreateCq(cq5);
  ASSERT_TRUE(Ok(c));
  const uint32_t cqn5 = static_cast<uint32_t>(c.get(prm::create_cq_out::cqn));
  const uint32_t pd5 = AllocPd(5);
  auto mixed = QpIn(pd5, cqn_, {}, 5);
  mixed.set(qpc.uar_page, uar5);
  EXPECT_TRUE(RefusedUnchanged(mixed, CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  auto user = QpIn(pd5, cqn5, {}, 5);
  user.set(qpc.uar_page, uar5);
  auto r = CreateQp(user);
  ASSERT_TRUE(Ok(r));
  const uint32_t qpn = static_cast<uint32_t>(r.get(prm::create_qp_out::qpn));
  // Only its creator destroys or modifies it; the function's own context (uid 0) may query it.
  EXPECT_TRUE(Refused(DestroyQp(qpn, 0), CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  EXPECT_TRUE(Refused(Modify(Rst2Init(qpn, prm::QP_ST_RC, 6)), CommandStatus::BAD_RES_ERR,
                      Syndrome::NOT_OWNER));
  EXPECT_TRUE(Refused(QueryQp(qpn, 6), CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  EXPECT_TRUE(Ok(QueryQp(qpn, 0)));
  EXPECT_TRUE(Ok(QueryQp(qpn, 5)));
  EXPECT_TRUE(Ok(Modify(Rst2Init(qpn, prm::QP_ST_RC, 5))));
  EXPECT_TRUE(Ok(DestroyQp(qpn, 5)));
}

TEST_F(QpTest, PageSizeOffsetAndPageList) {
  auto big = QpIn(pd_, cqn_);
  big.set(qpc.log_page_size, 28);
  EXPECT_TRUE(RefusedUnchanged(big, CommandStatus::BAD_PARAM_ERR, Syndrome::QP_PAGE_SIZE));
  auto offset = QpIn(pd_, cqn_);
  offset.set(qpc.page_offset, 1);
  EXPECT_TRUE(RefusedUnchanged(offset, CommandStatus::BAD_PARAM_ERR, Syndrome::QP_PAGE_OFFSET));

  // 5 KiB of rings need two 4 KiB pages: one or three are wrong.
  QpShape shape;
  auto fewer = prm::CommandIn<In>(prm::CREATE_QP, 0, 8);
  {
    auto full = QpIn(pd_, cqn_, shape);
    std::memcpy(fewer.bytes().data(), full.bytes().data(), fewer.bytes().size());
  }
  EXPECT_TRUE(RefusedUnchanged(fewer, CommandStatus::BAD_PARAM_ERR, Syndrome::QP_PAS_COUNT));
  auto more = prm::CommandIn<In>(prm::CREATE_QP, 0, 24);
  {
    auto full = QpIn(pd_, cqn_, shape);
    std::memcpy(more.bytes().data(), full.bytes().data(), full.bytes().size());
    more.set(In::pas[2], kQueueIova + 8192);
  }
  EXPECT_TRUE(RefusedUnchanged(more, CommandStatus::BAD_PARAM_ERR, Syndrome::QP_PAS_COUNT));

  auto unaligned = QpIn(pd_, cqn_);
  unaligned.set(In::pas[1], kQueueIova + 4096 + 64);
  EXPECT_TRUE(RefusedUnchanged(unaligned, CommandStatus::BAD_PARAM_ERR, Syndrome::QP_PAS_ENTRY));
  auto unmapped = QpIn(pd_, cqn_);
  unmapped.set(In::pas[1], kUnmappedIova);
  EXPECT_TRUE(
      RefusedUnchanged(unmapped, CommandStatus::BAD_PARAM_ERR, Syndrome::QP_PAS_UNMAPPED));

  // One 8 KiB page holds both rings.
  QpShape one_page;
  one_page.log_page_size = 1;
  EXPECT_TRUE(Ok(CreateQp(QpIn(pd_, cqn_, one_page))));
}

TEST_F(QpTest, DoorbellRecordAlignedAndMapped) {
  auto unaligned = QpIn(pd_, cqn_);
  unaligned.set(qpc.dbr_addr, kQpDbrIova + 4);
  EXPECT_TRUE(
      RefusedUnchanged(unaligned, CommandStatus::BAD_PARAM_ERR, Syndrome::QP_DBR_ALIGNMENT));
  auto unmapped = QpIn(pd_, cqn_);
  unmapped.set(qpc.dbr_addr, kUnmappedIova);
  EXPECT_TRUE(
      RefusedUnchanged(unmapped, CommandStatus::BAD_PARAM_ERR, Syndrome::QP_DBR_UNMAPPED));
}

TEST_F(QpTest, ReservedBitsAndOpMod) {
  auto ctx = QpIn(pd_, cqn_);
  ctx.set(prm::Field<qpc.bit_offset + 0x10, 2, "qpc reserved">{}, 1);
  EXPECT_TRUE(RefusedUnchanged(ctx, CommandStatus::BAD_PARAM_ERR, Syndrome::RESERVED_NOT_ZERO));
  auto path = QpIn(pd_, cqn_);
  path.set(prm::Field<qpc.primary_address_path.bit_offset + 0x2, 14, "ads reserved">{}, 1);
  EXPECT_TRUE(RefusedUnchanged(path, CommandStatus::BAD_PARAM_ERR, Syndrome::RESERVED_NOT_ZERO));
  auto header = QpIn(pd_, cqn_);
  header.set(prm::Field<0x41, 7, "create_qp_in reserved">{}, 1);
  EXPECT_TRUE(
      RefusedUnchanged(header, CommandStatus::BAD_PARAM_ERR, Syndrome::RESERVED_NOT_ZERO));
  auto op_mod = QpIn(pd_, cqn_);
  op_mod.set(In::op_mod, 1);
  EXPECT_TRUE(RefusedUnchanged(op_mod, CommandStatus::BAD_PARAM_ERR, Syndrome::BAD_OP_MOD));
}

TEST_F(QpTest, LengthsAndHcaState) {
  // The input must hold the whole layout; the output the command's.
  auto full = QpIn(pd_, cqn_);
  auto short_in = prm::CommandIn<prm::destroy_qp_in>(prm::CREATE_QP);
  EXPECT_TRUE(Refused(Exec(short_in, 16), CommandStatus::BAD_INP_LEN_ERR,
                      Syndrome::INPUT_TOO_SHORT));
  EXPECT_TRUE(Refused(Exec(full, 8), CommandStatus::BAD_OUTP_LEN_ERR, Syndrome::OUTPUT_TOO_SHORT));
  const uint32_t qpn = NewQp(pd_, cqn_);
  auto query = prm::CommandIn<prm::query_qp_in>(prm::QUERY_QP);
  query.set(prm::query_qp_in::qpn, qpn);
  EXPECT_TRUE(Refused(Exec(query, prm::size_bytes<prm::query_qp_out> - 8),
                      CommandStatus::BAD_OUTP_LEN_ERR, Syndrome::OUTPUT_TOO_SHORT));
  auto short_modify = prm::CommandIn<prm::qp_2rst_in>(prm::RST2INIT_QP);
  short_modify.set(prm::qp_2rst_in::qpn, qpn);
  EXPECT_TRUE(Refused(Modify(short_modify), CommandStatus::BAD_INP_LEN_ERR,
                      Syndrome::INPUT_TOO_SHORT));
  EXPECT_EQ(QpState(qpn), prm::QP_STATE_RST);
  // Queue commands need an initialized HCA.
  auto force = prm::CommandIn<prm::teardown_hca_in>(prm::TEARDOWN_HCA);
  force.set(prm::teardown_hca_in::profile, prm::TEARDOWN_HCA_FORCE_CLOSE);
  ASSERT_TRUE(Ok(Exec(force, 16)));
  EXPECT_TRUE(Refused(CreateQp(full), CommandStatus::BAD_SYS_STATE_ERR, Syndrome::WRONG_STATE));
  EXPECT_TRUE(Refused(Modify(Rst2Init(qpn, prm::QP_ST_RC)), CommandStatus::BAD_SYS_STATE_ERR,
                      Syndrome::WRONG_STATE));
  EXPECT_TRUE(Refused(CreateSrq(SrqIn(pd_)), CommandStatus::BAD_SYS_STATE_ERR,
                      Syndrome::WRONG_STATE));
}

// ---- transitions ----

TEST_F(QpTest, RcGoesThroughInitRtrToRtsKeepingWhatEachStepTakes) {
  const uint32_t qpn = NewQp(pd_, cqn_);
  ASSERT_TRUE(Ok(Modify(Rst2Init(qpn, prm::QP_ST_RC))));
  auto q = QueryQp(qpn);
  EXPECT_EQ(q.get(QCtx::state), prm::QP_STATE_INIT);
  EXPECT_EQ(q.get(QCtx::primary_address_path.vhca_port_num), 1u);
  EXPECT_EQ(q.get(QCtx::rre), 1u);
  EXPECT_EQ(q.get(QCtx::rwe), 1u);
  EXPECT_EQ(q.get(QCtx::rae), 1u);

  ASSERT_TRUE(Ok(Modify(Init2Rtr(qpn, prm::QP_ST_RC, 0x77))));
  q = QueryQp(qpn);
  EXPECT_EQ(q.get(QCtx::state), prm::QP_STATE_RTR);
  EXPECT_EQ(q.get(QCtx::mtu), 3u);
  EXPECT_EQ(q.get(QCtx::log_msg_max), 30u);
  EXPECT_EQ(q.get(QCtx::remote_qpn), 0x77u);
  EXPECT_EQ(q.get(QCtx::next_rcv_psn), 0x100u);
  EXPECT_EQ(q.get(QCtx::log_rra_max), 4u);
  EXPECT_EQ(q.get(QCtx::min_rnr_nak), 12u);
  EXPECT_EQ(q.get(QCtx::primary_address_path.src_addr_index), 1u);
  EXPECT_EQ(q.get(QCtx::primary_address_path.hop_limit), 64u);
  EXPECT_EQ(q.get(QCtx::primary_address_path.udp_sport), 0xc001u);
  EXPECT_EQ(q.get(QCtx::primary_address_path.rmac_31_0), 0x03040506u);
  EXPECT_EQ(q.get(QCtx::primary_address_path.rgid_rip[12]), 10u);
  EXPECT_EQ(q.get(QCtx::primary_address_path.rgid_rip[15]), 2u);
  EXPECT_EQ(q.get(QCtx::rre), 1u);  // access flags from RST2INIT stay

  ASSERT_TRUE(Ok(Modify(Rtr2Rts(qpn, prm::QP_ST_RC))));
  q = QueryQp(qpn);
  EXPECT_EQ(q.get(QCtx::state), prm::QP_STATE_RTS);
  EXPECT_EQ(q.get(QCtx::next_send_psn), 0x200u);
  EXPECT_EQ(q.get(QCtx::retry_count), 7u);
  EXPECT_EQ(q.get(QCtx::rnr_retry), 7u);
  EXPECT_EQ(q.get(QCtx::log_sra_max), 4u);
  EXPECT_EQ(q.get(QCtx::primary_address_path.ack_timeout), 14u);
  EXPECT_EQ(q.get(QCtx::remote_qpn), 0x77u);
  EXPECT_EQ(q.get(QCtx::primary_address_path.hop_limit), 64u);
}

TEST_F(QpTest, UcAndUdTakeTheirOwnFields) {
  QpShape uc;
  uc.st = prm::QP_ST_UC;
  const uint32_t ucn = NewQp(pd_, cqn_, uc);
  auto init = Rst2Init(ucn, prm::QP_ST_UC);
  init.set(Ctx::rre, 1).set(Ctx::rae, 1);  // UC has no reads or atomics: ignored
  ASSERT_TRUE(Ok(Modify(init)));
  auto q = QueryQp(ucn);
  EXPECT_EQ(q.get(QCtx::rwe), 1u);
  EXPECT_EQ(q.get(QCtx::rre), 0u);
  EXPECT_EQ(q.get(QCtx::rae), 0u);
  auto rtr = Init2Rtr(ucn, prm::QP_ST_UC);
  rtr.set(Ctx::log_rra_max, 7).set(Ctx::min_rnr_nak, 3);  // RC's: ignored, so not checked
  ASSERT_TRUE(Ok(Modify(rtr)));
  auto rts = Rtr2Rts(ucn, prm::QP_ST_UC);
  rts.set(Ctx::log_sra_max, 7).set(Ctx::retry_count, 5);
  ASSERT_TRUE(Ok(Modify(rts)));
  q = QueryQp(ucn);
  EXPECT_EQ(q.get(QCtx::state), prm::QP_STATE_RTS);
  EXPECT_EQ(q.get(QCtx::log_rra_max), 0u);
  EXPECT_EQ(q.get(QCtx::log_sra_max), 0u);
  EXPECT_EQ(q.get(QCtx::retry_count), 0u);
  EXPECT_EQ(q.get(QCtx::remote_qpn), 0x42u);

  QpShape ud;
  ud.st = prm::QP_ST_UD;
  const uint32_t udn = NewQp(pd_, cqn_, ud);
  auto ud_init = Rst2Init(udn, prm::QP_ST_UD);
  ud_init.set(Ctx::rwe, 1);  // UD has no RDMA: ignored
  ASSERT_TRUE(Ok(Modify(ud_init)));
  auto ud_rtr = Init2Rtr(udn, prm::QP_ST_UD);
  ud_rtr.set(Ctx::remote_qpn, 9);  // UD has no remote QP: ignored
  ASSERT_TRUE(Ok(Modify(ud_rtr)));
  ASSERT_TRUE(Ok(Modify(Rtr2Rts(udn, prm::QP_ST_UD))));
  q = QueryQp(udn);
  EXPECT_EQ(q.get(QCtx::state), prm::QP_STATE_RTS);
  EXPECT_EQ(q.get(QCtx::q_key), 0x1234u);
  EXPECT_EQ(q.get(QCtx::rwe), 0u);
  EXPECT_EQ(q.get(QCtx::remote_qpn), 0u);
  EXPECT_EQ(q.get(QCtx::next_send_psn), 0x200u);
}

// Every command from every state a QP can be driven to: accepted exactly from its own.
TEST_F(QpTest, EachTransitionStartsFromItsStateOnly) {
  const std::vector<prm::QpState> states = {prm::QP_STATE_RST, prm::QP_STATE_INIT,
                                            prm::QP_STATE_RTR, prm::QP_STATE_RTS,
                                            prm::QP_STATE_ERR};
  struct Command {
    const char* name;
    std::function<Reply(uint32_t)> run;
    std::vector<prm::QpState> from;  // empty: every state
    prm::QpState to;
  };
  const std::vector<Command> commands = {
      {"RST2INIT", [this](uint32_t q) { return Modify(Rst2Init(q, prm::QP_ST_RC)); },
       {prm::QP_STATE_RST}, prm::QP_STATE_INIT},
      {"INIT2INIT",
       [this](uint32_t q) {
         return Modify(Transition<prm::init2init_qp_in>(prm::INIT2INIT_QP, q));
       },
       {prm::QP_STATE_INIT}, prm::QP_STATE_INIT},
      {"INIT2RTR", [this](uint32_t q) { return Modify(Init2Rtr(q, prm::QP_ST_RC)); },
       {prm::QP_STATE_INIT}, prm::QP_STATE_RTR},
      {"RTR2RTS", [this](uint32_t q) { return Modify(Rtr2Rts(q, prm::QP_ST_RC)); },
       {prm::QP_STATE_RTR}, prm::QP_STATE_RTS},
      {"RTS2RTS",
       [this](uint32_t q) {
         return Modify(Transition<prm::rts2rts_qp_in>(prm::RTS2RTS_QP, q));
       },
       {prm::QP_STATE_RTS}, prm::QP_STATE_RTS},
      {"SQERR2RTS",
       [this](uint32_t q) {
         return Modify(Transition<prm::sqerr2rts_qp_in>(prm::SQERR2RTS_QP, q));
       },
       {prm::QP_STATE_SQER}, prm::QP_STATE_RTS},
      {"SQD_RTS",
       [this](uint32_t q) {
         return Modify(Transition<prm::sqd2rts_qp_in>(prm::SQD_RTS_QP, q));
       },
       {prm::QP_STATE_SQD}, prm::QP_STATE_RTS},
      {"2ERR",
       [this](uint32_t q) {
         return Modify(Transition<prm::qp_2err_in>(prm::QP_2ERR, q));
       },
       {}, prm::QP_STATE_ERR},
      {"2RST",
       [this](uint32_t q) {
         return Modify(Transition<prm::qp_2rst_in>(prm::QP_2RST, q));
       },
       {}, prm::QP_STATE_RST},
  };
  for (prm::QpState from : states) {
    for (const Command& c : commands) {
      SCOPED_TRACE(std::string(c.name) + " from state " + std::to_string(from));
      const uint32_t qpn = NewQp(pd_, cqn_);
      DriveTo(qpn, prm::QP_ST_RC, from);
      ASSERT_EQ(QpState(qpn), from);
      const bool legal =
          c.from.empty() || std::find(c.from.begin(), c.from.end(), from) != c.from.end();
      const auto before = sim_->counters();
      Reply r = c.run(qpn);
      if (legal) {
        EXPECT_TRUE(Ok(r));
        EXPECT_EQ(QpState(qpn), c.to);
      } else {
        EXPECT_TRUE(Refused(r, CommandStatus::BAD_QP_STATE_ERR, Syndrome::QP_BAD_STATE));
        EXPECT_EQ(QpState(qpn), from);
        EXPECT_EQ(sim_->counters().commands_failed, before.commands_failed + 1);
      }
      ASSERT_TRUE(Ok(DestroyQp(qpn)));  // in any state
    }
  }
  EXPECT_EQ(sim_->counters().qps, 0u);
}

TEST_F(QpTest, ResetReturnsTheQpToItsStartAndItCanGoAgain) {
  const uint32_t qpn = NewQp(pd_, cqn_);
  DriveTo(qpn, prm::QP_ST_RC, prm::QP_STATE_RTS);
  ASSERT_TRUE(Ok(Modify(Transition<prm::qp_2err_in>(prm::QP_2ERR, qpn))));
  EXPECT_EQ(QpState(qpn), prm::QP_STATE_ERR);
  ASSERT_TRUE(Ok(Modify(Transition<prm::qp_2err_in>(prm::QP_2ERR, qpn))));  // ERR to ERR
  ASSERT_TRUE(Ok(Modify(Transition<prm::qp_2rst_in>(prm::QP_2RST, qpn))));
  EXPECT_EQ(QpState(qpn), prm::QP_STATE_RST);
  ASSERT_TRUE(Ok(Modify(Transition<prm::qp_2rst_in>(prm::QP_2RST, qpn))));  // RST to RST
  DriveTo(qpn, prm::QP_ST_RC, prm::QP_STATE_RTS);
  EXPECT_EQ(QpState(qpn), prm::QP_STATE_RTS);
}

TEST_F(QpTest, TransitionsOfAnUnknownQp) {
  EXPECT_TRUE(Refused(Modify(Rst2Init(999, prm::QP_ST_RC)), CommandStatus::BAD_RES_ERR,
                      Syndrome::QP_UNKNOWN));
  EXPECT_TRUE(Refused(Modify(Transition<prm::qp_2rst_in>(prm::QP_2RST, 999)),
                      CommandStatus::BAD_RES_ERR, Syndrome::QP_UNKNOWN));
}

TEST_F(QpTest, OptionalFieldsPerTransitionAndTransport) {
  const uint32_t rc = NewQp(pd_, cqn_);
  // RST2INIT takes no optional fields.
  auto init = Rst2Init(rc, prm::QP_ST_RC);
  init.set(prm::rst2init_qp_in::opt_param_mask, prm::QP_OPTPAR_PKEY_INDEX);
  EXPECT_TRUE(Refused(Modify(init), CommandStatus::BAD_PARAM_ERR, Syndrome::QP_OPT_PARAM));
  ASSERT_TRUE(Ok(Modify(Rst2Init(rc, prm::QP_ST_RC))));
  // Q_KEY is UD's.
  auto qkey = Transition<prm::init2init_qp_in>(prm::INIT2INIT_QP, rc, prm::QP_OPTPAR_Q_KEY);
  EXPECT_TRUE(Refused(Modify(qkey), CommandStatus::BAD_PARAM_ERR, Syndrome::QP_OPT_PARAM));
  // Fields the mask does not select are ignored.
  auto ignored = Transition<prm::init2init_qp_in>(prm::INIT2INIT_QP, rc, 0);
  ignored.set(Ctx::primary_address_path.pkey_index, 5).set(Ctx::rwe, 0);
  ASSERT_TRUE(Ok(Modify(ignored)));
  auto q = QueryQp(rc);
  EXPECT_EQ(q.get(QCtx::primary_address_path.pkey_index), 0u);
  EXPECT_EQ(q.get(QCtx::rwe), 1u);
  // ... and selected ones are taken.
  auto taken = Transition<prm::init2init_qp_in>(
      prm::INIT2INIT_QP, rc, prm::QP_OPTPAR_PKEY_INDEX | prm::QP_OPTPAR_RWE);
  taken.set(Ctx::primary_address_path.pkey_index, 5).set(Ctx::rwe, 0);
  ASSERT_TRUE(Ok(Modify(taken)));
  q = QueryQp(rc);
  EXPECT_EQ(q.get(QCtx::primary_address_path.pkey_index), 5u);
  EXPECT_EQ(q.get(QCtx::rwe), 0u);
  EXPECT_EQ(q.get(QCtx::rre), 1u);
  // No alternate path.
  auto alt = Init2Rtr(rc, prm::QP_ST_RC);
  alt.set(prm::init2rtr_qp_in::opt_param_mask, prm::QP_OPTPAR_ALT_ADDR_PATH);
  EXPECT_TRUE(Refused(Modify(alt), CommandStatus::BAD_PARAM_ERR, Syndrome::QP_UNSUPPORTED));
  ASSERT_TRUE(Ok(Modify(Init2Rtr(rc, prm::QP_ST_RC))));
  // RTR2RTS takes RNR_TIMEOUT for RC; RETRY_COUNT is not an optional field there.
  auto retry = Rtr2Rts(rc, prm::QP_ST_RC);
  retry.set(prm::rtr2rts_qp_in::opt_param_mask, prm::QP_OPTPAR_RETRY_COUNT);
  EXPECT_TRUE(Refused(Modify(retry), CommandStatus::BAD_PARAM_ERR, Syndrome::QP_OPT_PARAM));
  auto rnr = Rtr2Rts(rc, prm::QP_ST_RC);
  rnr.set(prm::rtr2rts_qp_in::opt_param_mask, prm::QP_OPTPAR_RNR_TIMEOUT)
      .set(Ctx::min_rnr_nak, 20);
  ASSERT_TRUE(Ok(Modify(rnr)));
  EXPECT_EQ(QueryQp(rc).get(QCtx::min_rnr_nak), 20u);
  // RTS2RTS: access flags, path migration state (migrated only), counter set (0 only).
  auto rts = Transition<prm::rts2rts_qp_in>(prm::RTS2RTS_QP, rc,
                                            prm::QP_OPTPAR_RAE | prm::QP_OPTPAR_PM_STATE);
  rts.set(Ctx::rae, 0).set(Ctx::pm_state, prm::QP_PM_MIGRATED);
  ASSERT_TRUE(Ok(Modify(rts)));
  EXPECT_EQ(QueryQp(rc).get(QCtx::rae), 0u);
  auto armed = Transition<prm::rts2rts_qp_in>(prm::RTS2RTS_QP, rc, prm::QP_OPTPAR_PM_STATE);
  armed.set(Ctx::pm_state, prm::QP_PM_ARMED);
  EXPECT_TRUE(Refused(Modify(armed), CommandStatus::BAD_PARAM_ERR, Syndrome::QP_UNSUPPORTED));
  auto counter =
      Transition<prm::rts2rts_qp_in>(prm::RTS2RTS_QP, rc, prm::QP_OPTPAR_COUNTER_SET_ID);
  counter.set(Ctx::counter_set_id, 3);
  EXPECT_TRUE(Refused(Modify(counter), CommandStatus::BAD_PARAM_ERR, Syndrome::QP_UNSUPPORTED));
  auto cqn_rcv = Transition<prm::rts2rts_qp_in>(prm::RTS2RTS_QP, rc, prm::QP_OPTPAR_CQN_RCV);
  EXPECT_TRUE(Refused(Modify(cqn_rcv), CommandStatus::BAD_PARAM_ERR, Syndrome::QP_OPT_PARAM));
  EXPECT_EQ(QpState(rc), prm::QP_STATE_RTS);

  // UC: only RWE among the access flags.
  QpShape uc;
  uc.st = prm::QP_ST_UC;
  const uint32_t ucn = NewQp(pd_, cqn_, uc);
  ASSERT_TRUE(Ok(Modify(Rst2Init(ucn, prm::QP_ST_UC))));
  auto uc_rre = Transition<prm::init2init_qp_in>(prm::INIT2INIT_QP, ucn, prm::QP_OPTPAR_RRE);
  EXPECT_TRUE(Refused(Modify(uc_rre), CommandStatus::BAD_PARAM_ERR, Syndrome::QP_OPT_PARAM));

  // UD: Q_KEY whenever it may change.
  QpShape ud;
  ud.st = prm::QP_ST_UD;
  const uint32_t udn = NewQp(pd_, cqn_, ud);
  ASSERT_TRUE(Ok(Modify(Rst2Init(udn, prm::QP_ST_UD))));
  auto ud_qkey = Transition<prm::init2init_qp_in>(prm::INIT2INIT_QP, udn, prm::QP_OPTPAR_Q_KEY);
  ud_qkey.set(Ctx::q_key, 0x5555);
  ASSERT_TRUE(Ok(Modify(ud_qkey)));
  EXPECT_EQ(QueryQp(udn).get(QCtx::q_key), 0x5555u);
  auto ud_rwe = Transition<prm::init2init_qp_in>(prm::INIT2INIT_QP, udn, prm::QP_OPTPAR_RWE);
  EXPECT_TRUE(Refused(Modify(ud_rwe), CommandStatus::BAD_PARAM_ERR, Syndrome::QP_OPT_PARAM));
}

TEST_F(QpTest, UdRts2RtsMovesTheReceiveCq) {
  const uint32_t other = NewCq(eqn_);
  QpShape ud;
  ud.st = prm::QP_ST_UD;
  const uint32_t qpn = NewQp(pd_, cqn_, ud);
  DriveTo(qpn, prm::QP_ST_UD, prm::QP_STATE_RTS);
  auto unknown = Transition<prm::rts2rts_qp_in>(prm::RTS2RTS_QP, qpn, prm::QP_OPTPAR_CQN_RCV);
  unknown.set(Ctx::cqn_rcv, other + 1);
  EXPECT_TRUE(Refused(Modify(unknown), CommandStatus::BAD_RES_ERR, Syndrome::QP_CQ_UNKNOWN));
  auto move = Transition<prm::rts2rts_qp_in>(prm::RTS2RTS_QP, qpn, prm::QP_OPTPAR_CQN_RCV);
  move.set(Ctx::cqn_rcv, other);
  ASSERT_TRUE(Ok(Modify(move)));
  auto q = QueryQp(qpn);
  EXPECT_EQ(q.get(QCtx::cqn_rcv), other);
  EXPECT_EQ(q.get(QCtx::cqn_snd), cqn_);
  EXPECT_TRUE(Refused(DestroyCq(other), CommandStatus::RES_BUSY, Syndrome::CQ_BUSY));
  EXPECT_EQ(sim_->firmware().CheckInvariants(), nullptr);
  ASSERT_TRUE(Ok(DestroyQp(qpn)));
  EXPECT_TRUE(Ok(DestroyCq(other)));
}

// Each checked value, refused with nothing changed.
TEST_F(QpTest, TransitionValuesAreChecked) {
  const uint32_t qpn = NewQp(pd_, cqn_);
  auto refuse = [&](const auto& in, Syndrome s, prm::QpState stays) {
    EXPECT_TRUE(Refused(Modify(in), CommandStatus::BAD_PARAM_ERR, s)) << SyndromeName(uint32_t(s));
    EXPECT_EQ(QpState(qpn), stays);
  };
  auto port0 = Rst2Init(qpn, prm::QP_ST_RC);
  port0.set(Ctx::primary_address_path.vhca_port_num, 0);
  refuse(port0, Syndrome::QP_PORT, prm::QP_STATE_RST);
  auto port2 = Rst2Init(qpn, prm::QP_ST_RC);
  port2.set(Ctx::primary_address_path.vhca_port_num, 2);
  refuse(port2, Syndrome::QP_PORT, prm::QP_STATE_RST);
  auto pkey = Rst2Init(qpn, prm::QP_ST_RC);
  pkey.set(Ctx::primary_address_path.pkey_index, 128);
  refuse(pkey, Syndrome::QP_PKEY_INDEX, prm::QP_STATE_RST);
  auto counter = Rst2Init(qpn, prm::QP_ST_RC);
  counter.set(Ctx::counter_set_id, 1);
  refuse(counter, Syndrome::QP_UNSUPPORTED, prm::QP_STATE_RST);
  auto reserved = Rst2Init(qpn, prm::QP_ST_RC);
  reserved.set(prm::Field<Ctx::bit_offset + 0x10, 2, "qpc reserved">{}, 1);
  refuse(reserved, Syndrome::RESERVED_NOT_ZERO, prm::QP_STATE_RST);
  auto op_mod = Rst2Init(qpn, prm::QP_ST_RC);
  op_mod.set(prm::rst2init_qp_in::op_mod, 1);
  refuse(op_mod, Syndrome::BAD_OP_MOD, prm::QP_STATE_RST);
  auto ece = Rst2Init(qpn, prm::QP_ST_RC);
  ece.set(prm::rst2init_qp_in::ece, 1);
  refuse(ece, Syndrome::QP_UNSUPPORTED, prm::QP_STATE_RST);
  ASSERT_TRUE(Ok(Modify(Rst2Init(qpn, prm::QP_ST_RC))));

  for (uint32_t mtu : {0u, 6u, 7u}) {
    auto in = Init2Rtr(qpn, prm::QP_ST_RC);
    in.set(Ctx::mtu, mtu);
    refuse(in, Syndrome::QP_MTU, prm::QP_STATE_INIT);
  }
  auto msg = Init2Rtr(qpn, prm::QP_ST_RC);
  msg.set(Ctx::log_msg_max, 31);
  refuse(msg, Syndrome::QP_MSG_SIZE, prm::QP_STATE_INIT);
  auto rra = Init2Rtr(qpn, prm::QP_ST_RC);
  rra.set(Ctx::log_rra_max, 5);  // log_max_ra_res_qp is 4
  refuse(rra, Syndrome::QP_RRA_MAX, prm::QP_STATE_INIT);
  auto gid = Init2Rtr(qpn, prm::QP_ST_RC);
  gid.set(Ctx::primary_address_path.src_addr_index, DeviceConfig{}.roce_address_table_size);
  refuse(gid, Syndrome::QP_GID_INDEX, prm::QP_STATE_INIT);
  auto path_port = Init2Rtr(qpn, prm::QP_ST_RC);
  path_port.set(Ctx::primary_address_path.vhca_port_num, 0);
  refuse(path_port, Syndrome::QP_PORT, prm::QP_STATE_INIT);
  auto path_reserved = Init2Rtr(qpn, prm::QP_ST_RC);
  path_reserved.set(prm::Field<Ctx::primary_address_path.bit_offset + 0x45, 3, "ads">{}, 1);
  refuse(path_reserved, Syndrome::RESERVED_NOT_ZERO, prm::QP_STATE_INIT);
  // A refused INIT2RTR kept nothing.
  EXPECT_EQ(QueryQp(qpn).get(QCtx::mtu), 0u);
  ASSERT_TRUE(Ok(Modify(Init2Rtr(qpn, prm::QP_ST_RC))));

  auto sra = Rtr2Rts(qpn, prm::QP_ST_RC);
  sra.set(Ctx::log_sra_max, 5);  // log_max_ra_req_qp is 4
  refuse(sra, Syndrome::QP_SRA_MAX, prm::QP_STATE_RTR);
  ASSERT_TRUE(Ok(Modify(Rtr2Rts(qpn, prm::QP_ST_RC))));
  EXPECT_EQ(sim_->firmware().CheckInvariants(), nullptr);
}

// A device with a small GID table, few QPs and short rings, for the limits the full-size
// device's field widths cannot reach.
class QpLimitsTest : public QpTest {
 protected:
  sim::DeviceConfig Config() const override {
    sim::DeviceConfig c;
    c.log_max_qp = 2;  // QP numbers 2 and 3
    c.log_max_qp_sz = 6;
    c.roce_address_table_size = 2;
    return c;
  }
};

TEST_F(QpLimitsTest, RingSizesWithinLogMaxQpSz) {
  QpShape sq;
  sq.log_sq = 7;
  EXPECT_TRUE(RefusedUnchanged(QpIn(pd_, cqn_, sq), CommandStatus::BAD_PARAM_ERR,
                               Syndrome::QP_SQ_SIZE));
  QpShape rq;
  rq.log_rq = 7;
  EXPECT_TRUE(RefusedUnchanged(QpIn(pd_, cqn_, rq), CommandStatus::BAD_PARAM_ERR,
                               Syndrome::QP_RQ_SIZE));
  QpShape both;
  both.log_rq = 6;
  both.log_sq = 6;
  EXPECT_TRUE(Ok(CreateQp(QpIn(pd_, cqn_, both))));
}

TEST_F(QpLimitsTest, QpNumbersRunOut) {
  const uint32_t a = NewQp(pd_, cqn_);
  const uint32_t b = NewQp(pd_, cqn_);
  EXPECT_EQ(a, 2u);
  EXPECT_EQ(b, 3u);
  EXPECT_TRUE(RefusedUnchanged(QpIn(pd_, cqn_), CommandStatus::NO_RES_ERR, Syndrome::QP_EXHAUSTED));
  ASSERT_TRUE(Ok(DestroyQp(a)));
  EXPECT_EQ(NewQp(pd_, cqn_), a);
}

TEST_F(QpLimitsTest, SourceGidIndexWithinTheTable) {
  const uint32_t qpn = NewQp(pd_, cqn_);
  ASSERT_TRUE(Ok(Modify(Rst2Init(qpn, prm::QP_ST_RC))));
  auto in = Init2Rtr(qpn, prm::QP_ST_RC);
  in.set(Ctx::primary_address_path.src_addr_index, 2);
  EXPECT_TRUE(Refused(Modify(in), CommandStatus::BAD_PARAM_ERR, Syndrome::QP_GID_INDEX));
  in.set(Ctx::primary_address_path.src_addr_index, 1);
  EXPECT_TRUE(Ok(Modify(in)));
}

// The firmware checks a path's GID index against the table's size only: an empty entry (index
// 4 of 16) is for the driver to refuse, as the kernel's GID cache does before any command.
TEST_F(QpTest, AnEmptyGidEntryIsWithinTheTable) {
  const uint32_t qpn = NewQp(pd_, cqn_);
  ASSERT_TRUE(Ok(Modify(Rst2Init(qpn, prm::QP_ST_RC))));
  ASSERT_TRUE(IsZero(GidTable(DeviceConfig{})[4].gid));
  auto in = Init2Rtr(qpn, prm::QP_ST_RC);
  in.set(Ctx::primary_address_path.src_addr_index, 4);
  EXPECT_TRUE(Ok(Modify(in)));
  EXPECT_EQ(QueryQp(qpn).get(QCtx::primary_address_path.src_addr_index), 4u);
}

TEST_F(QpTest, TeardownRefusesLiveQpsAndForceFreesThem) {
  const uint32_t qpn = NewQp(pd_, cqn_);
  DriveTo(qpn, prm::QP_ST_RC, prm::QP_STATE_RTS);
  EXPECT_TRUE(Refused(Exec(prm::CommandIn<prm::teardown_hca_in>(prm::TEARDOWN_HCA), 16),
                      CommandStatus::RES_BUSY, Syndrome::TEARDOWN_BUSY));
  EXPECT_TRUE(Ok(QueryQp(qpn)));
  auto force = prm::CommandIn<prm::teardown_hca_in>(prm::TEARDOWN_HCA);
  force.set(prm::teardown_hca_in::profile, prm::TEARDOWN_HCA_FORCE_CLOSE);
  ASSERT_TRUE(Ok(Exec(force, 16)));
  const auto c = sim_->counters();
  EXPECT_EQ(c.qps, 0u);
  EXPECT_EQ(c.cqs, 0u);
  EXPECT_EQ(c.pds, 0u);
  EXPECT_EQ(sim_->firmware().CheckInvariants(), nullptr);
}

}  // namespace
}  // namespace onchip::sim::testing
