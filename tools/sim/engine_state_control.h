// The firmware's port onto the data engine's state (engine_state.h), as ContextsView is the
// engine's port onto the firmware's contexts: what a command processor tells a ConnectX's
// queue engines and asks them.
//   Start*           a queue created (or a QP returned to RESET) starts with fresh state
//   qp, cq, eq       the counters QUERY_QP, QUERY_CQ and QUERY_EQ report, read-only
//   NoteCqConsumer   the consumer index the firmware read from a CQ's doorbell record (QUERY_CQ,
//                    a resize): the engine's copy of it follows
//   CountResizeCqe   the resize CQE the firmware wrote at the CQ's producer counter (MODIFY_CQ
//                    resize): one CQE more produced
// Every call is made under the contexts' mutex, inside a command.
#pragma once

#include <cstdint>

#include "tools/sim/engine_state.h"

namespace onchip::sim {

class EngineStateControl {
 public:
  explicit EngineStateControl(EngineState& state) : s_(state) {}

  void StartQp(uint32_t qpn) { s_.StartQp(qpn); }
  void StartCq(uint32_t cqn) { s_.StartCq(cqn); }
  void StartEq(uint32_t eqn) { s_.StartEq(eqn); }
  void StartSrq(uint32_t srqn) { s_.StartSrq(srqn); }

  const QpProgress& qp(uint32_t qpn) const { return s_.qp(qpn); }
  const CqProgress& cq(uint32_t cqn) const { return s_.cq(cqn); }
  const EqProgress& eq(uint32_t eqn) const { return s_.eq(eqn); }

  void NoteCqConsumer(uint32_t cqn, uint32_t consumer_counter) {
    s_.cq(cqn).consumer_counter = consumer_counter;
  }
  void CountResizeCqe(uint32_t cqn) { ++s_.cq(cqn).producer_counter; }

 private:
  EngineState& s_;
};

}  // namespace onchip::sim
