#include "driver/verbs/session.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "driver/hca.h"

namespace onchip::driver::verbs {

Result<std::unique_ptr<Session>> Session::Open(const driver::Locator& locator) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Fail(errno, "async event pipe");
  auto device = driver::Open(locator);
  if (!device) {
    close(fds[0]);
    close(fds[1]);
    return std::unexpected(device.error());
  }
  return std::unique_ptr<Session>(new Session(std::move(*device), fds[0], fds[1]));
}

Session::~Session() {
  (void)device_->Close();
  if (async_read_fd_ >= 0) close(async_read_fd_);
  if (async_write_fd_ >= 0) close(async_write_fd_);
}

uint64_t Session::fw_ver() const { return driver::hca::FirmwareVersion(device_->bus()); }

}  // namespace onchip::driver::verbs
