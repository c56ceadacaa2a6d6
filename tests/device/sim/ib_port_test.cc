// An InfiniBand port (DeviceConfig::port_type kInfiniBand): what the firmware reports about it
// (caps, QUERY_HCA_VPORT_CONTEXT, QUERY_HCA_VPORT_GID), the LIDs the fabric's subnet manager
// hands out, and the wire routing packets without a GRH by DLID (RC, and UD with its receive's
// GRH area left unwritten); and that an Ethernet port keeps going by GID whatever the path's
// grh bit and rlid say.
#include <cstring>

#include "tests/device/sim/node_test.h"
#include "tests/device/sim/started_function.h"
#include "tools/sim/wire.h"
#include "uapi/prm/caps.h"
#include "uapi/prm/hca.h"
#include "uapi/prm/wqe.h"

namespace onchip::sim::testing {
namespace {

constexpr uint64_t kSrc = Node::kDataVa + 0x1000;
constexpr uint64_t kDst = Node::kDataVa + 0x20000;

DeviceConfig IbConfig(uint8_t mac_last = 1) {
  DeviceConfig c;
  c.port_type = DeviceConfig::PortType::kInfiniBand;
  c.mac[5] = mac_last;
  c.ipv4 = 0x7f000000u + mac_last;
  return c;
}

// A UD address vector: by DLID alone (`grh` false), or with the GRH bit and a DGID.
std::vector<std::byte> IbAv(uint32_t qpn, uint32_t qkey, uint16_t dlid, uint8_t sl, bool grh,
                            const Gid& rgid = {}) {
  prm::pod::mlx5_wqe_av av{};
  av.key.qkey.qkey = prm::Be32::FromHost(qkey);
  av.dqp_dct = prm::Be32::FromHost(prm::MLX5_EXTENDED_UD_AV | qpn);
  av.stat_rate_sl = sl & 0xf;
  av.rlid = prm::Be16::FromHost(dlid);
  if (grh) {
    av.hop_limit = 64;
    av.grh_gid_fl = prm::Be32::FromHost(1u << 30);  // GRH present, sgid_index 0
    std::memcpy(av.rgid, rgid.data(), 16);
  }
  std::vector<std::byte> v(sizeof av);
  std::memcpy(v.data(), &av, sizeof av);
  return v;
}

class IbPortTest : public NodeTest {
 protected:
  DeviceConfig Config() const override { return IbConfig(); }
  uint16_t Lid() const { return sim_->config().lid; }

  // A second IB device in the process, started, with a CQ and a key.
  std::unique_ptr<StartedFunction> MakeFar() { return StartFunction(IbConfig(2)); }

  // An RDMA WRITE of `n` bytes of Pattern(n, seed) on `a` into `far`'s kDst, completed and
  // checked there.
  void WriteToFar(Node::QpInfo& a, StartedFunction& far, uint32_t n, uint8_t seed) {
    const auto msg = Pattern(n, seed);
    std::memcpy(node_->Data(kSrc), msg.data(), msg.size());
    node_->PostSend(a, prm::MLX5_OPCODE_RDMA_WRITE,
                    Cat({RaddrSeg(kDst, far.key), DataSeg(key_, kSrc, n)}));
    auto w = node_->Poll(cq_a_);
    ASSERT_TRUE(w);
    EXPECT_EQ(w->opcode(), prm::MLX5_CQE_REQ);
    EXPECT_EQ(std::memcmp(far.node->Data(kDst), msg.data(), msg.size()), 0);
  }
};

TEST_F(IbPortTest, CapsSayInfiniBandAndTheVportContextHoldsWhatTheSmAssigned) {
  auto cap = prm::CommandIn<prm::query_hca_cap_in>(
      prm::QUERY_HCA_CAP, prm::QueryCapOpMod(prm::CAP_GENERAL, prm::HCA_CAP_OPMOD_GET_CUR));
  Reply caps = node_->Run(cap, 4112);
  using Gen = prm::cmd_hca_cap_bits<prm::query_hca_cap_out::capability.bit_offset>;
  EXPECT_EQ(caps.get(Gen::port_type), 0u);  // InfiniBand
  EXPECT_EQ(caps.get(Gen::roce), 0u);

  using Out = prm::query_hca_vport_context_out;
  using Ctx = prm::hca_vport_context_bits<Out::hca_vport_context.bit_offset>;
  Reply r =
      node_->Run(prm::CommandIn<prm::query_hca_vport_context_in>(prm::QUERY_HCA_VPORT_CONTEXT),
                 prm::size_bytes<Out>);
  EXPECT_GE(Lid(), 2u);  // LID 1 is the subnet manager's
  EXPECT_EQ(r.get(Ctx::lid), Lid());
  EXPECT_EQ(r.get(Ctx::sm_lid), Fabric::kSmLid);
  EXPECT_EQ(r.get(Ctx::lmc), 0u);
  EXPECT_EQ(r.get(Ctx::vport_state), 4u);          // ACTIVE
  EXPECT_EQ(r.get(Ctx::port_physical_state), 5u);  // LinkUp
  EXPECT_EQ(r.get(Ctx::port_guid), NodeGuid(sim_->config()));
  EXPECT_EQ(r.get(Ctx::node_guid), 0x0c42a103004f0001ull);

  // Another IB device gets another LID; after it goes, its LID is free again.
  auto far = MakeFar();
  ASSERT_TRUE(far);
  const uint16_t far_lid = far->device->config().lid;
  EXPECT_NE(far_lid, Lid());
  EXPECT_GE(far_lid, 2u);
  // A LID asked for explicitly while a device holds it: refused.
  DeviceConfig taken = IbConfig(3);
  taken.lid = far_lid;
  auto clash = Device::Create(taken);
  ASSERT_FALSE(clash);
  EXPECT_EQ(clash.error().errno_value(), EADDRINUSE);
  far.reset();
  auto again = Device::Create(taken);
  ASSERT_TRUE(again) << again.error().describe();
  EXPECT_EQ((**again).config().lid, far_lid);
}

TEST_F(IbPortTest, GidZeroIsTheSubnetPrefixAndThePortGuid) {
  using In = prm::query_hca_vport_gid_in;
  constexpr std::size_t kOut = prm::size_bytes<prm::query_hca_vport_gid_out> + 16;
  Reply r = node_->Run(prm::CommandIn<In>(prm::QUERY_HCA_VPORT_GID), kOut);
  EXPECT_EQ(r.get(prm::query_hca_vport_gid_out::gids_num), 1u);
  const Gid want = sim_->engine().gids()[0];
  EXPECT_EQ(want[0], 0xfe);
  EXPECT_EQ(want[1], 0x80);
  EXPECT_EQ(std::memcmp(r.out.data() + 16, want.data(), 16), 0);
  auto bad = prm::CommandIn<In>(prm::QUERY_HCA_VPORT_GID);
  bad.set(In::gid_index, kIbGidTableSize);
  EXPECT_TRUE(Refused(Exec(bad, kOut), prm::CommandStatus::BAD_PARAM_ERR, Syndrome::VPORT_GID_INDEX));
}

TEST_F(IbPortTest, RcBetweenTwoDevicesByLidWithoutAGrh) {
  auto far = MakeFar();
  ASSERT_TRUE(far);
  auto a = node_->NewQp(0, prm::QP_ST_RC, cq_a_.cqn, cq_a_.cqn);
  auto b = far->node->NewQp(0, prm::QP_ST_RC, far->cq.cqn, far->cq.cqn);
  Node::Path to_b;
  to_b.remote_qpn = b.qpn;
  to_b.rlid = far->device->config().lid;  // no GRH, no GID: the LID alone
  Node::Path to_a;
  to_a.remote_qpn = a.qpn;
  to_a.rlid = Lid();
  node_->Connect(a, to_b);
  far->node->Connect(b, to_a);

  WriteToFar(a, *far, 1500, 3);
  if (HasFatalFailure()) return;
  // A SEND the other way: the responder's CQE names the sender's LID.
  far->node->PostRecv(b, far->key, kDst + 0x4000, 2048);
  node_->PostSend(a, prm::MLX5_OPCODE_SEND, DataSeg(key_, kSrc, 100));
  ASSERT_TRUE(node_->Poll(cq_a_));
  auto resp = far->node->Poll(far->cq);
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->opcode(), prm::MLX5_CQE_RESP_SEND);
  EXPECT_EQ(resp->good.slid.host(), Lid());
}

TEST_F(IbPortTest, RcWithAGrhStillGoesByGid) {
  auto far = MakeFar();
  ASSERT_TRUE(far);
  auto a = node_->NewQp(0, prm::QP_ST_RC, cq_a_.cqn, cq_a_.cqn);
  auto b = far->node->NewQp(0, prm::QP_ST_RC, far->cq.cqn, far->cq.cqn);
  Node::Path to_b;
  to_b.remote_qpn = b.qpn;
  to_b.grh = true;
  to_b.src_addr_index = 0;
  to_b.rgid = far->device->engine().gids()[0];
  to_b.rlid = 0x7777;  // no port there: only the GID can deliver it
  Node::Path to_a;
  to_a.remote_qpn = a.qpn;
  to_a.grh = true;
  to_a.src_addr_index = 0;
  to_a.rgid = sim_->engine().gids()[0];
  node_->Connect(a, to_b);
  far->node->Connect(b, to_a);
  WriteToFar(a, *far, 64, 9);
}

TEST_F(IbPortTest, UdByDlidLeavesTheGrhAreaUnwrittenAndFlagsNoGrh) {
  auto far = MakeFar();
  ASSERT_TRUE(far);
  auto a = node_->NewQp(0, prm::QP_ST_UD, cq_a_.cqn, cq_a_.cqn);
  auto b = far->node->NewQp(0, prm::QP_ST_UD, far->cq.cqn, far->cq.cqn);
  node_->Connect(a, {});
  far->node->Connect(b, {});
  std::memset(far->node->Data(kDst), 0xab, 40);
  far->node->PostRecv(b, far->key, kDst, 40 + 256);
  const auto msg = Pattern(100, 5);
  std::memcpy(node_->Data(kSrc), msg.data(), msg.size());
  node_->PostSend(a, prm::MLX5_OPCODE_SEND,
                  Cat({IbAv(b.qpn, Node::kQkey, far->device->config().lid, 3, false),
                       DataSeg(key_, kSrc, 100)}));
  ASSERT_TRUE(node_->Poll(cq_a_));
  auto resp = far->node->Poll(far->cq);
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->opcode(), prm::MLX5_CQE_RESP_SEND);
  EXPECT_EQ(resp->byte_cnt(), 140u);  // the GRH area counts, written or not
  const uint32_t flags_rqpn = resp->good.flags_rqpn.host();
  EXPECT_EQ(flags_rqpn & 0xffffff, a.qpn);
  EXPECT_EQ((flags_rqpn >> 28) & 3, 0u);  // no GRH
  EXPECT_EQ((flags_rqpn >> 24) & 0xf, 3u);  // the SL
  EXPECT_EQ(resp->good.slid.host(), Lid());
  for (int i = 0; i < 40; ++i) ASSERT_EQ(far->node->Data(kDst)[i], std::byte{0xab}) << i;
  EXPECT_EQ(std::memcmp(far->node->Data(kDst + 40), msg.data(), msg.size()), 0);

  // With the GRH bit the datagram goes by DGID and the receive gets its GRH.
  far->node->PostRecv(b, far->key, kDst + 0x1000, 40 + 256);
  node_->PostSend(a, prm::MLX5_OPCODE_SEND,
                  Cat({IbAv(b.qpn, Node::kQkey, 0, 0, true, far->device->engine().gids()[0]),
                       DataSeg(key_, kSrc, 100)}));
  ASSERT_TRUE(node_->Poll(cq_a_));
  auto with_grh = far->node->Poll(far->cq);
  ASSERT_TRUE(with_grh);
  EXPECT_NE((with_grh->good.flags_rqpn.host() >> 28) & 3, 0u);
  EXPECT_EQ(std::memcmp(far->node->Data(kDst + 0x1000 + 24), far->device->engine().gids()[0].data(), 16), 0);
  EXPECT_EQ(std::memcmp(far->node->Data(kDst + 0x1000 + 40), msg.data(), msg.size()), 0);
}

// ---- an Ethernet port, as before ----

class EthPortTest : public SimTest {};

TEST_F(EthPortTest, HcaVportQueriesAreForInfiniBandPortsOnly) {
  BringUp();
  Reply r = Exec(prm::CommandIn<prm::query_hca_vport_context_in>(prm::QUERY_HCA_VPORT_CONTEXT),
                 prm::size_bytes<prm::query_hca_vport_context_out>);
  EXPECT_TRUE(Refused(r, prm::CommandStatus::BAD_PARAM_ERR, Syndrome::PORT_NOT_IB));
  EXPECT_EQ(sim_->config().lid, 0u);
}

// RoCE as before: every packet carries a GRH, so the firmware takes a path with grh 0 and the
// engine goes by its rgid; an rlid there names nothing (the driver refuses grh 0 on RoCE, as
// mlx5_ib does: tests/device/driver/qp_test.cc).
TEST_F(EthPortTest, AnEthernetPathGoesByGidWhateverItsGrhBitAndRlidSay) {
  Node node(*w_);
  node.Start();
  auto cq = node.NewCq(0);
  const uint32_t key = node.MttKey(kAll);
  auto a = node.NewQp(0, prm::QP_ST_RC, cq.cqn, cq.cqn);
  auto b = node.NewQp(1, prm::QP_ST_RC, cq.cqn, cq.cqn);
  Node::Path to_b;
  to_b.remote_qpn = b.qpn;
  to_b.rgid = sim_->engine().gids()[3];
  to_b.rlid = 0x1234;
  Node::Path to_a = to_b;
  to_a.remote_qpn = a.qpn;
  node.Connect(a, to_b);
  node.Connect(b, to_a);
  const auto msg = Pattern(32, 1);
  std::memcpy(node.Data(kSrc), msg.data(), msg.size());
  node.PostSend(a, prm::MLX5_OPCODE_RDMA_WRITE, Cat({RaddrSeg(kDst, key), DataSeg(key, kSrc, 32)}));
  auto w = node.Poll(cq);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->opcode(), prm::MLX5_CQE_REQ);
  EXPECT_EQ(std::memcmp(node.Data(kDst), msg.data(), msg.size()), 0);
}

}  // namespace
}  // namespace onchip::sim::testing
