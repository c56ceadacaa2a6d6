#include "driver/verbs/session.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "driver/hca.h"

namespace onchip::driver::verbs {
namespace {

// The devices this process has open, by process id and locator, with the number of sessions on
// each. The lock is held across bring-up so two first opens of one locator make one device. A
// forked child inherits its parent's entries but never uses them (their device threads are not
// in the child): the process id in the key gives a child that opens the same locator (its own
// open, or a context it inherited: provider.cc) a device of its own. The table is never
// destroyed, so nothing tears a parent's device down at the child's exit.
struct OpenDevice {
  std::shared_ptr<driver::Device> device;
  unsigned sessions = 0;
};
std::mutex& OpenDevicesMu() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, OpenDevice>& OpenDevices() {
  static auto* devices = new std::map<std::string, OpenDevice>;
  return *devices;
}

}  // namespace

Result<std::unique_ptr<Session>> Session::Open(const driver::Locator& locator) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Fail(errno, "async event pipe");
  std::string key = std::to_string(getpid()) + " " + locator.str();
  std::lock_guard lock(OpenDevicesMu());
  OpenDevice& open = OpenDevices()[key];
  if (!open.device) {
    auto device = driver::Open(locator);
    if (!device) {
      OpenDevices().erase(key);
      close(fds[0]);
      close(fds[1]);
      return std::unexpected(device.error());
    }
    open.device = std::move(*device);
  }
  ++open.sessions;
  return std::unique_ptr<Session>(new Session(locator, std::move(key), open.device, fds[0], fds[1]));
}

// The order every open takes them in: the table of open devices, then (bringing a device up)
// the table of contexts.
void Session::HoldForFork() {
  OpenDevicesMu().lock();
  driver::Device::HoldContextsForFork();
}

void Session::ReleaseAfterFork() {
  driver::Device::ReleaseContextsAfterFork();
  OpenDevicesMu().unlock();
}

Session::~Session() {
  {
    std::lock_guard lock(OpenDevicesMu());
    auto it = OpenDevices().find(key_);
    if (it != OpenDevices().end() && --it->second.sessions == 0) {
      (void)device_->Close();
      OpenDevices().erase(it);
    }
  }
  if (async_read_fd_ >= 0) close(async_read_fd_);
  if (async_write_fd_ >= 0) close(async_write_fd_);
}

uint64_t Session::fw_ver() const { return driver::hca::FirmwareVersion(device_->bus()); }

}  // namespace onchip::driver::verbs
