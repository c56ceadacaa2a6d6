// The events a function's owner forwards to this process (cmd::EventForwarding): the EventQueue
// the event thread reads when this process has no EQ of its own, as a device daemon's client
// has none (tools/simd/client_events.h writes the ring). The owner writes each EQE with its owner
// bit last (release), as a device does, and signals the forwarding eventfd; the consumer's count
// goes back as a plain word the owner reads before it writes over a slot. What this process
// writes into its ring or that word misleads only this process.
#pragma once

#include <cstdint>
#include <memory>

#include "driver/bus/bus.h"
#include "driver/cmd/owner_channel.h"
#include "driver/event_queue.h"
#include "uapi/result.h"

namespace onchip::driver {

class ForwardedEq final : public EventQueue {
 public:
  // Over `bus`'s BAR0 view as `forwarding` says. EFAULT when the ring or the word is outside it.
  static Result<std::unique_ptr<ForwardedEq>> Open(const bus::Bus& bus,
                                                   const cmd::EventForwarding& forwarding);

  uint32_t eqn() const override { return eqn_; }
  const prm::pod::mlx5_eqe* Next() const override;
  void Advance() override { ++ci_; }
  // Publishes the consumer's count; `arm` asks for nothing more (every forward signals).
  void UpdateCi(bus::Bus& bus, bool arm) const override;

 private:
  ForwardedEq(uint32_t eqn, uint32_t log_entries, const std::byte* ring, uint32_t* ci_word)
      : eqn_(eqn), log_entries_(log_entries), ring_(ring), ci_word_(ci_word) {}

  const uint32_t eqn_;
  const uint32_t log_entries_;
  const std::byte* const ring_;
  uint32_t* const ci_word_;
  uint32_t ci_ = 0;
};

}  // namespace onchip::driver
