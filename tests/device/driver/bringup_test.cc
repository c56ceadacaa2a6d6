// Bring-up and teardown of the driver on the software ConnectX: the PRM sequence runs, the
// capabilities arrive, and teardown leaves the device holding nothing of ours.
#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "alloc/provider.h"
#include "driver/bus/dma_memory.h"
#include "driver/bus/sim/sim_bus.h"
#include "driver/cmd/run.h"
#include "driver/context.h"
#include "tests/device/fixture.h"
#include "tools/sim/device.h"
#include "uapi/prm/hca.h"
#include "uapi/prm/init_seg.h"
#include "uapi/prm/resources.h"

namespace onchip {
namespace {

using testing::ExpectNothingHeld;
using testing::MakeDevice;

TEST(BringUp, OpensAndTearsDownLeavingNothing) {
  auto sim = MakeDevice();
  {
    auto ctx = Context::Open(driver::Locator::Of(*sim));
    ASSERT_TRUE(ctx) << ctx.error().describe();
    EXPECT_EQ(sim->firmware().state(), sim::HcaState::kInitialized);
    const auto c = sim->counters();
    EXPECT_EQ(c.pages_held, sim->config().boot_pages + sim->config().init_pages);
    for (uint16_t op : {prm::ENABLE_HCA, prm::QUERY_ISSI, prm::SET_ISSI, prm::QUERY_PAGES,
                        prm::MANAGE_PAGES, prm::SET_HCA_CAP, prm::INIT_HCA, prm::QUERY_HCA_CAP})
      EXPECT_GT(c.by_opcode.contains(op) ? c.by_opcode.at(op) : 0, 0u) << std::hex << op;
    EXPECT_EQ(c.commands_failed, 0u);

    // The capabilities the DM code relies on came back.
    EXPECT_EQ(ctx->device().max_dm_size(), sim->config().max_memic_size);
    EXPECT_TRUE(ctx->device().sw_icm().supported(prm::SW_ICM_TYPE_STEERING));

    const driver::TeardownReport report = ctx->Close();
    EXPECT_FALSE(report.first_error) << report.describe();
    EXPECT_EQ(report.pages_reclaimed, sim->config().boot_pages + sim->config().init_pages);
    EXPECT_EQ(report.pages_still_held, 0u);
  }
  EXPECT_EQ(sim->firmware().state(), sim::HcaState::kDisabled);
  ExpectNothingHeld(*sim);
  // Every DMA mapping the driver made (queue page, mailboxes, pages) is gone.
  EXPECT_EQ(sim->dma_mappings(), 0u);
}

TEST(BringUp, OpensAgainAfterClose) {
  auto sim = MakeDevice();
  for (int i = 0; i < 3; ++i) {
    auto ctx = Context::Open(driver::Locator::Of(*sim));
    ASSERT_TRUE(ctx) << ctx.error().describe();
    ctx->Close();
  }
  EXPECT_EQ(sim->counters().pages_held, 0u);
}

// One init-segment field as the device's BAR holds it, read with one atomic 32-bit load.
template <class F>
uint32_t LoadInitField(const sim::Device& sim, F field) {
  const std::byte* dword = const_cast<sim::Device&>(sim).bar().base() + field.bit_offset / 32 * 4;
  const uint32_t be = std::atomic_ref<const uint32_t>(*reinterpret_cast<const uint32_t*>(dword))
                          .load(std::memory_order_acquire);
  const uint32_t v = std::byteswap(be);
  const unsigned shift = 32 - field.bit_offset % 32 - F::bit_width;
  return F::bit_width == 32 ? v : (v >> shift) & ((1u << F::bit_width) - 1);
}

// The driver may program the queue address early, but must not ring the command doorbell until
// the firmware clears `initializing`. The device only looks at its queue after that, so a
// driver that rang early would still succeed; the test therefore watches the BAR itself while
// Open runs: a non-zero doorbell seen while `initializing` is still set is a violation.
TEST(BringUp, WaitsForInitializingToClear) {
  sim::DeviceConfig config;
  config.init_delay = std::chrono::milliseconds(300);
  auto sim = MakeDevice(config);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> samples_initializing{0};
  std::atomic<uint64_t> early_doorbells{0};
  std::thread watcher([&] {
    while (!stop.load()) {
      // Doorbell first: `initializing` only goes from 1 to 0, so if it still reads 1 afterwards
      // it was 1 when the doorbell was seen.
      const uint32_t doorbell = LoadInitField(*sim, prm::initial_seg::command_doorbell_vector);
      const uint32_t initializing = LoadInitField(*sim, prm::initial_seg::initializing);
      samples_initializing.fetch_add(initializing);
      if (doorbell != 0 && initializing) early_doorbells.fetch_add(1);
      std::this_thread::yield();
    }
  });
  const auto start = std::chrono::steady_clock::now();
  auto ctx = Context::Open(driver::Locator::Of(*sim));
  const auto took = std::chrono::steady_clock::now() - start;
  stop.store(true);
  watcher.join();
  ASSERT_TRUE(ctx) << ctx.error().describe();
  EXPECT_GT(samples_initializing.load(), 0u) << "the watcher never saw the firmware initializing";
  EXPECT_EQ(early_doorbells.load(), 0u) << "the driver rang the doorbell before initializing cleared";
  EXPECT_GE(took, config.init_delay);
  EXPECT_EQ(LoadInitField(*sim, prm::initial_seg::initializing), 0u);
  EXPECT_GT(sim->counters().by_opcode.at(prm::ENABLE_HCA), 0u);
}

TEST(BringUp, FirmwareThatNeverInitializesTimesOut) {
  sim::DeviceConfig config;
  config.init_delay = std::chrono::hours(1);
  auto sim = MakeDevice(config);
  driver::DeviceOptions opts;
  opts.firmware_ready_timeout = std::chrono::milliseconds(50);
  auto ctx = Context::Open(driver::Locator::Of(*sim), opts);
  ASSERT_FALSE(ctx);
  EXPECT_EQ(ctx.error().errno_value(), ETIMEDOUT);
  EXPECT_EQ(sim->counters().commands, 0u);
}

TEST(Cmdq, FirmwareRefusalCarriesOpcodeStatusAndSyndrome) {
  auto sim = MakeDevice();
  auto ctx = Context::Open(driver::Locator::Of(*sim));
  ASSERT_TRUE(ctx) << ctx.error().describe();
  prm::Message<prm::dealloc_pd_in> in;
  in.set(prm::dealloc_pd_in::opcode, prm::DEALLOC_PD).set(prm::dealloc_pd_in::pd, 0xabcd);
  auto out = driver::cmd::Run<prm::dealloc_pd_out>(ctx->device().commander(), in);
  ASSERT_FALSE(out);
  const Error& e = out.error();
  ASSERT_TRUE(e.from_firmware()) << e.describe();
  EXPECT_EQ(e.firmware().opcode, prm::DEALLOC_PD);
  EXPECT_NE(e.firmware().status, 0);
  EXPECT_NE(e.firmware().syndrome, 0u);
  EXPECT_EQ(e.errno_value(), prm::CommandStatusErrno(e.firmware().status));
  EXPECT_NE(e.describe().find("DEALLOC_PD"), std::string::npos) << e.describe();
}

TEST(Cmdq, RefusesMessageWithOutOfRangeField) {
  auto sim = MakeDevice();
  auto ctx = Context::Open(driver::Locator::Of(*sim));
  ASSERT_TRUE(ctx);
  const auto before = sim->counters().commands;
  prm::Message<prm::dealloc_pd_in> in;
  in.set(prm::dealloc_pd_in::opcode, prm::DEALLOC_PD).set(prm::dealloc_pd_in::pd, 1u << 24);
  auto out = driver::cmd::Run<prm::dealloc_pd_out>(ctx->device().commander(), in);
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().errno_value(), EINVAL);
  EXPECT_EQ(sim->counters().commands, before);  // never sent
}

TEST(Cmdq, ManyThreadsIssueCommandsAtOnce) {
  auto sim = MakeDevice();
  auto ctx = Context::Open(driver::Locator::Of(*sim));
  ASSERT_TRUE(ctx);
  constexpr int kThreads = 8, kEach = 50;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        auto pd = ctx->AllocPd();
        if (!pd || !pd->Free()) failures.fetch_add(1);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(sim->counters().pds, 0u);
  EXPECT_GE(sim->counters().by_opcode.at(prm::ALLOC_PD), uint64_t{kThreads * kEach});
}

TEST(Cmdq, StalledCommandTimesOutAndTheQueueKeepsWorking) {
  auto sim = MakeDevice();
  driver::DeviceOptions opts;
  opts.cmdq.timeout = std::chrono::milliseconds(100);
  auto ctx = Context::Open(driver::Locator::Of(*sim), opts);
  ASSERT_TRUE(ctx) << ctx.error().describe();
  sim->StallNext(prm::ALLOC_PD);
  auto pd = ctx->AllocPd();
  ASSERT_FALSE(pd);
  EXPECT_EQ(pd.error().errno_value(), ETIMEDOUT);
  EXPECT_EQ(pd.error().firmware().opcode, prm::ALLOC_PD);
  sim->ReleaseStall();
  // Other slots still serve commands.
  auto again = ctx->AllocPd();
  ASSERT_TRUE(again) << again.error().describe();
}

// A MANAGE_PAGES that never completes takes the page slot with it: later page commands fail
// at once with EIO instead of waiting forever, and regular commands still run.
TEST(Cmdq, LostPageSlotFailsPageCommandsInsteadOfHanging) {
  auto sim = MakeDevice();
  driver::DeviceOptions opts;
  opts.cmdq.timeout = std::chrono::milliseconds(100);
  auto ctx = Context::Open(driver::Locator::Of(*sim), opts);
  ASSERT_TRUE(ctx) << ctx.error().describe();
  auto& c = ctx->device().commander();
  prm::Message<prm::manage_pages_in> take;
  take.set(prm::manage_pages_in::opcode, prm::MANAGE_PAGES)
      .set(prm::manage_pages_in::op_mod, prm::PAGES_TAKE)
      .set(prm::manage_pages_in::input_num_entries, 1);
  sim->StallNext(prm::MANAGE_PAGES);
  auto first = driver::cmd::Run<prm::manage_pages_out>(c, take, 8);
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error().errno_value(), ETIMEDOUT);
  auto second = driver::cmd::Run<prm::manage_pages_out>(c, take, 8);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().errno_value(), EIO);
  EXPECT_EQ(second.error().firmware().opcode, prm::MANAGE_PAGES);
  auto pd = ctx->AllocPd();
  EXPECT_TRUE(pd) << pd.error().describe();
  sim->ReleaseStall();
}

TEST(SimBus, ProviderRegionsAreMappedOnceWithTheirFd) {
  auto sim = MakeDevice();
  auto bus = driver::bus::SimBus::Open(*sim);
  ASSERT_TRUE(bus) << bus.error().describe();
  {
    alloc::ProviderOptions options;
    options.first_tier = alloc::Tier::kMemfd4k;
    options.mapper = bus->get();
    auto provider = alloc::MemoryProvider::Create(options);
    ASSERT_TRUE(provider) << provider.error().describe();
    auto a = driver::bus::DmaMemory::Allocate(**provider, 1, 64);
    auto b = driver::bus::DmaMemory::Allocate(**provider, 3 * 4096 + 1, 4096);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->length(), 64u);
    EXPECT_EQ(b->length(), 4 * 4096u);
    EXPECT_EQ(b->iova() % 4096, 0u);
    EXPECT_NE(a->iova(), b->iova());
    // Both carved from one region, mapped once, at an IOVA with the host's 2 MiB phase.
    EXPECT_EQ(sim->dma_mappings(), 1u);
    EXPECT_EQ((a->iova() - reinterpret_cast<uintptr_t>(a->host())) % alloc::kHugePageBytes, 0u);
    EXPECT_EQ(std::to_integer<int>(b->host()[4 * 4096 - 1]), 0);  // zero-filled
    // What the device writes at the IOVA is what the driver reads at the host address.
    const std::byte word[4] = {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}};
    ASSERT_TRUE(sim->iommu().Write(b->iova() + 8, word));
    EXPECT_EQ(std::memcmp(b->host() + 8, word, sizeof word), 0);
    a->Reset();
    EXPECT_EQ(sim->dma_mappings(), 1u);
    b->Reset();
    EXPECT_EQ(sim->dma_mappings(), 1u);  // the empty region is kept for reuse
  }
  EXPECT_EQ(sim->dma_mappings(), 0u);  // the provider unmapped its region when it went
  alloc::Region empty;
  EXPECT_EQ((*bus)->Map(empty).error().errno_value(), EINVAL);
  // BAR0 windows are bounds-checked; the init segment reads as the device wrote it.
  EXPECT_EQ((*bus)->Bar0Window((*bus)->bar0_size(), 1).error().errno_value(), EFAULT);
  EXPECT_TRUE((*bus)->Bar0Window(0, (*bus)->bar0_size()));
  EXPECT_EQ((*bus)->Read32(0x4) >> 16, 5u);  // cmd_interface_rev
}

}  // namespace
}  // namespace onchip
