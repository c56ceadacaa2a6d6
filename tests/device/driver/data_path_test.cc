// The driver's objects carrying data on the software ConnectX: two RC QPs on one device
// connected by the device's own RoCE v2 GID, a send into a posted receive, an RDMA write, a
// window of type 1 bound with ibv_bind_mw and written through, a UD send through an AH into an
// SRQ, an armed CQ's completion event in the device's EQ (moderated by count and by period),
// a CQ resized over unpolled completions, and the event thread turning an event into a
// completion channel record. Everything through the verbs calls and the ops the provider installs. The MR is the
// device's first mkey (index 1): its key must not be 0x100, the invalid lkey that ends a receive
// scatter list.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "driver/eq.h"
#include "driver/events.h"
#include "driver/mw.h"
#include "driver/port.h"
#include "driver/qp.h"
#include "driver/rings/data_path.h"
#include "mmio/device_word.h"
#include "tests/device/loopback_fixture.h"
#include "tools/testing/rc_connect.h"
#include "tests/device/ud_ready.h"
#include "tests/device/work_requests.h"
#include "tools/sim/wire.h"
#include "uapi/prm/cqe.h"
#include "uapi/prm/eqe.h"
#include "uapi/prm/opcodes.h"

namespace onchip::testing {
namespace {

namespace rings = driver::rings;

class DataPathTest : public LoopbackTest {
 protected:
  DataPathTest()
      : LoopbackTest(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                     IBV_ACCESS_MW_BIND) {}

  void Connect(ibv_qp* qp, uint32_t dest) {
    // Each side's sq_psn is what the other's rq_psn says.
    const RcPath path{.dgid = gid_, .sq_psn = 0xabc000 + dest, .rq_psn = 0xabc000 + qp->qp_num};
    const RcConnectResult r = ConnectRc(qp, dest, path);
    ASSERT_TRUE(r) << r.describe();
  }
  // Two RC QPs on cq_, each connected to the other.
  void ConnectedPair(ibv_qp** a, ibv_qp** b) {
    *a = Qp(IBV_QPT_RC);
    *b = Qp(IBV_QPT_RC);
    ASSERT_TRUE(*a && *b);
    Connect(*a, (*b)->qp_num);
    Connect(*b, (*a)->qp_num);
  }
};

TEST_F(DataPathTest, SendIntoAPostedReceiveAndRdmaWrite) {
  ibv_qp *a = nullptr, *b = nullptr;
  ASSERT_NO_FATAL_FAILURE(ConnectedPair(&a, &b));

  // b receives into buf_[4096..], a sends buf_[0..64).
  ASSERT_EQ(Post(b, Recv(7, Local(4096, 64))), 0);
  for (int i = 0; i < 64; ++i) buf_[i] = uint8_t(i + 1);
  ASSERT_EQ(Post(a, Send(9, Local(0, 64)).Signaled()), 0);
  auto wcs = Poll(cq_, 2);
  ASSERT_EQ(wcs.size(), 2u);
  for (const ibv_wc& wc : wcs) {
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status) << " wr_id " << wc.wr_id;
    if (wc.wr_id == 7) {
      EXPECT_EQ(wc.opcode, IBV_WC_RECV);
      EXPECT_EQ(wc.byte_len, 64u);
      EXPECT_EQ(wc.qp_num, b->qp_num);
    } else {
      EXPECT_EQ(wc.wr_id, 9u);
      EXPECT_EQ(wc.opcode, IBV_WC_SEND);
      EXPECT_EQ(wc.qp_num, a->qp_num);
    }
  }
  EXPECT_EQ(0, std::memcmp(&buf_[0], &buf_[4096], 64));

  // An RDMA write from a into buf_[6000..] through the MR's rkey.
  ASSERT_EQ(Post(a, RdmaWrite(10, Local(0, 64), Remote(6000)).Signaled()), 0);
  wcs = Poll(cq_, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wcs[0].opcode, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(0, std::memcmp(&buf_[0], &buf_[6000], 64));
}

TEST_F(DataPathTest, AnArmedCqReportsItsNextCompletionOnTheEq) {
  ibv_qp *a = nullptr, *b = nullptr;
  ASSERT_NO_FATAL_FAILURE(ConnectedPair(&a, &b));
  ASSERT_EQ(rings::ReqNotifyCq(cq_, 0), 0);
  ASSERT_EQ(Post(a, RdmaWrite(1, Local(0, 8), Remote(512)).Signaled()), 0);
  ASSERT_EQ(Poll(cq_, 1).size(), 1u);
  // EQE 0 of the completion EQ, written in the device's first pass (owner 0), names the CQ.
  const driver::CompletionEq* eq = device().comp_eq();
  ASSERT_NE(eq, nullptr);
  // The device writes the EQE after the CQE: wait for its owner byte (the handover) first.
  const auto* ring = reinterpret_cast<const prm::pod::mlx5_eqe*>(eq->ring());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while ((mmio::LoadDeviceWord(ring->owner) & 1) != 0 && std::chrono::steady_clock::now() < deadline) {
  }
  prm::pod::mlx5_eqe eqe;
  std::memcpy(&eqe, ring, sizeof eqe);
  EXPECT_EQ(eqe.type, prm::MLX5_EVENT_TYPE_COMP);
  EXPECT_EQ(eqe.owner & 1, 0);
  uint8_t cqn_bytes[4];
  std::memcpy(cqn_bytes, eqe.data + prm::kEqeCompletionCqnOffset, 4);
  const uint32_t cqn = uint32_t{cqn_bytes[1]} << 16 | uint32_t{cqn_bytes[2]} << 8 | cqn_bytes[3];
  EXPECT_EQ(cqn, driver::Cq::From(cq_)->cqn);
}

TEST_F(DataPathTest, ResizeCqKeepsUnpolledCompletionsInOrder) {
  ibv_qp *a = nullptr, *b = nullptr;
  ASSERT_NO_FATAL_FAILURE(ConnectedPair(&a, &b));
  auto write = [&](uint64_t wr_id) {
    return Post(a, RdmaWrite(wr_id, Local(0, 8), Remote(512)).Signaled());
  };
  const driver::Cq* c = driver::Cq::From(cq_);
  // Waits, without polling, until the CQE at `index` of the current ring is software's.
  auto wait_cqe = [&](uint32_t index) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
      const uint8_t op_own =
          std::atomic_ref<uint8_t>(*reinterpret_cast<uint8_t*>(c->cqe(index) + 63))
              .load(std::memory_order_acquire);
      if (prm::CqeOpcodeOf(op_own) != prm::MLX5_CQE_INVALID &&
          prm::CqeOwner(op_own) == prm::CqeOwnerFor(index, c->entries()))
        return true;
      std::this_thread::yield();
    }
    return false;
  };
  EXPECT_EQ(cq_->cqe, 127);
  for (uint64_t id = 1; id <= 5; ++id) ASSERT_EQ(write(id), 0);
  ASSERT_TRUE(wait_cqe(4));

  // Five unpolled completions do not fit 4 entries: EINVAL, the CQ as it was.
  EXPECT_EQ(v::resize_cq(cq_, 3), EINVAL);
  EXPECT_EQ(cq_->cqe, 127);
  EXPECT_EQ(v::resize_cq(cq_, -1), EINVAL);
  EXPECT_EQ(v::resize_cq(cq_, 0), EINVAL);
  EXPECT_EQ(v::resize_cq(cq_, 1 << sim_->config().log_max_cq_sz), EINVAL);
  // The same number of entries: nothing to do, no command.
  const auto before = sim_->counters().commands;
  EXPECT_EQ(v::resize_cq(cq_, 100), 0);
  EXPECT_EQ(sim_->counters().commands, before);

  // Shrink to 8 entries over the five: they move across, later ones land after them.
  const void* old_ring = c->ring.data();
  ASSERT_EQ(v::resize_cq(cq_, 5), 0);
  EXPECT_EQ(cq_->cqe, 7);
  EXPECT_EQ(c->entries(), 8u);
  EXPECT_NE(c->ring.data(), old_ring);
  for (uint64_t id = 6; id <= 7; ++id) ASSERT_EQ(write(id), 0);
  auto wcs = Poll(cq_, 7);
  ASSERT_EQ(wcs.size(), 7u);
  for (std::size_t i = 0; i < wcs.size(); ++i) {
    EXPECT_EQ(wcs[i].status, IBV_WC_SUCCESS) << i;
    EXPECT_EQ(wcs[i].wr_id, i + 1);
    EXPECT_EQ(wcs[i].opcode, IBV_WC_RDMA_WRITE);
  }
  // Past the new ring's first wrap, then grown again with two unpolled: order kept.
  for (uint64_t id = 8; id <= 13; ++id) ASSERT_EQ(write(id), 0);
  wcs = Poll(cq_, 6);
  ASSERT_EQ(wcs.size(), 6u);
  for (uint64_t id = 14; id <= 15; ++id) ASSERT_EQ(write(id), 0);
  ASSERT_TRUE(wait_cqe(c->dp.ring.consumer_index() + 1));
  ASSERT_EQ(v::resize_cq(cq_, 200), 0);
  EXPECT_EQ(cq_->cqe, 255);
  ASSERT_EQ(write(16), 0);
  wcs = Poll(cq_, 3);
  ASSERT_EQ(wcs.size(), 3u);
  for (std::size_t i = 0; i < wcs.size(); ++i) EXPECT_EQ(wcs[i].wr_id, 14 + i);
  ibv_wc extra;
  EXPECT_EQ(rings::PollCq(cq_, 1, &extra), 0);
}

TEST_F(DataPathTest, ModeratedEventsWaitForTheCountOrThePeriod) {
  ibv_qp *a = nullptr, *b = nullptr;
  ASSERT_NO_FATAL_FAILURE(ConnectedPair(&a, &b));
  auto write = [&](uint64_t wr_id) {
    return Post(a, RdmaWrite(wr_id, Local(0, 8), Remote(512)).Signaled());
  };
  const driver::CompletionEq* eq = device().comp_eq();
  ASSERT_NE(eq, nullptr);
  // EQE `i` of the device's first pass has owner 0; the driver set every owner bit to 1.
  auto eqe_written = [&](uint32_t i) {
    const auto* owner = reinterpret_cast<const uint8_t*>(eq->ring() + std::size_t{i} * 64 + 63);
    return (std::atomic_ref<const uint8_t>(*owner).load(std::memory_order_acquire) & 1) == 0;
  };
  auto wait_eqe = [&](uint32_t i) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!eqe_written(i) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    return eqe_written(i);
  };

  // Three completions per event, no period: two completions raise nothing, the third does.
  ibv_modify_cq_attr moderation{};
  moderation.attr_mask = IBV_CQ_ATTR_MODERATE;
  moderation.moderate.cq_count = 3;
  ASSERT_EQ(v::modify_cq(cq_, &moderation), 0);
  ASSERT_EQ(rings::ReqNotifyCq(cq_, 0), 0);
  ASSERT_EQ(write(1), 0);
  ASSERT_EQ(write(2), 0);
  ASSERT_EQ(Poll(cq_, 2).size(), 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(eqe_written(0));
  ASSERT_EQ(write(3), 0);
  ASSERT_EQ(Poll(cq_, 1).size(), 1u);
  EXPECT_TRUE(wait_eqe(0));

  // A count never reached: the period (4 ms after the completion) raises the event.
  moderation.moderate.cq_count = 100;
  moderation.moderate.cq_period = 4000;
  ASSERT_EQ(v::modify_cq(cq_, &moderation), 0);
  rings::CqEvent(cq_);
  ASSERT_EQ(rings::ReqNotifyCq(cq_, 0), 0);
  const auto posted = std::chrono::steady_clock::now();
  ASSERT_EQ(write(4), 0);
  ASSERT_EQ(Poll(cq_, 1).size(), 1u);
  ASSERT_TRUE(wait_eqe(1));
  EXPECT_GE(std::chrono::steady_clock::now() - posted, std::chrono::microseconds(4000));
}

TEST_F(DataPathTest, BindMwType1AndWriteThroughIt) {
  ibv_qp *a = nullptr, *b = nullptr;
  ASSERT_NO_FATAL_FAILURE(ConnectedPair(&a, &b));
  ibv_mw* mw = v::alloc_mw(pd_, IBV_MW_TYPE_1);
  ASSERT_NE(mw, nullptr);
  const uint32_t old_rkey = mw->rkey;
  ibv_mw_bind bind{};
  bind.wr_id = 3;
  bind.send_flags = IBV_SEND_SIGNALED;
  bind.bind_info.mr = mr_;
  bind.bind_info.addr = reinterpret_cast<uintptr_t>(&buf_[1024]);
  bind.bind_info.length = 256;
  bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
  ASSERT_EQ(v::bind_mw(b, mw, &bind), 0);
  EXPECT_EQ(mw->rkey, driver::NextRkey(old_rkey));
  auto wcs = Poll(cq_, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << ibv_wc_status_str(wcs[0].status);
  EXPECT_EQ(wcs[0].opcode, IBV_WC_BIND_MW);

  for (int i = 0; i < 32; ++i) buf_[i] = uint8_t(0xa0 + i);
  // Through the window's rkey, inside the bound range.
  ASSERT_EQ(Post(a, RdmaWrite(4, Local(0, 32), {Addr(1024 + 16), mw->rkey}).Signaled()), 0);
  wcs = Poll(cq_, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << ibv_wc_status_str(wcs[0].status);
  EXPECT_EQ(0, std::memcmp(&buf_[0], &buf_[1024 + 16], 32));
  // A window on another PD's MR: EPERM before any WQE.
  ibv_pd* other = v::alloc_pd(verbs_);
  ibv_mw* foreign = v::alloc_mw(other, IBV_MW_TYPE_1);
  ASSERT_NE(foreign, nullptr);
  EXPECT_EQ(v::bind_mw(b, foreign, &bind), EPERM);
  EXPECT_EQ(v::dealloc_mw(foreign), 0);
  EXPECT_EQ(v::dealloc_pd(other), 0);
  EXPECT_EQ(v::dealloc_mw(mw), 0);
}

TEST_F(DataPathTest, UdSendThroughAnAhIntoAnSrq) {
  ibv_srq_init_attr sattr{};
  sattr.attr.max_wr = 8;
  sattr.attr.max_sge = 1;
  ibv_srq* srq = v::create_srq(pd_, &sattr);
  ASSERT_NE(srq, nullptr) << strerror(errno);
  ibv_qp_init_attr qa{};
  qa.send_cq = qa.recv_cq = cq_;
  qa.qp_type = IBV_QPT_UD;
  qa.cap.max_send_wr = 4;
  qa.cap.max_send_sge = 1;
  ibv_qp* tx = v::create_qp(pd_, &qa);
  qa.srq = srq;
  ibv_qp* rx = v::create_qp(pd_, &qa);
  ASSERT_TRUE(tx && rx) << strerror(errno);
  qps_.push_back(tx);
  qps_.push_back(rx);
  EXPECT_EQ(v::destroy_srq(srq), EBUSY);  // rx receives from it
  for (ibv_qp* qp : {tx, rx}) ASSERT_EQ(ReadyUd(qp, 0x1234), 0) << qp->qp_num;
  // The GRH's 40 bytes, then the payload.
  ASSERT_EQ(Post(srq, Recv(21, Local(2048, 40 + 64))), 0);

  ibv_ah_attr ah_attr{};
  ah_attr.is_global = 1;
  ah_attr.port_num = 1;
  ah_attr.grh.dgid = gid_;
  ah_attr.grh.sgid_index = 2;
  ah_attr.grh.hop_limit = 64;
  ibv_ah* ah = v::create_ah(pd_, &ah_attr);
  ASSERT_NE(ah, nullptr) << strerror(errno);
  for (int i = 0; i < 64; ++i) buf_[i] = uint8_t(0x30 + i);
  ASSERT_EQ(Post(tx, UdSend(22, Local(0, 64), ah, rx->qp_num, 0x1234).Signaled()), 0);
  auto wcs = Poll(cq_, 2);
  ASSERT_EQ(wcs.size(), 2u);
  for (const ibv_wc& wc : wcs) {
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status) << " wr_id " << wc.wr_id;
    if (wc.wr_id == 21) {
      EXPECT_EQ(wc.opcode, IBV_WC_RECV);
      EXPECT_EQ(wc.src_qp, tx->qp_num);
      EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
    }
  }
  EXPECT_EQ(0, std::memcmp(&buf_[0], &buf_[2048 + 40], 64));
  EXPECT_EQ(v::destroy_ah(ah), 0);
  for (ibv_qp* qp : qps_) EXPECT_EQ(v::destroy_qp(qp), 0);
  qps_.clear();
  EXPECT_EQ(v::destroy_srq(srq), 0);
}

}  // namespace
}  // namespace onchip::testing

namespace onchip::testing {
namespace {

int Tasks() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

bool Readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

// The device's event thread consumes the completion EQE, writes the CQ's handle to its channel
// and re-arms the EQ, once per arming of the CQ; Close joins the thread.
TEST_F(DataPathTest, TheEventThreadWritesTheCqHandleToItsChannel) {
  driver::EventThread* events = device().events();
  ASSERT_NE(events, nullptr);
  ibv_comp_channel* ch = v::create_comp_channel(verbs_);
  ASSERT_NE(ch, nullptr) << strerror(errno);
  ibv_cq* cq = v::create_cq(verbs_, 16, ch, 0);
  ASSERT_NE(cq, nullptr) << strerror(errno);
  ibv_qp_init_attr qa = QpInitAttr(IBV_QPT_RC, cq);
  ibv_qp* a = v::create_qp(pd_, &qa);
  ibv_qp* b = v::create_qp(pd_, &qa);
  ASSERT_TRUE(a && b);
  Connect(a, b->qp_num);
  Connect(b, a->qp_num);
  const uint64_t interrupts_before = sim_->engine().interrupts();
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(rings::ReqNotifyCq(cq, 0), 0);
    ASSERT_EQ(Post(a, RdmaWrite(0, Local(0, 8), Remote(512)).Signaled()), 0);
    ASSERT_EQ(Poll(cq, 1).size(), 1u);
    ASSERT_TRUE(Readable(ch->fd, 5000)) << "round " << round;
    uint64_t handle = 0;
    ASSERT_EQ(read(ch->fd, &handle, sizeof handle), ssize_t(sizeof handle));
    EXPECT_EQ(handle, reinterpret_cast<uint64_t>(cq));
    rings::CqEvent(cq);  // what ibv_get_cq_event does next: the arm sequence number moves
    EXPECT_FALSE(Readable(ch->fd, 50)) << "one record per arming";
  }
  EXPECT_GE(events->eqes(), 3u);
  // At least the first EQE came by interrupt. Later ones may not: the thread writes a record
  // before it re-arms the EQ, so the next round's EQE can land while the EQ is unarmed and be
  // found by the same drain, with no interrupt, as on the hardware.
  EXPECT_GE(sim_->engine().interrupts() - interrupts_before, 1u);
  EXPECT_EQ(v::destroy_qp(a), 0);
  EXPECT_EQ(v::destroy_qp(b), 0);
  EXPECT_EQ(v::destroy_cq(cq), 0);
  close(ch->fd);
  std::free(ch);
}

// A channel of another device or context is EBADF; none is fine.
TEST_F(DataPathTest, ACqOnAnUnknownChannelIsEbadf) {
  ibv_comp_channel stray{verbs_, -1, 0};
  errno = 0;
  EXPECT_EQ(v::create_cq(verbs_, 4, &stray, 0), nullptr);
  EXPECT_EQ(errno, EBADF);
}

// Close stops the event thread: no thread outlives the device.
TEST_F(DataPathTest, CloseJoinsTheEventThread) {
  ASSERT_NE(device().events(), nullptr);
  EXPECT_EQ(v::dereg_mr(mr_), 0);
  EXPECT_EQ(v::destroy_cq(cq_), 0);
  EXPECT_EQ(v::dealloc_pd(pd_), 0);
  const int before = Tasks();
  const auto report = ctx_->Close();
  EXPECT_FALSE(report.first_error) << report.describe();
  EXPECT_EQ(Tasks(), before - 1);
  ctx_.reset();
}

}  // namespace
}  // namespace onchip::testing

namespace onchip::testing {
namespace {

// The port's link, pulled and restored on the device: QUERY_VPORT_STATE (ibv_query_port's state)
// follows it, IBV_EVENT_PORT_ERR and IBV_EVENT_PORT_ACTIVE reach the async sink with the port
// number as the element, and an RC WRITE on the down link ends in RETRY_EXC_ERR, while the same
// pair reconnected after the link returns moves bytes again.
TEST_F(DataPathTest, ALinkGoingDownAndUpIsSeenByQueryEventsAndTheWire) {
  driver::EventThread* events = device().events();
  ASSERT_NE(events, nullptr);
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  events->AddAsyncSink(verbs_, fds[1]);
  struct {
    uint64_t element;
    uint32_t event_type;
    uint32_t reserved;
  } desc{};
  auto next_event = [&] {
    desc = {};
    return Readable(fds[0], 5000) && read(fds[0], &desc, sizeof desc) == ssize_t(sizeof desc);
  };
  auto link_up = [&] {
    auto up = driver::QueryLinkUp(device());
    EXPECT_TRUE(up) << up.error().describe();
    return up && *up;
  };
  EXPECT_TRUE(link_up());
  // A failed query is the firmware's errno, never a guessed state.
  sim_->InjectFailure({.count = 1, .opcode = prm::QUERY_VPORT_STATE});
  auto failed = driver::QueryLinkUp(device());
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().errno_value(), EIO);
  ibv_qp *a = nullptr, *b = nullptr;
  ASSERT_NO_FATAL_FAILURE(ConnectedPair(&a, &b));

  sim_->SetLinkUp(false);
  ASSERT_TRUE(next_event());
  EXPECT_EQ(desc.event_type, uint32_t{IBV_EVENT_PORT_ERR});
  EXPECT_EQ(desc.element, 1u);
  EXPECT_FALSE(link_up());
  const SendRequest write = RdmaWrite(7, Local(0, 8), Remote(4096)).Signaled();
  ASSERT_EQ(Post(a, write), 0);
  auto wcs = Poll(cq_, 1);  // 8 tries of a 67 ms ACK timeout
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_RETRY_EXC_ERR) << ibv_wc_status_str(wcs[0].status);

  sim_->SetLinkUp(true);
  ASSERT_TRUE(next_event());
  EXPECT_EQ(desc.event_type, uint32_t{IBV_EVENT_PORT_ACTIVE});
  EXPECT_EQ(desc.element, 1u);
  EXPECT_TRUE(link_up());
  for (ibv_qp* q : {a, b}) {
    ibv_qp_attr reset{};
    reset.qp_state = IBV_QPS_RESET;
    ASSERT_EQ(v::modify_qp(q, &reset, IBV_QP_STATE), 0);
  }
  Connect(a, b->qp_num);
  Connect(b, a->qp_num);
  buf_[0] = 0x5c;
  ASSERT_EQ(Post(a, write), 0);
  wcs = Poll(cq_, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << ibv_wc_status_str(wcs[0].status);
  EXPECT_EQ(buf_[4096], 0x5c);
  events->RemoveAsyncSink(verbs_);
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
}  // namespace onchip::testing
