#include "tools/sim/command_queue.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <vector>

#include "tools/sim/command_dma.h"
#include "uapi/cmdq/mailbox.h"
#include "uapi/prm/cmd_layout.h"

namespace onchip::sim {

using prm::DeliveryStatus;

CommandQueue::CommandQueue(Bar0& bar, Iommu& iommu, Firmware& firmware,
                           const DeviceConfig& config)
    : bar_(bar),
      iommu_(iommu),
      firmware_(firmware),
      slots_(1u << config.log_cmdq_size),
      stride_(1u << config.log_cmdq_stride) {}

int CommandQueue::Poll(std::chrono::steady_clock::time_point now) {
  uint32_t rung = bar_.TakeCommandDoorbell();
  // Slots the driver handed over even if their doorbell write was overwritten (see the header).
  const bool scan = rung != 0 || now - last_scan_ >= kOwnershipScanPeriod;
  if (!scan && !release_.load(std::memory_order_acquire)) return 0;  // the busy engine's pass
  const uint64_t cmdq = LatchedCmdqAddress();
  bool release = false;
  uint32_t parked = 0;
  {
    std::lock_guard lock(mutex_);
    release = release_.exchange(false, std::memory_order_relaxed);
    parked = parked_;
    if (release) parked_ = 0;
  }
  uint32_t owned = 0;
  // A disabled function reads no entry it was not rung for: after DISABLE_HCA the driver frees
  // the queue page, and the device must not be looking at it then.
  if (cmdq != 0 && scan && (rung != 0 || firmware_.state() != HcaState::kDisabled)) {
    last_scan_ = now;
    uint32_t seen = 0;
    Iommu::Access access(iommu_);
    for (uint32_t slot = 0; slot < slots_; ++slot) {
      const uint64_t addr = cmdq + uint64_t{slot} * stride_;
      std::array<std::byte, cmdq::kEntryBytes> copy;
      const std::byte* e = access.Translate(addr, cmdq::kEntryBytes);
      if (!e && access.Read(addr, copy)) e = copy.data();
      if (!e) continue;
      if (cmdq::DeviceOwns(cmdq::ConstEntry(e, cmdq::kEntryBytes))) {
        seen |= 1u << slot;
        ++owned;
      }
    }
    // An owned slot without its ring runs only once a second scan finds it still owned and
    // unrung: its ring was lost. One found the first time may have its ring on the way, and a
    // command run before its ring lands leaves that ring to be taken later, by when the driver
    // may have freed the queue (the last command, DISABLE_HCA).
    const uint32_t lost = seen & ~rung & unrung_owned_;
    unrung_owned_ = seen & ~rung;
    rung |= lost;
  }
  if (owned > 0) {
    std::lock_guard lock(mutex_);
    counters_.max_in_flight = std::max<uint64_t>(counters_.max_in_flight, owned);
  }
  if (release) rung |= parked;
  int done = 0;
  for (uint32_t slot = 0; slot < slots_; ++slot) {
    if (!((rung >> slot) & 1)) continue;
    const bool was_parked = (parked >> slot) & 1;
    if (was_parked && !release) continue;  // still stalled
    if (RunSlot(cmdq, slot, was_parked && release)) ++done;
  }
  return done;
}

uint64_t CommandQueue::LatchedCmdqAddress() {
  if (firmware_.state() == HcaState::kDisabled || latched_cmdq_ == 0)
    latched_cmdq_ = bar_.CmdqAddress();
  return latched_cmdq_;
}

bool CommandQueue::RunSlot(uint64_t cmdq, uint32_t slot, bool release_parked) {
  const uint64_t entry_addr = cmdq + uint64_t{slot} * stride_;
  std::vector<std::byte> input;
  std::size_t out_len = 0;
  DeliveryStatus delivery = DeliveryStatus::OK;
  {
    Iommu::Access access(iommu_);
    CommandDma dma(access);
    std::byte* e = dma.Entry(entry_addr);
    if (!e) {
      std::lock_guard lock(mutex_);
      ++counters_.unreachable;
      return false;
    }
    cmdq::Entry entry(e, cmdq::kEntryBytes);
    // The ownership byte is the handover point the driver stores to concurrently: one acquire
    // load, as in Poll.
    if (!cmdq::DeviceOwns(entry)) return false;  // not ours
    auto in = cmdq::ReadInput(entry, dma);
    if (!in) {
      delivery = in.error();
    } else {
      out_len = prm::Get(std::span<const std::byte>(entry), prm::cmd_queue_entry::output_length);
      // Validate the output chain before anything runs: a command whose answer cannot be
      // delivered must not change the device.
      if (auto w = cmdq::WriteOutput(entry, dma, {}); !w) delivery = w.error();
      input = std::move(*in);
    }
    if (delivery != DeliveryStatus::OK) {
      cmdq::Complete(entry, delivery);
      const bool delivered = dma.Flush();
      std::lock_guard lock(mutex_);
      if (!delivered) {
        ++counters_.unreachable;
        return false;
      }
      ++counters_.completed;
      ++counters_.delivery_errors;
      return true;
    }
  }

  if (!release_parked) {
    std::lock_guard lock(mutex_);
    constexpr auto kOpcode = prm::mbox_in::opcode;
    const uint16_t opcode =
        input.size() * 8 >= kOpcode.bit_offset + kOpcode.bit_width
            ? static_cast<uint16_t>(prm::Get(std::span<const std::byte>(input), kOpcode))
            : 0;
    if (stall_armed_ && (!stall_opcode_ || *stall_opcode_ == opcode)) {
      stall_armed_ = false;
      parked_ |= 1u << slot;
      ++counters_.stalled;
      return false;
    }
  }

  std::vector<std::byte> output(out_len);
  firmware_.Execute(input, output);

  Iommu::Access access(iommu_);
  CommandDma dma(access);
  std::byte* e = dma.Entry(entry_addr);
  if (!e) {  // the driver unmapped its queue while the command ran
    std::lock_guard lock(mutex_);
    ++counters_.unreachable;
    return false;
  }
  cmdq::Entry entry(e, cmdq::kEntryBytes);
  auto w = cmdq::WriteOutput(entry, dma, output);
  cmdq::Complete(entry, w ? DeliveryStatus::OK : w.error());
  const bool delivered = dma.Flush();
  std::lock_guard lock(mutex_);
  if (!delivered) {  // process memory that can no longer be written (its process exited)
    ++counters_.unreachable;
    return false;
  }
  ++counters_.completed;
  if (!w) ++counters_.delivery_errors;
  return true;
}

void CommandQueue::StallNext(std::optional<uint16_t> opcode) {
  std::lock_guard lock(mutex_);
  stall_armed_ = true;
  stall_opcode_ = opcode;
}

void CommandQueue::ReleaseStall() {
  std::lock_guard lock(mutex_);
  stall_armed_ = false;
  release_.store(true, std::memory_order_release);
}

QueueCounters CommandQueue::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

}  // namespace onchip::sim
