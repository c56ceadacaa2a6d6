#include "driver/rings/cq_ring.h"

#include <array>
#include <bit>
#include <cerrno>
#include <cstring>

#include "driver/rings/recv_queue.h"
#include "driver/rings/send_queue.h"
#include "driver/rings/srq_ring.h"
#include "mmio/barriers.h"
#include "mmio/device_word.h"
#include "uapi/prm/cqe_syndrome.h"
#include "uapi/prm/send_wqe.h"
#include "uapi/prm/uar_page.h"

namespace onchip::driver::rings {
namespace {

namespace pod = prm::pod;

// flags_rqpn: [31:28] unused here, [29:28] GRH present, [27:24] SL, [23:0] the remote QPN.
constexpr uint32_t kGrhShift = 28;
constexpr uint32_t kGrhMask = 0x3;
constexpr uint32_t kSlShift = 24;
constexpr uint32_t kSlMask = 0xf;
constexpr uint8_t kPathBitsMask = 0x7f;
constexpr uint32_t kAtomicBytes = 8;

}  // namespace

ibv_wc_status StatusOfSyndrome(uint8_t syndrome) {
  switch (syndrome) {
    case prm::MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR: return IBV_WC_LOC_LEN_ERR;
    case prm::MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR: return IBV_WC_LOC_QP_OP_ERR;
    case prm::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR: return IBV_WC_LOC_PROT_ERR;
    case prm::MLX5_CQE_SYNDROME_WR_FLUSH_ERR: return IBV_WC_WR_FLUSH_ERR;
    case prm::MLX5_CQE_SYNDROME_MW_BIND_ERR: return IBV_WC_MW_BIND_ERR;
    case prm::MLX5_CQE_SYNDROME_BAD_RESP_ERR: return IBV_WC_BAD_RESP_ERR;
    case prm::MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR: return IBV_WC_LOC_ACCESS_ERR;
    case prm::MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR: return IBV_WC_REM_INV_REQ_ERR;
    case prm::MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR: return IBV_WC_REM_ACCESS_ERR;
    case prm::MLX5_CQE_SYNDROME_REMOTE_OP_ERR: return IBV_WC_REM_OP_ERR;
    case prm::MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR: return IBV_WC_RETRY_EXC_ERR;
    case prm::MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR: return IBV_WC_RNR_RETRY_EXC_ERR;
    case prm::MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR: return IBV_WC_REM_ABORT_ERR;
    default: return IBV_WC_GENERAL_ERR;
  }
}

Result<void> CqRing::Init(const CqRingDesc& d) {
  if (d.buf == nullptr || d.dbr == nullptr || d.uar_cq_doorbell == nullptr || d.bus == nullptr ||
      d.qpns == nullptr)
    return Fail(EINVAL, "cq ring: buffer, doorbell record, UAR doorbell, bus and table required");
  if (d.cqe_cnt == 0 || !std::has_single_bit(d.cqe_cnt) || d.cqe_cnt > (1u << 24))
    return Fail(EINVAL, "cq ring: CQE count must be a power of two up to 2^24");
  if (d.cqe_size != 64 && d.cqe_size != 128) return Fail(EINVAL, "cq ring: CQE size 64 or 128");
  buf_ = d.buf;
  cqe_cnt_ = d.cqe_cnt;
  cqe_size_ = d.cqe_size;
  cqe_shift_ = static_cast<uint32_t>(std::countr_zero(d.cqe_size));
  cqe_offset_ = d.cqe_size - sizeof(pod::mlx5_cqe64);
  dbr_ = d.dbr;
  cqn_ = d.cqn;
  uar_cq_doorbell_ = d.uar_cq_doorbell;
  bus_ = d.bus;
  qpns_ = d.qpns;
  orphans_ = {};
  orphans_.xrc_srqs = d.xrc_srqns;
  lock_.set_locked(d.locked);
  MarkInvalid(buf_, cqe_cnt_);
  ci_.store(0, std::memory_order_relaxed);
  arm_sn_ = 0;
  return {};
}

void CqRing::MarkInvalid(std::byte* buf, uint32_t cqe_cnt) const {
  for (uint32_t i = 0; i < cqe_cnt; ++i) {
    auto* cqe = reinterpret_cast<pod::mlx5_cqe64*>(buf + std::size_t{i} * cqe_size_ + cqe_offset_);
    cqe->op_own = prm::kCqeInitialOpOwn;
  }
}

Result<void> CqRing::SwitchTo(std::byte* buf, uint32_t cqe_cnt) {
  const uint32_t ci = ci_.load(std::memory_order_relaxed);
  uint32_t i = ci;
  bool found = false;
  // The CQEs before the device's resize CQE move to the new ring, one slot on: the resize CQE
  // takes a count of its own, and the device's next CQE lands after the last copy.
  while (i - ci < cqe_cnt_) {
    const std::byte* src = NextCqe(i);
    if (src == nullptr) break;
    mmio::DmaReadBarrier();  // the CQE's fields are not older than its owner bit
    const auto* cqe = reinterpret_cast<const pod::mlx5_cqe64*>(src);
    if (prm::CqeOpcodeOf(cqe->op_own) == prm::MLX5_CQE_RESIZE_CQ) {
      found = true;
      break;
    }
    const uint32_t to = i + 1;
    std::byte* dest = buf + std::size_t{to & (cqe_cnt - 1)} * cqe_size_;
    std::memcpy(dest, src - cqe_offset_, cqe_size_);
    auto* d = reinterpret_cast<pod::mlx5_cqe64*>(dest + cqe_offset_);
    d->op_own = static_cast<uint8_t>((d->op_own & ~prm::MLX5_CQE_OWNER_MASK) |
                                     (prm::CqeOwnerFor(to, cqe_cnt) ? prm::MLX5_CQE_OWNER_MASK : 0));
    ++i;
  }
  // The device writes into the new ring from the moment the command completed.
  buf_ = buf;
  cqe_cnt_ = cqe_cnt;
  if (!found) return Fail(EIO, "resize_cq: the old ring holds no resize CQE");
  StoreCi(ci + 1);
  return {};
}

[[gnu::always_inline]] inline bool CqRing::Owned(uint8_t op_own, uint32_t ci, uint32_t cqe_cnt) {
  return prm::CqeOpcodeOf(op_own) != prm::MLX5_CQE_INVALID &&
         prm::CqeOwner(op_own) == prm::CqeOwnerFor(ci, cqe_cnt);
}

[[gnu::always_inline]] inline const std::byte* CqRing::NextCqe(uint32_t ci) const {
  const std::byte* at = CqeAt(ci);
  // The device writes op_own last; read it once.
  const uint8_t op_own = mmio::LoadDeviceWord(reinterpret_cast<const pod::mlx5_cqe64*>(at)->op_own);
  return Owned(op_own, ci, cqe_cnt_) ? at : nullptr;
}

// The receive WQE a responder CQE completes: from the XRC SRQ its srqn names, the QP's SRQ, or
// its receive queue in order. False when the CQE names none of them.
[[gnu::always_inline]] inline bool CqRing::RetireReceive(const pod::mlx5_cqe64& cqe,
                                                         const WorkQueues& wq, uint64_t* wr_id) {
  const uint16_t wqe_counter = cqe.wqe_counter.host();
  if (wq.xrc_srqs != nullptr) {
    const WorkQueues* x = wq.xrc_srqs->Find(cqe.srqn.host() & 0xffffff);
    if (x == nullptr || x->srq == nullptr) return false;
    *wr_id = x->srq->Retire(wqe_counter);
    return true;
  }
  if (wq.srq != nullptr) {
    *wr_id = wq.srq->Retire(wqe_counter);
    return true;
  }
  if (wq.rq != nullptr) {
    *wr_id = wq.rq->Retire();
    return true;
  }
  return false;
}

// An error CQE (requester or responder): out of line, so that the registers it needs cost the
// common completions nothing.
[[gnu::noinline]] CqRing::Parsed CqRing::ParseError(const std::byte* at, const WorkQueues& wq,
                                                    ibv_wc* wc) {
  const auto* cqe = reinterpret_cast<const pod::mlx5_cqe64*>(at);
  const auto* err = reinterpret_cast<const pod::mlx5_err_cqe*>(at);
  if (prm::CqeOpcodeOf(cqe->op_own) == prm::MLX5_CQE_REQ_ERR) {
    if (wq.sq == nullptr) return Parsed::kError;
    const SendSlot& slot = wq.sq->Retire(cqe->wqe_counter.host());
    wc->wr_id = slot.wr_id;
    wc->opcode = slot.wc_opcode;
  } else {
    if (!RetireReceive(*cqe, wq, &wc->wr_id)) return Parsed::kError;
    wc->opcode = IBV_WC_RECV;
  }
  wc->status = StatusOfSyndrome(err->syndrome);
  wc->vendor_err = err->vendor_err_synd;
  wc->byte_len = 0;
  return Parsed::kCompletion;
}

namespace {

// What a requester CQE's WQE opcode (the top byte of sop_drop_qpn) says about its completion:
// the ibv_wc opcode (kSlotOpcode: the one its send slot kept, for UMR, a bind or a local
// invalidate), the ibv_wc flags, and whether byte_len is the atomic's 8 bytes rather than the
// CQE's byte_cnt. One entry per byte value, so a lookup needs no bounds test.
struct alignas(4) RequesterWc {
  uint8_t opcode = kSlotOpcode;
  uint8_t flags = 0;
  bool atomic = false;
  static constexpr uint8_t kSlotOpcode = 0xff;
};

constexpr std::array<RequesterWc, 256> MakeRequesterWcs() {
  std::array<RequesterWc, 256> t{};
  auto set = [&](uint8_t mlx5, ibv_wc_opcode wc, unsigned flags, bool atomic) {
    t[mlx5] = {static_cast<uint8_t>(wc), static_cast<uint8_t>(flags), atomic};
  };
  set(prm::MLX5_OPCODE_RDMA_WRITE, IBV_WC_RDMA_WRITE, 0, false);
  set(prm::MLX5_OPCODE_RDMA_WRITE_IMM, IBV_WC_RDMA_WRITE, IBV_WC_WITH_IMM, false);
  set(prm::MLX5_OPCODE_SEND, IBV_WC_SEND, 0, false);
  set(prm::MLX5_OPCODE_SEND_IMM, IBV_WC_SEND, IBV_WC_WITH_IMM, false);
  set(prm::MLX5_OPCODE_SEND_INVAL, IBV_WC_SEND, 0, false);
  set(prm::MLX5_OPCODE_RDMA_READ, IBV_WC_RDMA_READ, 0, false);
  set(prm::MLX5_OPCODE_ATOMIC_CS, IBV_WC_COMP_SWAP, 0, true);
  set(prm::MLX5_OPCODE_ATOMIC_FA, IBV_WC_FETCH_ADD, 0, true);
  return t;
}
constexpr std::array<RequesterWc, 256> kRequesterWcs = MakeRequesterWcs();

}  // namespace

// A successful requester CQE of a QP with a send queue: retires its WQEs, fills every field
// ibv_poll_cq defines for a requester completion.
[[gnu::always_inline]] inline void CqRing::FillRequester(const pod::mlx5_cqe64& cqe, SendQueue& sq,
                                                         uint32_t qpn, ibv_wc* wc) {
  const RequesterWc& r = kRequesterWcs[prm::CqeWqeOpcode(cqe.sop_drop_qpn.host())];
  const uint32_t byte_cnt = cqe.byte_cnt.host();
  const SendSlot& slot = sq.Retire(cqe.wqe_counter.host());
  wc->wr_id = slot.wr_id;
  wc->status = IBV_WC_SUCCESS;
  wc->opcode = r.opcode != RequesterWc::kSlotOpcode ? static_cast<ibv_wc_opcode>(r.opcode)
                                                     : slot.wc_opcode;
  wc->vendor_err = 0;
  wc->byte_len = r.atomic ? kAtomicBytes : byte_cnt;
  wc->qp_num = qpn;
  wc->wc_flags = r.flags;
}

[[gnu::always_inline]] inline CqRing::Parsed CqRing::Parse(const std::byte* at, ibv_wc* wc,
                                                          uint64_t* ts) {
  const auto* cqe = reinterpret_cast<const pod::mlx5_cqe64*>(at);
  const prm::CqeOpcode opcode = prm::CqeOpcodeOf(cqe->op_own);
  if (opcode == prm::MLX5_CQE_RESIZE_CQ || opcode == prm::MLX5_CQE_SIG_ERR) return Parsed::kSkip;

  const uint32_t qpn = prm::CqeQpn(cqe->sop_drop_qpn.host());
  const WorkQueues* wq = qpns_->Find(qpn);
  // A receive into an XRC SRQ carries the SRQ's user index (kXrcUserIndexFlag set): the SRQ
  // takes its WQE back, whatever became of the XRC target QP the CQE names (it has no CQ to
  // clean when it goes, and its number may already be another QP's), as libmlx5 finds the SRQ
  // by the CQE's user index.
  const bool responder = (opcode >= prm::MLX5_CQE_RESP_WR_IMM && opcode <= prm::MLX5_CQE_RESP_SEND_INV) ||
                         opcode == prm::MLX5_CQE_RESP_ERR;
  if (responder && (cqe->srqn.host() & kXrcUserIndexFlag) && orphans_.xrc_srqs != nullptr) [[unlikely]]
    wq = &orphans_;
  if (wq == nullptr) return Parsed::kError;
  wc->qp_num = qpn;
  wc->wc_flags = 0;
  wc->vendor_err = 0;
  if (ts != nullptr)
    *ts = (uint64_t{cqe->timestamp_h.host()} << 32) | cqe->timestamp_l.host();

  auto retire_receive = [&](uint64_t* wr_id) { return RetireReceive(*cqe, *wq, wr_id); };

  switch (opcode) {
    case prm::MLX5_CQE_REQ:
      if (wq->sq == nullptr) return Parsed::kError;
      FillRequester(*cqe, *wq->sq, qpn, wc);
      return Parsed::kCompletion;
    case prm::MLX5_CQE_RESP_WR_IMM:
    case prm::MLX5_CQE_RESP_SEND:
    case prm::MLX5_CQE_RESP_SEND_IMM:
    case prm::MLX5_CQE_RESP_SEND_INV: {
      if (!retire_receive(&wc->wr_id)) return Parsed::kError;
      wc->status = IBV_WC_SUCCESS;
      wc->byte_len = cqe->byte_cnt.host();
      if (opcode == prm::MLX5_CQE_RESP_WR_IMM) {
        wc->opcode = IBV_WC_RECV_RDMA_WITH_IMM;
        wc->wc_flags |= IBV_WC_WITH_IMM;
        wc->imm_data = cqe->immediate.raw();  // network order, as the sender gave it
      } else if (opcode == prm::MLX5_CQE_RESP_SEND_IMM) {
        wc->opcode = IBV_WC_RECV;
        wc->wc_flags |= IBV_WC_WITH_IMM;
        wc->imm_data = cqe->immediate.raw();
      } else if (opcode == prm::MLX5_CQE_RESP_SEND_INV) {
        wc->opcode = IBV_WC_RECV;
        wc->wc_flags |= IBV_WC_WITH_INV;
        wc->invalidated_rkey = cqe->inval_rkey.host();
      } else {
        wc->opcode = IBV_WC_RECV;
      }
      const uint32_t flags_rqpn = cqe->flags_rqpn.host();
      wc->src_qp = flags_rqpn & prm::kCqeQpnMask;
      wc->sl = static_cast<uint8_t>((flags_rqpn >> kSlShift) & kSlMask);
      if ((flags_rqpn >> kGrhShift) & kGrhMask) wc->wc_flags |= IBV_WC_GRH;
      wc->slid = cqe->slid.host();
      wc->dlid_path_bits = cqe->ml_path & kPathBitsMask;
      wc->pkey_index = static_cast<uint16_t>(cqe->pkey.host() & 0xffff);
      return Parsed::kCompletion;
    }
    case prm::MLX5_CQE_REQ_ERR:
    case prm::MLX5_CQE_RESP_ERR: return ParseError(at, *wq, wc);
    default: return Parsed::kError;  // NO_PACKET (tag matching) and reserved opcodes
  }
}

void CqRing::StoreCi(uint32_t ci) {
  ci_.store(ci, std::memory_order_relaxed);
  mmio::StoreDeviceWord(dbr_->set_ci, prm::Be32::FromHost(ci & prm::kCqConsumerIndexMask));
}

// The common poll, a successful requester completion (or none), is decided here with little
// live, so it keeps its values in scratch registers (one saved on entry, where PollLocked's loop
// saved five); anything else continues in PollLocked, which alone decides what other CQEs mean.
int CqRing::Poll(int num_entries, ibv_wc* wc) {
  lock_.lock();
  const uint32_t start = ci_.load(std::memory_order_relaxed);
  const std::byte* at = CqeAt(start);
  const auto* cqe = reinterpret_cast<const pod::mlx5_cqe64*>(at);
  // The device writes op_own last; one read of it says both whose the CQE is and what it is.
  const uint8_t op_own = mmio::LoadDeviceWord(cqe->op_own);
  const uint8_t requester_op_own = prm::CqeOpOwn(prm::MLX5_CQE_REQ, prm::CqeOwnerFor(start, cqe_cnt_));
  if (op_own != requester_op_own || num_entries <= 0) [[unlikely]] {
    if (num_entries > 0 && Owned(op_own, start, cqe_cnt_)) return PollLocked(num_entries, wc, start, 0);
    lock_.unlock();
    return device_gone() ? -EIO : 0;  // nothing more will ever arrive
  }
  mmio::DmaReadBarrier();  // the CQE's fields are not older than its owner bit
  const uint32_t qpn = prm::CqeQpn(cqe->sop_drop_qpn.host());
  const WorkQueues* wq = qpns_->Find(qpn);
  if (wq == nullptr || wq->sq == nullptr) [[unlikely]]
    return PollLocked(num_entries, wc, start, 0);
  FillRequester(*cqe, *wq->sq, qpn, wc);
  if (num_entries > 1 && NextCqe(start + 1) != nullptr)
    return PollLocked(num_entries, wc, start + 1, 1);
  StoreCi(start + 1);
  lock_.unlock();
  return 1;
}

// Poll's loop from consumer index `ci` with `n` completions already in wc, the lock held;
// releases it.
[[gnu::noinline]] int CqRing::PollLocked(int num_entries, ibv_wc* wc, uint32_t ci, int n) {
  const uint32_t start = ci_.load(std::memory_order_relaxed);
  bool failed = false;
  while (n < num_entries) {
    const std::byte* cqe = NextCqe(ci);
    if (cqe == nullptr) break;
    ++ci;
    mmio::DmaReadBarrier();  // the CQE's fields are not older than its owner bit
    const Parsed p = Parse(cqe, &wc[n], nullptr);
    if (p == Parsed::kSkip) continue;
    if (p == Parsed::kError) [[unlikely]] {
      failed = true;
      break;
    }
    ++n;
  }
  if (ci != start) StoreCi(ci);
  lock_.unlock();
  if (n == 0 && device_gone()) [[unlikely]] return -EIO;  // nothing more will ever arrive
  return failed && n == 0 ? -1 : n;
}

int CqRing::PollOne(ibv_cq_ex* cq) {
  uint32_t ci = ci_.load(std::memory_order_relaxed);
  for (;;) {
    const std::byte* cqe = NextCqe(ci);
    if (cqe == nullptr) return ENOENT;
    ++ci;
    ci_.store(ci, std::memory_order_relaxed);
    mmio::DmaReadBarrier();
    const Parsed p = Parse(cqe, &cur_, &cur_ts_);
    if (p == Parsed::kSkip) continue;
    if (p == Parsed::kError) return EINVAL;
    cq->wr_id = cur_.wr_id;
    cq->status = cur_.status;
    return 0;
  }
}

int CqRing::StartPoll(ibv_cq_ex* cq) {
  lock_.lock();
  const uint32_t start = ci_.load(std::memory_order_relaxed);
  const int err = PollOne(cq);
  if (err != 0) {
    const uint32_t ci = ci_.load(std::memory_order_relaxed);
    if (ci != start) StoreCi(ci);
    lock_.unlock();
    if (err == ENOENT && device_gone()) [[unlikely]] return EIO;
  }
  return err;
}

int CqRing::NextPoll(ibv_cq_ex* cq) { return PollOne(cq); }

void CqRing::EndPoll() {
  StoreCi(ci_.load(std::memory_order_relaxed));
  lock_.unlock();
}

void CqRing::Clean(uint32_t qpn, SrqRing* srq) {
  lock_.lock();
  const uint32_t ci = ci_.load(std::memory_order_relaxed);
  // The producer's position: the first CQE software does not own yet.
  uint32_t prod = ci;
  while (prod - ci < cqe_cnt_ && NextCqe(prod) != nullptr) ++prod;
  mmio::DmaReadBarrier();
  uint32_t freed = 0;
  for (uint32_t i = prod; i != ci;) {
    --i;
    std::byte* at = CqeAt(i);
    const auto* cqe = reinterpret_cast<const pod::mlx5_cqe64*>(at);
    if (prm::CqeQpn(cqe->sop_drop_qpn.host()) == qpn) {
      const prm::CqeOpcode opcode = prm::CqeOpcodeOf(cqe->op_own);
      const bool responder = opcode == prm::MLX5_CQE_RESP_WR_IMM ||
                             opcode == prm::MLX5_CQE_RESP_SEND ||
                             opcode == prm::MLX5_CQE_RESP_SEND_IMM ||
                             opcode == prm::MLX5_CQE_RESP_SEND_INV ||
                             opcode == prm::MLX5_CQE_RESP_ERR;
      if (srq != nullptr && responder) (void)srq->Retire(cqe->wqe_counter.host());
      ++freed;
    } else if (freed != 0) {
      std::byte* dest = CqeAt(i + freed);
      auto* d = reinterpret_cast<pod::mlx5_cqe64*>(dest);
      const uint8_t owner = d->op_own & prm::MLX5_CQE_OWNER_MASK;
      std::memmove(dest, at, sizeof(pod::mlx5_cqe64));
      d->op_own = static_cast<uint8_t>((d->op_own & ~prm::MLX5_CQE_OWNER_MASK) | owner);
    }
  }
  if (freed != 0) {
    mmio::ToDeviceBarrier();  // the moved CQEs before the index that frees their old slots
    StoreCi(ci + freed);
  }
  lock_.unlock();
}

int CqRing::Arm(bool solicited_only) {
  const uint32_t word = prm::CqArmWord(
      arm_sn_, solicited_only ? prm::MLX5_CQ_DB_REQ_NOT_SOL : prm::MLX5_CQ_DB_REQ_NOT,
      ci_.load(std::memory_order_relaxed));
  mmio::StoreDeviceWord(dbr_->arm_db, prm::Be32::FromHost(word));
  const prm::CqUarDoorbell doorbell{prm::Be32::FromHost(word), prm::Be32::FromHost(cqn_)};
  uint64_t value;
  std::memcpy(&value, &doorbell, sizeof(value));
  // The record is in host memory before the doorbell reaches the device, and the doorbell is
  // one 64-bit store.
  mmio::WcStart();
  *reinterpret_cast<volatile uint64_t*>(uar_cq_doorbell_) = value;
  mmio::WcFlush();
  bus_->DoorbellRung();
  return 0;
}

}  // namespace onchip::driver::rings
