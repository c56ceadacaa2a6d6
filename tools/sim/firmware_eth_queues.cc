// The objects a raw packet QP is built of (tools/sim/eth_queue_objects.h): CREATE/DESTROY/QUERY
// of TIS, SQ, RQ and TIR, and MODIFY_SQ / MODIFY_RQ.
//
// What this device advertises and therefore accepts:
//   - SQ and RQ: a cyclic work queue (wq_type 1) of at most 2^log_max_wq_sz WQEs in host pages
//     (pas[] after the context, as a QP's), an 8-byte doorbell record (receive counter in word
//     0, send counter in word 1), a CQ and a PD of the creator's, state RST and device counters
//     at 0. An SQ's WQEs are 64-byte basic blocks and it sends through exactly one TIS
//     (tis_lst_sz 1) and rings the doorbell of a UAR of the creator's; an RQ's stride is 16 bytes
//     to max_wqe_sz_rq and its WQEs are in the ring (mem_rq_type inline: no RMPs). flush_in_error_en
//     is accepted (an SQ in error flushes), min_wqe_inline_mode up to L2 (the eth segment's inline
//     headers), vsd either way (the device never strips VLANs: vlan_cap is 0, so the bit says
//     nothing). Refused as not advertised: hairpin, UMEM buffers, striding RQs, WQ signatures,
//     end padding, the reserved lkey, user indices, counter sets, rate limits, SHAMPO, delay drop,
//     FCS scatter.
//   - TIS: a transport domain of the creator's; no TLS, LAG affinity, priority or underlay QP.
//   - TIR: direct dispatch to one RQ of the creator's (indirect dispatch needs RQ tables, which
//     this device does not have: log_max_rqt 0), a transport domain of the creator's; no LRO,
//     TLS, hashing or tunneled offloads. self_lb_block (unicast/multicast loopback blocking) is
//     accepted: no frame a QP of this function sends comes back to it.
//
// SQ and RQ numbers come from the QP numbers (the hardware shares one queue number space), so a
// CQE's qpn names one queue of either kind. MODIFY_SQ / MODIFY_RQ take the current state
// (sq_state / rq_state: BAD_RES_STATE_ERR when it is not the queue's) and ctx.state: RST and RDY
// may go to any of RST, RDY and ERR; ERR only to ERR or RST (it must be reset before it is ready
// again). Staying in a state is accepted, as mlx5_ib moves both queues of a raw QP on every
// transition whether or not one of them changes. modify_bitmask selects fields to change besides the state; this device
// advertises none of them (rate limit, VLAN stripping, FCS scatter, counter sets), so it must be
// 0; the other context fields are ignored, as the PRM says for fields the bitmask does not name.
//
// DESTROY works in every state. QUERY answers the context as created with the current state and
// the page list.
#include <cstring>

#include "tools/sim/firmware.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/wq.h"

namespace onchip::sim {

using Bytes = std::span<const std::byte>;
using Out = std::span<std::byte>;

namespace {

constexpr uint32_t kDbrAlignment = 8;
constexpr uint32_t kDbrBytes = 8;     // receive counter word and send counter word
constexpr uint32_t kSqLogStride = 6;  // 64-byte send basic blocks
constexpr uint32_t kRqMinLogStride = 4;
constexpr uint32_t kTsFormatDefault = 1;
constexpr uint32_t kInlineModeL2 = 1;


// Which next states a work queue in `cur` may move to.
bool WqTransitionOk(uint32_t cur, uint32_t next) {
  switch (cur) {
    case prm::SQC_STATE_RST:
    case prm::SQC_STATE_RDY:
      return next == prm::SQC_STATE_RST || next == prm::SQC_STATE_RDY || next == prm::SQC_STATE_ERR;
    case prm::SQC_STATE_ERR: return next == prm::SQC_STATE_RST || next == prm::SQC_STATE_ERR;
    default: return false;
  }
}

}  // namespace

uint32_t Firmware::TdUsers(uint32_t td) const {
  uint32_t n = 0;
  for (const auto& [tisn, tis] : tises_) n += tis.td == td ? 1 : 0;
  for (const auto& [tirn, tir] : tirs_) n += tir.td == td ? 1 : 0;
  return n;
}

// ---- TIS ----

Outcome Firmware::CreateTis(Bytes in, Out out) {
  using In = prm::create_tis_in;
  using Ctx = prm::tisc_bits<In::ctx.bit_offset>;
  if (Outcome s = CheckShape<In, prm::create_tis_out>(in, out); !s.ok()) return s;
  if (!ReservedClear(in, Ctx{})) return Refuse(Syndrome::RESERVED_NOT_ZERO);
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  const uint16_t uid = static_cast<uint16_t>(prm::Get(in, In::uid));
  if (prm::Get(in, Ctx::strict_lag_tx_port_affinity) || prm::Get(in, Ctx::tls_en) ||
      prm::Get(in, Ctx::lag_tx_port_affinity) || prm::Get(in, Ctx::prio) ||
      prm::Get(in, Ctx::underlay_qpn))
    return Refuse(Syndrome::TIS_UNSUPPORTED);
  if (const uint32_t pdn = prm::Get(in, Ctx::pd); pdn != 0) {
    auto pd = pds_.find(pdn);
    if (pd == pds_.end()) return Refuse(Syndrome::PD_UNKNOWN);
    if (pd->second.uid != uid) return Refuse(Syndrome::NOT_OWNER);
  }
  const uint32_t td = prm::Get(in, Ctx::transport_domain);
  auto t = tds_.find(td);
  if (t == tds_.end()) return Refuse(Syndrome::TIS_TD_UNKNOWN);
  if (t->second != uid) return Refuse(Syndrome::NOT_OWNER);
  auto tisn = tis_ids_.Allocate();
  if (!tisn) return Refuse(Syndrome::TIS_EXHAUSTED);
  Tis tis{};
  tis.uid = uid;
  tis.td = td;
  std::memcpy(tis.tisc.data(), in.data() + Ctx::bit_offset / 8, tis.tisc.size());
  tises_.emplace(*tisn, tis);
  prm::Bits(out).set(prm::create_tis_out::tisn, *tisn);
  return Outcome::Ok();
}

Outcome Firmware::DestroyTis(Bytes in, Out out) {
  using In = prm::destroy_tis_in;
  if (Outcome s = CheckShape<In, prm::destroy_tis_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = tises_.find(prm::Get(in, In::tisn));
  if (it == tises_.end()) return Refuse(Syndrome::TIS_UNKNOWN);
  if (it->second.uid != prm::Get(in, In::uid)) return Refuse(Syndrome::NOT_OWNER);
  if (it->second.sqs != 0) return Refuse(Syndrome::TIS_BUSY);
  tis_ids_.Free(it->first);
  tises_.erase(it);
  return Outcome::Ok();
}

Outcome Firmware::QueryTis(Bytes in, Out out) {
  using In = prm::query_tis_in;
  using O = prm::query_tis_out;
  uint16_t uid = 0;
  if (Outcome s = CheckShapeWithHeaderUid<In, O>(in, out, &uid); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = tises_.find(prm::Get(in, In::tisn));
  if (it == tises_.end()) return Refuse(Syndrome::TIS_UNKNOWN);
  if (uid != 0 && it->second.uid != uid) return Refuse(Syndrome::NOT_OWNER);
  std::memcpy(out.data() + O::tis_context.bit_offset / 8, it->second.tisc.data(),
              it->second.tisc.size());
  return Outcome::Ok();
}

// ---- SQ and RQ ----

Outcome Firmware::ReadWorkQueue(Bytes in, std::size_t wq_bit_offset, uint16_t uid, bool send,
                                WorkQueue* q) const {
  // The wq layout at wq_bit_offset, read through a copy placed at bit 0.
  const std::size_t wq_bytes = prm::size_bytes<prm::wq>;
  if (in.size() < wq_bit_offset / 8 + wq_bytes)
    return Refuse(Syndrome::INPUT_TOO_SHORT);
  const Bytes w = in.subspan(wq_bit_offset / 8, wq_bytes);
  using W = prm::wq;
  if (!ReservedClear(w, W{})) return Refuse(Syndrome::RESERVED_NOT_ZERO);
  if (prm::Get(w, W::wq_type) != prm::WQ_TYPE_CYCLIC) return Refuse(Syndrome::WQ_TYPE);
  if (prm::Get(w, W::wq_signature) || prm::Get(w, W::end_padding_mode) ||
      prm::Get(w, W::cd_slave) || prm::Get(w, W::hds_skip_first_sge) ||
      prm::Get(w, W::log2_hds_buf_size) || prm::Get(w, W::lwm) ||
      prm::Get(w, W::dbr_umem_valid) || prm::Get(w, W::wq_umem_valid) ||
      prm::Get(w, W::log_hairpin_num_packets) || prm::Get(w, W::log_hairpin_data_sz) ||
      prm::Get(w, W::log_wqe_num_of_strides) || prm::Get(w, W::two_byte_shift_en) ||
      prm::Get(w, W::log_wqe_stride_size) || prm::Get(w, W::dbr_umem_id) ||
      prm::Get(w, W::wq_umem_id) || prm::Get(w, W::wq_umem_offset) ||
      prm::Get(w, W::headers_mkey) || prm::Get(w, W::shampo_enable) ||
      prm::Get(w, W::shampo_mode) || prm::Get(w, W::log_reservation_size) ||
      prm::Get(w, W::log_max_num_of_packets_per_reservation) ||
      prm::Get(w, W::log_headers_entry_size) || prm::Get(w, W::log_headers_buffer_entry_num))
    return Refuse(Syndrome::WQ_UNSUPPORTED);
  if (prm::Get(w, W::hw_counter) || prm::Get(w, W::sw_counter)) return Refuse(Syndrome::WQ_STATE);
  const uint32_t log_size = prm::Get(w, W::log_wq_sz);
  if (log_size > config_.log_max_wq_sz) return Refuse(Syndrome::WQ_SIZE);
  const uint32_t log_stride = prm::Get(w, W::log_wq_stride);
  if (send ? log_stride != kSqLogStride
           : (log_stride < kRqMinLogStride || (uint32_t{1} << log_stride) > config_.max_wqe_sz_rq))
    return Refuse(Syndrome::WQ_STRIDE);
  const uint32_t log_page_size = prm::Get(w, W::log_wq_pg_sz);
  if (log_page_size > kMaxQueueLogPageSize) return Refuse(Syndrome::WQ_PAGE_SIZE);
  if (prm::Get(w, W::page_offset) != 0) return Refuse(Syndrome::WQ_PAGE_OFFSET);

  const uint32_t pdn = prm::Get(w, W::pd);
  auto pd = pds_.find(pdn);
  if (pd == pds_.end()) return Refuse(Syndrome::WQ_PD_UNKNOWN);
  if (pd->second.uid != uid) return Refuse(Syndrome::NOT_OWNER);
  const uint32_t uar_page = prm::Get(w, W::uar_page);
  if (send) {
    auto uar = uars_.find(uar_page);
    if (uar == uars_.end()) return Refuse(Syndrome::WQ_UAR_UNKNOWN);
    if (uar->second != uid) return Refuse(Syndrome::NOT_OWNER);
  } else if (uar_page != 0) {
    return Refuse(Syndrome::WQ_UNSUPPORTED);  // an RQ rings no UAR
  }
  const uint64_t dbr = prm::Get(w, W::dbr_addr);
  if (dbr % kDbrAlignment != 0) return Refuse(Syndrome::WQ_DBR_ALIGNMENT);
  if (!iommu_.IsMappedFor(uid, dbr, kDbrBytes)) return Refuse(Syndrome::WQ_DBR_UNMAPPED);

  q->pd = pdn;
  q->log_page_bytes = 12 + log_page_size;
  q->dbr_addr = dbr;
  q->wqe_count = uint32_t{1} << log_size;
  q->stride = uint32_t{1} << log_stride;
  return ReadQueuePages(in, wq_bit_offset / 8 + wq_bytes, log_size + log_stride, q->log_page_bytes,
                        {Syndrome::WQ_PAS_COUNT, Syndrome::WQ_PAS_ENTRY, Syndrome::WQ_PAS_UNMAPPED},
                        &q->pas);
}

Outcome Firmware::CreateSq(Bytes in, Out out) {
  using In = prm::create_sq_in;
  using Ctx = prm::sqc_bits<In::ctx.bit_offset>;
  if (Outcome s = CheckShape<In, prm::create_sq_out>(in, out); !s.ok()) return s;
  if (!ReservedClear(in, Ctx{})) return Refuse(Syndrome::RESERVED_NOT_ZERO);
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  const uint16_t uid = static_cast<uint16_t>(prm::Get(in, In::uid));
  if (prm::Get(in, Ctx::rlky) || prm::Get(in, Ctx::cd_master) || prm::Get(in, Ctx::fre) ||
      prm::Get(in, Ctx::allow_multi_pkt_send_wqe) ||
      prm::Get(in, Ctx::min_wqe_inline_mode) > kInlineModeL2 || prm::Get(in, Ctx::reg_umr) ||
      prm::Get(in, Ctx::allow_swp) || prm::Get(in, Ctx::hairpin) || prm::Get(in, Ctx::non_wire) ||
      prm::Get(in, Ctx::ts_format) > kTsFormatDefault || prm::Get(in, Ctx::user_index) ||
      prm::Get(in, Ctx::hairpin_peer_rq) || prm::Get(in, Ctx::hairpin_peer_vhca) ||
      prm::Get(in, Ctx::ts_cqe_to_dest_cqn) || prm::Get(in, Ctx::packet_pacing_rate_limit_index) ||
      prm::Get(in, Ctx::qos_queue_group_id))
    return Refuse(Syndrome::WQ_UNSUPPORTED);
  if (prm::Get(in, Ctx::state) != prm::SQC_STATE_RST) return Refuse(Syndrome::WQ_STATE);
  if (prm::Get(in, Ctx::tis_lst_sz) != 1) return Refuse(Syndrome::SQ_TIS);
  const uint32_t cqn = prm::Get(in, Ctx::cqn);
  auto cq = cqs_.find(cqn);
  if (cq == cqs_.end()) return Refuse(Syndrome::WQ_CQ_UNKNOWN);
  if (cq->second.uid != uid) return Refuse(Syndrome::NOT_OWNER);
  const uint32_t tisn = prm::Get(in, Ctx::tis_num_0);
  auto tis = tises_.find(tisn);
  if (tis == tises_.end()) return Refuse(Syndrome::SQ_TIS_UNKNOWN);
  if (tis->second.uid != uid) return Refuse(Syndrome::NOT_OWNER);

  Sq sq{};
  if (Outcome s = ReadWorkQueue(in, Ctx::wq.bit_offset, uid, /*send=*/true, &sq); !s.ok())
    return s;
  auto sqn = qp_ids_.Allocate();
  if (!sqn) return Refuse(Syndrome::WQ_EXHAUSTED);
  sq.uid = uid;
  sq.cqn = cqn;
  sq.state = prm::SQC_STATE_RST;
  sq.tisn = tisn;
  sq.uar_page = prm::Get(in.subspan(Ctx::wq.bit_offset / 8), prm::wq::uar_page);
  std::memcpy(sq.sqc.data(), in.data() + Ctx::bit_offset / 8, sq.sqc.size());
  ++cq->second.users;
  ++tis->second.sqs;
  ++pds_.at(sq.pd).queues;
  sqs_.emplace(*sqn, std::move(sq));
  prm::Bits(out).set(prm::create_sq_out::sqn, *sqn);
  return Outcome::Ok();
}

Outcome Firmware::DestroySq(Bytes in, Out out) {
  using In = prm::destroy_sq_in;
  if (Outcome s = CheckShape<In, prm::destroy_sq_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = sqs_.find(prm::Get(in, In::sqn));
  if (it == sqs_.end()) return Refuse(Syndrome::SQ_UNKNOWN);
  if (it->second.uid != prm::Get(in, In::uid)) return Refuse(Syndrome::NOT_OWNER);
  --cqs_.at(it->second.cqn).users;
  --tises_.at(it->second.tisn).sqs;
  --pds_.at(it->second.pd).queues;
  qp_ids_.Free(it->first);
  sqs_.erase(it);
  return Outcome::Ok();
}

Outcome Firmware::QuerySq(Bytes in, Out out) {
  using In = prm::query_sq_in;
  using O = prm::query_sq_out;
  uint16_t uid = 0;
  if (Outcome s = CheckShapeWithHeaderUid<In, O>(in, out, &uid); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = sqs_.find(prm::Get(in, In::sqn));
  if (it == sqs_.end()) return Refuse(Syndrome::SQ_UNKNOWN);
  if (uid != 0 && it->second.uid != uid) return Refuse(Syndrome::NOT_OWNER);
  std::memcpy(out.data() + O::sq_context.bit_offset / 8, it->second.sqc.data(),
              it->second.sqc.size());
  WriteQueuePages(out, prm::size_bytes<O>, it->second.pas);
  return Outcome::Ok();
}

Outcome Firmware::ModifySq(Bytes in, Out out) {
  using In = prm::modify_sq_in;
  using Ctx = prm::sqc_bits<In::ctx.bit_offset>;
  if (Outcome s = CheckShape<In, prm::modify_sq_out>(in, out); !s.ok()) return s;
  if (!ReservedClear(in, Ctx{})) return Refuse(Syndrome::RESERVED_NOT_ZERO);
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = sqs_.find(prm::Get(in, In::sqn));
  if (it == sqs_.end()) return Refuse(Syndrome::SQ_UNKNOWN);
  Sq& sq = it->second;
  if (sq.uid != prm::Get(in, In::uid)) return Refuse(Syndrome::NOT_OWNER);
  if (prm::Get(in, In::sq_state) != sq.state)
    return Refuse(Syndrome::WQ_BAD_STATE);
  if (prm::Get(in, In::modify_bitmask) != 0) return Refuse(Syndrome::WQ_MODIFY_BITMASK);
  const uint32_t next = prm::Get(in, Ctx::state);
  if (!WqTransitionOk(sq.state, next)) return Refuse(Syndrome::WQ_TRANSITION);
  sq.state = static_cast<uint8_t>(next);
  prm::Bits(std::span<std::byte>(sq.sqc)).set(prm::sqc::state, next);
  return Outcome::Ok();
}

Outcome Firmware::CreateRq(Bytes in, Out out) {
  using In = prm::create_rq_in;
  using Ctx = prm::rqc_bits<In::ctx.bit_offset>;
  if (Outcome s = CheckShape<In, prm::create_rq_out>(in, out); !s.ok()) return s;
  if (!ReservedClear(in, Ctx{})) return Refuse(Syndrome::RESERVED_NOT_ZERO);
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  const uint16_t uid = static_cast<uint16_t>(prm::Get(in, In::uid));
  if (prm::Get(in, Ctx::mem_rq_type) != prm::RQC_MEM_RQ_TYPE_MEMORY_RQ_INLINE)
    return Refuse(Syndrome::RQ_MEM_TYPE);
  if (prm::Get(in, Ctx::rlky) || prm::Get(in, Ctx::delay_drop_en) ||
      prm::Get(in, Ctx::scatter_fcs) || prm::Get(in, Ctx::hairpin) ||
      prm::Get(in, Ctx::ts_format) > kTsFormatDefault || prm::Get(in, Ctx::user_index) ||
      prm::Get(in, Ctx::counter_set_id) || prm::Get(in, Ctx::rmpn) ||
      prm::Get(in, Ctx::hairpin_peer_sq) || prm::Get(in, Ctx::hairpin_peer_vhca) ||
      prm::Get(in, Ctx::shampo_no_match_alignment_granularity) ||
      prm::Get(in, Ctx::shampo_match_criteria_type) || prm::Get(in, Ctx::reservation_timeout))
    return Refuse(Syndrome::WQ_UNSUPPORTED);
  if (prm::Get(in, Ctx::state) != prm::RQC_STATE_RST) return Refuse(Syndrome::WQ_STATE);
  const uint32_t cqn = prm::Get(in, Ctx::cqn);
  auto cq = cqs_.find(cqn);
  if (cq == cqs_.end()) return Refuse(Syndrome::WQ_CQ_UNKNOWN);
  if (cq->second.uid != uid) return Refuse(Syndrome::NOT_OWNER);

  Rq rq{};
  if (Outcome s = ReadWorkQueue(in, Ctx::wq.bit_offset, uid, /*send=*/false, &rq); !s.ok())
    return s;
  auto rqn = qp_ids_.Allocate();
  if (!rqn) return Refuse(Syndrome::WQ_EXHAUSTED);
  rq.uid = uid;
  rq.cqn = cqn;
  rq.state = prm::RQC_STATE_RST;
  std::memcpy(rq.rqc.data(), in.data() + Ctx::bit_offset / 8, rq.rqc.size());
  ++cq->second.users;
  ++pds_.at(rq.pd).queues;
  rqs_.emplace(*rqn, std::move(rq));
  prm::Bits(out).set(prm::create_rq_out::rqn, *rqn);
  return Outcome::Ok();
}

Outcome Firmware::DestroyRq(Bytes in, Out out) {
  using In = prm::destroy_rq_in;
  if (Outcome s = CheckShape<In, prm::destroy_rq_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = rqs_.find(prm::Get(in, In::rqn));
  if (it == rqs_.end()) return Refuse(Syndrome::RQ_UNKNOWN);
  if (it->second.uid != prm::Get(in, In::uid)) return Refuse(Syndrome::NOT_OWNER);
  if (it->second.tirs != 0) return Refuse(Syndrome::RQ_BUSY);
  --cqs_.at(it->second.cqn).users;
  --pds_.at(it->second.pd).queues;
  qp_ids_.Free(it->first);
  rqs_.erase(it);
  return Outcome::Ok();
}

Outcome Firmware::QueryRq(Bytes in, Out out) {
  using In = prm::query_rq_in;
  using O = prm::query_rq_out;
  uint16_t uid = 0;
  if (Outcome s = CheckShapeWithHeaderUid<In, O>(in, out, &uid); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = rqs_.find(prm::Get(in, In::rqn));
  if (it == rqs_.end()) return Refuse(Syndrome::RQ_UNKNOWN);
  if (uid != 0 && it->second.uid != uid) return Refuse(Syndrome::NOT_OWNER);
  std::memcpy(out.data() + O::rq_context.bit_offset / 8, it->second.rqc.data(),
              it->second.rqc.size());
  WriteQueuePages(out, prm::size_bytes<O>, it->second.pas);
  return Outcome::Ok();
}

Outcome Firmware::ModifyRq(Bytes in, Out out) {
  using In = prm::modify_rq_in;
  using Ctx = prm::rqc_bits<In::ctx.bit_offset>;
  if (Outcome s = CheckShape<In, prm::modify_rq_out>(in, out); !s.ok()) return s;
  if (!ReservedClear(in, Ctx{})) return Refuse(Syndrome::RESERVED_NOT_ZERO);
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = rqs_.find(prm::Get(in, In::rqn));
  if (it == rqs_.end()) return Refuse(Syndrome::RQ_UNKNOWN);
  Rq& rq = it->second;
  if (rq.uid != prm::Get(in, In::uid)) return Refuse(Syndrome::NOT_OWNER);
  if (prm::Get(in, In::rq_state) != rq.state)
    return Refuse(Syndrome::WQ_BAD_STATE);
  if (prm::Get(in, In::modify_bitmask) != 0) return Refuse(Syndrome::WQ_MODIFY_BITMASK);
  const uint32_t next = prm::Get(in, Ctx::state);
  if (!WqTransitionOk(rq.state, next)) return Refuse(Syndrome::WQ_TRANSITION);
  rq.state = static_cast<uint8_t>(next);
  prm::Bits(std::span<std::byte>(rq.rqc)).set(prm::rqc::state, next);
  return Outcome::Ok();
}

// ---- TIR ----

Outcome Firmware::CreateTir(Bytes in, Out out) {
  using In = prm::create_tir_in;
  using Ctx = prm::tirc_bits<In::ctx.bit_offset>;
  if (Outcome s = CheckShape<In, prm::create_tir_out>(in, out); !s.ok()) return s;
  if (!ReservedClear(in, Ctx{})) return Refuse(Syndrome::RESERVED_NOT_ZERO);
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  const uint16_t uid = static_cast<uint16_t>(prm::Get(in, In::uid));
  const uint32_t disp = prm::Get(in, Ctx::disp_type);
  if (disp == prm::TIRC_DISP_TYPE_INDIRECT) return Refuse(Syndrome::TIR_INDIRECT);
  if (disp != prm::TIRC_DISP_TYPE_DIRECT) return Refuse(Syndrome::TIR_UNSUPPORTED);
  bool hash_key = false;
  for (std::size_t i = 0; i < 10; ++i) hash_key |= prm::Get(in, Ctx::rx_hash_toeplitz_key[i]) != 0;
  if (hash_key || prm::Get(in, Ctx::tls_en) || prm::Get(in, Ctx::lro_timeout_period_usecs) ||
      prm::Get(in, Ctx::packet_merge_mask) || prm::Get(in, Ctx::lro_max_ip_payload_size) ||
      prm::Get(in, Ctx::rx_hash_symmetric) || prm::Get(in, Ctx::tunneled_offload_en) ||
      prm::Get(in, Ctx::indirect_table) || prm::Get(in, Ctx::rx_hash_fn) ||
      prm::Get(in, Ctx::rx_hash_field_selector_outer) ||
      prm::Get(in, Ctx::rx_hash_field_selector_inner))
    return Refuse(Syndrome::TIR_UNSUPPORTED);
  const uint32_t rqn = prm::Get(in, Ctx::inline_rqn);
  auto rq = rqs_.find(rqn);
  if (rq == rqs_.end()) return Refuse(Syndrome::TIR_RQ_UNKNOWN);
  if (rq->second.uid != uid) return Refuse(Syndrome::NOT_OWNER);
  const uint32_t td = prm::Get(in, Ctx::transport_domain);
  auto t = tds_.find(td);
  if (t == tds_.end()) return Refuse(Syndrome::TIR_TD_UNKNOWN);
  if (t->second != uid) return Refuse(Syndrome::NOT_OWNER);
  auto tirn = tir_ids_.Allocate();
  if (!tirn) return Refuse(Syndrome::TIR_EXHAUSTED);
  Tir tir{};
  tir.uid = uid;
  tir.td = td;
  tir.rqn = rqn;
  std::memcpy(tir.tirc.data(), in.data() + Ctx::bit_offset / 8, tir.tirc.size());
  ++rq->second.tirs;
  tirs_.emplace(*tirn, tir);
  prm::Bits(out).set(prm::create_tir_out::tirn, *tirn);
  return Outcome::Ok();
}

Outcome Firmware::DestroyTir(Bytes in, Out out) {
  using In = prm::destroy_tir_in;
  if (Outcome s = CheckShape<In, prm::destroy_tir_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = tirs_.find(prm::Get(in, In::tirn));
  if (it == tirs_.end()) return Refuse(Syndrome::TIR_UNKNOWN);
  if (it->second.uid != prm::Get(in, In::uid)) return Refuse(Syndrome::NOT_OWNER);
  --rqs_.at(it->second.rqn).tirs;
  tir_ids_.Free(it->first);
  tirs_.erase(it);
  return Outcome::Ok();
}

Outcome Firmware::QueryTir(Bytes in, Out out) {
  using In = prm::query_tir_in;
  using O = prm::query_tir_out;
  uint16_t uid = 0;
  if (Outcome s = CheckShapeWithHeaderUid<In, O>(in, out, &uid); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = tirs_.find(prm::Get(in, In::tirn));
  if (it == tirs_.end()) return Refuse(Syndrome::TIR_UNKNOWN);
  if (uid != 0 && it->second.uid != uid) return Refuse(Syndrome::NOT_OWNER);
  std::memcpy(out.data() + O::tir_context.bit_offset / 8, it->second.tirc.data(),
              it->second.tirc.size());
  return Outcome::Ok();
}

}  // namespace onchip::sim
