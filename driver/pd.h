// Protection domain: ALLOC_PD / DEALLOC_PD, shaped as rdma-core's struct ibv_pd.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <memory>

#include "driver/device.h"

namespace onchip::driver {

struct Pd {
  ibv_pd ibv;  // first: From() converts back
  std::shared_ptr<Device> device;
  uint32_t pdn = 0;
  std::atomic<uint32_t> usecnt{0};  // MRs on this PD
  bool live = true;                 // false once Close() released it on the device

  static Pd* From(ibv_pd* pd) { return reinterpret_cast<Pd*>(pd); }
};

Result<Pd*> AllocPd(const std::shared_ptr<Device>& device);
// EBUSY while an MR uses it (and it stays usable); otherwise DEALLOC_PD and the Pd is deleted.
// A firmware failure leaves it allocated and usable.
Result<void> DeallocPd(Pd* pd);
// DEALLOC_PD only; for Device::Close with the registry lock held.
Result<void> ReleasePdOnDevice(Pd& pd);

}  // namespace onchip::driver
