// BAR0 as the driver sees it: the init segment, health, timer, layout.
#include <atomic>
#include <bit>
#include <chrono>
#include <thread>

#include "tests/device/sim/sim_fixture.h"
#include "tests/device/wait.h"
#include "tools/sim/bar_layout.h"
#include "uapi/prm/hca.h"
#include "uapi/prm/init_seg.h"
#include "uapi/prm/init_seg_access.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/uar_page.h"

namespace onchip::sim::testing {
namespace {

uint32_t Be32(const std::byte* p) {
  return std::byteswap(std::atomic_ref<const uint32_t>(*reinterpret_cast<const uint32_t*>(p)).load());
}

class BarTest : public SimTest {
 protected:
  std::span<const std::byte> Seg() { return {w_->bar(), prm::init_seg::kBytes}; }
  template <class F>
  uint64_t Seg(F f) {
    return prm::Get(Seg(), f);
  }
  bool WaitReady() {
    return onchip::testing::WaitUntil([&] { return Seg(prm::initial_seg::initializing) == 0; });
  }
  // Waits until the device thread has run `n` more iterations of its loop (each one restores
  // the read-only init-segment bits, ticks the health counter unless stopped, and sets the
  // timer), kicking it so that nobody waits for its idle period.
  bool DeviceRuns(uint64_t n) {
    const uint64_t target = sim_->wakeups() + n;
    return onchip::testing::WaitUntil([&] {
      sim_->Kick();
      return sim_->wakeups() >= target;
    });
  }
  uint64_t Timer() {
    return (uint64_t{Be32(w_->bar() + prm::init_seg::kInternalTimerH)} << 32) |
           Be32(w_->bar() + prm::init_seg::kInternalTimerL);
  }
};

TEST_F(BarTest, InitSegmentIdentifiesAConnectX6Dx) {
  const DeviceConfig c;
  EXPECT_EQ(Seg(prm::initial_seg::fw_rev_major), c.fw_rev_major);
  EXPECT_EQ(Seg(prm::initial_seg::fw_rev_minor), c.fw_rev_minor);
  EXPECT_EQ(Seg(prm::initial_seg::fw_rev_subminor), c.fw_rev_subminor);
  EXPECT_EQ(Seg(prm::initial_seg::cmd_interface_rev), 5u);
  // The cmdq geometry the kernel reads from cmdq_addr_l_sz & 0xff; read-only, so it survives the
  // writer programming the cmdq address (a whole-dword write), as on hardware.
  ASSERT_TRUE(WaitReady());
  ASSERT_TRUE(DeviceRuns(2));  // the writer's whole-dword store has met the device's restore
  const uint32_t l_sz = Be32(w_->bar() + prm::init_seg::kCmdqAddrLSz);
  EXPECT_EQ((l_sz >> 4) & 0xf, 5u);
  EXPECT_EQ(l_sz & 0xf, 6u);
  EXPECT_EQ(l_sz & 0xfffff000u, static_cast<uint32_t>(CommandWriter::kArenaIova));
  using H = prm::health_buffer_bits<prm::initial_seg::health_buffer.bit_offset>;
  EXPECT_EQ(Seg(H::hw_id), c.hw_id);
  EXPECT_EQ(Seg(H::fw_version), (uint32_t{c.fw_rev_minor} << 16) | c.fw_rev_major);
  EXPECT_TRUE(WaitReady());
}

TEST_F(BarTest, HealthCounterAdvancesUntilStoppedAndTimerRuns) {
  ASSERT_TRUE(WaitReady());
  const uint64_t h0 = Seg(prm::initial_seg::health_counter);
  const uint64_t t0 = Timer();
  EXPECT_TRUE(onchip::testing::WaitUntil(
      [&] { return Seg(prm::initial_seg::health_counter) != h0; }));
  EXPECT_TRUE(onchip::testing::WaitUntil([&] { return Timer() > t0; }));
  sim_->StopHealthCounter(true);
  // An iteration already past the check may still tick once; after two more it cannot.
  ASSERT_TRUE(DeviceRuns(2));
  const uint64_t h1 = Seg(prm::initial_seg::health_counter);
  // Stopped means still for every iteration the device runs, not for a guessed time.
  ASSERT_TRUE(DeviceRuns(5));
  EXPECT_EQ(Seg(prm::initial_seg::health_counter), h1);
  sim_->StopHealthCounter(false);
  EXPECT_TRUE(onchip::testing::WaitUntil(
      [&] { return Seg(prm::initial_seg::health_counter) != h1; }));
}

TEST_F(BarTest, LayoutFollowsTheConfig) {
  const DeviceConfig c;
  const BarLayout& l = sim_->layout();
  EXPECT_EQ(l.uar_start, uint64_t{c.first_uar_index} * 4096);
  EXPECT_GE(l.uar_start, prm::init_seg::kBytes);
  EXPECT_EQ(l.uar_end, l.uar_start + uint64_t{c.num_uars} * 4096);
  EXPECT_GE(l.memic_start, l.uar_end);
  EXPECT_EQ(l.memic_start % c.memic_bar_size, 0u);
  EXPECT_EQ(l.memic_size, c.memic_bar_size);
  EXPECT_EQ(sim_->bar0().size, l.memic_start + l.memic_size);
  // A UAR doorbell the driver writes lands in the device's view of the same page.
  std::byte* uar = w_->bar() + l.uar_start + prm::MLX5_CQ_DOORBELL;
  *reinterpret_cast<volatile uint32_t*>(uar) = 0x12345678;
  EXPECT_EQ(*reinterpret_cast<const uint32_t*>(sim_->bar().base() + l.uar_start +
                                               prm::MLX5_CQ_DOORBELL),
            0x12345678u);
}

TEST_F(BarTest, InitializingStaysSetForTheInitDelay) {
  DeviceConfig c;
  c.init_delay = std::chrono::milliseconds(150);
  auto d = Device::Create(c);
  ASSERT_TRUE(d);
  CommandWriter w(**d);
  std::span<const std::byte> seg(w.bar(), prm::init_seg::kBytes);
  EXPECT_EQ(prm::Get(seg, prm::initial_seg::initializing), 1u);
  // A command posted now waits for the firmware to come up.
  auto r = w.Run(prm::CommandIn<prm::enable_hca_in>(prm::ENABLE_HCA).bytes(), 16);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->ok());
  EXPECT_EQ(prm::Get(seg, prm::initial_seg::initializing), 0u);
}

TEST_F(BarTest, BadConfigsAreRefused) {
  DeviceConfig c;
  c.memic_bar_size = 1000;
  EXPECT_EQ(Device::Create(c).error().errno_value(), EINVAL);
  c = DeviceConfig{};
  c.first_uar_index = 2;
  EXPECT_EQ(Device::Create(c).error().errno_value(), EINVAL);
  c = DeviceConfig{};
  c.log_cmdq_size = 7;
  EXPECT_EQ(Device::Create(c).error().errno_value(), EINVAL);
}

}  // namespace
}  // namespace onchip::sim::testing
