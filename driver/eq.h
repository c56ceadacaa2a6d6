// The device's completion event queue: the one EQ every CQ of this driver names (cqc.c_eqn).
//
// The EQ is created at bring-up, after the UARs, with uid 0 (it belongs to the function, as the
// kernel's completion EQs do) on the shared UAR, and destroyed at Close after every CQ is gone
// (the device refuses DESTROY_EQ while a CQ names it). Its ring is 2^log_eq_size 64-byte EQEs
// in a DmaMemory buffer from the device's memory provider; every EQE starts device-owned
// (owner bit 1), as the PRM requires before the first pass. It subscribes to completion events
// only (event type 0).
//
// It is created unarmed (eqc.st 0): the device writes EQEs for armed CQs into the ring but
// raises no interrupt until a consumer arms it with the EQ doorbell. Nothing in the driver
// consumes EQEs yet; completion channels will.
#pragma once

#include <cstdint>
#include <memory>

#include "alloc/provider.h"
#include "driver/bus/dma_memory.h"
#include "driver/caps.h"
#include "driver/cmd/commander.h"
#include "uapi/result.h"

namespace onchip::driver {

class CompletionEq {
 public:
  // EQEs in the ring: room for the completion events of many CQs plus the spare entries the
  // kernel keeps (MLX5_NUM_SPARE_EQE), rounded up to a power of two.
  static constexpr uint32_t kLogEntries = 8;
  static constexpr uint32_t kEqeBytes = 64;

  // CREATE_EQ on `uar_index`. EINVAL when the device cannot hold kLogEntries EQEs; the
  // provider's error when the ring cannot be allocated; the firmware's when it refuses.
  static Result<std::unique_ptr<CompletionEq>> Create(cmd::Commander& commander,
                                                      alloc::MemoryProvider& memory,
                                                      const Caps& caps, uint32_t uar_index);
  CompletionEq(const CompletionEq&) = delete;
  CompletionEq& operator=(const CompletionEq&) = delete;
  // The ring is freed; the EQ must have been destroyed (or the device torn down) first.
  ~CompletionEq() = default;

  uint32_t eqn() const { return eqn_; }
  const std::byte* ring() const { return ring_.host(); }
  uint32_t entries() const { return uint32_t{1} << kLogEntries; }

  // DESTROY_EQ. On failure the EQ stays (RES_BUSY while a CQ still names it).
  Result<void> Destroy(cmd::Commander& commander);

 private:
  CompletionEq() = default;

  bus::DmaMemory ring_;
  uint32_t eqn_ = 0;
};

}  // namespace onchip::driver
