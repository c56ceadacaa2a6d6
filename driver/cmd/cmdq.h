// The mlx5 command queue: a Commander over a Bus.
//
// One 4 KiB DMA page holds the queue (entries at slot << log_cmdq_stride); mailbox blocks
// (576 bytes, 1 KiB aligned) come from a pool of DMA chunks that grows on demand and is reused.
// Both are carved by the device's memory provider (alloc/) from regions mapped through the bus.
// Slots 0 .. n-2 serve regular commands from a free-slot pool, so up to n-1 threads have a
// command in flight at once; slot n-1 is kept for MANAGE_PAGES so page supply is never starved
// by regular commands (the kernel's "pages queue").
//
// Per command: a fresh non-zero token, output chain prepared, input encoded with ownership handed
// to the device last (uapi/cmdq codec), doorbell `1 << slot`, Bus::Notify, then polling of the
// ownership bit until the device clears it or the timeout passes. A timed-out slot is retired
// (never reused: the device may still complete into it) and ETIMEDOUT is returned.
//
// Construction only programs the queue address; waiting for `initializing` is bring-up's job
// (driver/hca.h), since the PRM wants it both before and after.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "alloc/provider.h"
#include "driver/bus/bus.h"
#include "driver/bus/dma_memory.h"
#include "driver/cmd/commander.h"

namespace onchip::driver::cmd {

struct CmdqOptions {
  // The kernel's command timeout (60 s) plus its 1 s slack. Tests of timeouts shorten it.
  std::chrono::milliseconds timeout{61000};
};

class Cmdq final : public Commander {
 public:
  // Reads cmd_interface_rev (must be 5: EPROTONOSUPPORT), log_cmdq_size and log_cmdq_stride
  // (rejected like the kernel: more than 32 entries, fewer than 2, or not fitting one page:
  // EINVAL), allocates the queue page and writes its address (high word, then low word).
  // `memory` (whose DMA mapper is `bus`) supplies the queue page and mailbox blocks and must
  // outlive the queue.
  static Result<std::unique_ptr<Cmdq>> Create(bus::Bus& bus, alloc::MemoryProvider& memory,
                                              CmdqOptions opts = {});
  ~Cmdq() override;

  Result<void> Exec(std::span<const std::byte> in, std::span<std::byte> out) override;

  uint32_t regular_slots() const { return num_slots_ - 1; }
  uint32_t page_slot() const { return num_slots_ - 1; }

 private:
  struct MailboxBlock {
    uint64_t iova;
    std::byte* host;
  };
  class CommandBlocks;

  Cmdq(bus::Bus& bus, alloc::MemoryProvider& memory, CmdqOptions opts, bus::DmaMemory page,
       uint32_t log_size, uint32_t log_stride);
  // Waits for a free slot; EIO once the slots it could get are all retired.
  Result<uint32_t> AcquireSlot(bool page_slot);
  void ReleaseSlot(uint32_t slot);
  Result<std::vector<MailboxBlock>> TakeBlocks(std::size_t n);
  void ReturnBlocks(std::vector<MailboxBlock>& blocks);
  Result<void> Post(uint32_t slot, std::span<const std::byte> in, std::span<std::byte> out);

  bus::Bus& bus_;
  alloc::MemoryProvider& memory_;
  const CmdqOptions opts_;
  bus::DmaMemory page_;
  const uint32_t num_slots_;
  const uint32_t log_stride_;
  std::atomic<uint8_t> next_token_{0};

  std::mutex slot_mu_;
  std::condition_variable slot_cv_;
  uint32_t free_slots_ = 0;  // bit i: regular slot i is free
  bool page_slot_busy_ = false;
  uint32_t retired_slots_ = 0;

  std::mutex block_mu_;
  std::vector<bus::DmaMemory> chunks_;
  std::vector<MailboxBlock> free_blocks_;
};

}  // namespace onchip::driver::cmd
