// Port 1's GID table: how many entries it has and what each holds. The one place the software
// ConnectX decides both; the capabilities (caps.cc), the firmware's GID commands
// (QUERY_ROCE_ADDRESS, QUERY_HCA_VPORT_GID), its QP checks and the data engine all read it here.
//
// As on a real port, the table is larger than what is in it, and an empty entry is all zero:
//   - RoCE (Ethernet): DeviceConfig::roce_address_table_size entries (roce_cap); index 0 and 1
//     the link-local address from the MAC's modified EUI-64, index 2 and 3 the IPv4-mapped
//     address, each once as RoCE v1 and once as RoCE v2 (mlx5_ib's order, which the verbs
//     environment's sysfs tree repeats); the rest empty.
//   - InfiniBand: kIbGidTableSize entries (cmd_hca_cap.gid_table_size); index 0 the default GID
//     (subnet prefix fe80::/64 and the port GUID), the rest empty, as an IB port's table is
//     until someone adds a GID.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tools/sim/config.h"

namespace onchip::sim {

using Gid = std::array<uint8_t, 16>;

// A GID as two 64-bit words: compared in two steps where std::array's operators call memcmp
// (the data path compares GIDs for every packet it sends and routes).
struct GidWords {
  explicit GidWords(const Gid& g) { std::memcpy(w, g.data(), sizeof w); }
  bool operator==(const GidWords& o) const { return ((w[0] ^ o.w[0]) | (w[1] ^ o.w[1])) == 0; }
  // Any strict order serves a lookup.
  bool operator<(const GidWords& o) const { return w[0] != o.w[0] ? w[0] < o.w[0] : w[1] < o.w[1]; }
  uint64_t w[2];
};
inline bool SameGid(const Gid& a, const Gid& b) { return GidWords(a) == GidWords(b); }

// The GID type of an entry (roce_addr_layout.roce_version; an IB GID is of the first kind).
enum class GidType : uint8_t { kIbRoceV1, kRoceV2 };

struct GidEntry {
  Gid gid{};  // all zero: an empty entry
  GidType type = GidType::kIbRoceV1;
};

// An InfiniBand port's table: cmd_hca_cap.gid_table_size encodes 8 << n entries.
inline constexpr uint32_t kIbGidTableSize = 8;
inline constexpr uint32_t kIbGidTableSizeCode = [] {
  uint32_t code = 0;
  while ((8u << code) < kIbGidTableSize) ++code;
  return code;
}();
static_assert((8u << kIbGidTableSizeCode) == kIbGidTableSize, "8 << n entries");

// Entries in port 1's table (a GID index must be below it).
uint32_t GidTableSize(const DeviceConfig& config);
// The whole table, GidTableSize(config) entries.
std::vector<GidEntry> GidTable(const DeviceConfig& config);
// The GIDs alone, in table order (empty entries all zero).
std::vector<Gid> DeviceGids(const DeviceConfig& config);
// Whether a GID is empty (all zero): an unused table entry, which names no port.
bool IsZero(const Gid& gid);
// Whether a GID is an IPv4-mapped address (::ffff:a.b.c.d).
bool IsIpv4Mapped(const Gid& gid);

}  // namespace onchip::sim
