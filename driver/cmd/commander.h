// The one seam for firmware commands.
//
// Everything above driver/cmd builds PRM input bytes and reads PRM output bytes; how they reach
// the firmware is a Commander: the mlx5 command queue over a Bus (Cmdq), or later the kernel's
// DEVX ioctl. Contract for every implementation:
//   - `in` is a complete command input (opcode at bytes 0-1, op_mod at 6-7), `out` is sized for
//     the command's full output; both at least 8 bytes (EINVAL otherwise);
//   - success means the command was delivered and its output status is OK; `out` holds the output;
//   - a delivery failure (the command never ran) returns the delivery errno, a firmware refusal
//     returns the kernel's errno for the command status with FirmwareContext (opcode, op_mod,
//     status, syndrome); in both cases `out` holds whatever the device wrote;
//   - safe to call from several threads at once.
#pragma once

#include <cstddef>
#include <span>

#include "uapi/result.h"

namespace onchip::driver::cmd {

class Commander {
 public:
  virtual ~Commander() = default;
  virtual Result<void> Exec(std::span<const std::byte> in, std::span<std::byte> out) = 0;
};

// Maps a completed command's output status to the error model: OK -> success, anything else ->
// the kernel's errno for that status (uapi/cmd_status.h), named by the opcode, with context.
Result<void> CheckOutputStatus(std::span<const std::byte> in, std::span<const std::byte> out);

// "ALLOC_MEMIC" for prm::ALLOC_MEMIC; "UNKNOWN_OPCODE" otherwise. Static strings.
const char* OpcodeName(uint16_t opcode);

}  // namespace onchip::driver::cmd
