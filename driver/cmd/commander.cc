#include "driver/cmd/commander.h"

#include <cerrno>

#include "uapi/cmd_status.h"
#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/commands.h"

namespace onchip::driver::cmd {

Result<void> CheckOutputStatus(std::span<const std::byte> in, std::span<const std::byte> out) {
  const uint8_t status = prm::Get(out, prm::mbox_out::status);
  if (status == 0) return {};
  const FirmwareContext fw{
      .opcode = static_cast<uint16_t>(prm::Get(in, prm::mbox_in::opcode)),
      .op_mod = static_cast<uint16_t>(prm::Get(in, prm::mbox_in::op_mod)),
      .status = status,
      .syndrome = prm::Get(out, prm::mbox_out::syndrome),
  };
  return Fail(prm::CommandStatusErrno(status), OpcodeName(fw.opcode), fw);
}

const char* OpcodeName(uint16_t opcode) {
  // Every name in the table is a string literal, so its data is NUL-terminated.
  return prm::CommandName(opcode).data();
}

}  // namespace onchip::driver::cmd
