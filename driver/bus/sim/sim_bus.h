// The Bus over a virtual PCI function (uapi/vpci.h): the software ConnectX in this process, or
// later a device daemon behind the same contract.
//
// BAR0 is the function's shared memory, mapped MAP_SHARED; provider regions (alloc/, fd-backed:
// hugepages or memfd) are registered with Function::MapDma with their fd and offset (so a device
// in another process can map the same pages) at an IOVA this bus hands out; caller memory
// (MapHost) is registered by its host address without an fd, which only an in-process device can
// use; Notify is Function::Kick. DoorbellRung reads the device's engine sleep word
// (vpci::kEngineSleepWordOffset) after a barrier that makes the doorbell visible first, and
// kicks only when the word says the engine sleeps.
#pragma once

#include <atomic>
#include <memory>

#include "driver/bus/bus.h"
#include "uapi/vpci.h"

namespace onchip::driver::bus {

class SimBus final : public Bus {
 public:
  // The function must outlive the bus. ENOMEM/EINVAL (with context) if BAR0 cannot be mapped.
  static Result<std::unique_ptr<SimBus>> Open(vpci::Function& function);
  // The same over a function the bus owns: it is destroyed after the bus has unmapped BAR0.
  static Result<std::unique_ptr<SimBus>> Open(std::unique_ptr<vpci::Function> function);
  // The same with IOVAs handed out from `iova_base` up: a function shared with other processes
  // (a device daemon) gives each client its own window.
  static Result<std::unique_ptr<SimBus>> Open(std::unique_ptr<vpci::Function> function,
                                              uint64_t iova_base);
  ~SimBus() override;

  std::byte* bar0() const override { return bar0_; }
  uint64_t bar0_size() const override { return bar0_size_; }
  // The function's BAR0 is ordinary shared memory, mapped MAP_SHARED like any file.
  WindowMemory window_memory() const override {
    return {mmio::MemoryType::kWriteBack, "a shared memfd (the software ConnectX's BAR)"};
  }
  Result<uint64_t> Map(const alloc::Region& r) override;
  void Unmap(const alloc::Region& r, uint64_t iova) override;
  Result<DmaMapping> MapHost(std::byte* host, uint64_t length) override;
  std::optional<vpci::TphCapability> tph() const override { return function_.tph(); }
  void Notify() override { function_.Kick(); }
  int InterruptFd(uint16_t vector) const override { return function_.InterruptFd(vector); }
  uint16_t completion_vector() const override { return function_.CompletionVector(); }
  int LinkFd() const override { return function_.LinkFd(); }
  // Kicks only a sleeping engine: while it polls, a data-path doorbell costs no syscall.
  void DoorbellRung() override;
  uint64_t doorbell_kicks() const override { return doorbell_kicks_.load(std::memory_order_relaxed); }

 protected:
  Result<void> UnmapHost(uint64_t iova, uint64_t length) override;

 private:
  SimBus(vpci::Function& function, std::byte* bar0, uint64_t size, uint64_t iova_base)
      : function_(function), bar0_(bar0), bar0_size_(size), iova_(iova_base) {}
  static constexpr uint64_t kDefaultIovaBase = uint64_t{1} << 32;

  std::unique_ptr<vpci::Function> owned_;  // destroyed last, after the destructor's munmap
  vpci::Function& function_;
  std::byte* bar0_;
  uint64_t bar0_size_;
  // 2^64 bytes of IOVA space outlast any run.
  IovaSpace iova_;
  std::atomic<uint64_t> doorbell_kicks_{0};
};

}  // namespace onchip::driver::bus
