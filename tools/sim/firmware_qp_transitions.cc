// Queue-pair state transitions: RST2INIT, INIT2INIT, INIT2RTR, RTR2RTS, RTS2RTS, SQERR2RTS,
// SQD_RTS, 2ERR, 2RST.
//
// Each command starts from exactly one state (2ERR and 2RST from any); from another the answer
// is BAD_QP_STATE_ERR and nothing changes. A transition takes from the context it carries only
// the fields it accepts: the ones it always sets (below) and the optional ones its
// opt_param_mask selects. A mask bit the transition does not take for the QP's transport is
// BAD_PARAM_ERR (QP_OPT_PARAM); the other fields of the context are ignored, as firmware ignores
// them (the kernel writes st, pd and the CQ numbers into every modify). The accepted values are
// checked against what the device advertises before anything is kept.
//
//   RST2INIT   all: pkey_index, vhca_port_num, counter_set_id; RC: rre, rwe, rae, atomic_mode;
//              UC: rwe; UD: q_key
//   INIT2RTR   all: mtu, log_msg_max; RC, UC: remote_qpn, next_rcv_psn, the primary address
//              path (RoCE: rmac, rgid_rip, src_addr_index, hop_limit, tclass, flow_label,
//              udp_sport, dscp, ecn, eth_prio, ...; InfiniBand: rlid, sl, stat_rate, and
//              with grh 1 the GRH fields); RC: log_rra_max, min_rnr_nak
//   RTR2RTS    all: next_send_psn; RC: retry_count, rnr_retry, log_sra_max, ack_timeout
//   others     optional fields only
//
// Optional fields per transition and transport: uapi/prm/qp_optional_fields.h, the table the
// driver sends from. Values this device takes: RAE with atomic_mode, PM_STATE only MIGRATED (no
// alternate path), COUNTER_SET_ID only 0 (no counter sets), CQN_RCV (UD, RTS2RTS: the receive
// CQ moves); ALT_ADDR_PATH is refused: path migration is not modelled.
//
// 2ERR moves the QP to ERR (the data engine then flushes its work); 2RST returns it to RST and
// clears the engine's progress and the ring counters in the context, so a QP taken back through
// RST2INIT starts from empty rings.
// Nothing makes a QP enter SQD here (mlx5 has no RTS2SQD command); SQD_RTS is implemented for a
// QP the engine drained, and SQERR2RTS for a UC or UD QP whose send queue the engine stopped.
#include <cstring>

#include "tools/sim/firmware.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/qp.h"
#include "uapi/prm/qp_optional_fields.h"

namespace onchip::sim {

using Bytes = std::span<const std::byte>;
using Out = std::span<std::byte>;

namespace {

using T = QpTransition;
// Every transition command shares the header of rst2init_qp_in; those that carry a context carry
// it at the same place.
using H = prm::rst2init_qp_in;
static_assert(prm::init2init_qp_in::qpc.bit_offset == H::qpc.bit_offset);
static_assert(prm::init2rtr_qp_in::qpc.bit_offset == H::qpc.bit_offset);
static_assert(prm::rtr2rts_qp_in::qpc.bit_offset == H::qpc.bit_offset);
static_assert(prm::rts2rts_qp_in::qpc.bit_offset == H::qpc.bit_offset);
static_assert(prm::sqerr2rts_qp_in::qpc.bit_offset == H::qpc.bit_offset);
static_assert(prm::sqd2rts_qp_in::qpc.bit_offset == H::qpc.bit_offset);
static_assert(prm::qp_2err_in::qpn.bit_offset == H::qpn.bit_offset);
static_assert(prm::qp_2rst_in::qpn.bit_offset == H::qpn.bit_offset);
static_assert(prm::sqd2rts_qp_in::opt_param_mask.bit_offset == H::opt_param_mask.bit_offset);
using InCtx = prm::qpc_bits<H::qpc.bit_offset>;
using prm::qpc;
constexpr auto kPath = qpc::primary_address_path;

// P_Keys the device's table holds (cmd_hca_cap.pkey_table_size 0: 128 entries).
constexpr uint32_t kPkeyTableSize = 128;



bool StartsFrom(T t, prm::QpState s) {
  switch (t) {
    case T::kRst2Init: return s == prm::QP_STATE_RST;
    case T::kInit2Init:
    case T::kInit2Rtr: return s == prm::QP_STATE_INIT;
    case T::kRtr2Rts: return s == prm::QP_STATE_RTR;
    case T::kRts2Rts: return s == prm::QP_STATE_RTS;
    case T::kSqErr2Rts: return s == prm::QP_STATE_SQER;
    case T::kSqd2Rts: return s == prm::QP_STATE_SQD;
    case T::k2Err:
    case T::k2Rst: return true;
  }
  return false;
}

prm::QpState EndsIn(T t) {
  switch (t) {
    case T::kRst2Init:
    case T::kInit2Init: return prm::QP_STATE_INIT;
    case T::kInit2Rtr: return prm::QP_STATE_RTR;
    case T::k2Err: return prm::QP_STATE_ERR;
    case T::k2Rst: return prm::QP_STATE_RST;
    default: return prm::QP_STATE_RTS;
  }
}

// The QP's context with the fields a transition takes copied in from the command, and which of
// the checked fields it took.
class Staging {
 public:
  Staging(Bytes in, std::array<std::byte, prm::size_bytes<qpc>> ctx) : in_(in), next_(ctx) {}

  template <class F>
  void Take(F) {
    prm::detail::SetBits(next_.data(), F::bit_offset, F::bit_width,
                         prm::detail::GetBits(in_.data(), InCtx::bit_offset + F::bit_offset,
                                              F::bit_width));
  }
  // A whole address path.
  template <std::size_t B>
  void TakePath(prm::ads_bits<B>) {
    std::memcpy(next_.data() + B / 8, in_.data() + (InCtx::bit_offset + B) / 8,
                prm::ads_bits<B>::size_bits / 8);
  }
  template <class F>
  uint64_t Get(F) const {
    return prm::detail::GetBits(next_.data(), F::bit_offset, F::bit_width);
  }
  template <class F>
  void Set(F, uint64_t v) {
    prm::detail::SetBits(next_.data(), F::bit_offset, F::bit_width, v);
  }
  const std::array<std::byte, prm::size_bytes<qpc>>& next() const { return next_; }
  void SetState(prm::QpState s) {
    prm::detail::SetBits(next_.data(), qpc::state.bit_offset, qpc::state.bit_width, s);
  }

  bool port = false, pkey = false, mtu = false, path = false, rra = false, sra = false,
       pm_state = false, lag = false, counter_set = false;

 private:
  Bytes in_;
  std::array<std::byte, prm::size_bytes<qpc>> next_;
};

// The fields a transition takes unconditionally for a transport service.
void TakeMandatory(T t, uint8_t st, Staging& s) {
  // XRC QPs (both sides) take what RC QPs take.
  const bool rc = st == prm::QP_ST_RC || st == prm::QP_ST_XRC, uc = st == prm::QP_ST_UC,
             ud = st == prm::QP_ST_UD;
  switch (t) {
    case T::kRst2Init:
      s.Take(kPath.pkey_index);
      s.Take(kPath.vhca_port_num);
      s.Take(qpc::counter_set_id);
      s.pkey = s.port = s.counter_set = true;
      if (rc) {
        s.Take(qpc::rre);
        s.Take(qpc::rwe);
        s.Take(qpc::rae);
        s.Take(qpc::atomic_mode);
      }
      if (uc) s.Take(qpc::rwe);
      if (ud) s.Take(qpc::q_key);
      break;
    case T::kInit2Rtr:
      s.Take(qpc::mtu);
      s.Take(qpc::log_msg_max);
      s.mtu = true;
      if (rc || uc) {
        // The path's ack_timeout belongs to RTR2RTS: keep what the QP has.
        const uint64_t ack_timeout = s.Get(kPath.ack_timeout);
        s.TakePath(kPath);
        s.Set(kPath.ack_timeout, ack_timeout);
        s.Take(qpc::remote_qpn);
        s.Take(qpc::next_rcv_psn);
        s.path = s.port = s.pkey = true;
      }
      if (rc) {
        s.Take(qpc::log_rra_max);
        s.Take(qpc::min_rnr_nak);
        s.rra = true;
      }
      break;
    case T::kRtr2Rts:
      s.Take(qpc::next_send_psn);
      if (rc) {
        s.Take(qpc::retry_count);
        s.Take(qpc::rnr_retry);
        s.Take(qpc::log_sra_max);
        s.Take(kPath.ack_timeout);
        s.sra = true;
      }
      break;
    default:
      break;
  }
}

// The optional fields `mask` selects (already known to be ones the transition takes).
void TakeOptional(uint32_t mask, Staging& s) {
  if (mask & prm::QP_OPTPAR_RRE) s.Take(qpc::rre);
  if (mask & prm::QP_OPTPAR_RAE) {
    s.Take(qpc::rae);
    s.Take(qpc::atomic_mode);
  }
  if (mask & prm::QP_OPTPAR_RWE) s.Take(qpc::rwe);
  if (mask & prm::QP_OPTPAR_PKEY_INDEX) {
    s.Take(kPath.pkey_index);
    s.pkey = true;
  }
  if (mask & prm::QP_OPTPAR_PRI_PORT) {
    s.Take(kPath.vhca_port_num);
    s.port = true;
  }
  if (mask & prm::QP_OPTPAR_Q_KEY) s.Take(qpc::q_key);
  if (mask & prm::QP_OPTPAR_RNR_TIMEOUT) s.Take(qpc::min_rnr_nak);
  if (mask & prm::QP_OPTPAR_PM_STATE) {
    s.Take(qpc::pm_state);
    s.pm_state = true;
  }
  if (mask & prm::QP_OPTPAR_LAG_TX_AFF) {
    s.Take(qpc::lag_tx_port_affinity);
    s.lag = true;
  }
  if (mask & prm::QP_OPTPAR_COUNTER_SET_ID) {
    s.Take(qpc::counter_set_id);
    s.counter_set = true;
  }
  if (mask & prm::QP_OPTPAR_CQN_RCV) s.Take(qpc::cqn_rcv);
}

}  // namespace

Outcome Firmware::ModifyQp(QpTransition t, Bytes in, Out) {
  const bool carries_context = t != T::k2Err && t != T::k2Rst;
  if (carries_context &&
      (!ReservedClear(in, InCtx{}) || !ReservedClear(in, InCtx::primary_address_path) ||
       !ReservedClear(in, InCtx::secondary_address_path)))
    return Refuse(Syndrome::RESERVED_NOT_ZERO);
  if (prm::Get(in, H::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = qps_.find(prm::Get(in, H::qpn));
  if (it == qps_.end()) return Refuse(Syndrome::QP_UNKNOWN);
  Qp& qp = it->second;
  if (qp.uid != prm::Get(in, H::uid)) return Refuse(Syndrome::NOT_OWNER);
  if (!StartsFrom(t, qp.state))
    return Refuse(Syndrome::QP_BAD_STATE);

  Staging s(in, qp.qpc);
  std::map<uint32_t, Cq>::iterator new_rcv = cqs_.end();
  if (carries_context) {
    if (prm::Get(in, H::ece) != 0) return Refuse(Syndrome::QP_UNSUPPORTED);
    const uint32_t mask = prm::Get(in, H::opt_param_mask);
    if ((mask & ~prm::QpTransitionOptionalFields(prm::Get(in, H::opcode), qp.st)) != 0)
      return Refuse(Syndrome::QP_OPT_PARAM);
    if (mask & prm::QP_OPTPAR_ALT_ADDR_PATH) return Refuse(Syndrome::QP_UNSUPPORTED);
    TakeMandatory(t, qp.st, s);
    TakeOptional(mask, s);

    if (s.counter_set && s.Get(qpc::counter_set_id) != 0) return Refuse(Syndrome::QP_UNSUPPORTED);
    if (s.pm_state && s.Get(qpc::pm_state) != prm::QP_PM_MIGRATED)
      return Refuse(Syndrome::QP_UNSUPPORTED);
    if (s.pkey && s.Get(kPath.pkey_index) >= kPkeyTableSize) return Refuse(Syndrome::QP_PKEY_INDEX);
    if (s.port) {
      const uint64_t port = s.Get(kPath.vhca_port_num);
      if (port < 1 || port > config_.num_ports) return Refuse(Syndrome::QP_PORT);
    }
    if (s.lag && s.Get(qpc::lag_tx_port_affinity) > config_.num_ports)
      return Refuse(Syndrome::QP_PORT);
    if (s.mtu) {
      const uint64_t mtu = s.Get(qpc::mtu);
      if (mtu < 1 || mtu > config_.max_mtu) return Refuse(Syndrome::QP_MTU);
      if (s.Get(qpc::log_msg_max) > config_.log_max_msg) return Refuse(Syndrome::QP_MSG_SIZE);
    }
    // The path's source GID: RoCE always sends a GRH (its grh bit is not looked at, as today);
    // an InfiniBand path with grh 0 goes by rlid and names no GID.
    const bool ib = config_.port_type == DeviceConfig::PortType::kInfiniBand;
    if (s.path && (!ib || s.Get(kPath.grh)) &&
        s.Get(kPath.src_addr_index) >= GidTableSize(config_))
      return Refuse(Syndrome::QP_GID_INDEX);
    if (s.rra && s.Get(qpc::log_rra_max) > config_.log_max_ra_res_qp)
      return Refuse(Syndrome::QP_RRA_MAX);
    if (s.sra && s.Get(qpc::log_sra_max) > config_.log_max_ra_req_qp)
      return Refuse(Syndrome::QP_SRA_MAX);
    if (mask & prm::QP_OPTPAR_CQN_RCV) {
      new_rcv = cqs_.find(static_cast<uint32_t>(s.Get(qpc::cqn_rcv)));
      if (new_rcv == cqs_.end()) return Refuse(Syndrome::QP_CQ_UNKNOWN);
      if (new_rcv->second.uid != qp.uid)
        return Refuse(Syndrome::NOT_OWNER);
    }
  }

  // Every check passed: keep the result.
  const prm::QpState to = EndsIn(t);
  s.SetState(to);
  if (t == T::k2Rst) {
    // Back to empty rings: the counters the context reports start over with the engine's.
    s.Set(qpc::hw_sq_wqebb_counter, 0);
    s.Set(qpc::sw_sq_wqebb_counter, 0);
    s.Set(qpc::hw_rq_counter, 0);
    s.Set(qpc::sw_rq_counter, 0);
  }
  qp.qpc = s.next();
  qp.state = to;
  if (new_rcv != cqs_.end()) {
    --cqs_.at(qp.cqn_rcv).users;
    ++new_rcv->second.users;
    qp.cqn_rcv = new_rcv->first;
    qp.cq_rcv = &new_rcv->second;
  }
  if (t == T::k2Rst) engine_.StartQp(it->first);
  return Outcome::Ok();
}

Outcome Firmware::Rst2InitQp(Bytes in, Out out) {
  if (Outcome s = CheckShape<prm::rst2init_qp_in, prm::rst2init_qp_out>(in, out); !s.ok()) return s;
  return ModifyQp(T::kRst2Init, in, out);
}
Outcome Firmware::Init2InitQp(Bytes in, Out out) {
  if (Outcome s = CheckShape<prm::init2init_qp_in, prm::init2init_qp_out>(in, out); !s.ok()) return s;
  return ModifyQp(T::kInit2Init, in, out);
}
Outcome Firmware::Init2RtrQp(Bytes in, Out out) {
  if (Outcome s = CheckShape<prm::init2rtr_qp_in, prm::init2rtr_qp_out>(in, out); !s.ok()) return s;
  return ModifyQp(T::kInit2Rtr, in, out);
}
Outcome Firmware::Rtr2RtsQp(Bytes in, Out out) {
  if (Outcome s = CheckShape<prm::rtr2rts_qp_in, prm::rtr2rts_qp_out>(in, out); !s.ok()) return s;
  return ModifyQp(T::kRtr2Rts, in, out);
}
Outcome Firmware::Rts2RtsQp(Bytes in, Out out) {
  if (Outcome s = CheckShape<prm::rts2rts_qp_in, prm::rts2rts_qp_out>(in, out); !s.ok()) return s;
  return ModifyQp(T::kRts2Rts, in, out);
}
Outcome Firmware::SqErr2RtsQp(Bytes in, Out out) {
  if (Outcome s = CheckShape<prm::sqerr2rts_qp_in, prm::sqerr2rts_qp_out>(in, out); !s.ok()) return s;
  return ModifyQp(T::kSqErr2Rts, in, out);
}
Outcome Firmware::Sqd2RtsQp(Bytes in, Out out) {
  if (Outcome s = CheckShape<prm::sqd2rts_qp_in, prm::sqd2rts_qp_out>(in, out); !s.ok()) return s;
  return ModifyQp(T::kSqd2Rts, in, out);
}
Outcome Firmware::Qp2ErrQp(Bytes in, Out out) {
  if (Outcome s = CheckShape<prm::qp_2err_in, prm::qp_2err_out>(in, out); !s.ok()) return s;
  return ModifyQp(T::k2Err, in, out);
}
Outcome Firmware::Qp2RstQp(Bytes in, Out out) {
  if (Outcome s = CheckShape<prm::qp_2rst_in, prm::qp_2rst_out>(in, out); !s.ok()) return s;
  return ModifyQp(T::k2Rst, in, out);
}

}  // namespace onchip::sim
