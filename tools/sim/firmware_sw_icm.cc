// General objects: CREATE/DESTROY/QUERY_GENERAL_OBJECT for SW_ICM.
//
// device_mem_cap advertises up to four SW ICM areas (steering, header modify, header modify
// pattern, indirect encap) at their start addresses with their log sizes. The driver picks the
// address (mlx5_core's per-area bitmaps); the firmware checks it: inside one area, aligned to
// the block (2^log_sw_icm_alloc_granularity), the whole 2^log_sw_icm_size bytes inside that
// area, clear of every live object. Each object gets real, zeroed backing storage.
#include <algorithm>

#include "tools/sim/firmware.h"
#include "uapi/prm/caps.h"
#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/sw_icm.h"

namespace onchip::sim {

using Bytes = std::span<const std::byte>;
using Out = std::span<std::byte>;
using Hdr = prm::general_obj_in_cmd_hdr;
using OutHdr = prm::general_obj_out_cmd_hdr;
using IcmOut = prm::sw_icm_bits<OutHdr::size_bits>;  // query output: header + sw_icm
using prm::device_mem_cap;

namespace {

Outcome ObjectTypeCheck(Bytes in, uint64_t general_obj_types) {
  const uint32_t type = prm::Get(in, Hdr::obj_type);
  if (type != prm::GENERAL_OBJECT_TYPES_SW_ICM || !((general_obj_types >> type) & 1))
    return Refuse(Syndrome::OBJECT_TYPE_UNSUPPORTED);
  if (prm::Get(in, Hdr::vhca_tunnel_id) != 0)
    return Refuse(Syndrome::OBJECT_PARAM);
  return Outcome::Ok();
}

}  // namespace

std::optional<std::pair<uint64_t, uint8_t>> Firmware::SwIcmArea(uint64_t addr) const {
  const std::pair<uint64_t, uint64_t> areas[] = {
      {caps_.DevMem(device_mem_cap::steering_sw_icm_start_address),
       caps_.DevMem(device_mem_cap::log_steering_sw_icm_size)},
      {caps_.DevMem(device_mem_cap::header_modify_sw_icm_start_address),
       caps_.DevMem(device_mem_cap::log_header_modify_sw_icm_size)},
      {caps_.DevMem(device_mem_cap::header_modify_pattern_sw_icm_start_address),
       caps_.DevMem(device_mem_cap::log_header_modify_pattern_sw_icm_size)},
      {caps_.DevMem(device_mem_cap::indirect_encap_sw_icm_start_address),
       caps_.DevMem(device_mem_cap::log_indirect_encap_sw_icm_size)},
  };
  for (const auto& [start, log_size] : areas) {
    if (start == 0 || log_size == 0 || log_size >= 64) continue;
    if (addr >= start && addr - start < (uint64_t{1} << log_size))
      return std::pair{start, static_cast<uint8_t>(log_size)};
  }
  return std::nullopt;
}

Outcome Firmware::CreateGeneralObject(Bytes in, Out out) {
  using In = prm::create_sw_icm_in;
  constexpr auto create = Hdr::op_param.create;
  if (in.size() < prm::size_bytes<Hdr>)
    return Refuse(Syndrome::INPUT_TOO_SHORT);
  if (Outcome s = ObjectTypeCheck(in, caps_.General(prm::cmd_hca_cap::general_obj_types));
      !s.ok())
    return s;
  if (Outcome s = CheckShape<In, OutHdr>(in, out); !s.ok()) return s;
  if (!ReservedClear(in, In::sw_icm) || !ReservedClear(in, create))
    return Refuse(Syndrome::RESERVED_NOT_ZERO);
  if (prm::Get(in, Hdr::obj_id) != 0)
    return Refuse(Syndrome::OBJECT_ID);
  if (prm::Get(in, create.alias_object) != 0 || prm::Get(in, create.log_obj_range) != 0 ||
      prm::Get(in, In::sw_icm.modify_field_select) != 0)
    return Refuse(Syndrome::OBJECT_PARAM);

  const uint64_t start = prm::Get(in, In::sw_icm.sw_icm_start_addr);
  const uint32_t log_size = prm::Get(in, In::sw_icm.log_sw_icm_size);
  const uint32_t log_block = caps_.DevMem(device_mem_cap::log_sw_icm_alloc_granularity);
  auto area = SwIcmArea(start);
  if (!area) return Refuse(Syndrome::SW_ICM_ADDRESS);
  const auto [area_start, area_log] = *area;
  if (log_size < log_block || log_size > area_log)
    return Refuse(Syndrome::SW_ICM_SIZE);
  const uint64_t size = uint64_t{1} << log_size;
  if ((start - area_start) % (uint64_t{1} << log_block) != 0 ||
      size > (uint64_t{1} << area_log) - (start - area_start))
    return Refuse(Syndrome::SW_ICM_ADDRESS);
  for (const auto& [id, o] : sw_icm_) {
    const uint64_t o_end = o.start + (uint64_t{1} << o.log_size);
    if (start < o_end && o.start < start + size)
      return Refuse(Syndrome::SW_ICM_OVERLAP);
  }
  auto id = object_ids_.Allocate();
  if (!id) return Refuse(Syndrome::SW_ICM_EXHAUSTED);
  sw_icm_.emplace(*id, SwIcmObject{static_cast<uint16_t>(prm::Get(in, Hdr::uid)), start,
                                   static_cast<uint8_t>(log_size),
                                   std::vector<std::byte>(size), 0});
  prm::Bits(out).set(OutHdr::obj_id, *id);
  return Outcome::Ok();
}

Outcome Firmware::DestroyGeneralObject(Bytes in, Out out) {
  if (Outcome s = CheckShape<Hdr, OutHdr>(in, out); !s.ok()) return s;
  if (Outcome s = ObjectTypeCheck(in, caps_.General(prm::cmd_hca_cap::general_obj_types));
      !s.ok())
    return s;
  if (prm::Get(in, Hdr::op_param.query.obj_offset) != 0 ||
      prm::Get(in, Hdr::op_param.query.alias_object) != 0)
    return Refuse(Syndrome::OBJECT_PARAM);
  auto it = sw_icm_.find(prm::Get(in, Hdr::obj_id));
  if (it == sw_icm_.end()) return Refuse(Syndrome::SW_ICM_UNKNOWN);
  if (it->second.uid != prm::Get(in, Hdr::uid))
    return Refuse(Syndrome::NOT_OWNER);
  if (it->second.mkeys != 0) return Refuse(Syndrome::SW_ICM_BUSY);
  object_ids_.Free(it->first);
  sw_icm_.erase(it);
  return Outcome::Ok();
}

Outcome Firmware::QueryGeneralObject(Bytes in, Out out) {
  if (in.size() < prm::size_bytes<Hdr>)
    return Refuse(Syndrome::INPUT_TOO_SHORT);
  if (Outcome s = ObjectTypeCheck(in, caps_.General(prm::cmd_hca_cap::general_obj_types));
      !s.ok())
    return s;
  if (out.size() < prm::size_bytes<OutHdr> + prm::size_bytes<prm::sw_icm>)
    return Refuse(Syndrome::OUTPUT_TOO_SHORT);
  if (prm::Get(in, Hdr::op_param.query.obj_offset) != 0 ||
      prm::Get(in, Hdr::op_param.query.alias_object) != 0)
    return Refuse(Syndrome::OBJECT_PARAM);
  auto it = sw_icm_.find(prm::Get(in, Hdr::obj_id));
  if (it == sw_icm_.end()) return Refuse(Syndrome::SW_ICM_UNKNOWN);
  if (it->second.uid != prm::Get(in, Hdr::uid))
    return Refuse(Syndrome::NOT_OWNER);
  prm::Bits(out)
      .set(OutHdr::obj_id, it->first)
      .set(IcmOut::log_sw_icm_size, it->second.log_size)
      .set(IcmOut::sw_icm_start_addr, it->second.start);
  return Outcome::Ok();
}

}  // namespace onchip::sim
