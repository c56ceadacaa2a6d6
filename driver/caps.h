// The HCA capabilities the driver queried (QUERY_HCA_CAP), kept as the device's own bytes.
//
// Each capability type has a 4 KiB page per mode (MAX: what the device could do, CUR: what this
// function has now). Readers use the PRM layouts on those bytes:
//   caps.cur(prm::CAP_DEV_MEM).get(prm::device_mem_cap::max_memic_size)
// A type never queried (or not supported) reads as all zeroes, i.e. "not supported".
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <span>
#include <vector>

#include "driver/cmd/commander.h"
#include "uapi/prm/caps.h"
#include "uapi/prm/opcodes.h"

namespace onchip::driver {

class Caps {
 public:
  // One capability page, as QUERY_HCA_CAP returns it and SET_HCA_CAP takes it.
  static constexpr std::size_t kPageBytes = prm::query_hca_cap_out::capability.byte_size;
  static_assert(kPageBytes == prm::set_hca_cap_in::capability.byte_size);

  // prm::Bits view (read with .get(field)); zeroes for a type never stored.
  prm::Bits cur(prm::CapType type) const { return View(type, prm::HCA_CAP_OPMOD_GET_CUR); }
  prm::Bits max(prm::CapType type) const { return View(type, prm::HCA_CAP_OPMOD_GET_MAX); }
  bool has(prm::CapType type) const { return pages_.contains(prm::QueryCapOpMod(type, prm::HCA_CAP_OPMOD_GET_CUR)); }

  void Store(prm::CapType type, prm::CapMode mode, std::span<const std::byte> page);

  // QUERY_HCA_CAP(type, mode) into this store.
  Result<void> Query(cmd::Commander& commander, prm::CapType type, prm::CapMode mode);

 private:
  prm::Bits View(prm::CapType type, prm::CapMode mode) const;

  std::map<uint16_t, std::vector<std::byte>> pages_;  // key: QUERY_HCA_CAP op_mod
  mutable std::array<std::byte, kPageBytes> zeroes_{};
};

}  // namespace onchip::driver
