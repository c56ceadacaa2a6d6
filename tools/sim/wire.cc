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

namespace {
// The server whose passes this thread runs right now (Port::Serving), or nullptr.
thread_local const void* t_serving = nullptr;
}  // namespace

Port::Serving::Serving(const void* server) : outer_(t_serving) { t_serving = server; }

Port::Serving::~Serving() { t_serving = outer_; }

void Port::SetServer(const void* server) {
  server_.store(server, std::memory_order_relaxed);
  Fabric::Instance().Changed();
}

bool Port::ServedHere() const {
  const void* server = server_.load(std::memory_order_relaxed);
  return server != nullptr && server == t_serving;
}

void Port::Receive(Packet&& p) {
  if (!owner_.ReceiveNow(p)) Push(std::move(p));
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
  Changed();
}

void Fabric::Detach(Port* port) {
  std::lock_guard lock(mutex_);
  std::erase_if(ports_, [port](const auto& kv) { return kv.second == port; });
  std::erase_if(lids_, [port](const auto& kv) { return kv.second == port; });
  Changed();
}

namespace {
// A thread's routes to the ports it serves (Port::Serving). Why they may be used without the
// fabric's mutex: such a port cannot leave the thread, nor its device be destroyed, while the
// thread holds its server's lock (a device first detaches from its thread, under that lock,
// and only then from the fabric), and a thread delivers only inside a pass, holding that lock.
// A copy is good while the fabric's generation is the one it was built at: every Attach,
// Detach and SetServer in the process bumps it, so a port that changed server or address is
// never found in a stale copy. The vectors keep their capacity: refreshing allocates only while
// the process's ports are still being created.
struct ServedRoutes {
  const void* server = nullptr;
  uint64_t generation = ~uint64_t{0};
  std::vector<std::pair<Gid, Port*>> gids;
  std::vector<std::pair<uint16_t, Port*>> lids;
};
thread_local ServedRoutes t_routes;
}  // namespace

void Fabric::RefreshServedRoutes() {
  std::lock_guard lock(mutex_);
  // Read before the maps: a change after this leaves the copy one generation behind, and the
  // next delivery refreshes it again.
  t_routes.generation = generation_.load(std::memory_order_acquire);
  t_routes.server = t_serving;
  t_routes.gids.clear();
  t_routes.lids.clear();
  for (const auto& [gid, port] : ports_)
    if (port->ServedHere()) t_routes.gids.emplace_back(gid, port);
  for (const auto& [lid, port] : lids_)
    if (port != nullptr && port->ServedHere()) t_routes.lids.emplace_back(lid, port);
}

bool Fabric::ServedRoutesCurrent() {
  if (t_serving == nullptr) return false;
  if (t_routes.server != t_serving ||
      t_routes.generation != generation_.load(std::memory_order_acquire))
    RefreshServedRoutes();
  return true;
}

namespace {
// The port of the first route whose address `same` says is `address`, or nullptr. A device has
// several GIDs, and the scan compares against each (SameGid, gid_table.h: two 64-bit compares).
template <class Address, class Same>
Port* FindRoute(const std::vector<std::pair<Address, Port*>>& routes, const Address& address,
                Same same) {
  for (const auto& [a, port] : routes)
    if (same(a, address)) return port;
  return nullptr;
}
}  // namespace

Port* Fabric::ServedPort(const Gid& dgid) {
  return ServedRoutesCurrent() ? FindRoute(t_routes.gids, dgid, SameGid) : nullptr;
}

Port* Fabric::ServedPortAtLid(uint16_t dlid) {
  return ServedRoutesCurrent() ? FindRoute(t_routes.lids, dlid, std::equal_to<uint16_t>())
                               : nullptr;
}

// A port the calling thread serves is in its route copy (ServedRoutesCurrent refreshes it, and
// none of its own ports can change server while it delivers), so the map only ever finds ports
// served elsewhere, or by no thread: their packets wait in the port's queue, pushed under the
// mutex so that the port cannot detach meanwhile.
bool Fabric::DeliverToLid(uint16_t dlid, Packet&& p) {
  if (Port* port = ServedPortAtLid(dlid)) {
    port->Receive(std::move(p));
    return true;
  }
  std::lock_guard lock(mutex_);
  auto it = lids_.find(dlid);
  if (it == lids_.end() || it->second == nullptr) return false;
  it->second->Push(std::move(p));
  return true;
}

bool Fabric::Deliver(const Gid& dgid, Packet&& p) {
  if (Port* port = ServedPort(dgid)) {
    port->Receive(std::move(p));
    return true;
  }
  std::lock_guard lock(mutex_);
  auto it = ports_.find(dgid);
  if (it == ports_.end()) return false;
  it->second->Push(std::move(p));
  return true;
}

}  // namespace onchip::sim
