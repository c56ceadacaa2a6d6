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
#include <algorithm>
#include <cstring>

#include "tools/sim/engine.h"
#include "tools/sim/engine_transport.h"
#include "uapi/prm/cqe.h"
#include "uapi/prm/doorbell_record.h"
#include "uapi/prm/eqe.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/srq.h"
#include "uapi/prm/qp.h"
#include "uapi/prm/recv_wqe.h"
#include "uapi/prm/send_wqe.h"

namespace onchip::sim {

namespace {

using Bytes = std::span<const std::byte>;

// UD messages are one MTU at most; UD QPs run at 4096.
constexpr std::size_t kUdMtu = 4096;
// cqe.flags_rqpn: a GRH is present in the receive buffer (libmlx5 reports IBV_WC_GRH).
constexpr uint32_t kCqeGrhPresent = 1u << 28;

struct ScatterEntry {
  uint32_t lkey;
  uint64_t addr;
  uint32_t length;
};

// A receive WQE taken for one message.
struct Receive {
  std::vector<ScatterEntry> list;
  uint16_t wqe_counter = 0;
  uint32_t pd = 0;
};

void ParseScatter(Bytes wqe, std::size_t offset, std::vector<ScatterEntry>* out) {
  for (; offset + sizeof(prm::pod::mlx5_wqe_data_seg) <= wqe.size();
       offset += sizeof(prm::pod::mlx5_wqe_data_seg)) {
    prm::pod::mlx5_wqe_data_seg seg;
    std::memcpy(&seg, wqe.data() + offset, sizeof seg);
    if (seg.lkey.host() == prm::MLX5_INVALID_LKEY) break;  // the list ends early
    if (seg.byte_count.host() != 0)
      out->push_back({seg.lkey.host(), seg.addr.host(), seg.byte_count.host()});
  }
}

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
  auto it = fw_.qps_.find(p.dst_qpn);
  if (it == fw_.qps_.end()) return;
  const uint32_t qpn = it->first;
  Qp& qp = it->second;
  QpProgress& pr = qp.progress;
  if (qp.st != p.transport) return;
  if (qp.state != prm::QP_STATE_RTR && qp.state != prm::QP_STATE_RTS &&
      qp.state != prm::QP_STATE_SQD && qp.state != prm::QP_STATE_SQER)
    return;
  const Bytes qpc(qp.qpc);
  const bool rc = Reliable(qp.st);
  const bool xrc = qp.st == prm::QP_ST_XRC;
  // The first request a connected QP receives in RTR establishes communication (the event
  // software waits for before moving the QP to RTS when it has no other sign).
  if (qp.state == prm::QP_STATE_RTR && qp.st != prm::QP_ST_UD && !pr.comm_established) {
    pr.comm_established = true;
    QpEvent(qpn, prm::MLX5_EVENT_TYPE_COMM_EST);
  }
  uint32_t user_index = static_cast<uint32_t>(prm::Get(qpc, prm::qpc::user_index));
  // What the request is checked against and completes on: the QP's own, or (XRC) its SRQ's.
  uint32_t pd = qp.pd;
  uint32_t rcv_cqn = qp.cqn_rcv;
  Cq* rcv_cq = qp.cq_rcv;  // null until an XRC target's SRQ names its CQ
  std::optional<uint32_t> srqn = qp.srqn;

  auto answer = [&](PacketKind kind) {
    Packet r;
    r.kind = kind;
    r.transport = qp.st;
    r.sgid = p.dgid;
    r.dgid = p.sgid;
    r.grh = p.grh;  // answered the way it came: by GID, or by LID, in the same header
    r.l3 = p.l3;
    r.dlid = p.slid;
    r.sl = p.sl;
    r.src_qpn = qpn;
    r.dst_qpn = p.src_qpn;
    r.psn = p.psn;
    return r;
  };
  auto nak = [&](NakCode code) {
    if (!rc) return;
    Packet r = answer(PacketKind::kNak);
    r.nak = code;
    r.rnr_timer = static_cast<uint8_t>(prm::Get(qpc, prm::qpc::min_rnr_nak));
    Transmit(std::move(r));
  };
  // A refused request: the responder's receive WQE (if one was taken) completes in error, an
  // RC responder NAKs and enters the error state.
  auto refuse = [&](NakCode code, const Receive* recv, prm::CqeSyndrome syndrome) {
    if (recv != nullptr) {
      CqeFields f;
      f.opcode = prm::MLX5_CQE_RESP_ERR;
      f.qpn = qpn;
      f.wqe_counter = recv->wqe_counter;
      f.user_index = user_index;
      f.syndrome = syndrome;
      WriteCqe(rcv_cqn, *rcv_cq, f);  // a receive WQE was taken: rcv_cq is its queue's CQ
    }
    nak(code);
    if (rc || recv != nullptr) MoveToError(qp);
    // The responder's own QP reports why it stopped (IBTA's affiliated asynchronous errors).
    if (rc)
      QpEvent(qpn, code == NakCode::kRemoteAccess     ? prm::MLX5_EVENT_TYPE_WQ_ACCESS_ERROR
                   : code == NakCode::kInvalidRequest ? prm::MLX5_EVENT_TYPE_WQ_INVAL_REQ_ERROR
                                                      : prm::MLX5_EVENT_TYPE_WQ_CATAS_ERROR);
  };

  // Sequence (RC): execute the expected message, answer a repeated one again, drop the rest.
  bool repeat = false;
  if (rc) {
    const uint32_t expected =
        (static_cast<uint32_t>(prm::Get(qpc, prm::qpc::next_rcv_psn)) + pr.recv_msn) & 0xffffff;
    if (p.psn != expected) {
      const uint32_t behind = (expected - p.psn) & 0xffffff;
      if (behind == 0 || behind >= (1u << 23)) return;
      repeat = true;
    }
  }
  if (qp.st == prm::QP_ST_UD && p.qkey != prm::Get(qpc, prm::qpc::q_key)) return;
  if (xrc && !qp.xrc_tgt) return;  // an initiator receives no requests
  if (xrc) {
    auto s = fw_.srqs_.find(p.xrc_srqn);
    if (s == fw_.srqs_.end() || !s->second.xrcd || s->second.xrcd != qp.xrcd) {
      refuse(NakCode::kInvalidRequest, nullptr, {});
      return;
    }
    pd = s->second.pd;
    rcv_cqn = s->second.cqn;
    rcv_cq = &fw_.cqs_.at(rcv_cqn);  // the SRQ holds its CQ (DESTROY_CQ is RES_BUSY meanwhile)
    user_index = s->second.user_index;
    srqn = s->first;
  }

  const uint8_t op = p.opcode;
  if (repeat) {
    if (op == prm::MLX5_OPCODE_RDMA_READ || op == prm::MLX5_OPCODE_ATOMIC_CS ||
        op == prm::MLX5_OPCODE_ATOMIC_FA) {
      Packet r = answer(op == prm::MLX5_OPCODE_RDMA_READ ? PacketKind::kReadResponse
                                                         : PacketKind::kAtomicResponse);
      if (op == prm::MLX5_OPCODE_RDMA_READ) {
        const auto key = Admit(p.rkey, p.raddr, p.read_length, kRemoteRead, pd, qpn);
        r.payload = TakePayloadBuffer();
        if (!key || !AppendFromKey(*key, p.raddr, p.read_length, r.payload)) return;
      } else {
        r.atomic_original = pr.last_atomic_original;
        r.atomic_big_endian = AtomicsBigEndian();
      }
      Transmit(std::move(r));
      return;
    }
    Transmit(answer(PacketKind::kAck));
    return;
  }

  // Takes the next receive WQE: from the SRQ's free list or the QP's receive ring.
  auto take_receive = [&]() -> std::optional<Receive> {
    Receive recv;
    std::vector<std::byte> wqe;
    if (srqn) {
      auto s = fw_.srqs_.find(*srqn);
      if (s == fw_.srqs_.end() || s->second.wqe_count == 0) return std::nullopt;
      Srq& srq = s->second;
      auto producer = LoadBe32(srq.dbr_addr, srq.progress.dbr);
      if (!producer || ((*producer ^ srq.progress.counter) & prm::kWqCounterMask) == 0)
        return std::nullopt;
      const uint32_t index = srq.progress.head & (srq.wqe_count - 1);
      wqe.resize(srq.stride);
      if (srq.stride < sizeof(prm::pod::mlx5_wqe_srq_next_seg) ||
          !ReadQueue(srq.pas, srq.log_page_bytes, uint64_t{index} * srq.stride, wqe,
                     &srq.progress.ring_page))
        return std::nullopt;
      prm::pod::mlx5_wqe_srq_next_seg next;
      std::memcpy(&next, wqe.data(), sizeof next);
      srq.progress.head = next.next_wqe_index.host();
      ++srq.progress.counter;
      // Fewer posted WQEs left than the armed watermark: the limit event, once; the watermark
      // is cleared until ARM_RQ sets it again.
      prm::Bits srqc(std::span<std::byte>(srq.srqc));
      const uint32_t lwm = static_cast<uint32_t>(srqc.get(prm::srqc::lwm));
      if (lwm != 0 && ((*producer - srq.progress.counter) & prm::kWqCounterMask) < lwm) {
        srqc.set(prm::srqc::lwm, 0);
        QpEvent(*srqn, prm::MLX5_EVENT_TYPE_SRQ_RQ_LIMIT);
      }
      recv.wqe_counter = static_cast<uint16_t>(index);
      recv.pd = srq.pd;
      ParseScatter(wqe, sizeof next, &recv.list);
      return recv;
    }
    if (qp.rq_wqe_count == 0) return std::nullopt;
    auto producer = LoadBe32(qp.dbr_addr + prm::MLX5_RCV_DBR * 4, qp.progress.rq_dbr);
    if (!producer || ((*producer ^ pr.rq_counter) & prm::kWqCounterMask) == 0) return std::nullopt;
    const uint32_t index = pr.rq_counter & (qp.rq_wqe_count - 1);
    wqe.resize(qp.rq_stride);
    recv.wqe_counter = static_cast<uint16_t>(pr.rq_counter & prm::kWqCounterMask);
    recv.pd = qp.pd;
    ++pr.rq_counter;
    if (ReadQueue(qp.pas, qp.log_page_bytes, uint64_t{index} * qp.rq_stride, wqe,
                  &pr.rq_page))
      ParseScatter(wqe, prm::Get(qpc, prm::qpc::wq_signature) ? 16 : 0, &recv.list);
    else
      recv.list.push_back({prm::MLX5_INVALID_LKEY, 0, 0});  // unreadable: fails as a bad key
    return recv;
  };
  // Scatters `data` over the receive WQE: 0, LOCAL_LENGTH_ERR or LOCAL_PROT_ERR.
  // The first `skip` bytes of the WQE's room are passed over unwritten.
  auto scatter = [&](const Receive& recv, std::span<const Bytes> parts,
                     std::size_t skip = 0) -> prm::CqeSyndrome {
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
        const auto key = Admit(e.lkey, e.addr + used, n, kLocalWrite, recv.pd, qpn);
        if (!key || !CopyToKey(*key, e.addr + used, b.first(n)))
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
  };
  auto complete = [&](const Receive& recv, prm::CqeOpcode opcode, uint32_t byte_cnt) {
    CqeFields f;
    f.opcode = opcode;
    f.qpn = qpn;
    f.wqe_counter = recv.wqe_counter;
    f.byte_cnt = byte_cnt;
    f.user_index = user_index;
    f.imm = p.imm;
    // UD: whether a GRH came with it. flags_rqpn [27:24]: on InfiniBand the SL; on RoCE the
    // packet type, bit 3 set for UDP (v2) and [2:0] the L3 header (libmlx5's wc.sl; mlx5_ib's
    // handle_responder in drivers/infiniband/hw/mlx5/cq.c reads [25:24] as the network type).
    const uint32_t type = InfiniBand()            ? p.sl & 0xfu
                          : p.l3 == L3Header::kGrh ? 0u
                                                   : 0x8u | static_cast<uint32_t>(p.l3);
    f.flags_rqpn = (p.src_qpn & 0xffffff) | (qp.st == prm::QP_ST_UD && p.grh ? kCqeGrhPresent : 0) |
                   type << 24;
    f.slid = p.slid;
    f.solicited = p.solicited;
    WriteCqe(rcv_cqn, *rcv_cq, f);
  };
  auto executed = [&]() {
    ++pr.recv_msn;
    ++pr.requests_executed;
  };

  switch (op) {
    case prm::MLX5_OPCODE_SEND:
    case prm::MLX5_OPCODE_SEND_IMM:
    case prm::MLX5_OPCODE_SEND_INVAL: {
      if (qp.st == prm::QP_ST_UD && p.payload.size() > kUdMtu) return;
      auto recv = take_receive();
      if (!recv) {
        nak(NakCode::kRnr);  // UC and UD: the message is dropped
        return;
      }
      if (op == prm::MLX5_OPCODE_SEND_INVAL &&
          !RemoteInvalidate(prm::Be32::FromRaw(p.imm).host(), pd, qpn)) {
        refuse(NakCode::kInvalidRequest, &*recv, prm::MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
        return;
      }
      std::array<std::byte, kGrhBytes> grh;
      std::vector<Bytes> parts;
      // UD: the payload starts 40 bytes in either way; without a GRH those stay unwritten.
      if (qp.st == prm::QP_ST_UD && p.grh) {
        grh = Grh(p);
        parts.push_back(grh);
      }
      parts.push_back(p.payload);
      const std::size_t skip = qp.st == prm::QP_ST_UD && !p.grh ? kGrhBytes : 0;
      if (prm::CqeSyndrome s = scatter(*recv, parts, skip); s != 0) {
        refuse(s == prm::MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR ? NakCode::kInvalidRequest
                                                            : NakCode::kRemoteOperation,
               &*recv, s);
        return;
      }
      executed();
      const prm::CqeOpcode opcode = op == prm::MLX5_OPCODE_SEND       ? prm::MLX5_CQE_RESP_SEND
                                    : op == prm::MLX5_OPCODE_SEND_IMM ? prm::MLX5_CQE_RESP_SEND_IMM
                                                                      : prm::MLX5_CQE_RESP_SEND_INV;
      complete(*recv, opcode,
               static_cast<uint32_t>(p.payload.size() + (qp.st == prm::QP_ST_UD ? kGrhBytes : 0)));
      if (rc) Transmit(answer(PacketKind::kAck));
      return;
    }
    case prm::MLX5_OPCODE_RDMA_WRITE:
    case prm::MLX5_OPCODE_RDMA_WRITE_IMM: {
      // A zero-length write names no memory: its rkey is not checked (IBTA).
      std::optional<AdmittedKey> key;
      if (!p.payload.empty()) key = Admit(p.rkey, p.raddr, p.payload.size(), kRemoteWrite, pd, qpn);
      if (!prm::Get(qpc, prm::qpc::rwe) || (!p.payload.empty() && !key)) {
        if (rc) refuse(NakCode::kRemoteAccess, nullptr, {});
        return;
      }
      std::optional<Receive> recv;
      if (op == prm::MLX5_OPCODE_RDMA_WRITE_IMM) {
        recv = take_receive();
        if (!recv) {
          nak(NakCode::kRnr);
          return;
        }
      }
      if (key && !CopyToKey(*key, p.raddr, p.payload)) {
        if (rc) refuse(NakCode::kRemoteAccess, recv ? &*recv : nullptr,
                       prm::MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
        return;
      }
      executed();
      if (recv) complete(*recv, prm::MLX5_CQE_RESP_WR_IMM, static_cast<uint32_t>(p.payload.size()));
      if (rc) Transmit(answer(PacketKind::kAck));
      return;
    }
    case prm::MLX5_OPCODE_RDMA_READ: {
      Packet r = answer(PacketKind::kReadResponse);
      // A zero-length read names no memory either.
      std::optional<AdmittedKey> key;
      if (p.read_length != 0) key = Admit(p.rkey, p.raddr, p.read_length, kRemoteRead, pd, qpn);
      if (!rc || !prm::Get(qpc, prm::qpc::rre) || (p.read_length != 0 && !key)) {
        refuse(NakCode::kRemoteAccess, nullptr, {});
        return;
      }
      r.payload = TakePayloadBuffer();
      if (key && !AppendFromKey(*key, p.raddr, p.read_length, r.payload)) {
        refuse(NakCode::kRemoteAccess, nullptr, {});
        return;
      }
      executed();
      Transmit(std::move(r));
      return;
    }
    case prm::MLX5_OPCODE_ATOMIC_CS:
    case prm::MLX5_OPCODE_ATOMIC_FA: {
      if (!rc) return;
      if (p.raddr % 8 != 0) {
        refuse(NakCode::kInvalidRequest, nullptr, {});
        return;
      }
      const auto key = Admit(p.rkey, p.raddr, 8, kRemoteAtomic, pd, qpn);
      if (!prm::Get(qpc, prm::qpc::rae) || !key) {
        refuse(NakCode::kRemoteAccess, nullptr, {});
        return;
      }
      const bool big_endian = AtomicsBigEndian();
      auto original = AtomicAtKey(*key, p.raddr, op == prm::MLX5_OPCODE_ATOMIC_CS, p.swap_add,
                                  p.compare, big_endian);
      if (!original) {
        refuse(NakCode::kRemoteAccess, nullptr, {});
        return;
      }
      executed();
      pr.last_atomic_original = *original;
      Packet r = answer(PacketKind::kAtomicResponse);
      r.atomic_original = *original;
      r.atomic_big_endian = big_endian;
      Transmit(std::move(r));
      return;
    }
    default:
      refuse(NakCode::kInvalidRequest, nullptr, {});
      return;
  }
}

bool Engine::FlushRecv(uint32_t qpn, Qp& qp) {
  // SRQ WQEs belong to the SRQ and stay posted; only the QP's own ring is flushed.
  if (qp.srqn || qp.rq_wqe_count == 0) return false;
  QpProgress& pr = qp.progress;
  auto producer = LoadBe32(qp.dbr_addr + prm::MLX5_RCV_DBR * 4, qp.progress.rq_dbr);
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
