// Queue pairs on the software ConnectX: ring sizes and reported caps as libmlx5 computes them,
// every modify rule the kernel applies (required and allowed attributes, CUR_STATE, values),
// each transition's command and what the device keeps, query, destroy order and teardown, the
// thread domain's register and the parent domain's allocator.
#include <infiniband/mlx5dv.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "driver/parent_domain.h"
#include "driver/qp.h"
#include "driver/qp_transitions.h"
#include "tests/device/fixture.h"

namespace onchip::testing {
namespace {

class QpTest : public DriverPdCqTest {
 protected:
  ibv_qp_init_attr Attr(ibv_qp_type type) {
    ibv_qp_init_attr a{};
    a.send_cq = cq_;
    a.recv_cq = cq_;
    a.qp_type = type;
    a.cap.max_send_wr = 16;
    a.cap.max_recv_wr = 16;
    a.cap.max_send_sge = 2;
    a.cap.max_recv_sge = 2;
    return a;
  }
  ibv_qp* Create(ibv_qp_type type) {
    ibv_qp_init_attr a = Attr(type);
    ibv_qp* qp = v::create_qp(pd_, &a);
    EXPECT_NE(qp, nullptr) << strerror(errno);
    return qp;
  }
  uint64_t Commands() const { return sim_->counters().commands; }

  // The transitions to RTS with the attributes each requires.
  void ToInit(ibv_qp* qp) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.pkey_index = 0;
    int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    if (qp->qp_type == IBV_QPT_UD) {
      a.qkey = 0x11111111;
      mask |= IBV_QP_QKEY;
    } else {
      a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
      mask |= IBV_QP_ACCESS_FLAGS;
    }
    ASSERT_EQ(v::modify_qp(qp, &a, mask), 0);
  }
  ibv_qp_attr RtrAttr(uint32_t dest) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = dest;
    a.rq_psn = 0x123;
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.grh.sgid_index = 0;
    a.ah_attr.grh.dgid.raw[10] = 0xff;
    a.ah_attr.grh.dgid.raw[11] = 0xff;
    a.ah_attr.grh.dgid.raw[12] = 10;
    a.ah_attr.grh.dgid.raw[15] = 1;
    return a;
  }
  static constexpr int kRcRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  static constexpr int kRcRtsMask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                    IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
  ibv_qp_attr RtsAttr() {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = 0x456;
    a.max_rd_atomic = 4;
    return a;
  }
};

TEST_F(QpTest, RcCapsAreLibmlx5s) {
  ibv_qp_init_attr a = Attr(IBV_QPT_RC);
  a.cap.max_inline_data = 64;
  ibv_qp* qp = v::create_qp(pd_, &a);
  ASSERT_NE(qp, nullptr) << strerror(errno);
  // RC: ctrl 16 + max(raddr + atomic, bind 176) = 192, + 2 SGEs = 224, inline 192 + 80 = 272
  // -> 320-byte WQEs; ring roundup_pow2(16 * 320) = 8192 bytes: 128 basic blocks, 25 WRs.
  const driver::Qp* q = driver::Qp::From(qp);
  EXPECT_EQ(q->sq.wqe_cnt, 128u);
  EXPECT_EQ(a.cap.max_send_wr, 25u);
  EXPECT_EQ(a.cap.max_inline_data, 320u - 192 - 4);
  // Receive: 32-byte strides, 16 of them = 512 bytes.
  EXPECT_EQ(q->rq.wqe_cnt, 16u);
  EXPECT_EQ(q->rq.wqe_shift, 5u);
  EXPECT_EQ(a.cap.max_recv_wr, 16u);
  EXPECT_EQ(a.cap.max_recv_sge, 2u);
  EXPECT_EQ(q->rq.start, static_cast<std::byte*>(q->buffer.data()));
  EXPECT_EQ(q->sq.start, q->rq.start + 512);
  EXPECT_EQ(qp->state, IBV_QPS_RESET);
  EXPECT_EQ(qp->qp_type, IBV_QPT_RC);
  EXPECT_EQ(qp->pd, pd_);
  EXPECT_EQ(qp->send_cq, cq_);
  EXPECT_EQ(qp->context, verbs_);
  EXPECT_EQ(sim_->counters().qps, 1u);
  // Without a thread domain the QP rings the shared, locked register.
  EXPECT_TRUE(q->bf->need_lock);
  EXPECT_EQ(v::destroy_qp(qp), 0);
  EXPECT_EQ(sim_->counters().qps, 0u);
}

TEST_F(QpTest, UdCapsAndNoReceiveRingWithAnSrq) {
  ibv_qp_init_attr a = Attr(IBV_QPT_UD);
  ibv_qp* qp = v::create_qp(pd_, &a);
  ASSERT_NE(qp, nullptr) << strerror(errno);
  // UD: ctrl 16 + datagram 48 + 2 SGEs = 96 -> 128-byte WQEs; 16 * 128 = 2048 bytes.
  EXPECT_EQ(driver::Qp::From(qp)->sq.wqe_cnt, 32u);
  EXPECT_EQ(a.cap.max_send_wr, 16u);
  EXPECT_EQ(a.cap.max_inline_data, 128u - 64 - 4);
  EXPECT_EQ(v::destroy_qp(qp), 0);
}

TEST_F(QpTest, CreateChecks) {
  const auto before = Commands();
  ibv_qp_init_attr a = Attr(IBV_QPT_DRIVER);
  errno = 0;
  EXPECT_EQ(v::create_qp(pd_, &a), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  // An XRC receive QP has an XRC domain, not a PD (ibv_create_qp_ex with IBV_QP_INIT_ATTR_XRCD).
  a = Attr(IBV_QPT_XRC_RECV);
  errno = 0;
  EXPECT_EQ(v::create_qp(pd_, &a), nullptr);
  EXPECT_EQ(errno, EINVAL);
  a = Attr(IBV_QPT_RC);
  a.send_cq = nullptr;
  errno = 0;
  EXPECT_EQ(v::create_qp(pd_, &a), nullptr);
  EXPECT_EQ(errno, EINVAL);
  for (auto edit : {+[](ibv_qp_init_attr& x) { x.cap.max_send_wr = 0xffffffff; },
                    +[](ibv_qp_init_attr& x) { x.cap.max_recv_wr = 0xffffffff; },
                    +[](ibv_qp_init_attr& x) { x.cap.max_send_sge = 0xffff; },
                    +[](ibv_qp_init_attr& x) { x.cap.max_recv_sge = 0xffff; },
                    +[](ibv_qp_init_attr& x) { x.cap.max_inline_data = 4096; }}) {
    a = Attr(IBV_QPT_RC);
    edit(a);
    errno = 0;
    EXPECT_EQ(v::create_qp(pd_, &a), nullptr);
    EXPECT_EQ(errno, EINVAL);
  }
  // ibv_create_qp_ex: unknown comp_mask bits, features it lacks, send ops the type cannot post.
  ibv_qp_init_attr_ex ex{};
  ex.qp_type = IBV_QPT_UD;
  ex.send_cq = ex.recv_cq = cq_;
  ex.cap.max_send_wr = ex.cap.max_recv_wr = 4;
  ex.pd = pd_;
  ex.comp_mask = IBV_QP_INIT_ATTR_PD | (1u << 20);
  errno = 0;
  EXPECT_EQ(v::create_qp_ex(verbs_, &ex), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // The domain's handle goes where the PD's would: only an XRC receive QP takes one.
  ex.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD;
  errno = 0;
  EXPECT_EQ(v::create_qp_ex(verbs_, &ex), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ex.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  ex.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;
  errno = 0;
  EXPECT_EQ(v::create_qp_ex(verbs_, &ex), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  ex.comp_mask = 0;
  errno = 0;
  EXPECT_EQ(v::create_qp_ex(verbs_, &ex), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(Commands(), before);
}

TEST_F(QpTest, ExtendedQpFillsTheWrApi) {
  ibv_qp_init_attr_ex ex{};
  ex.qp_type = IBV_QPT_RC;
  ex.send_cq = ex.recv_cq = cq_;
  ex.cap.max_send_wr = ex.cap.max_recv_wr = 4;
  ex.cap.max_send_sge = ex.cap.max_recv_sge = 1;
  ex.pd = pd_;
  ex.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  ex.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND;
  ibv_qp* qp = v::create_qp_ex(verbs_, &ex);
  ASSERT_NE(qp, nullptr) << strerror(errno);
  ibv_qp_ex* qpx = ibv_qp_to_qp_ex(qp);  // reads verbs_qp.comp_mask
  ASSERT_NE(qpx, nullptr);
  EXPECT_NE(qpx->wr_start, nullptr);
  EXPECT_NE(qpx->wr_rdma_write, nullptr);
  EXPECT_NE(qpx->wr_complete, nullptr);
  EXPECT_EQ(v::destroy_qp(qp), 0);
}

// perftest's latency tests: an extended RC QP for RDMA READ only, one send WR. Its ring holds one
// 64-byte WQE (no room kept for a UMR it cannot post), and a bind posted on it anyway is EINVAL.
TEST_F(QpTest, AnExtendedQpWithoutBindHasNoUmrRoom) {
  ibv_qp_init_attr_ex ex{};
  ex.qp_type = IBV_QPT_RC;
  ex.send_cq = ex.recv_cq = cq_;
  ex.cap.max_send_wr = 1;
  ex.cap.max_recv_wr = 1;
  ex.cap.max_send_sge = ex.cap.max_recv_sge = 1;
  ex.pd = pd_;
  ex.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  ex.send_ops_flags = IBV_QP_EX_WITH_RDMA_READ;
  ibv_qp* qp = v::create_qp_ex(verbs_, &ex);
  ASSERT_NE(qp, nullptr) << strerror(errno);
  EXPECT_EQ(driver::Qp::From(qp)->sq.wqe_cnt, 1u);
  ToInit(qp);
  ibv_qp_attr rtr = RtrAttr(0x42);
  ASSERT_EQ(v::modify_qp(qp, &rtr, kRcRtrMask), 0);
  ibv_qp_attr rts = RtsAttr();
  ASSERT_EQ(v::modify_qp(qp, &rts, kRcRtsMask), 0);
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_BIND_MW;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(driver::rings::PostSend(qp, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
  EXPECT_EQ(v::destroy_qp(qp), 0);
}

TEST_F(QpTest, RcToRtsAndQuery) {
  ibv_qp* qp = Create(IBV_QPT_RC);
  ASSERT_NE(qp, nullptr);
  ToInit(qp);
  EXPECT_EQ(qp->state, IBV_QPS_INIT);
  ibv_qp_attr rtr = RtrAttr(0x42);
  ASSERT_EQ(v::modify_qp(qp, &rtr, kRcRtrMask), 0);
  ibv_qp_attr rts = RtsAttr();
  ASSERT_EQ(v::modify_qp(qp, &rts, kRcRtsMask), 0);
  EXPECT_EQ(qp->state, IBV_QPS_RTS);

  ibv_qp_attr q{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(v::query_qp(qp, &q, IBV_QP_STATE, &init), 0);
  EXPECT_EQ(q.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(q.path_mtu, IBV_MTU_1024);
  EXPECT_EQ(q.dest_qp_num, 0x42u);
  EXPECT_EQ(q.rq_psn, 0x123u);
  EXPECT_EQ(q.sq_psn, 0x456u);
  EXPECT_EQ(q.max_dest_rd_atomic, 4);
  EXPECT_EQ(q.max_rd_atomic, 4);
  EXPECT_EQ(q.min_rnr_timer, 12);
  EXPECT_EQ(q.timeout, 14);
  EXPECT_EQ(q.retry_cnt, 7);
  EXPECT_EQ(q.rnr_retry, 7);
  EXPECT_EQ(q.port_num, 1);
  EXPECT_EQ(q.qp_access_flags, unsigned(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ));
  EXPECT_EQ(q.ah_attr.is_global, 1);
  EXPECT_EQ(q.ah_attr.grh.hop_limit, 64);
  EXPECT_EQ(0, std::memcmp(q.ah_attr.grh.dgid.raw, rtr.ah_attr.grh.dgid.raw, 16));
  EXPECT_EQ(init.qp_type, IBV_QPT_RC);
  EXPECT_EQ(init.send_cq, cq_);
  EXPECT_EQ(init.cap.max_send_sge, 2u);
  EXPECT_EQ(q.cap.max_recv_wr, 16u);

  // RTS -> RTS with an allowed optional attribute; to ERR and back to RESET.
  ibv_qp_attr again{};
  again.qp_state = IBV_QPS_RTS;
  again.min_rnr_timer = 3;
  EXPECT_EQ(v::modify_qp(qp, &again, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER), 0);
  ASSERT_EQ(v::query_qp(qp, &q, IBV_QP_STATE, &init), 0);
  EXPECT_EQ(q.min_rnr_timer, 3);
  ibv_qp_attr err{};
  err.qp_state = IBV_QPS_ERR;
  EXPECT_EQ(v::modify_qp(qp, &err, IBV_QP_STATE), 0);
  ASSERT_EQ(v::query_qp(qp, &q, IBV_QP_STATE, &init), 0);
  EXPECT_EQ(q.qp_state, IBV_QPS_ERR);
  ibv_qp_attr reset{};
  reset.qp_state = IBV_QPS_RESET;
  EXPECT_EQ(v::modify_qp(qp, &reset, IBV_QP_STATE), 0);
  ASSERT_EQ(v::query_qp(qp, &q, IBV_QP_STATE, &init), 0);
  EXPECT_EQ(q.qp_state, IBV_QPS_RESET);
  // RESET -> RESET: nothing to tell the device.
  const auto before = Commands();
  EXPECT_EQ(v::modify_qp(qp, &reset, IBV_QP_STATE), 0);
  EXPECT_EQ(Commands(), before);
  // And the QP starts over.
  ToInit(qp);
  EXPECT_EQ(v::destroy_qp(qp), 0);
}

TEST_F(QpTest, UdToRts) {
  ibv_qp* qp = Create(IBV_QPT_UD);
  ASSERT_NE(qp, nullptr);
  ToInit(qp);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  ASSERT_EQ(v::modify_qp(qp, &a, IBV_QP_STATE), 0);
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 7;
  ASSERT_EQ(v::modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
  ibv_qp_attr q{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(v::query_qp(qp, &q, IBV_QP_STATE, &init), 0);
  EXPECT_EQ(q.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(q.qkey, 0x11111111u);
  EXPECT_EQ(q.sq_psn, 7u);
  EXPECT_EQ(q.path_mtu, IBV_MTU_4096);  // UD QPs always carry 4096
  // RTS -> RTS may change the Q_Key.
  a.qkey = 0x22;
  ASSERT_EQ(v::modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_QKEY), 0);
  ASSERT_EQ(v::query_qp(qp, &q, IBV_QP_STATE, &init), 0);
  EXPECT_EQ(q.qkey, 0x22u);
  EXPECT_EQ(v::destroy_qp(qp), 0);
}

TEST_F(QpTest, ModifyRulesRefuseBeforeTheDevice) {
  ibv_qp* rc = Create(IBV_QPT_RC);
  ibv_qp* ud = Create(IBV_QPT_UD);
  ASSERT_TRUE(rc && ud);
  const auto before = Commands();
  auto refused = [&](ibv_qp* qp, ibv_qp_attr a, int mask, int e) {
    EXPECT_EQ(v::modify_qp(qp, &a, mask), e) << std::hex << mask;
  };
  ibv_qp_attr init{};
  init.qp_state = IBV_QPS_INIT;
  init.port_num = 1;
  // A required attribute missing (RC needs ACCESS_FLAGS, UD needs QKEY).
  refused(rc, init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT, EINVAL);
  refused(ud, init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT, EINVAL);
  // One not allowed for the transition or the transport.
  refused(rc, init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS | IBV_QP_SQ_PSN, EINVAL);
  refused(ud, init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY | IBV_QP_ACCESS_FLAGS, EINVAL);
  // CUR_STATE only from RTR, RTS, SQD, SQE.
  ibv_qp_attr cur = init;
  cur.cur_qp_state = IBV_QPS_RESET;
  refused(rc, cur, IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, EINVAL);
  // Transitions that do not exist.
  ibv_qp_attr rts{};
  rts.qp_state = IBV_QPS_RTS;
  refused(rc, rts, IBV_QP_STATE, EINVAL);
  // Values: port 0 or 2, a P_Key index RoCE does not have.
  ibv_qp_attr bad = init;
  bad.port_num = 2;
  refused(rc, bad, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, EINVAL);
  bad = init;
  bad.pkey_index = 1;
  refused(rc, bad, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, EINVAL);
  EXPECT_EQ(Commands(), before);

  ToInit(rc);
  const auto at_init = Commands();
  ibv_qp_attr rtr = RtrAttr(1);
  refused(rc, rtr, kRcRtrMask & ~IBV_QP_MIN_RNR_TIMER, EINVAL);
  ibv_qp_attr mtu = rtr;
  mtu.path_mtu = static_cast<ibv_mtu>(0);
  refused(rc, mtu, kRcRtrMask, EINVAL);
  ibv_qp_attr local = rtr;
  local.ah_attr.is_global = 0;  // RoCE needs a GRH
  refused(rc, local, kRcRtrMask, EINVAL);
  ibv_qp_attr deep = rtr;
  deep.max_dest_rd_atomic = 255;
  refused(rc, deep, kRcRtrMask, EINVAL);
  ibv_qp_attr alt = rtr;
  refused(rc, alt, kRcRtrMask | IBV_QP_ALT_PATH, EOPNOTSUPP);
  // The source GID: past the table EINVAL, an empty entry ENODATA (the kernel's
  // rdma_get_gid_attr answers).
  ibv_qp_attr past = rtr;
  past.ah_attr.grh.sgid_index = static_cast<uint8_t>(device().gid_table().size());
  refused(rc, past, kRcRtrMask, EINVAL);
  ibv_qp_attr empty = rtr;
  empty.ah_attr.grh.sgid_index = 4;
  ASSERT_FALSE(device().gid_table().populated(4));
  refused(rc, empty, kRcRtrMask, ENODATA);
  EXPECT_EQ(Commands(), at_init);
  EXPECT_EQ(rc->state, IBV_QPS_INIT);
  ASSERT_EQ(v::modify_qp(rc, &rtr, kRcRtrMask), 0);
  ibv_qp_attr ts = RtsAttr();
  ASSERT_EQ(v::modify_qp(rc, &ts, kRcRtsMask), 0);
  // mlx5 has no command for RTS -> SQD although the verbs table allows it.
  ibv_qp_attr sqd{};
  sqd.qp_state = IBV_QPS_SQD;
  const auto at_rts = Commands();
  refused(rc, sqd, IBV_QP_STATE, EINVAL);
  EXPECT_EQ(Commands(), at_rts);
  // CUR_STATE is allowed from RTS; the device answers for the state it really has.
  ibv_qp_attr lie{};
  lie.qp_state = IBV_QPS_RTS;
  lie.cur_qp_state = IBV_QPS_SQD;
  refused(rc, lie, IBV_QP_STATE | IBV_QP_CUR_STATE, EINVAL);
  EXPECT_EQ(rc->state, IBV_QPS_RTS);
  EXPECT_EQ(v::destroy_qp(rc), 0);
  EXPECT_EQ(v::destroy_qp(ud), 0);
}

TEST_F(QpTest, FirmwareRefusalsLeaveNothingAndChangeNothing) {
  sim_->firmware().InjectFailure({.count = 1, .opcode = prm::CREATE_QP});
  ibv_qp_init_attr a = Attr(IBV_QPT_RC);
  errno = 0;
  EXPECT_EQ(v::create_qp(pd_, &a), nullptr);
  EXPECT_NE(errno, 0);
  EXPECT_EQ(sim_->counters().qps, 0u);
  // The pins a failed creation took are gone: the CQ and PD are not busy (TearDown frees them).
  ibv_qp* qp = Create(IBV_QPT_RC);
  ASSERT_NE(qp, nullptr);
  sim_->firmware().InjectFailure({.count = 1, .opcode = prm::RST2INIT_QP});
  ibv_qp_attr init{};
  init.qp_state = IBV_QPS_INIT;
  init.port_num = 1;
  EXPECT_NE(v::modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
  EXPECT_EQ(qp->state, IBV_QPS_RESET);
  ToInit(qp);  // and it still works
  sim_->firmware().InjectFailure({.count = 1, .opcode = prm::DESTROY_QP});
  EXPECT_NE(v::destroy_qp(qp), 0);  // a failed destroy keeps the QP
  EXPECT_EQ(sim_->counters().qps, 1u);
  EXPECT_EQ(v::destroy_qp(qp), 0);
}

TEST_F(QpTest, AQpPinsItsCqAndPd) {
  ibv_qp* qp = Create(IBV_QPT_RC);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(v::destroy_cq(cq_), EBUSY);
  EXPECT_EQ(v::dealloc_pd(pd_), EBUSY);
  EXPECT_EQ(v::destroy_qp(qp), 0);
}

TEST_F(QpTest, ThreadDomainQpIsLockFree) {
  ibv_td_init_attr tattr{};
  ibv_td* td = v::alloc_td(verbs_, &tattr);
  ASSERT_NE(td, nullptr);
  ibv_parent_domain_init_attr pattr{};
  pattr.pd = pd_;
  pattr.td = td;
  ibv_pd* pad = v::alloc_parent_domain(verbs_, &pattr);
  ASSERT_NE(pad, nullptr);
  ibv_qp_init_attr a = Attr(IBV_QPT_RC);
  ibv_qp* qp = v::create_qp(pad, &a);
  ASSERT_NE(qp, nullptr) << strerror(errno);
  EXPECT_EQ(driver::Qp::From(qp)->bf, driver::Td::From(td)->bf);
  EXPECT_FALSE(driver::Qp::From(qp)->bf->need_lock);
  EXPECT_EQ(qp->pd, pad);
  EXPECT_EQ(v::dealloc_pd(pad), EBUSY);
  EXPECT_EQ(v::destroy_qp(qp), 0);
  EXPECT_EQ(v::dealloc_pd(pad), 0);
  EXPECT_EQ(v::dealloc_td(td), 0);
}

TEST_F(QpTest, ParentDomainAllocatorSeesTheQpAndDbrTypes) {
  RecordingAllocator r;
  ibv_pd* pad = r.ParentDomain(verbs_, pd_);
  ASSERT_NE(pad, nullptr);
  ibv_qp_init_attr a = Attr(IBV_QPT_RC);
  ibv_qp* qp = v::create_qp(pad, &a);
  ASSERT_NE(qp, nullptr) << strerror(errno);
  EXPECT_EQ(r.allocs, (std::vector<uint64_t>{MLX5DV_RES_TYPE_QP, MLX5DV_RES_TYPE_DBR}));
  ToInit(qp);
  EXPECT_EQ(v::destroy_qp(qp), 0);
  EXPECT_EQ(r.frees.size(), 2u);
  EXPECT_EQ(v::dealloc_pd(pad), 0);
}

TEST_F(QpTest, CloseReleasesQpsBeforeCqs) {
  ibv_qp* qp = Create(IBV_QPT_RC);
  ASSERT_NE(qp, nullptr);
  const auto report = ctx_->Close();
  EXPECT_FALSE(report.first_error) << report.describe();
  EXPECT_EQ(report.of(driver::ObjectKind::kQp), 1u);
  EXPECT_EQ(report.of(driver::ObjectKind::kCq), 1u);
  EXPECT_EQ(report.of(driver::ObjectKind::kPd), 1u);
  EXPECT_EQ(sim_->counters().qps, 0u);
  EXPECT_EQ(v::destroy_qp(qp), 0);
  EXPECT_EQ(v::destroy_cq(cq_), 0);
  EXPECT_EQ(v::dealloc_pd(pd_), 0);
  ctx_.reset();
}

}  // namespace
}  // namespace onchip::testing
