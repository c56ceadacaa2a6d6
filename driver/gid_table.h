// Port 1's GID table as the firmware holds it, read once when the device is opened: how many
// entries it has and which of them hold a GID. The table is larger than what is in it, and an
// empty entry is all zero:
//   - RoCE (Ethernet): roce_cap.roce_address_table_size entries, each read with
//     QUERY_ROCE_ADDRESS (source_l3_address is the GID).
//   - InfiniBand: cmd_hca_cap.gid_table_size (8 << n) entries, each read with
//     QUERY_HCA_VPORT_GID.
// The driver plays the kernel's part here: it refuses a GRH whose sgid_index names an empty
// entry (ah.cc, qp.cc), as the kernel's GID cache does.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "driver/caps.h"
#include "driver/cmd/commander.h"
#include "uapi/result.h"

namespace onchip::driver {

// Whether port 1 runs InfiniBand (cmd_hca_cap.port_type 0) rather than Ethernet.
bool IsInfiniBand(const Caps& caps);
// The entries of port 1's GID table: InfiniBand's cmd_hca_cap.gid_table_size (encoded, 8 << n),
// RoCE's roce_cap.roce_address_table_size. A GID index must be below it; which entries hold a
// GID, GidTable::populated says.
uint32_t GidTableSize(const Caps& caps);

class GidTable {
 public:
  using Gid = std::array<uint8_t, 16>;

  // Every entry of port 1's table; the firmware's errno when a query fails.
  static Result<GidTable> Query(cmd::Commander& commander, const Caps& caps);

  uint32_t size() const { return static_cast<uint32_t>(gids_.size()); }
  // The entry at `index` (all zero when empty); `index` must be below size().
  const Gid& gid(uint32_t index) const { return gids_[index]; }
  // Whether the entry at `index` holds a GID (false past the table).
  bool populated(uint32_t index) const;

 private:
  std::vector<Gid> gids_;
};

}  // namespace onchip::driver
