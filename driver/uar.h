// UARs: the 4 KiB pages of BAR0 that carry a process's doorbells and BlueFlame registers.
//
// ALLOC_UAR returns a UAR index; the page's layout (where it sits in BAR0, its doorbell
// registers, the BlueFlame registers and their two alternating halves) is uapi/prm/uar_page.h.
//
// Two kinds, as rdma-core's mlx5 has them:
//   - dedicated: a UAR of its own (ALLOC_UAR now, DEALLOC_UAR when released) whose bfreg has a
//     single user, so posting through it takes no lock. A thread domain owns one.
//   - shared: the device's non-cached UAR, allocated on first use and kept until Close; its
//     doorbell register serves every QP without a dedicated one (and thread domains on a device
//     without BlueFlame), so writers lock it.
// This driver gives each dedicated bfreg its own UAR page (rdma-core packs two per page).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "driver/rings/bfreg.h"
#include "driver/bus/bus.h"
#include "driver/caps.h"
#include "driver/cmd/commander.h"
#include "driver/device_object.h"
#include "uapi/result.h"

namespace onchip::driver {

class Uars {
 public:
  Uars(cmd::Commander& commander, bus::Bus& bus, const Caps& caps);
  ~Uars();

  // cmd_hca_cap.bf: the device has BlueFlame registers.
  bool blueflame() const { return bf_reg_size_ != 0; }
  uint32_t bf_reg_size() const { return bf_reg_size_; }

  // A dedicated UAR (ALLOC_UAR) and its lock-free bfreg. Needs BlueFlame (EOPNOTSUPP without).
  Result<std::unique_ptr<Bfreg>> AllocDedicated();
  // DEALLOC_UAR; on failure the bfreg stays valid and allocated.
  Result<void> FreeDedicated(std::unique_ptr<Bfreg>& bfreg);

  // The shared non-cached UAR's register, allocating the UAR on first use.
  Result<Bfreg*> Shared();
  // DEALLOC_UAR of the shared UAR if one was allocated; for Device::Close.
  Result<void> ReleaseShared();

 private:
  DeviceObject UarOnDevice(uint32_t index);  // the UAR, with its DEALLOC_UAR
  Result<DeviceObject> AllocUar();
  Result<void> DeallocUar(uint32_t index);
  Result<std::byte*> Page(uint32_t index);

  cmd::Commander& commander_;
  bus::Bus& bus_;
  const uint32_t bf_reg_size_;
  std::mutex shared_mu_;
  std::unique_ptr<Bfreg> shared_;
};

}  // namespace onchip::driver
