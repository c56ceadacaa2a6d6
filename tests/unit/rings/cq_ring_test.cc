// The CQ ring on hand-made CQEs: ownership across the ring's wrap, requester and responder
// fields, each error syndrome's ibv_wc_status, the consumer index record, arming, and the
// ibv_cq_ex readers.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <array>
#include <cstring>
#include <utility>

#include "tests/unit/rings/ring_fixture.h"
#include "uapi/prm/cqe_syndrome.h"
#include "uapi/prm/send_wqe.h"

namespace onchip::rings_test {
namespace {

namespace pod = prm::pod;

// Posts `n` signaled SENDs with wr_id 100 + i.
void PostSends(Harness& h, int n) {
  for (int i = 0; i < n; ++i) {
    ibv_send_wr wr{};
    wr.wr_id = 100 + static_cast<uint64_t>(i);
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(driver::rings::PostSend(h.ibqp(), &wr, &bad), 0);
  }
}

// Posts one receive of 64 bytes with `wr_id`.
void PostRecvOf(Harness& h, uint64_t wr_id) {
  ibv_sge sge = Sge(0x1000, 64, 1);
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  ASSERT_EQ(driver::rings::PostRecv(h.ibqp(), &wr, &bad), 0);
}

TEST(CqRing, InitMarksEveryCqeInvalidAndAnEmptyCqPollsZero) {
  Harness h;
  for (uint32_t i = 0; i < 64; ++i)
    EXPECT_EQ(reinterpret_cast<pod::mlx5_cqe64*>(h.cq_buf.p + i * 64)->op_own, 0xf0);
  std::array<ibv_wc, 4> wc{};
  EXPECT_EQ(driver::rings::PollCq(h.ibcq(), 4, wc.data()), 0);
  EXPECT_EQ(h.cq.ring.consumer_index(), 0u);
}

TEST(CqRing, RequesterCompletionsAndOwnershipAcrossTheWrap) {
  Harness h(QpTransport::kRc, 64, 16, true, /*cqe_cnt=*/4);
  PostSends(h, 6);
  std::array<ibv_wc, 8> wc{};
  // First pass: CQEs 0..2 with owner 0.
  for (uint32_t n = 0; n < 3; ++n) h.WriteCqe(n, prm::MLX5_CQE_REQ, static_cast<uint16_t>(n), prm::MLX5_OPCODE_SEND);
  ASSERT_EQ(driver::rings::PollCq(h.ibcq(), 8, wc.data()), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(wc[i].wr_id, 100u + i);
    EXPECT_EQ(wc[i].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc[i].opcode, IBV_WC_SEND);
    EXPECT_EQ(wc[i].qp_num, kQpn);
  }
  EXPECT_EQ(h.cq_dbr.set_ci.host(), 3u);
  // CQEs 3..5 land in slots 3, 0, 1 with owner bits 0, 1, 1.
  for (uint32_t n = 3; n < 6; ++n) h.WriteCqe(n, prm::MLX5_CQE_REQ, static_cast<uint16_t>(n), prm::MLX5_OPCODE_SEND);
  ASSERT_EQ(driver::rings::PollCq(h.ibcq(), 2, wc.data()), 2);
  EXPECT_EQ(wc[0].wr_id, 103u);
  EXPECT_EQ(wc[1].wr_id, 104u);
  ASSERT_EQ(driver::rings::PollCq(h.ibcq(), 8, wc.data()), 1);
  EXPECT_EQ(wc[0].wr_id, 105u);
  EXPECT_EQ(h.cq_dbr.set_ci.host(), 6u);
  // Slot 2 holds CQE 2 of the first pass (owner 0); at consumer index 6 software needs owner 1.
  EXPECT_EQ(driver::rings::PollCq(h.ibcq(), 8, wc.data()), 0);
  EXPECT_EQ(h.qp.sq.outstanding(), 0u);
}

TEST(CqRing, ACompletionRetiresEarlierUnsignaledWqes) {
  Harness h;
  for (int i = 0; i < 3; ++i) {
    ibv_send_wr wr{};
    wr.wr_id = 10 + static_cast<uint64_t>(i);
    wr.opcode = IBV_WR_RDMA_READ;
    wr.send_flags = i == 2 ? IBV_SEND_SIGNALED : 0;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(driver::rings::PostSend(h.ibqp(), &wr, &bad), 0);
  }
  auto* cqe = h.WriteCqe(0, prm::MLX5_CQE_REQ, 2, prm::MLX5_OPCODE_RDMA_READ);
  cqe->byte_cnt = prm::Be32::FromHost(4096);
  cqe->op_own = prm::CqeOpOwn(prm::MLX5_CQE_REQ, false);
  ibv_wc wc{};
  ASSERT_EQ(driver::rings::PollCq(h.ibcq(), 1, &wc), 1);
  EXPECT_EQ(wc.wr_id, 12u);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_READ);
  EXPECT_EQ(wc.byte_len, 4096u);
  EXPECT_EQ(h.qp.sq.outstanding(), 0u);
}

TEST(CqRing, RequesterOpcodesMapAsLibmlx5Maps) {
  const std::array<std::tuple<uint8_t, ibv_wc_opcode, unsigned, uint32_t>, 7> cases{{
      {prm::MLX5_OPCODE_SEND, IBV_WC_SEND, 0, 0},
      {prm::MLX5_OPCODE_SEND_IMM, IBV_WC_SEND, IBV_WC_WITH_IMM, 0},
      {prm::MLX5_OPCODE_SEND_INVAL, IBV_WC_SEND, 0, 0},
      {prm::MLX5_OPCODE_RDMA_WRITE, IBV_WC_RDMA_WRITE, 0, 0},
      {prm::MLX5_OPCODE_RDMA_WRITE_IMM, IBV_WC_RDMA_WRITE, IBV_WC_WITH_IMM, 0},
      {prm::MLX5_OPCODE_ATOMIC_CS, IBV_WC_COMP_SWAP, 0, 8},
      {prm::MLX5_OPCODE_ATOMIC_FA, IBV_WC_FETCH_ADD, 0, 8},
  }};
  for (const auto& [wqe_op, wc_op, flags, len] : cases) {
    Harness h;
    PostSends(h, 1);
    h.WriteCqe(0, prm::MLX5_CQE_REQ, 0, wqe_op);
    ibv_wc wc{};
    ASSERT_EQ(driver::rings::PollCq(h.ibcq(), 1, &wc), 1);
    EXPECT_EQ(wc.opcode, wc_op) << int{wqe_op};
    EXPECT_EQ(wc.wc_flags, flags) << int{wqe_op};
    if (len != 0) {
      EXPECT_EQ(wc.byte_len, len);
    }
  }
}

TEST(CqRing, UmrCompletionsReportBindOrLocalInvalidateFromTheWqe) {
  Harness h;
  ibv_mw mw{};
  ibv_send_wr inv{};
  inv.opcode = IBV_WR_LOCAL_INV;
  inv.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(driver::rings::PostSend(h.ibqp(), &inv, &bad), 0);
  ibv_send_wr bind{};
  bind.opcode = IBV_WR_BIND_MW;
  bind.bind_mw.mw = &mw;
  ASSERT_EQ(driver::rings::PostSend(h.ibqp(), &bind, &bad), 0);  // zero length: unbind
  h.WriteCqe(0, prm::MLX5_CQE_REQ, 0, prm::MLX5_OPCODE_UMR);
  h.WriteCqe(1, prm::MLX5_CQE_REQ, 2, prm::MLX5_OPCODE_UMR);
  std::array<ibv_wc, 2> wc{};
  ASSERT_EQ(driver::rings::PollCq(h.ibcq(), 2, wc.data()), 2);
  EXPECT_EQ(wc[0].opcode, IBV_WC_LOCAL_INV);
  EXPECT_EQ(wc[1].opcode, IBV_WC_BIND_MW);
}

TEST(CqRing, EachSyndromeMapsToItsStatus) {
  const std::array<std::pair<uint8_t, ibv_wc_status>, 14> table{{
      {prm::MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, IBV_WC_LOC_LEN_ERR},
      {prm::MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, IBV_WC_LOC_QP_OP_ERR},
      {prm::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, IBV_WC_LOC_PROT_ERR},
      {prm::MLX5_CQE_SYNDROME_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR},
      {prm::MLX5_CQE_SYNDROME_MW_BIND_ERR, IBV_WC_MW_BIND_ERR},
      {prm::MLX5_CQE_SYNDROME_BAD_RESP_ERR, IBV_WC_BAD_RESP_ERR},
      {prm::MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR, IBV_WC_LOC_ACCESS_ERR},
      {prm::MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, IBV_WC_REM_INV_REQ_ERR},
      {prm::MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, IBV_WC_REM_ACCESS_ERR},
      {prm::MLX5_CQE_SYNDROME_REMOTE_OP_ERR, IBV_WC_REM_OP_ERR},
      {prm::MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, IBV_WC_RETRY_EXC_ERR},
      {prm::MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR},
      {prm::MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR, IBV_WC_REM_ABORT_ERR},
      {0x7f, IBV_WC_GENERAL_ERR},
  }};
  for (const auto& [syndrome, status] : table) {
    Harness h;
    PostSends(h, 1);
    auto* cqe = h.WriteCqe(0, prm::MLX5_CQE_REQ_ERR, 0);
    auto* err = reinterpret_cast<pod::mlx5_err_cqe*>(cqe);
    err->syndrome = syndrome;
    err->vendor_err_synd = 0x42;
    ibv_wc wc{};
    ASSERT_EQ(driver::rings::PollCq(h.ibcq(), 1, &wc), 1);
    EXPECT_EQ(wc.status, status) << "syndrome " << int{syndrome};
    EXPECT_EQ(wc.vendor_err, 0x42u);
    EXPECT_EQ(wc.wr_id, 100u);
  }
}

TEST(CqRing, ResponderCompletionsCarryImmInvalidationAndUdFields) {
  Harness h;
  for (uint64_t id = 1; id <= 4; ++id) PostRecvOf(h, id);
  auto* c0 = h.WriteCqe(0, prm::MLX5_CQE_RESP_SEND_IMM, 0);
  c0->immediate = prm::Be32::FromHost(0xcafe);
  c0->byte_cnt = prm::Be32::FromHost(33);
  c0->flags_rqpn = prm::Be32::FromHost((1u << 28) | (5u << 24) | 0x777);
  c0->slid = prm::Be16::FromHost(0x12);
  c0->ml_path = 0x83;
  c0->op_own = prm::CqeOpOwn(prm::MLX5_CQE_RESP_SEND_IMM, false);
  auto* c1 = h.WriteCqe(1, prm::MLX5_CQE_RESP_SEND_INV, 1);
  c1->inval_rkey = prm::Be32::FromHost(0x4455);
  c1->op_own = prm::CqeOpOwn(prm::MLX5_CQE_RESP_SEND_INV, false);
  h.WriteCqe(2, prm::MLX5_CQE_RESP_WR_IMM, 2);
  h.WriteCqe(3, prm::MLX5_CQE_RESP_SEND, 3);
  std::array<ibv_wc, 4> wc{};
  ASSERT_EQ(driver::rings::PollCq(h.ibcq(), 4, wc.data()), 4);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[0].opcode, IBV_WC_RECV);
  EXPECT_EQ(wc[0].wc_flags, unsigned{IBV_WC_WITH_IMM | IBV_WC_GRH});
  EXPECT_EQ(wc[0].imm_data, htobe32(0xcafe));
  EXPECT_EQ(wc[0].byte_len, 33u);
  EXPECT_EQ(wc[0].src_qp, 0x777u);
  EXPECT_EQ(wc[0].sl, 5);
  EXPECT_EQ(wc[0].slid, 0x12);
  EXPECT_EQ(wc[0].dlid_path_bits, 0x03);
  EXPECT_EQ(wc[1].wr_id, 2u);
  EXPECT_EQ(wc[1].wc_flags, unsigned{IBV_WC_WITH_INV});
  EXPECT_EQ(wc[1].invalidated_rkey, 0x4455u);
  EXPECT_EQ(wc[2].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
  EXPECT_EQ(wc[3].opcode, IBV_WC_RECV);
  EXPECT_EQ(wc[3].wc_flags, 0u);
  EXPECT_EQ(h.qp.rq.outstanding(), 0u);
}

// Poll decides a leading requester completion on its own and hands the rest of a batch to its
// loop: the batch reads the same either way, in ring order, with one consumer index at the end.
TEST(CqRing, ABatchMixingRequesterResponderAndErrorCqesPollsInRingOrder) {
  Harness h;
  PostSends(h, 2);
  PostRecvOf(h, 7);
  auto* req = h.WriteCqe(0, prm::MLX5_CQE_REQ, 0, prm::MLX5_OPCODE_RDMA_WRITE);
  req->byte_cnt = prm::Be32::FromHost(512);
  req->op_own = prm::CqeOpOwn(prm::MLX5_CQE_REQ, false);
  auto* resp = h.WriteCqe(1, prm::MLX5_CQE_RESP_SEND, 0);
  resp->byte_cnt = prm::Be32::FromHost(40);
  resp->op_own = prm::CqeOpOwn(prm::MLX5_CQE_RESP_SEND, false);
  auto* err = reinterpret_cast<pod::mlx5_err_cqe*>(h.WriteCqe(2, prm::MLX5_CQE_REQ_ERR, 1, prm::MLX5_OPCODE_SEND));
  err->syndrome = prm::MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
  err->op_own = prm::CqeOpOwn(prm::MLX5_CQE_REQ_ERR, false);
  std::array<ibv_wc, 8> wc{};
  ASSERT_EQ(driver::rings::PollCq(h.ibcq(), 8, wc.data()), 3);
  EXPECT_EQ(wc[0].wr_id, 100u);
  EXPECT_EQ(wc[0].opcode, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(wc[0].byte_len, 512u);
  EXPECT_EQ(wc[0].vendor_err, 0u);
  EXPECT_EQ(wc[1].wr_id, 7u);
  EXPECT_EQ(wc[1].opcode, IBV_WC_RECV);
  EXPECT_EQ(wc[1].byte_len, 40u);
  EXPECT_EQ(wc[2].wr_id, 101u);
  EXPECT_EQ(wc[2].status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(h.cq_dbr.set_ci.host(), 3u);
  EXPECT_EQ(h.qp.sq.outstanding(), 0u);
  EXPECT_EQ(h.qp.rq.outstanding(), 0u);
  // A poll for no entries consumes nothing.
  h.WriteCqe(3, prm::MLX5_CQE_REQ, 1, prm::MLX5_OPCODE_SEND);
  EXPECT_EQ(driver::rings::PollCq(h.ibcq(), 0, wc.data()), 0);
  EXPECT_EQ(h.cq.ring.consumer_index(), 3u);
}

TEST(CqRing, AnUnknownQpIsAPollErrorAndResizeCqesAreSkipped) {
  Harness h;
  h.WriteCqe(0, prm::MLX5_CQE_RESIZE_CQ, 0);
  h.WriteCqe(1, prm::MLX5_CQE_REQ, 0, prm::MLX5_OPCODE_SEND, /*qpn=*/0x999);
  ibv_wc wc{};
  EXPECT_LT(driver::rings::PollCq(h.ibcq(), 1, &wc), 0);
  EXPECT_EQ(h.cq.ring.consumer_index(), 2u);
}

TEST(CqRing, ArmWritesTheRecordThenTheUarDoorbell) {
  Harness h;
  PostSends(h, 2);
  h.WriteCqe(0, prm::MLX5_CQE_REQ, 0, prm::MLX5_OPCODE_SEND);
  h.WriteCqe(1, prm::MLX5_CQE_REQ, 1, prm::MLX5_OPCODE_SEND);
  std::array<ibv_wc, 2> wc{};
  ASSERT_EQ(driver::rings::PollCq(h.ibcq(), 2, wc.data()), 2);
  const int rung = h.bus.doorbells;
  ASSERT_EQ(driver::rings::ReqNotifyCq(h.ibcq(), 1), 0);
  const uint32_t word = prm::CqArmWord(0, prm::MLX5_CQ_DB_REQ_NOT_SOL, 2);
  EXPECT_EQ(h.cq_dbr.arm_db.host(), word);
  const auto* db = reinterpret_cast<const prm::CqUarDoorbell*>(h.uar.p + prm::MLX5_CQ_DOORBELL);
  EXPECT_EQ(db->arm_word.host(), word);
  EXPECT_EQ(db->cqn.host(), kCqn);
  EXPECT_EQ(h.bus.doorbells, rung + 1);
  // An event read advances the sequence number of the next arm.
  driver::rings::CqEvent(h.ibcq());
  ASSERT_EQ(driver::rings::ReqNotifyCq(h.ibcq(), 0), 0);
  EXPECT_EQ(h.cq_dbr.arm_db.host(), prm::CqArmWord(1, prm::MLX5_CQ_DB_REQ_NOT, 2));
  EXPECT_EQ(prm::CqArmSn(h.cq_dbr.arm_db.host()), 1u);
}

TEST(CqRing, CleanRemovesADestroyedQpsCqesAndKeepsTheOthersInOrder) {
  Harness h;
  DataPathQp other{};
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;
  ibv_send_wr* bad = nullptr;
  SendQueueDesc d;
  prm::Be32 counter;
  Aligned ring(64 * 64);
  d.ring = ring.p;
  d.wqe_cnt = 64;
  d.max_post = 8;
  d.db_counter = &counter;
  d.bf = &h.bf;
  d.bus = &h.bus;
  d.qpn = 0x200;
  ASSERT_TRUE(other.sq.Init(d).has_value());
  other.queues = {&other.sq, nullptr, nullptr};
  ASSERT_TRUE(h.table.Insert(0x200, &other.queues).has_value());
  for (uint64_t i = 0; i < 2; ++i) {
    wr.wr_id = 10 + i;
    ASSERT_EQ(driver::rings::PostSend(h.ibqp(), &wr, &bad), 0);
    wr.wr_id = 20 + i;
    ASSERT_EQ(other.sq.PostSend(&wr, &bad), 0);
  }
  // Interleaved: ours, other, ours, other; then the table forgets ours and the CQ is cleaned.
  h.WriteCqe(0, prm::MLX5_CQE_REQ, 0, prm::MLX5_OPCODE_SEND);
  h.WriteCqe(1, prm::MLX5_CQE_REQ, 0, prm::MLX5_OPCODE_SEND, 0x200);
  h.WriteCqe(2, prm::MLX5_CQE_REQ, 1, prm::MLX5_OPCODE_SEND);
  h.WriteCqe(3, prm::MLX5_CQE_REQ, 1, prm::MLX5_OPCODE_SEND, 0x200);
  h.table.Erase(kQpn);
  h.cq.ring.Clean(kQpn, nullptr);
  EXPECT_EQ(h.cq.ring.consumer_index(), 2u);
  EXPECT_EQ(h.cq_dbr.set_ci.host(), 2u);
  std::array<ibv_wc, 4> wc{};
  ASSERT_EQ(driver::rings::PollCq(h.ibcq(), 4, wc.data()), 2);
  EXPECT_EQ(wc[0].wr_id, 20u);
  EXPECT_EQ(wc[1].wr_id, 21u);
  EXPECT_EQ(wc[0].qp_num, 0x200u);
}

TEST(CqRing, With128ByteCqesTheCqeIsTheSecondHalf) {
  Harness h;
  Aligned buf(8 * 128);
  prm::CqDoorbellRecord dbr{};
  driver::rings::DataPathCq cq{};
  CqRingDesc d;
  d.buf = buf.p;
  d.cqe_cnt = 8;
  d.cqe_size = 128;
  d.dbr = &dbr;
  d.uar_cq_doorbell = h.uar.p + prm::MLX5_CQ_DOORBELL;
  d.bus = &h.bus;
  d.qpns = &h.table;
  ASSERT_TRUE(cq.ring.Init(d).has_value());
  EXPECT_EQ(reinterpret_cast<pod::mlx5_cqe64*>(buf.p + 64)->op_own, prm::kCqeInitialOpOwn);
  EXPECT_EQ(buf.p[63], std::byte{0}) << "the first half is not a CQE";
  PostSends(h, 2);
  for (uint32_t n = 0; n < 2; ++n) {
    auto* cqe = reinterpret_cast<pod::mlx5_cqe64*>(buf.p + n * 128 + 64);
    cqe->sop_drop_qpn = prm::Be32::FromHost(uint32_t{prm::MLX5_OPCODE_SEND} << 24 | kQpn);
    cqe->wqe_counter = prm::Be16::FromHost(static_cast<uint16_t>(n));
    cqe->op_own = prm::CqeOpOwn(prm::MLX5_CQE_REQ, false);
  }
  std::array<ibv_wc, 4> wc{};
  ASSERT_EQ(driver::rings::PollCq(&cq.verbs.cq, 4, wc.data()), 2);
  EXPECT_EQ(wc[0].wr_id, 100u);
  EXPECT_EQ(wc[1].wr_id, 101u);
  d.cqe_size = 96;
  EXPECT_EQ(cq.ring.Init(d).error().errno_value(), EINVAL);
}

TEST(CqEx, StartNextEndAndTheReaders) {
  Harness h;
  ASSERT_TRUE(driver::rings::InstallCqExOps(h.cqx(), driver::rings::kSupportedWcFlags).has_value());
  EXPECT_EQ(driver::rings::InstallCqExOps(h.cqx(), IBV_WC_EX_WITH_CVLAN).error().errno_value(),
            EOPNOTSUPP);
  ibv_cq_ex* cq = h.cqx();
  ibv_poll_cq_attr attr{};
  EXPECT_EQ(ibv_start_poll(cq, &attr), ENOENT);

  PostRecvOf(h, 9);
  PostSends(h, 1);
  auto* c0 = h.WriteCqe(0, prm::MLX5_CQE_RESP_SEND_INV, 0);
  c0->inval_rkey = prm::Be32::FromHost(0xabc);
  c0->byte_cnt = prm::Be32::FromHost(17);
  c0->timestamp_h = prm::Be32::FromHost(0x1);
  c0->timestamp_l = prm::Be32::FromHost(0x2);
  c0->flags_rqpn = prm::Be32::FromHost(0x55);
  c0->op_own = prm::CqeOpOwn(prm::MLX5_CQE_RESP_SEND_INV, false);
  auto* c1 = h.WriteCqe(1, prm::MLX5_CQE_REQ_ERR, 0);
  reinterpret_cast<pod::mlx5_err_cqe*>(c1)->syndrome = prm::MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;

  ASSERT_EQ(ibv_start_poll(cq, &attr), 0);
  EXPECT_EQ(cq->wr_id, 9u);
  EXPECT_EQ(cq->status, IBV_WC_SUCCESS);
  EXPECT_EQ(ibv_wc_read_opcode(cq), IBV_WC_RECV);
  EXPECT_EQ(ibv_wc_read_byte_len(cq), 17u);
  EXPECT_EQ(ibv_wc_read_invalidated_rkey(cq), 0xabcu);
  EXPECT_EQ(ibv_wc_read_wc_flags(cq), unsigned{IBV_WC_WITH_INV});
  EXPECT_EQ(ibv_wc_read_qp_num(cq), kQpn);
  EXPECT_EQ(ibv_wc_read_src_qp(cq), 0x55u);
  EXPECT_EQ(ibv_wc_read_completion_ts(cq), 0x100000002ull);
  ASSERT_EQ(ibv_next_poll(cq), 0);
  EXPECT_EQ(cq->wr_id, 100u);
  EXPECT_EQ(cq->status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(ibv_next_poll(cq), ENOENT);
  ibv_end_poll(cq);
  EXPECT_EQ(h.cq_dbr.set_ci.host(), 2u);
  attr.comp_mask = 1;
  EXPECT_EQ(ibv_start_poll(cq, &attr), EINVAL);
}

// A function that is gone writes no more CQEs: those already written are polled, then both poll
// paths say so (ibv_poll_cq -EIO, ibv_start_poll EIO) instead of "empty" forever.
TEST(GoneFunction, BothPollPathsReportItOnceTheWrittenCqesAreTaken) {
  Harness h;
  ASSERT_TRUE(driver::rings::InstallCqExOps(h.cqx(), driver::rings::kSupportedWcFlags).has_value());
  PostSends(h, 1);
  h.WriteCqe(0, prm::MLX5_CQE_REQ, 0, prm::MLX5_OPCODE_SEND);
  h.bus.MarkGone();
  ibv_wc wc;
  EXPECT_EQ(driver::rings::PollCq(h.ibcq(), 1, &wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(driver::rings::PollCq(h.ibcq(), 1, &wc), -EIO);
  ibv_poll_cq_attr attr{};
  EXPECT_EQ(ibv_start_poll(h.cqx(), &attr), EIO);
  EXPECT_EQ(ibv_start_poll(h.cqx(), &attr), EIO);  // and it holds nothing: no end_poll owed
}

}  // namespace
}  // namespace onchip::rings_test
