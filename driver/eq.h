// The device's completion event queue: the one EQ every CQ of this driver names (cqc.c_eqn).
//
// The EQ is created at bring-up, after the UARs, with uid 0 (it belongs to the function, as the
// kernel's completion EQs do) on the shared UAR, and destroyed at Close after every CQ is gone
// (the device refuses DESTROY_EQ while a CQ names it). Its ring is 2^log_eq_size 64-byte EQEs
// in a DmaMemory buffer from the device's memory provider; every EQE starts device-owned
// (owner bit 1), as the PRM requires before the first pass.
//
// It is created unarmed (eqc.st 0): the device writes EQEs for armed CQs into the ring but
// raises no interrupt until a consumer arms it with the EQ doorbell. The device's event thread
// (events.h) is that consumer: Next() / Advance() walk the ring by the owner bit, Arm() writes
// the consumer index and re-arms through the UAR's EQ doorbell. The device subscribes its EQ to
// the async event types as well (events.h): one EQ on the shared UAR page, so no two EQs'
// doorbell writes to that page's one EQ register can replace each other.
#pragma once

#include <cstdint>
#include <memory>

#include "alloc/provider.h"
#include "driver/bus/bus.h"
#include "driver/bus/dma_memory.h"
#include "driver/caps.h"
#include "driver/cmd/commander.h"
#include "uapi/prm/eqe.h"
#include "uapi/result.h"

namespace onchip::driver {

class CompletionEq {
 public:
  // EQEs in the ring: room for the completion events of many CQs plus the spare entries the
  // kernel keeps (MLX5_NUM_SPARE_EQE), rounded up to a power of two.
  static constexpr uint32_t kLogEntries = 8;
  static constexpr uint32_t kEqeBytes = 64;

  // CREATE_EQ on `uar_index`, interrupting on MSI-X vector `vector`. EINVAL when the device
  // cannot hold kLogEntries EQEs; the provider's error when the ring cannot be allocated; the
  // firmware's when it refuses. `event_mask` is event_bitmask[0] (bit n: event type n);
  // completions by default.
  static Result<std::unique_ptr<CompletionEq>> Create(cmd::Commander& commander,
                                                      alloc::MemoryProvider& memory,
                                                      const Caps& caps, uint32_t uar_index,
                                                      uint64_t event_mask = 1,
                                                      uint16_t vector = 0);
  CompletionEq(const CompletionEq&) = delete;
  CompletionEq& operator=(const CompletionEq&) = delete;
  // The ring is freed; the EQ must have been destroyed (or the device torn down) first.
  ~CompletionEq() = default;

  uint32_t eqn() const { return eqn_; }
  const std::byte* ring() const { return ring_.host(); }
  uint32_t entries() const { return uint32_t{1} << kLogEntries; }

  // The EQE at the consumer index when software owns it (the device wrote it on this pass over
  // the ring), read after its owner byte with acquire order; else null. One consumer thread.
  const prm::pod::mlx5_eqe* Next() const;
  void Advance() { ++ci_; }
  // The EQ doorbell: the consumer index, and with `arm` a request for the next interrupt
  // (UAR + 0x40; without arm UAR + 0x48). Then the bus is told to look.
  void UpdateCi(bus::Bus& bus, bool arm) const;

  // DESTROY_EQ. On failure the EQ stays (RES_BUSY while a CQ still names it).
  Result<void> Destroy(cmd::Commander& commander);

 private:
  CompletionEq() = default;

  bus::DmaMemory ring_;
  uint32_t eqn_ = 0;
  uint32_t uar_index_ = 0;
  uint32_t ci_ = 0;  // the consumer's count of EQEs taken (24 bits go to the device)
};

}  // namespace onchip::driver
