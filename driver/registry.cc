#include "driver/registry.h"

#include <cerrno>
#include <vector>

namespace onchip::driver {

const char* KindName(ObjectKind kind) {
  switch (kind) {
    case ObjectKind::kQp: return "QP";
    case ObjectKind::kSrq: return "SRQ";
    case ObjectKind::kCq: return "CQ";
    case ObjectKind::kXrcd: return "XRC domain";
    case ObjectKind::kAh: return "AH";
    case ObjectKind::kMw: return "window";
    case ObjectKind::kImportedMr: return "imported MR";
    case ObjectKind::kMr: return "MR";
    case ObjectKind::kImportedDm: return "imported DM";
    case ObjectKind::kDm: return "DM";
    case ObjectKind::kParentDomain: return "parent domain";
    case ObjectKind::kImportedPd: return "imported PD";
    case ObjectKind::kTd: return "TD";
    case ObjectKind::kDmah: return "DMA handle";
    case ObjectKind::kPd: return "PD";
    case ObjectKind::kCount: break;
  }
  return "object";
}

Result<Registry::Operation> Registry::Begin(const char* what) {
  const uint64_t before = gate_.fetch_add(1, std::memory_order_acq_rel);
  if (before & kClosing) {
    End();
    return Fail(EIO, what);
  }
  return Operation(this);
}

void Registry::End() {
  const uint64_t before = gate_.fetch_sub(1, std::memory_order_acq_rel);
  // The last operation out while Close() waits wakes it.
  if ((before & kClosing) && (before & kInFlightMask) == 1) gate_.notify_all();
}

void Registry::PublishErased(ObjectKind kind, void* object, Life& life, ReleaseFn release) {
  Table& t = tables_[static_cast<std::size_t>(kind)];
  std::lock_guard lock(t.mu);
  t.objects.emplace(object, Entry{&life, release});
}

void Registry::WithdrawErased(ObjectKind kind, void* object) {
  Table& t = tables_[static_cast<std::size_t>(kind)];
  std::lock_guard lock(t.mu);
  t.objects.erase(object);
}

std::optional<ReleaseCounts> Registry::Close() {
  const uint64_t before = gate_.fetch_or(kClosing, std::memory_order_acq_rel);
  if (before & kClosing) return std::nullopt;
  for (uint64_t v = gate_.load(std::memory_order_acquire); v & kInFlightMask;
       v = gate_.load(std::memory_order_acquire))
    gate_.wait(v, std::memory_order_acquire);

  // No operation can start or run now: the tables are this thread's alone.
  ReleaseCounts counts;
  for (std::size_t k = 0; k < kObjectKinds; ++k) {
    std::unordered_map<void*, Entry> objects;
    {
      std::lock_guard lock(tables_[k].mu);
      objects.swap(tables_[k].objects);
    }
    for (auto& [object, entry] : objects) {
      if (auto r = entry.release(object); !r && !counts.first_error)
        counts.first_error = r.error();
      entry.life->MarkReleased();
      ++counts.released[k];
    }
  }
  gate_.fetch_or(kReleasedAll, std::memory_order_acq_rel);
  gate_.notify_all();
  return counts;
}

void Registry::WaitClosed() const {
  for (uint64_t v = gate_.load(std::memory_order_acquire); !(v & kReleasedAll);
       v = gate_.load(std::memory_order_acquire))
    gate_.wait(v, std::memory_order_acquire);
}

std::size_t Registry::count(ObjectKind kind) const {
  const Table& t = tables_[static_cast<std::size_t>(kind)];
  std::lock_guard lock(t.mu);
  return t.objects.size();
}

}  // namespace onchip::driver
