// The RAW_PACKET modify rules apart from any device: every state pair against the kernel's
// table for raw packet QPs (RESET->INIT needs the port, INIT->INIT may carry it, RTR->RTS and
// RTS->RTS may carry a rate limit, nothing else but the state).
#include <gtest/gtest.h>

#include "driver/raw_qp.h"

namespace onchip::driver {
namespace {

constexpr ibv_qp_state kStates[] = {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS,
                                    IBV_QPS_SQD,   IBV_QPS_SQE,  IBV_QPS_ERR};

TEST(RawModify, EveryPair) {
  for (ibv_qp_state cur : kStates)
    for (ibv_qp_state next : kStates) {
      const bool to_rst_or_err = next == IBV_QPS_RESET || next == IBV_QPS_ERR;
      const bool init = cur == IBV_QPS_RESET && next == IBV_QPS_INIT;
      const bool init2init = cur == IBV_QPS_INIT && next == IBV_QPS_INIT;
      const bool rtr = cur == IBV_QPS_INIT && next == IBV_QPS_RTR;
      const bool rts = (cur == IBV_QPS_RTR || cur == IBV_QPS_RTS) && next == IBV_QPS_RTS;
      EXPECT_EQ(RawModifyIsOk(cur, next, IBV_QP_STATE), to_rst_or_err || init2init || rtr || rts)
          << cur << "->" << next;
      EXPECT_EQ(RawModifyIsOk(cur, next, IBV_QP_STATE | IBV_QP_PORT), init || init2init)
          << cur << "->" << next;
      EXPECT_EQ(RawModifyIsOk(cur, next, IBV_QP_STATE | IBV_QP_RATE_LIMIT), rts)
          << cur << "->" << next;
      // What RC, UC and UD QPs take is never a raw QP's.
      for (int extra : {IBV_QP_PKEY_INDEX, IBV_QP_QKEY, IBV_QP_ACCESS_FLAGS, IBV_QP_SQ_PSN,
                        IBV_QP_AV, IBV_QP_PATH_MTU, IBV_QP_CUR_STATE})
        EXPECT_FALSE(RawModifyIsOk(cur, next, IBV_QP_STATE | IBV_QP_PORT | extra))
            << cur << "->" << next << " " << extra;
    }
}

}  // namespace
}  // namespace onchip::driver
