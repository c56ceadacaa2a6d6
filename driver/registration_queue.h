// The device's memory-registration queue as the Device holds it: the interface umr_queue.h's
// REG_UMR queue implements. The Device owns the queue (so Close destroys it before the completion
// EQ its CQ reports to) and makes it on first use with the maker driver::Open gives it (open.cc);
// the queue itself is built from objects above the Device (a PD, queue buffers, the shared UAR),
// so the Device names only this interface.
#pragma once

#include <cstdint>
#include <memory>

#include "driver/cmd/commander.h"
#include "driver/cmd/owner_channel.h"
#include "uapi/result.h"

namespace onchip::driver {

class Device;

class RegistrationQueue {
 public:
  virtual ~RegistrationQueue() = default;
  // One UMR on `mkey` (its full key: index and variant), waited for.
  virtual Result<void> UpdateMkey(uint32_t mkey, const cmd::MkeyUpdate& update) = 0;
  // An error completion left the queue in error: the device makes a new one next time.
  virtual bool broken() const = 0;
  // Gives the queue's firmware objects back; the first failure is returned, the rest still run.
  virtual Result<void> Destroy(cmd::Commander& commander) = 0;
};

// Makes and brings up a registration queue on `device`.
using RegistrationQueueMaker = Result<std::unique_ptr<RegistrationQueue>> (*)(Device& device);

}  // namespace onchip::driver
