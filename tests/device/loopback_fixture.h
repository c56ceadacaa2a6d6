// The driver tests' loopback fixture: one device, a PD, a CQ, an 8 KiB host buffer registered
// with the rights a test asks for, the device's RoCE v2 GID (QPs of one device reach each other
// through it), and a poller with a deadline. QPs a test records in qps_ are destroyed before the
// rest; the DriverTest teardown then proves nothing was left behind.
#pragma once

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "driver/rings/data_path.h"
#include "tests/device/fixture.h"
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

  const unsigned mr_access_;
  ibv_pd* pd_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_mr* mr_ = nullptr;
  ibv_gid gid_{};
  std::vector<uint8_t> buf_;
  std::vector<ibv_qp*> qps_;
};

}  // namespace onchip::testing
