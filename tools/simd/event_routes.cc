#include "tools/simd/event_routes.h"

#include <algorithm>

namespace onchip::simd {

std::optional<driver::EventQueueKind> EventRoutes::EventKindOf(prm::ObjectKind kind) {
  switch (kind) {
    case prm::ObjectKind::kCq: return driver::EventQueueKind::kCq;
    case prm::ObjectKind::kQp: return driver::EventQueueKind::kQp;
    case prm::ObjectKind::kSrq:
    case prm::ObjectKind::kXrcSrq: return driver::EventQueueKind::kSrq;
    default: return std::nullopt;
  }
}

void EventRoutes::AddClient(ClientEvents* client) {
  std::lock_guard lock(mu_);
  clients_.push_back(client);
}

void EventRoutes::RemoveClient(ClientEvents* client) {
  std::lock_guard lock(mu_);
  std::erase(clients_, client);
  std::erase_if(routes_, [client](const auto& r) { return r.second == client; });
}

void EventRoutes::Created(prm::ObjectKind kind, uint64_t id, ClientEvents* client) {
  const auto event_kind = EventKindOf(kind);
  if (!event_kind) return;
  std::lock_guard lock(mu_);
  routes_[{*event_kind, static_cast<uint32_t>(id)}] = client;
}

void EventRoutes::Destroyed(prm::ObjectKind kind, uint64_t id) {
  const auto event_kind = EventKindOf(kind);
  if (!event_kind) return;
  std::lock_guard lock(mu_);
  routes_.erase({*event_kind, static_cast<uint32_t>(id)});
}

void EventRoutes::Forward(std::optional<std::pair<driver::EventQueueKind, uint32_t>> queue,
                          const prm::pod::mlx5_eqe& eqe) {
  std::lock_guard lock(mu_);
  if (!queue) {
    for (ClientEvents* c : clients_) c->Forward(eqe);
    return;
  }
  if (auto it = routes_.find(*queue); it != routes_.end()) it->second->Forward(eqe);
}

}  // namespace onchip::simd
