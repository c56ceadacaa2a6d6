// The driver tests' loopback fixture: one device, a PD, a CQ, an 8 KiB host buffer registered
// with the rights a test asks for, the device's RoCE v2 GID (QPs of one device reach each other
// through it), and a poller with a deadline. QPs a test records in qps_ (Qp records its own) are
// destroyed before the rest; the DriverTest teardown then proves nothing was left behind. Local
// and Remote name parts of buf_ for the work requests of tests/device/work_requests.h.
#pragma once

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "driver/rings/data_path.h"
#include "tests/device/fixture.h"
#include "tests/device/work_requests.h"
#include "tools/sim/wire.h"

namespace onchip::testing {

class LoopbackTest : public DriverTest {
 protected:
  // The rights buf_'s MR is registered with.
  explicit LoopbackTest(unsigned mr_access) : mr_access_(mr_access) {}

  void SetUp() override {
    DriverTest::SetUp();
    pd_ = v::alloc_pd(verbs_);
    cq_ = v::create_cq(verbs_, 64, nullptr, 0);
    ASSERT_TRUE(pd_ && cq_);
    const auto gids = sim::DeviceGids(sim_->config());
    std::memcpy(gid_.raw, gids[2].data(), 16);  // ::ffff:a.b.c.d, RoCE v2
    buf_.assign(8192, 0);
    mr_ = v::reg_mr(pd_, buf_.data(), buf_.size(), reinterpret_cast<uintptr_t>(buf_.data()),
                    mr_access_);
    ASSERT_NE(mr_, nullptr) << strerror(errno);
  }
  // The test's own objects first (queues before what they name), then the fixture's.
  virtual void DestroyTestObjects() {}
  void TearDown() override {
    if (ctx_) {
      for (ibv_qp* qp : qps_) EXPECT_EQ(v::destroy_qp(qp), 0);
      DestroyTestObjects();
      EXPECT_EQ(v::dereg_mr(mr_), 0);
      EXPECT_EQ(v::destroy_cq(cq_), 0);
      EXPECT_EQ(v::dealloc_pd(pd_), 0);
    }
    DriverTest::TearDown();
  }

  // Polls `cq` until `n` completions arrived (or 5 s passed).
  std::vector<ibv_wc> Poll(ibv_cq* cq, int n) {
    std::vector<ibv_wc> out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (int(out.size()) < n && std::chrono::steady_clock::now() < deadline) {
      ibv_wc wc[4];
      const int got = driver::rings::PollCq(cq, 4, wc);
      EXPECT_GE(got, 0);
      for (int i = 0; i < got; ++i) out.push_back(wc[i]);
      if (got == 0) std::this_thread::yield();
    }
    return out;
  }
  std::vector<ibv_wc> Poll(int n) { return Poll(cq_, n); }

  // A QP of `type` on `cq`, 8 work requests of one entry each way.
  static ibv_qp_init_attr QpInitAttr(ibv_qp_type type, ibv_cq* cq) {
    ibv_qp_init_attr a{};
    a.send_cq = a.recv_cq = cq;
    a.qp_type = type;
    a.cap.max_send_wr = a.cap.max_recv_wr = 8;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    return a;
  }
  // That QP on cq_, recorded in qps_.
  ibv_qp* Qp(ibv_qp_type type) {
    ibv_qp_init_attr a = QpInitAttr(type, cq_);
    ibv_qp* qp = v::create_qp(pd_, &a);
    EXPECT_NE(qp, nullptr) << strerror(errno);
    if (qp) qps_.push_back(qp);
    return qp;
  }

  uint64_t Addr(std::size_t offset) const { return reinterpret_cast<uintptr_t>(&buf_[offset]); }
  // buf_[offset, offset + length) as a request's local data, under mr_'s lkey.
  ibv_sge Local(std::size_t offset, uint32_t length) const {
    return {Addr(offset), length, mr_->lkey};
  }
  // buf_[offset..] as a one-sided request's target, under mr_'s rkey.
  RemoteBuffer Remote(std::size_t offset) const { return {Addr(offset), mr_->rkey}; }

  const unsigned mr_access_;
  ibv_pd* pd_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_mr* mr_ = nullptr;
  ibv_gid gid_{};
  std::vector<uint8_t> buf_;
  std::vector<ibv_qp*> qps_;
};

}  // namespace onchip::testing
