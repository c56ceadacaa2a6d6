#include "driver/qp.h"

#include <infiniband/mlx5dv.h>
#include <pthread.h>

#include <algorithm>
#include <array>
#include <memory>
#include <bit>
#include <cerrno>
#include <cstring>

#include "driver/cmd/run.h"
#include "driver/device_object.h"
#include "driver/parent_domain.h"
#include "driver/port.h"
#include "driver/qp_transitions.h"
#include "driver/roce_address.h"
#include "driver/rings/wqe_budget.h"
#include "uapi/prm/caps.h"
#include "uapi/prm/doorbell_record.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/qp.h"
#include "uapi/prm/send_wqe.h"

namespace onchip::driver {
namespace {

// A receive ring's smallest size, in bytes.
constexpr uint32_t kMinRqBytes = 64;

constexpr uint32_t kAtomicModeIbCompatible = 0x1;
// UD QPs carry at most one 4096-byte MTU: mlx5 programs a fixed MTU and message size for them.
constexpr uint32_t kUdLogMsgMax = 12;
constexpr uint32_t kVerbsQpEx = 1u << 1;  // verbs_qp.comp_mask VERBS_QP_EX: qp_ex is filled

uint32_t CeilLog2(uint32_t v) { return v <= 1 ? 0 : static_cast<uint32_t>(std::bit_width(v - 1)); }

bool IsXrc(ibv_qp_type type) { return type == IBV_QPT_XRC_SEND || type == IBV_QPT_XRC_RECV; }
// RC and both XRC sides: acknowledged, with RDMA reads and atomics.
bool IsReliable(ibv_qp_type type) { return type == IBV_QPT_RC || IsXrc(type); }

uint32_t PrmSt(ibv_qp_type type) {
  return type == IBV_QPT_RC   ? prm::QP_ST_RC
         : type == IBV_QPT_UC ? prm::QP_ST_UC
         : IsXrc(type)        ? prm::QP_ST_XRC
                              : prm::QP_ST_UD;
}

rings::QpTransport Transport(ibv_qp_type type) {
  return type == IBV_QPT_RC           ? rings::QpTransport::kRc
         : type == IBV_QPT_UC         ? rings::QpTransport::kUc
         : type == IBV_QPT_RAW_PACKET ? rings::QpTransport::kRaw
         : type == IBV_QPT_XRC_SEND   ? rings::QpTransport::kXrc
                                      : rings::QpTransport::kUd;
}

struct Geometry {
  uint32_t sq_bytes = 0, rq_bytes = 0;
  SendRing sq;
  RecvRing rq;
};

Result<Geometry> Size(const Device& device, const QpAttributes& attr) {
  const prm::Bits gen = device.caps().cur(prm::CAP_GENERAL);
  const uint32_t max_wqebb = uint32_t{1} << gen.get(prm::cmd_hca_cap::log_max_qp_sz);
  const uint32_t max_sq_desc = gen.get(prm::cmd_hca_cap::max_wqe_sz_sq);
  const uint32_t max_rq_desc = gen.get(prm::cmd_hca_cap::max_wqe_sz_rq);
  const ibv_qp_cap& cap = attr.cap;
  Geometry g;
  if (cap.max_send_wr > 0) {
    // A QP made without send_ops_flags may bind windows (ibv_bind_mw); one made with them
    // only when it asked for BIND_MW or LOCAL_INV.
    const bool can_bind = attr.type != IBV_QPT_UD && attr.type != IBV_QPT_RAW_PACKET &&
                          (!attr.ex || (attr.send_ops_flags &
                                        (IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV)));
    const rings::QpTransport transport = Transport(attr.type);
    const uint64_t wqe = rings::SendWqeBytes({.transport = transport,
                                              .umr = can_bind,
                                              .max_send_sge = cap.max_send_sge,
                                              .max_inline_data = cap.max_inline_data});
    if (wqe > max_sq_desc) return Fail(EINVAL, "create_qp: a send WQE of these caps is too large");
    if (cap.max_send_wr > max_wqebb) return Fail(EINVAL, "create_qp: max_send_wr above the device's");
    const uint64_t ring = std::bit_ceil(uint64_t{cap.max_send_wr} * wqe);
    if (ring / prm::MLX5_SEND_WQE_BB > max_wqebb)
      return Fail(EINVAL, "create_qp: send ring above the device's");
    g.sq_bytes = static_cast<uint32_t>(ring);
    g.sq.wqe_cnt = static_cast<uint32_t>(ring / prm::MLX5_SEND_WQE_BB);
    g.sq.max_post = static_cast<uint32_t>(ring / wqe);
    g.sq.max_gs = cap.max_send_sge;
    g.sq.can_bind = can_bind;
    g.sq.max_inline = static_cast<uint32_t>(rings::SendInlineCapacity(wqe, transport, can_bind));
  }
  if (cap.max_recv_wr > 0 && attr.srq == nullptr && !IsXrc(attr.type)) {
    if (cap.max_recv_wr > max_wqebb) return Fail(EINVAL, "create_qp: max_recv_wr above the device's");
    const uint64_t wqe = rings::RecvWqeBytes(cap.max_recv_sge);
    if (wqe > max_rq_desc) return Fail(EINVAL, "create_qp: a receive WQE of these caps is too large");
    const uint64_t ring = std::max<uint64_t>(std::bit_ceil(uint64_t{cap.max_recv_wr}) * wqe, kMinRqBytes);
    g.rq_bytes = static_cast<uint32_t>(ring);
    g.rq.wqe_cnt = static_cast<uint32_t>(ring / wqe);
    g.rq.wqe_shift = static_cast<uint32_t>(std::countr_zero(wqe));
    g.rq.max_post = g.rq.wqe_cnt;
    g.rq.max_gs = static_cast<uint32_t>(rings::RecvSgeCapacity(wqe));
  }
  return g;
}


// (Re)builds the rings over the QP's memory, empty: at creation and when the QP returns to
// RESET (the device forgets its progress, so the driver's counters start over too).
Result<void> InitRings(Qp& qp) {
  if (qp.type == IBV_QPT_XRC_RECV) {
    // No rings: its receives retire on the XRC SRQ each CQE names.
    qp.dp.queues = {};
    qp.dp.queues.xrc_srqs = &qp.device->xrc_srqns();
    return {};
  }
  auto* record = static_cast<prm::QpDoorbellRecord*>(qp.doorbell.data());
  const bool locked = qp.bf->need_lock;
  std::destroy_at(&qp.dp.sq);
  std::construct_at(&qp.dp.sq);
  std::destroy_at(&qp.dp.rq);
  std::construct_at(&qp.dp.rq);
  qp.dp.queues = {};
  if (qp.sq.wqe_cnt) {
    ONCHIP_CHECK(qp.dp.sq.Init({.ring = qp.sq.start,
                                .wqe_cnt = qp.sq.wqe_cnt,
                                .max_post = qp.sq.max_post,
                                .db_counter = &record->snd_counter,
                                .bf = qp.bf,
                                .bus = &qp.device->bus(),
                                .qpn = qp.qpn,
                                .transport = Transport(qp.type),
                                .max_inline_data = qp.sq.max_inline,
                                .max_send_sge = qp.sq.max_gs,
                                .sq_sig_all = qp.sq_sig_all,
                                .atomics = qp.atomics,
                                .umr = qp.sq.can_bind,
                                .locked = locked}));
    qp.dp.queues.sq = &qp.dp.sq;
  }
  if (qp.rq.wqe_cnt) {
    ONCHIP_CHECK(qp.dp.rq.Init({.ring = qp.rq.start,
                                .wqe_cnt = qp.rq.wqe_cnt,
                                .wqe_shift = qp.rq.wqe_shift,
                                .max_recv_sge = qp.rq.max_gs,
                                .db_counter = &record->rcv_counter,
                                .bus = &qp.device->bus(),
                                .locked = locked}));
    qp.dp.queues.rq = &qp.dp.rq;
  }
  if (qp.srq) qp.dp.queues.srq = &qp.srq->dp.ring;
  return {};
}

// libmlx5's operational gate on posting: nothing at create and after RESET, receives from INIT,
// sends from RTS; the other states keep what they had.
void GatePosting(Qp& qp, ibv_qp_state state) {
  switch (state) {
    case IBV_QPS_RESET:
      qp.dp.sq.SetStateMaxGs(-1);
      qp.dp.rq.SetStateMaxGs(-1);
      break;
    case IBV_QPS_INIT:
      qp.dp.rq.SetStateMaxGs(static_cast<int>(qp.rq.max_gs));
      break;
    case IBV_QPS_RTS:
      qp.dp.sq.SetStateMaxGs(static_cast<int>(qp.sq.max_gs));
      qp.dp.rq.SetStateMaxGs(static_cast<int>(qp.rq.max_gs));
      break;
    default:
      break;
  }
}

// The QP's completions nobody polled leave its CQs (libmlx5's __mlx5_cq_clean), so a poll never
// meets a CQE of a QP that is gone or started over; SRQ WQEs they held go back to the SRQ.
void CleanCqs(Qp& qp) {
  // An XRC receive QP has no CQ: its completions name XRC SRQs, whose WQEs stay theirs.
  if (qp.send_cq == nullptr) return;
  rings::SrqRing* srq = qp.srq ? &qp.srq->dp.ring : nullptr;
  qp.send_cq->dp.ring.Clean(qp.qpn, srq);
  if (qp.recv_cq != qp.send_cq) qp.recv_cq->dp.ring.Clean(qp.qpn, srq);
  // A raw QP's receives complete under its RQ's number.
  if (qp.raw_recv_qpn != 0) qp.recv_cq->dp.ring.Clean(qp.raw_recv_qpn, srq);
}

// The numbers the CQ pollers find this QP's queues by: its own, and a raw QP's RQ number
// (remembered in raw_recv_qpn, so EraseNumbers and CleanCqs still know it once
// DestroyRawQpObjects has cleared the RQ's number).
Result<void> InsertNumbers(Qp& qp) {
  ONCHIP_CHECK(qp.device->qpns().Insert(qp.qpn, &qp.dp.queues));
  if (qp.raw.has_sq && qp.raw.has_rq) {
    if (auto r = qp.device->qpns().Insert(qp.raw.rqn, &qp.dp.queues); !r) {
      qp.device->qpns().Erase(qp.qpn);
      return r;
    }
    qp.raw_recv_qpn = qp.raw.rqn;
  }
  qp.in_qpn_table = true;
  return {};
}

void EraseNumbers(Qp& qp) {
  if (!qp.in_qpn_table) return;
  qp.device->qpns().Erase(qp.qpn);
  if (qp.raw_recv_qpn != 0) qp.device->qpns().Erase(qp.raw_recv_qpn);
  qp.in_qpn_table = false;
}

// QP `qpn` on the device (CREATE_QP's), with its DESTROY_QP.
DeviceObject QpOnDevice(cmd::Commander& commander, uint32_t qpn) {
  prm::Message<prm::destroy_qp_in> in;
  in.set(prm::destroy_qp_in::opcode, prm::DESTROY_QP).set(prm::destroy_qp_in::qpn, qpn);
  return DeviceObject::Owning<prm::destroy_qp_out>(commander, qpn, in);
}

void InitVerbsQp(Qp& qp, const QpAttributes& attr) {
  ibv_qp& v = qp.ibv();
  // The context the QP was created through, as its PD's (its domain's for XRC receive).
  v.context = qp.pd ? qp.pd->ibv.context : qp.xrcd->ibv().context;
  v.qp_context = attr.qp_context;
  v.pd = qp.pd ? &qp.pd->ibv : nullptr;
  v.send_cq = qp.send_cq ? &qp.send_cq->dp.verbs.cq : nullptr;
  // XRC send QPs receive nothing: no receive CQ to show.
  v.recv_cq = qp.recv_cq && !IsXrc(qp.type) ? &qp.recv_cq->dp.verbs.cq : nullptr;
  qp.dp.verbs.xrcd = qp.xrcd ? &qp.xrcd->verbs : nullptr;
  v.srq = qp.srq ? &qp.srq->dp.verbs.srq : nullptr;
  v.handle = qp.qpn;
  v.qp_num = qp.qpn;
  v.state = IBV_QPS_RESET;
  v.qp_type = attr.type;
  v.events_completed = 0;
  pthread_mutex_init(&v.mutex, nullptr);
  pthread_cond_init(&v.cond, nullptr);
}

// ---- modify ----

// Every context-carrying transition command has rst2init_qp_in's shape.
using T = prm::rst2init_qp_in;
static_assert(prm::init2init_qp_in::qpc.bit_offset == T::qpc.bit_offset);
static_assert(prm::init2rtr_qp_in::qpc.bit_offset == T::qpc.bit_offset);
static_assert(prm::rtr2rts_qp_in::qpc.bit_offset == T::qpc.bit_offset);
static_assert(prm::rts2rts_qp_in::qpc.bit_offset == T::qpc.bit_offset);
static_assert(prm::sqerr2rts_qp_in::qpc.bit_offset == T::qpc.bit_offset);
static_assert(prm::sqd2rts_qp_in::qpc.bit_offset == T::qpc.bit_offset);
static_assert(prm::init2rtr_qp_in::size_bits == T::size_bits);
static_assert(prm::rtr2rts_qp_in::size_bits == T::size_bits);
static_assert(prm::rts2rts_qp_in::size_bits == T::size_bits);
static_assert(prm::init2init_qp_in::size_bits == T::size_bits);
static_assert(prm::sqerr2rts_qp_in::size_bits == T::size_bits);
static_assert(prm::sqd2rts_qp_in::size_bits == T::size_bits);
static_assert(prm::sqd2rts_qp_in::opt_param_mask.bit_offset == T::opt_param_mask.bit_offset);
constexpr auto kQpc = T::qpc;
constexpr auto kPath = T::qpc.primary_address_path;

// InfiniBand (mlx5_ib's mlx5_set_path for an IB port): rlid = dlid, mlid = src_path_bits, the
// SL, and only with is_global the GRH fields and grh 1. stat_rate stays 0 (the port's rate): the
// device advertises no cmd_hca_cap.stat_rate_support, so mlx5_ib's rate reduction ends at 0.
void SetIbPath(prm::Message<T>& in, const ibv_ah_attr& ah, uint8_t port, uint16_t pkey_index) {
  in.set(kPath.rlid, ah.dlid)
      .set(kPath.mlid, ah.src_path_bits & 0x7f)
      .set(kPath.sl, ah.sl & 0xf)
      .set(kPath.vhca_port_num, ah.port_num ? ah.port_num : port)
      .set(kPath.pkey_index, pkey_index);
  if (!ah.is_global) return;
  const ibv_global_route& grh = ah.grh;
  in.set(kPath.grh, 1)
      .set(kPath.src_addr_index, grh.sgid_index)
      .set(kPath.hop_limit, grh.hop_limit)
      .set(kPath.tclass, grh.traffic_class)
      .set(kPath.flow_label, grh.flow_label & 0xfffff);
  for (std::size_t i = 0; i < 16; ++i) in.set(kPath.rgid_rip[i], grh.dgid.raw[i]);
}

void SetPath(prm::Message<T>& in, const ibv_ah_attr& ah, uint8_t port, uint16_t pkey_index) {
  const ibv_global_route& grh = ah.grh;
  const std::array<uint8_t, 6> mac = MacOfGid(grh.dgid);
  in.set(kPath.grh, 1)
      .set(kPath.src_addr_index, grh.sgid_index)
      .set(kPath.hop_limit, grh.hop_limit)
      .set(kPath.tclass, grh.traffic_class)
      .set(kPath.dscp, grh.traffic_class >> 2)
      .set(kPath.flow_label, grh.flow_label & 0xfffff)
      .set(kPath.udp_sport, RoceUdpSport(grh.flow_label))
      .set(kPath.eth_prio, ah.sl & 7)
      .set(kPath.sl, ah.sl & 0xf)
      .set(kPath.vhca_port_num, ah.port_num ? ah.port_num : port)
      .set(kPath.pkey_index, pkey_index)
      .set(kPath.rmac_47_32, uint32_t{mac[0]} << 8 | mac[1])
      .set(kPath.rmac_31_0, uint32_t{mac[2]} << 24 | uint32_t{mac[3]} << 16 | uint32_t{mac[4]} << 8 | mac[5]);
  for (std::size_t i = 0; i < 16; ++i) in.set(kPath.rgid_rip[i], grh.dgid.raw[i]);
}

// rre/rwe/rae as mlx5_ib derives them: a responder with no RDMA read resources answers
// writes only.
void SetAccess(prm::Message<T>& in, ibv_qp_type type, unsigned access, uint8_t dest_rd_atomic) {
  if (dest_rd_atomic == 0) access &= IBV_ACCESS_REMOTE_WRITE;
  in.set(kQpc.rwe, (access & IBV_ACCESS_REMOTE_WRITE) ? 1 : 0);
  if (!IsReliable(type)) return;
  in.set(kQpc.rre, (access & IBV_ACCESS_REMOTE_READ) ? 1 : 0);
  const bool atomic = (access & IBV_ACCESS_REMOTE_ATOMIC) != 0;
  in.set(kQpc.rae, atomic ? 1 : 0).set(kQpc.atomic_mode, atomic ? kAtomicModeIbCompatible : 0);
}

// What the device and mlx5_ib check on the attribute values, before any command.
Result<void> CheckValues(const Qp& qp, const ibv_qp_attr& attr, int mask) {
  const prm::Bits gen = qp.device->caps().cur(prm::CAP_GENERAL);
  const uint32_t ports = gen.get(prm::cmd_hca_cap::num_ports);
  if ((mask & IBV_QP_PORT) && (attr.port_num < 1 || attr.port_num > ports))
    return Fail(EINVAL, "modify_qp: no such port");
  // RoCE ports hold one P_Key (the default): index 0 only.
  if ((mask & IBV_QP_PKEY_INDEX) && attr.pkey_index != 0)
    return Fail(EINVAL, "modify_qp: pkey_index beyond the port's P_Key table");
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) &&
      attr.max_rd_atomic > (1u << gen.get(prm::cmd_hca_cap::log_max_ra_req_qp)))
    return Fail(EINVAL, "modify_qp: max_rd_atomic above the device's");
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
      attr.max_dest_rd_atomic > (1u << gen.get(prm::cmd_hca_cap::log_max_ra_res_qp)))
    return Fail(EINVAL, "modify_qp: max_dest_rd_atomic above the device's");
  if ((mask & IBV_QP_PATH_MTU) && qp.type != IBV_QPT_UD &&
      (attr.path_mtu < IBV_MTU_256 || attr.path_mtu > IBV_MTU_4096))
    return Fail(EINVAL, "modify_qp: path_mtu outside 256..4096");
  if (mask & IBV_QP_AV) {
    // RoCE: every address is a global one. InfiniBand: a LID alone (is_global 0) will do.
    if (!IsInfiniBand(*qp.device) && !attr.ah_attr.is_global)
      return Fail(EINVAL, "modify_qp: a RoCE address needs a GRH");
    if (attr.ah_attr.port_num > ports) return Fail(EINVAL, "modify_qp: the address's port");
    if (attr.ah_attr.is_global && attr.ah_attr.grh.sgid_index >= GidTableSize(*qp.device))
      return Fail(EINVAL, "modify_qp: sgid_index beyond the GID table");
    // The kernel's answer for an empty entry: _ib_modify_qp -> rdma_fill_sgid_attr ->
    // rdma_get_gid_attr (drivers/infiniband/core/verbs.c, cache.c) gives ENODATA.
    if (attr.ah_attr.is_global && !qp.device->gid_table().populated(attr.ah_attr.grh.sgid_index))
      return Fail(ENODATA, "modify_qp: sgid_index names an empty GID entry");
  }
  if (mask & IBV_QP_ALT_PATH)
    return Fail(EOPNOTSUPP, "modify_qp: no path migration (the device has no alternate path)");
  if ((mask & IBV_QP_PATH_MIG_STATE) && attr.path_mig_state != IBV_MIG_MIGRATED)
    return Fail(EOPNOTSUPP, "modify_qp: no path migration (only MIGRATED)");
  if ((mask & IBV_QP_TIMEOUT) && attr.timeout > 31) return Fail(EINVAL, "modify_qp: timeout above 31");
  if ((mask & IBV_QP_RETRY_CNT) && attr.retry_cnt > 7) return Fail(EINVAL, "modify_qp: retry_cnt above 7");
  if ((mask & IBV_QP_RNR_RETRY) && attr.rnr_retry > 7) return Fail(EINVAL, "modify_qp: rnr_retry above 7");
  if ((mask & IBV_QP_MIN_RNR_TIMER) && attr.min_rnr_timer > 31)
    return Fail(EINVAL, "modify_qp: min_rnr_timer above 31");
  return {};
}

Result<void> RunSimple(Qp& qp, uint16_t opcode) {
  // QP_2ERR and QP_2RST share a header (opcode, uid, op_mod, qpn).
  static_assert(prm::qp_2err_in::qpn.bit_offset == prm::qp_2rst_in::qpn.bit_offset);
  static_assert(prm::qp_2err_in::size_bits == prm::qp_2rst_in::size_bits);
  prm::Message<prm::qp_2rst_in> in;
  in.set(prm::qp_2rst_in::opcode, opcode).set(prm::qp_2rst_in::qpn, qp.qpn);
  ONCHIP_TRY(auto out, cmd::Run<prm::qp_2rst_out>(qp.device->commander(), in));
  (void)out;
  return {};
}

// CREATE_QP for RC, UC and UD: the context libmlx5 and mlx5_ib would send, over `buffer`
// (receive ring, then send ring) and `doorbell`: the QP, owned.
Result<DeviceObject> CreateQpOnDevice(Device& device, Pd* pd, const QpAttributes& attr,
                                  const Geometry& g, const Bfreg& bf_reg,
                                  const QueueBuffer& doorbell, const QueueBuffer& buffer,
                                  std::size_t pages) {
  const Bfreg* bf = &bf_reg;
  using In = prm::create_qp_in;
  constexpr auto qpc = In::qpc;
  prm::Message<In> in(pages * 8);
  const uint32_t rq_type = attr.srq ? prm::SRQ_RQ : g.rq.wqe_cnt ? prm::NON_ZERO_RQ : prm::ZERO_LEN_RQ;
  in.set(In::opcode, prm::CREATE_QP)
      .set(qpc.st, PrmSt(attr.type))
      .set(qpc.pm_state, prm::QP_PM_MIGRATED)
      .set(qpc.pd, pd->protection().pdn)
      .set(qpc.uar_page, bf->uar_index)
      .set(qpc.log_page_size, 0)  // 4 KiB pages
      .set(qpc.cqn_snd, attr.send_cq->cqn)
      .set(qpc.cqn_rcv, attr.recv_cq->cqn)
      .set(qpc.dbr_addr, doorbell.iova())
      .set(qpc.rq_type, rq_type);
  if (attr.srq) in.set(qpc.srqn_rmpn_xrqn, attr.srq->srqn);
  // This device never loops multicast back; the bit says so to the firmware all the same.
  if (attr.create_flags & IBV_QP_CREATE_BLOCK_SELF_MCAST_LB) in.set(qpc.block_lb_mc, 1);
  if (g.rq.wqe_cnt) {
    in.set(qpc.log_rq_size, std::countr_zero(g.rq.wqe_cnt)).set(qpc.log_rq_stride, g.rq.wqe_shift - 4);
  }
  if (g.sq.wqe_cnt) in.set(qpc.log_sq_size, std::countr_zero(g.sq.wqe_cnt));
  else in.set(qpc.no_sq, 1);
  for (std::size_t i = 0; i < pages; ++i)
    in.set(In::pas[i], buffer.iova() + i * prm::ADAPTER_PAGE_SIZE);
  ONCHIP_TRY(auto out, cmd::Run<prm::create_qp_out>(device.commander(), in));
  return QpOnDevice(device.commander(), static_cast<uint32_t>(out.get(prm::create_qp_out::qpn)));
}

}  // namespace

namespace {

// What create_qp refuses before anything is allocated (rdma-core's mlx5_create_qp and mlx5_ib's
// create_qp refuse the same), with an XRC send QP's receive side folded onto its send CQ.
Result<void> CheckQpAttributes(const Pd* pd, QpAttributes& attr) {
  if (pd == nullptr) return Fail(EINVAL, "create_qp: null PD");
  switch (attr.type) {
    case IBV_QPT_RC:
    case IBV_QPT_UC:
    case IBV_QPT_UD:
    case IBV_QPT_RAW_PACKET:
    case IBV_QPT_XRC_SEND:
      break;
    case IBV_QPT_XRC_RECV:
      return Fail(EINVAL, "create_qp: an XRC receive QP belongs to an XRC domain, not a PD");
    case IBV_QPT_DRIVER:
      return Fail(EOPNOTSUPP, "create_qp: only RC, UC, UD, XRC and raw packet QPs");
    default:
      return Fail(EINVAL, "create_qp: unknown QP type");
  }
  if (attr.create_flags & ~uint32_t{IBV_QP_CREATE_BLOCK_SELF_MCAST_LB})
    return Fail(EOPNOTSUPP, "create_qp: create flags other than BLOCK_SELF_MCAST_LB");
  const bool raw = attr.type == IBV_QPT_RAW_PACKET;
  // A raw QP's SRQ would need an RQ on an RMP, which this device does not have.
  if (raw && attr.srq) return Fail(EOPNOTSUPP, "create_qp: a raw packet QP on an SRQ");
  if (raw && attr.ex && attr.send_ops_flags)
    return Fail(EOPNOTSUPP, "create_qp: the ibv_wr_* API on a raw packet QP");
  if (attr.ex && (attr.send_ops_flags & ~rings::SupportedSendOps(Transport(attr.type))))
    return Fail(EOPNOTSUPP, "create_qp: a send op this QP type cannot post");
  if (attr.type == IBV_QPT_XRC_SEND) {
    // The send side of XRC receives nothing (mlx5_ib's XRC_INI): no receive queue, CQ or SRQ of
    // its own; the device's cqn_rcv names the send CQ.
    attr.recv_cq = attr.send_cq;
    attr.srq = nullptr;
    attr.cap.max_recv_wr = attr.cap.max_recv_sge = 0;
  }
  if (attr.send_cq == nullptr || attr.recv_cq == nullptr)
    return Fail(EINVAL, "create_qp: a QP needs a send and a receive CQ");
  const std::shared_ptr<Device>& device = pd->device;
  if (attr.send_cq->device != device || attr.recv_cq->device != device ||
      (attr.srq && attr.srq->device != device))
    return Fail(EINVAL, "create_qp: a CQ or the SRQ belongs to another device");
  return {};
}

// One page-aligned, zeroed queue buffer of `bytes` (at least a page) from the PD's allocator.
Result<QueueBuffer> AllocateRing(Pd* pd, uint32_t bytes, const char* what) {
  const std::size_t pages =
      bytes == 0 ? 1 : (bytes + prm::ADAPTER_PAGE_SIZE - 1) / prm::ADAPTER_PAGE_SIZE;
  ONCHIP_TRY(QueueBuffer buffer, QueueBuffer::Allocate(pd, pages * prm::ADAPTER_PAGE_SIZE,
                                                       prm::ADAPTER_PAGE_SIZE, MLX5DV_RES_TYPE_QP));
  if (buffer.iova() % prm::ADAPTER_PAGE_SIZE != 0) return Fail(EINVAL, what);
  if (buffer.custom()) std::memset(buffer.data(), 0, buffer.size());
  return buffer;
}

// The memory a QP's rings and doorbell record live in.
struct QpMemory {
  QueueBuffer buffer;     // the RQ, then the SQ (a raw QP: the RQ only, from page 0)
  QueueBuffer sq_buffer;  // a raw QP's SQ, from page 0 of its own buffer
  QueueBuffer doorbell;
  std::size_t pages() const { return buffer.size() / prm::ADAPTER_PAGE_SIZE; }
};

Result<QpMemory> AllocateQpMemory(Pd* pd, const Geometry& g, bool raw) {
  QpMemory m;
  ONCHIP_TRY(m.buffer, AllocateRing(pd, raw ? g.rq_bytes : g.rq_bytes + g.sq_bytes,
                                    "create_qp: the allocator's QP buffer is not page aligned"));
  ONCHIP_TRY(m.doorbell, QueueBuffer::Allocate(pd, sizeof(prm::QpDoorbellRecord),
                                               sizeof(prm::QpDoorbellRecord), MLX5DV_RES_TYPE_DBR));
  if (m.doorbell.iova() % sizeof(prm::QpDoorbellRecord) != 0)
    return Fail(EINVAL, "create_qp: the allocator's doorbell record is not 8-byte aligned");
  std::memset(m.doorbell.data(), 0, sizeof(prm::QpDoorbellRecord));
  if (raw && g.sq_bytes) {
    ONCHIP_TRY(m.sq_buffer, AllocateRing(pd, g.sq_bytes,
                                         "create_qp: the allocator's SQ buffer is not page aligned"));
  }
  return m;
}

// What the device made for the QP, owned until it is published: CREATE_QP's QP, or a raw QP's
// RQ, SQ, TIR and TIS.
struct QpDeviceObjects {
  DeviceObject qp;
  RawQpOnDevice raw;
  bool is_raw = false;
  uint32_t qpn() const { return is_raw ? raw.numbers.qpn() : qp.id(); }
  void Commit() {
    qp.Commit();
    raw.Commit();
  }
};

Result<QpDeviceObjects> CreateQpObjects(Device& device, Pd* pd, const QpAttributes& attr,
                                        const Geometry& g, const Bfreg& bf, const QpMemory& m) {
  QpDeviceObjects made;
  if (attr.type != IBV_QPT_RAW_PACKET) {
    ONCHIP_TRY(made.qp, CreateQpOnDevice(device, pd, attr, g, bf, m.doorbell, m.buffer, m.pages()));
    return made;
  }
  made.is_raw = true;
  ONCHIP_TRY(made.raw,
             CreateRawQpObjects(device, {.pdn = pd->protection().pdn,
                                         .uar_index = bf.uar_index,
                                         .dbr_iova = m.doorbell.iova(),
                                         .send_cqn = attr.send_cq->cqn,
                                         .recv_cqn = attr.recv_cq->cqn,
                                         .sq_wqebb_count = g.sq.wqe_cnt,
                                         .sq_iova = g.sq.wqe_cnt ? m.sq_buffer.iova() : 0,
                                         .rq_wqe_count = g.rq.wqe_cnt,
                                         .rq_log_stride = g.rq.wqe_shift,
                                         .rq_iova = m.buffer.iova(),
                                         .block_self_mcast_loopback =
                                             (attr.create_flags & IBV_QP_CREATE_BLOCK_SELF_MCAST_LB) != 0}));
  return made;
}

// The host half over what the device made, its rings not started yet; `attr.cap` becomes what
// the QP holds, reported back as libmlx5 does (what fits, not what was asked).
std::unique_ptr<Qp> AssembleQp(Pd* pd, QpAttributes& attr, const Geometry& g, Bfreg* bf,
                               const QpDeviceObjects& made, QpMemory m) {
  const bool raw = attr.type == IBV_QPT_RAW_PACKET;
  auto qp = std::make_unique<Qp>();
  qp->device = pd->device;
  qp->pd = pd;
  qp->send_cq = attr.send_cq;
  qp->recv_cq = attr.recv_cq;
  qp->srq = attr.srq;
  qp->type = attr.type;
  qp->qpn = made.qpn();
  qp->raw = made.raw.numbers;
  qp->bf = bf;
  qp->sq = g.sq;
  qp->rq = g.rq;
  auto* base = static_cast<std::byte*>(m.buffer.data());
  if (qp->rq.wqe_cnt) qp->rq.start = base;
  if (qp->sq.wqe_cnt) qp->sq.start = raw ? static_cast<std::byte*>(m.sq_buffer.data()) : base + g.rq_bytes;
  qp->buffer = std::move(m.buffer);
  qp->sq_buffer = std::move(m.sq_buffer);
  qp->doorbell = std::move(m.doorbell);
  qp->sq_sig_all = attr.sq_sig_all;
  qp->send_ops_flags = attr.send_ops_flags;
  attr.cap.max_send_wr = g.sq.max_post;
  attr.cap.max_inline_data = g.sq.max_inline;
  attr.cap.max_recv_wr = g.rq.max_post;
  attr.cap.max_recv_sge = g.rq.max_gs;
  if (attr.srq) attr.cap.max_recv_wr = attr.cap.max_recv_sge = 0;
  qp->init_cap = attr.cap;
  qp->atomics = (attr.type == IBV_QPT_RC || attr.type == IBV_QPT_XRC_SEND) &&
                (!attr.ex || (attr.send_ops_flags & (IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                                                     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)));
  InitVerbsQp(*qp, attr);
  return qp;
}

// The rings, closed until the transitions open them (receives at INIT, sends at RTS), the
// ibv_wr_* ops of an extended QP, and the QP's numbers in the device's table.
Result<void> StartQp(Qp& qp, const QpAttributes& attr) {
  Result<void> ready = InitRings(qp);
  GatePosting(qp, IBV_QPS_RESET);
  if (ready && attr.ex) {
    ready = rings::InstallWrOps(&qp.dp.verbs.qp_ex, attr.send_ops_flags, Transport(attr.type));
    qp.dp.verbs.comp_mask |= kVerbsQpEx;
  }
  if (ready) ready = InsertNumbers(qp);
  return ready;
}

}  // namespace

Result<Qp*> CreateQp(Pd* pd, QpAttributes& attr) {
  ONCHIP_CHECK(CheckQpAttributes(pd, attr));
  const std::shared_ptr<Device>& device = pd->device;
  ONCHIP_TRY(Geometry g, Size(*device, attr));
  if (g.sq_bytes == 0 && g.rq_bytes == 0 && attr.srq == nullptr)
    return Fail(EINVAL, "create_qp: neither a send nor a receive queue");

  ONCHIP_TRY(auto op, device->registry().Begin("create_qp: device closed"));
  ParentPins pins;
  if (!pins.Take(pd->life)) return Fail(EBUSY, "create_qp: its PD is being freed");
  if (!pins.Take(attr.send_cq->life)) return Fail(EBUSY, "create_qp: its send CQ is being destroyed");
  if (!pins.Take(attr.recv_cq->life)) return Fail(EBUSY, "create_qp: its receive CQ is being destroyed");
  if (attr.srq && !pins.Take(attr.srq->life)) return Fail(EBUSY, "create_qp: its SRQ is being destroyed");

  const bool raw = attr.type == IBV_QPT_RAW_PACKET;
  ONCHIP_TRY(QpMemory memory, AllocateQpMemory(pd, g, raw));
  ONCHIP_TRY(Bfreg* bf, SendBfregFor(pd));
  // Declared before the device objects: a failure gives those back before the memory they name.
  std::unique_ptr<Qp> qp;
  ONCHIP_TRY(QpDeviceObjects made, CreateQpObjects(*device, pd, attr, g, *bf, memory));
  qp = AssembleQp(pd, attr, g, bf, made, std::move(memory));
  ONCHIP_CHECK(StartQp(*qp, attr));  // a failure destroys what the device made; pins drop
  pins.Keep();
  made.Commit();
  device->registry().Publish<ObjectKind::kQp>(op, qp.get(), qp->life);
  return qp.release();
}

Result<Qp*> CreateXrcRecvQp(QpAttributes& attr) {
  if (attr.type != IBV_QPT_XRC_RECV) return Fail(EINVAL, "create_qp: not an XRC receive QP");
  if (attr.xrcd == nullptr) return Fail(EINVAL, "create_qp: an XRC receive QP needs its XRC domain");
  if (attr.create_flags & ~uint32_t{IBV_QP_CREATE_BLOCK_SELF_MCAST_LB})
    return Fail(EOPNOTSUPP, "create_qp: create flags other than BLOCK_SELF_MCAST_LB");
  if (attr.ex && attr.send_ops_flags)
    return Fail(EOPNOTSUPP, "create_qp: an XRC receive QP sends nothing");
  Xrcd* xrcd = attr.xrcd;
  const std::shared_ptr<Device>& device = xrcd->device;
  ONCHIP_TRY(auto op, device->registry().Begin("create_qp: device closed"));
  ParentPins pins;
  if (!pins.Take(xrcd->life)) return Fail(EBUSY, "create_qp: its XRC domain is being closed");

  // mlx5_ib's XRC_TGT: no send queue, no receive queue of its own, the domain.
  using In = prm::create_qp_in;
  constexpr auto qpc = In::qpc;
  prm::Message<In> in;
  in.set(In::opcode, prm::CREATE_QP)
      .set(qpc.st, prm::QP_ST_XRC)
      .set(qpc.pm_state, prm::QP_PM_MIGRATED)
      .set(qpc.xrcd, xrcd->xrcdn)
      .set(qpc.no_sq, 1)
      .set(qpc.rq_type, prm::ZERO_LEN_RQ);
  if (attr.create_flags & IBV_QP_CREATE_BLOCK_SELF_MCAST_LB) in.set(qpc.block_lb_mc, 1);
  ONCHIP_TRY(auto out, cmd::Run<prm::create_qp_out>(device->commander(), in));
  DeviceObject on_device =
      QpOnDevice(device->commander(), static_cast<uint32_t>(out.get(prm::create_qp_out::qpn)));

  auto qp = std::make_unique<Qp>();
  qp->device = device;
  qp->xrcd = xrcd;
  qp->type = IBV_QPT_XRC_RECV;
  qp->qpn = on_device.id();
  attr.cap = {};
  qp->init_cap = attr.cap;
  InitVerbsQp(*qp, attr);
  ONCHIP_CHECK(InitRings(*qp));
  ONCHIP_CHECK(InsertNumbers(*qp));  // a failure destroys the QP; the pin drops
  pins.Keep();
  on_device.Commit();
  device->registry().Publish<ObjectKind::kQp>(op, qp.get(), qp->life);
  return qp.release();
}

Result<void> ModifyQp(Qp* qp, const ibv_qp_attr& attr, int mask) {
  if (qp == nullptr) return Fail(EINVAL, "modify_qp: null");
  const ibv_qp_state cur = (mask & IBV_QP_CUR_STATE) ? attr.cur_qp_state : qp->ibv().state;
  const ibv_qp_state next = (mask & IBV_QP_STATE) ? attr.qp_state : cur;
  const bool raw = qp->type == IBV_QPT_RAW_PACKET;
  if (raw ? !RawModifyIsOk(cur, next, mask) : !ModifyQpIsOk(cur, next, qp->type, mask))
    return Fail(EINVAL, "modify_qp: the attribute mask does not fit the transition");
  if (mask & IBV_QP_RATE_LIMIT)
    return Fail(EOPNOTSUPP, "modify_qp: no packet pacing (rate limits) on this device");
  ONCHIP_CHECK(CheckValues(*qp, attr, mask));
  // RESET to RESET changes nothing (mlx5_ib returns before any command).
  if (cur == IBV_QPS_RESET && next == IBV_QPS_RESET) return {};
  const std::optional<uint16_t> opcode = TransitionOpcode(cur, next);
  if (!opcode) return Fail(EINVAL, "modify_qp: mlx5 has no command for this transition");
  Device& device = *qp->device;
  ONCHIP_TRY(auto op, device.registry().Begin("modify_qp: device closed"));
  if (!qp->life.usable()) return Fail(EIO, "modify_qp: device closed");

  const uint8_t port = (mask & IBV_QP_PORT) ? attr.port_num : qp->port;
  const uint16_t pkey_index = (mask & IBV_QP_PKEY_INDEX) ? attr.pkey_index : qp->pkey_index;
  const unsigned access = (mask & IBV_QP_ACCESS_FLAGS) ? attr.qp_access_flags : qp->access_flags;
  const uint8_t dest_rd_atomic =
      (mask & IBV_QP_MAX_DEST_RD_ATOMIC) ? attr.max_dest_rd_atomic : qp->max_dest_rd_atomic;

  if (raw) {
    ONCHIP_CHECK(ModifyRawQp(device, qp->raw, *opcode));
  } else if (*opcode == prm::QP_2ERR || *opcode == prm::QP_2RST) {
    ONCHIP_CHECK(RunSimple(*qp, *opcode));
  } else {
    prm::Message<T> in;
    uint32_t opt = OptParamsOf(mask) & TransitionOptParams(*opcode, qp->type);
    in.set(T::opcode, *opcode)
        .set(T::qpn, qp->qpn)
        .set(kQpc.st, PrmSt(qp->type))
        .set(kQpc.pm_state, prm::QP_PM_MIGRATED)
        .set(kPath.pkey_index, pkey_index)
        .set(kPath.vhca_port_num, port);
    if (qp->xrcd) {
      in.set(kQpc.xrcd, qp->xrcd->xrcdn);
    } else {
      in.set(kQpc.pd, qp->pd->protection().pdn)
          .set(kQpc.cqn_snd, qp->send_cq->cqn)
          .set(kQpc.cqn_rcv, qp->recv_cq->cqn);
    }
    SetAccess(in, qp->type, access, dest_rd_atomic);
    if (mask & IBV_QP_QKEY) in.set(kQpc.q_key, attr.qkey);
    if (mask & IBV_QP_MIN_RNR_TIMER) in.set(kQpc.min_rnr_nak, attr.min_rnr_timer);
    switch (*opcode) {
      case prm::INIT2RTR_QP:
        if (qp->type == IBV_QPT_UD) {
          in.set(kQpc.mtu, IBV_MTU_4096).set(kQpc.log_msg_max, kUdLogMsgMax);
          break;
        }
        in.set(kQpc.mtu, attr.path_mtu)
            .set(kQpc.log_msg_max,
                 device.caps().cur(prm::CAP_GENERAL).get(prm::cmd_hca_cap::log_max_msg))
            .set(kQpc.remote_qpn, attr.dest_qp_num)
            .set(kQpc.next_rcv_psn, attr.rq_psn & 0xffffff);
        if (IsInfiniBand(device))
          SetIbPath(in, attr.ah_attr, port, pkey_index);
        else
          SetPath(in, attr.ah_attr, port, pkey_index);
        if (IsReliable(qp->type) && dest_rd_atomic)
          in.set(kQpc.log_rra_max, CeilLog2(dest_rd_atomic));
        // The responder's rights follow its read resources, which this transition sets:
        // send the access bits whether or not the mask named them.
        opt |= IsReliable(qp->type)
                   ? (prm::QP_OPTPAR_RRE | prm::QP_OPTPAR_RAE | prm::QP_OPTPAR_RWE)
                   : prm::QP_OPTPAR_RWE;
        break;
      case prm::RTR2RTS_QP:
        in.set(kQpc.next_send_psn, attr.sq_psn & 0xffffff);
        // RC and XRC send require all of these; an XRC receive QP only the timeout.
        if (IsReliable(qp->type)) {
          if (mask & IBV_QP_RETRY_CNT) in.set(kQpc.retry_count, attr.retry_cnt);
          if (mask & IBV_QP_RNR_RETRY) in.set(kQpc.rnr_retry, attr.rnr_retry);
          if (mask & IBV_QP_TIMEOUT) in.set(kPath.ack_timeout, attr.timeout);
          if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && attr.max_rd_atomic)
            in.set(kQpc.log_sra_max, CeilLog2(attr.max_rd_atomic));
        }
        break;
      default:
        break;
    }
    in.set(T::opt_param_mask, opt);
    ONCHIP_TRY(auto out, cmd::Run<prm::rst2init_qp_out>(device.commander(), in));
    (void)out;
  }

  // The device took it: remember what later transitions need.
  if (mask & IBV_QP_PORT) qp->port = attr.port_num;
  if (mask & IBV_QP_PKEY_INDEX) qp->pkey_index = attr.pkey_index;
  if (mask & IBV_QP_ACCESS_FLAGS) qp->access_flags = attr.qp_access_flags;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) qp->max_dest_rd_atomic = attr.max_dest_rd_atomic;
  if (next == IBV_QPS_RESET) {
    // Back to empty rings: the device forgot its progress, the record starts over, and the
    // QP's unpolled completions leave its CQs (out of the qpn table meanwhile).
    EraseNumbers(*qp);
    CleanCqs(*qp);
    if (qp->doorbell.size() != 0) std::memset(qp->doorbell.data(), 0, sizeof(prm::QpDoorbellRecord));
    qp->port = 1;
    qp->pkey_index = 0;
    qp->access_flags = 0;
    qp->max_dest_rd_atomic = 0;
    ONCHIP_CHECK(InitRings(*qp));
    ONCHIP_CHECK(InsertNumbers(*qp));
  }
  GatePosting(*qp, next);
  qp->ibv().state = next;
  return {};
}

Result<void> QueryQp(Qp* qp, int /*mask*/, ibv_qp_attr* attr, ibv_qp_init_attr* init) {
  if (qp == nullptr || attr == nullptr || init == nullptr) return Fail(EINVAL, "query_qp: null");
  Device& device = *qp->device;
  ONCHIP_TRY(auto op, device.registry().Begin("query_qp: device closed"));
  if (!qp->life.usable()) return Fail(EIO, "query_qp: device closed");
  if (qp->type == IBV_QPT_RAW_PACKET) {
    // No QP context: the state comes from the SQ and RQ, the rest from what the driver keeps.
    ONCHIP_TRY(const ibv_qp_state state, QueryRawQpState(device, qp->raw, qp->ibv().state));
    std::memset(attr, 0, sizeof(*attr));
    attr->qp_state = attr->cur_qp_state = state;
    attr->port_num = qp->port;
    attr->cap = qp->init_cap;
    std::memset(init, 0, sizeof(*init));
    init->qp_context = qp->ibv().qp_context;
    init->send_cq = qp->ibv().send_cq;
    init->recv_cq = qp->ibv().recv_cq;
    init->cap = qp->init_cap;
    init->qp_type = qp->type;
    init->sq_sig_all = qp->sq_sig_all ? 1 : 0;
    return {};
  }
  using O = prm::query_qp_out;
  prm::Message<prm::query_qp_in> in;
  in.set(prm::query_qp_in::opcode, prm::QUERY_QP).set(prm::query_qp_in::qpn, qp->qpn);
  const std::size_t pages = (qp->buffer.size() + prm::ADAPTER_PAGE_SIZE - 1) / prm::ADAPTER_PAGE_SIZE;
  ONCHIP_TRY(auto out, cmd::Run<O>(device.commander(), in, pages * 8));
  constexpr auto c = O::qpc;
  constexpr auto p = O::qpc.primary_address_path;

  std::memset(attr, 0, sizeof(*attr));
  attr->qp_state = VerbsQpState(static_cast<uint8_t>(out.get(c.state)));
  attr->cur_qp_state = attr->qp_state;
  attr->path_mtu = static_cast<ibv_mtu>(out.get(c.mtu));
  // pm_state: ARMED 0, REARM 1, MIGRATED 3 (PRM) -> IBV_MIG_ARMED 2, REARM 1, MIGRATED 0.
  const uint32_t pm = out.get(c.pm_state);
  attr->path_mig_state = pm == 0 ? IBV_MIG_ARMED : pm == 1 ? IBV_MIG_REARM : IBV_MIG_MIGRATED;
  attr->qkey = out.get(c.q_key);
  attr->rq_psn = out.get(c.next_rcv_psn);
  attr->sq_psn = out.get(c.next_send_psn);
  attr->dest_qp_num = out.get(c.remote_qpn);
  attr->qp_access_flags = qp->access_flags;
  attr->pkey_index = static_cast<uint16_t>(out.get(p.pkey_index));
  attr->port_num = static_cast<uint8_t>(out.get(p.vhca_port_num));
  attr->max_rd_atomic = static_cast<uint8_t>(1u << out.get(c.log_sra_max));
  attr->max_dest_rd_atomic = static_cast<uint8_t>(1u << out.get(c.log_rra_max));
  attr->min_rnr_timer = static_cast<uint8_t>(out.get(c.min_rnr_nak));
  attr->timeout = static_cast<uint8_t>(out.get(p.ack_timeout));
  attr->retry_cnt = static_cast<uint8_t>(out.get(c.retry_count));
  attr->rnr_retry = static_cast<uint8_t>(out.get(c.rnr_retry));
  if (qp->type != IBV_QPT_UD) {
    ibv_ah_attr& ah = attr->ah_attr;
    ah.is_global = out.get(p.grh) ? 1 : 0;
    ah.port_num = attr->port_num;
    // InfiniBand: the LID and the SL of the LRH; RoCE: the SL went out as the Ethernet priority.
    const bool ib = IsInfiniBand(*qp->device);
    ah.sl = static_cast<uint8_t>(ib ? out.get(p.sl) : out.get(p.eth_prio));
    if (ib) {
      ah.dlid = static_cast<uint16_t>(out.get(p.rlid));
      ah.src_path_bits = static_cast<uint8_t>(out.get(p.mlid));
    }
    ah.grh.sgid_index = static_cast<uint8_t>(out.get(p.src_addr_index));
    ah.grh.hop_limit = static_cast<uint8_t>(out.get(p.hop_limit));
    ah.grh.traffic_class = static_cast<uint8_t>(out.get(p.tclass));
    ah.grh.flow_label = out.get(p.flow_label);
    for (std::size_t i = 0; i < 16; ++i)
      ah.grh.dgid.raw[i] = static_cast<uint8_t>(out.get(p.rgid_rip[i]));
  }
  attr->cap = qp->init_cap;

  std::memset(init, 0, sizeof(*init));
  init->qp_context = qp->ibv().qp_context;
  init->send_cq = qp->ibv().send_cq;
  init->recv_cq = qp->ibv().recv_cq;
  init->srq = qp->ibv().srq;
  init->cap = qp->init_cap;
  init->qp_type = qp->type;
  init->sq_sig_all = qp->sq_sig_all ? 1 : 0;
  return {};
}

Result<void> ReleaseQpOnDevice(Qp& qp, Release why) {
  auto destroyed = qp.type == IBV_QPT_RAW_PACKET ? DestroyRawQpObjects(*qp.device, qp.raw)
                                                 : QpOnDevice(qp.device->commander(), qp.qpn).Destroy();
  if (!destroyed && why == Release::kDestroy) return destroyed;
  // The number may be reused by the next QP: the pollers stop finding this one.
  EraseNumbers(qp);
  CleanCqs(qp);
  if (qp.xrcd) {
    qp.xrcd->life.Unpin();
    return destroyed;
  }
  if (qp.srq) qp.srq->life.Unpin();
  qp.recv_cq->life.Unpin();
  qp.send_cq->life.Unpin();
  qp.pd->life.Unpin();
  return destroyed;
}

Result<void> DestroyQp(Qp* qp) {
  if (qp == nullptr) return Fail(EINVAL, "destroy_qp: null");
  return Destroy<ObjectKind::kQp>(qp->device->registry(), qp, qp->life, "destroy_qp: in use");
}

Result<void> KindTraits<ObjectKind::kQp>::ReleaseOnDevice(Qp& object, Release why) {
  return ReleaseQpOnDevice(object, why);
}

}  // namespace onchip::driver
