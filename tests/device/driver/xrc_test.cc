// XRC through the driver on the software ConnectX: XRC domains (ibv_open_xrcd's file sharing,
// its checks and errnos), XRC SRQs (what they pin, their number, the limit), and traffic from an
// XRC send QP to an XRC receive QP into the domain's XRC SRQ: SEND (post_send and the ibv_wr_*
// API with wr_set_xrc_srqn), RDMA WRITE and READ, both atomics, an rkey checked against the SRQ's
// PD, and a message naming an SRQ that is not the target's (no such SRQ, another domain's): the
// requester's REM_INV_REQ_ERR and both QPs in ERR.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "driver/qp.h"
#include "driver/rings/data_path.h"
#include "driver/srq.h"
#include "driver/xrcd.h"
#include "tests/device/loopback_fixture.h"
#include "tests/device/work_requests.h"
#include "tools/sim/wire.h"
#include "tools/testing/rc_connect.h"

namespace onchip::testing {
namespace {

namespace rings = driver::rings;

class XrcTest : public LoopbackTest {
 protected:
  XrcTest()
      : LoopbackTest(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                     IBV_ACCESS_REMOTE_ATOMIC) {}
  void SetUp() override {
    LoopbackTest::SetUp();
    xrcd_ = Open(-1, O_CREAT);
    ASSERT_NE(xrcd_, nullptr) << strerror(errno);
  }
  void DestroyTestObjects() override {
    for (ibv_srq* srq : srqs_) EXPECT_EQ(v::destroy_srq(srq), 0);
    if (xrcd_) {
      EXPECT_EQ(v::close_xrcd(xrcd_), 0);
    }
  }

  ibv_xrcd* Open(int fd, int oflags,
                 uint32_t mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS) {
    ibv_xrcd_init_attr a{};
    a.comp_mask = mask;
    a.fd = fd;
    a.oflags = oflags;
    errno = 0;
    return v::open_xrcd(verbs_, &a);
  }
  ibv_srq* XrcSrq(ibv_xrcd* xrcd, uint32_t max_wr = 16) {
    ibv_srq_init_attr_ex a{};
    a.attr.max_wr = max_wr;
    a.attr.max_sge = 1;
    a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
                  IBV_SRQ_INIT_ATTR_CQ;
    a.srq_type = IBV_SRQT_XRC;
    a.pd = pd_;
    a.xrcd = xrcd;
    a.cq = cq_;
    ibv_srq* srq = v::create_srq_ex(verbs_, &a);
    EXPECT_NE(srq, nullptr) << strerror(errno);
    if (srq) srqs_.push_back(srq);
    return srq;
  }
  ibv_qp* RecvQp(ibv_xrcd* xrcd) {
    ibv_qp_init_attr_ex a{};
    a.qp_type = IBV_QPT_XRC_RECV;
    a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
    a.xrcd = xrcd;
    ibv_qp* qp = v::create_qp_ex(verbs_, &a);
    EXPECT_NE(qp, nullptr) << strerror(errno);
    if (qp) qps_.push_back(qp);
    return qp;
  }
  ibv_qp* SendQp(uint64_t send_ops = 0) {
    ibv_qp_init_attr_ex a{};
    a.qp_type = IBV_QPT_XRC_SEND;
    a.comp_mask = IBV_QP_INIT_ATTR_PD;
    a.pd = pd_;
    a.send_cq = cq_;
    a.cap.max_send_wr = 8;
    a.cap.max_send_sge = 1;
    a.sq_sig_all = 1;
    if (send_ops) {
      a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
      a.send_ops_flags = send_ops;
    }
    ibv_qp* qp = v::create_qp_ex(verbs_, &a);
    EXPECT_NE(qp, nullptr) << strerror(errno);
    if (qp) qps_.push_back(qp);
    return qp;
  }
  // The kernel's XRC masks (ConnectXrc): the send side takes RC's RTS set but no responder
  // resources at RTR; the receive side RC's RTR set and only the timeout at RTS.
  void Connect(ibv_qp* qp, uint32_t dest, bool receive_side) {
    const RcPath path{.dgid = gid_,
                      .sq_psn = 0x100,
                      .rq_psn = 0x100,
                      .access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                IBV_ACCESS_REMOTE_ATOMIC};
    const RcConnectResult r = ConnectXrc(qp, dest, receive_side, path);
    ASSERT_TRUE(r) << r.describe();
  }
  // A connected pair: `send` -> `recv` (and back, as pyverbs connects them).
  void Pair(ibv_qp** send, ibv_qp** recv, uint64_t send_ops = 0) {
    *recv = RecvQp(xrcd_);
    *send = SendQp(send_ops);
    ASSERT_TRUE(*recv && *send);
    Connect(*recv, (*send)->qp_num, true);
    Connect(*send, (*recv)->qp_num, false);
  }
  ibv_qp_state State(ibv_qp* qp) {
    ibv_qp_attr a{};
    ibv_qp_init_attr init{};
    EXPECT_EQ(v::query_qp(qp, &a, IBV_QP_STATE, &init), 0);
    return a.qp_state;
  }

  ibv_xrcd* xrcd_ = nullptr;
  std::vector<ibv_srq*> srqs_;
};

TEST_F(XrcTest, DomainsShareAFileAndCheckLikeLibibverbs) {
  EXPECT_EQ(sim_->counters().xrcds, 1u);
  char path[] = "/tmp/onchip-xrcd-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  // The file has no domain yet: O_CREAT makes it, without it EAGAIN (ib_uverbs_open_xrcd).
  EXPECT_EQ(Open(fd, 0), nullptr);
  EXPECT_EQ(errno, EAGAIN);
  ibv_xrcd* a = Open(fd, O_CREAT);
  ASSERT_NE(a, nullptr) << strerror(errno);
  EXPECT_EQ(sim_->counters().xrcds, 2u);
  // A second open of the same file is the same domain; O_EXCL refuses it.
  const int fd2 = dup(fd);
  ibv_xrcd* b = Open(fd2, 0);
  EXPECT_EQ(b, a);
  EXPECT_EQ(sim_->counters().xrcds, 2u);
  EXPECT_EQ(Open(fd, O_CREAT | O_EXCL), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // libibverbs' comp_mask rules, and a bad fd.
  const auto commands = sim_->counters().commands;
  EXPECT_EQ(Open(-1, O_CREAT, IBV_XRCD_INIT_ATTR_FD), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(Open(-1, O_CREAT, IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS |
                                  IBV_XRCD_INIT_ATTR_RESERVED),
            nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_EQ(Open(9999, O_CREAT), nullptr);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(sim_->counters().commands, commands);  // none reached the device
  // fd -1: a domain of its own, with or without O_CREAT.
  ibv_xrcd* own = Open(-1, 0);
  ASSERT_NE(own, nullptr) << strerror(errno);
  EXPECT_NE(own, a);
  EXPECT_EQ(sim_->counters().xrcds, 3u);
  EXPECT_EQ(v::close_xrcd(own), 0);
  // Each open counts; the last close frees the domain, the next open makes a new one.
  EXPECT_EQ(v::close_xrcd(b), 0);
  EXPECT_EQ(sim_->counters().xrcds, 2u);
  EXPECT_EQ(v::close_xrcd(a), 0);
  EXPECT_EQ(sim_->counters().xrcds, 1u);
  ibv_xrcd* c = Open(fd, O_CREAT);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(v::close_xrcd(c), 0);
  close(fd2);
  close(fd);
}

TEST_F(XrcTest, XrcSrqPinsItsDomainAndCq) {
  ibv_srq* srq = XrcSrq(xrcd_);
  ASSERT_NE(srq, nullptr);
  uint32_t n = 0;
  ASSERT_EQ(v::get_srq_num(srq, &n), 0);
  EXPECT_EQ(n, driver::Srq::From(srq)->srqn);
  EXPECT_EQ(driver::Srq::From(srq)->dp.verbs.srq_type, IBV_SRQT_XRC);
  EXPECT_EQ(v::close_xrcd(xrcd_), EBUSY);
  EXPECT_EQ(v::destroy_cq(cq_), EBUSY);
  // The limit goes through ARM_XRC_SRQ and comes back through QUERY_XRC_SRQ.
  ibv_srq_attr attr{};
  attr.srq_limit = 3;
  ASSERT_EQ(v::modify_srq(srq, &attr, IBV_SRQ_LIMIT), 0);
  ibv_srq_attr q{};
  ASSERT_EQ(v::query_srq(srq, &q), 0);
  EXPECT_EQ(q.srq_limit, 3u);
  // A receive QP pins the domain too.
  ibv_qp* recv = RecvQp(xrcd_);
  ASSERT_NE(recv, nullptr);
  EXPECT_EQ(recv->pd, nullptr);
  EXPECT_EQ(recv->qp_type, IBV_QPT_XRC_RECV);
  ASSERT_EQ(v::destroy_srq(srq), 0);
  srqs_.clear();
  EXPECT_EQ(v::close_xrcd(xrcd_), EBUSY);
  ASSERT_EQ(v::destroy_qp(recv), 0);
  qps_.clear();
}

TEST_F(XrcTest, SendIntoTheNamedSrqThroughPostSendAndTheWrApi) {
  ibv_srq* srq = XrcSrq(xrcd_);
  ibv_qp *send = nullptr, *recv = nullptr;
  Pair(&send, &recv, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM);
  ASSERT_TRUE(srq && send && recv);
  uint32_t srqn = 0;
  ASSERT_EQ(v::get_srq_num(srq, &srqn), 0);
  ASSERT_EQ(Post(srq, Recv(70, Local(4096, 64))), 0);
  ASSERT_EQ(Post(srq, Recv(71, Local(4096 + 64, 64))), 0);
  for (int i = 0; i < 64; ++i) buf_[i] = uint8_t(i + 1);
  ASSERT_EQ(Post(send, Send(9, Local(0, 64)).ToXrcSrq(srqn)), 0);
  auto wcs = Poll(2);
  ASSERT_EQ(wcs.size(), 2u);
  for (const ibv_wc& wc : wcs) {
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
    if (wc.wr_id == 70) {
      EXPECT_EQ(wc.opcode, IBV_WC_RECV);
      EXPECT_EQ(wc.qp_num, recv->qp_num);  // the target QP, the SRQ's WQE
      EXPECT_EQ(wc.byte_len, 64u);
    } else {
      EXPECT_EQ(wc.wr_id, 9u);
      EXPECT_EQ(wc.opcode, IBV_WC_SEND);
      EXPECT_EQ(wc.qp_num, send->qp_num);
    }
  }
  EXPECT_EQ(std::memcmp(&buf_[4096], &buf_[0], 64), 0);

  // The same through ibv_wr_*: the WQE waits for both wr_set_xrc_srqn and its data.
  ibv_qp_ex* qx = &driver::Qp::From(send)->dp.verbs.qp_ex;
  ASSERT_NE(qx->wr_set_xrc_srqn, nullptr);
  qx->wr_start(qx);
  qx->wr_id = 10;
  qx->wr_flags = IBV_SEND_SIGNALED;
  qx->wr_send_imm(qx, htobe32(0x1234));
  qx->wr_set_sge(qx, mr_->lkey, reinterpret_cast<uintptr_t>(&buf_[0]), 32);
  qx->wr_set_xrc_srqn(qx, srqn);
  ASSERT_EQ(qx->wr_complete(qx), 0);
  wcs = Poll(2);
  ASSERT_EQ(wcs.size(), 2u);
  for (const ibv_wc& wc : wcs) {
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
    if (wc.wr_id == 71) {
      EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
      EXPECT_EQ(wc.imm_data, htobe32(0x1234));
      EXPECT_EQ(wc.byte_len, 32u);
    }
  }
  // A request missing its srqn never completes.
  qx->wr_start(qx);
  qx->wr_send(qx);
  qx->wr_set_sge(qx, mr_->lkey, reinterpret_cast<uintptr_t>(&buf_[0]), 8);
  EXPECT_EQ(qx->wr_complete(qx), EINVAL);
}

// The target has no CQ: a receive completion left when it is destroyed is still the SRQ's, even
// once its number is another QP's.
TEST_F(XrcTest, ReceiveCompletionOutlivesItsTargetQp) {
  ibv_srq* srq = XrcSrq(xrcd_);  // completes on cq_
  ibv_cq* send_cq = v::create_cq(verbs_, 8, nullptr, 0);
  ASSERT_TRUE(srq && send_cq);
  ibv_qp* recv = RecvQp(xrcd_);
  ibv_qp_init_attr_ex a{};
  a.qp_type = IBV_QPT_XRC_SEND;
  a.comp_mask = IBV_QP_INIT_ATTR_PD;
  a.pd = pd_;
  a.send_cq = send_cq;
  a.cap.max_send_wr = 4;
  a.cap.max_send_sge = 1;
  a.sq_sig_all = 1;
  ibv_qp* send = v::create_qp_ex(verbs_, &a);
  ASSERT_TRUE(recv && send) << strerror(errno);
  Connect(recv, send->qp_num, true);
  Connect(send, recv->qp_num, false);
  uint32_t srqn = 0;
  ASSERT_EQ(v::get_srq_num(srq, &srqn), 0);
  ASSERT_EQ(Post(srq, Recv(90, Local(4096, 64))), 0);
  ASSERT_EQ(Post(send, Send(12, Local(0, 16)).ToXrcSrq(srqn)), 0);
  // The acknowledgement follows the receive completion: once the send completed, the receive
  // CQE is in cq_. Then the target goes, unpolled.
  ibv_wc swc{};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  int got = 0;
  while (got == 0 && std::chrono::steady_clock::now() < deadline) got = rings::PollCq(send_cq, 1, &swc);
  ASSERT_EQ(got, 1);
  EXPECT_EQ(swc.status, IBV_WC_SUCCESS);
  const uint32_t recv_qpn = recv->qp_num;
  qps_.erase(std::find(qps_.begin(), qps_.end(), recv));
  ASSERT_EQ(v::destroy_qp(recv), 0);
  // The device hands the number to the next QP: an RC QP with a receive posted. The completion
  // still belongs to the XRC SRQ (its user index says so), not to this QP's receive queue.
  ibv_qp_init_attr ra = QpInitAttr(IBV_QPT_RC, cq_);
  ra.cap.max_send_wr = ra.cap.max_recv_wr = 4;
  ibv_qp* reuse = v::create_qp(pd_, &ra);
  ASSERT_NE(reuse, nullptr) << strerror(errno);
  qps_.push_back(reuse);
  EXPECT_EQ(reuse->qp_num, recv_qpn);
  ibv_qp_attr init{};
  init.qp_state = IBV_QPS_INIT;
  init.port_num = 1;
  ASSERT_EQ(v::modify_qp(reuse, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
  ASSERT_EQ(Post(reuse, Recv(91, Local(6000, 16))), 0);
  auto wcs = Poll(1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wcs[0].wr_id, 90u);
  EXPECT_EQ(wcs[0].qp_num, recv_qpn);
  EXPECT_EQ(wcs[0].byte_len, 16u);
  EXPECT_EQ(v::destroy_qp(send), 0);
  EXPECT_EQ(v::destroy_cq(send_cq), 0);
}

TEST_F(XrcTest, RdmaAndAtomicsReachTheSrqsPd) {
  ibv_srq* srq = XrcSrq(xrcd_);
  ibv_qp *send = nullptr, *recv = nullptr;
  Pair(&send, &recv);
  ASSERT_TRUE(srq && send && recv);
  uint32_t srqn = 0;
  ASSERT_EQ(v::get_srq_num(srq, &srqn), 0);

  // WRITE buf_[0..32) to buf_[2048..).
  for (int i = 0; i < 32; ++i) buf_[i] = uint8_t(0xa0 + i);
  ASSERT_EQ(Post(send, RdmaWrite(1, Local(0, 32), Remote(2048)).ToXrcSrq(srqn)), 0);
  auto wcs = Poll(1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << ibv_wc_status_str(wcs[0].status);
  EXPECT_EQ(std::memcmp(&buf_[2048], &buf_[0], 32), 0);

  // READ buf_[2048..) back into buf_[3072..).
  ASSERT_EQ(Post(send, RdmaRead(2, Local(3072, 32), Remote(2048)).ToXrcSrq(srqn)), 0);
  wcs = Poll(1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << ibv_wc_status_str(wcs[0].status);
  EXPECT_EQ(wcs[0].opcode, IBV_WC_RDMA_READ);
  EXPECT_EQ(std::memcmp(&buf_[3072], &buf_[0], 32), 0);

  // FETCH_ADD then CMP_SWP on the 8 bytes at buf_[1024]; the value before lands at buf_[1536].
  uint64_t word = 5;
  std::memcpy(&buf_[1024], &word, 8);
  ASSERT_EQ(Post(send, FetchAdd(3, Local(1536, 8), Remote(1024), 2).ToXrcSrq(srqn)), 0);
  wcs = Poll(1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << ibv_wc_status_str(wcs[0].status);
  EXPECT_EQ(wcs[0].opcode, IBV_WC_FETCH_ADD);
  uint64_t before = 0, now = 0;
  std::memcpy(&before, &buf_[1536], 8);
  std::memcpy(&now, &buf_[1024], 8);
  EXPECT_EQ(before, 5u);
  EXPECT_EQ(now, 7u);
  ASSERT_EQ(Post(send, CmpSwap(4, Local(1536, 8), Remote(1024), 7, 100).ToXrcSrq(srqn)), 0);
  wcs = Poll(1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
  std::memcpy(&now, &buf_[1024], 8);
  EXPECT_EQ(now, 100u);

  // An rkey of another PD than the SRQ's: remote access error, both sides to ERR.
  ibv_pd* other = v::alloc_pd(verbs_);
  std::vector<uint8_t> far(64);
  ibv_mr* mr2 = v::reg_mr(other, far.data(), far.size(), reinterpret_cast<uintptr_t>(far.data()),
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ASSERT_NE(mr2, nullptr);
  const RemoteBuffer far_buffer{reinterpret_cast<uintptr_t>(far.data()), mr2->rkey};
  ASSERT_EQ(Post(send, RdmaWrite(5, Local(0, 8), far_buffer).ToXrcSrq(srqn)), 0);
  wcs = Poll(1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(wcs[0].status);
  EXPECT_EQ(State(send), IBV_QPS_ERR);
  EXPECT_EQ(State(recv), IBV_QPS_ERR);
  EXPECT_EQ(v::dereg_mr(mr2), 0);
  EXPECT_EQ(v::dealloc_pd(other), 0);
}

TEST_F(XrcTest, AnSrqNotTheTargetsIsAnInvalidRequest) {
  // Another domain's XRC SRQ, then no SRQ at all.
  ibv_xrcd* other = Open(-1, O_CREAT);
  ASSERT_NE(other, nullptr);
  ibv_srq* foreign = XrcSrq(other);
  ASSERT_NE(foreign, nullptr);
  uint32_t foreign_n = 0;
  ASSERT_EQ(v::get_srq_num(foreign, &foreign_n), 0);
  ASSERT_EQ(Post(foreign, Recv(80, Local(4096, 64))), 0);
  for (uint32_t srqn : {foreign_n, foreign_n + 77}) {
    ibv_qp *send = nullptr, *recv = nullptr;
    Pair(&send, &recv);
    ASSERT_TRUE(send && recv);
    ASSERT_EQ(Post(send, Send(11, Local(0, 16)).ToXrcSrq(srqn)), 0);
    auto wcs = Poll(1);
    ASSERT_EQ(wcs.size(), 1u) << srqn;
    EXPECT_EQ(wcs[0].wr_id, 11u);
    EXPECT_EQ(wcs[0].status, IBV_WC_REM_INV_REQ_ERR) << ibv_wc_status_str(wcs[0].status);
    EXPECT_EQ(State(send), IBV_QPS_ERR);
    EXPECT_EQ(State(recv), IBV_QPS_ERR);
  }
  // The foreign SRQ's WQE is untouched: nothing else completed.
  EXPECT_TRUE(Poll(1).empty());
  for (ibv_qp* qp : qps_) EXPECT_EQ(v::destroy_qp(qp), 0);
  qps_.clear();
  ASSERT_EQ(v::destroy_srq(foreign), 0);
  srqs_.clear();
  EXPECT_EQ(v::close_xrcd(other), 0);
}

}  // namespace
}  // namespace onchip::testing
