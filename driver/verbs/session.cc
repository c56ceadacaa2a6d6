#include "driver/verbs/session.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace onchip::verbs {

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

uint64_t Session::fw_ver() const {
  // initial_seg: dword 0 = fw_rev_minor:fw_rev_major, dword 1 = cmd_interface_rev:fw_rev_subminor.
  const bus::Bus& bus = device_->bus();
  const uint32_t d0 = bus.Read32(0);
  const uint32_t d1 = bus.Read32(4);
  const uint64_t major = d0 & 0xffff, minor = d0 >> 16, subminor = d1 & 0xffff;
  return major << 32 | minor << 16 | subminor;
}

}  // namespace onchip::verbs
