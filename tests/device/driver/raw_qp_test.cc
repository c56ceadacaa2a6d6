// Raw packet QPs through the driver: the device objects mlx5_ib builds (transport domain, TIS,
// SQ, RQ, TIR) and the QP number it reports, ring sizes with the Ethernet segment, the modify
// rules for RAW_PACKET and what each transition does to the SQ and RQ, query, the posting
// rules (receives fill the RQ; sends are refused while the engine executes no Ethernet SQ),
// failures part way through creation, and destroy leaving nothing on the device.
#include <cerrno>
#include <cstring>

#include "driver/qp.h"
#include "driver/rings/data_path.h"
#include "tests/device/fixture.h"
#include "uapi/prm/opcodes.h"

namespace onchip::testing {
namespace {

class RawQpTest : public DriverPdCqTest {
 protected:
  ibv_qp_init_attr Attr(uint32_t send_wr = 16, uint32_t recv_wr = 16) {
    ibv_qp_init_attr a{};
    a.send_cq = cq_;
    a.recv_cq = cq_;
    a.qp_type = IBV_QPT_RAW_PACKET;
    a.cap.max_send_wr = send_wr;
    a.cap.max_recv_wr = recv_wr;
    a.cap.max_send_sge = 2;
    a.cap.max_recv_sge = 2;
    return a;
  }
  int Modify(ibv_qp* qp, ibv_qp_state state, int extra_mask = 0, uint8_t port = 1) {
    ibv_qp_attr a{};
    a.qp_state = state;
    a.port_num = port;
    return v::modify_qp(qp, &a, IBV_QP_STATE | extra_mask);
  }
  ibv_qp_state Queried(ibv_qp* qp) {
    ibv_qp_attr a{};
    ibv_qp_init_attr init{};
    EXPECT_EQ(v::query_qp(qp, &a, IBV_QP_STATE | IBV_QP_CAP, &init), 0);
    EXPECT_EQ(init.qp_type, IBV_QPT_RAW_PACKET);
    return a.qp_state;
  }
  uint64_t Commands() const { return sim_->counters().commands; }
  uint64_t CommandsOf(uint16_t opcode) const {
    const auto c = sim_->counters();
    auto it = c.by_opcode.find(opcode);
    return it == c.by_opcode.end() ? 0 : it->second;
  }
};

TEST_F(RawQpTest, CreateBuildsTheObjectsAndReportsTheSqNumber) {
  ibv_qp_init_attr a = Attr();
  ibv_qp* qp = v::create_qp(pd_, &a);
  ASSERT_NE(qp, nullptr) << strerror(errno);
  auto c = sim_->counters();
  EXPECT_EQ(c.qps, 0u);  // no QP context: SQ, RQ, TIS, TIR in a transport domain
  EXPECT_EQ(c.sqs, 1u);
  EXPECT_EQ(c.rqs, 1u);
  EXPECT_EQ(c.tises, 1u);
  EXPECT_EQ(c.tirs, 1u);
  EXPECT_EQ(c.transport_domains, 1u);
  const driver::Qp* q = driver::Qp::From(qp);
  EXPECT_EQ(qp->qp_num, q->raw.sqn);
  EXPECT_NE(q->raw.rqn, q->raw.sqn);
  EXPECT_EQ(qp->state, IBV_QPS_RESET);
  // ctrl 16 + eth 16 + the rest of the inline L2 header 16 + 2 SGEs 32 = 80 -> 128-byte WQEs;
  // 16 of them: 2048 bytes, 32 basic blocks.
  EXPECT_EQ(q->sq.wqe_cnt, 32u);
  EXPECT_EQ(a.cap.max_send_wr, 16u);
  EXPECT_EQ(a.cap.max_inline_data, 128u - 48 - 4);
  EXPECT_EQ(a.cap.max_recv_wr, 16u);
  EXPECT_EQ(Queried(qp), IBV_QPS_RESET);

  // The CQ and PD stay while the QP lives.
  EXPECT_EQ(v::destroy_cq(cq_), EBUSY);
  EXPECT_EQ(v::destroy_qp(qp), 0);
  c = sim_->counters();
  EXPECT_EQ(c.sqs + c.rqs + c.tises + c.tirs + c.transport_domains, 0u);
}

// Destroy lets go of both numbers: the driver's qpn table forgets the SQ's and the RQ's, so the
// device's next raw QP (which gets the same numbers back) is created, again and again.
TEST_F(RawQpTest, DestroyReleasesBothNumbersForTheNextQp) {
  uint32_t first_sqn = 0, first_rqn = 0;
  for (int round = 0; round < 3; ++round) {
    ibv_qp_init_attr a = Attr();
    ibv_qp* qp = v::create_qp(pd_, &a);
    ASSERT_NE(qp, nullptr) << "round " << round << ": " << strerror(errno);
    const uint32_t sqn = driver::Qp::From(qp)->raw.sqn;
    const uint32_t rqn = driver::Qp::From(qp)->raw.rqn;
    EXPECT_NE(device().qpns().Find(sqn), nullptr);
    EXPECT_NE(device().qpns().Find(rqn), nullptr);
    if (round == 0) {
      first_sqn = sqn;
      first_rqn = rqn;
    } else {
      // The device hands the freed numbers out again: the case the table must not refuse.
      EXPECT_EQ(sqn, first_sqn);
      EXPECT_EQ(rqn, first_rqn);
    }
    ASSERT_EQ(v::destroy_qp(qp), 0);
    EXPECT_EQ(device().qpns().Find(sqn), nullptr);
    EXPECT_EQ(device().qpns().Find(rqn), nullptr);
  }
}

TEST_F(RawQpTest, OneSidedQpsHaveOneQueue) {
  ibv_qp_init_attr send_only = Attr(8, 0);
  ibv_qp* s = v::create_qp(pd_, &send_only);
  ASSERT_NE(s, nullptr) << strerror(errno);
  auto c = sim_->counters();
  EXPECT_EQ(c.sqs, 1u);
  EXPECT_EQ(c.rqs + c.tirs, 0u);
  EXPECT_EQ(s->qp_num, driver::Qp::From(s)->raw.sqn);

  ibv_qp_init_attr recv_only = Attr(0, 8);
  ibv_qp* r = v::create_qp(pd_, &recv_only);
  ASSERT_NE(r, nullptr) << strerror(errno);
  c = sim_->counters();
  EXPECT_EQ(c.rqs, 1u);
  EXPECT_EQ(c.tirs, 1u);
  EXPECT_EQ(c.tises, 1u);  // the send-only QP's
  EXPECT_EQ(r->qp_num, driver::Qp::From(r)->raw.rqn);
  EXPECT_NE(r->qp_num, s->qp_num);

  // Both move through every state with their one queue.
  for (ibv_qp* qp : {s, r}) {
    ASSERT_EQ(Modify(qp, IBV_QPS_INIT, IBV_QP_PORT), 0);
    ASSERT_EQ(Modify(qp, IBV_QPS_RTR), 0);
    ASSERT_EQ(Modify(qp, IBV_QPS_RTS), 0);
    EXPECT_EQ(Queried(qp), IBV_QPS_RTS);
    ASSERT_EQ(Modify(qp, IBV_QPS_ERR), 0);
    EXPECT_EQ(Queried(qp), IBV_QPS_ERR);
  }
  EXPECT_EQ(v::destroy_qp(s), 0);
  EXPECT_EQ(v::destroy_qp(r), 0);
}

TEST_F(RawQpTest, ModifyRulesAndWhatEachTransitionDoes) {
  ibv_qp_init_attr a = Attr();
  ibv_qp* qp = v::create_qp(pd_, &a);
  ASSERT_NE(qp, nullptr) << strerror(errno);
  const auto before = Commands();
  // RESET->INIT needs the port and takes nothing a raw QP has not (P_Key, Q_Key, access).
  EXPECT_EQ(Modify(qp, IBV_QPS_INIT), EINVAL);
  EXPECT_EQ(Modify(qp, IBV_QPS_INIT, IBV_QP_PORT | IBV_QP_PKEY_INDEX), EINVAL);
  EXPECT_EQ(Modify(qp, IBV_QPS_INIT, IBV_QP_PORT | IBV_QP_QKEY), EINVAL);
  EXPECT_EQ(Modify(qp, IBV_QPS_INIT, IBV_QP_PORT, /*port=*/2), EINVAL);
  EXPECT_EQ(Modify(qp, IBV_QPS_RTR), EINVAL);  // not from RESET
  EXPECT_EQ(Commands(), before);

  // RESET->INIT readies the RQ (MODIFY_RQ) and leaves the SQ in reset (MODIFY_SQ RST->RST).
  const auto rq_mods = CommandsOf(prm::MODIFY_RQ), sq_mods = CommandsOf(prm::MODIFY_SQ);
  ASSERT_EQ(Modify(qp, IBV_QPS_INIT, IBV_QP_PORT), 0);
  EXPECT_EQ(CommandsOf(prm::MODIFY_RQ), rq_mods + 1);
  EXPECT_EQ(CommandsOf(prm::MODIFY_SQ), sq_mods + 1);
  EXPECT_EQ(driver::Qp::From(qp)->raw.rq_state, prm::RQC_STATE_RDY);
  EXPECT_EQ(driver::Qp::From(qp)->raw.sq_state, prm::SQC_STATE_RST);
  EXPECT_EQ(Queried(qp), IBV_QPS_INIT);
  // INIT->INIT and INIT->RTR send no command.
  auto mid = Commands();
  ASSERT_EQ(Modify(qp, IBV_QPS_INIT, IBV_QP_PORT), 0);
  EXPECT_EQ(Modify(qp, IBV_QPS_RTR, IBV_QP_PATH_MTU), EINVAL);
  ASSERT_EQ(Modify(qp, IBV_QPS_RTR), 0);
  EXPECT_EQ(Commands(), mid);
  EXPECT_EQ(Queried(qp), IBV_QPS_RTR);
  // RTR->RTS readies the SQ; a rate limit is not something this device has.
  EXPECT_EQ(Modify(qp, IBV_QPS_RTS, IBV_QP_SQ_PSN), EINVAL);
  ASSERT_EQ(Modify(qp, IBV_QPS_RTS), 0);
  EXPECT_EQ(driver::Qp::From(qp)->raw.sq_state, prm::SQC_STATE_RDY);
  EXPECT_EQ(Queried(qp), IBV_QPS_RTS);
  EXPECT_EQ(Modify(qp, IBV_QPS_RTS, IBV_QP_RATE_LIMIT), EOPNOTSUPP);
  ASSERT_EQ(Modify(qp, IBV_QPS_RTS), 0);
  // ERR moves both queues; the state then comes from the device.
  ASSERT_EQ(Modify(qp, IBV_QPS_ERR), 0);
  EXPECT_EQ(driver::Qp::From(qp)->raw.rq_state, prm::RQC_STATE_ERR);
  EXPECT_EQ(driver::Qp::From(qp)->raw.sq_state, prm::SQC_STATE_ERR);
  EXPECT_EQ(Queried(qp), IBV_QPS_ERR);
  EXPECT_EQ(Modify(qp, IBV_QPS_RTS), EINVAL);
  ASSERT_EQ(Modify(qp, IBV_QPS_RESET), 0);
  EXPECT_EQ(Queried(qp), IBV_QPS_RESET);
  // And again from the start.
  ASSERT_EQ(Modify(qp, IBV_QPS_INIT, IBV_QP_PORT), 0);
  ASSERT_EQ(Modify(qp, IBV_QPS_RTR), 0);
  ASSERT_EQ(Modify(qp, IBV_QPS_RTS), 0);
  EXPECT_EQ(Queried(qp), IBV_QPS_RTS);
  EXPECT_EQ(v::destroy_qp(qp), 0);
}

TEST_F(RawQpTest, PostingRules) {
  ibv_qp_init_attr a = Attr();
  ibv_qp* qp = v::create_qp(pd_, &a);
  ASSERT_NE(qp, nullptr) << strerror(errno);
  std::byte buf[64];
  ibv_mr* mr = v::reg_mr(pd_, buf, sizeof(buf), reinterpret_cast<uintptr_t>(buf),
                         IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf), sizeof(buf), mr->lkey};
  ibv_recv_wr rwr{};
  rwr.sg_list = &sge;
  rwr.num_sge = 1;
  ibv_recv_wr* rbad = nullptr;
  ibv_send_wr swr{};
  swr.opcode = IBV_WR_SEND;
  swr.sg_list = &sge;
  swr.num_sge = 1;
  ibv_send_wr* sbad = nullptr;

  ASSERT_EQ(Modify(qp, IBV_QPS_INIT, IBV_QP_PORT), 0);
  // Receives fill the RQ from INIT (no steering rule sends a frame to it, so none completes).
  EXPECT_EQ(driver::rings::PostRecv(qp, &rwr, &rbad), 0);
  ASSERT_EQ(Modify(qp, IBV_QPS_RTR), 0);
  ASSERT_EQ(Modify(qp, IBV_QPS_RTS), 0);
  // The data engine executes no Ethernet send queue yet: refused, nothing written.
  const auto* record = static_cast<const uint32_t*>(driver::Qp::From(qp)->doorbell.data());
  const uint32_t send_counter = record[1];
  EXPECT_EQ(driver::rings::PostSend(qp, &swr, &sbad), EOPNOTSUPP);
  EXPECT_EQ(sbad, &swr);
  EXPECT_EQ(record[1], send_counter);
  EXPECT_EQ(v::destroy_qp(qp), 0);
  EXPECT_EQ(v::dereg_mr(mr), 0);
}

TEST_F(RawQpTest, RefusedShapes) {
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = 8;
  sa.attr.max_sge = 1;
  ibv_srq* srq = v::create_srq(pd_, &sa);
  ASSERT_NE(srq, nullptr);
  ibv_qp_init_attr on_srq = Attr();
  on_srq.srq = srq;
  errno = 0;
  EXPECT_EQ(v::create_qp(pd_, &on_srq), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_EQ(v::destroy_srq(srq), 0);

  ibv_qp_init_attr_ex ex{};
  ex.qp_type = IBV_QPT_RAW_PACKET;
  ex.send_cq = cq_;
  ex.recv_cq = cq_;
  ex.cap = Attr().cap;
  ex.pd = pd_;
  ex.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  ex.send_ops_flags = IBV_QP_EX_WITH_SEND;
  errno = 0;
  EXPECT_EQ(v::create_qp_ex(verbs_, &ex), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);

  ibv_qp_init_attr none = Attr(0, 0);
  errno = 0;
  EXPECT_EQ(v::create_qp(pd_, &none), nullptr);
  EXPECT_EQ(errno, EINVAL);
  const auto c = sim_->counters();
  EXPECT_EQ(c.sqs + c.rqs + c.tises + c.tirs + c.transport_domains, 0u);
}

TEST_F(RawQpTest, AFailurePartWayLeavesNothing) {
  for (uint16_t opcode : {prm::ALLOC_TRANSPORT_DOMAIN, prm::CREATE_TIS, prm::CREATE_SQ,
                          prm::CREATE_RQ, prm::CREATE_TIR}) {
    sim_->firmware().InjectFailure({.count = 1, .opcode = opcode});
    ibv_qp_init_attr a = Attr();
    errno = 0;
    EXPECT_EQ(v::create_qp(pd_, &a), nullptr) << opcode;
    EXPECT_NE(errno, 0);
    const auto c = sim_->counters();
    EXPECT_EQ(c.sqs + c.rqs + c.tises + c.tirs + c.transport_domains, 0u) << opcode;
  }
}

}  // namespace
}  // namespace onchip::testing
