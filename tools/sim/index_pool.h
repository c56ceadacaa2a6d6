// Hands out the lowest free index in [first, first + count), as firmware numbers its PDs, UARs,
// transport domains, mkeys and general objects. Freed indices are reused.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace onchip::sim {

class IndexPool {
 public:
  IndexPool(uint32_t first, uint32_t count) : first_(first), used_(count, false) {}

  std::optional<uint32_t> Allocate() {
    for (uint32_t i = hint_; i < used_.size(); ++i) {
      if (!used_[i]) {
        used_[i] = true;
        hint_ = i + 1;
        ++in_use_;
        return first_ + i;
      }
    }
    return std::nullopt;
  }
  // False if `index` was not allocated.
  bool Free(uint32_t index) {
    if (!Contains(index) || !used_[index - first_]) return false;
    used_[index - first_] = false;
    if (index - first_ < hint_) hint_ = index - first_;
    --in_use_;
    return true;
  }
  bool Contains(uint32_t index) const {
    return index >= first_ && index - first_ < used_.size();
  }
  bool InUse(uint32_t index) const { return Contains(index) && used_[index - first_]; }
  uint32_t in_use() const { return in_use_; }

 private:
  uint32_t first_;
  std::vector<bool> used_;
  uint32_t hint_ = 0;
  uint32_t in_use_ = 0;
};

}  // namespace onchip::sim
