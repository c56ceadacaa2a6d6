// What the data engine asks of the firmware while it runs a pass: the firmware's mkey code,
// which it shares with the commands rather than keeping a copy of its own (a ConnectX's engines
// and its command processor reach the same mkey contexts).
//   PostUmrLocked       a UMR WQE: a memory window bound or invalidated (firmware_umr.cc)
//   MttTranslateLocked  the bus address behind a window, through its parent's MTT
//   MttLookup           the MTT entry of an MTT key already checked
//   DeviceMemoryLocked  the MEMIC or SW ICM bytes behind a window, through its parent
//   DeviceMemoryAt      the bytes of a device-memory key already checked (firmware_mkey.cc)
// The engine holds this, not the Firmware: nothing else of the command processor is its
// business. Every call is made under the contexts' mutex (one engine pass), which is why the
// firmware's locked variants are the ones reached.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "tools/sim/contexts.h"
#include "tools/sim/firmware.h"
#include "tools/sim/umr.h"

namespace onchip::sim {

class MkeyServices {
 public:
  explicit MkeyServices(Firmware& firmware) : fw_(firmware) {}

  UmrResult PostUmrLocked(const UmrRequest& request) { return fw_.PostUmrLocked(request); }
  std::optional<uint64_t> MttTranslateLocked(const Mkey& m, uint32_t mkey, uint64_t va,
                                             uint64_t len, uint64_t* page_bytes) const {
    return fw_.MttTranslateLocked(m, mkey, va, len, page_bytes);
  }
  static std::optional<uint64_t> MttLookup(const Mkey& m, uint64_t start, uint32_t log_page_size,
                                           uint64_t va, uint64_t* page_bytes) {
    return Firmware::MttLookup(m, start, log_page_size, va, page_bytes);
  }
  std::optional<std::span<std::byte>> DeviceMemoryLocked(const Mkey& m, uint32_t mkey,
                                                         uint64_t offset, uint64_t len,
                                                         bool through_window) {
    return fw_.DeviceMemoryLocked(m, mkey, offset, len, through_window);
  }
  std::optional<std::span<std::byte>> DeviceMemoryAt(const Mkey& m, uint64_t start,
                                                     uint64_t offset, uint64_t len) {
    return fw_.DeviceMemoryAt(m, start, offset, len);
  }

 private:
  Firmware& fw_;
};

}  // namespace onchip::sim
