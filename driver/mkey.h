// The mkey commands every kind of key shares (MRs, windows): DESTROY_MKEY by index.
#pragma once

#include <cstdint>

#include "driver/cmd/commander.h"
#include "driver/device_object.h"
#include "uapi/prm/mkey.h"
#include "uapi/result.h"

namespace onchip::driver {

// The key whose index is `mkey_index` on the device, with its DESTROY_MKEY.
DeviceObject MkeyOnDevice(cmd::Commander& commander, uint32_t mkey_index);

// DESTROY_MKEY of the key whose index is `mkey_index` (mkey >> 8). The firmware refuses a key a
// bound window still names (RES_BUSY); nothing changes then.
Result<void> DestroyMkey(cmd::Commander& commander, uint32_t mkey_index);

// What every CREATE_MKEY the driver sends says the same way: the 5-bit access mode
// (prm::MKC_ACCESS_MODE_*) split over mkc.access_mode_4_2 and access_mode_1_0, and no QP bound
// (mkc.qpn = prm::MLX5_MKEY_NO_QPN).
void SetAccessModeNoQp(prm::Message<prm::create_mkey_in>& in, uint32_t access_mode);

}  // namespace onchip::driver
