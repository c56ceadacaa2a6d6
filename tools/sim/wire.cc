#include "tools/sim/wire.h"

namespace onchip::sim {

void Port::Push(Packet&& p) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(p));
    pending_.fetch_add(1, std::memory_order_seq_cst);
  }
  // The owner stores `sleeping` and then looks at Pending() once more before it sleeps; with
  // both sides' seq_cst accesses one of them sees the other's store.
  if (sleeping_.load(std::memory_order_seq_cst)) wake_();
}

void Port::Take(std::vector<Packet>& out) {
  out.clear();
  std::lock_guard lock(mutex_);
  out.swap(queue_);
  pending_.store(0, std::memory_order_seq_cst);
}

Fabric& Fabric::Instance() {
  static Fabric fabric;
  return fabric;
}

uint16_t Fabric::ReserveLid(uint16_t lid) {
  std::lock_guard lock(mutex_);
  if (lid != 0) {
    if (lid > kMaxUnicastLid || lid == kSmLid || lids_.contains(lid)) return 0;
    lids_.emplace(lid, nullptr);
    return lid;
  }
  for (uint16_t l = kSmLid + 1; l <= kMaxUnicastLid; ++l)
    if (lids_.try_emplace(l, nullptr).second) return l;
  return 0;
}

void Fabric::Attach(Port* port, std::span<const Gid> gids, uint16_t lid) {
  std::lock_guard lock(mutex_);
  for (const Gid& g : gids)
    if (!IsZero(g)) ports_.try_emplace(g, port);
  if (lid != 0) lids_[lid] = port;
}

void Fabric::Detach(Port* port) {
  std::lock_guard lock(mutex_);
  std::erase_if(ports_, [port](const auto& kv) { return kv.second == port; });
  std::erase_if(lids_, [port](const auto& kv) { return kv.second == port; });
}

bool Fabric::DeliverToLid(uint16_t dlid, Packet&& p) {
  std::lock_guard lock(mutex_);
  auto it = lids_.find(dlid);
  if (it == lids_.end() || it->second == nullptr) return false;
  it->second->Push(std::move(p));
  return true;
}

bool Fabric::Deliver(const Gid& dgid, Packet&& p) {
  std::lock_guard lock(mutex_);
  auto it = ports_.find(dgid);
  if (it == ports_.end()) return false;
  it->second->Push(std::move(p));
  return true;
}

}  // namespace onchip::sim
