// The mkey commands every kind of key shares (MRs, windows): DESTROY_MKEY by index.
#pragma once

#include <cstdint>

#include "driver/cmd/commander.h"
#include "uapi/result.h"

namespace onchip::driver {

// DESTROY_MKEY of the key whose index is `mkey_index` (mkey >> 8). The firmware refuses a key a
// bound window still names (RES_BUSY); nothing changes then.
Result<void> DestroyMkey(driver::cmd::Commander& commander, uint32_t mkey_index);

}  // namespace onchip::driver
