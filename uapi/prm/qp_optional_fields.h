// The optional fields each QP transition command takes (*_qp_in.opt_param_mask), by transport
// service (qpc.st): what software may change on that transition besides the fields the
// transition always carries. One table for both sides: the firmware refuses any other bit
// (BAD_PARAM_ERR), the driver sends only bits the table allows for the attributes it was given.
//
// Per transition (RC / UC / UD; XRC takes RC's; UD stands for every datagram service here):
//   INIT2INIT   access flags (UC: RWE only), PKEY_INDEX, PRI_PORT, LAG_TX_AFF; UD: PKEY_INDEX,
//               Q_KEY, PRI_PORT
//   INIT2RTR    ALT_ADDR_PATH, access flags (UC: RWE), PKEY_INDEX, LAG_TX_AFF; UD: PKEY_INDEX, Q_KEY
//   RTR2RTS     ALT_ADDR_PATH, access flags (UC: RWE), PM_STATE, RC also RNR_TIMEOUT; UD: Q_KEY
//   RTS2RTS     access flags (UC: RWE), RC RNR_TIMEOUT, PM_STATE, ALT_ADDR_PATH, COUNTER_SET_ID;
//               UD: Q_KEY, CQN_RCV, COUNTER_SET_ID
//   SQERR2RTS, SQD_RTS   RC: RNR_TIMEOUT and access flags; UC: RWE; UD: Q_KEY
//   RST2INIT takes its fields unconditionally; 2ERR and 2RST carry no context: none.
#pragma once

#include <cstdint>

#include "uapi/prm/opcodes.h"

namespace onchip::prm {

constexpr uint32_t QpTransitionOptionalFields(uint16_t opcode, uint8_t st) {
  const bool rc = st == QP_ST_RC || st == QP_ST_XRC, uc = st == QP_ST_UC;
  constexpr uint32_t kAccess = QP_OPTPAR_RRE | QP_OPTPAR_RAE | QP_OPTPAR_RWE;
  switch (opcode) {
    case INIT2INIT_QP:
      if (rc) return kAccess | QP_OPTPAR_PKEY_INDEX | QP_OPTPAR_PRI_PORT | QP_OPTPAR_LAG_TX_AFF;
      if (uc) return QP_OPTPAR_RWE | QP_OPTPAR_PKEY_INDEX | QP_OPTPAR_PRI_PORT | QP_OPTPAR_LAG_TX_AFF;
      return QP_OPTPAR_PKEY_INDEX | QP_OPTPAR_Q_KEY | QP_OPTPAR_PRI_PORT;
    case INIT2RTR_QP:
      if (rc) return QP_OPTPAR_ALT_ADDR_PATH | kAccess | QP_OPTPAR_PKEY_INDEX | QP_OPTPAR_LAG_TX_AFF;
      if (uc)
        return QP_OPTPAR_ALT_ADDR_PATH | QP_OPTPAR_RWE | QP_OPTPAR_PKEY_INDEX | QP_OPTPAR_LAG_TX_AFF;
      return QP_OPTPAR_PKEY_INDEX | QP_OPTPAR_Q_KEY;
    case RTR2RTS_QP:
      if (rc) return QP_OPTPAR_ALT_ADDR_PATH | kAccess | QP_OPTPAR_PM_STATE | QP_OPTPAR_RNR_TIMEOUT;
      if (uc) return QP_OPTPAR_ALT_ADDR_PATH | QP_OPTPAR_RWE | QP_OPTPAR_PM_STATE;
      return QP_OPTPAR_Q_KEY;
    case RTS2RTS_QP:
      if (rc)
        return kAccess | QP_OPTPAR_RNR_TIMEOUT | QP_OPTPAR_PM_STATE | QP_OPTPAR_ALT_ADDR_PATH |
               QP_OPTPAR_COUNTER_SET_ID;
      if (uc)
        return QP_OPTPAR_RWE | QP_OPTPAR_PM_STATE | QP_OPTPAR_ALT_ADDR_PATH | QP_OPTPAR_COUNTER_SET_ID;
      return QP_OPTPAR_Q_KEY | QP_OPTPAR_CQN_RCV | QP_OPTPAR_COUNTER_SET_ID;
    case SQERR2RTS_QP:
    case SQD_RTS_QP:
      if (rc) return QP_OPTPAR_RNR_TIMEOUT | kAccess;
      if (uc) return QP_OPTPAR_RWE;
      return QP_OPTPAR_Q_KEY;
    default:
      return 0;
  }
}

}  // namespace onchip::prm
