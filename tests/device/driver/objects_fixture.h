// A software ConnectX and an open driver Context for the object tests (PD, parent domain, TD,
// MR, MW, DMA handle): the rdma-core-signature calls on its embedded verbs context, QUERY_MKEY
// to read device state back, and a teardown that proves nothing leaked on the device.
#pragma once

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <memory>

#include "driver/cmd/run.h"
#include "driver/context.h"
#include "driver/verbs_calls.h"
#include "tools/sim/device.h"
#include "uapi/prm/mkey.h"

namespace onchip::testing_objects {

namespace v = driver::verbs;

class ObjectsTest : public ::testing::Test {
 protected:
  void SetUp() override { Open({}); }

  void Open(sim::DeviceConfig config) {
    ctx_.reset();
    auto d = sim::Device::Create(config);
    ASSERT_TRUE(d) << d.error().describe();
    sim_ = std::move(*d);
    auto c = Context::Open(*sim_);
    ASSERT_TRUE(c) << c.error().describe();
    ctx_ = std::make_unique<Context>(std::move(*c));
    verbs_ = ctx_->verbs();
    baseline_mappings_ = sim_->dma_mappings();
  }

  // Every test frees what it made: Close must find nothing, and the device holds nothing.
  void TearDown() override {
    if (!ctx_) return;
    EXPECT_EQ(sim_->dma_mappings(), baseline_mappings_) << "a registration left a DMA mapping";
    const auto report = ctx_->Close();
    EXPECT_FALSE(report.first_error) << report.describe();
    EXPECT_EQ(report.objects(), 0u) << report.describe();
    const auto c = sim_->counters();
    EXPECT_EQ(c.mkeys, 0u);
    EXPECT_EQ(c.pds, 0u);
    EXPECT_EQ(c.uars, 0u);
    EXPECT_EQ(c.pages_held, 0u);
  }

  driver::Device& device() { return ctx_->device(); }

  // The mkey as the device holds it.
  prm::Message<prm::query_mkey_out> QueryMkey(uint32_t mkey) {
    prm::Message<prm::query_mkey_in> in;
    in.set(prm::query_mkey_in::opcode, prm::QUERY_MKEY)
        .set(prm::query_mkey_in::mkey_index, mkey >> 8);
    auto out = cmd::Run<prm::query_mkey_out>(device().commander(), in);
    EXPECT_TRUE(out) << out.error().describe();
    return out ? std::move(*out) : prm::Message<prm::query_mkey_out>();
  }

  std::unique_ptr<sim::Device> sim_;
  std::unique_ptr<Context> ctx_;
  ibv_context* verbs_ = nullptr;
  std::size_t baseline_mappings_ = 0;
};

// The mkc fields of a QUERY_MKEY answer.
inline constexpr auto kQueriedMkc = prm::query_mkey_out::memory_key_mkey_entry;

}  // namespace onchip::testing_objects
