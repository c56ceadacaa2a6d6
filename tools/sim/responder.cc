// The responder: request packets from the wire executed against this device's QPs, receive
// WQEs (the QP's receive ring or its SRQ's free list) and the responses.
//
// A request reaches a QP of the same transport in RTR, RTS, SQD or SQER; anything else drops
// it (an RC requester then times out). RC requests carry a sequence number: the expected one
// is executed, an earlier one (a resend whose answer was late) is answered again without being
// executed again (a READ is re-read, an atomic returns the value it returned before), a later
// one is dropped.
//
//   SEND / SEND_IMM / SEND_INV   take the next receive WQE (none: RC answers RNR NAK with
//                                qpc.min_rnr_nak, UC and UD drop), scatter the payload (UD: the
//                                40-byte GRH first, or 40 bytes left unwritten when the packet
//                                came without one) and write a responder CQE; SEND_INV first
//                                invalidates the type-2 window it names, bound to this QP
//   RDMA_WRITE(_IMM)             needs qpc.rwe and an rkey with remote write; _IMM also takes a
//                                receive WQE (no data is scattered into it)
//   RDMA_READ                    needs qpc.rre and remote read; answered with the bytes
//                                (a zero-length write or read checks no rkey)
//   ATOMIC_CS / ATOMIC_FA        need qpc.rae, remote atomic and an 8-byte aligned address; run
//                                on the 64-bit word in the byte order the driver chose
//                                (atomic_req_8B_endianness_mode: 0 big-endian, 1 host), answered
//                                with the value before, which lands in the same order
// Failures: an rkey, right or range refused -> NAK remote access (requester REMOTE_ACCESS_ERR);
// a misaligned atomic, a SEND larger than the receive WQE or an invalidation refused -> NAK
// invalid request (REMOTE_INVAL_REQ_ERR); a receive WQE whose lkey fails -> NAK remote operation
// (REMOTE_OP_ERR). When a receive WQE was taken the responder completes it in error too
// (LOCAL_LENGTH_ERR, LOCAL_PROT_ERR, ...); an RC responder that refused a request moves to the
// error state and reports an affiliated event EQE (WQ_ACCESS_ERROR, WQ_INVAL_REQ_ERROR,
// WQ_CATAS_ERROR for its own receive's failure) on the first EQ subscribed to it. UC and UD never
// answer: their failures complete the receive WQE in error only.
//
// XRC: a request reaches the target QP (st XRC, no rings of its own) and names an XRC SRQ in its
// XRC segment. That SRQ must exist, be an XRC SRQ and belong to the target's XRC domain, else
// the target NAKs invalid request (the requester's REMOTE_INVAL_REQ_ERR) and moves to the error
// state like an RC responder. Otherwise the SRQ serves the request: its WQEs take SENDs and
// WRITE_IMMs, its CQ gets the completions (qpn = the target, srqn_uidx = the SRQ's user index,
// wqe_counter = the SRQ WQE's index), and its PD is the one rkeys (WRITE, READ, atomics) and
// receive lkeys are checked against: the target has no PD of its own (IBTA XRC annex A14).
#include "tools/sim/responder.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "uapi/prm/doorbell_record.h"
#include "uapi/prm/eqe.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/qp.h"
#include "uapi/prm/recv_wqe.h"
#include "uapi/prm/send_wqe.h"
#include "uapi/prm/srq.h"

namespace onchip::sim {

namespace {

using Bytes = std::span<const std::byte>;

// UD messages are one MTU at most; UD QPs run at 4096.
constexpr std::size_t kUdMtu = 4096;
// cqe.flags_rqpn: a GRH is present in the receive buffer (libmlx5 reports IBV_WC_GRH).
constexpr uint32_t kCqeGrhPresent = 1u << 28;

uint16_t Checksum(const uint8_t* p, std::size_t n) {
  uint32_t sum = 0;
  for (std::size_t i = 0; i + 1 < n; i += 2) sum += uint32_t{p[i]} << 8 | p[i + 1];
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

// The 40 bytes a UD receive starts with, as the packet's L3 header was: a GRH
// (next header 0x1B, the IBA transport) or RoCE v2's IPv6 header (next header UDP), each 40
// bytes; or RoCE v2's IPv4 header with its checksum at offset 20, the first 20 bytes left zero.
std::array<std::byte, kGrhBytes> Grh(const Packet& p) {
  std::array<uint8_t, kGrhBytes> g{};
  // What follows the L3 header on the wire: UDP (8, RoCE v2), BTH (12), DETH (8), payload,
  // ICRC (4).
  const std::size_t l4 = (p.l3 == L3Header::kGrh ? 0 : 8) + 12 + 8 + p.payload.size() + 4;
  if (p.l3 == L3Header::kIpv4) {
    uint8_t* h = g.data() + 20;
    const std::size_t total = 20 + l4;
    h[0] = 0x45;
    h[1] = p.tclass;
    h[2] = static_cast<uint8_t>(total >> 8);
    h[3] = static_cast<uint8_t>(total);
    h[6] = 0x40;  // don't fragment
    h[8] = p.hop_limit;
    h[9] = 17;  // UDP
    std::memcpy(h + 12, p.sgid.data() + 12, 4);
    std::memcpy(h + 16, p.dgid.data() + 12, 4);
    const uint16_t sum = Checksum(h, 20);
    h[10] = static_cast<uint8_t>(sum >> 8);
    h[11] = static_cast<uint8_t>(sum);
  } else {
    g[0] = static_cast<uint8_t>(0x60 | p.tclass >> 4);
    g[1] = static_cast<uint8_t>((p.tclass & 0xf) << 4 | ((p.flow_label >> 16) & 0xf));
    g[2] = static_cast<uint8_t>(p.flow_label >> 8);
    g[3] = static_cast<uint8_t>(p.flow_label);
    g[4] = static_cast<uint8_t>(l4 >> 8);
    g[5] = static_cast<uint8_t>(l4);
    g[6] = p.l3 == L3Header::kGrh ? 0x1b : 17;  // the IBA transport, or UDP (RoCE v2)
    g[7] = p.hop_limit;
    std::memcpy(g.data() + 8, p.sgid.data(), 16);
    std::memcpy(g.data() + 24, p.dgid.data(), 16);
  }
  std::array<std::byte, kGrhBytes> out;
  std::memcpy(out.data(), g.data(), out.size());
  return out;
}

}  // namespace

void Engine::HandleRequest(Packet& p) {
  const Qp* qp = ctx_.FindQp(p.dst_qpn);
  if (qp == nullptr) return;
  Responder(*this, p, p.dst_qpn, *qp).Handle();
}

Engine::Responder::Responder(Engine& engine, Packet& p, uint32_t qpn, const Qp& qp)
    : e_(engine),
      p_(p),
      qpn_(qpn),
      qp_(qp),
      pr_(engine.state_.qp(qpn)),
      qpc_(qp.qpc),
      rc_(Reliable(qp.st)),
      ud_(qp.st == prm::QP_ST_UD),
      user_index_(static_cast<uint32_t>(prm::Get(qpc_, prm::qpc::user_index))),
      pd_(qp.pd),
      rcv_cqn_(qp.cqn_rcv),
      rcv_cq_(qp.cq_rcv),
      srqn_(qp.srqn) {}

void Engine::Responder::Handle() {
  if (!Accepts()) return;
  EstablishCommunication();
  const Sequence sequence = CheckSequence();
  if (sequence == Sequence::kDrop || !ValidateTarget()) return;
  if (sequence == Sequence::kRepeated) {
    RespondRepeated();
    return;
  }
  Execute();
}

// ---- sequence and target ----

bool Engine::Responder::Accepts() const {
  if (qp_.st != p_.transport) return false;
  return qp_.state == prm::QP_STATE_RTR || qp_.state == prm::QP_STATE_RTS ||
         qp_.state == prm::QP_STATE_SQD || qp_.state == prm::QP_STATE_SQER;
}

void Engine::Responder::EstablishCommunication() {
  // The first request a connected QP receives in RTR establishes communication (the event
  // software waits for before moving the QP to RTS when it has no other sign).
  if (qp_.state == prm::QP_STATE_RTR && !ud_ && !pr_.comm_established) {
    pr_.comm_established = true;
    e_.QpEvent(qp_.uid, qpn_, prm::MLX5_EVENT_TYPE_COMM_EST);
  }
}

Engine::Responder::Sequence Engine::Responder::CheckSequence() const {
  if (!rc_) return Sequence::kExpected;
  const uint32_t expected =
      (static_cast<uint32_t>(prm::Get(qpc_, prm::qpc::next_rcv_psn)) + pr_.recv_msn) & 0xffffff;
  if (p_.psn == expected) return Sequence::kExpected;
  const uint32_t behind = (expected - p_.psn) & 0xffffff;
  if (behind == 0 || behind >= (1u << 23)) return Sequence::kDrop;
  return Sequence::kRepeated;
}

bool Engine::Responder::ValidateTarget() {
  if (ud_ && p_.qkey != prm::Get(qpc_, prm::qpc::q_key)) return false;
  if (qp_.st != prm::QP_ST_XRC) return true;
  if (!qp_.xrc_tgt) return false;  // an initiator receives no requests
  const Srq* srq = e_.ctx_.FindSrq(p_.xrc_srqn);
  if (srq == nullptr || !srq->xrcd || srq->xrcd != qp_.xrcd) {
    Refuse(NakCode::kInvalidRequest, nullptr, {});
    return false;
  }
  pd_ = srq->pd;
  rcv_cqn_ = srq->cqn;
  rcv_cq_ = e_.ctx_.FindCq(rcv_cqn_);  // the SRQ holds its CQ (DESTROY_CQ is RES_BUSY meanwhile)
  user_index_ = srq->user_index;
  srqn_ = p_.xrc_srqn;
  return true;
}

// ---- execute ----

void Engine::Responder::Execute() {
  switch (p_.opcode) {
    case prm::MLX5_OPCODE_SEND:
    case prm::MLX5_OPCODE_SEND_IMM:
    case prm::MLX5_OPCODE_SEND_INVAL:
      ExecuteSend();
      return;
    case prm::MLX5_OPCODE_RDMA_WRITE:
    case prm::MLX5_OPCODE_RDMA_WRITE_IMM:
      ExecuteWrite();
      return;
    case prm::MLX5_OPCODE_RDMA_READ:
      ExecuteRead();
      return;
    case prm::MLX5_OPCODE_ATOMIC_CS:
    case prm::MLX5_OPCODE_ATOMIC_FA:
      ExecuteAtomic();
      return;
    default:
      Refuse(NakCode::kInvalidRequest, nullptr, {});
      return;
  }
}

void Engine::Responder::ExecuteSend() {
  const uint8_t op = p_.opcode;
  if (ud_ && p_.payload.size() > kUdMtu) return;
  auto recv = TakeReceive();
  if (!recv) {
    Nak(NakCode::kRnr);  // UC and UD: the message is dropped
    return;
  }
  if (op == prm::MLX5_OPCODE_SEND_INVAL &&
      !e_.RemoteInvalidate(prm::Be32::FromRaw(p_.imm).host(), pd_, qpn_)) {
    Refuse(NakCode::kInvalidRequest, &*recv, prm::MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
    return;
  }
  std::array<std::byte, kGrhBytes> grh;
  std::vector<Bytes> parts;
  // UD: the payload starts 40 bytes in either way; without a GRH those stay unwritten.
  if (ud_ && p_.grh) {
    grh = Grh(p_);
    parts.push_back(grh);
  }
  parts.push_back(p_.payload);
  const std::size_t skip = ud_ && !p_.grh ? kGrhBytes : 0;
  if (prm::CqeSyndrome s = Scatter(*recv, parts, skip); s != 0) {
    Refuse(s == prm::MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR ? NakCode::kInvalidRequest
                                                        : NakCode::kRemoteOperation,
           &*recv, s);
    return;
  }
  Executed();
  const prm::CqeOpcode opcode = op == prm::MLX5_OPCODE_SEND       ? prm::MLX5_CQE_RESP_SEND
                                : op == prm::MLX5_OPCODE_SEND_IMM ? prm::MLX5_CQE_RESP_SEND_IMM
                                                                  : prm::MLX5_CQE_RESP_SEND_INV;
  Complete(*recv, opcode, static_cast<uint32_t>(p_.payload.size() + (ud_ ? kGrhBytes : 0)));
  if (rc_) Ack();
}

void Engine::Responder::ExecuteWrite() {
  // A zero-length write names no memory: its rkey is not checked (IBTA).
  std::optional<AdmittedKey> key;
  if (!p_.payload.empty())
    key = e_.Admit(p_.rkey, p_.raddr, p_.payload.size(), kRemoteWrite, pd_, qpn_);
  if (!prm::Get(qpc_, prm::qpc::rwe) || (!p_.payload.empty() && !key)) {
    if (rc_) Refuse(NakCode::kRemoteAccess, nullptr, {});
    return;
  }
  std::optional<Receive> recv;
  if (p_.opcode == prm::MLX5_OPCODE_RDMA_WRITE_IMM) {
    recv = TakeReceive();
    if (!recv) {
      Nak(NakCode::kRnr);
      return;
    }
  }
  if (key && !e_.CopyToKey(*key, p_.raddr, p_.payload)) {
    if (rc_)
      Refuse(NakCode::kRemoteAccess, recv ? &*recv : nullptr,
             prm::MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
    return;
  }
  Executed();
  if (recv) Complete(*recv, prm::MLX5_CQE_RESP_WR_IMM, static_cast<uint32_t>(p_.payload.size()));
  if (rc_) Ack();
}

void Engine::Responder::ExecuteRead() {
  Packet r = Answer(PacketKind::kReadResponse);
  // A zero-length read names no memory either.
  std::optional<AdmittedKey> key;
  if (p_.read_length != 0)
    key = e_.Admit(p_.rkey, p_.raddr, p_.read_length, kRemoteRead, pd_, qpn_);
  if (!rc_ || !prm::Get(qpc_, prm::qpc::rre) || (p_.read_length != 0 && !key)) {
    Refuse(NakCode::kRemoteAccess, nullptr, {});
    return;
  }
  r.payload = e_.TakePayloadBuffer();
  if (key && !e_.AppendFromKey(*key, p_.raddr, p_.read_length, r.payload)) {
    Refuse(NakCode::kRemoteAccess, nullptr, {});
    return;
  }
  Executed();
  e_.Transmit(std::move(r));
}

void Engine::Responder::ExecuteAtomic() {
  if (!rc_) return;
  if (p_.raddr % 8 != 0) {
    Refuse(NakCode::kInvalidRequest, nullptr, {});
    return;
  }
  const auto key = e_.Admit(p_.rkey, p_.raddr, 8, kRemoteAtomic, pd_, qpn_);
  if (!prm::Get(qpc_, prm::qpc::rae) || !key) {
    Refuse(NakCode::kRemoteAccess, nullptr, {});
    return;
  }
  const bool big_endian = e_.AtomicsBigEndian();
  auto original = e_.AtomicAtKey(*key, p_.raddr, p_.opcode == prm::MLX5_OPCODE_ATOMIC_CS,
                                 p_.swap_add, p_.compare, big_endian);
  if (!original) {
    Refuse(NakCode::kRemoteAccess, nullptr, {});
    return;
  }
  Executed();
  pr_.last_atomic_original = *original;
  Packet r = Answer(PacketKind::kAtomicResponse);
  r.atomic_original = *original;
  r.atomic_big_endian = big_endian;
  e_.Transmit(std::move(r));
}

std::optional<Engine::Responder::Receive> Engine::Responder::TakeReceive() {
  return srqn_ ? TakeSrqReceive(*srqn_) : TakeRingReceive();
}

std::optional<Engine::Responder::Receive> Engine::Responder::TakeSrqReceive(uint32_t srqn) {
  const Srq* found = e_.ctx_.FindSrq(srqn);
  if (found == nullptr || found->wqe_count == 0) return std::nullopt;
  const Srq& srq = *found;
  SrqProgress& progress = e_.state_.srq(srqn);
  auto producer = e_.LoadBe32(srq.dbr_addr, progress.dbr);
  if (!producer || ((*producer ^ progress.counter) & prm::kWqCounterMask) == 0)
    return std::nullopt;
  const uint32_t index = progress.head & (srq.wqe_count - 1);
  std::vector<std::byte> wqe(srq.stride);
  if (srq.stride < sizeof(prm::pod::mlx5_wqe_srq_next_seg) ||
      !e_.ReadQueue(srq.pas, srq.log_page_bytes, uint64_t{index} * srq.stride, wqe,
                    &progress.ring_page))
    return std::nullopt;
  prm::pod::mlx5_wqe_srq_next_seg next;
  std::memcpy(&next, wqe.data(), sizeof next);
  progress.head = next.next_wqe_index.host();
  ++progress.counter;
  // Fewer posted WQEs left than the armed watermark: the limit event, once; the watermark is
  // cleared until ARM_RQ sets it again.
  const uint32_t lwm = static_cast<uint32_t>(prm::Get(Bytes(srq.srqc), prm::srqc::lwm));
  if (lwm != 0 && ((*producer - progress.counter) & prm::kWqCounterMask) < lwm) {
    e_.ctx_.ClearSrqLimit(srqn);
    e_.QpEvent(srq.uid, srqn, prm::MLX5_EVENT_TYPE_SRQ_RQ_LIMIT);
  }
  Receive recv;
  recv.wqe_counter = static_cast<uint16_t>(index);
  recv.pd = srq.pd;
  ParseScatter(wqe, sizeof next, &recv.list);
  return recv;
}

std::optional<Engine::Responder::Receive> Engine::Responder::TakeRingReceive() {
  if (qp_.rq_wqe_count == 0) return std::nullopt;
  auto producer = e_.LoadBe32(qp_.dbr_addr + prm::MLX5_RCV_DBR * 4, pr_.rq_dbr);
  if (!producer || ((*producer ^ pr_.rq_counter) & prm::kWqCounterMask) == 0) return std::nullopt;
  const uint32_t index = pr_.rq_counter & (qp_.rq_wqe_count - 1);
  std::vector<std::byte> wqe(qp_.rq_stride);
  Receive recv;
  recv.wqe_counter = static_cast<uint16_t>(pr_.rq_counter & prm::kWqCounterMask);
  recv.pd = qp_.pd;
  ++pr_.rq_counter;
  if (e_.ReadQueue(qp_.pas, qp_.log_page_bytes, uint64_t{index} * qp_.rq_stride, wqe,
                   &pr_.rq_page))
    ParseScatter(wqe, prm::Get(qpc_, prm::qpc::wq_signature) ? 16 : 0, &recv.list);
  else
    recv.list.push_back({prm::MLX5_INVALID_LKEY, 0, 0});  // unreadable: fails as a bad key
  return recv;
}

void Engine::Responder::ParseScatter(Bytes wqe, std::size_t offset,
                                     std::vector<ScatterEntry>* out) {
  for (; offset + sizeof(prm::pod::mlx5_wqe_data_seg) <= wqe.size();
       offset += sizeof(prm::pod::mlx5_wqe_data_seg)) {
    prm::pod::mlx5_wqe_data_seg seg;
    std::memcpy(&seg, wqe.data() + offset, sizeof seg);
    if (seg.lkey.host() == prm::MLX5_INVALID_LKEY) break;  // the list ends early
    if (seg.byte_count.host() != 0)
      out->push_back({seg.lkey.host(), seg.addr.host(), seg.byte_count.host()});
  }
}

prm::CqeSyndrome Engine::Responder::Scatter(const Receive& recv, std::span<const Bytes> parts,
                                            std::size_t skip) const {
  uint64_t total = skip, room = 0;
  for (Bytes b : parts) total += b.size();
  for (const ScatterEntry& e : recv.list) room += e.length;
  if (total > room) return prm::MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
  std::size_t entry = 0, used = 0;
  while (skip > 0) {
    const std::size_t n = std::min<std::size_t>(skip, recv.list[entry].length - used);
    skip -= n;
    used += n;
    if (used == recv.list[entry].length) {
      ++entry;
      used = 0;
    }
  }
  for (Bytes b : parts) {
    while (!b.empty()) {
      const ScatterEntry& e = recv.list[entry];
      const std::size_t n = std::min<std::size_t>(b.size(), e.length - used);
      const auto key = e_.Admit(e.lkey, e.addr + used, n, kLocalWrite, recv.pd, qpn_);
      if (!key || !e_.CopyToKey(*key, e.addr + used, b.first(n)))
        return prm::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
      b = b.subspan(n);
      used += n;
      if (used == e.length) {
        ++entry;
        used = 0;
      }
    }
  }
  return {};
}

// ---- respond ----

Packet Engine::Responder::Answer(PacketKind kind) const {
  Packet r;
  r.kind = kind;
  r.transport = qp_.st;
  r.sgid = p_.dgid;
  r.dgid = p_.sgid;
  r.grh = p_.grh;  // answered the way it came: by GID, or by LID, in the same header
  r.l3 = p_.l3;
  r.dlid = p_.slid;
  r.sl = p_.sl;
  r.src_qpn = qpn_;
  r.dst_qpn = p_.src_qpn;
  r.psn = p_.psn;
  return r;
}

void Engine::Responder::Ack() { e_.Transmit(Answer(PacketKind::kAck)); }

void Engine::Responder::Nak(NakCode code) {
  if (!rc_) return;
  Packet r = Answer(PacketKind::kNak);
  r.nak = code;
  r.rnr_timer = static_cast<uint8_t>(prm::Get(qpc_, prm::qpc::min_rnr_nak));
  e_.Transmit(std::move(r));
}

void Engine::Responder::RespondRepeated() {
  // Answered again, not executed again: a READ is re-read, an atomic returns what it returned.
  const uint8_t op = p_.opcode;
  if (op != prm::MLX5_OPCODE_RDMA_READ && op != prm::MLX5_OPCODE_ATOMIC_CS &&
      op != prm::MLX5_OPCODE_ATOMIC_FA) {
    Ack();
    return;
  }
  Packet r = Answer(op == prm::MLX5_OPCODE_RDMA_READ ? PacketKind::kReadResponse
                                                     : PacketKind::kAtomicResponse);
  if (op == prm::MLX5_OPCODE_RDMA_READ) {
    const auto key = e_.Admit(p_.rkey, p_.raddr, p_.read_length, kRemoteRead, pd_, qpn_);
    r.payload = e_.TakePayloadBuffer();
    if (!key || !e_.AppendFromKey(*key, p_.raddr, p_.read_length, r.payload)) return;
  } else {
    r.atomic_original = pr_.last_atomic_original;
    r.atomic_big_endian = e_.AtomicsBigEndian();
  }
  e_.Transmit(std::move(r));
}

void Engine::Responder::Refuse(NakCode code, const Receive* recv, prm::CqeSyndrome syndrome) {
  if (recv != nullptr) {
    CqeFields f;
    f.opcode = prm::MLX5_CQE_RESP_ERR;
    f.qpn = qpn_;
    f.wqe_counter = recv->wqe_counter;
    f.user_index = user_index_;
    f.syndrome = syndrome;
    e_.WriteCqe(rcv_cqn_, *rcv_cq_, f);  // a receive WQE was taken: rcv_cq_ is its queue's CQ
  }
  Nak(code);
  if (rc_ || recv != nullptr) e_.MoveToError(qpn_);
  if (rc_)
    e_.QpEvent(qp_.uid, qpn_, code == NakCode::kRemoteAccess     ? prm::MLX5_EVENT_TYPE_WQ_ACCESS_ERROR
                     : code == NakCode::kInvalidRequest ? prm::MLX5_EVENT_TYPE_WQ_INVAL_REQ_ERROR
                                                        : prm::MLX5_EVENT_TYPE_WQ_CATAS_ERROR);
}

// ---- complete ----

void Engine::Responder::Executed() {
  ++pr_.recv_msn;
  ++pr_.requests_executed;
}

void Engine::Responder::Complete(const Receive& recv, prm::CqeOpcode opcode, uint32_t byte_cnt) {
  CqeFields f;
  f.opcode = opcode;
  f.qpn = qpn_;
  f.wqe_counter = recv.wqe_counter;
  f.byte_cnt = byte_cnt;
  f.user_index = user_index_;
  f.imm = p_.imm;
  // UD: whether a GRH came with it. flags_rqpn [27:24]: on InfiniBand the SL; on RoCE the
  // packet type, bit 3 set for UDP (v2) and [2:0] the L3 header (libmlx5's wc.sl; mlx5_ib's
  // handle_responder in drivers/infiniband/hw/mlx5/cq.c reads [25:24] as the network type).
  const uint32_t type = e_.InfiniBand()             ? p_.sl & 0xfu
                        : p_.l3 == L3Header::kGrh ? 0u
                                                  : 0x8u | static_cast<uint32_t>(p_.l3);
  f.flags_rqpn =
      (p_.src_qpn & 0xffffff) | (ud_ && p_.grh ? kCqeGrhPresent : 0) | type << 24;
  f.slid = p_.slid;
  f.solicited = p_.solicited;
  e_.WriteCqe(rcv_cqn_, *rcv_cq_, f);
}

bool Engine::FlushRecv(uint32_t qpn, const Qp& qp) {
  // SRQ WQEs belong to the SRQ and stay posted; only the QP's own ring is flushed.
  if (qp.srqn || qp.rq_wqe_count == 0) return false;
  QpProgress& pr = state_.qp(qpn);
  auto producer = LoadBe32(qp.dbr_addr + prm::MLX5_RCV_DBR * 4, pr.rq_dbr);
  if (!producer) return false;
  bool moved = false;
  for (uint32_t n = 0; n < qp.rq_wqe_count && ((*producer ^ pr.rq_counter) & prm::kWqCounterMask) != 0; ++n) {
    CqeFields f;
    f.opcode = prm::MLX5_CQE_RESP_ERR;
    f.qpn = qpn;
    f.wqe_counter = static_cast<uint16_t>(pr.rq_counter & prm::kWqCounterMask);
    f.user_index = static_cast<uint32_t>(prm::Get(Bytes(qp.qpc), prm::qpc::user_index));
    f.syndrome = prm::MLX5_CQE_SYNDROME_WR_FLUSH_ERR;
    WriteCqe(qp.cqn_rcv, *qp.cq_rcv, f);  // a QP with its own receive ring: not an XRC target
    ++pr.rq_counter;
    moved = true;
  }
  return moved;
}

}  // namespace onchip::sim
