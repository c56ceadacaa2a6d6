// The one fixture of the software-ConnectX tier (tier 1): a fresh device per test and, for the
// driver's tests, an open Context on it. Every test ends with proof that it left nothing
// behind: the firmware's tables are consistent, and a driver test's Close finds nothing to
// clean up, unmaps what it mapped and leaves the device holding nothing.
#pragma once

#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "driver/cmd/run.h"
#include "driver/context.h"
#include "driver/verbs/calls.h"
#include "tools/sim/device.h"
#include "uapi/prm/mkey.h"

namespace onchip::testing {

namespace v = driver::verbs;

// A software ConnectX for tests that build their own (bring-up, fault injection).
inline std::unique_ptr<sim::Device> MakeDevice(const sim::DeviceConfig& config = {}) {
  auto d = sim::Device::Create(config);
  EXPECT_TRUE(d) << d.error().describe();
  return d ? std::move(*d) : nullptr;
}

// The device holds nothing a driver gave or created: pages, PDs, UARs, mkeys, device memory,
// EQs, CQs, QPs, SRQs, and the SQs, RQs, TISes and TIRs of raw packet QPs.
inline void ExpectNothingHeld(const sim::Device& sim) {
  const auto c = sim.counters();
  EXPECT_EQ(c.pages_held, 0u);
  EXPECT_EQ(c.pds, 0u);
  EXPECT_EQ(c.uars, 0u);
  EXPECT_EQ(c.transport_domains, 0u);
  EXPECT_EQ(c.mkeys, 0u);
  EXPECT_EQ(c.memic_allocations, 0u);
  EXPECT_EQ(c.sw_icm_objects, 0u);
  EXPECT_EQ(c.eqs, 0u);
  EXPECT_EQ(c.cqs, 0u);
  EXPECT_EQ(c.qps, 0u);
  EXPECT_EQ(c.srqs, 0u);
  EXPECT_EQ(c.sqs, 0u);
  EXPECT_EQ(c.rqs, 0u);
  EXPECT_EQ(c.tises, 0u);
  EXPECT_EQ(c.tirs, 0u);
}

// A fresh software ConnectX per test (Config() chooses it); its tables must be consistent when
// the test ends.
class SimDeviceTest : public ::testing::Test {
 protected:
  virtual sim::DeviceConfig Config() const { return {}; }

  void SetUp() override { CreateDevice(Config()); }
  void TearDown() override { ExpectConsistent(); }

  void CreateDevice(const sim::DeviceConfig& config) {
    sim_.reset();
    auto d = sim::Device::Create(config);
    ASSERT_TRUE(d) << d.error().describe();
    sim_ = std::move(*d);
  }
  void ExpectConsistent() {
    if (!sim_) return;
    const char* broken = sim_->firmware().CheckInvariants();
    EXPECT_EQ(broken, nullptr) << broken;
  }

  std::unique_ptr<sim::Device> sim_;
};

// The driver on a fresh software ConnectX: the rdma-core-signature calls on the Context's
// embedded verbs context (verbs_), QUERY_MKEY to read device state back, and a teardown that
// proves nothing leaked. A test that closes the Context itself resets ctx_ afterwards.
class DriverTest : public SimDeviceTest {
 protected:
  void SetUp() override { Open(Config()); }

  // Replaces the device and the Context (a test that needs another configuration).
  void Open(const sim::DeviceConfig& config) {
    ctx_.reset();
    CreateDevice(config);
    if (!sim_) return;
    auto c = Context::Open(driver::Locator::Of(*sim_));
    ASSERT_TRUE(c) << c.error().describe();
    ctx_ = std::make_unique<Context>(std::move(*c));
    verbs_ = ctx_->verbs();
    baseline_mappings_ = sim_->dma_mappings();
  }

  // Every test frees what it made: Close finds nothing, and the device holds nothing.
  void TearDown() override {
    if (sim_) sim_->firmware().ClearInjectedFailures();
    if (ctx_) {
      EXPECT_EQ(sim_->dma_mappings(), baseline_mappings_) << "a registration left a DMA mapping";
      const auto report = ctx_->Close();
      EXPECT_FALSE(report.first_error) << report.describe();
      EXPECT_EQ(report.objects(), 0u) << report.describe();
      EXPECT_EQ(report.pages_still_held, 0u) << report.describe();
      ctx_.reset();
    }
    // The queue, mailbox and page mappings go with the Context.
    if (sim_) {
      EXPECT_EQ(sim_->dma_mappings(), 0u);
      ExpectNothingHeld(*sim_);
    }
    SimDeviceTest::TearDown();
  }

  driver::Device& device() { return ctx_->device(); }

  // The mkey as the device holds it.
  prm::Message<prm::query_mkey_out> QueryMkey(uint32_t mkey) {
    prm::Message<prm::query_mkey_in> in;
    in.set(prm::query_mkey_in::opcode, prm::QUERY_MKEY)
        .set(prm::query_mkey_in::mkey_index, mkey >> 8);
    auto out = driver::cmd::Run<prm::query_mkey_out>(device().commander(), in);
    EXPECT_TRUE(out) << out.error().describe();
    return out ? std::move(*out) : prm::Message<prm::query_mkey_out>();
  }

  std::unique_ptr<Context> ctx_;
  ibv_context* verbs_ = nullptr;
  std::size_t baseline_mappings_ = 0;
};

// A DriverTest with a PD (pd_), allocated once the Context is open and freed before it closes
// (unless the test closed the Context or freed pd_ and set it to nullptr itself).
class DriverPdTest : public DriverTest {
 protected:
  void SetUp() override {
    DriverTest::SetUp();
    pd_ = v::alloc_pd(verbs_);
    ASSERT_NE(pd_, nullptr);
  }
  void TearDown() override {
    if (ctx_ && pd_ != nullptr) {
      EXPECT_EQ(v::dealloc_pd(pd_), 0);
    }
    DriverTest::TearDown();
  }

  ibv_pd* pd_ = nullptr;
};

// A DriverPdTest with a CQ of 64 entries (cq_) for its queues, destroyed before the PD.
class DriverPdCqTest : public DriverPdTest {
 protected:
  void SetUp() override {
    DriverPdTest::SetUp();
    if (HasFatalFailure()) return;  // no PD
    cq_ = v::create_cq(verbs_, 64, nullptr, 0);
    ASSERT_NE(cq_, nullptr);
  }
  void TearDown() override {
    if (ctx_ && cq_ != nullptr) {
      EXPECT_EQ(v::destroy_cq(cq_), 0) << "destroy_cq(cq_) at TearDown";
    }
    DriverPdTest::TearDown();
  }

  ibv_cq* cq_ = nullptr;
};

// A DriverPdTest with 64 KiB of anonymous host memory (buf_) to register, and Reg, which
// registers part of it at its own address as the IOVA.
class DriverMrTest : public DriverPdTest {
 protected:
  void SetUp() override {
    DriverPdTest::SetUp();
    buf_ = static_cast<char*>(mmap(nullptr, kBufBytes, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(buf_, MAP_FAILED);
  }
  void TearDown() override {
    munmap(buf_, kBufBytes);
    DriverPdTest::TearDown();
  }
  ibv_mr* Reg(size_t offset, size_t length, unsigned access) {
    return v::reg_mr(pd_, buf_ + offset, length, reinterpret_cast<uintptr_t>(buf_ + offset),
                     access);
  }

  static constexpr size_t kBufBytes = 64 * 1024;
  char* buf_ = nullptr;
};

// A parent-domain allocator that records the resource type (MLX5DV_RES_TYPE_*) of every buffer
// the driver asks it for and of every one it frees; its buffers are page-aligned at the least.
struct RecordingAllocator {
  std::vector<uint64_t> allocs, frees;

  static void* Alloc(ibv_pd*, void* ctx, size_t size, size_t alignment, uint64_t type) {
    void* p = nullptr;
    if (posix_memalign(&p, alignment < 4096 ? 4096 : alignment, size) != 0) return nullptr;
    static_cast<RecordingAllocator*>(ctx)->allocs.push_back(type);
    return p;
  }
  static void Free(ibv_pd*, void* ctx, void* ptr, uint64_t type) {
    static_cast<RecordingAllocator*>(ctx)->frees.push_back(type);
    std::free(ptr);
  }
  // A parent domain over `pd` whose queue buffers come from this allocator.
  ibv_pd* ParentDomain(ibv_context* verbs, ibv_pd* pd) {
    ibv_parent_domain_init_attr attr{};
    attr.pd = pd;
    attr.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
    attr.alloc = &Alloc;
    attr.free = &Free;
    attr.pd_context = this;
    return v::alloc_parent_domain(verbs, &attr);
  }
};

// The mkc fields of a QUERY_MKEY answer.
inline constexpr auto kQueriedMkc = prm::query_mkey_out::memory_key_mkey_entry;

}  // namespace onchip::testing
