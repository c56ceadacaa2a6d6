// The to-device copy kernel for each target the driver writes in a function's BAR: the MEMIC
// window (ibv_memcpy_to_dm, Dm::to_device) and the BlueFlame registers (a post's 64-byte copy,
// Bfreg::line64). Each is chosen for what the bus says the window's mapping is
// (bus::Bus::window_memory, mmio::ToDeviceFor), never from the CPU's widest store alone: a real
// BAR mapped write-combining takes MOVDIR64B or the widest WC store, the software ConnectX's BAR
// (a shared memfd, write-back) the widest store that stays in the cache. ONCHIP_WC_COPY
// overrides every target.
#pragma once

#include <string>

#include "driver/bus/bus.h"
#include "mmio/wc_copy.h"

namespace onchip::driver {

struct CopyKernels {
  const mmio::ToDeviceVariant* dm;         // into the MEMIC window
  const mmio::ToDeviceVariant* blueflame;  // into a UAR page's BlueFlame register
};

CopyKernels ChooseCopyKernels(const bus::Bus& bus);

// Which kernel each target uses and why, for reports: "to-device avx2 [2 x 32-byte VMOVDQA]
// (auto for write-back memory: ...) for DM and BlueFlame, whose window is write-back (a shared
// memfd (the software ConnectX's BAR)); from-device avx512_stream [...] (...)".
std::string DescribeCopyKernels(const bus::Bus& bus);

}  // namespace onchip::driver
