// The command queue's view of host memory: one cmdq entry and its mailbox blocks, as the uapi
// cmdq codec wants them (pointers to 64 and 576 bytes it reads and writes in place).
//
// Pointer memory is handed out as is: the codec's stores land in host memory at once, the entry's
// ownership byte last (its release store). Process memory (Iommu::MapProcess) cannot be pointed
// at, so the entry and each block are copied into device-side buffers when first asked for, and
// Flush writes back what the codec changed: the blocks first, then the entry with its last byte
// (the ownership bit) last, so the driver never sees a completed entry before its output.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>

#include "tools/sim/iommu.h"
#include "uapi/cmdq/mailbox.h"

namespace onchip::sim {

class CommandDma final : public cmdq::BlockAccess {
 public:
  explicit CommandDma(const Iommu::Access& access) : access_(access) {}

  // The 64-byte entry at addr, or nullptr if unmapped or unreadable. One entry per CommandDma.
  std::byte* Entry(uint64_t addr);
  // A 576-byte mailbox block, or nullptr if unmapped or unreadable.
  std::byte* Block(uint64_t addr) override;
  // Writes back the copies the codec changed (process memory); false if a write failed.
  bool Flush();

 private:
  struct Copy {
    std::array<std::byte, cmdq::kBlockBytes> read;  // as read from host memory
    std::array<std::byte, cmdq::kBlockBytes> now;   // as the codec left it
  };

  const Iommu::Access& access_;
  std::map<uint64_t, Copy> blocks_;
  bool entry_copied_ = false;
  uint64_t entry_addr_ = 0;
  Copy entry_{};
};

}  // namespace onchip::sim
