// What stands behind one opened verbs context: the driver's Device, opened from the locator the
// provider chose (driver/open.h: the in-process software ConnectX, a device daemon's, or a
// ConnectX bound to vfio-pci), plus the context's async event pipe.
//
// Every context a process opens on one locator shares one brought-up Device, as the contexts a
// kernel hands out share one PCI function: a server and a client context in one process reach
// each other's queues on the same device (rdma-core's own tests work that way). The first Open()
// brings the device up; the last session's destructor closes it (every object the application
// left is released, then the function is torn down). Objects a closed context left behind stay
// until then.
#pragma once

#include <memory>
#include <string>

#include "driver/device.h"
#include "driver/open.h"
#include "uapi/result.h"

namespace onchip::driver::verbs {

class Session {
 public:
  static Result<std::unique_ptr<Session>> Open(const driver::Locator& locator);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  driver::Device& device() const { return *device_; }
  const std::shared_ptr<driver::Device>& shared_device() const { return device_; }

  // The read end becomes ibv_context.async_fd (libibverbs closes it); the write end stays here
  // for the events the device raises (ib_uverbs_async_event_desc records).
  int TakeAsyncReadFd() { return std::exchange(async_read_fd_, -1); }
  int async_write_fd() const { return async_write_fd_; }

  // Firmware version from the init segment: major << 32 | minor << 16 | subminor.
  uint64_t fw_ver() const;

  // What a forked child's first command takes (the process's table of open devices, then the
  // devices' table of contexts), held by fork() in the parent and released on both sides after
  // it, so a child never inherits one locked by a thread it does not have. For pthread_atfork.
  static void HoldForFork();
  static void ReleaseAfterFork();

  // The function this session opened: a forked child opens its own session on the same one
  // (provider.cc, "the process a context serves").
  const driver::Locator& locator() const { return locator_; }

 private:
  Session(driver::Locator locator, std::string key, std::shared_ptr<driver::Device> device,
          int read_fd, int write_fd)
      : locator_(std::move(locator)),
        key_(std::move(key)),
        device_(std::move(device)),
        async_read_fd_(read_fd),
        async_write_fd_(write_fd) {}

  driver::Locator locator_;
  std::string key_;  // the locator, as the process-wide table of open devices knows it
  std::shared_ptr<driver::Device> device_;
  int async_read_fd_ = -1;
  int async_write_fd_ = -1;
};

}  // namespace onchip::driver::verbs
