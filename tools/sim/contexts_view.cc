#include "tools/sim/contexts_view.h"

#include <utility>

#include "uapi/prm/cq.h"
#include "uapi/prm/eq.h"
#include "uapi/prm/mkey.h"
#include "uapi/prm/qp.h"
#include "uapi/prm/srq.h"

namespace onchip::sim {

void ContextsView::QpToError(uint32_t qpn) {
  Qp& qp = c_.qps.at(qpn);
  qp.state = prm::QP_STATE_ERR;
  prm::Bits(qp.qpc).set(prm::qpc::state, prm::QP_STATE_ERR);
}

void ContextsView::SetCqState(uint32_t cqn, uint32_t st) {
  prm::Bits(c_.cqs.at(cqn).cqc).set(prm::cqc::st, st);
}

void ContextsView::SetCqStatus(uint32_t cqn, uint32_t status) {
  prm::Bits(c_.cqs.at(cqn).cqc).set(prm::cqc::status, status);
}

void ContextsView::SetEqState(uint32_t eqn, uint32_t st) {
  prm::Bits(c_.eqs.at(eqn).eqc).set(prm::eqc::st, st);
}

void ContextsView::ClearSrqLimit(uint32_t srqn) {
  prm::Bits(std::span<std::byte>(c_.srqs.at(srqn).srqc)).set(prm::srqc::lwm, 0);
}

void ContextsView::RemoteInvalidate(uint32_t mkey_index) {
  Mkey& m = c_.mkeys.at(mkey_index);
  for (uint32_t t : m.klm_targets) --c_.mkeys.at(t).klm_refs;
  m.klm_targets.clear();
  m.translations.clear();
  prm::Bits(m.mkc).set(prm::mkc::free, 1);
}

uint8_t ContextsView::TakePortChange() { return std::exchange(c_.port_change, uint8_t{0}); }

}  // namespace onchip::sim
