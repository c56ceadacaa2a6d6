#include "driver/rings/send_queue.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <new>
#include <span>

#include "driver/rings/data_path_ah.h"
#include "driver/rings/umr_wqe.h"
#include "driver/rings/wqe_budget.h"
#include "driver/rings/wqe_segment.h"
#include "log/missing.h"
#include "mmio/barriers.h"
#include "mmio/device_word.h"
#include "mmio/wc_copy.h"

namespace onchip::driver::rings {
namespace {

using prm::Be32;
using prm::Be64;
namespace pod = prm::pod;

constexpr uint32_t kBb = prm::MLX5_SEND_WQE_BB;
constexpr uint32_t kDs = prm::MLX5_SEND_WQE_DS;
constexpr uint32_t kAtomicBytes = 8;

constexpr uint32_t AlignUp(uint32_t n, uint32_t to) { return (n + to - 1) / to * to; }

// UD's address vector at `at` (48 bytes, inside one basic block): the AH's, with the remote QP
// and Q_Key of this request.
void WriteDatagram(std::byte* at, const ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey) {
  auto* av = reinterpret_cast<pod::mlx5_wqe_av*>(at);
  std::memcpy(av, &DataPathAh::From(ah)->av, sizeof(*av));
  av->dqp_dct = Be32::FromHost(prm::MLX5_EXTENDED_UD_AV | (remote_qpn & 0xffffff));
  av->key.qkey.qkey = Be32::FromHost(remote_qkey);
}

bool IsAtomic(uint8_t opcode) {
  return opcode == prm::MLX5_OPCODE_ATOMIC_CS || opcode == prm::MLX5_OPCODE_ATOMIC_FA;
}

// The verbs opcodes libmlx5 posts, with the mlx5 opcode and the requester completion's opcode,
// indexed by the raw ibv_wr_opcode value. Beyond the table libmlx5 posts none: TSO (raw packet
// QPs only), DRIVER1, ATOMIC_WRITE and the rest.
struct OpcodeMap {
  uint8_t mlx5;
  ibv_wc_opcode wc;
};
static_assert(IBV_WR_RDMA_WRITE == 0 && IBV_WR_SEND_WITH_INV == 9);
constexpr OpcodeMap kOpcodes[] = {
    /* RDMA_WRITE */ {prm::MLX5_OPCODE_RDMA_WRITE, IBV_WC_RDMA_WRITE},
    /* RDMA_WRITE_WITH_IMM */ {prm::MLX5_OPCODE_RDMA_WRITE_IMM, IBV_WC_RDMA_WRITE},
    /* SEND */ {prm::MLX5_OPCODE_SEND, IBV_WC_SEND},
    /* SEND_WITH_IMM */ {prm::MLX5_OPCODE_SEND_IMM, IBV_WC_SEND},
    /* RDMA_READ */ {prm::MLX5_OPCODE_RDMA_READ, IBV_WC_RDMA_READ},
    /* ATOMIC_CMP_AND_SWP */ {prm::MLX5_OPCODE_ATOMIC_CS, IBV_WC_COMP_SWAP},
    /* ATOMIC_FETCH_AND_ADD */ {prm::MLX5_OPCODE_ATOMIC_FA, IBV_WC_FETCH_ADD},
    /* LOCAL_INV */ {prm::MLX5_OPCODE_UMR, IBV_WC_LOCAL_INV},
    /* BIND_MW */ {prm::MLX5_OPCODE_UMR, IBV_WC_BIND_MW},
    /* SEND_WITH_INV */ {prm::MLX5_OPCODE_SEND_INVAL, IBV_WC_SEND},
};
constexpr uint32_t kOpcodeCount = sizeof(kOpcodes) / sizeof(kOpcodes[0]);

// A post reads the opcode as its raw 32-bit value: an application may pass any number, and only
// below kOpcodeCount is it one of the enum's.
static_assert(sizeof(ibv_wr_opcode) == sizeof(uint32_t));

}  // namespace

Result<void> SendQueue::Init(const SendQueueDesc& d) {
  if (d.ring == nullptr || d.db_counter == nullptr || d.bf == nullptr || d.bus == nullptr)
    return Fail(EINVAL, "send queue: ring, doorbell record, bfreg and bus are required");
  if (d.bf->blueflame && d.bf->line64 == nullptr)
    return Fail(EINVAL, "send queue: a BlueFlame register needs its copy kernel (line64)");
  if (d.wqe_cnt == 0 || !std::has_single_bit(d.wqe_cnt))
    return Fail(EINVAL, "send queue: WQE basic blocks must be a power of two");
  if (d.max_post == 0 || d.max_post > d.wqe_cnt)
    return Fail(EINVAL, "send queue: max_post must be 1..wqe_cnt");

  // The largest WQE this queue can build: the budget create_qp sized the ring by (a UMR counts
  // only where the budget says a transport binds).
  const uint64_t worst = SendWqeBytes({.transport = d.transport,
                                       .umr = d.umr,
                                       .max_send_sge = d.max_send_sge,
                                       .max_inline_data = d.max_inline_data});
  if (worst / kDs > prm::kWqeDsMask)
    return Fail(EINVAL, "send queue: the largest WQE exceeds 63 units of 16 bytes");
  worst_bbs_ = static_cast<uint32_t>(worst / kBb);
  if (worst_bbs_ > d.wqe_cnt) return Fail(EINVAL, "send queue: the ring holds no largest WQE");

  slots_.reset(new (std::nothrow) SendSlot[d.wqe_cnt]);
  if (!slots_) return Fail(ENOMEM, "send queue: slot bookkeeping");

  ring_ = d.ring;
  qend_ = d.ring + std::size_t{d.wqe_cnt} * kBb;
  wqe_cnt_ = d.wqe_cnt;
  max_post_ = d.max_post;
  db_counter_ = d.db_counter;
  bf_ = d.bf;
  bus_ = d.bus;
  qpn_ = d.qpn;
  transport_ = d.transport;
  max_inline_ = d.max_inline_data;
  max_sge_ = d.max_send_sge;
  state_max_gs_ = static_cast<int>(d.max_send_sge);
  sig_bits_ = d.sq_sig_all ? prm::MLX5_WQE_CTRL_CQ_UPDATE : 0;
  atomics_ = d.atomics;
  umr_ = d.umr;
  lock_.set_locked(d.locked);
  // The mlx5 opcodes this queue posts, from the same rules that refuse the others (CheckOpcode),
  // so that a post tests one bit.
  mlx5_postable_ = 0;
  for (uint32_t opcode = 0; opcode < 64; ++opcode)
    if (CheckOpcode(static_cast<uint8_t>(opcode)) == 0) mlx5_postable_ |= uint64_t{1} << opcode;
  // The verbs opcodes PostSend builds on its short path (see Single).
  single_opcodes_ = 0;
  if (d.transport == QpTransport::kRc || d.transport == QpTransport::kUc)
    for (const ibv_wr_opcode v : {IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
                                  IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ})
      if (Postable(kOpcodes[v].mlx5)) single_opcodes_ |= 1u << v;
  // The largest WQE, in 16-byte units, that one BlueFlame copy carries (0: doorbells only).
  bf_max_ds_ = d.bf->blueflame ? d.bf->buf_size / kDs : 0;
  return {};
}

// ---- building WQEs ----

#define ONCHIP_HOT [[gnu::always_inline]] inline

// Field by field into the caller's builder: no zero-fill or whole-struct copy, whose wide loads
// over narrow stores the CPU cannot forward.
ONCHIP_HOT void SendQueue::Load(Builder& b) const {
  b.q = this;
  b.cur_post = cur_post_;
  b.head = head_;
  b.next_fence = fm_cache_;
}

ONCHIP_HOT void SendQueue::Store(const Builder& b) {
  cur_post_ = b.cur_post;
  head_ = b.head;
  fm_cache_ = b.next_fence;
}

ONCHIP_HOT int SendQueue::CheckRoom(uint32_t head, uint32_t cur_post) const {
  if (head - tail_.load(std::memory_order_acquire) >= max_post_) return ENOMEM;
  if (cur_post + worst_bbs_ - bb_tail_.load(std::memory_order_acquire) > wqe_cnt_) return ENOMEM;
  return 0;
}

ONCHIP_HOT int SendQueue::CheckOpcode(uint8_t opcode) const {
  switch (transport_) {
    case QpTransport::kUd:
      if (opcode != prm::MLX5_OPCODE_SEND && opcode != prm::MLX5_OPCODE_SEND_IMM) return EINVAL;
      return 0;
    case QpTransport::kUc:
      if (opcode == prm::MLX5_OPCODE_RDMA_READ || IsAtomic(opcode)) return EINVAL;
      if (opcode == prm::MLX5_OPCODE_UMR && !umr_) return EINVAL;
      return 0;
    case QpTransport::kRc:
    case QpTransport::kXrc:
      if (IsAtomic(opcode) && !atomics_) return EOPNOTSUPP;
      if (opcode == prm::MLX5_OPCODE_UMR && !umr_) return EINVAL;
      return 0;
    case QpTransport::kRaw:
      log::Missing("ibv_post_send", "raw packet send (no Ethernet send queue in the engine)");
      return EOPNOTSUPP;
  }
  return EINVAL;
}

ONCHIP_HOT void SendQueue::Builder::Begin(uint64_t wr_id, unsigned send_flags, uint8_t opcode,
                                          uint32_t imm_raw, ibv_wc_opcode wc_opcode, bool umr) {
  slot = cur_post & (q->wqe_cnt_ - 1);
  ctrl = q->ring_ + std::size_t{slot} * kBb;
  const uint8_t fence =
      (send_flags & IBV_SEND_FENCE) ? uint8_t{prm::MLX5_WQE_CTRL_FENCE} : next_fence;
  // IBV_SEND_SIGNALED (2) and IBV_SEND_SOLICITED (4) as ctrl's CQ_UPDATE and SOLICITED bits.
  static_assert(IBV_SEND_SIGNALED == 2 && IBV_SEND_SOLICITED == 4);
  static constexpr uint8_t kCeSe[4] = {
      0, prm::MLX5_WQE_CTRL_CQ_UPDATE, prm::MLX5_WQE_CTRL_SOLICITED,
      prm::MLX5_WQE_CTRL_CQ_UPDATE | prm::MLX5_WQE_CTRL_SOLICITED};
  const uint8_t fm_ce_se = q->sig_bits_ | fence | kCeSe[(send_flags >> 1) & 3];
  // ctrl: {opmod_idx_opcode, qpn_ds}, {signature 0, reserved 0, fm_ce_se, imm}, stored whole
  // by Finish once ds is known.
  opcode_word =
      Be32::FromHost(prm::OpmodIdxOpcode(0, static_cast<uint16_t>(cur_post), opcode)).raw();
  ctrl_second = (uint64_t{fm_ce_se} << 24) | (uint64_t{imm_raw} << 32);
  SendSlot& s = q->slots_[slot];
  s.wr_id = wr_id;
  s.wr_count = head;
  s.wc_opcode = wc_opcode;
  // The ctrl segment starts a basic block, so the next segment is inside the ring.
  seg = ctrl + kDs;
  ds = 1;
  next_fence = umr ? prm::MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE : 0;
}

ONCHIP_HOT std::byte* SendQueue::Builder::TakeSegment() {
  std::byte* at = seg;
  seg += kDs;
  if (seg == q->qend_) seg = q->ring_;
  ++ds;
  return at;
}

ONCHIP_HOT void SendQueue::Builder::PutRaddr(uint32_t rkey, uint64_t raddr) {
  std::byte* at = TakeSegment();  // raddr, rkey, reserved
  StoreSegment(at, Be64::FromHost(raddr).raw(), Pair(Be32::FromHost(rkey), Be32::FromHost(0)));
}

ONCHIP_HOT void SendQueue::Builder::PutAtomic(uint8_t opcode, uint64_t swap_add,
                                              uint64_t compare) {
  std::byte* at = TakeSegment();  // swap_add, compare
  StoreSegment(at, Be64::FromHost(swap_add).raw(),
               Be64::FromHost(opcode == prm::MLX5_OPCODE_ATOMIC_CS ? compare : 0).raw());
}

ONCHIP_HOT std::byte* SendQueue::Builder::PutXrc(uint32_t remote_srqn) {
  std::byte* at = TakeSegment();  // xrc_srqn, reserved
  StoreSegment(at, Pair(Be32::FromHost(remote_srqn & 0xffffff), Be32::FromHost(0)), 0);
  return at;
}

ONCHIP_HOT std::byte* SendQueue::Builder::ReserveDatagram() {
  // ctrl (16) + av (48) fill the first basic block: the three segments never wrap apart.
  std::byte* at = TakeSegment();
  (void)TakeSegment();
  (void)TakeSegment();
  return at;
}

ONCHIP_HOT void SendQueue::Builder::PutData(uint32_t lkey, uint64_t addr, uint32_t length) {
  StoreDataSegment(TakeSegment(), lkey, addr, length);
}

int SendQueue::Builder::PutInline(const ibv_sge* sges, const ibv_data_buf* bufs, std::size_t n,
                                  uint32_t max) {
  std::size_t total = 0;
  for (std::size_t i = 0; i < n; ++i) total += sges ? sges[i].length : bufs[i].length;
  if (total > max) return ENOMEM;
  if (total == 0) return 0;
  // The 4-byte header, then the bytes back to back; only here can a WQE's bytes split at the
  // ring's end.
  std::byte* const ring = q->ring_;
  std::byte* const qend = q->qend_;
  const Be32 header = Be32::FromHost(prm::MLX5_INLINE_SEG | static_cast<uint32_t>(total));
  std::memcpy(seg, &header, sizeof(header));
  std::byte* p = seg + sizeof(header);
  for (std::size_t i = 0; i < n; ++i) {
    const auto* src = static_cast<const std::byte*>(
        sges ? reinterpret_cast<const void*>(sges[i].addr) : bufs[i].addr);
    std::size_t len = sges ? sges[i].length : bufs[i].length;
    while (len != 0) {
      if (p == qend) p = ring;
      const std::size_t chunk = std::min<std::size_t>(len, static_cast<std::size_t>(qend - p));
      std::memcpy(p, src, chunk);
      p += chunk;
      src += chunk;
      len -= chunk;
    }
  }
  const uint32_t units = AlignUp(static_cast<uint32_t>(total) + 4, kDs) / kDs;
  const std::size_t ring_bytes = static_cast<std::size_t>(qend - ring);
  seg = ring + ((seg - ring) + std::size_t{units} * kDs) % ring_bytes;
  ds += units;
  return 0;
}

int SendQueue::Builder::PutUmr(bool type2, uint32_t target_key, uint32_t new_rkey,
                               const ibv_mw_bind_info& info) {
  if (info.length > prm::MLX5_MAX_KLM_BYTE_COUNT) return EOPNOTSUPP;
  if (info.length != 0 && info.mr == nullptr) return EINVAL;
  alignas(16) std::array<std::byte, kUmrBindBytes> wqe;
  const UmrRequest request{
      .type2 = type2,
      .target_key = target_key,
      .new_rkey = new_rkey,
      .mr_lkey = info.length != 0 ? info.mr->lkey : 0,
      .addr = info.addr,
      .length = info.length,
      .access = info.mw_access_flags,
      .qpn = q->qpn_,
  };
  auto size = BuildUmrWqe(request, wqe);
  if (!size) return size.error().errno_value();
  // The ctrl segment is ours (index, fence, completion); the UMR segments follow it 16 bytes at
  // a time, wrapping at the ring's end as any segment does.
  for (std::size_t off = kDs; off < *size; off += kDs) std::memcpy(TakeSegment(), &wqe[off], kDs);
  return 0;
}

ONCHIP_HOT void SendQueue::Builder::Finish() {
  const Be32 qpn_ds = Be32::FromHost(prm::QpnDs(q->qpn_, ds));
  last_doorbell = Pair(Be32::FromRaw(opcode_word), qpn_ds);
  StoreSegment(ctrl, last_doorbell, ctrl_second);
  cur_post += AlignUp(ds * kDs, kBb) / kBb;
  ++head;
  q->slots_[slot].next_post = cur_post;
  last_ctrl = ctrl;
  last_ds = ds;
}

// Out of line and called with scalars: the post paths then keep nothing in callee-saved
// registers for it, and save none on entry (each saved register is one more store the WcStart
// SFENCE waits for). A shared bfreg's lock is further out, in WriteSharedBfreg, for the same
// reason.
[[gnu::noinline]] void SendQueue::RingDoorbell(uint32_t cur_post, const std::byte* last,
                                               uint32_t last_ds, uint64_t last_word,
                                               uint32_t nreq) {
  // The WQEs are in host memory before the record says they exist ...
  mmio::ToDeviceBarrier();
  mmio::StoreDeviceWord(*db_counter_, Be32::FromHost(cur_post & prm::kWqCounterMask));
  // ... and the record before the doorbell (WcStart orders it against the write-combined
  // stores; this keeps the compiler from sinking it).
  mmio::ToDeviceBarrier();
  const bool blueflame = nreq == 1 && last_ds > 1 && last_ds <= bf_max_ds_;
  if (bf_->need_lock) [[unlikely]] {
    WriteSharedBfreg(last, last_ds, last_word, blueflame);
  } else {
    mmio::WcStart();
    WriteBfreg(last, last_ds, last_word, blueflame);
    mmio::WcFlush();
  }
  bus_->DoorbellRung();
}

ONCHIP_HOT void SendQueue::WriteBfreg(const std::byte* last, uint32_t last_ds, uint64_t last_word,
                                      bool blueflame) const {
  std::byte* dst = bf_->NextHalf();
  if (blueflame && last_ds <= kBb / kDs) [[likely]] {
    bf_->line64(dst, last);  // one basic block: it cannot wrap
  } else if (blueflame) {
    CopyLongWqe(dst, last, last_ds);
  } else {
    *reinterpret_cast<volatile uint64_t*>(dst) = last_word;
  }
}

// A BlueFlame WQE of several basic blocks, which may wrap at the ring's end. Out of line: its
// loop would keep registers saved on the common path.
[[gnu::noinline]] void SendQueue::CopyLongWqe(std::byte* dst, const std::byte* last,
                                              uint32_t last_ds) const {
  const uint32_t bytes = AlignUp(last_ds * kDs, kBb);
  const std::byte* src = last;
  for (uint32_t off = 0; off < bytes; off += kBb) {
    bf_->line64(dst + off, src);
    src += kBb;
    if (src == qend_) src = ring_;
  }
}

[[gnu::noinline]] void SendQueue::WriteSharedBfreg(const std::byte* last, uint32_t last_ds,
                                                   uint64_t last_word, bool blueflame) const {
  mmio::WcLockGuard guard(bf_->lock);
  WriteBfreg(last, last_ds, last_word, blueflame);
}

// Why a work request whose (known) opcode this queue does not post is refused, in libmlx5's
// order: a full queue and too many SGEs ENOMEM, then what the transport says (EINVAL, or
// EOPNOTSUPP for atomics on a QP without them).
[[gnu::cold, gnu::noinline]] int SendQueue::RefuseOpcode(uint32_t head, uint32_t cur_post,
                                                         int num_sge, uint8_t opcode) const {
  if (const int err = CheckRoom(head, cur_post)) return err;
  if (num_sge > state_max_gs_) return ENOMEM;
  return CheckOpcode(opcode);
}

// The segments that only some queues or requests carry, out of the common path so that its
// registers stay few: UD's address vector, a UMR for BIND_MW / LOCAL_INV.
[[gnu::noinline]] void SendQueue::Builder::PutDatagram(const ibv_send_wr* wr) {
  WriteDatagram(ReserveDatagram(), wr->wr.ud.ah, wr->wr.ud.remote_qpn, wr->wr.ud.remote_qkey);
}

[[gnu::noinline]] int SendQueue::Builder::PutUmrOf(const ibv_send_wr* wr) {
  if (wr->opcode == IBV_WR_BIND_MW)
    return PutUmr(wr->bind_mw.mw->type == IBV_MW_TYPE_2, wr->bind_mw.mw->rkey, wr->bind_mw.rkey,
                  wr->bind_mw.bind_info);
  // The window keeps its key byte: the next bind names it by that key.
  return PutUmr(true, wr->invalidate_rkey, wr->invalidate_rkey, ibv_mw_bind_info{});
}

// Runs a builder step that is out of line on a copy of the builder: the post path's own builder
// then never has its address taken, and the compiler keeps its fields in registers.
template <class Step>
ONCHIP_HOT int SendQueue::OnCopy(Builder& b, Step step) {
  Builder copy = b;
  const int err = step(copy);
  b = copy;
  return err;
}

ONCHIP_HOT int SendQueue::PostOne(Builder& b, ibv_send_wr* wr) {
  uint32_t raw;
  std::memcpy(&raw, &wr->opcode, sizeof(raw));  // not loaded as the enum before it is checked
  if (raw >= kOpcodeCount) [[unlikely]]
    return EINVAL;
  const OpcodeMap op = kOpcodes[raw];
  if (!Postable(op.mlx5)) [[unlikely]]
    return RefuseOpcode(b.head, b.cur_post, wr->num_sge, op.mlx5);
  if (const int err = CheckRoom(b.head, b.cur_post)) [[unlikely]]
    return err;
  if (wr->num_sge > state_max_gs_) [[unlikely]]
    return ENOMEM;

  uint32_t imm = 0;
  switch (raw) {
    case IBV_WR_SEND_WITH_IMM:
    case IBV_WR_RDMA_WRITE_WITH_IMM: imm = wr->imm_data; break;  // already big-endian
    case IBV_WR_SEND_WITH_INV:
    case IBV_WR_LOCAL_INV: imm = Be32::FromHost(wr->invalidate_rkey).raw(); break;
    case IBV_WR_BIND_MW: imm = Be32::FromHost(wr->bind_mw.mw->rkey).raw(); break;
    default: break;
  }
  const bool umr = op.mlx5 == prm::MLX5_OPCODE_UMR;
  const uint8_t fence_before = b.next_fence;
  b.Begin(wr->wr_id, wr->send_flags, op.mlx5, imm, op.wc, umr);
  if (transport_ == QpTransport::kXrc && !umr) b.PutXrc(wr->qp_type.xrc.remote_srqn);

  int err = 0;
  switch (op.mlx5) {
    case prm::MLX5_OPCODE_SEND:
    case prm::MLX5_OPCODE_SEND_IMM:
    case prm::MLX5_OPCODE_SEND_INVAL:
      if (transport_ == QpTransport::kUd) [[unlikely]]
        OnCopy(b, [wr](Builder& c) { return c.PutDatagram(wr), 0; });
      break;
    case prm::MLX5_OPCODE_RDMA_WRITE:
    case prm::MLX5_OPCODE_RDMA_WRITE_IMM:
    case prm::MLX5_OPCODE_RDMA_READ: b.PutRaddr(wr->wr.rdma.rkey, wr->wr.rdma.remote_addr); break;
    case prm::MLX5_OPCODE_ATOMIC_CS:
      b.PutRaddr(wr->wr.atomic.rkey, wr->wr.atomic.remote_addr);
      b.PutAtomic(op.mlx5, wr->wr.atomic.swap, wr->wr.atomic.compare_add);
      break;
    case prm::MLX5_OPCODE_ATOMIC_FA:
      b.PutRaddr(wr->wr.atomic.rkey, wr->wr.atomic.remote_addr);
      b.PutAtomic(op.mlx5, wr->wr.atomic.compare_add, 0);
      break;
    case prm::MLX5_OPCODE_UMR: err = OnCopy(b, [wr](Builder& c) { return c.PutUmrOf(wr); }); break;
    default: break;
  }
  if (err == 0 && !umr) {
    if (IsAtomic(op.mlx5)) {
      // The 8-byte result lands in the first SGE.
      if (wr->num_sge > 0) b.PutData(wr->sg_list[0].lkey, wr->sg_list[0].addr, kAtomicBytes);
    } else if ((wr->send_flags & IBV_SEND_INLINE) && wr->num_sge > 0) [[unlikely]] {
      err = OnCopy(b, [wr, max = max_inline_](Builder& c) {
        return c.PutInline(wr->sg_list, nullptr, static_cast<std::size_t>(wr->num_sge), max);
      });
    } else {
      for (int i = 0; i < wr->num_sge; ++i)
        if (wr->sg_list[i].length != 0)
          b.PutData(wr->sg_list[i].lkey, wr->sg_list[i].addr, wr->sg_list[i].length);
    }
  }
  if (err != 0) [[unlikely]] {
    b.next_fence = fence_before;  // nothing was posted
    return err;
  }
  b.Finish();
  return 0;
}

// The common post, one SEND, SEND_WITH_IMM, RDMA_WRITE(_WITH_IMM) or RDMA_READ with at most two
// non-empty SGEs on an RC or UC queue, is built here with nothing else live, so it keeps every
// value in registers: each store before the doorbell's SFENCE is a store that fence waits for.
// Anything else, and any request that would fail, takes PostList, which gives the errors.
ONCHIP_HOT bool SendQueue::Single(const ibv_send_wr* wr) const {
  uint32_t raw;
  std::memcpy(&raw, &wr->opcode, sizeof(raw));
  if (wr->next != nullptr || raw >= 32 || ((single_opcodes_ >> raw) & 1) == 0) return false;
  if ((wr->send_flags & IBV_SEND_INLINE) != 0) return false;
  const uint32_t n = static_cast<uint32_t>(wr->num_sge);
  if (n > 2 || wr->num_sge > state_max_gs_) return false;
  for (uint32_t i = 0; i < n; ++i)
    if (wr->sg_list[i].length == 0) return false;
  return !device_gone();
}

int SendQueue::PostSend(ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  if (!Single(wr)) return PostList(wr, bad_wr);
  lock_.lock();
  Builder b;
  Load(b);
  if (CheckRoom(b.head, b.cur_post) != 0) [[unlikely]] {
    lock_.unlock();
    return PostList(wr, bad_wr);
  }
  const OpcodeMap op = kOpcodes[wr->opcode];
  const bool imm = wr->opcode == IBV_WR_SEND_WITH_IMM || wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
  b.Begin(wr->wr_id, wr->send_flags, op.mlx5, imm ? wr->imm_data : 0, op.wc, false);
  if (op.wc != IBV_WC_SEND) b.PutRaddr(wr->wr.rdma.rkey, wr->wr.rdma.remote_addr);
  if (wr->num_sge > 0) b.PutData(wr->sg_list[0].lkey, wr->sg_list[0].addr, wr->sg_list[0].length);
  if (wr->num_sge > 1) b.PutData(wr->sg_list[1].lkey, wr->sg_list[1].addr, wr->sg_list[1].length);
  b.Finish();
  Store(b);
  RingDoorbell(b.cur_post, b.last_ctrl, b.last_ds, b.last_doorbell, 1);
  lock_.unlock();
  return 0;
}

[[gnu::noinline]] int SendQueue::PostList(ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  if (device_gone()) [[unlikely]] {
    *bad_wr = wr;
    return EIO;
  }
  lock_.lock();
  Builder b;
  Load(b);
  uint32_t nreq = 0;
  int err = 0;
  for (; wr != nullptr; wr = wr->next, ++nreq) {
    err = PostOne(b, wr);
    if (err != 0) [[unlikely]] {
      *bad_wr = wr;
      break;
    }
  }
  Store(b);
  if (nreq != 0) [[likely]]
    RingDoorbell(b.cur_post, b.last_ctrl, b.last_ds, b.last_doorbell, nreq);
  lock_.unlock();
  return err;
}

// ---- the extended API: one Builder across the calls, written back on success only ----

namespace {
// Keeps the first error of a batch.
inline void Keep(int& slot, int err) {
  if (slot == 0) slot = err;
}
}  // namespace

void SendQueue::WrStart() {
  lock_.lock();
  Load(wr_);
  wr_nreq_ = 0;
  wr_err_ = 0;
  wr_open_ = false;
}

ONCHIP_HOT bool SendQueue::WrBegin(uint8_t opcode) {
  if (wr_err_ != 0) return false;
  if (wr_open_) {  // the previous request never got its data
    Keep(wr_err_, EINVAL);
    return false;
  }
  if (const int err = CheckRoom(wr_.head, wr_.cur_post)) {
    Keep(wr_err_, err);
    return false;
  }
  if (!Postable(opcode)) [[unlikely]] {
    Keep(wr_err_, CheckOpcode(opcode));
    return false;
  }
  return true;
}

void SendQueue::WrSend(uint64_t wr_id, unsigned flags, uint8_t opcode, uint32_t imm_raw) {
  if (!WrBegin(opcode)) return;
  wr_.Begin(wr_id, flags, opcode, imm_raw, IBV_WC_SEND, false);
  wr_open_ = true;
  wr_atomic_ = false;
  wr_setters_ = 1;
  wr_av_ = nullptr;
  WrReserveXrc();
  if (transport_ == QpTransport::kUd) {
    wr_av_ = wr_.ReserveDatagram();
    wr_setters_ = 2;
  }
}

void SendQueue::WrRdma(uint64_t wr_id, unsigned flags, uint8_t opcode, uint32_t rkey,
                       uint64_t raddr, uint32_t imm_raw) {
  if (!WrBegin(opcode)) return;
  const ibv_wc_opcode wc =
      opcode == prm::MLX5_OPCODE_RDMA_READ ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE;
  wr_.Begin(wr_id, flags, opcode, imm_raw, wc, false);
  wr_setters_ = 1;
  WrReserveXrc();
  wr_.PutRaddr(rkey, raddr);
  wr_open_ = true;
  wr_atomic_ = false;
  wr_av_ = nullptr;
}

void SendQueue::WrAtomic(uint64_t wr_id, unsigned flags, uint8_t opcode, uint32_t rkey,
                         uint64_t raddr, uint64_t swap_add, uint64_t compare) {
  if (!WrBegin(opcode)) return;
  const ibv_wc_opcode wc =
      opcode == prm::MLX5_OPCODE_ATOMIC_CS ? IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD;
  wr_.Begin(wr_id, flags, opcode, 0, wc, false);
  wr_setters_ = 1;
  WrReserveXrc();
  wr_.PutRaddr(rkey, raddr);
  wr_.PutAtomic(opcode, swap_add, compare);
  wr_open_ = true;
  wr_atomic_ = true;
  wr_av_ = nullptr;
}

void SendQueue::WrBindMw(uint64_t wr_id, unsigned flags, ibv_mw* mw, uint32_t new_rkey,
                         const ibv_mw_bind_info& info) {
  if (!WrBegin(prm::MLX5_OPCODE_UMR)) return;
  const uint8_t fence_before = wr_.next_fence;
  wr_.Begin(wr_id, flags, prm::MLX5_OPCODE_UMR, Be32::FromHost(mw->rkey).raw(), IBV_WC_BIND_MW,
            true);
  // The extended API binds with type-2 semantics, as libmlx5's does.
  if (const int err = wr_.PutUmr(true, mw->rkey, new_rkey, info)) {
    wr_.next_fence = fence_before;
    return Keep(wr_err_, err);
  }
  wr_.Finish();
  ++wr_nreq_;
}

void SendQueue::WrLocalInv(uint64_t wr_id, unsigned flags, uint32_t invalidate_rkey) {
  if (!WrBegin(prm::MLX5_OPCODE_UMR)) return;
  wr_.Begin(wr_id, flags, prm::MLX5_OPCODE_UMR, Be32::FromHost(invalidate_rkey).raw(),
            IBV_WC_LOCAL_INV, true);
  // An invalidate cannot fail; the window keeps its key byte, as on the other post path.
  (void)wr_.PutUmr(true, invalidate_rkey, invalidate_rkey, ibv_mw_bind_info{});
  wr_.Finish();
  ++wr_nreq_;
}

ONCHIP_HOT void SendQueue::WrFinishSetter() {
  if (--wr_setters_ > 0) return;
  wr_.Finish();
  ++wr_nreq_;
  wr_open_ = false;
}

void SendQueue::WrSetUdAddr(const ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey) {
  if (wr_err_ != 0) return;
  if (!wr_open_ || wr_av_ == nullptr) return Keep(wr_err_, EINVAL);
  WriteDatagram(wr_av_, ah, remote_qpn, remote_qkey);
  wr_av_ = nullptr;
  WrFinishSetter();
}

void SendQueue::WrReserveXrc() {
  wr_xrc_ = nullptr;
  if (transport_ != QpTransport::kXrc) return;
  wr_xrc_ = wr_.PutXrc(0);
  ++wr_setters_;
}

void SendQueue::WrSetXrcSrqn(uint32_t remote_srqn) {
  if (wr_err_ != 0) return;
  if (!wr_open_ || wr_xrc_ == nullptr) return Keep(wr_err_, EINVAL);
  const Be32 srqn = Be32::FromHost(remote_srqn & 0xffffff);
  std::memcpy(wr_xrc_, &srqn, sizeof(srqn));
  wr_xrc_ = nullptr;
  WrFinishSetter();
}

void SendQueue::WrSetSge(uint32_t lkey, uint64_t addr, uint32_t length) {
  if (wr_err_ != 0) return;
  if (!wr_open_) return Keep(wr_err_, EINVAL);
  if (state_max_gs_ < 1) return Keep(wr_err_, ENOMEM);
  if (wr_atomic_)
    wr_.PutData(lkey, addr, kAtomicBytes);
  else if (length != 0)
    wr_.PutData(lkey, addr, length);
  WrFinishSetter();
}

void SendQueue::WrSetSgeList(std::size_t num_sge, const ibv_sge* sg_list) {
  if (wr_err_ != 0) return;
  if (!wr_open_) return Keep(wr_err_, EINVAL);
  if (num_sge > max_sge_ || static_cast<long>(num_sge) > state_max_gs_)
    return Keep(wr_err_, ENOMEM);
  if (wr_atomic_) {
    if (num_sge > 0) wr_.PutData(sg_list[0].lkey, sg_list[0].addr, kAtomicBytes);
  } else {
    for (std::size_t i = 0; i < num_sge; ++i)
      if (sg_list[i].length != 0) wr_.PutData(sg_list[i].lkey, sg_list[i].addr, sg_list[i].length);
  }
  WrFinishSetter();
}

void SendQueue::WrSetInline(const void* addr, std::size_t length) {
  const ibv_data_buf buf{const_cast<void*>(addr), length};
  WrSetInlineList(1, &buf);
}

void SendQueue::WrSetInlineList(std::size_t num_buf, const ibv_data_buf* buf_list) {
  if (wr_err_ != 0) return;
  if (!wr_open_ || wr_atomic_) return Keep(wr_err_, EINVAL);
  if (const int err = wr_.PutInline(nullptr, buf_list, num_buf, max_inline_))
    return Keep(wr_err_, err);
  WrFinishSetter();
}

int SendQueue::WrComplete() {
  int err = wr_err_;
  if (err == 0 && wr_open_) err = EINVAL;  // a request still waits for its data
  // Outside RTS (the gate closed: RESET, and until RTS after it) libmlx5 answers every batch
  // with EINVAL and posts none of it.
  if (state_max_gs_ < 0) err = EINVAL;
  if (device_gone()) [[unlikely]] err = EIO;  // no doorbell for a function that is gone
  if (err == 0) {
    Store(wr_);
    if (wr_nreq_ != 0)
      RingDoorbell(wr_.cur_post, wr_.last_ctrl, wr_.last_ds, wr_.last_doorbell, wr_nreq_);
  }
  wr_open_ = false;
  lock_.unlock();
  return err;
}

void SendQueue::WrAbort() {
  wr_open_ = false;
  lock_.unlock();
}

#undef ONCHIP_HOT

}  // namespace onchip::driver::rings
