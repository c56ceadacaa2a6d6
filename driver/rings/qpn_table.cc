#include "driver/rings/qpn_table.h"

#include <cerrno>
#include <new>

namespace onchip::driver::rings {

QpnTable::~QpnTable() {
  for (auto& slot : top_) delete slot.load(std::memory_order_relaxed);
}

Result<void> QpnTable::Insert(uint32_t qpn, const WorkQueues* queues) {
  if (qpn > kMaxQpn || queues == nullptr) return Fail(EINVAL, "qpn table: bad QPN or queues");
  std::lock_guard lock(writers_);
  Leaf* leaf = top_[qpn >> kLeafBits].load(std::memory_order_relaxed);
  if (leaf == nullptr) {
    leaf = new (std::nothrow) Leaf();
    if (leaf == nullptr) return Fail(ENOMEM, "qpn table: leaf");
    for (auto& e : *leaf) e.store(nullptr, std::memory_order_relaxed);
    top_[qpn >> kLeafBits].store(leaf, std::memory_order_release);
  }
  auto& entry = (*leaf)[qpn & (kLeafSize - 1)];
  if (entry.load(std::memory_order_relaxed) != nullptr) return Fail(EEXIST, "qpn table: QPN taken");
  entry.store(queues, std::memory_order_release);
  return {};
}

void QpnTable::Erase(uint32_t qpn) {
  if (qpn > kMaxQpn) return;
  std::lock_guard lock(writers_);
  Leaf* leaf = top_[qpn >> kLeafBits].load(std::memory_order_relaxed);
  if (leaf != nullptr) (*leaf)[qpn & (kLeafSize - 1)].store(nullptr, std::memory_order_release);
}

}  // namespace onchip::driver::rings
