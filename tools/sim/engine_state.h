// The data engine's own state, kept beside the firmware's context tables (contexts.h): per
// queue, what the engine has consumed, produced and has in flight (queue_progress.h), found by
// the queue's number.
//
// On a ConnectX the contexts are what the firmware wrote; the send, receive and completion
// engines keep their running state themselves. So here: the Device owns this store, the data
// engine reads and writes it on every pass (qp, cq, eq, srq: an index into a table, no
// allocation), and the firmware reaches it only through EngineStateControl
// (engine_state_control.h): it starts a queue's state afresh when it creates the queue or
// returns a QP to RESET, and reads the counters its queries report. Both under the contexts'
// mutex (a command, or one engine pass).
//
// A table grows only when the firmware starts a queue whose number lies past its end (a
// create: the only allocation). The engine looks up only queues it found in the context tables,
// so every number it asks for has been started.
#pragma once

#include <cstdint>
#include <vector>

#include "tools/sim/queue_progress.h"

namespace onchip::sim {

class EngineState {
 public:
  QpProgress& qp(uint32_t qpn) { return qps_[qpn]; }
  CqProgress& cq(uint32_t cqn) { return cqs_[cqn]; }
  EqProgress& eq(uint32_t eqn) { return eqs_[eqn]; }
  SrqProgress& srq(uint32_t srqn) { return srqs_[srqn]; }
  const QpProgress& qp(uint32_t qpn) const { return qps_[qpn]; }
  const CqProgress& cq(uint32_t cqn) const { return cqs_[cqn]; }
  const EqProgress& eq(uint32_t eqn) const { return eqs_[eqn]; }
  const SrqProgress& srq(uint32_t srqn) const { return srqs_[srqn]; }

  // Fresh state for the queue of that number: nothing consumed, produced or in flight.
  void StartQp(uint32_t qpn) { Start(qps_, qpn); }
  void StartCq(uint32_t cqn) { Start(cqs_, cqn); }
  void StartEq(uint32_t eqn) { Start(eqs_, eqn); }
  void StartSrq(uint32_t srqn) { Start(srqs_, srqn); }

 private:
  template <class Progress>
  static void Start(std::vector<Progress>& table, uint32_t number) {
    if (number >= table.size()) table.resize(std::size_t{number} + 1);
    table[number] = Progress{};
  }
  std::vector<QpProgress> qps_;
  std::vector<CqProgress> cqs_;
  std::vector<EqProgress> eqs_;
  std::vector<SrqProgress> srqs_;
};

}  // namespace onchip::sim
