// What stands behind one opened verbs context: the software ConnectX this process runs (the
// embedded default device) and the driver Context brought up on it, plus the context's async
// event pipe.
//
// Process model: one software ConnectX per opened context, inside the opening process. Objects
// therefore do not cross processes or contexts (a shared device daemon is a later issue).
//
// Order: Open() creates the device, then brings the driver up on it; Close() (and the
// destructor) tears the driver down first, then stops the device.
#pragma once

#include <memory>

#include "driver/context.h"
#include "tools/sim/device.h"
#include "uapi/result.h"

namespace onchip::verbs {

class Session {
 public:
  static Result<std::unique_ptr<Session>> Open();
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  driver::Device& device() const { return ctx_.device(); }
  const std::shared_ptr<driver::Device>& shared_device() const { return ctx_.shared_device(); }

  // The read end becomes ibv_context.async_fd (libibverbs closes it); the write end stays here
  // for the events the device raises (ib_uverbs_async_event_desc records).
  int TakeAsyncReadFd() { return std::exchange(async_read_fd_, -1); }
  int async_write_fd() const { return async_write_fd_; }

  // Firmware version from the init segment: major << 32 | minor << 16 | subminor.
  uint64_t fw_ver() const;

 private:
  Session(std::unique_ptr<sim::Device> sim, Context ctx, int read_fd, int write_fd)
      : sim_(std::move(sim)), ctx_(std::move(ctx)), async_read_fd_(read_fd), async_write_fd_(write_fd) {}

  std::unique_ptr<sim::Device> sim_;  // outlives ctx_ (declared first, destroyed last)
  Context ctx_;
  int async_read_fd_ = -1;
  int async_write_fd_ = -1;
};

}  // namespace onchip::verbs
