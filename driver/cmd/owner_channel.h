// What the owner of a function does for a process attached to it, beyond carrying its firmware
// commands: work that needs a resource only the owner holds, as the kernel does for its users
// with its own queues. One today: an MR's PD or access changed in place by the owner's REG_UMR
// QP (mlx5_ib's rereg_user_mr), so the MR keeps its lkey and rkey.
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
};

}  // namespace onchip::driver::cmd
