// The Bus: how the driver reaches one PCI function. Two things and nothing else:
//   - BAR0, mapped into the process: 32-bit big-endian register access for the init segment
//     (Read32/Write32) and raw windows for the regions the CPU writes directly (UAR pages, the
//     MEMIC window);
//   - DMA mappings, the one seam through which the device reaches host memory: memory the
//     driver allocates comes from alloc::MemoryProvider, which calls Map/Unmap (alloc::DmaMapper)
//     once per backing region; memory the application owns (MRs, queue buffers from a parent
//     domain's allocator) is mapped with MapHost as a DmaMapping that only unmaps;
//   - what config space says about TPH: where the steering-tag table is (tph()).
// plus a doorbell notification (Notify) the driver calls after every doorbell write; a real
// device sees the store itself, the software ConnectX is told to look.
//
// IOVAs: every mapping gets a fresh IOVA range (never reused, a guard page after it) whose
// offset inside a 2 MiB page equals the host address's, so host memory on 2 MiB pages is also
// 2 MiB-contiguous for the device and an mkey can describe it with 2 MiB MTT entries.
//
// Ordering contract: Write32 is a single 32-bit store to BAR0 in program order with respect to
// other BAR0 accesses; making DMA memory visible before a doorbell is the caller's barrier
// (mmio::ToDeviceBarrier), not the bus's.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include "alloc/dma_mapper.h"
#include "alloc/region.h"
#include "mmio/memory_type.h"
#include "uapi/result.h"
#include "uapi/vpci.h"

namespace onchip::driver::bus {

class Bus;

// The caller's host memory [host, host + length) mapped for the device at `iova` (page-aligned,
// a multiple of 4 KiB). Destroying it unmaps it; the memory itself stays the caller's.
class DmaMapping {
 public:
  DmaMapping() = default;
  DmaMapping(Bus* bus, std::byte* host, uint64_t iova, uint64_t length)
      : bus_(bus), host_(host), iova_(iova), length_(length) {}
  DmaMapping(DmaMapping&& o) noexcept { *this = std::move(o); }
  DmaMapping& operator=(DmaMapping&& o) noexcept;
  DmaMapping(const DmaMapping&) = delete;
  DmaMapping& operator=(const DmaMapping&) = delete;
  ~DmaMapping() { (void)Reset(); }

  std::byte* host() const { return host_; }
  uint64_t iova() const { return iova_; }
  uint64_t length() const { return length_; }
  explicit operator bool() const { return bus_ != nullptr; }
  // Unmaps now (the device stops using the pages before this returns).
  Result<void> Reset();

 private:
  Bus* bus_ = nullptr;
  std::byte* host_ = nullptr;
  uint64_t iova_ = 0;
  uint64_t length_ = 0;
};

class Bus : public alloc::DmaMapper {
 public:
  ~Bus() override = default;

  // BAR0 as mapped for uncached register access. Never null once the bus is constructed.
  virtual std::byte* bar0() const = 0;
  virtual uint64_t bar0_size() const = 0;

  // The CPU window for [offset, offset + length) of BAR0, for direct device-memory stores and
  // loads (MEMIC, UAR pages). Write-combined where the platform can map it so (the software
  // ConnectX's BAR is ordinary shared memory). EFAULT if the range is outside BAR0.
  virtual Result<std::byte*> Bar0Window(uint64_t offset, uint64_t length) const;

  // What Bar0Window's mapping is from the CPU's side (every window shares one mapping), and
  // what makes it so, for reports: the driver picks the copy kernel for each of its targets in
  // the BAR (the MEMIC window, the BlueFlame registers) by it (driver/copy_kernels.h).
  struct WindowMemory {
    mmio::MemoryType type;
    const char* source;  // e.g. "a shared memfd (the software ConnectX's BAR)"
  };
  virtual WindowMemory window_memory() const = 0;

  // Big-endian 32-bit register access at a 4-byte aligned BAR0 offset inside the BAR.
  uint32_t Read32(uint64_t offset) const;
  void Write32(uint64_t offset, uint32_t value);

  // Map(region) and Unmap(region, iova) (alloc::DmaMapper, implemented by each bus): a provider
  // region (2 MiB aligned, whole pages) mapped for device read and write at a fresh IOVA, once
  // per region, and unmapped before the provider releases its memory. The sim bus passes the
  // region's fd and offset along, so a device in another process can map the same pages.

  // Maps the caller's memory [host, host + length) for device access: host and length are 4 KiB
  // aligned (EINVAL otherwise). The pages must stay valid until the mapping is destroyed.
  virtual Result<DmaMapping> MapHost(std::byte* host, uint64_t length) = 0;

  // The function's TPH steering-tag table, or nullopt when it has none (no TPH support).
  virtual std::optional<vpci::TphCapability> tph() const { return std::nullopt; }

  // After a doorbell write (cmd_dbell, UAR): tells the device to look. Cheap, any thread.
  virtual void Notify() = 0;

  // After a data-path doorbell (a send doorbell or BlueFlame copy, a receive or SRQ doorbell
  // record, a CQ arm): the hot-path form of Notify. Hardware sees the store itself, so a real
  // bus does nothing; a software device that polls its doorbells while traffic flows is told
  // only when it said it sleeps (uapi/vpci.h), so posting makes no syscall while it is awake.
  virtual void DoorbellRung() { Notify(); }
  // Data-path doorbells that had to wake the device with a syscall (DoorbellRung on a software
  // device that said it sleeps). A real bus, and a software device that is awake, add none.
  virtual uint64_t doorbell_kicks() const { return 0; }

  // The vector the driver's EQs name (eqc.intr) and its event thread waits on (vpci.h
  // CompletionVector).
  virtual uint16_t completion_vector() const { return 0; }
  // The eventfd the function signals for MSI-X vector `vector` (uapi/vpci.h InterruptFd): one
  // count per interrupt of an armed EQ whose eqc.intr is `vector`. The bus's function owns it;
  // -1 when the bus delivers no interrupts for that vector.
  virtual int InterruptFd(uint16_t vector) const {
    (void)vector;
    return -1;
  }

  // An fd that hangs up (POLLHUP / POLLRDHUP) when the function is gone for good, as a device
  // daemon's connection does when the daemon dies (vpci.h LinkFd); -1 for a function that cannot
  // vanish under this process. The device's event thread watches it and then calls MarkGone.
  virtual int LinkFd() const { return -1; }
  // Whether the function is gone: the data path checks it with one relaxed load where it would
  // otherwise post to, or wait on, a device that will never answer (EIO, as after a fatal error).
  bool gone() const { return gone_.load(std::memory_order_relaxed); }
  void MarkGone() { gone_.store(true, std::memory_order_relaxed); }
  const std::atomic<bool>& gone_flag() const { return gone_; }

 protected:
  friend class DmaMapping;
  virtual Result<void> UnmapHost(uint64_t iova, uint64_t length) = 0;

 private:
  std::atomic<bool> gone_{false};
};

inline constexpr uint64_t kPageSize = 4096;
constexpr uint64_t RoundUpPage(uint64_t n) { return (n + kPageSize - 1) & ~(kPageSize - 1); }

// The IOVA space of one bus: ranges handed out upwards and never reused (a stale IOVA can never
// alias newer memory), a guard page after each. Take(length, host) returns an IOVA congruent to
// `host` modulo 2 MiB (see Bus). Lock-free, any thread.
class IovaSpace {
 public:
  explicit IovaSpace(uint64_t base) : next_(base) {}
  uint64_t Take(uint64_t length, uintptr_t host);

 private:
  std::atomic<uint64_t> next_;
};

}  // namespace onchip::driver::bus
