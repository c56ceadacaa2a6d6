// The data engine beyond one RC pair: two software ConnectX devices reaching each other by GID,
// UD through address vectors with the GRH in the receive buffer, receives from an SRQ, and memory
// windows bound by UMR WQEs, used remotely and invalidated by SEND_WITH_INV.
#include <cstring>

#include "tests/device/sim/node_test.h"
#include "uapi/prm/umr.h"
#include "uapi/prm/wqe.h"

namespace onchip::sim::testing {
namespace {

constexpr uint64_t kSrc = Node::kDataVa + 0x1000;
constexpr uint64_t kDst = Node::kDataVa + 0x20000;

class EngineWireTest : public NodeTest {
 protected:
  Gid OwnGid() const { return sim_->engine().gids()[3]; }
};

// ---- two devices ----

TEST_F(EngineWireTest, RcAcrossTwoDevicesWithDeviceMemoryOnTheFarSide) {
  DeviceConfig config;
  config.ipv4 = 0x7f000002;
  config.mac = {0x0c, 0x42, 0xa1, 0x4f, 0x00, 0x02};
  auto far_dev = Device::Create(config);
  ASSERT_TRUE(far_dev);
  auto far_w = std::make_unique<CommandWriter>(**far_dev);
  Node far(*far_w);
  far.Start();
  auto far_cq = far.NewCq(0);
  const uint32_t far_key = far.MttKey(kAll);
  uint64_t bar = 0;
  const uint32_t far_dm = far.MemicKey(4096, kAll, &bar);
  auto a = node_->NewQp(0, prm::QP_ST_RC, cq_a_.cqn, cq_a_.cqn);
  auto b = far.NewQp(0, prm::QP_ST_RC, far_cq.cqn, far_cq.cqn);
  Node::Path to_b;
  to_b.remote_qpn = b.qpn;
  to_b.rgid = (**far_dev).engine().gids()[3];
  Node::Path to_a;
  to_a.remote_qpn = a.qpn;
  to_a.rgid = OwnGid();
  ASSERT_NE(to_a.rgid, to_b.rgid);
  node_->Connect(a, to_b);
  far.Connect(b, to_a);

  const auto msg = Pattern(1000, 4, 13);
  std::memcpy(node_->Data(kSrc), msg.data(), msg.size());
  // Write into the far device's MEMIC, read it back, send into a far receive.
  node_->PostSend(a, prm::MLX5_OPCODE_RDMA_WRITE, Cat({RaddrSeg(0, far_dm), DataSeg(key_, kSrc, 1000)}));
  ASSERT_TRUE(node_->Poll(cq_a_));
  EXPECT_EQ(std::memcmp(far.Bar(bar), msg.data(), msg.size()), 0);
  node_->PostSend(a, prm::MLX5_OPCODE_RDMA_READ, Cat({RaddrSeg(0, far_dm), DataSeg(key_, kDst, 1000)}));
  auto rd = node_->Poll(cq_a_);
  ASSERT_TRUE(rd);
  EXPECT_EQ(rd->byte_cnt(), 1000u);
  EXPECT_EQ(std::memcmp(node_->Data(kDst), msg.data(), msg.size()), 0);
  far.PostRecv(b, far_key, kDst, 2048);
  node_->PostSend(a, prm::MLX5_OPCODE_SEND, DataSeg(key_, kSrc, 1000));
  ASSERT_TRUE(node_->Poll(cq_a_));
  auto resp = far.Poll(far_cq);
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->opcode(), prm::MLX5_CQE_RESP_SEND);
  EXPECT_EQ(resp->byte_cnt(), 1000u);
  EXPECT_EQ(std::memcmp(far.Data(kDst), msg.data(), msg.size()), 0);
  // And back the other way: an atomic on this device's memory from the far one.
  uint64_t v = 9;
  std::memcpy(node_->Data(kDst), &v, 8);
  far.PostSend(b, prm::MLX5_OPCODE_ATOMIC_FA, Cat({RaddrSeg(kDst, key_), AtomicSeg(1, 0), DataSeg(far_key, kSrc, 8)}));
  ASSERT_TRUE(far.Poll(far_cq));
  std::memcpy(&v, node_->Data(kDst), 8);
  EXPECT_EQ(v, 10u);
  far_w.reset();
}

// ---- UD ----

std::vector<std::byte> Av(uint32_t qpn, uint32_t qkey, const Gid& rgid, uint8_t sgid_index) {
  prm::pod::mlx5_wqe_av av{};
  av.key.qkey.qkey = prm::Be32::FromHost(qkey);
  av.dqp_dct = prm::Be32::FromHost(prm::MLX5_EXTENDED_UD_AV | qpn);
  av.hop_limit = 64;
  av.grh_gid_fl = prm::Be32::FromHost(uint32_t{sgid_index} << 20);
  std::memcpy(av.rgid, rgid.data(), 16);
  std::vector<std::byte> v(sizeof av);
  std::memcpy(v.data(), &av, sizeof av);
  return v;
}

TEST_F(EngineWireTest, UdDeliversWithTheGrhFirst) {
  auto a = node_->NewQp(0, prm::QP_ST_UD, cq_a_.cqn, cq_a_.cqn);
  auto b = node_->NewQp(1, prm::QP_ST_UD, cq_b_.cqn, cq_b_.cqn);
  node_->Connect(a, {});
  node_->Connect(b, {});
  node_->PostRecv(b, key_, kDst, 40 + 256);
  const auto msg = Pattern(100, 6, 13);
  std::memcpy(node_->Data(kSrc), msg.data(), msg.size());
  node_->PostSend(a, prm::MLX5_OPCODE_SEND,
                  Cat({Av(b.qpn, Node::kQkey, OwnGid(), 3), DataSeg(key_, kSrc, 100)}));
  auto req = node_->Poll(cq_a_);
  ASSERT_TRUE(req);
  EXPECT_EQ(req->opcode(), prm::MLX5_CQE_REQ);
  auto resp = node_->Poll(cq_b_);
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->opcode(), prm::MLX5_CQE_RESP_SEND);
  EXPECT_EQ(resp->byte_cnt(), 140u);  // the GRH area counts
  const uint32_t flags_rqpn = resp->good.flags_rqpn.host();
  EXPECT_EQ(flags_rqpn & 0xffffff, a.qpn);
  EXPECT_NE((flags_rqpn >> 28) & 3, 0u);  // GRH present
  EXPECT_EQ(std::memcmp(node_->Data(kDst + 40), msg.data(), msg.size()), 0);
  // RoCE v2 over IPv4: an IPv4 header with a valid checksum at offset 20 of the GRH area.
  const auto* ip = reinterpret_cast<const uint8_t*>(node_->Data(kDst + 20));
  EXPECT_EQ(ip[0], 0x45);
  EXPECT_EQ(ip[9], 17);
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += uint32_t{ip[i]} << 8 | ip[i + 1];
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  EXPECT_EQ(sum, 0xffffu);
  EXPECT_EQ(std::memcmp(ip + 12, OwnGid().data() + 12, 4), 0);
}

// The GID entry a UD message is sent from decides its L3 header, and the receive says which
// came: CQE flags_rqpn [27:24] (wc.sl under libmlx5) is 0 for a GRH (RoCE v1), 0x8 | 1 for RoCE
// v2 over IPv6 and 0x8 | 2 over IPv4, the packet type UCX's UD transport reads to find the
// destination address in the first 40 bytes.
TEST_F(EngineWireTest, UdReceiveSaysWhichL3HeaderCame) {
  auto a = node_->NewQp(0, prm::QP_ST_UD, cq_a_.cqn, cq_a_.cqn);
  auto b = node_->NewQp(1, prm::QP_ST_UD, cq_b_.cqn, cq_b_.cqn);
  node_->Connect(a, {});
  node_->Connect(b, {});
  struct Case {
    uint32_t index;  // mlx5_ib's order: link-local v1, v2; IPv4-mapped v1, v2
    uint32_t type;
    uint8_t next_header;  // byte 6 of a 40-byte header; IPv4 has its protocol at byte 29
  };
  for (const Case c : {Case{0, 0x0, 0x1b}, Case{1, 0x9, 17}, Case{2, 0x0, 0x1b}, Case{3, 0xa, 0}}) {
    SCOPED_TRACE(c.index);
    const Gid gid = sim_->engine().gids()[c.index];
    std::memset(node_->Data(kDst), 0xff, 64);
    node_->PostRecv(b, key_, kDst, 40 + 64);
    node_->PostSend(a, prm::MLX5_OPCODE_SEND, Cat({Av(b.qpn, Node::kQkey, gid, c.index), DataSeg(key_, kSrc, 8)}));
    ASSERT_TRUE(node_->Poll(cq_a_));
    auto resp = node_->Poll(cq_b_);
    ASSERT_TRUE(resp);
    const uint32_t flags_rqpn = resp->good.flags_rqpn.host();
    EXPECT_EQ((flags_rqpn >> 24) & 0xf, c.type);
    EXPECT_NE((flags_rqpn >> 28) & 3, 0u);
    const auto* h = reinterpret_cast<const uint8_t*>(node_->Data(kDst));
    if (c.next_header != 0) {
      EXPECT_EQ(h[0] >> 4, 6);
      EXPECT_EQ(h[6], c.next_header);
      // Payload length: what follows the 40 bytes, UDP (v2 only), BTH, DETH, 8 bytes, ICRC.
      EXPECT_EQ(h[4] << 8 | h[5], (c.type != 0 ? 8 : 0) + 12 + 8 + 8 + 4);
      EXPECT_EQ(std::memcmp(h + 8, gid.data(), 16), 0);
      EXPECT_EQ(std::memcmp(h + 24, gid.data(), 16), 0);
    } else {
      EXPECT_NE(h[0] & 0xf0, 0x60);  // the first 20 bytes do not look like an IPv6 header
      EXPECT_EQ(h[20], 0x45);
      EXPECT_EQ(h[29], 17);
      EXPECT_EQ(std::memcmp(h + 36, gid.data() + 12, 4), 0);  // the destination address
    }
  }
}

TEST_F(EngineWireTest, UdDropsAWrongQkeyAndAMessageWithoutReceive) {
  auto a = node_->NewQp(0, prm::QP_ST_UD, cq_a_.cqn, cq_a_.cqn);
  auto b = node_->NewQp(1, prm::QP_ST_UD, cq_b_.cqn, cq_b_.cqn);
  node_->Connect(a, {});
  node_->Connect(b, {});
  // No receive posted: the send still completes (UD has no acknowledgement).
  node_->PostSend(a, prm::MLX5_OPCODE_SEND, Cat({Av(b.qpn, Node::kQkey, OwnGid(), 3), DataSeg(key_, kSrc, 8)}));
  ASSERT_TRUE(node_->Poll(cq_a_));
  // The requester completes when the packet leaves; the responder drops it in a later pass. A
  // receive posted before that pass would take it, so give the pass time to run first.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  node_->PostRecv(b, key_, kDst, 64);
  node_->PostSend(a, prm::MLX5_OPCODE_SEND, Cat({Av(b.qpn, 0x999, OwnGid(), 3), DataSeg(key_, kSrc, 8)}));
  ASSERT_TRUE(node_->Poll(cq_a_));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(node_->TryPoll(cq_b_));
  // The receive is still there for a message with the right Q_Key.
  node_->PostSend(a, prm::MLX5_OPCODE_SEND, Cat({Av(b.qpn, Node::kQkey, OwnGid(), 3), DataSeg(key_, kSrc, 8)}));
  ASSERT_TRUE(node_->Poll(cq_a_));
  auto resp = node_->Poll(cq_b_);
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->wqe_counter(), 0u);
}

// ---- UC ----

TEST_F(EngineWireTest, UcCompletesWithoutAcknowledgementAndDropsWhatItCannotDeliver) {
  auto a = node_->NewQp(0, prm::QP_ST_UC, cq_a_.cqn, cq_a_.cqn);
  auto b = node_->NewQp(1, prm::QP_ST_UC, cq_b_.cqn, cq_b_.cqn);
  Node::Path to_b, to_a;
  to_b.remote_qpn = b.qpn;
  to_b.rgid = OwnGid();
  to_a.remote_qpn = a.qpn;
  to_a.rgid = OwnGid();
  node_->Connect(a, to_b);
  node_->Connect(b, to_a);
  const auto msg = Pattern(64, 1, 13);
  std::memcpy(node_->Data(kSrc), msg.data(), msg.size());
  // No receive posted: the send completes on the requester and is lost, no RNR.
  node_->PostSend(a, prm::MLX5_OPCODE_SEND, DataSeg(key_, kSrc, 64));
  auto lost = node_->Poll(cq_a_);
  ASSERT_TRUE(lost);
  EXPECT_EQ(lost->opcode(), prm::MLX5_CQE_REQ);
  // A write and a send that find what they need arrive.
  node_->PostSend(a, prm::MLX5_OPCODE_RDMA_WRITE, Cat({RaddrSeg(kDst + 512, key_), DataSeg(key_, kSrc, 64)}));
  ASSERT_TRUE(node_->Poll(cq_a_));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the responder's pass, as for UD
  node_->PostRecv(b, key_, kDst, 64);
  node_->PostSend(a, prm::MLX5_OPCODE_SEND_IMM, DataSeg(key_, kSrc, 64), prm::MLX5_WQE_CTRL_CQ_UPDATE,
                  prm::Be32::FromHost(5).raw());
  ASSERT_TRUE(node_->Poll(cq_a_));
  auto resp = node_->Poll(cq_b_);
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->opcode(), prm::MLX5_CQE_RESP_SEND_IMM);
  EXPECT_EQ(resp->wqe_counter(), 0u);  // the lost send took no receive
  EXPECT_EQ(std::memcmp(node_->Data(kDst + 512), msg.data(), msg.size()), 0);
  EXPECT_EQ(std::memcmp(node_->Data(kDst), msg.data(), msg.size()), 0);
  // A write with a bad rkey is dropped by the responder; both QPs stay usable.
  node_->PostSend(a, prm::MLX5_OPCODE_RDMA_WRITE, Cat({RaddrSeg(kDst, key_ ^ 0x3), DataSeg(key_, kSrc, 64)}));
  auto dropped = node_->Poll(cq_a_);
  ASSERT_TRUE(dropped);
  EXPECT_EQ(dropped->opcode(), prm::MLX5_CQE_REQ);
  EXPECT_EQ(node_->QpState(a.qpn), prm::QP_STATE_RTS);
  EXPECT_EQ(node_->QpState(b.qpn), prm::QP_STATE_RTS);
  // READ is not a UC operation.
  node_->PostSend(a, prm::MLX5_OPCODE_RDMA_READ, Cat({RaddrSeg(kDst, key_), DataSeg(key_, kSrc, 8)}));
  auto bad = node_->Poll(cq_a_);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->syndrome(), prm::MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
}

// ---- SRQ ----

TEST_F(EngineWireTest, SrqReceivesFollowTheFreeList) {
  using In = prm::create_srq_in;
  using S = prm::srqc_bits<In::srq_context_entry.bit_offset>;
  constexpr uint32_t kLogSize = 4, kStride = 64;
  const uint64_t srq_dbr = Node::kDbrIova + 512;
  std::memset(w_->host(Node::kSrqIova), 0, 4096);
  std::memset(w_->host(srq_dbr), 0, 8);
  auto in = prm::CommandIn<In>(prm::CREATE_SRQ, 0, 8);
  in.set(S::log_srq_size, kLogSize)
      .set(S::log_rq_stride, 2)
      .set(S::pd, node_->pd)
      .set(S::dbr_addr, srq_dbr)
      .set(In::pas[0], Node::kSrqIova);
  const uint32_t srqn = static_cast<uint32_t>(node_->Run(in, 16).get(prm::create_srq_out::srqn));
  auto a = node_->NewQp(0, prm::QP_ST_RC, cq_a_.cqn, cq_a_.cqn);
  auto b = node_->NewQp(1, prm::QP_ST_RC, cq_b_.cqn, cq_b_.cqn, srqn);
  Node::Path to_b, to_a;
  to_b.remote_qpn = b.qpn;
  to_b.rgid = OwnGid();
  to_a.remote_qpn = a.qpn;
  to_a.rgid = OwnGid();
  node_->Connect(a, to_b);
  node_->Connect(b, to_a);
  // The driver's free list: 0 -> 5 -> 2 -> ...; post into 0 and 5, each its own buffer.
  auto post = [&](uint32_t index, uint16_t next, uint64_t addr) {
    std::byte* wqe = w_->host(Node::kSrqIova + index * kStride);
    prm::pod::mlx5_wqe_srq_next_seg seg{};
    seg.next_wqe_index = prm::Be16::FromHost(next);
    std::memcpy(wqe, &seg, 16);
    const auto d = DataSeg(key_, addr, 64);
    std::memcpy(wqe + 16, d.data(), 16);
  };
  post(0, 5, kDst);
  post(5, 2, kDst + 64);
  node_->StoreBe32(srq_dbr, 2);
  node_->DoorbellRung();
  const auto msg = Pattern(32, 8, 13);
  std::memcpy(node_->Data(kSrc), msg.data(), msg.size());
  for (uint16_t expect : {0, 5}) {
    node_->PostSend(a, prm::MLX5_OPCODE_SEND, DataSeg(key_, kSrc, 32));
    ASSERT_TRUE(node_->Poll(cq_a_));
    auto resp = node_->Poll(cq_b_);
    ASSERT_TRUE(resp);
    EXPECT_EQ(resp->opcode(), prm::MLX5_CQE_RESP_SEND);
    EXPECT_EQ(resp->wqe_counter(), expect);
  }
  EXPECT_EQ(std::memcmp(node_->Data(kDst + 64), msg.data(), msg.size()), 0);
  // The SRQ is empty now: an RC sender waits in RNR until one more is posted.
  node_->PostSend(a, prm::MLX5_OPCODE_SEND, DataSeg(key_, kSrc, 32));
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(node_->TryPoll(cq_b_));
  post(2, 7, kDst + 128);
  node_->StoreBe32(srq_dbr, 3);
  node_->DoorbellRung();
  auto resp = node_->Poll(cq_b_);
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->wqe_counter(), 2u);
}

// ---- memory windows ----

using Ctrl = prm::mlx5_wqe_ctrl_seg;
using UmrCtrl = prm::mlx5_wqe_umr_ctrl_seg_bits<16 * 8>;
using Seg = prm::mlx5_mkey_seg_bits<64 * 8>;
using Klm = prm::mlx5_klm_bits<128 * 8>;

// The segments after ctrl of a bind UMR WQE (rdma-core's set_bind_wr).
std::vector<std::byte> BindSegments(int type, uint32_t qpn, uint32_t new_key, uint32_t mr_key,
                                    uint64_t addr, uint64_t length) {
  std::vector<std::byte> w(192);
  uint8_t flags = prm::MLX5_WQE_UMR_CTRL_FLAG_TRNSLATION_OFFSET | prm::MLX5_WQE_UMR_CTRL_FLAG_INLINE;
  uint64_t mask = prm::MLX5_MKEY_MASK_FREE | prm::MLX5_MKEY_MASK_KEY | prm::MLX5_MKEY_MASK_LEN |
                  prm::MLX5_MKEY_MASK_START_ADDR | prm::MLX5_MKEY_MASK_LW | prm::MLX5_MKEY_MASK_RR |
                  prm::MLX5_MKEY_MASK_RW | prm::MLX5_MKEY_MASK_A;
  if (type == 2) {
    mask |= prm::MLX5_MKEY_MASK_QPN;
    flags |= prm::MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE;
  }
  const uint32_t bound_qpn = type == 1 ? prm::MLX5_MKEY_NO_QPN : qpn;
  prm::Bits b(w);
  b.set(UmrCtrl::flags, flags)
      .set(UmrCtrl::xlt_octowords, 4)
      .set(UmrCtrl::mkey_mask, mask)
      .set(Seg::qpn_mkey7_0, bound_qpn << 8 | (new_key & 0xff))
      .set(Seg::flags, prm::MLX5_PERM_LOCAL_WRITE | prm::MLX5_PERM_REMOTE_READ | prm::MLX5_PERM_REMOTE_WRITE)
      .set(Seg::start_addr, addr)
      .set(Seg::len, length)
      .set(Klm::bcount, length)
      .set(Klm::key, mr_key)
      .set(Klm::va, addr);
  EXPECT_TRUE(b.ok()) << b.refused();
  return {w.begin() + 16, w.end()};
}

class EngineWindowTest : public EngineWireTest, public ::testing::WithParamInterface<int> {};

TEST_P(EngineWindowTest, BoundWindowAdmitsRemoteAccessUntilInvalidated) {
  const int type = GetParam();
  auto a = node_->NewQp(0, prm::QP_ST_RC, cq_a_.cqn, cq_a_.cqn);
  auto b = node_->NewQp(1, prm::QP_ST_RC, cq_b_.cqn, cq_b_.cqn);
  Node::Path to_b, to_a;
  to_b.remote_qpn = b.qpn;
  to_b.rgid = OwnGid();
  to_a.remote_qpn = a.qpn;
  to_a.rgid = OwnGid();
  node_->Connect(a, to_b);
  node_->Connect(b, to_a);
  const uint32_t mw = node_->Window(type);
  const uint32_t rkey = (mw & ~0xffu) | 0x12;
  const uint64_t win = kDst + 0x1000;
  // The responder binds the window over 4 KiB of its MR (a type-2 window is bound to it).
  node_->PostSend(b, prm::MLX5_OPCODE_UMR, BindSegments(type, b.qpn, rkey, key_, win, 4096),
                  prm::MLX5_WQE_CTRL_CQ_UPDATE, prm::Be32::FromHost(mw).raw());
  auto bound = node_->Poll(cq_b_);
  ASSERT_TRUE(bound);
  ASSERT_EQ(bound->opcode(), prm::MLX5_CQE_REQ) << "syndrome " << int(bound->syndrome());
  // Remote write through the window.
  const auto msg = Pattern(64, 3, 13);
  std::memcpy(node_->Data(kSrc), msg.data(), msg.size());
  node_->PostSend(a, prm::MLX5_OPCODE_RDMA_WRITE, Cat({RaddrSeg(win + 100, rkey), DataSeg(key_, kSrc, 64)}));
  auto w1 = node_->Poll(cq_a_);
  ASSERT_TRUE(w1);
  EXPECT_EQ(w1->opcode(), prm::MLX5_CQE_REQ);
  EXPECT_EQ(std::memcmp(node_->Data(win + 100), msg.data(), msg.size()), 0);
  // Outside the window: remote access error (and both QPs in error).
  if (type == 1) {
    node_->PostSend(a, prm::MLX5_OPCODE_RDMA_WRITE, Cat({RaddrSeg(win + 4090, rkey), DataSeg(key_, kSrc, 64)}));
    auto out = node_->Poll(cq_a_);
    ASSERT_TRUE(out);
    EXPECT_EQ(out->syndrome(), prm::MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
    return;
  }
  // Type 2: SEND_WITH_INV invalidates it on the responder, then the same write fails.
  node_->PostRecv(b, key_, kDst, 64);
  node_->PostSend(a, prm::MLX5_OPCODE_SEND_INVAL, DataSeg(key_, kSrc, 8), prm::MLX5_WQE_CTRL_CQ_UPDATE,
                  prm::Be32::FromHost(rkey).raw());
  ASSERT_TRUE(node_->Poll(cq_a_));
  auto inv = node_->Poll(cq_b_);
  ASSERT_TRUE(inv);
  EXPECT_EQ(inv->opcode(), prm::MLX5_CQE_RESP_SEND_INV);
  EXPECT_EQ(inv->good.inval_rkey.host(), rkey);
  node_->PostSend(a, prm::MLX5_OPCODE_RDMA_WRITE, Cat({RaddrSeg(win + 100, rkey), DataSeg(key_, kSrc, 64)}));
  auto after = node_->Poll(cq_a_);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->opcode(), prm::MLX5_CQE_REQ_ERR);
  EXPECT_EQ(after->syndrome(), prm::MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
}

INSTANTIATE_TEST_SUITE_P(Types, EngineWindowTest, ::testing::Values(1, 2));

TEST_F(EngineWireTest, BindOnAParentWithoutBindRightIsMwBindError) {
  auto a = node_->NewQp(0, prm::QP_ST_RC, cq_a_.cqn, cq_a_.cqn);
  Node::Path to_self;
  to_self.remote_qpn = a.qpn;
  to_self.rgid = OwnGid();
  node_->Connect(a, to_self);
  const uint32_t plain = node_->MttKey(kLw | kRr | kRw);
  const uint32_t mw = node_->Window(1);
  node_->PostSend(a, prm::MLX5_OPCODE_UMR, BindSegments(1, a.qpn, (mw & ~0xffu) | 0x12, plain, kDst, 4096),
                  prm::MLX5_WQE_CTRL_CQ_UPDATE, prm::Be32::FromHost(mw).raw());
  auto err = node_->Poll(cq_a_);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->opcode(), prm::MLX5_CQE_REQ_ERR);
  EXPECT_EQ(err->syndrome(), prm::MLX5_CQE_SYNDROME_MW_BIND_ERR);
  EXPECT_EQ(err->err.vendor_err_synd, static_cast<uint8_t>(UmrCheck::PARENT_NO_BIND));
  EXPECT_EQ(node_->QpState(a.qpn), prm::QP_STATE_ERR);
}

}  // namespace
}  // namespace onchip::sim::testing
