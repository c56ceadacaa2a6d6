#include "tools/sim/wire.h"

namespace onchip::sim {

std::array<Gid, kGidTableSize> DeviceGids(const DeviceConfig& config) {
  const auto& m = config.mac;
  Gid link_local{0xfe, 0x80, 0, 0, 0, 0, 0, 0,
                 static_cast<uint8_t>(m[0] ^ 0x02), m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]};
  Gid mapped{};
  mapped[10] = 0xff;
  mapped[11] = 0xff;
  for (int i = 0; i < 4; ++i) mapped[12 + i] = static_cast<uint8_t>(config.ipv4 >> (24 - 8 * i));
  return {link_local, link_local, mapped, mapped};
}

bool IsIpv4Mapped(const Gid& gid) {
  for (int i = 0; i < 10; ++i)
    if (gid[i] != 0) return false;
  return gid[10] == 0xff && gid[11] == 0xff;
}

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

void Fabric::Attach(Port* port, std::span<const Gid> gids) {
  std::lock_guard lock(mutex_);
  for (const Gid& g : gids) ports_.try_emplace(g, port);
}

void Fabric::Detach(Port* port) {
  std::lock_guard lock(mutex_);
  std::erase_if(ports_, [port](const auto& kv) { return kv.second == port; });
}

bool Fabric::Deliver(const Gid& dgid, Packet&& p) {
  std::lock_guard lock(mutex_);
  auto it = ports_.find(dgid);
  if (it == ports_.end()) return false;
  it->second->Push(std::move(p));
  return true;
}

}  // namespace onchip::sim
