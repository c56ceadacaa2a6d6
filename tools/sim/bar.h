// The software ConnectX's BAR0: a memfd both the device and the driver map MAP_SHARED.
//
// The device owns the memfd. Two things beside it serve a device daemon's clients, who never map
// BAR0 itself (tools/simd/client_window.h):
//   - the clock page, a sealed memfd a client can map only read-only: a copy of the init
//     segment's page 0x1000 (internal timer, health word) that the device keeps beside BAR0's;
//   - page backing: the device's own mapping of a range of BAR0 (a client's UAR page, its MEMIC
//     pages) can be replaced by pages of another file, the client's own window, so the device's
//     loads and stores there reach that client's memory and no other's, and put back.
//
// The device's own registers: Registers the driver writes (cmdq address, command doorbell) and
// the device writes (initializing, health counter, timer) are 32-bit big-endian words accessed
// with atomic loads and stores, as MMIO would be; the command doorbell is consumed with an atomic
// exchange so that a ring is seen once.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "tools/sim/bar_layout.h"
#include "tools/sim/config.h"
#include "tools/sim/steering_tags.h"
#include "uapi/vpci.h"
#include "uapi/prm/init_seg_access.h"
#include "uapi/result.h"

namespace onchip::sim {

class Bar0 {
 public:
  // Creates the memfd, sizes and maps it, and writes the init segment with `initializing` set.
  static Result<Bar0> Create(const DeviceConfig& config);

  Bar0(Bar0&& other) noexcept;
  Bar0& operator=(Bar0&&) = delete;
  Bar0(const Bar0&) = delete;
  ~Bar0();

  int fd() const { return fd_; }
  uint64_t size() const { return layout_.size; }
  const BarLayout& layout() const { return layout_; }
  std::byte* base() const { return base_; }

  // Big-endian 32-bit register access at a byte offset (4-byte aligned, inside the BAR). With
  // Read32/Write32 the BAR is a register file for the uapi/prm/init_seg_access.h accessors.
  uint32_t Read32(uint64_t offset) const;
  void Write32(uint64_t offset, uint32_t value);
  uint32_t Exchange32(uint64_t offset, uint32_t value);

  void SetInitializing(bool on);
  // Puts back the read-only bits of cmdq_addr_l_sz (log_cmdq_size, log_cmdq_stride). A register
  // ignores writes to them; shared memory does not, and drivers write the whole dword when they
  // program the cmdq address, so the device re-publishes them, keeping the driver's bits.
  void RestoreReadOnly();
  // The cmdq bus address the driver programmed (cmdq_phy_addr_63_32 and _31_12).
  uint64_t CmdqAddress() const;
  // Rung command doorbell bits since the last call (consumes them).
  uint32_t TakeCommandDoorbell();
  // Whether a command doorbell bit is rung, without consuming it: one relaxed load (BAR0 is
  // never unmapped under the device; the command queue's Poll takes the bits with an acquire
  // exchange before it reads an entry).
  bool CommandDoorbellRung() const {
    return Word(prm::init_seg::kCmdDbell).load(std::memory_order_relaxed) != 0;
  }
  // Advances health_counter[23:0] by one (wraps), leaving health_syndrome alone.
  void TickHealthCounter();
  uint32_t HealthCounter() const;
  void SetInternalTimer(uint64_t ticks);
  // The clock page: its memfd, sealed so that no writable mapping of it can be made
  // (F_SEAL_FUTURE_WRITE), and the BAR0 offset whose page it copies (prm::init_seg's page of
  // internal_timer_h, internal_timer_l and the health word, kept equal by the two setters above).
  int clock_fd() const { return clock_fd_; }
  static constexpr uint64_t kClockPageOffset = prm::init_seg::kInternalTimerH;

  // The device's mapping of [offset, offset + length) (whole 4 KiB pages inside the BAR, past the
  // init segment's pages) from `fd` at `fd_offset` instead of BAR0's memfd: the device reads and
  // writes those pages there from now on. Restore maps BAR0's own pages back. Either is one
  // mmap(MAP_FIXED): a concurrent device access sees the old pages or the new, never a hole.
  // Drivers that mapped BAR0's memfd themselves keep seeing its own pages.
  Result<void> BackPages(uint64_t offset, uint64_t length, int fd, uint64_t fd_offset);
  Result<void> RestorePages(uint64_t offset, uint64_t length);
  // The data engine's sleep word (uapi/vpci.h kEngineSleepWordOffset), stored and loaded with
  // sequential consistency: the engine stores it and then re-reads its doorbells; a driver
  // stores a doorbell and then reads it; one of the two always sees the other's store.
  void SetEngineSleeping(bool sleeping);
  bool EngineSleeping() const;
  // The word itself, for the futex the device thread waits on (a driver's WakeEngine swaps it to
  // 0 and wakes that wait).
  uint32_t* EngineSleepWord() const {
    return reinterpret_cast<uint32_t*>(base_ + vpci::kEngineSleepWordOffset);
  }

  // The MEMIC window's bytes.
  std::span<std::byte> Memic() const;
  // The MSI-X table, which is the TPH steering-tag table (empty without mkey_pcie_tph).
  SteeringTagTable SteeringTags() const;

 private:
  Bar0(int fd, std::byte* base, BarLayout layout, prm::init_seg::CmdqGeometry cmdq_geometry)
      : fd_(fd), base_(base), layout_(layout), cmdq_geometry_(cmdq_geometry) {}
  std::atomic_ref<uint32_t> Word(uint64_t offset) const;
  std::atomic_ref<uint32_t> ClockWord(uint64_t offset) const;
  Result<void> CreateClockPage();
  bool Backable(uint64_t offset, uint64_t length) const;

  int fd_ = -1;
  std::byte* base_ = nullptr;
  int clock_fd_ = -1;
  std::byte* clock_ = nullptr;  // the device's writable mapping of the clock page
  BarLayout layout_;
  prm::init_seg::CmdqGeometry cmdq_geometry_;  // what the device publishes in cmdq_addr_l_sz
};

}  // namespace onchip::sim
