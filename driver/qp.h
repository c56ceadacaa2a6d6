// Queue pairs (ibv_create_qp, ibv_create_qp_ex) for RC, UC, UD and raw packet (driver/raw_qp.h:
// SQ, RQ, TIS and TIR objects instead of a QP context; the SQ ring has its own buffer). A Qp begins with the data
// path's DataPathQp (rdma-core's verbs_qp, whose comp_mask libibverbs' ibv_qp_to_qp_ex reads,
// then the send and receive rings), so the ibv_qp* / ibv_qp_ex* libibverbs hands back convert
// to Qp and post_send / post_recv / ibv_wr_* (driver/rings) run on the rings described here.
// The QP's number maps to its work queues in the device's qpn table while it lives, so a CQ's
// poller finds the queue a completion retires.
//
// CreateQp sizes the rings as libmlx5 does (providers/mlx5/verbs.c mlx5_calc_sq_size, mlx5_calc_rq_size):
//   - send WQE = ctrl + the largest operation the type can post (RC: max(raddr + atomic,
//     UMR ctrl + mkey + one KLM block for a bind); UC: max(raddr, bind); UD: datagram) +
//     max(max_send_sge data segments, an inline segment of max_inline_data), rounded up to 64;
//     above max_wqe_sz_sq: EINVAL. Ring = roundup_pow2(max_send_wr * WQE) bytes of 64-byte
//     basic blocks (above 2^log_max_qp_sz blocks: EINVAL); reported max_send_wr = ring / WQE,
//     max_inline_data = WQE - overhead - 4;
//   - receive stride = roundup_pow2(16 * max(max_recv_sge, 1)), ring = roundup_pow2(max_recv_wr)
//     strides, at least 64 bytes; none with an SRQ;
//   - one buffer, receive ring first, from QueueBuffer with MLX5DV_RES_TYPE_QP; the doorbell
//     record (receive and send counters) with MLX5DV_RES_TYPE_DBR;
//   - the send doorbell is SendBfregFor(pd): a thread domain's own lock-free BlueFlame register
//     on a parent domain with a TD, else the shared register (posting locks it).
// A QP pins its PD (the one its parent domain wraps for the device, the parent domain for its
// memory), its CQs and its SRQ.
//
// XRC (libmlx5 and mlx5_ib):
//   - XRC_SEND (CreateQp): RC's send queue with the 16-byte XRC segment after ctrl in its WQE
//     budget (libmlx5's sq_overhead: max(ctrl + bind, ctrl + xrc + raddr + atomic)); no
//     receive queue (the receive caps, the receive CQ and the SRQ are ignored, as the kernel
//     ignores them for XRC_INI; the device's cqn_rcv is the send CQ); pins its PD and send CQ.
//   - XRC_RECV (CreateXrcRecvQp): no PD, CQ or ring at all; the XRC domain (IBV_QP_INIT_ATTR_XRCD)
//     is all it has and pins. Its receives come from the domain's XRC SRQs that messages name,
//     and complete on those SRQs' CQs: its number's entry in the device's qpn table says so
//     (WorkQueues::xrc_srqs). Caps report 0.
//   Both are reliable connections: the transitions take RC's fields (qp_transitions.h has the
//   kernel's XRC_INI / XRC_TGT attribute masks).
//
// ModifyQp checks the attribute mask as the kernel does (qp_transitions.h) and the values as
// mlx5_ib does (port, P_Key index, path MTU, RDMA read depths, a global address on RoCE),
// before any command; then runs the transition's command with the fields it takes. QueryQp
// answers from QUERY_QP and what the driver keeps (capabilities, the init attributes).
#pragma once

#include <infiniband/verbs.h>

#include <memory>

#include "driver/cq.h"
#include "driver/pd.h"
#include "driver/queue_buffer.h"
#include "driver/raw_qp.h"
#include "driver/registry.h"
#include "driver/rings/data_path.h"
#include "driver/srq.h"
#include "driver/uar.h"
#include "driver/xrcd.h"

namespace onchip::driver {

// The rings' geometry, as the data path needs it.
struct SendRing {
  std::byte* start = nullptr;  // basic block 0
  uint32_t wqe_cnt = 0;        // 64-byte basic blocks (a power of two); 0: no send queue
  uint32_t max_post = 0;       // WRs that fit (reported max_send_wr)
  uint32_t max_gs = 0;         // data segments per WR (max_send_sge)
  uint32_t max_inline = 0;     // max_inline_data
  bool can_bind = false;       // sized for a UMR (bind / local invalidate) work request
};
struct RecvRing {
  std::byte* start = nullptr;
  uint32_t wqe_cnt = 0;    // WQEs (a power of two); 0: none (an SRQ, or max_recv_wr 0)
  uint32_t wqe_shift = 0;  // log2 of the stride
  uint32_t max_post = 0;
  uint32_t max_gs = 0;
};

struct QpAttributes {
  ibv_qp_type type = IBV_QPT_RC;
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;
  Srq* srq = nullptr;
  Xrcd* xrcd = nullptr;      // XRC_RECV: its domain
  ibv_qp_cap cap{};          // in: what was asked; out (CreateQp): what the QP has
  bool sq_sig_all = false;
  uint64_t send_ops_flags = 0;  // IBV_QP_EX_WITH_*; 0 when not given
  bool ex = false;              // created with send_ops_flags: ibv_qp_ex callbacks are filled
  uint32_t create_flags = 0;    // IBV_QP_CREATE_*: only BLOCK_SELF_MCAST_LB (qpc.block_lb_mc)
  void* qp_context = nullptr;
};

struct Qp {
  rings::DataPathQp dp;  // first: From() converts back; dp.verbs.qp is the ibv_qp
  std::shared_ptr<Device> device;
  Pd* pd = nullptr;           // as given
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;
  Srq* srq = nullptr;
  Xrcd* xrcd = nullptr;       // XRC_RECV: the domain it pins (no PD, CQs or rings then)
  ibv_qp_type type = IBV_QPT_RC;
  QueueBuffer buffer;         // receive ring, then send ring
  QueueBuffer doorbell;       // prm::QpDoorbellRecord
  QueueBuffer sq_buffer;      // raw packet QPs: the send ring (`buffer` holds the receive ring)
  RawQpObjects raw;           // raw packet QPs: the device objects behind it
  Bfreg* bf = nullptr;
  SendRing sq;
  RecvRing rq;
  uint32_t qpn = 0;
  bool sq_sig_all = false;
  uint64_t send_ops_flags = 0;
  bool atomics = false;           // may post atomics (SendQueueDesc::atomics)
  bool in_qpn_table = false;
  // A raw QP with both queues: its RQ's number, which its receives complete under, entered in
  // the qpn table beside qpn (0 otherwise). Kept here because DestroyRawQpObjects clears
  // raw.rqn, and the table and the CQs must still forget that number afterwards.
  uint32_t raw_recv_qpn = 0;
  // What the driver keeps between modifies (mlx5_ib's trans_qp fields).
  uint8_t port = 1;
  uint16_t pkey_index = 0;
  unsigned access_flags = 0;      // qp_access_flags last set
  uint8_t max_dest_rd_atomic = 0; // responder depth last set
  ibv_qp_cap init_cap{};          // as reported at creation
  Life life;

  static Qp* From(ibv_qp* qp) { return reinterpret_cast<Qp*>(qp); }
  ibv_qp& ibv() { return dp.verbs.qp; }
};

Result<Qp*> CreateQp(Pd* pd, QpAttributes& attr);
// An XRC receive QP in attr.xrcd (attr.type XRC_RECV).
Result<Qp*> CreateXrcRecvQp(QpAttributes& attr);
Result<void> ModifyQp(Qp* qp, const ibv_qp_attr& attr, int mask);
Result<void> QueryQp(Qp* qp, int mask, ibv_qp_attr* attr, ibv_qp_init_attr* init);
Result<void> DestroyQp(Qp* qp);
Result<void> ReleaseQpOnDevice(Qp& qp, Release why);

// The registry's view of the kind (registry.h KindTraits).
template <>
struct KindTraits<ObjectKind::kQp> {
  using Object = Qp;
  static Result<void> ReleaseOnDevice(Qp& object, Release why);  // qp.cc
};

}  // namespace onchip::driver
