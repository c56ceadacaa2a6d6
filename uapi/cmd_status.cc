#include "uapi/cmd_status.h"

#include <cerrno>
#include <cstddef>

namespace onchip::prm {
namespace {

struct StatusInfo {
  uint8_t value;
  const char* name;
  int err;
};

constexpr StatusInfo kDelivery[] = {
    {0x0, "OK", 0},
    {0x1, "SIGNAT_ERR", EIO},
    {0x2, "TOK_ERR", EBADR},
    {0x3, "BAD_BLK_NUM_ERR", EIO},
    {0x4, "OUT_PTR_ALIGN_ERR", EIO},
    {0x5, "IN_PTR_ALIGN_ERR", EFAULT},
    {0x6, "FW_ERR", EIO},
    {0x7, "IN_LENGTH_ERR", EIO},
    {0x8, "OUT_LENGTH_ERR", EIO},
    {0x9, "RES_FLD_NOT_CLR_ERR", EIO},
    {0x10, "CMD_DESCR_ERR", ENOMSG},
};

constexpr StatusInfo kCommand[] = {
    {0x00, "OK", 0},
    {0x01, "INT_ERR", EIO},
    {0x02, "BAD_OP_ERR", EINVAL},
    {0x03, "BAD_PARAM_ERR", EINVAL},
    {0x04, "BAD_SYS_STATE_ERR", EIO},
    {0x05, "BAD_RES_ERR", EINVAL},
    {0x06, "RES_BUSY", EBUSY},
    {0x07, "NOT_READY", EAGAIN},
    {0x08, "LIM_ERR", ENOMEM},
    {0x09, "BAD_RES_STATE_ERR", EINVAL},
    {0x0a, "IX_ERR", EINVAL},
    {0x0f, "NO_RES_ERR", EAGAIN},
    {0x10, "BAD_QP_STATE_ERR", EINVAL},
    {0x30, "BAD_PKT_ERR", EINVAL},
    {0x40, "BAD_SIZE_OUTS_CQES_ERR", EINVAL},
    {0x50, "BAD_INP_LEN_ERR", EIO},
    {0x51, "BAD_OUTP_LEN_ERR", EIO},
};

template <std::size_t N>
const StatusInfo* Find(const StatusInfo (&table)[N], uint8_t value) {
  for (const StatusInfo& info : table)
    if (info.value == value) return &info;
  return nullptr;
}

}  // namespace

const char* DeliveryStatusName(uint8_t status) {
  const StatusInfo* info = Find(kDelivery, status);
  return info ? info->name : "UNKNOWN";
}

const char* CommandStatusName(uint8_t status) {
  const StatusInfo* info = Find(kCommand, status);
  return info ? info->name : "UNKNOWN";
}

int DeliveryStatusErrno(uint8_t status) {
  const StatusInfo* info = Find(kDelivery, status);
  return info ? info->err : EIO;
}

int CommandStatusErrno(uint8_t status) {
  const StatusInfo* info = Find(kCommand, status);
  return info ? info->err : EIO;
}

}  // namespace onchip::prm
