#include "tools/sim/gid_table.h"

#include <cstring>

namespace onchip::sim {

namespace {
bool InfiniBand(const DeviceConfig& config) {
  return config.port_type == DeviceConfig::PortType::kInfiniBand;
}
}  // namespace

uint32_t GidTableSize(const DeviceConfig& config) {
  return InfiniBand(config) ? kIbGidTableSize : config.roce_address_table_size;
}

std::vector<GidEntry> GidTable(const DeviceConfig& config) {
  std::vector<GidEntry> table(GidTableSize(config));
  std::vector<GidEntry> populated;
  if (InfiniBand(config)) {
    Gid port{0xfe, 0x80};
    const uint64_t guid = NodeGuid(config);
    for (int i = 0; i < 8; ++i) port[8 + i] = static_cast<uint8_t>(guid >> (56 - 8 * i));
    populated = {{port, GidType::kIbRoceV1}};
  } else {
    const auto& m = config.mac;
    const Gid link_local{0xfe, 0x80, 0, 0, 0, 0, 0, 0, static_cast<uint8_t>(m[0] ^ 0x02), m[1],
                         m[2], 0xff, 0xfe, m[3], m[4], m[5]};
    Gid mapped{};
    mapped[10] = 0xff;
    mapped[11] = 0xff;
    for (int i = 0; i < 4; ++i) mapped[12 + i] = static_cast<uint8_t>(config.ipv4 >> (24 - 8 * i));
    populated = {{link_local, GidType::kIbRoceV1}, {link_local, GidType::kRoceV2},
                 {mapped, GidType::kIbRoceV1}, {mapped, GidType::kRoceV2}};
  }
  // A table configured smaller than what the port would hold keeps what fits.
  for (std::size_t i = 0; i < populated.size() && i < table.size(); ++i) table[i] = populated[i];
  return table;
}

std::vector<Gid> DeviceGids(const DeviceConfig& config) {
  std::vector<Gid> gids;
  for (const GidEntry& e : GidTable(config)) gids.push_back(e.gid);
  return gids;
}

bool IsZero(const Gid& gid) {
  // Every packet the engine sends asks this: two 8-byte words, not sixteen bytes.
  uint64_t half[2];
  std::memcpy(half, gid.data(), sizeof half);
  return (half[0] | half[1]) == 0;
}

bool IsIpv4Mapped(const Gid& gid) {
  for (int i = 0; i < 10; ++i)
    if (gid[i] != 0) return false;
  return gid[10] == 0xff && gid[11] == 0xff;
}

}  // namespace onchip::sim
