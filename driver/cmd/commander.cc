#include "driver/cmd/commander.h"

#include <cerrno>

#include "uapi/cmd_status.h"
#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/opcodes.h"

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
  switch (opcode) {
#define ONCHIP_OPCODE(name) \
  case prm::name:           \
    return #name;
    ONCHIP_OPCODE(QUERY_HCA_CAP)
    ONCHIP_OPCODE(QUERY_ADAPTER)
    ONCHIP_OPCODE(INIT_HCA)
    ONCHIP_OPCODE(TEARDOWN_HCA)
    ONCHIP_OPCODE(ENABLE_HCA)
    ONCHIP_OPCODE(DISABLE_HCA)
    ONCHIP_OPCODE(QUERY_PAGES)
    ONCHIP_OPCODE(MANAGE_PAGES)
    ONCHIP_OPCODE(SET_HCA_CAP)
    ONCHIP_OPCODE(QUERY_ISSI)
    ONCHIP_OPCODE(SET_ISSI)
    ONCHIP_OPCODE(SET_DRIVER_VERSION)
    ONCHIP_OPCODE(CREATE_MKEY)
    ONCHIP_OPCODE(QUERY_MKEY)
    ONCHIP_OPCODE(DESTROY_MKEY)
    ONCHIP_OPCODE(QUERY_SPECIAL_CONTEXTS)
    ONCHIP_OPCODE(ALLOC_MEMIC)
    ONCHIP_OPCODE(DEALLOC_MEMIC)
    ONCHIP_OPCODE(MODIFY_MEMIC)
    ONCHIP_OPCODE(CREATE_EQ)
    ONCHIP_OPCODE(DESTROY_EQ)
    ONCHIP_OPCODE(QUERY_EQ)
    ONCHIP_OPCODE(CREATE_CQ)
    ONCHIP_OPCODE(DESTROY_CQ)
    ONCHIP_OPCODE(QUERY_CQ)
    ONCHIP_OPCODE(MODIFY_CQ)
    ONCHIP_OPCODE(CREATE_QP)
    ONCHIP_OPCODE(DESTROY_QP)
    ONCHIP_OPCODE(RST2INIT_QP)
    ONCHIP_OPCODE(INIT2RTR_QP)
    ONCHIP_OPCODE(RTR2RTS_QP)
    ONCHIP_OPCODE(RTS2RTS_QP)
    ONCHIP_OPCODE(SQERR2RTS_QP)
    ONCHIP_OPCODE(QP_2ERR)
    ONCHIP_OPCODE(QP_2RST)
    ONCHIP_OPCODE(QUERY_QP)
    ONCHIP_OPCODE(INIT2INIT_QP)
    ONCHIP_OPCODE(ALLOC_PD)
    ONCHIP_OPCODE(DEALLOC_PD)
    ONCHIP_OPCODE(ALLOC_UAR)
    ONCHIP_OPCODE(DEALLOC_UAR)
    ONCHIP_OPCODE(ACCESS_REG)
    ONCHIP_OPCODE(NOP)
    ONCHIP_OPCODE(ALLOC_XRCD)
    ONCHIP_OPCODE(DEALLOC_XRCD)
    ONCHIP_OPCODE(CREATE_XRC_SRQ)
    ONCHIP_OPCODE(DESTROY_XRC_SRQ)
    ONCHIP_OPCODE(QUERY_XRC_SRQ)
    ONCHIP_OPCODE(ARM_XRC_SRQ)
    ONCHIP_OPCODE(ALLOC_TRANSPORT_DOMAIN)
    ONCHIP_OPCODE(DEALLOC_TRANSPORT_DOMAIN)
    ONCHIP_OPCODE(CREATE_GENERAL_OBJECT)
    ONCHIP_OPCODE(MODIFY_GENERAL_OBJECT)
    ONCHIP_OPCODE(QUERY_GENERAL_OBJECT)
    ONCHIP_OPCODE(DESTROY_GENERAL_OBJECT)
#undef ONCHIP_OPCODE
  }
  return "UNKNOWN_OPCODE";
}

}  // namespace onchip::driver::cmd
