// What a device window is mapped as, from the CPU's side: the one fact about the target that
// decides which to-device copy kernel is fastest there (wc_copy.h, ToDeviceFor).
//
//   kWriteCombining  a BAR mapped WC (VFIO with sysfs resource<N>_wc): stores gather in fill
//                    buffers and leave as PCIe writes; fewer, wider stores per line win, and
//                    MOVDIR64B writes a line as one untorn 64-byte write.
//   kUncached        a BAR mapped UC (the VFIO region itself): every store is its own PCIe
//                    write, so again the widest store per line wins.
//   kWriteBack       ordinary cached memory standing in for a BAR (the software ConnectX's BAR
//                    is a shared memfd): stores go to the cache, and a store that bypasses it
//                    (MOVDIR64B, MOVNTDQ) writes the line to DRAM and evicts it, which the
//                    device model then reads back from DRAM too.
#pragma once

#include <cstdint>
#include <string_view>

namespace onchip::mmio {

enum class MemoryType : uint8_t { kWriteBack, kWriteCombining, kUncached };

constexpr std::string_view MemoryTypeName(MemoryType t) {
  switch (t) {
    case MemoryType::kWriteBack: return "write-back";
    case MemoryType::kWriteCombining: return "write-combining";
    case MemoryType::kUncached: return "uncached";
  }
  return "?";
}

}  // namespace onchip::mmio
