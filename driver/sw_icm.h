// SW ICM: device memory the firmware lends to software-managed steering (steering tables,
// header-modify actions and patterns, encap data). The CPU never maps it; the device reaches it
// by ICM address, which the driver reports as mlx5dv's remote_va.
//
// As mlx5_core's lib/dm.c: one block bitmap per area (block = 2^log_sw_icm_alloc_granularity),
// sizes a power of two and a whole number of blocks, naturally aligned (and at least to the
// caller's log alignment), each allocation one CREATE_GENERAL_OBJECT(SW_ICM) whose
// sw_icm_start_addr is the chosen address; DESTROY_GENERAL_OBJECT, then the bits are released.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <vector>

#include "driver/caps.h"
#include "driver/cmd/commander.h"
#include "uapi/prm/opcodes.h"

namespace onchip::driver {

class SwIcmAllocator {
 public:
  struct Allocation {
    prm::SwIcmType type = prm::SW_ICM_TYPE_STEERING;
    uint64_t icm_address = 0;
    uint64_t size = 0;  // power of two, whole blocks
    uint32_t obj_id = 0;
  };

  // From GENERAL (general_obj_types bit SW_ICM), DEV_MEM (areas) and FLOW_TABLE (sw_owner,
  // sw_owner_v2 on NIC RX/TX) capabilities.
  void Configure(const Caps& caps);
  bool supported(prm::SwIcmType type) const { return areas_[type].present; }

  // EOPNOTSUPP when the area is absent or software may not own steering; EINVAL for length 0;
  // ENOMEM when no aligned run of blocks is free; a firmware error as given. Nothing stays
  // allocated on failure.
  Result<Allocation> Alloc(cmd::Commander& c, prm::SwIcmType type, uint64_t length,
                           uint32_t log_align_req);
  // DESTROY_GENERAL_OBJECT; on failure the allocation stays (still marked, still owned).
  Result<void> Free(cmd::Commander& c, const Allocation& a);

  uint64_t blocks_in_use() const;

 private:
  struct Area {
    bool present = false;
    uint64_t start = 0;
    std::vector<bool> used;  // one bit per block
  };
  mutable std::mutex mu_;
  std::array<Area, 4> areas_;
  uint32_t log_block_ = 0;
};

}  // namespace onchip::driver
