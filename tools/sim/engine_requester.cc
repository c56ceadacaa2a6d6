// The requester: send WQEs from the ring to the wire, responses back to CQEs.
//
// A QP in RTS executes the WQEs between its progress counter and the doorbell record's send
// counter, in order. Each WQE is fetched basic block by basic block (block n at (n mod size) *
// 64, so a WQE may wrap), checked (ctrl opcode valid for the QP's transport, qpn, wqe index,
// ds), its local keys checked and its gather list read, and then:
//   NOP                     completes;
//   UMR (bind / invalidate) goes to the firmware's window code (MkeyServices::PostUmrLocked);
//   LOCAL_INVAL             frees the type-2 window it names, bound to this QP;
//   UD and UC messages      go on the wire and complete at once (no acknowledgement);
//   RC messages             go on the wire and wait: an ACK, read or atomic response completes
//                           them, an RNR NAK retries after the responder's timer (rnr_retry
//                           times; 7 forever), silence retries after the ACK timeout
//                           (retry_count times), other NAKs fail them.
// A WQE completes with a CQE when it asked for one (CQ_UPDATE) or when it fails; a failure moves
// the QP to the error state, where the rest of the ring (and of the receive ring) completes
// with WR_FLUSH_ERR, one CQE per WQE.
//
// Error syndromes: a malformed WQE or an opcode the transport does not have LOCAL_QP_OP_ERR; a
// key that does not admit the access LOCAL_PROT_ERR; a message over 2 GiB or an atomic whose
// local buffer is not 8 bytes LOCAL_LENGTH_ERR; NAKs REMOTE_ACCESS_ERR, REMOTE_INVAL_REQ_ERR,
// REMOTE_OP_ERR; retries exhausted RNR_RETRY_EXC_ERR / TRANSPORT_RETRY_EXC_ERR.
#include <algorithm>
#include <cstring>

#include "tools/sim/engine.h"
#include "tools/sim/engine_transport.h"
#include "uapi/prm/cqe.h"
#include "uapi/prm/doorbell_record.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/qp.h"
#include "uapi/prm/recv_wqe.h"
#include "uapi/prm/send_wqe.h"

namespace onchip::sim {

namespace {

using Bytes = std::span<const std::byte>;

constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 31;

template <class T>
T Load(Bytes b, std::size_t offset) {
  T v;
  std::memcpy(&v, b.data() + offset, sizeof v);
  return v;
}

bool OpcodeAllowed(uint8_t st, uint8_t opcode) {
  // The kernel's REG_UMR QP registers memory: it posts UMRs (and NOPs), never a message.
  if (st == prm::QP_ST_REG_UMR) return opcode == prm::MLX5_OPCODE_UMR || opcode == prm::MLX5_OPCODE_NOP;
  // The XRC initiator sends what an RC QP sends.
  if (st == prm::QP_ST_XRC) st = prm::QP_ST_RC;
  switch (opcode) {
    case prm::MLX5_OPCODE_NOP:
    case prm::MLX5_OPCODE_SEND:
    case prm::MLX5_OPCODE_SEND_IMM:
      return st == prm::QP_ST_RC || st == prm::QP_ST_UC || st == prm::QP_ST_UD;
    case prm::MLX5_OPCODE_SEND_INVAL:
    case prm::MLX5_OPCODE_RDMA_WRITE:
    case prm::MLX5_OPCODE_RDMA_WRITE_IMM:
    case prm::MLX5_OPCODE_UMR:
    case prm::MLX5_OPCODE_LOCAL_INVAL:
      return st == prm::QP_ST_RC || st == prm::QP_ST_UC;
    case prm::MLX5_OPCODE_RDMA_READ:
    case prm::MLX5_OPCODE_ATOMIC_CS:
    case prm::MLX5_OPCODE_ATOMIC_FA:
      return st == prm::QP_ST_RC;
    default:
      return false;
  }
}

// One entry of a gather or scatter list: inline bytes or a keyed range.
// Trivial (no member initializers, a pointer for the inline bytes): a GatherList's unused
// entries stay unwritten. ParseList makes each entry whole; for inline data `length` counts
// the bytes at `inline_data`.
struct ListEntry {
  bool is_inline;
  const std::byte* inline_data;
  uint32_t lkey;
  uint64_t addr;
  uint32_t length;
  Bytes inline_bytes() const { return Bytes(inline_data, length); }
};

// A WQE's gather or scatter list, held where it is parsed: ds is 6 bits, so after the ctrl
// segment at most 62 entries of 16 bytes or more fit, and parsing allocates nothing.
class GatherList {
 public:
  static constexpr std::size_t kMaxEntries = 62;
  void push_back(const ListEntry& e) { entries_[size_++] = e; }
  bool full() const { return size_ == kMaxEntries; }
  std::size_t size() const { return size_; }
  const ListEntry& operator[](std::size_t i) const { return entries_[i]; }
  const ListEntry* begin() const { return entries_.data(); }
  const ListEntry* end() const { return entries_.data() + size_; }

 private:
  std::array<ListEntry, kMaxEntries> entries_;
  std::size_t size_ = 0;
};

// The data segments from `offset` to the end of the WQE's ds units. False if one is cut short.
bool ParseList(Bytes wqe, std::size_t offset, GatherList* out) {
  while (offset < wqe.size()) {
    if (wqe.size() - offset < 4 || out->full()) return false;
    const uint32_t bc = Load<prm::Be32>(wqe, offset).host();
    if (bc & prm::MLX5_INLINE_SEG) {
      const uint32_t n = bc & ~prm::MLX5_INLINE_SEG;
      if (n > wqe.size() - offset - 4) return false;
      out->push_back({.is_inline = true, .inline_data = wqe.data() + offset + 4, .lkey = 0,
                      .addr = 0, .length = n});
      offset += (4 + n + 15) / 16 * 16;
      continue;
    }
    if (wqe.size() - offset < sizeof(prm::pod::mlx5_wqe_data_seg)) return false;
    const auto seg = Load<prm::pod::mlx5_wqe_data_seg>(wqe, offset);
    // Zero-length entries carry nothing (libmlx5 never writes them).
    if (bc != 0)
      out->push_back({.is_inline = false, .inline_data = nullptr, .lkey = seg.lkey.host(),
                      .addr = seg.addr.host(), .length = bc});
    offset += sizeof seg;
  }
  return true;
}

// Local ACK timeout: 4.096 us << ack_timeout; 0 waits forever (IBTA). Never below 10 ms here:
// a response crosses engines that share two cores with everything else.
uint64_t AckTimeoutNs(uint32_t ack_timeout) {
  if (ack_timeout == 0) return 0;
  const uint64_t ns = ack_timeout >= 31 ? uint64_t{1} << 43 : uint64_t{4096} << ack_timeout;
  return std::max<uint64_t>(ns, 10'000'000);
}

// A send WQE as the engine fetched it, in a buffer of the largest size a WQE can have (ds is 6
// bits: at most 63 units of 16 bytes, 16 basic blocks): fetching allocates nothing.
class FetchedWqe {
 public:
  static constexpr std::size_t kMaxBytes = 16 * prm::MLX5_SEND_WQE_BB;
  Bytes bytes() const { return Bytes(data_).first(size_); }
  bool empty() const { return size_ == 0; }
  std::span<std::byte> buffer() { return data_; }
  void set_size(std::size_t n) { size_ = n; }

 private:
  std::array<std::byte, kMaxBytes> data_;
  std::size_t size_ = 0;
};

}  // namespace

// The WQE at basic block `counter`: its ds units, or nothing when a block is unreadable or ds is
// 0 or longer than the ring.
// `read(offset, out)` reads bytes of the QP's buffer (false if they are not mapped).
template <class Read>
static FetchedWqe FetchSendWqe(const Read& read, const Qp& qp, uint32_t counter) {
  FetchedWqe wqe;
  const std::span<std::byte> buf = wqe.buffer();
  const uint32_t mask = qp.sq_wqebb_count - 1;
  const auto block = [&](uint32_t i) {
    return buf.subspan(std::size_t{i} * prm::MLX5_SEND_WQE_BB, prm::MLX5_SEND_WQE_BB);
  };
  if (!read(qp.sq_offset + uint64_t{counter & mask} * prm::MLX5_SEND_WQE_BB, block(0))) return wqe;
  const uint32_t ds = prm::DsOf(Load<prm::Be32>(Bytes(buf), 4).host());
  const uint32_t bbs = (ds * prm::MLX5_SEND_WQE_DS + prm::MLX5_SEND_WQE_BB - 1) / prm::MLX5_SEND_WQE_BB;
  if (ds == 0 || bbs > qp.sq_wqebb_count) return wqe;
  for (uint32_t i = 1; i < bbs; ++i)
    if (!read(qp.sq_offset + uint64_t{(counter + i) & mask} * prm::MLX5_SEND_WQE_BB, block(i)))
      return wqe;
  wqe.set_size(std::size_t{ds} * prm::MLX5_SEND_WQE_DS);
  return wqe;
}

std::optional<bool> Engine::AwaitResponse(uint32_t qpn, const Qp& qp, QpProgress& pr, uint64_t now,
                                          uint64_t* deadline) {
  if (pr.resend_at_ns == 0 || now < pr.resend_at_ns) {
    if (pr.resend_at_ns != 0 && (*deadline == 0 || pr.resend_at_ns < *deadline))
      *deadline = pr.resend_at_ns;
    return false;
  }
  // Time to send the WQE again: after an RNR wait, or after silence.
  if (!pr.rnr_wait) {
    if (pr.retry_left == 0) {
      CompleteSend(qpn, qp, pr, prm::MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, 0, 0);
      return true;
    }
    --pr.retry_left;
  }
  pr.awaiting = false;
  pr.rnr_wait = false;
  pr.resend_at_ns = 0;
  return std::nullopt;
}

// The steps, in order: CheckSendWqe, ExecuteLocalWqe (NOP, UMR, LOCAL_INVAL), BuildRequest,
// GatherRequest, SendRequest; a failing one completes the WQE with its syndrome.
// Out of line: the WQE's buffers (a fetched WQE, a gather list, the packet) take kilobytes of
// stack, which the many SendSteps that find nothing posted should not set up.
[[gnu::noinline]] bool Engine::ExecuteSendWqe(uint32_t qpn, const Qp& qp, QpProgress& pr,
                                              const RequesterContext& ctx, uint64_t now,
                                              uint64_t* deadline) {
  auto read = [&](uint64_t offset, std::span<std::byte> out) {
    return ReadQueue(qp.pas, qp.log_page_bytes, offset, out, &pr.sq_page);
  };
  const FetchedWqe fetched = FetchSendWqe(read, qp, pr.sq_wqe_counter);
  const Bytes wqe = fetched.bytes();
  auto fail = [&](prm::CqeSyndrome s) {
    CompleteSend(qpn, qp, pr, s, 0, 0);
    return true;
  };
  if (const prm::CqeSyndrome s = CheckSendWqe(qpn, qp, pr, wqe); s != 0) return fail(s);
  if (ExecuteLocalWqe(qpn, qp, pr, wqe)) return true;
  // The message: its segments by opcode, then the gather or scatter list.
  Packet p;
  const std::optional<std::size_t> list_offset = BuildRequest(qpn, qp, pr, ctx, wqe, p);
  if (!list_offset) return fail(prm::MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
  if (const prm::CqeSyndrome s = GatherRequest(qpn, qp, pr, wqe, *list_offset, p); s != 0)
    return fail(s);
  SendRequest(qpn, qp, pr, ctx, std::move(p), now, deadline);
  return true;
}

prm::CqeSyndrome Engine::CheckSendWqe(uint32_t qpn, const Qp& qp, QpProgress& pr, Bytes wqe) {
  pr.wqe_bbs = 1;
  pr.wqe_opcode = 0;
  pr.wqe_signaled = false;
  pr.wqe_bytes = 0;
  // Nothing readable, or ds 0: the device cannot tell what was meant.
  if (wqe.empty()) return prm::MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
  const auto ctrl = Load<prm::pod::mlx5_wqe_ctrl_seg>(wqe, 0);
  const uint32_t opmod_idx_opcode = ctrl.opmod_idx_opcode.host();
  const uint8_t opcode = prm::OpcodeOf(opmod_idx_opcode);
  pr.wqe_opcode = opcode;
  pr.wqe_bbs = static_cast<uint8_t>((wqe.size() + prm::MLX5_SEND_WQE_BB - 1) / prm::MLX5_SEND_WQE_BB);
  pr.wqe_signaled = (ctrl.fm_ce_se & prm::MLX5_WQE_CTRL_CQ_UPDATE) != 0;
  if (!OpcodeAllowed(qp.st, opcode) || prm::QpnOf(ctrl.qpn_ds.host()) != qpn ||
      prm::WqeIndexOf(opmod_idx_opcode) != (pr.sq_wqe_counter & prm::kWqCounterMask))
    return prm::MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
  return {};
}

bool Engine::ExecuteLocalWqe(uint32_t qpn, const Qp& qp, QpProgress& pr, Bytes wqe) {
  const auto ctrl = Load<prm::pod::mlx5_wqe_ctrl_seg>(wqe, 0);
  switch (pr.wqe_opcode) {
    case prm::MLX5_OPCODE_NOP:
      CompleteSend(qpn, qp, pr, {}, 0, 0);
      return true;
    case prm::MLX5_OPCODE_UMR: {
      const UmrResult r = mkeys_.PostUmrLocked(
          {.wqe = wqe, .qpn = qpn, .pd = qp.pd, .reg_umr = qp.st == prm::QP_ST_REG_UMR});
      CompleteSend(qpn, qp, pr, r.syndrome, static_cast<uint8_t>(r.check), 0);
      return true;
    }
    case prm::MLX5_OPCODE_LOCAL_INVAL:
      if (!RemoteInvalidate(ctrl.imm.host(), qp.pd, qpn))
        CompleteSend(qpn, qp, pr, prm::MLX5_CQE_SYNDROME_MW_BIND_ERR, 0, 0);
      else
        CompleteSend(qpn, qp, pr, {}, 0, 0);
      return true;
    default:
      return false;
  }
}

std::optional<std::size_t> Engine::BuildRequest(uint32_t qpn, const Qp& qp, const QpProgress& pr,
                                                const RequesterContext& ctx, Bytes wqe,
                                                Packet& p) const {
  const auto ctrl = Load<prm::pod::mlx5_wqe_ctrl_seg>(wqe, 0);
  const uint8_t opcode = pr.wqe_opcode;
  p.kind = PacketKind::kRequest;
  p.transport = qp.st;
  p.src_qpn = qpn;
  p.opcode = opcode;
  p.solicited = (ctrl.fm_ce_se & prm::MLX5_WQE_CTRL_SOLICITED) != 0;
  p.imm = ctrl.imm.raw();
  std::size_t offset = sizeof ctrl;
  if (qp.st == prm::QP_ST_XRC) {
    // The XRC segment: which XRC SRQ of the target's domain the message is for.
    if (wqe.size() < offset + sizeof(prm::pod::mlx5_wqe_xrc_seg)) return std::nullopt;
    const auto xrc = Load<prm::pod::mlx5_wqe_xrc_seg>(wqe, offset);
    offset += sizeof xrc;
    p.xrc_srqn = xrc.xrc_srqn.host() & 0xffffff;
  }
  if (qp.st == prm::QP_ST_UD) {
    if (wqe.size() < offset + sizeof(prm::pod::mlx5_wqe_av)) return std::nullopt;
    AddressFromAv(qp, Load<prm::pod::mlx5_wqe_av>(wqe, offset), p);
    offset += sizeof(prm::pod::mlx5_wqe_av);
  } else {
    // The connected QP's primary path, decoded from its context (RequesterContext).
    p.dst_qpn = ctx.remote_qpn;
    p.dgid = ctx.rgid;
    p.sgid = ctx.sgid;
    p.l3 = ctx.l3;
    p.tclass = ctx.tclass;
    p.hop_limit = ctx.hop_limit;
    p.flow_label = ctx.flow_label;
    p.grh = ctx.grh;
    p.dlid = ctx.rlid;
    p.sl = ctx.sl;
    p.psn = (ctx.next_send_psn + pr.send_msn) & 0xffffff;
  }
  const bool atomic = opcode == prm::MLX5_OPCODE_ATOMIC_CS || opcode == prm::MLX5_OPCODE_ATOMIC_FA;
  const bool remote_op = opcode == prm::MLX5_OPCODE_RDMA_WRITE ||
                         opcode == prm::MLX5_OPCODE_RDMA_WRITE_IMM ||
                         opcode == prm::MLX5_OPCODE_RDMA_READ || atomic;
  if (remote_op) {
    if (wqe.size() < offset + sizeof(prm::pod::mlx5_wqe_raddr_seg)) return std::nullopt;
    const auto raddr = Load<prm::pod::mlx5_wqe_raddr_seg>(wqe, offset);
    offset += sizeof raddr;
    p.raddr = raddr.raddr.host();
    p.rkey = raddr.rkey.host();
  }
  if (atomic) {
    if (wqe.size() < offset + sizeof(prm::pod::mlx5_wqe_atomic_seg)) return std::nullopt;
    const auto a = Load<prm::pod::mlx5_wqe_atomic_seg>(wqe, offset);
    offset += sizeof a;
    p.swap_add = a.swap_add.host();
    p.compare = a.compare.host();
  }
  return offset;
}

void Engine::AddressFromAv(const Qp& qp, const prm::pod::mlx5_wqe_av& av, Packet& p) const {
  const uint32_t qkey = av.key.qkey.qkey.host();
  // A Q_Key with bit 31 set means the QP's own (IBTA).
  p.qkey = (qkey & 0x80000000u) ? static_cast<uint32_t>(prm::Get(Bytes(qp.qpc), prm::qpc::q_key))
                                : qkey;
  p.dst_qpn = av.dqp_dct.host() & 0xffffff;
  std::memcpy(p.dgid.data(), av.rgid, p.dgid.size());
  const uint32_t gid_fl = av.grh_gid_fl.host();
  // InfiniBand: the AV's GRH bit (30) says whether a GRH goes out; without it the rlid is the
  // address. RoCE always sends one (libmlx5 leaves the bit clear there).
  p.grh = !InfiniBand() || (gid_fl & (1u << 30)) != 0;
  p.dlid = av.rlid.host();
  p.sl = InfiniBand() ? av.stat_rate_sl & 0xf : 0;  // RoCE: [3:1] is the Ethernet priority
  p.sgid = SourceGid((gid_fl >> 20) & 0xff);
  p.l3 = SourceL3((gid_fl >> 20) & 0xff);
  p.flow_label = gid_fl & 0xfffff;
  p.tclass = av.tclass;
  p.hop_limit = av.hop_limit;
}

prm::CqeSyndrome Engine::GatherRequest(uint32_t qpn, const Qp& qp, QpProgress& pr, Bytes wqe,
                                       std::size_t offset, Packet& p) {
  GatherList list;
  if (!ParseList(wqe, offset, &list)) return prm::MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
  uint64_t total = 0;
  for (const ListEntry& e : list) total += e.length;
  if (total > kMaxMessageBytes) return prm::MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
  const bool atomic =
      p.opcode == prm::MLX5_OPCODE_ATOMIC_CS || p.opcode == prm::MLX5_OPCODE_ATOMIC_FA;
  if (p.opcode == prm::MLX5_OPCODE_RDMA_READ || atomic) {
    // The list is where the response lands: local write on every entry, no inline data.
    for (const ListEntry& e : list)
      if (e.is_inline || !Admit(e.lkey, e.addr, e.length, kLocalWrite, qp.pd, qpn))
        return prm::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
    if (atomic && (list.size() != 1 || list[0].length != 8))
      return prm::MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
    p.read_length = static_cast<uint32_t>(total);
  } else {
    // The payload grows one entry at a time, each only after its key and its memory proved
    // good, so a garbage length costs no memory.
    p.payload = TakePayloadBuffer();
    for (const ListEntry& e : list) {
      if (e.is_inline) {
        p.payload.insert(p.payload.end(), e.inline_bytes().begin(), e.inline_bytes().end());
        continue;
      }
      const auto key = Admit(e.lkey, e.addr, e.length, kLocalRead, qp.pd, qpn);
      if (!key || !AppendFromKey(*key, e.addr, e.length, p.payload, &pr.gather_page))
        return prm::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
    }
  }
  pr.wqe_bytes = static_cast<uint32_t>(total);
  return {};
}

void Engine::SendRequest(uint32_t qpn, const Qp& qp, QpProgress& pr, const RequesterContext& ctx,
                         Packet&& p, uint64_t now, uint64_t* deadline) {
  Transmit(std::move(p));
  ++pr.requests_sent;
  if (!Reliable(qp.st)) {
    CompleteSend(qpn, qp, pr, {}, 0, pr.wqe_bytes);
    return;
  }
  if (!pr.retries_loaded) {
    pr.rnr_left = ctx.rnr_retry;
    pr.retry_left = ctx.retry_count;
    pr.retries_loaded = true;
  }
  pr.awaiting = true;
  pr.rnr_wait = false;
  pr.resend_at_ns = ctx.ack_timeout_ns ? now + ctx.ack_timeout_ns : 0;
  if (pr.resend_at_ns && (*deadline == 0 || pr.resend_at_ns < *deadline)) *deadline = pr.resend_at_ns;
}

Engine::RequesterContext Engine::DecodeRequesterContext(const Qp& qp) const {
  const Bytes qpc(qp.qpc);
  const auto path = prm::qpc::primary_address_path;
  RequesterContext c;
  c.remote_qpn = static_cast<uint32_t>(prm::Get(qpc, prm::qpc::remote_qpn));
  c.next_send_psn = static_cast<uint32_t>(prm::Get(qpc, prm::qpc::next_send_psn));
  // The remote GID's 16 bytes lie in the context in wire order: one copy.
  using Rgid = decltype(path.rgid_rip);
  static_assert(Rgid::element_width == 8 && Rgid::count == 16 && Rgid::bit_offset % 8 == 0);
  std::memcpy(c.rgid.data(), qpc.data() + Rgid::bit_offset / 8, c.rgid.size());
  c.sgid = SourceGid(prm::Get(qpc, path.src_addr_index));
  c.l3 = SourceL3(prm::Get(qpc, path.src_addr_index));
  c.tclass = static_cast<uint8_t>(prm::Get(qpc, path.tclass));
  c.hop_limit = static_cast<uint8_t>(prm::Get(qpc, path.hop_limit));
  c.flow_label = static_cast<uint32_t>(prm::Get(qpc, path.flow_label));
  // InfiniBand: the path's GRH bit says whether a GRH goes out (as the UD AV's does); RoCE
  // always sends one.
  c.grh = !InfiniBand() || prm::Get(qpc, path.grh) != 0;
  c.rlid = static_cast<uint16_t>(prm::Get(qpc, path.rlid));
  c.sl = InfiniBand() ? static_cast<uint8_t>(prm::Get(qpc, path.sl)) : 0;
  c.rnr_retry = static_cast<uint8_t>(prm::Get(qpc, prm::qpc::rnr_retry));
  c.retry_count = static_cast<uint8_t>(prm::Get(qpc, prm::qpc::retry_count));
  c.ack_timeout_ns = AckTimeoutNs(static_cast<uint32_t>(prm::Get(qpc, path.ack_timeout)));
  return c;
}

Gid Engine::SourceGid(uint64_t index) const {
  return index < gids_.size() ? gids_[index] : Gid{};
}

L3Header Engine::SourceL3(uint64_t index) const {
  return index < l3_.size() ? l3_[index] : L3Header::kGrh;
}

bool Engine::OwnGid(const Gid& gid) const {
  // Two 8-byte compares per GID: this runs for every packet the device sends.
  const GidWords want(gid);
  for (const Gid& own : own_gids_)
    if (GidWords(own) == want) return true;
  return false;
}

void Engine::Transmit(Packet&& p) {
  if (!ctx_.link_up()) return;  // lost on a down link: RC notices by its ACK timeout
  p.slid = config_.lid;
  // InfiniBand without a GRH goes by DLID, everything else by DGID. This port's own address: it
  // arrives once the step returns.
  if (p.grh ? OwnGid(p.dgid) : p.dlid == config_.lid) {
    looped_.push_back(std::move(p));
    return;
  }
  // A response leaving the device takes an empty buffer of this engine's spares back to the
  // requester, which keeps it for its next message: messages between two devices then neither
  // allocate at the requester nor free at the responder, one by one.
  if (p.kind != PacketKind::kRequest && p.payload.capacity() == 0) p.payload = TakePayloadBuffer();
  // No port at the address: the packet is lost (RC notices by its ACK timeout).
  if (p.grh)
    Fabric::Instance().Deliver(p.dgid, std::move(p));
  else
    Fabric::Instance().DeliverToLid(p.dlid, std::move(p));
}

void Engine::HandleResponse(Packet& p) {
  const Qp* found = ctx_.FindQp(p.dst_qpn);
  if (found == nullptr) return;
  const uint32_t qpn = p.dst_qpn;
  const Qp& qp = *found;
  QpProgress& pr = state_.qp(qpn);
  const Bytes qpc(qp.qpc);
  const uint32_t psn = (static_cast<uint32_t>(prm::Get(qpc, prm::qpc::next_send_psn)) + pr.send_msn) & 0xffffff;
  // Only the answer to the message in flight counts; a late answer to a resent one does not.
  if (!Reliable(qp.st) || qp.state != prm::QP_STATE_RTS || !pr.awaiting || pr.rnr_wait ||
      p.psn != psn || p.src_qpn != prm::Get(qpc, prm::qpc::remote_qpn))
    return;
  switch (p.kind) {
    case PacketKind::kAck:
      ++pr.send_msn;
      CompleteSend(qpn, qp, pr, {}, 0, pr.wqe_bytes);
      return;
    case PacketKind::kNak:
      switch (p.nak) {
        case NakCode::kRnr:
          if (pr.rnr_left == 0) {
            CompleteSend(qpn, qp, pr, prm::MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR, 0, 0);
            return;
          }
          if (pr.rnr_left != kRnrRetryForever) --pr.rnr_left;
          pr.rnr_wait = true;
          // The wait starts now, not at the pass's clock reading: an RNR timer may be as short
          // as 10 us, and a retry sent early would spend one of rnr_retry's tries.
          pr.resend_at_ns = clock_.FastNowNs() + RnrTimerNs(p.rnr_timer);
          return;
        case NakCode::kRemoteAccess:
          CompleteSend(qpn, qp, pr, prm::MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, 0, 0);
          return;
        case NakCode::kInvalidRequest:
          CompleteSend(qpn, qp, pr, prm::MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, 0, 0);
          return;
        case NakCode::kRemoteOperation:
          CompleteSend(qpn, qp, pr, prm::MLX5_CQE_SYNDROME_REMOTE_OP_ERR, 0, 0);
          return;
      }
      return;
    case PacketKind::kReadResponse:
    case PacketKind::kAtomicResponse:
      LandResponse(qpn, qp, p);
      return;
    case PacketKind::kRequest:
      return;
  }
}

// A read or atomic response: its data lands where the WQE's scatter list says.
void Engine::LandResponse(uint32_t qpn, const Qp& qp, const Packet& p) {
  QpProgress& pr = state_.qp(qpn);
  auto read = [&](uint64_t offset, std::span<std::byte> out) {
    return ReadQueue(qp.pas, qp.log_page_bytes, offset, out, &pr.sq_page);
  };
  const FetchedWqe fetched = FetchSendWqe(read, qp, pr.sq_wqe_counter);
  const Bytes wqe = fetched.bytes();
  std::size_t offset = sizeof(prm::pod::mlx5_wqe_ctrl_seg) + sizeof(prm::pod::mlx5_wqe_raddr_seg);
  if (qp.st == prm::QP_ST_XRC) offset += sizeof(prm::pod::mlx5_wqe_xrc_seg);
  if (p.kind == PacketKind::kAtomicResponse) offset += sizeof(prm::pod::mlx5_wqe_atomic_seg);
  GatherList list;
  if (wqe.size() < offset || !ParseList(wqe, offset, &list)) {
    CompleteSend(qpn, qp, pr, prm::MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, 0, 0);
    return;
  }
  // The value before, in the byte order the responder's memory holds it.
  const uint64_t value = p.atomic_big_endian ? prm::Be64::FromHost(p.atomic_original).raw()
                                             : p.atomic_original;
  std::vector<std::byte> original(8);
  std::memcpy(original.data(), &value, 8);
  const Bytes data = p.kind == PacketKind::kAtomicResponse ? Bytes(original) : Bytes(p.payload);
  std::size_t done = 0;
  for (const ListEntry& e : list) {
    const std::size_t n = std::min<std::size_t>(e.length, data.size() - done);
    // The key was checked when the request left; it may have changed since.
    const auto key = e.is_inline ? std::nullopt : Admit(e.lkey, e.addr, n, kLocalWrite, qp.pd, qpn);
    if (!key || !CopyToKey(*key, e.addr, data.subspan(done, n))) {
      CompleteSend(qpn, qp, pr, prm::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, 0, 0);
      return;
    }
    done += n;
  }
  ++pr.send_msn;
  CompleteSend(qpn, qp, pr, {}, 0, static_cast<uint32_t>(data.size()));
}

void Engine::CompleteSend(uint32_t qpn, const Qp& qp, QpProgress& pr, prm::CqeSyndrome syndrome,
                          uint8_t vendor, uint32_t byte_cnt) {
  const bool error = syndrome != 0;
  if (error || pr.wqe_signaled) {
    CqeFields f;
    f.opcode = error ? prm::MLX5_CQE_REQ_ERR : prm::MLX5_CQE_REQ;
    f.qpn = qpn;
    f.wqe_opcode = pr.wqe_opcode;
    f.wqe_counter = static_cast<uint16_t>(pr.sq_wqe_counter);
    f.byte_cnt = byte_cnt;
    f.user_index = static_cast<uint32_t>(prm::Get(Bytes(qp.qpc), prm::qpc::user_index));
    f.syndrome = syndrome;
    f.vendor = vendor;
    // A QP with a send queue is no XRC target: cq_snd is its CQ.
    WriteCqe(qp.cqn_snd, *qp.cq_snd, f);
  }
  pr.sq_wqe_counter = (pr.sq_wqe_counter + std::max<uint32_t>(pr.wqe_bbs, 1)) & prm::kWqCounterMask;
  pr.awaiting = false;
  pr.rnr_wait = false;
  pr.retries_loaded = false;
  pr.resend_at_ns = 0;
  if (error) MoveToError(qpn);
}

bool Engine::FlushSend(uint32_t qpn, const Qp& qp) {
  QpProgress& pr = state_.qp(qpn);
  if (qp.sq_wqebb_count == 0) return false;
  auto producer = LoadBe32(qp.dbr_addr + prm::MLX5_SND_DBR * 4, pr.sq_dbr);
  if (!producer) return false;
  bool moved = false;
  auto read = [&](uint64_t offset, std::span<std::byte> out) {
    return ReadQueue(qp.pas, qp.log_page_bytes, offset, out, &pr.sq_page);
  };
  // At most one ring's worth per pass: a garbage counter cannot keep the engine here.
  for (uint32_t n = 0; n < qp.sq_wqebb_count && ((*producer ^ pr.sq_wqe_counter) & prm::kWqCounterMask) != 0; ++n) {
    const FetchedWqe fetched = FetchSendWqe(read, qp, pr.sq_wqe_counter);
    const Bytes wqe = fetched.bytes();
    CqeFields f;
    f.opcode = prm::MLX5_CQE_REQ_ERR;
    f.qpn = qpn;
    f.wqe_counter = static_cast<uint16_t>(pr.sq_wqe_counter);
    f.user_index = static_cast<uint32_t>(prm::Get(Bytes(qp.qpc), prm::qpc::user_index));
    f.syndrome = prm::MLX5_CQE_SYNDROME_WR_FLUSH_ERR;
    uint32_t bbs = 1;
    if (!wqe.empty()) {
      f.wqe_opcode = prm::OpcodeOf(Load<prm::Be32>(wqe, 0).host());
      bbs = static_cast<uint32_t>((wqe.size() + prm::MLX5_SEND_WQE_BB - 1) / prm::MLX5_SEND_WQE_BB);
    }
    WriteCqe(qp.cqn_snd, *qp.cq_snd, f);  // a QP with a send queue: as in CompleteSend
    pr.sq_wqe_counter = (pr.sq_wqe_counter + bbs) & prm::kWqCounterMask;
    moved = true;
  }
  // A producer counter still ahead after a whole ring was flushed names WQEs that were never
  // posted (software may not run more than a ring ahead): the device catches up to it instead
  // of flushing garbage for up to 64K passes.
  if (moved && ((*producer ^ pr.sq_wqe_counter) & prm::kWqCounterMask) != 0 &&
      ((*producer - pr.sq_wqe_counter) & prm::kWqCounterMask) >= qp.sq_wqebb_count)
    pr.sq_wqe_counter = *producer & prm::kWqCounterMask;
  return moved;
}

}  // namespace onchip::sim
