// A software ConnectX's firmware driven directly, with no command queue and no driver (the engine
// fuzz harness, bench/sim:engine_bench): the command sequence that brings it to an initialised
// HCA and gives the caller a UAR and a PD to build queues on.
#pragma once

#include <cstdint>

#include "tools/sim/firmware.h"
#include "uapi/result.h"

namespace onchip::sim::fuzz {

struct DirectHca {
  uint32_t uar = 0;
  uint32_t pd = 0;
};

// ENABLE_HCA, SET_ISSI 1, MANAGE_PAGES giving the `pages` pages mapped at `pages_iova`,
// INIT_HCA, ALLOC_UAR, ALLOC_PD, each through Firmware::Execute. EIO naming the first command the
// firmware refused.
Result<DirectHca> BringUpDirect(Firmware& firmware, uint64_t pages_iova, uint32_t pages);

}  // namespace onchip::sim::fuzz
