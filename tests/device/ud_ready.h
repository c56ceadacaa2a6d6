// A UD QP taken RESET -> INIT -> RTR -> RTS on port 1 through the driver's verbs calls, with the
// Q_Key it accepts datagrams under: what every test that sends datagrams does first.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

#include "driver/verbs/calls.h"

namespace onchip::testing {

// 0, or the errno of the refused transition.
inline int ReadyUd(ibv_qp* qp, uint32_t qkey) {
  namespace v = driver::verbs;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qkey = qkey;
  if (int e = v::modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
    return e;
  a.qp_state = IBV_QPS_RTR;
  if (int e = v::modify_qp(qp, &a, IBV_QP_STATE)) return e;
  a.qp_state = IBV_QPS_RTS;
  return v::modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

}  // namespace onchip::testing
