#include "driver/device_object.h"

#include <cerrno>

namespace onchip::driver {

Result<void> DeviceObject::Destroy() {
  if (!owned()) return {};
  cmd::Commander& commander = *std::exchange(commander_, nullptr);
  const std::vector<std::byte> in = std::move(destroy_in_);
  destroy_in_.clear();
  // As cmd::Run: an input that refused a field value is never sent.
  if (!destroy_ok_) return Fail(EINVAL, "command not sent: a field value does not fit its PRM field");
  std::vector<std::byte> out(destroy_out_bytes_);
  return commander.Exec(in, out);
}

}  // namespace onchip::driver
