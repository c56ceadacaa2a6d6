// The two status codes of an mlx5 command and what they mean to a driver.
//
// Delivery status: bits [7:1] of the cmdq entry's status_own byte. Non-zero means the command
// never reached the firmware's command handler (bad token, block number, pointer alignment...).
// Command status: byte 0 of every command output. Non-zero means the firmware ran the command
// and refused it; the syndrome (output bytes 4..7) identifies the exact check.
//
// The errno mappings are the Linux mlx5_core ones (cmd.c deliv_status_to_err, cmd_status_to_err),
// so a caller sees the same errno on onchip as on the kernel driver.
#pragma once

#include <cstdint>

namespace onchip::prm {

enum class DeliveryStatus : uint8_t {
  OK = 0x0,
  SIGNAT_ERR = 0x1,
  TOK_ERR = 0x2,
  BAD_BLK_NUM_ERR = 0x3,
  OUT_PTR_ALIGN_ERR = 0x4,
  IN_PTR_ALIGN_ERR = 0x5,
  FW_ERR = 0x6,
  IN_LENGTH_ERR = 0x7,
  OUT_LENGTH_ERR = 0x8,
  RES_FLD_NOT_CLR_ERR = 0x9,
  CMD_DESCR_ERR = 0x10,
};

enum class CommandStatus : uint8_t {
  OK = 0x00,
  INT_ERR = 0x01,
  BAD_OP_ERR = 0x02,
  BAD_PARAM_ERR = 0x03,
  BAD_SYS_STATE_ERR = 0x04,
  BAD_RES_ERR = 0x05,
  RES_BUSY = 0x06,
  NOT_READY = 0x07,
  LIM_ERR = 0x08,
  BAD_RES_STATE_ERR = 0x09,
  IX_ERR = 0x0a,
  NO_RES_ERR = 0x0f,
  BAD_QP_STATE_ERR = 0x10,
  BAD_PKT_ERR = 0x30,
  BAD_SIZE_OUTS_CQES_ERR = 0x40,
  BAD_INP_LEN_ERR = 0x50,
  BAD_OUTP_LEN_ERR = 0x51,
};

// "TOK_ERR", or "UNKNOWN" for a value the PRM does not define.
const char* DeliveryStatusName(uint8_t status);
const char* CommandStatusName(uint8_t status);

// Positive errno as the kernel maps it (0 for OK, EIO for anything unknown).
int DeliveryStatusErrno(uint8_t status);
int CommandStatusErrno(uint8_t status);

}  // namespace onchip::prm
