// The data engine on one software ConnectX: two RC QPs connected to each other through the
// device's own GID, WQEs and CQEs written and read as the PRM lays them out. Each opcode with host
// and device-memory buffers, each error CQE with its syndrome and the QP state after it, RNR
// retries, flushing after an error.
#include <cstring>
#include <numeric>
#include <set>

#include "tests/device/sim/node_test.h"

namespace onchip::sim::testing {
namespace {

using prm::QP_ST_RC;

using EngineRcTest = RcPairTest;

TEST_F(EngineRcTest, SendLandsInTheReceiveWqeWithBothCqes) {
  ConnectBoth();
  const auto msg = Pattern(300, 1);
  std::memcpy(node_->Data(kSrc), msg.data(), msg.size());
  node_->PostRecv(b_, key_, kDst, 4096);
  const uint16_t idx = node_->PostSend(a_, prm::MLX5_OPCODE_SEND, DataSeg(key_, kSrc, 300),
                                       prm::MLX5_WQE_CTRL_CQ_UPDATE | prm::MLX5_WQE_CTRL_SOLICITED);
  auto req = node_->Poll(cq_a_);
  ASSERT_TRUE(req);
  EXPECT_EQ(req->opcode(), prm::MLX5_CQE_REQ);
  EXPECT_EQ(req->wqe_opcode(), prm::MLX5_OPCODE_SEND);
  EXPECT_EQ(req->qpn(), a_.qpn);
  EXPECT_EQ(req->wqe_counter(), idx);
  EXPECT_EQ(req->byte_cnt(), 300u);
  EXPECT_EQ(req->good.srqn.host(), 0x100u);  // the QP's user index (CQE version 1)
  auto resp = node_->Poll(cq_b_);
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->opcode(), prm::MLX5_CQE_RESP_SEND);
  EXPECT_EQ(resp->qpn(), b_.qpn);
  EXPECT_EQ(resp->byte_cnt(), 300u);
  EXPECT_EQ(resp->wqe_counter(), 0u);
  EXPECT_EQ(resp->good.flags_rqpn.host() & 0xffffff, a_.qpn);
  EXPECT_TRUE(resp->solicited());
  EXPECT_EQ(std::memcmp(node_->Data(kDst), msg.data(), msg.size()), 0);
  // QUERY_QP reports what the engine consumed.
  auto in = prm::CommandIn<prm::query_qp_in>(prm::QUERY_QP);
  in.set(prm::query_qp_in::qpn, a_.qpn);
  EXPECT_EQ(node_->Run(in, prm::size_bytes<prm::query_qp_out>)
                .get(prm::query_qp_out::qpc.hw_sq_wqebb_counter),
            1u);
  in.set(prm::query_qp_in::qpn, b_.qpn);
  EXPECT_EQ(node_->Run(in, prm::size_bytes<prm::query_qp_out>).get(prm::query_qp_out::qpc.hw_rq_counter),
            1u);
  // The completion time is the device's internal timer.
  EXPECT_GT(resp->timestamp(), 0u);
  EXPECT_LE(resp->timestamp(), sim_->engine().NowNs());
}

TEST_F(EngineRcTest, SendImmAndInlineData) {
  ConnectBoth();
  node_->PostRecv(b_, key_, kDst, 64);
  const auto msg = Pattern(21, 9);
  node_->PostSend(a_, prm::MLX5_OPCODE_SEND_IMM, InlineSeg(msg), prm::MLX5_WQE_CTRL_CQ_UPDATE,
                  prm::Be32::FromHost(0xabcdef01).raw());
  ASSERT_TRUE(node_->Poll(cq_a_));
  auto resp = node_->Poll(cq_b_);
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->opcode(), prm::MLX5_CQE_RESP_SEND_IMM);
  EXPECT_EQ(resp->good.immediate.host(), 0xabcdef01u);
  EXPECT_EQ(resp->byte_cnt(), 21u);
  EXPECT_EQ(std::memcmp(node_->Data(kDst), msg.data(), msg.size()), 0);
}

TEST_F(EngineRcTest, UnsignaledWqesCompleteSilentlyAndTheSignaledOneNamesItsIndex) {
  ConnectBoth();
  for (int i = 0; i < 3; ++i) node_->PostRecv(b_, key_, kDst + i * 64, 64);
  node_->PostSend(a_, prm::MLX5_OPCODE_SEND, DataSeg(key_, kSrc, 8), 0);
  node_->PostSend(a_, prm::MLX5_OPCODE_NOP, {}, 0);
  const uint16_t last = node_->PostSend(a_, prm::MLX5_OPCODE_SEND, DataSeg(key_, kSrc, 8));
  auto req = node_->Poll(cq_a_);
  ASSERT_TRUE(req);
  EXPECT_EQ(req->wqe_counter(), last);
  EXPECT_FALSE(node_->TryPoll(cq_a_));
  ASSERT_TRUE(node_->Poll(cq_b_));
  ASSERT_TRUE(node_->Poll(cq_b_));
}

TEST_F(EngineRcTest, RdmaWriteAndWriteImmHostToHost) {
  ConnectBoth();
  const auto msg = Pattern(5000, 3);  // crosses pages on both sides
  std::memcpy(node_->Data(kSrc), msg.data(), msg.size());
  node_->PostSend(a_, prm::MLX5_OPCODE_RDMA_WRITE,
                  Cat({RaddrSeg(kDst + 100, key_), DataSeg(key_, kSrc, 5000)}));
  auto req = node_->Poll(cq_a_);
  ASSERT_TRUE(req);
  EXPECT_EQ(req->opcode(), prm::MLX5_CQE_REQ);
  EXPECT_EQ(req->wqe_opcode(), prm::MLX5_OPCODE_RDMA_WRITE);
  EXPECT_EQ(std::memcmp(node_->Data(kDst + 100), msg.data(), msg.size()), 0);
  EXPECT_FALSE(node_->TryPoll(cq_b_));  // a plain write consumes nothing on the responder

  node_->PostRecv(b_, key_, kDst, 0);
  node_->PostSend(a_, prm::MLX5_OPCODE_RDMA_WRITE_IMM,
                  Cat({RaddrSeg(kDst, key_), DataSeg(key_, kSrc, 16)}), prm::MLX5_WQE_CTRL_CQ_UPDATE,
                  prm::Be32::FromHost(77).raw());
  ASSERT_TRUE(node_->Poll(cq_a_));
  auto resp = node_->Poll(cq_b_);
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->opcode(), prm::MLX5_CQE_RESP_WR_IMM);
  EXPECT_EQ(resp->good.immediate.host(), 77u);
  EXPECT_EQ(resp->byte_cnt(), 16u);
}

TEST_F(EngineRcTest, WriteReadAndAtomicsOnDeviceMemory) {
  ConnectBoth();
  uint64_t bar = 0;
  const uint32_t dm = node_->MemicKey(4096, kAll, &bar);
  const auto msg = Pattern(256, 5);
  std::memcpy(node_->Data(kSrc), msg.data(), msg.size());
  // Host -> DM write (the responder's target is device memory).
  node_->PostSend(a_, prm::MLX5_OPCODE_RDMA_WRITE, Cat({RaddrSeg(64, dm), DataSeg(key_, kSrc, 256)}));
  ASSERT_TRUE(node_->Poll(cq_a_));
  EXPECT_EQ(std::memcmp(node_->Bar(bar + 64), msg.data(), 256), 0);
  // DM -> host read (the remote source is device memory), DM as the local scatter target too.
  node_->PostSend(a_, prm::MLX5_OPCODE_RDMA_READ, Cat({RaddrSeg(64, dm), DataSeg(key_, kDst, 256)}));
  auto rd = node_->Poll(cq_a_);
  ASSERT_TRUE(rd);
  EXPECT_EQ(rd->wqe_opcode(), prm::MLX5_OPCODE_RDMA_READ);
  EXPECT_EQ(rd->byte_cnt(), 256u);
  EXPECT_EQ(std::memcmp(node_->Data(kDst), msg.data(), 256), 0);
  node_->PostSend(a_, prm::MLX5_OPCODE_RDMA_READ, Cat({RaddrSeg(kDst, key_), DataSeg(dm, 1024, 256)}));
  ASSERT_TRUE(node_->Poll(cq_a_));
  EXPECT_EQ(std::memcmp(node_->Bar(bar + 1024), msg.data(), 256), 0);
  // DM as the local gather source of a send.
  node_->PostRecv(b_, key_, kDst + 4096, 256);
  node_->PostSend(a_, prm::MLX5_OPCODE_SEND, DataSeg(dm, 64, 256));
  ASSERT_TRUE(node_->Poll(cq_a_));
  ASSERT_TRUE(node_->Poll(cq_b_));
  EXPECT_EQ(std::memcmp(node_->Data(kDst + 4096), msg.data(), 256), 0);

  // Atomics on an 8-byte word in device memory; the value before lands in host memory.
  uint64_t v = 40;
  std::memcpy(node_->Bar(bar + 2048), &v, 8);
  node_->PostSend(a_, prm::MLX5_OPCODE_ATOMIC_FA,
                  Cat({RaddrSeg(2048, dm), AtomicSeg(2, 0), DataSeg(key_, kDst + 8192, 8)}));
  auto fa = node_->Poll(cq_a_);
  ASSERT_TRUE(fa);
  EXPECT_EQ(fa->wqe_opcode(), prm::MLX5_OPCODE_ATOMIC_FA);
  EXPECT_EQ(fa->byte_cnt(), 8u);
  uint64_t got;
  std::memcpy(&got, node_->Data(kDst + 8192), 8);
  EXPECT_EQ(got, 40u);
  std::memcpy(&got, node_->Bar(bar + 2048), 8);
  EXPECT_EQ(got, 42u);
  node_->PostSend(a_, prm::MLX5_OPCODE_ATOMIC_CS,
                  Cat({RaddrSeg(2048, dm), AtomicSeg(7, 42), DataSeg(dm, 3072, 8)}));
  ASSERT_TRUE(node_->Poll(cq_a_));
  std::memcpy(&got, node_->Bar(bar + 3072), 8);
  EXPECT_EQ(got, 42u);
  std::memcpy(&got, node_->Bar(bar + 2048), 8);
  EXPECT_EQ(got, 7u);
  // A compare that does not match leaves the word and returns it.
  node_->PostSend(a_, prm::MLX5_OPCODE_ATOMIC_CS,
                  Cat({RaddrSeg(2048, dm), AtomicSeg(99, 1), DataSeg(key_, kDst + 8192, 8)}));
  ASSERT_TRUE(node_->Poll(cq_a_));
  std::memcpy(&got, node_->Data(kDst + 8192), 8);
  EXPECT_EQ(got, 7u);
  std::memcpy(&got, node_->Bar(bar + 2048), 8);
  EXPECT_EQ(got, 7u);
}

TEST_F(EngineRcTest, ZeroLengthWriteAndReadNeedNoRkey) {
  ConnectBoth();
  node_->PostSend(a_, prm::MLX5_OPCODE_RDMA_WRITE, RaddrSeg(0, 0));
  auto w = node_->Poll(cq_a_);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->opcode(), prm::MLX5_CQE_REQ);
  EXPECT_EQ(w->byte_cnt(), 0u);
  node_->PostSend(a_, prm::MLX5_OPCODE_RDMA_READ, RaddrSeg(0, 0));
  auto r = node_->Poll(cq_a_);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->opcode(), prm::MLX5_CQE_REQ);
  EXPECT_EQ(node_->QpState(b_.qpn), prm::QP_STATE_RTS);
}

TEST_F(EngineRcTest, AtomicsOnHostMemory) {
  ConnectBoth();
  uint64_t v = 1000;
  std::memcpy(node_->Data(kDst), &v, 8);
  node_->PostSend(a_, prm::MLX5_OPCODE_ATOMIC_FA,
                  Cat({RaddrSeg(kDst, key_), AtomicSeg(5, 0), DataSeg(key_, kSrc, 8)}));
  ASSERT_TRUE(node_->Poll(cq_a_));
  uint64_t got;
  std::memcpy(&got, node_->Data(kSrc), 8);
  EXPECT_EQ(got, 1000u);
  std::memcpy(&got, node_->Data(kDst), 8);
  EXPECT_EQ(got, 1005u);
}

// Without SET_HCA_CAP the responder's atomics run on big-endian words (the reset value of
// atomic_req_8B_endianness_mode), and the value before lands big-endian too.
class EngineBigEndianAtomicsTest : public EngineRcTest {
 protected:
  void SetUp() override {
    SimTest::SetUp();
    node_ = std::make_unique<Node>(*w_);
    node_->Start(/*host_order_atomics=*/false);
    cq_a_ = node_->NewCq(0);
    cq_b_ = node_->NewCq(1);
    key_ = node_->MttKey(kAll);
    a_ = node_->NewQp(0, QP_ST_RC, cq_a_.cqn, cq_a_.cqn);
    b_ = node_->NewQp(1, QP_ST_RC, cq_b_.cqn, cq_b_.cqn);
  }
};

TEST_F(EngineBigEndianAtomicsTest, WordsAndResultsAreBigEndian) {
  ConnectBoth();
  const uint64_t be100 = prm::Be64::FromHost(100).raw();
  std::memcpy(node_->Data(kDst), &be100, 8);
  node_->PostSend(a_, prm::MLX5_OPCODE_ATOMIC_FA,
                  Cat({RaddrSeg(kDst, key_), AtomicSeg(1, 0), DataSeg(key_, kSrc, 8)}));
  ASSERT_TRUE(node_->Poll(cq_a_));
  uint64_t raw;
  std::memcpy(&raw, node_->Data(kDst), 8);
  EXPECT_EQ(prm::Be64::FromRaw(raw).host(), 101u);
  std::memcpy(&raw, node_->Data(kSrc), 8);
  EXPECT_EQ(prm::Be64::FromRaw(raw).host(), 100u);
  node_->PostSend(a_, prm::MLX5_OPCODE_ATOMIC_CS,
                  Cat({RaddrSeg(kDst, key_), AtomicSeg(5, 101), DataSeg(key_, kSrc, 8)}));
  ASSERT_TRUE(node_->Poll(cq_a_));
  std::memcpy(&raw, node_->Data(kDst), 8);
  EXPECT_EQ(prm::Be64::FromRaw(raw).host(), 5u);
  std::memcpy(&raw, node_->Data(kSrc), 8);
  EXPECT_EQ(prm::Be64::FromRaw(raw).host(), 101u);
}

// ---- errors ----

TEST_F(EngineRcTest, BadLkeyIsLocalProtectionErrorAndLaterWqesFlush) {
  ConnectBoth();
  node_->PostRecv(b_, key_, kDst, 64);
  const uint16_t bad = node_->PostSend(a_, prm::MLX5_OPCODE_SEND, DataSeg(key_ ^ 0x1, kSrc, 8), 0);
  auto err = node_->Poll(cq_a_);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->opcode(), prm::MLX5_CQE_REQ_ERR);  // an error completes even unsignaled
  EXPECT_EQ(err->syndrome(), prm::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
  EXPECT_EQ(err->wqe_counter(), bad);
  EXPECT_EQ(prm::CqeQpn(err->err.s_wqe_opcode_qpn.host()), a_.qpn);
  EXPECT_EQ(node_->QpState(a_.qpn), prm::QP_STATE_ERR);
  const uint16_t next = node_->PostSend(a_, prm::MLX5_OPCODE_SEND, DataSeg(key_, kSrc, 8));
  auto flushed = node_->Poll(cq_a_);
  ASSERT_TRUE(flushed);
  EXPECT_EQ(flushed->opcode(), prm::MLX5_CQE_REQ_ERR);
  EXPECT_EQ(flushed->syndrome(), prm::MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
  EXPECT_EQ(flushed->wqe_counter(), next);
  EXPECT_FALSE(node_->TryPoll(cq_b_));
}

TEST_F(EngineRcTest, OutOfBoundsLocalRangeIsLocalProtectionError) {
  ConnectBoth();
  node_->PostSend(a_, prm::MLX5_OPCODE_RDMA_WRITE,
                  Cat({RaddrSeg(kDst, key_), DataSeg(key_, Node::kDataVa + Node::kDataBytes - 4, 8)}));
  auto err = node_->Poll(cq_a_);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->syndrome(), prm::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
}

TEST_F(EngineRcTest, KeyOfAnotherPdIsLocalProtectionError) {
  ConnectBoth();
  const uint32_t other = node_->MttKey(kAll, node_->AllocPd());
  node_->PostSend(a_, prm::MLX5_OPCODE_RDMA_WRITE, Cat({RaddrSeg(kDst, key_), DataSeg(other, kSrc, 8)}));
  auto err = node_->Poll(cq_a_);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->syndrome(), prm::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
}

TEST_F(EngineRcTest, ReadIntoKeyWithoutLocalWriteIsLocalProtectionError) {
  ConnectBoth();
  const uint32_t ro = node_->MttKey(kRr);
  node_->PostSend(a_, prm::MLX5_OPCODE_RDMA_READ, Cat({RaddrSeg(kDst, key_), DataSeg(ro, kSrc, 8)}));
  auto err = node_->Poll(cq_a_);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->syndrome(), prm::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
  EXPECT_EQ(node_->QpState(a_.qpn), prm::QP_STATE_ERR);
}

TEST_F(EngineRcTest, RemoteWriteWithoutRightIsRemoteAccessErrorOnBothSides) {
  ConnectBoth();
  const uint32_t no_rw = node_->MttKey(kLw | kRr);
  node_->PostSend(a_, prm::MLX5_OPCODE_RDMA_WRITE, Cat({RaddrSeg(kDst, no_rw), DataSeg(key_, kSrc, 8)}));
  auto err = node_->Poll(cq_a_);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->opcode(), prm::MLX5_CQE_REQ_ERR);
  EXPECT_EQ(err->syndrome(), prm::MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
  EXPECT_EQ(node_->QpState(a_.qpn), prm::QP_STATE_ERR);
  EXPECT_EQ(node_->QpState(b_.qpn), prm::QP_STATE_ERR);
  // The responder's QP reports the access error as an affiliated event.
  auto eqe = node_->PeekEqe(0);
  ASSERT_TRUE(eqe);
  EXPECT_EQ(eqe->type, prm::MLX5_EVENT_TYPE_WQ_ACCESS_ERROR);
  uint32_t qpn;
  std::memcpy(&qpn, eqe->data + prm::kEqeCompletionCqnOffset, 4);
  EXPECT_EQ(prm::Be32::FromRaw(qpn).host(), b_.qpn);
}

TEST_F(EngineRcTest, RemoteReadOutOfBoundsAndBadRkeyAreRemoteAccessErrors) {
  ConnectBoth();
  node_->PostSend(a_, prm::MLX5_OPCODE_RDMA_READ,
                  Cat({RaddrSeg(Node::kDataVa + Node::kDataBytes - 4, key_), DataSeg(key_, kSrc, 8)}));
  auto err = node_->Poll(cq_a_);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->syndrome(), prm::MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
}

TEST_F(EngineRcTest, MisalignedAtomicIsRemoteInvalidRequest) {
  ConnectBoth();
  node_->PostSend(a_, prm::MLX5_OPCODE_ATOMIC_FA,
                  Cat({RaddrSeg(kDst + 4, key_), AtomicSeg(1, 0), DataSeg(key_, kSrc, 8)}));
  auto err = node_->Poll(cq_a_);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->syndrome(), prm::MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
}

TEST_F(EngineRcTest, SendLargerThanTheReceiveIsInvalidRequestAndLocalLengthError) {
  ConnectBoth();
  node_->PostRecv(b_, key_, kDst, 16);
  node_->PostSend(a_, prm::MLX5_OPCODE_SEND, DataSeg(key_, kSrc, 32));
  auto req = node_->Poll(cq_a_);
  ASSERT_TRUE(req);
  EXPECT_EQ(req->syndrome(), prm::MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
  auto resp = node_->Poll(cq_b_);
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->opcode(), prm::MLX5_CQE_RESP_ERR);
  EXPECT_EQ(resp->syndrome(), prm::MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
  EXPECT_EQ(node_->QpState(b_.qpn), prm::QP_STATE_ERR);
}

TEST_F(EngineRcTest, ReceiveWithBadLkeyIsRemoteOperationError) {
  ConnectBoth();
  node_->PostRecv(b_, key_ + 0x100, kDst, 64);
  node_->PostSend(a_, prm::MLX5_OPCODE_SEND, DataSeg(key_, kSrc, 8));
  auto req = node_->Poll(cq_a_);
  ASSERT_TRUE(req);
  EXPECT_EQ(req->syndrome(), prm::MLX5_CQE_SYNDROME_REMOTE_OP_ERR);
  auto resp = node_->Poll(cq_b_);
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->syndrome(), prm::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
}

TEST_F(EngineRcTest, MalformedWqesAreLocalQpOperationErrors) {
  ConnectBoth();
  // ds 0.
  node_->PostSend(a_, prm::MLX5_OPCODE_SEND, {}, prm::MLX5_WQE_CTRL_CQ_UPDATE, 0, true, 0);
  auto err = node_->Poll(cq_a_);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->syndrome(), prm::MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
  EXPECT_EQ(node_->QpState(a_.qpn), prm::QP_STATE_ERR);
}

TEST_F(EngineRcTest, UnknownOpcodeIsLocalQpOperationError) {
  ConnectBoth();
  node_->PostSend(a_, prm::MLX5_OPCODE_TSO, DataSeg(key_, kSrc, 8));
  auto err = node_->Poll(cq_a_);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->syndrome(), prm::MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
}

TEST_F(EngineRcTest, RnrRetriesThenSucceedsWhenAReceiveArrives) {
  Node::Path to_b;
  to_b.rnr_retry = 7;  // forever
  ConnectBoth(to_b);
  node_->PostSend(a_, prm::MLX5_OPCODE_SEND, DataSeg(key_, kSrc, 8));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(node_->TryPoll(cq_a_));
  node_->PostRecv(b_, key_, kDst, 64);
  auto req = node_->Poll(cq_a_);
  ASSERT_TRUE(req);
  EXPECT_EQ(req->opcode(), prm::MLX5_CQE_REQ);
  ASSERT_TRUE(node_->Poll(cq_b_));
}

TEST_F(EngineRcTest, RnrRetryExceeded) {
  Node::Path to_b, to_a;
  to_b.rnr_retry = 2;
  to_a.min_rnr_nak = 1;
  ConnectBoth(to_b, to_a);
  node_->PostSend(a_, prm::MLX5_OPCODE_SEND, DataSeg(key_, kSrc, 8));
  auto err = node_->Poll(cq_a_);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->opcode(), prm::MLX5_CQE_REQ_ERR);
  EXPECT_EQ(err->syndrome(), prm::MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
  EXPECT_EQ(node_->QpState(a_.qpn), prm::QP_STATE_ERR);
  // The responder did nothing wrong.
  EXPECT_EQ(node_->QpState(b_.qpn), prm::QP_STATE_RTS);
}

// A path whose source GID index names an empty entry of the GID table (entry 4 of a RoCE port:
// four addresses, then nothing) sends with the zero GID. The request still reaches the responder,
// whose GID it names, but the answer goes to the zero GID, which no port owns: the requester
// never hears back and retries until it gives up, while the responder did nothing wrong.
TEST_F(EngineRcTest, AnEmptySourceGidEntryGetsNoAnswer) {
  ASSERT_GT(sim_->engine().gids().size(), 4u);
  ASSERT_EQ(sim_->engine().gids()[4], Gid{}) << "entry 4 is the first empty one";
  Node::Path to_b;
  to_b.src_addr_index = 4;
  to_b.retry_count = 1;
  to_b.ack_timeout = 1;  // the model waits at least 10 ms
  ConnectBoth(to_b);
  node_->PostSend(a_, prm::MLX5_OPCODE_RDMA_WRITE, Cat({RaddrSeg(kDst, key_), DataSeg(key_, kSrc, 8)}));
  auto err = node_->Poll(cq_a_);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->opcode(), prm::MLX5_CQE_REQ_ERR);
  EXPECT_EQ(err->syndrome(), prm::MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
  EXPECT_EQ(node_->QpState(a_.qpn), prm::QP_STATE_ERR);
  EXPECT_EQ(node_->QpState(b_.qpn), prm::QP_STATE_RTS);
  // A new pair whose path names a populated entry (3, the default) is answered.
  auto c = node_->NewQp(2, QP_ST_RC, cq_a_.cqn, cq_a_.cqn);
  auto d = node_->NewQp(3, QP_ST_RC, cq_b_.cqn, cq_b_.cqn);
  Node::Path to_d = PathTo(d.qpn);
  to_d.retry_count = 1;
  to_d.ack_timeout = 1;
  node_->Connect(c, to_d);
  node_->Connect(d, PathTo(c.qpn));
  node_->PostSend(c, prm::MLX5_OPCODE_RDMA_WRITE, Cat({RaddrSeg(kDst, key_), DataSeg(key_, kSrc, 8)}));
  auto ok = node_->Poll(cq_a_);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->opcode(), prm::MLX5_CQE_REQ);
}

TEST_F(EngineRcTest, UnreachableGidIsTransportRetryExceeded) {
  Node::Path to_b;
  to_b.retry_count = 1;
  to_b.ack_timeout = 1;  // the model waits at least 10 ms
  to_b.remote_qpn = b_.qpn;
  to_b.rgid = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
  node_->Connect(a_, to_b);
  node_->PostSend(a_, prm::MLX5_OPCODE_SEND, DataSeg(key_, kSrc, 8));
  auto err = node_->Poll(cq_a_);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->syndrome(), prm::MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
}

TEST_F(EngineRcTest, ErrorStateFlushesPostedReceives) {
  ConnectBoth();
  node_->PostRecv(b_, key_, kDst, 64);
  node_->PostRecv(b_, key_, kDst, 64);
  node_->ToError(b_.qpn);
  for (uint16_t i = 0; i < 2; ++i) {
    auto c = node_->Poll(cq_b_);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->opcode(), prm::MLX5_CQE_RESP_ERR);
    EXPECT_EQ(c->syndrome(), prm::MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
    EXPECT_EQ(c->wqe_counter(), i);
  }
}

TEST_F(EngineRcTest, WqeWrapsAroundTheRingEnd) {
  ConnectBoth();
  // 63 NOPs fill the ring up to its last basic block; the next WQE (two blocks) wraps.
  for (int i = 0; i < 62; ++i) node_->PostSend(a_, prm::MLX5_OPCODE_NOP, {}, 0);
  node_->PostSend(a_, prm::MLX5_OPCODE_NOP, {});
  ASSERT_TRUE(node_->Poll(cq_a_));  // the ring's blocks are free again
  node_->PostRecv(b_, key_, kDst, 128);
  const auto msg = Pattern(40, 2);
  const uint16_t idx = node_->PostSend(a_, prm::MLX5_OPCODE_SEND, InlineSeg(Cat({InlineSeg(msg), InlineSeg(msg)})));
  auto req = node_->Poll(cq_a_);
  ASSERT_TRUE(req);
  EXPECT_EQ(req->opcode(), prm::MLX5_CQE_REQ);
  EXPECT_EQ(req->wqe_counter(), idx);
  auto resp = node_->Poll(cq_b_);
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->byte_cnt(), 96u);
}

// ---- doorbells, sleep word, arming ----

// A device that spins for 300 ms after the last work it found (whatever else the machine
// runs), and once asleep wakes only when kicked (no periodic look at its doorbells within a
// test's time).
class EngineSleepTest : public EngineRcTest {
 protected:
  DeviceConfig Config() const override {
    DeviceConfig c;
    c.engine_spin = DeviceConfig::Spin::kAlways;
    c.engine_idle_period = std::chrono::milliseconds(300);
    c.idle_poll_period = std::chrono::milliseconds(60'000);
    return c;
  }
};

TEST_F(EngineSleepTest, EngineSleepsWhenIdleAndPollsWithoutKicksWhileAwake) {
  ConnectBoth();
  ASSERT_TRUE(onchip::testing::WaitUntil([&] { return sim_->engine_sleeping(); }));
  // The first doorbell after idleness (the receive's record) finds the sleep word set and pays
  // a kick; the send right after it may find the thread still asleep or already awake.
  const uint64_t kicks = node_->kicks;
  node_->PostRecv(b_, key_, kDst, 64);
  node_->PostSend(a_, prm::MLX5_OPCODE_SEND, DataSeg(key_, kSrc, 8));
  ASSERT_TRUE(node_->Poll(cq_a_));
  EXPECT_GT(node_->kicks, kicks);
  EXPECT_FALSE(sim_->engine_sleeping());
  // While it is awake a doorbell record alone is noticed: no kick at all.
  const uint64_t wakeups = sim_->wakeups();
  node_->PostSend(a_, prm::MLX5_OPCODE_NOP, {}, prm::MLX5_WQE_CTRL_CQ_UPDATE, 0, /*kick=*/false);
  auto c = node_->Poll(cq_a_, std::chrono::milliseconds(200));
  ASSERT_TRUE(c) << "a doorbell without a kick was missed";
  EXPECT_EQ(c->wqe_opcode(), prm::MLX5_OPCODE_NOP);
  EXPECT_GT(sim_->wakeups(), wakeups);  // it was polling
  // Idle again: the word comes back, and the thread costs little.
  ASSERT_TRUE(onchip::testing::WaitUntil([&] { return sim_->engine_sleeping(); }));
}

TEST_F(EngineRcTest, ArmedCqWritesAnEqeAndSignalsTheVector) {
  ConnectBoth();
  // Arm the EQ (update CI and re-arm) and the responder's CQ.
  node_->Arm(cq_b_);
  node_->PostRecv(b_, key_, kDst, 64);
  node_->PostSend(a_, prm::MLX5_OPCODE_SEND, DataSeg(key_, kSrc, 8));
  ASSERT_TRUE(node_->Poll(cq_b_));
  std::optional<prm::pod::mlx5_eqe> got;
  ASSERT_TRUE(onchip::testing::WaitUntil([&] { return (got = node_->PeekEqe(0)).has_value(); }));
  const prm::pod::mlx5_eqe eqe = *got;
  EXPECT_EQ(eqe.type, prm::MLX5_EVENT_TYPE_COMP);
  uint32_t cqn;
  std::memcpy(&cqn, eqe.data + prm::kEqeCompletionCqnOffset, 4);
  EXPECT_EQ(prm::Be32::FromRaw(cqn).host(), cq_b_.cqn);
  uint64_t count = 0;
  ASSERT_EQ(read(static_cast<vpci::Function&>(*sim_).InterruptFd(1), &count, 8), 8);
  EXPECT_EQ(count, 1u);
  // Not armed again: the next completion writes no EQE.
  node_->PostRecv(b_, key_, kDst, 64);
  node_->PostSend(a_, prm::MLX5_OPCODE_SEND, DataSeg(key_, kSrc, 8));
  ASSERT_TRUE(node_->Poll(cq_b_));
  EXPECT_FALSE(node_->PeekEqe(1));
}

// Two CQs armed through one UAR register before the engine looks: both fire.
TEST_F(EngineRcTest, TwoArmsThroughOneUarRegisterBothFire) {
  ConnectBoth();
  // Keep the engine from seeing the first arm store alone: arm both without a kick.
  ASSERT_TRUE(onchip::testing::WaitUntil([&] { return sim_->engine_sleeping(); }));
  auto arm_quietly = [&](Node::CqInfo& cq) {
    const uint32_t word = prm::CqArmWord(cq.arm_sn, prm::MLX5_CQ_DB_REQ_NOT, cq.ci);
    node_->StoreBe32(cq.dbr + 4, word);
    prm::CqUarDoorbell db{prm::Be32::FromHost(word), prm::Be32::FromHost(cq.cqn)};
    std::memcpy(w_->bar() + prm::UarPageOffset(node_->uar) + prm::MLX5_CQ_DOORBELL, &db, 8);
  };
  cq_a_.arm_sn = 1;  // arm words that differ from the records' initial zero
  cq_b_.arm_sn = 1;
  arm_quietly(cq_a_);
  arm_quietly(cq_b_);
  node_->PostRecv(b_, key_, kDst, 64);
  node_->PostSend(a_, prm::MLX5_OPCODE_SEND, DataSeg(key_, kSrc, 8));
  ASSERT_TRUE(node_->Poll(cq_a_));
  ASSERT_TRUE(node_->Poll(cq_b_));
  std::set<uint32_t> fired;
  ASSERT_TRUE(onchip::testing::WaitUntil([&] {
    for (uint32_t i = 0; i < 2; ++i) {
      auto eqe = node_->PeekEqe(i);
      if (!eqe) return false;
      uint32_t cqn;
      std::memcpy(&cqn, eqe->data + prm::kEqeCompletionCqnOffset, 4);
      fired.insert(prm::Be32::FromRaw(cqn).host());
    }
    return true;
  }));
  EXPECT_EQ(fired, (std::set<uint32_t>{cq_a_.cqn, cq_b_.cqn}));
}

TEST_F(EngineRcTest, CqOverflowStopsTheCqAndReportsACqError) {
  ConnectBoth();
  const uint32_t size = 1u << Node::kLogCq;
  // The CQE at index i is written once its op_own is valid with the pass-0 owner bit.
  auto written = [&](uint32_t i) {
    const auto op_own = std::to_integer<uint8_t>(std::atomic_ref<std::byte>(
        w_->host(cq_a_.ring)[i * 64 + 63]).load(std::memory_order_acquire));
    return prm::CqeOpcodeOf(op_own) == prm::MLX5_CQE_REQ && !prm::CqeOwner(op_own);
  };
  // Fill the CQ without consuming, 32 WQEs at a time (the send ring has 64 blocks).
  for (uint32_t done = 0; done < size; done += 32) {
    for (int i = 0; i < 32; ++i) node_->PostSend(a_, prm::MLX5_OPCODE_NOP, {});
    ASSERT_TRUE(onchip::testing::WaitUntil([&] { return written(done + 31); }));
  }
  node_->PostSend(a_, prm::MLX5_OPCODE_NOP, {});
  std::optional<prm::pod::mlx5_eqe> got;
  ASSERT_TRUE(onchip::testing::WaitUntil([&] { return (got = node_->PeekEqe(0)).has_value(); }));
  const prm::pod::mlx5_eqe eqe = *got;
  EXPECT_EQ(eqe.type, prm::MLX5_EVENT_TYPE_CQ_ERROR);
  uint32_t cqn;
  std::memcpy(&cqn, eqe.data, 4);
  EXPECT_EQ(prm::Be32::FromRaw(cqn).host(), cq_a_.cqn);
}

}  // namespace
}  // namespace onchip::sim::testing
