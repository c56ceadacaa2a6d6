#include "driver/qp_transitions.h"

#include <array>

#include "uapi/prm/opcodes.h"
#include "uapi/prm/qp_optional_fields.h"

namespace onchip::driver {
namespace {

constexpr int kStates = IBV_QPS_ERR + 1;  // RESET INIT RTR RTS SQD SQE ERR

// Attribute sets per transport: [0] UD, [1] UC, [2] RC, [3] XRC send (initiator), [4] XRC
// receive (target).
struct Entry {
  bool valid = false;
  std::array<int, 5> required{};
  std::array<int, 5> optional{};
};

constexpr int Ud = 0, Uc = 1, Rc = 2, XrcIni = 3, XrcTgt = 4;

constexpr int kRestOfPath = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE;

// The kernel's qp_state_table, for the transports onchip creates.
constexpr std::array<std::array<Entry, kStates>, kStates> kTable = [] {
  std::array<std::array<Entry, kStates>, kStates> t{};
  auto all = [](int ud, int uc, int rc, int ini, int tgt) {
    return std::array<int, 5>{ud, uc, rc, ini, tgt};
  };
  // Every state may go to RESET and to ERR with no attribute.
  for (int s = 0; s < kStates; ++s) {
    t[s][IBV_QPS_RESET].valid = true;
    t[s][IBV_QPS_ERR].valid = true;
  }
  constexpr int kConnectedInit = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  t[IBV_QPS_RESET][IBV_QPS_INIT] = {
      true,
      all(IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, kConnectedInit, kConnectedInit,
          kConnectedInit, kConnectedInit),
      {}};
  t[IBV_QPS_INIT][IBV_QPS_INIT] = {
      true,
      {},
      all(IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, kConnectedInit, kConnectedInit,
          kConnectedInit, kConnectedInit)};
  constexpr int kRtr = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
  constexpr int kResponderRtr = kRtr | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  constexpr int kRtrOpt = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX;
  t[IBV_QPS_INIT][IBV_QPS_RTR] = {
      true,
      all(0, kRtr, kResponderRtr, kRtr, kResponderRtr),
      all(IBV_QP_PKEY_INDEX | IBV_QP_QKEY, kRtrOpt, kRtrOpt, kRtrOpt, kRtrOpt)};
  constexpr int kRequesterRts = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
  constexpr int kRtsOpt = IBV_QP_CUR_STATE | kRestOfPath;
  t[IBV_QPS_RTR][IBV_QPS_RTS] = {
      true,
      all(IBV_QP_SQ_PSN, IBV_QP_SQ_PSN, kRequesterRts, kRequesterRts,
          IBV_QP_TIMEOUT | IBV_QP_SQ_PSN),
      all(IBV_QP_CUR_STATE | IBV_QP_QKEY, kRtsOpt, kRtsOpt | IBV_QP_MIN_RNR_TIMER, kRtsOpt,
          kRtsOpt | IBV_QP_MIN_RNR_TIMER)};
  t[IBV_QPS_RTS][IBV_QPS_RTS] = {
      true,
      {},
      all(IBV_QP_CUR_STATE | IBV_QP_QKEY, kRtsOpt, kRtsOpt | IBV_QP_MIN_RNR_TIMER, kRtsOpt,
          kRtsOpt | IBV_QP_MIN_RNR_TIMER)};
  constexpr int kSqd = IBV_QP_EN_SQD_ASYNC_NOTIFY;
  t[IBV_QPS_RTS][IBV_QPS_SQD] = {true, {}, all(kSqd, kSqd, kSqd, kSqd, kSqd)};
  t[IBV_QPS_SQD][IBV_QPS_RTS] = t[IBV_QPS_RTS][IBV_QPS_RTS];
  t[IBV_QPS_SQD][IBV_QPS_SQD] = {
      true,
      {},
      all(IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
          IBV_QP_AV | kRestOfPath | IBV_QP_PKEY_INDEX,
          IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
              IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | kRestOfPath |
              IBV_QP_PKEY_INDEX | IBV_QP_MIN_RNR_TIMER,
          IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
              IBV_QP_MAX_QP_RD_ATOMIC | kRestOfPath | IBV_QP_PKEY_INDEX,
          IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_MAX_DEST_RD_ATOMIC | kRestOfPath |
              IBV_QP_PKEY_INDEX | IBV_QP_MIN_RNR_TIMER)};
  t[IBV_QPS_SQE][IBV_QPS_RTS] = {
      true,
      {},
      all(IBV_QP_CUR_STATE | IBV_QP_QKEY, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS, 0, 0, 0)};
  return t;
}();

int TransportIndex(ibv_qp_type type) {
  switch (type) {
    case IBV_QPT_UD: return Ud;
    case IBV_QPT_UC: return Uc;
    case IBV_QPT_RC: return Rc;
    case IBV_QPT_XRC_SEND: return XrcIni;
    case IBV_QPT_XRC_RECV: return XrcTgt;
    default: return -1;
  }
}

bool KnownState(int s) { return s >= IBV_QPS_RESET && s <= IBV_QPS_ERR; }

}  // namespace

bool ModifyQpIsOk(ibv_qp_state cur, ibv_qp_state next, ibv_qp_type type, int mask) {
  const int transport = TransportIndex(type);
  if (transport < 0 || !KnownState(cur) || !KnownState(next)) return false;
  if ((mask & IBV_QP_CUR_STATE) && cur != IBV_QPS_RTR && cur != IBV_QPS_RTS &&
      cur != IBV_QPS_SQD && cur != IBV_QPS_SQE)
    return false;
  const Entry& e = kTable[cur][next];
  if (!e.valid) return false;
  const int required = e.required[transport];
  const int optional = e.optional[transport];
  if ((mask & required) != required) return false;
  return (mask & ~(required | optional | IBV_QP_STATE)) == 0;
}

std::optional<uint16_t> TransitionOpcode(ibv_qp_state cur, ibv_qp_state next) {
  if (!KnownState(cur) || !KnownState(next)) return std::nullopt;
  if (next == IBV_QPS_RESET) return prm::QP_2RST;
  if (next == IBV_QPS_ERR) return prm::QP_2ERR;
  switch (cur) {
    case IBV_QPS_RESET:
      if (next == IBV_QPS_INIT) return prm::RST2INIT_QP;
      break;
    case IBV_QPS_INIT:
      if (next == IBV_QPS_INIT) return prm::INIT2INIT_QP;
      if (next == IBV_QPS_RTR) return prm::INIT2RTR_QP;
      break;
    case IBV_QPS_RTR:
      if (next == IBV_QPS_RTS) return prm::RTR2RTS_QP;
      break;
    case IBV_QPS_RTS:
      if (next == IBV_QPS_RTS) return prm::RTS2RTS_QP;
      break;
    case IBV_QPS_SQD:
      if (next == IBV_QPS_RTS) return prm::SQD_RTS_QP;
      break;
    case IBV_QPS_SQE:
      if (next == IBV_QPS_RTS) return prm::SQERR2RTS_QP;
      break;
    default:
      break;
  }
  return std::nullopt;
}

uint8_t PrmQpState(ibv_qp_state s) {
  switch (s) {
    case IBV_QPS_RESET: return prm::QP_STATE_RST;
    case IBV_QPS_INIT: return prm::QP_STATE_INIT;
    case IBV_QPS_RTR: return prm::QP_STATE_RTR;
    case IBV_QPS_RTS: return prm::QP_STATE_RTS;
    case IBV_QPS_SQD: return prm::QP_STATE_SQD;
    case IBV_QPS_SQE: return prm::QP_STATE_SQER;
    default: return prm::QP_STATE_ERR;
  }
}

ibv_qp_state VerbsQpState(uint8_t prm_state) {
  switch (prm_state) {
    case prm::QP_STATE_RST: return IBV_QPS_RESET;
    case prm::QP_STATE_INIT: return IBV_QPS_INIT;
    case prm::QP_STATE_RTR: return IBV_QPS_RTR;
    case prm::QP_STATE_RTS: return IBV_QPS_RTS;
    case prm::QP_STATE_SQD: return IBV_QPS_SQD;
    case prm::QP_STATE_SQER: return IBV_QPS_SQE;
    case prm::QP_STATE_ERR: return IBV_QPS_ERR;
    default: return IBV_QPS_UNKNOWN;
  }
}

uint32_t OptParamsOf(int mask) {
  uint32_t r = 0;
  if (mask & IBV_QP_ACCESS_FLAGS) r |= prm::QP_OPTPAR_RAE | prm::QP_OPTPAR_RWE | prm::QP_OPTPAR_RRE;
  if (mask & IBV_QP_PKEY_INDEX) r |= prm::QP_OPTPAR_PKEY_INDEX;
  if (mask & IBV_QP_PORT) r |= prm::QP_OPTPAR_PRI_PORT;
  if (mask & IBV_QP_QKEY) r |= prm::QP_OPTPAR_Q_KEY;
  if (mask & IBV_QP_AV) r |= prm::QP_OPTPAR_PRIMARY_ADDR_PATH;
  if (mask & IBV_QP_TIMEOUT) r |= prm::QP_OPTPAR_ACK_TIMEOUT;
  if (mask & IBV_QP_RETRY_CNT) r |= prm::QP_OPTPAR_RETRY_COUNT;
  if (mask & IBV_QP_RNR_RETRY) r |= prm::QP_OPTPAR_RNR_RETRY;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) r |= prm::QP_OPTPAR_SRA_MAX;
  if (mask & IBV_QP_ALT_PATH) r |= prm::QP_OPTPAR_ALT_ADDR_PATH;
  if (mask & IBV_QP_MIN_RNR_TIMER) r |= prm::QP_OPTPAR_RNR_TIMEOUT;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) r |= prm::QP_OPTPAR_RRA_MAX;
  if (mask & IBV_QP_PATH_MIG_STATE) r |= prm::QP_OPTPAR_PM_STATE;
  return r;
}

uint32_t TransitionOptParams(uint16_t opcode, ibv_qp_type type) {
  const uint8_t st = type == IBV_QPT_RC                                     ? prm::QP_ST_RC
                     : type == IBV_QPT_UC                                   ? prm::QP_ST_UC
                     : type == IBV_QPT_XRC_SEND || type == IBV_QPT_XRC_RECV ? prm::QP_ST_XRC
                                                                            : prm::QP_ST_UD;
  return prm::QpTransitionOptionalFields(opcode, st);
}

}  // namespace onchip::driver
