// The command queue as the device sees it: the transport between BAR0/DMA and the firmware core.
//
// Poll() consumes the command doorbell vector and, for every rung slot, reads the cmdq entry at
// cmdq_phy_addr + slot * 64 through the IOMMU, checks the entry and the output chain with the
// cmdq codec (delivery errors complete the entry at once, without running anything), runs the
// command on the firmware, writes the output and completes the entry (ownership cleared last).
//
// Shared memory cannot latch doorbell writes the way a register does: two rings written between
// two polls leave only the last value. So when any ring arrived, and every kOwnershipScanPeriod
// without one, Poll() also looks at every slot's ownership bit (the driver sets it last, after
// the entry is complete), which is what a rung slot looks like, and runs a slot found owned and
// unrung by two looks in a row: its ring was lost, not still on its way (a command run ahead of
// its ring would have that ring taken later, after the driver may have freed the queue). The
// periodic look is a safety net: the busy engine's passes do not pay for reading every slot.
//
// The queue's address is latched: Poll() reads cmdq_phy_addr from the init segment only while the
// function is disabled (before ENABLE_HCA succeeds, and again after DISABLE_HCA) or while no
// address has been taken yet, as the driver writes it before its first command (Linux drivers/net/ethernet/mellanox/mlx5/core/cmd.c,
// mlx5_cmd_init). Once the function is enabled, a later write to BAR0 moves nothing: whoever
// can write the init segment cannot point the firmware at commands of its own.
//
// A stall (fault injection) parks a command un-completed, as a hung firmware command would, so a
// driver's timeout path can be exercised; ReleaseStall() lets parked commands run.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "tools/sim/bar.h"
#include "tools/sim/firmware.h"
#include "tools/sim/iommu.h"

namespace onchip::sim {

struct QueueCounters {
  uint64_t completed = 0;         // entries handed back to the driver
  uint64_t delivery_errors = 0;   // of which with a non-zero delivery status
  uint64_t unreachable = 0;       // rung slots whose entry was not mapped (left alone)
  uint64_t stalled = 0;           // commands parked by a stall
  uint64_t max_in_flight = 0;     // most entries the device found handed over at one look
};

class CommandQueue {
 public:
  CommandQueue(Bar0& bar, Iommu& iommu, Firmware& firmware, const DeviceConfig& config);

  // Runs what is pending; returns the number of entries completed. `now` is the caller's clock
  // reading for this pass (it times the ownership scan).
  int Poll(std::chrono::steady_clock::time_point now);
  int Poll() { return Poll(std::chrono::steady_clock::now()); }

  // The next command (of `opcode`, if given) is parked until ReleaseStall().
  void StallNext(std::optional<uint16_t> opcode);
  void ReleaseStall();
  QueueCounters counters() const;

 private:
  // cmdq_phy_addr as latched (see the header comment); Poll's thread only.
  uint64_t LatchedCmdqAddress();
  // Runs the entry of `slot`; false if it was parked or unreachable.
  bool RunSlot(uint64_t cmdq, uint32_t slot, bool release_parked);

  static constexpr std::chrono::milliseconds kOwnershipScanPeriod{1};

  Bar0& bar_;
  Iommu& iommu_;
  Firmware& firmware_;
  const uint32_t slots_;
  const uint32_t stride_;
  std::chrono::steady_clock::time_point last_scan_{};  // Poll's thread only
  uint64_t latched_cmdq_ = 0;                          // Poll's thread only
  uint32_t unrung_owned_ = 0;  // slots the last look found owned without a ring (Poll's thread)

  mutable std::mutex mutex_;  // guards the stall state and counters
  bool stall_armed_ = false;
  std::optional<uint16_t> stall_opcode_;
  // Written under mutex_; Poll reads it without the lock first, so that a pass with nothing
  // rung, no scan due and nothing to release takes no lock.
  std::atomic<bool> release_{false};
  uint32_t parked_ = 0;  // bit per parked slot
  QueueCounters counters_;
};

}  // namespace onchip::sim
