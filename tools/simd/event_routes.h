// Which client each queue of a function belongs to, for its events: the daemon's event thread
// (driver/events.h, EventThread::SetForwarder) hands an EQE about a client's CQ, QP or SRQ to
// that client's ClientEvents (client_events.h), and a port event to every client. Sessions add a
// route when a creation succeeds and drop it with the destruction, and drop all of theirs before
// they release what they owned, so an EQE never reaches a client that is gone.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "driver/events.h"
#include "tools/simd/client_events.h"
#include "uapi/prm/objects.h"

namespace onchip::simd {

class EventRoutes {
 public:
  void AddClient(ClientEvents* client);
  // Drops the client and every route to it.
  void RemoveClient(ClientEvents* client);
  // A creation or destruction of `client`'s (kinds without events are ignored).
  void Created(prm::ObjectKind kind, uint64_t id, ClientEvents* client);
  void Destroyed(prm::ObjectKind kind, uint64_t id);

  // The forwarder: to the queue's client, or to every client for a port event.
  void Forward(std::optional<std::pair<driver::EventQueueKind, uint32_t>> queue,
               const prm::pod::mlx5_eqe& eqe);

 private:
  // The event number space of an object kind (XRC SRQs are SRQs to the event path).
  static std::optional<driver::EventQueueKind> EventKindOf(prm::ObjectKind kind);

  std::mutex mu_;
  std::vector<ClientEvents*> clients_;
  std::map<std::pair<driver::EventQueueKind, uint32_t>, ClientEvents*> routes_;
};

}  // namespace onchip::simd
