// The software ConnectX's capability pages: what QUERY_HCA_CAP answers and SET_HCA_CAP changes.
//
// Each supported capability type has a MAX page (what the device can do) and a CUR page (what is
// enabled now), 4 KiB each as in hca_cap_union. SET_HCA_CAP applies only the fields this device
// lets a driver change, each bounded by its MAX value (a 1-bit feature may be enabled only if MAX
// has it); every other field of the input is ignored, as firmware does.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>

#include "tools/sim/bar_layout.h"
#include "tools/sim/config.h"
#include "tools/sim/outcome.h"
#include "uapi/prm/opcodes.h"

namespace onchip::sim {

inline constexpr std::size_t kCapPageBytes = 4096;

class Capabilities {
 public:
  Capabilities(const DeviceConfig& config, const BarLayout& layout);

  bool Supported(uint16_t cap_type) const { return pages_.contains(cap_type); }
  // The MAX or CUR page of a supported type.
  std::span<const std::byte, kCapPageBytes> Page(uint16_t cap_type, bool current) const;
  // SET_HCA_CAP: `page` is set_hca_cap_in.capability.
  Outcome Set(uint16_t cap_type, std::span<const std::byte> page);

  // Shorthands for the CUR general page (uint64_t wide enough for every field).
  template <class F>
  uint64_t General(F field) const {
    return prm::Get(std::span<const std::byte>(pages_.at(prm::CAP_GENERAL).cur), field);
  }
  template <class F>
  uint64_t General2(F field) const {
    return prm::Get(std::span<const std::byte>(pages_.at(prm::CAP_GENERAL_2).cur), field);
  }
  template <class F>
  uint64_t DevMem(F field) const {
    return prm::Get(std::span<const std::byte>(pages_.at(prm::CAP_DEV_MEM).cur), field);
  }

 private:
  struct Pages {
    std::array<std::byte, kCapPageBytes> max{};
    std::array<std::byte, kCapPageBytes> cur{};
  };
  std::map<uint16_t, Pages> pages_;
};

}  // namespace onchip::sim
