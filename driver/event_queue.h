// What the event thread (events.h) reads events from: a ring of 64-byte EQEs (struct mlx5_eqe)
// that some producer fills, walked by the owner bit. Two kinds: the device's own EQ
// (CompletionEq, eq.h), which the device writes and a doorbell re-arms; and a ring of events
// another process forwards (ForwardedEq, forwarded_eq.h), as a device daemon forwards to its
// client the events of the client's queues from the EQ it owns, as the kernel does for its users.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "driver/bus/bus.h"
#include "uapi/prm/eqe.h"

namespace onchip::driver {

class EventQueue {
 public:
  virtual ~EventQueue() = default;
  // The EQ a CQ names (cqc.c_eqn) to report here.
  virtual uint32_t eqn() const = 0;
  // The EQE at the consumer index once its producer handed it over, else null. One consumer.
  virtual const prm::pod::mlx5_eqe* Next() const = 0;
  virtual void Advance() = 0;
  // Tells the producer how far the consumer got, and with `arm` asks for the next interrupt.
  virtual void UpdateCi(bus::Bus& bus, bool arm) const = 0;
};

// The EQE's owner byte (struct mlx5_eqe: byte 63, bit 0).
inline constexpr std::size_t kEqeOwnerByte = 63;

// Whether `eqe`, the slot of consumer count `ci` in a ring of 2^log_entries, is the consumer's:
// its owner bit, read with acquire order, equals the parity of the consumer's pass over the ring.
inline bool SoftwareOwns(const std::byte* eqe, uint32_t ci, uint32_t log_entries) {
  const auto owner = std::atomic_ref<const std::byte>(eqe[kEqeOwnerByte]).load(std::memory_order_acquire);
  return ((std::to_integer<uint32_t>(owner) ^ (ci >> log_entries)) & 1) == 0;
}

}  // namespace onchip::driver
