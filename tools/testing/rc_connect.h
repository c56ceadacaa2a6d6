// An RC QP taken RESET -> INIT -> RTR -> RTS towards a peer QP, through the driver's verbs calls,
// with the attributes each transition requires: what every test that moves bytes between two RC
// QPs does first (and, with XRC's masks, between an XRC initiator and target). RoCE needs a GRH, so the path names the peer's GID and the local GID index; on
// an InfiniBand port a path may instead name the peer's LID alone (global false).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

#include "driver/verbs/calls.h"

namespace onchip::testing {

struct RcPath {
  bool global = true;          // false: no GRH, the peer addressed by `dlid` (InfiniBand)
  uint16_t dlid = 0;           // the peer port's LID (InfiniBand)
  ibv_gid dgid{};              // the peer port's GID
  uint8_t sgid_index = 2;      // RoCE v2, IPv4-mapped (tools/sim/wire.h)
  ibv_mtu mtu = IBV_MTU_1024;
  uint8_t rd_atomic = 1;       // max_rd_atomic and max_dest_rd_atomic
  uint32_t sq_psn = 0;         // must equal the peer's rq_psn
  uint32_t rq_psn = 0;         // must equal the peer's sq_psn
  unsigned access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
};

struct RcConnectResult {
  int err = 0;                  // 0, or the errno of the refused transition
  const char* transition = "";  // which one: "to INIT", "to RTR", "to RTS"
  explicit operator bool() const { return err == 0; }
  std::string describe() const { return std::string(transition) + ": errno " + std::to_string(err); }
};

// The pieces ConnectRc and ConnectXrc share.
namespace rc_detail {

// The RTR attributes towards `dest_qpn` on `path` (RC's, which XRC shares).
inline ibv_qp_attr RtrAttr(uint32_t dest_qpn, const RcPath& path) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = path.mtu;
  a.dest_qp_num = dest_qpn;
  a.rq_psn = path.rq_psn;
  a.max_dest_rd_atomic = path.rd_atomic;
  a.min_rnr_timer = 1;
  a.ah_attr.is_global = path.global ? 1 : 0;
  a.ah_attr.port_num = 1;
  a.ah_attr.dlid = path.dlid;
  if (path.global) {
    a.ah_attr.grh.dgid = path.dgid;
    a.ah_attr.grh.sgid_index = path.sgid_index;
    a.ah_attr.grh.hop_limit = 64;
  }
  return a;
}

// The RTS attributes on `path`.
inline ibv_qp_attr RtsAttr(const RcPath& path) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = path.sq_psn;
  a.max_rd_atomic = path.rd_atomic;
  return a;
}

// The three transitions with the masks given for RTR and RTS (INIT's is the same for RC and XRC).
inline RcConnectResult ConnectWithMasks(ibv_qp* qp, uint32_t dest_qpn, const RcPath& path,
                                        int rtr_mask, int rts_mask) {
  namespace v = driver::verbs;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = path.access;
  if (int e = v::modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return {e, "to INIT"};
  a = RtrAttr(dest_qpn, path);
  if (int e = v::modify_qp(qp, &a, rtr_mask)) return {e, "to RTR"};
  a = RtsAttr(path);
  if (int e = v::modify_qp(qp, &a, rts_mask)) return {e, "to RTS"};
  return {};
}

inline constexpr int kRtrPathMask =
    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
inline constexpr int kRtrResponderMask = IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
inline constexpr int kRtsTimeoutMask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN;
inline constexpr int kRtsRequesterMask = IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;

}  // namespace rc_detail

inline RcConnectResult ConnectRc(ibv_qp* qp, uint32_t dest_qpn, const RcPath& path) {
  using namespace rc_detail;  // NOLINT: the masks
  return ConnectWithMasks(qp, dest_qpn, path, kRtrPathMask | kRtrResponderMask,
                          kRtsTimeoutMask | kRtsRequesterMask);
}

// An XRC QP to RTS with the kernel's XRC masks: the target (XRC_TGT, `target`) takes RC's RTR
// attributes and only the timeout at RTS, and path.access; the initiator (XRC_INI) RC's RTS
// attributes, no responder resources at RTR, and no access flags.
inline RcConnectResult ConnectXrc(ibv_qp* qp, uint32_t dest_qpn, bool target, const RcPath& path) {
  using namespace rc_detail;  // NOLINT: the masks
  RcPath xrc = path;
  if (!target) xrc.access = 0;
  return ConnectWithMasks(qp, dest_qpn, xrc, kRtrPathMask | (target ? kRtrResponderMask : 0),
                          kRtsTimeoutMask | (target ? 0 : kRtsRequesterMask));
}

}  // namespace onchip::testing
