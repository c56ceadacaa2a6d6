// What the owner of a function does for a process attached to it, beyond carrying its firmware
// commands: work that needs a resource only the owner holds, as the kernel does for its users
// with its own queues or tables: an MR's PD or access changed in place by the owner's REG_UMR
// QP (mlx5_ib's rereg_user_mr), so the MR keeps its lkey and rkey; and entries of the function's
// TPH steering-tag table, which only the owner writes (mlx5_core's st.c, mlx5_st_alloc_index,
// which mlx5_ib's DMA handles call).
//
// A function this process brought up has no owner channel: it is the owner and runs the UMR
// on its own REG_UMR queue (Device::UpdateMkeyInPlace).
// An attached one (the device daemon's client) asks over the channel its attachment gives.
#pragma once

#include <cstdint>
#include <optional>

#include "uapi/result.h"

namespace onchip::driver::cmd {

// What one in-place change does to an MR's mkey; an empty field stays as it is.
struct MkeyUpdate {
  std::optional<uint32_t> pdn;
  std::optional<unsigned> access;  // IBV_ACCESS_*: local write, remote read/write, atomic
};

class OwnerChannel {
 public:
  virtual ~OwnerChannel() = default;
  // Changes the MR whose full key (index << 8 | variant) is `mkey`. EPERM when the key or the
  // PD is not this process's, EIO when the device refused the UMR. Safe from any thread.
  virtual Result<void> UpdateMkey(uint32_t mkey, const MkeyUpdate& update) = 0;
  // One reference to the ST table entry of (cpu, mem_type) (driver/steering_tags.h has the
  // rules): its index. EOPNOTSUPP when the owner offers no table, ENOSPC when it is full,
  // EAGAIN past this process's share.
  virtual Result<uint8_t> AcquireSteeringTag(uint32_t cpu, uint8_t mem_type) = 0;
  // Drops one reference AcquireSteeringTag gave.
  virtual void ReleaseSteeringTag(uint8_t index) = 0;
};

}  // namespace onchip::driver::cmd
