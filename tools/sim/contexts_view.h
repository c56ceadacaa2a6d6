// The data engine's port onto the context memory (contexts.h): what a ConnectX's send, receive
// and completion engines see of the contexts the firmware wrote.
//
// Reads are const: the tables, the HCA state, the link, the capabilities, the generation. What
// the engine keeps while it runs a queue is its own, not in the contexts (engine_state.h). What
// it writes back into a context, as hardware does, is a named method here:
//   QpToError        a QP whose work failed enters ERR (qpc.state with it)
//   SetCqState       a CQ's arm state (cqc.st: armed, solicited armed, fired)
//   SetCqStatus      a CQ that overflowed or could not be written (cqc.status)
//   SetEqState       an EQ's arm state (eqc.st: armed, fired)
//   ClearSrqLimit    an SRQ whose limit event fired disarms it (srqc.lwm = 0)
//   RemoteInvalidate a SEND_WITH_INV frees a bound window (mkc.free, its KLM references)
//   TakePortChange   the pending link change, taken once to raise PORT_CHANGE
// Every call is made under mutex(), which the engine takes once per pass.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

#include "tools/sim/caps.h"
#include "tools/sim/contexts.h"
#include "tools/sim/queue_objects.h"

namespace onchip::sim {

class ContextsView {
 public:
  explicit ContextsView(Contexts& contexts) : c_(contexts) {}

  std::mutex& mutex() const { return c_.mutex; }

  HcaState state() const { return c_.state; }
  bool link_up() const { return c_.link_up; }
  bool port_change_pending() const { return c_.port_change != 0; }
  uint64_t generation() const { return c_.generation; }
  const Capabilities& caps() const { return c_.caps; }

  const std::map<uint32_t, Qp>& qps() const { return c_.qps; }
  const std::map<uint32_t, Cq>& cqs() const { return c_.cqs; }
  const std::map<uint32_t, Eq>& eqs() const { return c_.eqs; }
  // The object of that number, or nullptr.
  const Qp* FindQp(uint32_t qpn) const { return Find(c_.qps, qpn); }
  const Cq* FindCq(uint32_t cqn) const { return Find(c_.cqs, cqn); }
  const Eq* FindEq(uint32_t eqn) const { return Find(c_.eqs, eqn); }
  const Srq* FindSrq(uint32_t srqn) const { return Find(c_.srqs, srqn); }
  const Mkey* FindMkey(uint32_t index) const { return Find(c_.mkeys, index); }

  // The writes (see above). Each names a live object: the engine found it under this pass's lock.
  void QpToError(uint32_t qpn);
  void SetCqState(uint32_t cqn, uint32_t st);
  void SetCqStatus(uint32_t cqn, uint32_t status);
  void SetEqState(uint32_t eqn, uint32_t st);
  void ClearSrqLimit(uint32_t srqn);
  void RemoteInvalidate(uint32_t mkey_index);
  // The pending PORT_CHANGE sub_type (0: none), which no later pass sees again.
  uint8_t TakePortChange();

 private:
  template <class Map>
  static const typename Map::mapped_type* Find(const Map& map, uint32_t key) {
    auto it = map.find(key);
    return it == map.end() ? nullptr : &it->second;
  }
  Contexts& c_;
};

}  // namespace onchip::sim
