// The driver on an InfiniBand port (sim DeviceConfig::port_type kInfiniBand): ibv_query_port's
// answer from QUERY_HCA_VPORT_CONTEXT (link layer, the LID and SM LID the fabric's subnet manager
// gave, ACTIVE), two RC QPs connected by LID without a GRH moving an RDMA write and a send, a UD
// datagram through an AH without a GRH (no IBV_WC_GRH, the sender's LID in the completion), and
// the address vector and QP path those build; the GID table's one held entry.
#include <cerrno>
#include <cstring>
#include <vector>

#include "driver/ah.h"
#include "driver/gid_table.h"
#include "driver/port.h"
#include "driver/verbs/attributes.h"
#include "tests/device/loopback_fixture.h"
#include "tools/testing/rc_connect.h"
#include "tests/device/ud_ready.h"
#include "tests/device/work_requests.h"
#include "tools/sim/wire.h"

namespace onchip::testing {
namespace {

class IbPortDriverTest : public LoopbackTest {
 protected:
  IbPortDriverTest()
      : LoopbackTest(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ) {}
  sim::DeviceConfig Config() const override {
    sim::DeviceConfig c;
    c.port_type = sim::DeviceConfig::PortType::kInfiniBand;
    return c;
  }
  uint16_t Lid() const { return sim_->config().lid; }
};

TEST_F(IbPortDriverTest, QueryPortReportsTheInfiniBandPortTheSubnetManagerSetUp) {
  EXPECT_TRUE(driver::IsInfiniBand(device()));
  auto info = driver::QueryPort(device());
  ASSERT_TRUE(info) << info.error().describe();
  ibv_port_attr attr;
  driver::verbs::Identity id;
  id.gid_table_len = 8;  // what the verbs environment publishes for an IB port
  ASSERT_EQ(driver::verbs::PortAttributes(device(), id, 1, *info, &attr), 0);
  EXPECT_EQ(attr.link_layer, IBV_LINK_LAYER_INFINIBAND);
  EXPECT_EQ(attr.state, IBV_PORT_ACTIVE);
  EXPECT_EQ(attr.phys_state, 5);  // LinkUp
  EXPECT_GE(Lid(), 2);
  EXPECT_EQ(attr.lid, Lid());
  EXPECT_EQ(attr.sm_lid, sim::Fabric::kSmLid);
  EXPECT_EQ(attr.lmc, 0);
  EXPECT_EQ(attr.gid_tbl_len, 8);
  EXPECT_EQ(attr.active_mtu, IBV_MTU_4096);
  EXPECT_TRUE(attr.port_cap_flags & IBV_PORT_CM_SUP);
  EXPECT_FALSE(attr.port_cap_flags & IBV_PORT_IP_BASED_GIDS);
  // A link pulled: DOWN and Disabled, as the vport context says.
  sim_->SetLinkUp(false);
  info = driver::QueryPort(device());
  ASSERT_TRUE(info);
  ASSERT_EQ(driver::verbs::PortAttributes(device(), id, 1, *info, &attr), 0);
  EXPECT_EQ(attr.state, IBV_PORT_DOWN);
  EXPECT_EQ(attr.phys_state, 3);
  sim_->SetLinkUp(true);
}

// The GID table the driver read at open (QUERY_HCA_VPORT_GID): 8 entries, only the port GID
// held. A GRH naming an empty entry is refused with ENODATA, as the kernel's rdma_get_gid_attr
// answers, for an AH and a QP's path alike.
TEST_F(IbPortDriverTest, OnlyThePortGidIsHeld) {
  const driver::GidTable& table = device().gid_table();
  ASSERT_EQ(table.size(), 8u);
  const auto gids = sim::DeviceGids(sim_->config());
  EXPECT_TRUE(table.populated(0));
  EXPECT_EQ(0, std::memcmp(table.gid(0).data(), gids[0].data(), 16));
  for (uint32_t i = 1; i < table.size(); ++i) EXPECT_FALSE(table.populated(i)) << i;
  ibv_ah_attr ah_attr{};
  ah_attr.port_num = 1;
  ah_attr.dlid = Lid();
  ah_attr.is_global = 1;
  ah_attr.grh.hop_limit = 64;
  std::memcpy(ah_attr.grh.dgid.raw, gids[0].data(), 16);
  ah_attr.grh.sgid_index = 1;
  errno = 0;
  EXPECT_EQ(v::create_ah(pd_, &ah_attr), nullptr);
  EXPECT_EQ(errno, ENODATA);
  ah_attr.grh.sgid_index = 0;
  ibv_ah* ah = v::create_ah(pd_, &ah_attr);
  ASSERT_NE(ah, nullptr) << strerror(errno);
  EXPECT_EQ(v::destroy_ah(ah), 0);

  ibv_qp* qp = Qp(IBV_QPT_RC);
  ASSERT_NE(qp, nullptr);
  ibv_qp_attr init{};
  init.qp_state = IBV_QPS_INIT;
  init.port_num = 1;
  init.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  ASSERT_EQ(v::modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                        IBV_QP_ACCESS_FLAGS), 0);
  ibv_qp_attr rtr{};
  rtr.qp_state = IBV_QPS_RTR;
  rtr.path_mtu = IBV_MTU_1024;
  rtr.dest_qp_num = qp->qp_num;
  rtr.max_dest_rd_atomic = 1;
  rtr.min_rnr_timer = 12;
  rtr.ah_attr = ah_attr;
  rtr.ah_attr.grh.sgid_index = 7;
  constexpr int kRtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  EXPECT_EQ(v::modify_qp(qp, &rtr, kRtr), ENODATA);
  EXPECT_EQ(qp->state, IBV_QPS_INIT);
  rtr.ah_attr.grh.sgid_index = 0;
  EXPECT_EQ(v::modify_qp(qp, &rtr, kRtr), 0);
}

TEST_F(IbPortDriverTest, RcWriteAndSendBetweenTwoQpsConnectedByLid) {
  ibv_qp* a = Qp(IBV_QPT_RC);
  ibv_qp* b = Qp(IBV_QPT_RC);
  ASSERT_TRUE(a && b);
  for (auto [qp, dest] : {std::pair{a, b->qp_num}, std::pair{b, a->qp_num}}) {
    const RcPath path{.global = false, .dlid = Lid(), .sq_psn = 0x100 + dest,
                      .rq_psn = 0x100 + qp->qp_num};
    const RcConnectResult r = ConnectRc(qp, dest, path);
    ASSERT_TRUE(r) << r.describe();
  }
  ibv_qp_attr q{};
  ibv_qp_init_attr qi{};
  ASSERT_EQ(v::query_qp(a, &q, IBV_QP_AV, &qi), 0);
  EXPECT_EQ(q.ah_attr.is_global, 0);
  EXPECT_EQ(q.ah_attr.dlid, Lid());

  for (int i = 0; i < 256; ++i) buf_[i] = uint8_t(i * 3 + 1);
  ASSERT_EQ(Post(a, RdmaWrite(1, Local(0, 256), Remote(4096)).Signaled()), 0);
  auto wcs = Poll(1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << ibv_wc_status_str(wcs[0].status);
  EXPECT_EQ(std::memcmp(&buf_[0], &buf_[4096], 256), 0);

  ASSERT_EQ(Post(b, Recv(2, Local(6144, 64))), 0);
  ASSERT_EQ(Post(a, Send(3, Local(0, 64)).Signaled()), 0);
  wcs = Poll(2);
  ASSERT_EQ(wcs.size(), 2u);
  for (const ibv_wc& wc : wcs) {
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
    if (wc.wr_id == 2) {
      EXPECT_EQ(wc.slid, Lid());
    }
  }
  EXPECT_EQ(std::memcmp(&buf_[0], &buf_[6144], 64), 0);
}

TEST_F(IbPortDriverTest, UdThroughAnAhWithoutAGrh) {
  ibv_qp* tx = Qp(IBV_QPT_UD);
  ibv_qp* rx = Qp(IBV_QPT_UD);
  ASSERT_TRUE(tx && rx);
  for (ibv_qp* qp : {tx, rx}) ASSERT_EQ(ReadyUd(qp, 0x1234), 0) << qp->qp_num;
  ibv_ah_attr ah_attr{};
  ah_attr.port_num = 1;
  ah_attr.dlid = Lid();
  ah_attr.sl = 5;
  ibv_ah* ah = v::create_ah(pd_, &ah_attr);
  ASSERT_NE(ah, nullptr) << strerror(errno);
  const prm::pod::mlx5_wqe_av& av = driver::Ah::From(ah)->dp.av;
  EXPECT_EQ(av.rlid.host(), Lid());
  EXPECT_EQ(av.stat_rate_sl & 0xf, 5);
  EXPECT_EQ(av.grh_gid_fl.host(), 0u);  // no GRH bit

  std::memset(&buf_[2048], 0xee, 40);
  ASSERT_EQ(Post(rx, Recv(21, Local(2048, 40 + 64))), 0);
  for (int i = 0; i < 64; ++i) buf_[i] = uint8_t(0x30 + i);
  ASSERT_EQ(Post(tx, UdSend(22, Local(0, 64), ah, rx->qp_num, 0x1234).Signaled()), 0);
  auto wcs = Poll(2);
  ASSERT_EQ(wcs.size(), 2u);
  for (const ibv_wc& wc : wcs) {
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
    if (wc.wr_id == 21) {
      EXPECT_EQ(wc.src_qp, tx->qp_num);
      EXPECT_FALSE(wc.wc_flags & IBV_WC_GRH);
      EXPECT_EQ(wc.slid, Lid());
      EXPECT_EQ(wc.sl, 5);
    }
  }
  for (int i = 0; i < 40; ++i) EXPECT_EQ(buf_[2048 + i], 0xee) << i;  // the GRH area untouched
  EXPECT_EQ(std::memcmp(&buf_[0], &buf_[2048 + 40], 64), 0);
  EXPECT_EQ(v::destroy_ah(ah), 0);
}

}  // namespace
}  // namespace onchip::testing
