#include "uapi/result.h"

#include <cstdio>
#include <cstring>

#include "uapi/cmd_status.h"

namespace onchip {

std::string Error::describe() const {
  char buf[256];
  int n = std::snprintf(buf, sizeof buf, "%s: %s (%s)", what_, strerrorname_np(errno_),
                        std::strerror(errno_));
  std::string out(buf, n > 0 ? static_cast<size_t>(n) : 0);
  if (has_fw_) {
    n = std::snprintf(buf, sizeof buf, "; opcode 0x%x op_mod 0x%x status 0x%x (%s) syndrome 0x%x",
                      fw_.opcode, fw_.op_mod, fw_.status, prm::CommandStatusName(fw_.status),
                      fw_.syndrome);
    out.append(buf, n > 0 ? static_cast<size_t>(n) : 0);
  }
  return out;
}

}  // namespace onchip
