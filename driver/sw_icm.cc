#include "driver/sw_icm.h"

#include <algorithm>
#include <bit>
#include <cerrno>

#include "driver/cmd/run.h"
#include "uapi/prm/sw_icm.h"

namespace onchip::driver {

void SwIcmAllocator::Configure(const Caps& caps) {
  std::lock_guard lock(mu_);
  for (auto& a : areas_) a = Area{};
  const prm::Bits general = caps.cur(prm::CAP_GENERAL);
  const prm::Bits dm = caps.cur(prm::CAP_DEV_MEM);
  if (!(general.get(prm::cmd_hca_cap::general_obj_types) & (uint64_t{1} << prm::GENERAL_OBJECT_TYPES_SW_ICM)))
    return;
  log_block_ = dm.get(prm::device_mem_cap::log_sw_icm_alloc_granularity);

  // Flow-table ownership (kernel handle_alloc_dm_sw_icm): any sw_owner bit on NIC RX or TX for
  // steering, header-modify and encap; sw_owner_v2 on both for header-modify-pattern.
  const prm::Bits ft = caps.cur(prm::CAP_FLOW_TABLE);
  const prm::Bits rx(ft.region(prm::flow_table_nic_cap::flow_table_properties_nic_receive));
  const prm::Bits tx(ft.region(prm::flow_table_nic_cap::flow_table_properties_nic_transmit));
  using P = prm::flow_table_prop_layout;
  const bool rx_v2 = rx.get(P::sw_owner_v2);
  const bool tx_v2 = tx.get(P::sw_owner_v2);
  const bool any_owner = rx_v2 || tx_v2 || rx.get(P::sw_owner) || tx.get(P::sw_owner);

  const struct {
    prm::SwIcmType type;
    uint64_t start;
    uint32_t log_size;
    bool allowed;
  } spec[] = {
      {prm::SW_ICM_TYPE_STEERING, dm.get(prm::device_mem_cap::steering_sw_icm_start_address),
       dm.get(prm::device_mem_cap::log_steering_sw_icm_size), any_owner},
      {prm::SW_ICM_TYPE_HEADER_MODIFY, dm.get(prm::device_mem_cap::header_modify_sw_icm_start_address),
       dm.get(prm::device_mem_cap::log_header_modify_sw_icm_size), any_owner},
      {prm::SW_ICM_TYPE_HEADER_MODIFY_PATTERN,
       dm.get(prm::device_mem_cap::header_modify_pattern_sw_icm_start_address),
       dm.get(prm::device_mem_cap::log_header_modify_pattern_sw_icm_size), rx_v2 && tx_v2},
      {prm::SW_ICM_TYPE_SW_ENCAP, dm.get(prm::device_mem_cap::indirect_encap_sw_icm_start_address),
       dm.get(prm::device_mem_cap::log_indirect_encap_sw_icm_size), any_owner},
  };
  for (const auto& s : spec) {
    // lib/dm.c: steering and header-modify areas exist when their start address is set, encap
    // when its size is; the bitmap has 2^(log_size - log_block) bits.
    const bool exists = s.type == prm::SW_ICM_TYPE_SW_ENCAP ? s.log_size != 0 : s.start != 0;
    if (!exists || !s.allowed || s.log_size < log_block_ || s.log_size - log_block_ > 24) continue;
    Area& a = areas_[s.type];
    a.present = true;
    a.start = s.start;
    a.used.assign(uint64_t{1} << (s.log_size - log_block_), false);
  }
}

uint64_t SwIcmAllocator::blocks_in_use() const {
  std::lock_guard lock(mu_);
  uint64_t n = 0;
  for (const auto& a : areas_)
    for (bool b : a.used) n += b;
  return n;
}

Result<SwIcmAllocator::Allocation> SwIcmAllocator::Alloc(cmd::Commander& c, prm::SwIcmType type,
                                                         uint64_t length, uint32_t log_align_req) {
  if (type >= areas_.size() || !areas_[type].present)
    return Fail(EOPNOTSUPP, "alloc_dm: device has no SW ICM of this type");
  if (length == 0) return Fail(EINVAL, "alloc_dm: zero length");
  const uint64_t block = uint64_t{1} << log_block_;
  Area& area = areas_[type];
  const uint64_t max_bytes = area.used.size() << log_block_;
  if (length > max_bytes) return Fail(ENOMEM, "alloc_dm: longer than the SW ICM area");
  // roundup_pow_of_two(round_up(length, block)), as handle_alloc_dm_sw_icm.
  const uint64_t size = std::bit_ceil((length + block - 1) & ~(block - 1));
  const uint64_t num_blocks = size >> log_block_;
  // The caller's alignment, at least one block (bitmap_find_next_zero_area's align_mask).
  const uint32_t log_align = std::max<uint32_t>(log_align_req, log_block_);
  if (log_align - log_block_ >= 40) return Fail(ENOMEM, "alloc_dm: SW ICM alignment beyond any area");
  const uint64_t align_blocks = uint64_t{1} << (log_align - log_block_);

  uint64_t first = 0;
  {
    std::lock_guard lock(mu_);
    const uint64_t total = area.used.size();
    bool found = false;
    for (first = 0; first + num_blocks <= total; first += align_blocks) {
      uint64_t i = 0;
      while (i < num_blocks && !area.used[first + i]) ++i;
      if (i == num_blocks) {
        found = true;
        break;
      }
    }
    if (!found) return Fail(ENOMEM, "alloc_dm: no free SW ICM range");
    for (uint64_t i = 0; i < num_blocks; ++i) area.used[first + i] = true;
  }
  const uint64_t address = area.start + (first << log_block_);

  prm::Message<prm::create_sw_icm_in> in;
  in.set(prm::create_sw_icm_in::hdr.opcode, prm::CREATE_GENERAL_OBJECT)
      .set(prm::create_sw_icm_in::hdr.obj_type, prm::GENERAL_OBJECT_TYPES_SW_ICM)
      .set(prm::create_sw_icm_in::sw_icm.log_sw_icm_size, std::countr_zero(size))
      .set(prm::create_sw_icm_in::sw_icm.sw_icm_start_addr, address);
  auto out = cmd::Run<prm::general_obj_out_cmd_hdr>(c, in);
  if (!out) {
    std::lock_guard lock(mu_);
    for (uint64_t i = 0; i < num_blocks; ++i) area.used[first + i] = false;
    return std::unexpected(out.error());
  }
  return Allocation{type, address, size, out->get(prm::general_obj_out_cmd_hdr::obj_id)};
}

Result<void> SwIcmAllocator::Free(cmd::Commander& c, const Allocation& a) {
  prm::Message<prm::general_obj_in_cmd_hdr> in;
  in.set(prm::general_obj_in_cmd_hdr::opcode, prm::DESTROY_GENERAL_OBJECT)
      .set(prm::general_obj_in_cmd_hdr::obj_type, prm::GENERAL_OBJECT_TYPES_SW_ICM)
      .set(prm::general_obj_in_cmd_hdr::obj_id, a.obj_id);
  ONCHIP_TRY(auto out, cmd::Run<prm::general_obj_out_cmd_hdr>(c, in));
  (void)out;
  std::lock_guard lock(mu_);
  Area& area = areas_[a.type];
  const uint64_t first = (a.icm_address - area.start) >> log_block_;
  for (uint64_t i = 0; i < (a.size >> log_block_); ++i) area.used[first + i] = false;
  return {};
}

}  // namespace onchip::driver
