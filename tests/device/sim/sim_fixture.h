// The tier fixture (tests/device/fixture.h) plus a test-side command writer on its device.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "tests/device/fixture.h"
#include "tests/device/sim/cmd_writer.h"
#include "tools/sim/device.h"
#include "uapi/cmd_status.h"
#include "uapi/sim/syndrome.h"

namespace onchip::sim::testing {

class SimTest : public onchip::testing::SimDeviceTest {
 protected:
  void SetUp() override {
    SimDeviceTest::SetUp();
    if (sim_) w_ = std::make_unique<CommandWriter>(*sim_);
  }
  void TearDown() override {
    w_.reset();
    SimDeviceTest::TearDown();
  }

  // Runs a command that must be delivered (any command status).
  template <class M>
  Reply Exec(const M& msg, std::size_t out_len) {
    auto r = w_->Run(msg.bytes(), out_len);
    EXPECT_TRUE(r) << r.error().describe();
    if (!r) return {};
    EXPECT_EQ(r->delivery, prm::DeliveryStatus::OK);
    return *r;
  }
  void BringUp() {
    auto r = w_->BringUp();
    ASSERT_TRUE(r) << r.error().describe();
  }

  std::unique_ptr<CommandWriter> w_;
};

inline ::testing::AssertionResult Refused(const Reply& r, prm::CommandStatus status,
                                          Syndrome syndrome) {
  if (r.delivery != prm::DeliveryStatus::OK)
    return ::testing::AssertionFailure() << "delivery status " << int(r.delivery);
  if (r.status != static_cast<uint8_t>(status) || r.syndrome != static_cast<uint32_t>(syndrome))
    return ::testing::AssertionFailure()
           << "got status " << prm::CommandStatusName(r.status) << " syndrome "
           << SyndromeName(r.syndrome) << " (0x" << std::hex << r.syndrome << "), want "
           << prm::CommandStatusName(static_cast<uint8_t>(status)) << " "
           << SyndromeName(static_cast<uint32_t>(syndrome));
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult Ok(const Reply& r) {
  if (r.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "delivery " << int(r.delivery) << " status " << prm::CommandStatusName(r.status)
         << " syndrome " << SyndromeName(r.syndrome);
}

}  // namespace onchip::sim::testing
