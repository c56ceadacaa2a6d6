// The commands that read port 1's GID table (gid_table.h): QUERY_ROCE_ADDRESS on a RoCE port,
// QUERY_HCA_VPORT_GID on an InfiniBand one. An empty entry answers all zero, as the firmware's
// table holds it until the driver sets an address there.
#include "tools/sim/firmware.h"
#include "tools/sim/gid_table.h"
#include "tools/sim/vport_query_checks.h"
#include "uapi/prm/hca.h"
#include "uapi/prm/opcodes.h"

namespace onchip::sim {

using Bytes = std::span<const std::byte>;
using Out = std::span<std::byte>;

// One entry of the RoCE address table, as SET_ROCE_ADDRESS would have written it (mlx5_core's
// mlx5_core_roce_gid_set): the GID in source_l3_address, the port's MAC, the RoCE version and,
// for v2, whether the GID is an IPv4-mapped address. vhca_port_num is 0 or 1..num_ports.
Outcome Firmware::QueryRoceAddress(Bytes in, Out out) {
  using In = prm::query_roce_address_in;
  using O = prm::query_roce_address_out;
  using Addr = prm::roce_addr_layout_bits<O::roce_address.bit_offset>;
  if (Outcome s = CheckShape<In, O>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return BadOpMod();
  if (prm::Get(in, In::vhca_port_num) > config_.num_ports)
    return Refuse(Syndrome::PORT_NUM);
  if (config_.port_type != DeviceConfig::PortType::kEthernet)
    return Refuse(Syndrome::PORT_NOT_ETH);
  const uint32_t index = prm::Get(in, In::roce_address_index);
  const std::vector<GidEntry> table = GidTable(config_);
  if (index >= table.size()) return Refuse(Syndrome::ROCE_ADDRESS_INDEX);
  const GidEntry& e = table[index];
  if (IsZero(e.gid)) return Outcome::Ok();  // an empty entry: all zero
  prm::Bits o(out);
  for (std::size_t i = 0; i < e.gid.size(); ++i) o.set(Addr::source_l3_address[i], e.gid[i]);
  const auto& m = config_.mac;
  o.set(Addr::source_mac_47_32, uint32_t{m[0]} << 8 | m[1])
      .set(Addr::source_mac_31_0,
           uint32_t{m[2]} << 24 | uint32_t{m[3]} << 16 | uint32_t{m[4]} << 8 | m[5]);
  if (e.type == GidType::kRoceV2) {
    o.set(Addr::roce_version, prm::MLX5_ROCE_VERSION_2)
        .set(Addr::roce_l3_type,
             IsIpv4Mapped(e.gid) ? prm::MLX5_ROCE_L3_TYPE_IPV4 : prm::MLX5_ROCE_L3_TYPE_IPV6);
  } else {
    o.set(Addr::roce_version, prm::MLX5_ROCE_VERSION_1);
  }
  return Outcome::Ok();
}

Outcome Firmware::QueryHcaVportGid(Bytes in, Out out) {
  using In = prm::query_hca_vport_gid_in;
  using O = prm::query_hca_vport_gid_out;
  if (Outcome s = CheckShape<In, O>(in, out); !s.ok()) return s;
  if (Outcome s = CheckOwnIbVportQuery<In>(in, config_); !s.ok()) return s;
  const uint32_t index = prm::Get(in, In::gid_index);
  const std::vector<GidEntry> table = GidTable(config_);
  if (index >= table.size()) return Refuse(Syndrome::VPORT_GID_INDEX);
  // gid[] follows the header: one 16-byte GID for one index.
  constexpr std::size_t kGidByte = prm::size_bytes<O>;
  if (out.size() < kGidByte + 16) return Refuse(Syndrome::OUTPUT_TOO_SHORT);
  prm::Bits(out).set(O::gids_num, 1);
  for (std::size_t i = 0; i < 16; ++i) out[kGidByte + i] = static_cast<std::byte>(table[index].gid[i]);
  return Outcome::Ok();
}

}  // namespace onchip::sim
