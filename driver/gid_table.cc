#include "driver/gid_table.h"

#include <algorithm>
#include <cstring>

#include "driver/cmd/run.h"
#include "uapi/prm/caps.h"
#include "uapi/prm/hca.h"
#include "uapi/prm/opcodes.h"

namespace onchip::driver {

namespace {

constexpr uint32_t kPortTypeIb = 0;  // cmd_hca_cap.port_type

Result<GidTable::Gid> QueryRoceAddress(cmd::Commander& commander, uint32_t index) {
  using In = prm::query_roce_address_in;
  using Out = prm::query_roce_address_out;
  using Addr = prm::roce_addr_layout_bits<Out::roce_address.bit_offset>;
  prm::Message<In> in;
  // vhca_port_num 0: the function's only port (mlx5_core names one only when num_vhca_ports > 0).
  in.set(In::opcode, prm::QUERY_ROCE_ADDRESS).set(In::roce_address_index, index);
  ONCHIP_TRY(auto out, cmd::Run<Out>(commander, in));
  GidTable::Gid gid{};
  for (std::size_t i = 0; i < gid.size(); ++i)
    gid[i] = static_cast<uint8_t>(out.get(Addr::source_l3_address[i]));
  return gid;
}

Result<GidTable::Gid> QueryHcaVportGid(cmd::Commander& commander, uint32_t index) {
  using In = prm::query_hca_vport_gid_in;
  using Out = prm::query_hca_vport_gid_out;
  prm::Message<In> in;
  // port_num 0: the function's only port, as QueryPort asks.
  in.set(In::opcode, prm::QUERY_HCA_VPORT_GID).set(In::gid_index, index);
  // gid[] follows the header: one 16-byte GID for one index.
  GidTable::Gid gid{};
  ONCHIP_TRY(auto out, cmd::Run<Out>(commander, in, gid.size()));
  std::memcpy(gid.data(), out.bytes().data() + prm::size_bytes<Out>, gid.size());
  return gid;
}

}  // namespace

bool IsInfiniBand(const Caps& caps) {
  return caps.cur(prm::CAP_GENERAL).get(prm::cmd_hca_cap::port_type) == kPortTypeIb;
}

uint32_t GidTableSize(const Caps& caps) {
  if (IsInfiniBand(caps)) return 8u << caps.cur(prm::CAP_GENERAL).get(prm::cmd_hca_cap::gid_table_size);
  return static_cast<uint32_t>(caps.cur(prm::CAP_ROCE).get(prm::roce_cap::roce_address_table_size));
}

Result<GidTable> GidTable::Query(cmd::Commander& commander, const Caps& caps) {
  GidTable table;
  const bool ib = IsInfiniBand(caps);
  const uint32_t size = GidTableSize(caps);
  table.gids_.reserve(size);
  for (uint32_t i = 0; i < size; ++i) {
    ONCHIP_TRY(Gid gid, ib ? QueryHcaVportGid(commander, i) : QueryRoceAddress(commander, i));
    table.gids_.push_back(gid);
  }
  return table;
}

bool GidTable::populated(uint32_t index) const {
  if (index >= gids_.size()) return false;
  const Gid& g = gids_[index];
  return std::any_of(g.begin(), g.end(), [](uint8_t b) { return b != 0; });
}

}  // namespace onchip::driver
