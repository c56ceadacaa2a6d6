// Memory registration of device memory (ibv_reg_dm_mr), shaped as rdma-core's struct ibv_mr.
//
// Checks, in rdma-core's then the kernel's order: access outside LOCAL_WRITE, REMOTE_WRITE,
// REMOTE_READ, REMOTE_ATOMIC, ZERO_BASED, OPTIONAL_RANGE -> EINVAL; ZERO_BASED missing ->
// EINVAL; offset/length not inside the DM's requested length -> EINVAL; REMOTE_ATOMIC on SW ICM
// -> EINVAL (mlx5_ib's per-type allowed set). A zero-length MR is valid. CREATE_MKEY with access
// mode MEMIC (start_addr = BAR0 offset of the buffer + offset) or SW_ICM (start_addr = ICM
// address + offset); addr NULL, lkey = rkey = mkey_index << 8 | variant. Dereg: DESTROY_MKEY.
#pragma once

#include <infiniband/verbs.h>

#include <memory>

#include "driver/dm.h"
#include "driver/pd.h"

namespace onchip::driver {

struct Mr {
  ibv_mr ibv;  // first: From() converts back
  std::shared_ptr<Device> device;
  Dm* dm = nullptr;
  Pd* pd = nullptr;
  uint32_t mkey_index = 0;
  bool live = true;

  static Mr* From(ibv_mr* mr) { return reinterpret_cast<Mr*>(mr); }
};

Result<Mr*> RegDmMr(Pd* pd, Dm* dm, uint64_t offset, size_t length, unsigned int access);
// DESTROY_MKEY, then the Mr is deleted. A firmware failure leaves it registered.
Result<void> DeregMr(Mr* mr);
// DESTROY_MKEY only; for Device::Close with the registry lock held.
Result<void> ReleaseMrOnDevice(Mr& mr);

}  // namespace onchip::driver
