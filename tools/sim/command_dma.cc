#include "tools/sim/command_dma.h"

#include <algorithm>
#include <cstring>
#include <span>

namespace onchip::sim {

std::byte* CommandDma::Entry(uint64_t addr) {
  if (std::byte* p = access_.Translate(addr, cmdq::kEntryBytes)) return p;
  auto bytes = std::span(entry_.read).first(cmdq::kEntryBytes);
  if (!access_.Read(addr, bytes)) return nullptr;
  std::copy(bytes.begin(), bytes.end(), entry_.now.begin());
  entry_copied_ = true;
  entry_addr_ = addr;
  return entry_.now.data();
}

std::byte* CommandDma::Block(uint64_t addr) {
  if (std::byte* p = access_.Translate(addr, cmdq::kBlockBytes)) return p;
  if (auto it = blocks_.find(addr); it != blocks_.end()) return it->second.now.data();
  Copy c;
  if (!access_.Read(addr, c.read)) return nullptr;
  c.now = c.read;
  return blocks_.emplace(addr, c).first->second.now.data();
}

bool CommandDma::Flush() {
  bool ok = true;
  for (auto& [addr, c] : blocks_) {
    if (c.now == c.read) continue;
    ok = access_.Write(addr, c.now) && ok;
    c.read = c.now;
  }
  if (entry_copied_ && !std::equal(entry_.now.begin(), entry_.now.begin() + cmdq::kEntryBytes,
                                   entry_.read.begin())) {
    ok = access_.WriteHandover(entry_addr_, std::span(entry_.now).first(cmdq::kEntryBytes)) && ok;
    std::copy_n(entry_.now.begin(), cmdq::kEntryBytes, entry_.read.begin());
  }
  return ok;
}

}  // namespace onchip::sim
