// The device half of a driver object while it is being created: one firmware object (its
// number) and the prebuilt input of the command that destroys it, with the Commander to send it
// through. Move-only; destroying a DeviceObject that still owns its firmware object sends that
// command, so a creator that fails after the device made the object gives it back by returning
// (no hand unwinding). Commit() when the object is published: from then on the registry's
// release path (KindTraits<K>::ReleaseOnDevice) owns its destruction.
//
//   ONCHIP_TRY(DeviceObject cq, CreateCqOnDevice(...));   // DESTROY_CQ ready for cq.id()
//   ONCHIP_CHECK(StepThatMayFail());                      // a failure destroys the CQ
//   host->cqn = cq.Commit();                              // published: the registry's now
//
// Members are destroyed in reverse order of declaration, so several DeviceObjects declared in
// creation order are given back last-made first, as mlx5_ib tears objects down.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "driver/cmd/commander.h"
#include "uapi/prm/field.h"
#include "uapi/result.h"

namespace onchip::driver {

class DeviceObject {
 public:
  DeviceObject() = default;  // owns nothing
  // Owns firmware object `id`, destroyed by `destroy` (whose output layout is DestroyOut).
  template <class DestroyOut, class DestroyIn>
  static DeviceObject Owning(cmd::Commander& commander, uint32_t id,
                             const prm::Message<DestroyIn>& destroy) {
    const std::span<const std::byte> in = destroy.bytes();
    return DeviceObject(commander, id, std::vector<std::byte>(in.begin(), in.end()),
                        prm::size_bytes<DestroyOut>, destroy.ok());
  }

  DeviceObject(DeviceObject&& o) noexcept { *this = std::move(o); }
  DeviceObject& operator=(DeviceObject&& o) noexcept {
    if (this != &o) {
      (void)Destroy();
      commander_ = std::exchange(o.commander_, nullptr);
      id_ = std::exchange(o.id_, 0);
      destroy_in_ = std::move(o.destroy_in_);
      destroy_out_bytes_ = o.destroy_out_bytes_;
      destroy_ok_ = o.destroy_ok_;
    }
    return *this;
  }
  DeviceObject(const DeviceObject&) = delete;
  DeviceObject& operator=(const DeviceObject&) = delete;
  ~DeviceObject() { (void)Destroy(); }

  bool owned() const { return commander_ != nullptr; }
  uint32_t id() const { return id_; }

  // Sends the destroy now. Afterwards the DeviceObject owns nothing, whatever the firmware
  // answered: the caller decides what a refusal means (a release path reports it).
  Result<void> Destroy();
  // The object is published: nothing is sent, the caller's release path owns it. Returns id().
  uint32_t Commit() {
    commander_ = nullptr;
    destroy_in_.clear();
    return id_;
  }

 private:
  DeviceObject(cmd::Commander& commander, uint32_t id, std::vector<std::byte> destroy_in,
               std::size_t destroy_out_bytes, bool destroy_ok)
      : commander_(&commander),
        id_(id),
        destroy_in_(std::move(destroy_in)),
        destroy_out_bytes_(destroy_out_bytes),
        destroy_ok_(destroy_ok) {}

  cmd::Commander* commander_ = nullptr;  // null: owns nothing
  uint32_t id_ = 0;
  std::vector<std::byte> destroy_in_;
  std::size_t destroy_out_bytes_ = 0;
  bool destroy_ok_ = true;  // every field of the destroy input fit (cmd::Run's rule)
};

}  // namespace onchip::driver
