// Queue pairs: CREATE_QP, DESTROY_QP, QUERY_QP. The state transitions are in
// firmware_qp_transitions.cc.
//
// A QP is one buffer in host pages the driver lists in pas[]: the receive ring first
// (2^log_rq_size WQEs of 16 << log_rq_stride bytes; none with an SRQ or a zero-length RQ), the
// send ring right after it (2^log_sq_size 64-byte basic blocks; none with no_sq), as libmlx5 lays
// it out. A doorbell record at dbr_addr holds the receive counter (word 0) and the send counter
// (word 1); the UAR names the page whose doorbell register the driver rings. CREATE_QP checks all
// of these as firmware does, refuses the transport services and features this device does not
// advertise, and keeps the context as the driver sent it with state RST: the transitions fill in
// the rest. A QP holds its CQs and its SRQ (DESTROY_CQ / DESTROY_SRQ are RES_BUSY while it lives)
// and its PD (DEALLOC_PD is RES_BUSY).
//
// Without a receive ring (rq_type SRQ or zero-length) log_rq_size and log_rq_stride say nothing
// and are ignored; with no_sq, log_sq_size is ignored. opt_param_mask means nothing at creation
// and is ignored, as the kernel leaves it 0.
//
// XRC (st XRC): the initiator (send side) is an RC send queue with no receive ring (rq_type
// zero-length) whose WQEs name the remote XRC SRQ; qpc.xrcd may name a domain of the creator's.
// The target (receive side, no_sq) has no ring at all: qpc.xrcd must name a live domain of the
// creator's, and the PD, CQs, UAR, SRQ, doorbell record and page list are not used and not
// checked (the kernel fills them with reserved objects of its own); each request it receives
// names an XRC SRQ of its domain, whose PD, WQEs and CQ serve it. An XRC QP holds its domain
// (DEALLOC_XRCD is RES_BUSY).
//
// DESTROY_QP works in every state: the QP goes to reset, then away. QUERY_QP answers the context
// with the current state and the page list; of the device's own counters in the context the
// ring counters (hw_sq_wqebb_counter, hw_rq_counter) are the data engine's progress, the others
// (last_acked_psn, ssn, ...) read 0.
#include <cstring>

#include "tools/sim/firmware.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/qp.h"

namespace onchip::sim {

using Bytes = std::span<const std::byte>;
using Out = std::span<std::byte>;

namespace {

constexpr uint32_t kDbrAlignment = 8;
constexpr uint32_t kDbrBytes = 8;       // receive counter word and send counter word
constexpr uint32_t kSendWqeBbLog = 6;   // 64-byte send basic blocks
constexpr uint32_t kRqStrideBase = 4;   // receive stride = 16 << log_rq_stride
// qpc.ts_format: 0 free running, 1 the device default; 2 (real time) is not advertised.
constexpr uint32_t kTsFormatDefault = 1;


}  // namespace

// What a new QP's context may ask for, from the input alone: a transport and rings this device
// has, no capability it does not advertise, and a context in reset that has done nothing.
Outcome Firmware::CheckNewQpContext(Bytes in, uint16_t uid) const {
  using In = prm::create_qp_in;
  constexpr auto qpc = In::qpc;
  const uint32_t st = prm::Get(in, qpc.st);
  if (st != prm::QP_ST_RC && st != prm::QP_ST_UC && st != prm::QP_ST_UD &&
      st != prm::QP_ST_XRC && st != prm::QP_ST_REG_UMR)
    return Refuse(Syndrome::QP_ST_UNSUPPORTED);
  const bool xrc = st == prm::QP_ST_XRC;
  const bool xrc_tgt = xrc && prm::Get(in, qpc.no_sq) != 0;
  // A REG_UMR QP changes any mkey of the function: only the kernel (uid 0) may have one, and it
  // has no receive queue.
  if (st == prm::QP_ST_REG_UMR && uid != 0) return Refuse(Syndrome::QP_REG_UMR_USER);
  if (st == prm::QP_ST_REG_UMR && prm::Get(in, qpc.rq_type) != prm::ZERO_LEN_RQ)
    return Refuse(Syndrome::QP_RQ_TYPE);
  // Capabilities this device does not advertise: the context extension, choosing the QP number,
  // UMEM buffers, ECE, offloads, core-direct, WQ signatures, the reserved lkey, counter sets,
  // ordering and isolation knobs, real-time CQE timestamps.
  if (prm::Get(in, In::qpc_ext) || prm::Get(in, In::input_qpn) || prm::Get(in, In::ece) ||
      prm::Get(in, In::wq_umem_valid) || prm::Get(in, In::wq_umem_offset) ||
      prm::Get(in, In::wq_umem_id) || prm::Get(in, qpc.dbr_umem_valid) ||
      prm::Get(in, qpc.offload_type) || prm::Get(in, qpc.ulp_stateless_offload_mode) ||
      prm::Get(in, qpc.cd_master) || prm::Get(in, qpc.cd_slave_send) ||
      prm::Get(in, qpc.cd_slave_receive) || prm::Get(in, qpc.wq_signature) ||
      prm::Get(in, qpc.rlky) || prm::Get(in, qpc.counter_set_id) ||
      prm::Get(in, qpc.isolate_vl_tc) || prm::Get(in, qpc.latency_sensitive) ||
      prm::Get(in, qpc.dp_ordering_force) || prm::Get(in, qpc.dp_ordering_1) ||
      prm::Get(in, qpc.atomic_like_write_en) || prm::Get(in, qpc.req_e2e_credit_mode) ||
      prm::Get(in, qpc.end_padding_mode) || (!xrc && prm::Get(in, qpc.xrcd)) ||
      prm::Get(in, qpc.retry_mode) || prm::Get(in, qpc.ts_format) > kTsFormatDefault ||
      prm::Get(in, qpc.cgs) || prm::Get(in, qpc.cs_req) || prm::Get(in, qpc.cs_res) ||
      prm::Get(in, qpc.dc_access_key) || prm::Get(in, qpc.log_num_dci_stream_channels) ||
      prm::Get(in, qpc.log_num_dci_errored_streams))
    return Refuse(Syndrome::QP_UNSUPPORTED);
  // The state and the counters are the device's: a new QP is in reset and has done nothing.
  if (prm::Get(in, qpc.state) != prm::QP_STATE_RST || prm::Get(in, qpc.hw_sq_wqebb_counter) ||
      prm::Get(in, qpc.sw_sq_wqebb_counter) || prm::Get(in, qpc.hw_rq_counter) ||
      prm::Get(in, qpc.sw_rq_counter) || prm::Get(in, qpc.last_acked_psn) ||
      prm::Get(in, qpc.ssn) || prm::Get(in, qpc.rmsn) || prm::Get(in, qpc.cur_rnr_retry) ||
      prm::Get(in, qpc.cur_retry_count))
    return Refuse(Syndrome::QP_STATE);

  // The rings.
  const uint32_t rq_type = prm::Get(in, qpc.rq_type);
  if (rq_type != prm::NON_ZERO_RQ && rq_type != prm::SRQ_RQ && rq_type != prm::ZERO_LEN_RQ)
    return Refuse(Syndrome::QP_RQ_TYPE);
  const bool no_sq = prm::Get(in, qpc.no_sq) != 0;
  if (!no_sq && prm::Get(in, qpc.log_sq_size) > config_.log_max_qp_sz)
    return Refuse(Syndrome::QP_SQ_SIZE);
  if (rq_type == prm::NON_ZERO_RQ) {
    if (prm::Get(in, qpc.log_rq_size) > config_.log_max_qp_sz) return Refuse(Syndrome::QP_RQ_SIZE);
    if ((uint32_t{1} << (kRqStrideBase + prm::Get(in, qpc.log_rq_stride))) > config_.max_wqe_sz_rq)
      return Refuse(Syndrome::QP_RQ_STRIDE);
  }
  // XRC: the initiator receives nothing; the target's receives come from XRC SRQs.
  if (xrc && !xrc_tgt && rq_type != prm::ZERO_LEN_RQ) return Refuse(Syndrome::QP_RQ_TYPE);
  if (xrc_tgt && rq_type == prm::NON_ZERO_RQ) return Refuse(Syndrome::QP_RQ_TYPE);
  if (no_sq && !xrc_tgt && rq_type != prm::NON_ZERO_RQ) return Refuse(Syndrome::QP_RQ_TYPE);
  if (prm::Get(in, qpc.log_msg_max) > config_.log_max_msg) return Refuse(Syndrome::QP_MSG_SIZE);
  const uint32_t log_page_size = prm::Get(in, qpc.log_page_size);
  if (log_page_size > kMaxQueueLogPageSize) return Refuse(Syndrome::QP_PAGE_SIZE);
  if (prm::Get(in, qpc.page_offset) != 0) return Refuse(Syndrome::QP_PAGE_OFFSET);
  return Outcome::Ok();
}

// An XRC target QP: a context over its XRC domain, with no rings, CQs or PD of its own.
Outcome Firmware::CreateXrcTargetQp(Bytes in, Out out, uint16_t uid, Xrcd& xrcd, uint32_t xrcdn) {
  constexpr auto qpc = prm::create_qp_in::qpc;
  auto qpn = qp_ids_.Allocate();
  if (!qpn) return Refuse(Syndrome::QP_EXHAUSTED);
  Qp qp{};
  qp.uid = uid;
  qp.st = prm::QP_ST_XRC;
  qp.state = prm::QP_STATE_RST;
  qp.xrcd = xrcdn;
  qp.xrc_tgt = true;
  std::memcpy(qp.qpc.data(), in.data() + qpc.bit_offset / 8, qp.qpc.size());
  ++xrcd.users;
  qps_.emplace(*qpn, std::move(qp));
  engine_.StartQp(*qpn);
  prm::Bits(out).set(prm::create_qp_out::qpn, *qpn);
  return Outcome::Ok();
}

Outcome Firmware::CreateQp(Bytes in, Out out) {
  using In = prm::create_qp_in;
  constexpr auto qpc = In::qpc;
  if (Outcome s = CheckShape<In, prm::create_qp_out>(in, out); !s.ok()) return s;
  if (!ReservedClear(in, qpc) || !ReservedClear(in, qpc.primary_address_path) ||
      !ReservedClear(in, qpc.secondary_address_path))
    return Refuse(Syndrome::RESERVED_NOT_ZERO);
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  const uint16_t uid = static_cast<uint16_t>(prm::Get(in, In::uid));

  if (Outcome s = CheckNewQpContext(in, uid); !s.ok()) return s;
  const uint32_t st = prm::Get(in, qpc.st);
  const bool xrc = st == prm::QP_ST_XRC;
  const bool xrc_tgt = xrc && prm::Get(in, qpc.no_sq) != 0;
  const uint32_t rq_type = prm::Get(in, qpc.rq_type);
  const bool no_sq = prm::Get(in, qpc.no_sq) != 0;
  const uint32_t log_page_size = prm::Get(in, qpc.log_page_size);

  // The XRC domain: the target's must be live; the initiator's may be absent.
  std::map<uint32_t, Xrcd>::iterator xrcd = xrcds_.end();
  if (xrc_tgt || (xrc && prm::Get(in, qpc.xrcd) != 0)) {
    xrcd = xrcds_.find(prm::Get(in, qpc.xrcd));
    if (xrcd == xrcds_.end()) return Refuse(Syndrome::QP_XRCD_UNKNOWN);
    if (xrcd->second.uid != uid) return Refuse(Syndrome::NOT_OWNER);
  }
  if (xrc_tgt) return CreateXrcTargetQp(in, out, uid, xrcd->second, xrcd->first);

  // The objects it names, all the creator's.
  const uint32_t pdn = prm::Get(in, qpc.pd);
  auto pd = pds_.find(pdn);
  if (pd == pds_.end()) return Refuse(Syndrome::QP_PD_UNKNOWN);
  if (pd->second.uid != uid) return Refuse(Syndrome::NOT_OWNER);
  const uint32_t cqn_snd = prm::Get(in, qpc.cqn_snd);
  const uint32_t cqn_rcv = prm::Get(in, qpc.cqn_rcv);
  auto snd = cqs_.find(cqn_snd);
  auto rcv = cqs_.find(cqn_rcv);
  if (snd == cqs_.end() || rcv == cqs_.end())
    return Refuse(Syndrome::QP_CQ_UNKNOWN);
  if (snd->second.uid != uid || rcv->second.uid != uid)
    return Refuse(Syndrome::NOT_OWNER);
  const uint32_t uar_page = prm::Get(in, qpc.uar_page);
  auto uar = uars_.find(uar_page);
  if (uar == uars_.end()) return Refuse(Syndrome::QP_UAR_UNKNOWN);
  if (uar->second != uid) return Refuse(Syndrome::NOT_OWNER);
  std::map<uint32_t, Srq>::iterator srq = srqs_.end();
  if (rq_type == prm::SRQ_RQ) {
    srq = srqs_.find(prm::Get(in, qpc.srqn_rmpn_xrqn));
    if (srq == srqs_.end()) return Refuse(Syndrome::QP_SRQ_UNKNOWN);
    if (srq->second.uid != uid) return Refuse(Syndrome::NOT_OWNER);
    if (srq->second.xrcd) return Refuse(Syndrome::QP_SRQ_TYPE);
  }

  const uint64_t dbr = prm::Get(in, qpc.dbr_addr);
  if (dbr % kDbrAlignment != 0) return Refuse(Syndrome::QP_DBR_ALIGNMENT);
  if (!iommu_.IsMappedFor(uid, dbr, kDbrBytes)) return Refuse(Syndrome::QP_DBR_UNMAPPED);

  Qp qp{};
  qp.uid = uid;
  qp.pd = pdn;
  qp.st = static_cast<uint8_t>(st);
  qp.state = prm::QP_STATE_RST;
  qp.log_page_bytes = 12 + log_page_size;
  qp.dbr_addr = dbr;
  qp.uar_page = uar_page;
  qp.cqn_snd = cqn_snd;
  qp.cqn_rcv = cqn_rcv;
  qp.cq_snd = &snd->second;
  qp.cq_rcv = &rcv->second;
  if (srq != srqs_.end()) qp.srqn = srq->first;
  if (xrcd != xrcds_.end()) qp.xrcd = xrcd->first;
  if (rq_type == prm::NON_ZERO_RQ) {
    qp.rq_wqe_count = uint32_t{1} << prm::Get(in, qpc.log_rq_size);
    qp.rq_stride = uint32_t{1} << (kRqStrideBase + prm::Get(in, qpc.log_rq_stride));
  }
  if (!no_sq) qp.sq_wqebb_count = uint32_t{1} << prm::Get(in, qpc.log_sq_size);
  qp.sq_offset = uint64_t{qp.rq_wqe_count} * qp.rq_stride;
  const uint64_t buffer_bytes = qp.sq_offset + (uint64_t{qp.sq_wqebb_count} << kSendWqeBbLog);
  if (Outcome s = ReadBufferPages(in, In::pas.bit_offset / 8, buffer_bytes, qp.log_page_bytes,
                                  {Syndrome::QP_PAS_COUNT, Syndrome::QP_PAS_ENTRY,
                                   Syndrome::QP_PAS_UNMAPPED},
                                  &qp.pas);
      !s.ok())
    return s;

  auto qpn = qp_ids_.Allocate();
  if (!qpn) return Refuse(Syndrome::QP_EXHAUSTED);
  std::memcpy(qp.qpc.data(), in.data() + qpc.bit_offset / 8, qp.qpc.size());
  ++pd->second.queues;
  ++snd->second.users;
  ++rcv->second.users;
  if (srq != srqs_.end()) ++srq->second.users;
  if (xrcd != xrcds_.end()) ++xrcd->second.users;
  qps_.emplace(*qpn, std::move(qp));
  engine_.StartQp(*qpn);
  prm::Bits(out).set(prm::create_qp_out::qpn, *qpn);
  return Outcome::Ok();
}

void Firmware::ForgetQp(std::map<uint32_t, Qp>::iterator it) {
  const Qp& qp = it->second;
  if (qp.xrcd) --xrcds_.at(*qp.xrcd).users;
  if (!qp.xrc_tgt) {
    --cqs_.at(qp.cqn_snd).users;
    --cqs_.at(qp.cqn_rcv).users;
    if (qp.srqn) --srqs_.at(*qp.srqn).users;
    --pds_.at(qp.pd).queues;
  }
  qp_ids_.Free(it->first);
  qps_.erase(it);
}

Outcome Firmware::DestroyQp(Bytes in, Out out) {
  using In = prm::destroy_qp_in;
  if (Outcome s = CheckShape<In, prm::destroy_qp_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = qps_.find(prm::Get(in, In::qpn));
  if (it == qps_.end()) return Refuse(Syndrome::QP_UNKNOWN);
  if (it->second.uid != prm::Get(in, In::uid))
    return Refuse(Syndrome::NOT_OWNER);
  ForgetQp(it);
  return Outcome::Ok();
}

Outcome Firmware::QueryQp(Bytes in, Out out) {
  using In = prm::query_qp_in;
  using O = prm::query_qp_out;
  uint16_t uid = 0;
  if (Outcome s = CheckShapeWithHeaderUid<In, O>(in, out, &uid); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  if (prm::Get(in, In::qpc_ext)) return Refuse(Syndrome::QP_UNSUPPORTED);
  auto it = qps_.find(prm::Get(in, In::qpn));
  if (it == qps_.end()) return Refuse(Syndrome::QP_UNKNOWN);
  const Qp& qp = it->second;
  // uid 0 is the function's own (privileged) context and may look at any QP.
  if (uid != 0 && qp.uid != uid) return Refuse(Syndrome::NOT_OWNER);
  std::memcpy(out.data() + O::qpc.bit_offset / 8, qp.qpc.data(), qp.qpc.size());
  // The hardware's ring counters are the data engine's progress, read here rather than written
  // into the context on every pass (a pass never runs while a command does).
  prm::Bits(out)
      .set(O::qpc.state, qp.state)
      .set(O::qpc.hw_sq_wqebb_counter, engine_.qp(it->first).sq_wqe_counter & 0xffff)
      .set(O::qpc.hw_rq_counter, engine_.qp(it->first).rq_counter);
  WriteQueuePages(out, O::qp_pas_or_qpc_ext_and_pas.bit_offset / 8, qp.pas);
  return Outcome::Ok();
}

}  // namespace onchip::sim
