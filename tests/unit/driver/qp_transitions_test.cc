// The modify rules apart from any device: every state pair and transport against the kernel's
// table (required attributes, allowed ones, CUR_STATE), the mlx5 command per pair, and the
// optional-field bits per transition.
#include <gtest/gtest.h>

#include "driver/qp_transitions.h"
#include "uapi/prm/opcodes.h"

namespace onchip::driver {
namespace {

constexpr ibv_qp_type kTypes[] = {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD};
constexpr ibv_qp_state kStates[] = {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS,
                                    IBV_QPS_SQD,   IBV_QPS_SQE,  IBV_QPS_ERR};

TEST(QpTransitions, AnyStateGoesToResetAndErrWithNoAttribute) {
  for (ibv_qp_type t : kTypes)
    for (ibv_qp_state s : kStates) {
      EXPECT_TRUE(ModifyQpIsOk(s, IBV_QPS_RESET, t, IBV_QP_STATE)) << s;
      EXPECT_TRUE(ModifyQpIsOk(s, IBV_QPS_ERR, t, IBV_QP_STATE)) << s;
      EXPECT_FALSE(ModifyQpIsOk(s, IBV_QPS_ERR, t, IBV_QP_STATE | IBV_QP_QKEY)) << s;
      EXPECT_EQ(TransitionOpcode(s, IBV_QPS_RESET), prm::QP_2RST);
      EXPECT_EQ(TransitionOpcode(s, IBV_QPS_ERR), prm::QP_2ERR);
    }
}

TEST(QpTransitions, ResetToInitRequiresPerTransport) {
  const int common = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
  EXPECT_TRUE(ModifyQpIsOk(IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPT_RC, common | IBV_QP_ACCESS_FLAGS));
  EXPECT_TRUE(ModifyQpIsOk(IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPT_UC, common | IBV_QP_ACCESS_FLAGS));
  EXPECT_TRUE(ModifyQpIsOk(IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPT_UD, common | IBV_QP_QKEY));
  EXPECT_FALSE(ModifyQpIsOk(IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPT_RC, common | IBV_QP_QKEY));
  EXPECT_FALSE(ModifyQpIsOk(IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPT_UD, common | IBV_QP_ACCESS_FLAGS));
  // Each required bit is required.
  for (int bit : {IBV_QP_PKEY_INDEX, IBV_QP_PORT, IBV_QP_ACCESS_FLAGS})
    EXPECT_FALSE(ModifyQpIsOk(IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPT_RC,
                              (common | IBV_QP_ACCESS_FLAGS) & ~bit)) << bit;
  EXPECT_EQ(TransitionOpcode(IBV_QPS_RESET, IBV_QPS_INIT), prm::RST2INIT_QP);
}

// The kernel's XRC_INI (send) and XRC_TGT (receive) rows: INIT like RC; RTR without responder
// resources on the send side; RTS with the requester's set on the send side, only the timeout
// on the receive side (which may also change the RNR timer); RC's optional-field bits.
TEST(QpTransitions, XrcSendAndReceiveSides) {
  const int init = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  for (ibv_qp_type t : {IBV_QPT_XRC_SEND, IBV_QPT_XRC_RECV}) {
    EXPECT_TRUE(ModifyQpIsOk(IBV_QPS_RESET, IBV_QPS_INIT, t, init)) << t;
    EXPECT_FALSE(ModifyQpIsOk(IBV_QPS_RESET, IBV_QPS_INIT, t, init | IBV_QP_QKEY)) << t;
    EXPECT_TRUE(ModifyQpIsOk(IBV_QPS_RTS, IBV_QPS_ERR, t, IBV_QP_STATE)) << t;
    EXPECT_EQ(TransitionOptParams(prm::RTR2RTS_QP, t), TransitionOptParams(prm::RTR2RTS_QP, IBV_QPT_RC));
  }
  const int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
  const int responder = IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  EXPECT_TRUE(ModifyQpIsOk(IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPT_XRC_SEND, rtr));
  EXPECT_FALSE(ModifyQpIsOk(IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPT_XRC_SEND, rtr | responder));
  EXPECT_TRUE(ModifyQpIsOk(IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPT_XRC_RECV, rtr | responder));
  EXPECT_FALSE(ModifyQpIsOk(IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPT_XRC_RECV, rtr));
  const int requester = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                        IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
  EXPECT_TRUE(ModifyQpIsOk(IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPT_XRC_SEND, requester));
  EXPECT_FALSE(ModifyQpIsOk(IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPT_XRC_SEND,
                            requester | IBV_QP_MIN_RNR_TIMER));
  const int target = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN;
  EXPECT_TRUE(ModifyQpIsOk(IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPT_XRC_RECV, target));
  EXPECT_TRUE(ModifyQpIsOk(IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPT_XRC_RECV, target | IBV_QP_MIN_RNR_TIMER));
  EXPECT_FALSE(ModifyQpIsOk(IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPT_XRC_RECV, requester));
  EXPECT_FALSE(ModifyQpIsOk(IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPT_XRC_RECV, IBV_QP_STATE | IBV_QP_SQ_PSN));
}

TEST(QpTransitions, InitToRtrAndRtrToRts) {
  const int rc_rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  const int uc_rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
  EXPECT_TRUE(ModifyQpIsOk(IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPT_RC, rc_rtr));
  EXPECT_FALSE(ModifyQpIsOk(IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPT_RC, uc_rtr));
  EXPECT_TRUE(ModifyQpIsOk(IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPT_UC, uc_rtr));
  EXPECT_FALSE(ModifyQpIsOk(IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPT_UC, rc_rtr));
  EXPECT_TRUE(ModifyQpIsOk(IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPT_UD, IBV_QP_STATE));
  EXPECT_TRUE(ModifyQpIsOk(IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPT_UD, IBV_QP_STATE | IBV_QP_QKEY));
  EXPECT_FALSE(ModifyQpIsOk(IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPT_UD, IBV_QP_STATE | IBV_QP_AV));
  const int rc_rts = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
  EXPECT_TRUE(ModifyQpIsOk(IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPT_RC, rc_rts));
  EXPECT_TRUE(ModifyQpIsOk(IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPT_RC, rc_rts | IBV_QP_CUR_STATE));
  EXPECT_FALSE(ModifyQpIsOk(IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPT_UC, rc_rts));
  EXPECT_TRUE(ModifyQpIsOk(IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPT_UD, IBV_QP_STATE | IBV_QP_SQ_PSN));
  EXPECT_FALSE(ModifyQpIsOk(IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPT_UD, IBV_QP_STATE));
  EXPECT_EQ(TransitionOpcode(IBV_QPS_INIT, IBV_QPS_RTR), prm::INIT2RTR_QP);
  EXPECT_EQ(TransitionOpcode(IBV_QPS_RTR, IBV_QPS_RTS), prm::RTR2RTS_QP);
}

TEST(QpTransitions, CurStateOnlyFromRtrRtsSqdSqe) {
  for (ibv_qp_state s : {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_ERR})
    EXPECT_FALSE(ModifyQpIsOk(s, IBV_QPS_ERR, IBV_QPT_RC, IBV_QP_STATE | IBV_QP_CUR_STATE)) << s;
  // From these CUR_STATE passes its own rule; the pair's list then decides (RTS/SQD/SQE -> RTS
  // list it as optional).
  for (ibv_qp_state s : {IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPS_SQE})
    EXPECT_TRUE(ModifyQpIsOk(s, IBV_QPS_RTS, IBV_QPT_UD, IBV_QP_STATE | IBV_QP_CUR_STATE)) << s;
}

TEST(QpTransitions, PairsWithoutATableEntryOrAnMlx5Command) {
  EXPECT_FALSE(ModifyQpIsOk(IBV_QPS_RESET, IBV_QPS_RTR, IBV_QPT_RC, IBV_QP_STATE));
  EXPECT_FALSE(ModifyQpIsOk(IBV_QPS_INIT, IBV_QPS_RTS, IBV_QPT_UD, IBV_QP_STATE | IBV_QP_SQ_PSN));
  EXPECT_FALSE(ModifyQpIsOk(IBV_QPS_ERR, IBV_QPS_RTS, IBV_QPT_UD, IBV_QP_STATE));
  // The table allows RTS -> SQD and SQD -> SQD; mlx5 has no command for either.
  EXPECT_TRUE(ModifyQpIsOk(IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPT_RC, IBV_QP_STATE));
  EXPECT_FALSE(TransitionOpcode(IBV_QPS_RTS, IBV_QPS_SQD).has_value());
  EXPECT_FALSE(TransitionOpcode(IBV_QPS_SQD, IBV_QPS_SQD).has_value());
  EXPECT_EQ(TransitionOpcode(IBV_QPS_SQD, IBV_QPS_RTS), prm::SQD_RTS_QP);
  EXPECT_EQ(TransitionOpcode(IBV_QPS_SQE, IBV_QPS_RTS), prm::SQERR2RTS_QP);
  EXPECT_EQ(TransitionOpcode(IBV_QPS_RTS, IBV_QPS_RTS), prm::RTS2RTS_QP);
  EXPECT_EQ(TransitionOpcode(IBV_QPS_INIT, IBV_QPS_INIT), prm::INIT2INIT_QP);
  EXPECT_FALSE(ModifyQpIsOk(IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPT_RAW_PACKET, IBV_QP_STATE));
}

TEST(QpTransitions, OptionalFieldsPerTransitionAndTransport) {
  const uint32_t access = OptParamsOf(IBV_QP_ACCESS_FLAGS);
  EXPECT_EQ(access, uint32_t{prm::QP_OPTPAR_RRE | prm::QP_OPTPAR_RAE | prm::QP_OPTPAR_RWE});
  EXPECT_EQ(OptParamsOf(IBV_QP_QKEY), uint32_t{prm::QP_OPTPAR_Q_KEY});
  EXPECT_EQ(OptParamsOf(IBV_QP_MIN_RNR_TIMER), uint32_t{prm::QP_OPTPAR_RNR_TIMEOUT});
  // UC takes only remote write; UD none of the access bits, but the Q_Key.
  EXPECT_EQ(access & TransitionOptParams(prm::RTS2RTS_QP, IBV_QPT_RC), access);
  EXPECT_EQ(access & TransitionOptParams(prm::RTS2RTS_QP, IBV_QPT_UC), uint32_t{prm::QP_OPTPAR_RWE});
  EXPECT_EQ(access & TransitionOptParams(prm::RTS2RTS_QP, IBV_QPT_UD), 0u);
  EXPECT_TRUE(TransitionOptParams(prm::RTS2RTS_QP, IBV_QPT_UD) & prm::QP_OPTPAR_Q_KEY);
  EXPECT_EQ(TransitionOptParams(prm::RST2INIT_QP, IBV_QPT_RC), 0u);
  EXPECT_EQ(TransitionOptParams(prm::QP_2ERR, IBV_QPT_RC), 0u);
  for (ibv_qp_state s : kStates) EXPECT_EQ(VerbsQpState(PrmQpState(s)), s);
}

}  // namespace
}  // namespace onchip::driver
