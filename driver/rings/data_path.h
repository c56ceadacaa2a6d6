// The verbs faces of the rings: the structs a driver QP, SRQ and CQ begin with (first member the
// libibverbs struct, so the ibv_qp* / ibv_qp_ex* / ibv_srq* / ibv_cq* / ibv_cq_ex* a verb receives
// casts back), the hot-path ops for verbs_context_ops (post_send, post_recv, post_srq_recv,
// poll_cq, req_notify_cq, cq_event), and the ibv_qp_ex / ibv_cq_ex function tables.
//
// The object layer (driver/qp, driver/cq, driver/srq) allocates the queue memory, fills the
// ring descriptions, calls Init on each ring, sets `queues` and inserts it into the CQs' qpn
// table, and installs these functions. Everything here runs without a lock under a thread
// domain, and without an allocation or a syscall always.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

#include "driver/rings/cq_ring.h"
#include "driver/rings/qpn_table.h"
#include "driver/rings/recv_queue.h"
#include "driver/rings/send_queue.h"
#include "driver/rings/srq_ring.h"
#include "uapi/verbs/abi34.h"
#include "uapi/result.h"

namespace onchip::driver::rings {

struct DataPathQp {
  ibverbs_abi::verbs_qp verbs;  // first: ibv_qp* and ibv_qp_ex* cast back
  SendQueue sq;
  RecvQueue rq;                // unused when the QP receives through an SRQ
  WorkQueues queues;           // {&sq, &rq or null, the SRQ's ring or null}: the qpn table's entry

  static DataPathQp* From(ibv_qp* qp) { return reinterpret_cast<DataPathQp*>(qp); }
  static DataPathQp* From(ibv_qp_ex* qp) { return reinterpret_cast<DataPathQp*>(qp); }
};
static_assert(offsetof(DataPathQp, verbs) == 0);

struct DataPathSrq {
  ibverbs_abi::verbs_srq verbs;  // first: ibv_srq* casts back
  SrqRing ring;

  static DataPathSrq* From(ibv_srq* srq) { return reinterpret_cast<DataPathSrq*>(srq); }
};
static_assert(offsetof(DataPathSrq, verbs) == 0);

struct DataPathCq {
  ibverbs_abi::verbs_cq verbs;  // first: ibv_cq* and ibv_cq_ex* cast back
  CqRing ring;

  static DataPathCq* From(ibv_cq* cq) { return reinterpret_cast<DataPathCq*>(cq); }
  static DataPathCq* From(ibv_cq_ex* cq) { return reinterpret_cast<DataPathCq*>(cq); }
};
static_assert(offsetof(DataPathCq, verbs) == 0);

// verbs_context_ops entries.
int PostSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr);
int PostRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
int PostSrqRecv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
int PollCq(ibv_cq* cq, int num_entries, ibv_wc* wc);
int ReqNotifyCq(ibv_cq* cq, int solicited_only);
void CqEvent(ibv_cq* cq);

// The send operations each transport can post through ibv_wr_* (IBV_QP_EX_WITH_*).
uint64_t SupportedSendOps(QpTransport transport);

// Fills the ibv_qp_ex function table of `qp` for `send_ops_flags`: wr_start, wr_complete,
// wr_abort, the setters (wr_set_sge(_list), wr_set_inline_data(_list), and wr_set_ud_addr on UD)
// and one builder per requested operation. EOPNOTSUPP if a requested operation is not in
// SupportedSendOps(transport) (TSO, ATOMIC_WRITE, or RDMA/atomics the transport lacks).
Result<void> InstallWrOps(ibv_qp_ex* qp, uint64_t send_ops_flags, QpTransport transport);

// The completion fields an ibv_cq_ex can report (IBV_WC_EX_WITH_*).
inline constexpr uint64_t kSupportedWcFlags =
    IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
    IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
    IBV_WC_EX_WITH_DLID_PATH_BITS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;

// Fills start_poll, next_poll, end_poll, read_opcode, read_vendor_err, read_wc_flags and the
// reader of every field `wc_flags` asks for. EOPNOTSUPP for a flag outside kSupportedWcFlags
// (CVLAN, FLOW_TAG, TM_INFO, WALLCLOCK).
Result<void> InstallCqExOps(ibv_cq_ex* cq, uint64_t wc_flags);

}  // namespace onchip::driver::rings
