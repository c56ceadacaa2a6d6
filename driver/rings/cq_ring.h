// The consumer side of a CQ: CQE ownership, parsing into ibv_wc, the consumer index, arming.
//
// The CQ buffer holds `cqe_cnt` CQEs (a power of two) of 64 or 128 bytes (the 64-byte CQE is the
// last 64 bytes of a 128-byte one). The CQE at consumer index n is software's when its opcode is
// not MLX5_CQE_INVALID and its owner bit equals (n / cqe_cnt) & 1. Each one is consumed, then
// (after a load barrier) read: requester CQEs retire send WQEs up to their wqe_counter, responder
// CQEs retire the oldest receive WQE or the SRQ WQE they name, error CQEs map their syndrome to
// an ibv_wc_status (rdma-core providers/mlx5/cq.c, mlx5_handle_error_cqe) with the vendor syndrome in vendor_err. RESIZE_CQ and
// SIG_ERR CQEs are consumed without a completion. After a batch one store puts the consumer
// index in the doorbell record; polling writes no MMIO.
//
// Arm(solicited_only) writes the arm word (sequence number, command, consumer index) into the
// record and, in one 64-bit store, {arm word, cqn} into the UAR's CQ doorbell, then
// Bus::DoorbellRung(). Event() advances the sequence number (the provider's cq_event, called
// once per event read).
//
// The extended API (ibv_cq_ex): StartPoll / NextPoll parse one CQE each into the current
// completion that the ibv_wc_read_* readers return; EndPoll stores the consumer index. StartPoll
// returns ENOENT (and holds nothing) on an empty CQ. A function that is gone writes no more
// CQEs: those already written are still polled, then Poll answers -EIO and StartPoll EIO rather
// than "empty" forever.
//
// Threads: `locked` makes Poll and StartPoll..EndPoll take a spinlock; unlocked CQs
// (IBV_CREATE_CQ_ATTR_SINGLE_THREADED) are polled by one thread at a time. Arm takes no lock (it
// reads the consumer index as last published), so it may run beside a poller, and Arm and Event
// come from the thread that reads events. A poll makes no allocation and no syscall.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "driver/bus/bus.h"
#include "driver/rings/qpn_table.h"
#include "driver/rings/queue_lock.h"
#include "uapi/prm/cqe.h"
#include "uapi/prm/doorbell_record.h"
#include "uapi/result.h"

namespace onchip::driver::rings {

struct CqRingDesc {
  std::byte* buf = nullptr;                 // cqe_cnt * cqe_size bytes
  uint32_t cqe_cnt = 0;                     // a power of two
  uint32_t cqe_size = 64;                   // 64 or 128
  prm::CqDoorbellRecord* dbr = nullptr;     // set_ci and arm_db
  uint32_t cqn = 0;
  std::byte* uar_cq_doorbell = nullptr;     // UAR page + MLX5_CQ_DOORBELL (8 bytes)
  bus::Bus* bus = nullptr;
  const QpnTable* qpns = nullptr;           // finds the work queues of a CQE's QP
  // The device's XRC SRQ table (optional), by user index: a receive CQE carrying an XRC SRQ's
  // user index (kXrcUserIndexFlag) retires that SRQ's WQE whatever QP it names.
  const QpnTable* xrc_srqns = nullptr;
  bool locked = true;
};

// ibv_wc_status for an error CQE's syndrome.
ibv_wc_status StatusOfSyndrome(uint8_t syndrome);

class CqRing {
 public:
  // Whether the bus's function is gone (bus::Bus::gone): one relaxed load.
  bool device_gone() const { return bus_ != nullptr && bus_->gone(); }
  CqRing() = default;
  CqRing(const CqRing&) = delete;
  CqRing& operator=(const CqRing&) = delete;

  // Checks the description (EINVAL: null pointers, count not a power of two or above 2^24, size
  // not 64 or 128) and marks every CQE invalid (op_own = MLX5_CQE_INVALID << 4), which a new
  // CQ's buffer must be before the device writes to it.
  Result<void> Init(const CqRingDesc& desc);

  // ibv_poll_cq: the number of completions written to wc[0..n), or -1 when a CQE names a QP the
  // table does not know or has an opcode no poller expects (that CQE is consumed).
  int Poll(int num_entries, ibv_wc* wc);

  // ibv_req_notify_cq; returns 0.
  int Arm(bool solicited_only);
  // The provider's cq_event: an event was read, the next arm carries the next sequence number.
  void Event() { ++arm_sn_; }

  // Removes the CQEs of QP `qpn` that software has not polled yet, as libmlx5 does when a QP is
  // destroyed or reset: later CQEs move up over them (each slot keeps its owner bit), the
  // consumer index advances past the freed slots, and responder CQEs that named an SRQ WQE give
  // it back to `srq` (null when the QP has none). Call it after the QP left the qpn table.
  void Clean(uint32_t qpn, SrqRing* srq);

  // ibv_resize_cq's ring half. Under the poll lock: marks the `cqe_cnt` CQEs of `buf` (same CQE
  // size, a power of two up to 2^24; EINVAL otherwise) invalid, runs `command` (the MODIFY_CQ
  // resize; its failure is returned and the old ring stays), then copies the CQEs software has
  // not polled, up to the device's RESIZE_CQ CQE, into `buf`, each one slot further on with the
  // new ring's owner bit, and continues on `buf` past the resize CQE. EIO (the new ring in use)
  // when the old ring holds no resize CQE after a successful command.
  template <class Command>
  Result<void> Resize(std::byte* buf, uint32_t cqe_cnt, Command&& command) {
    if (buf == nullptr || cqe_cnt == 0 || !std::has_single_bit(cqe_cnt) || cqe_cnt > (1u << 24))
      return Fail(EINVAL, "cq ring: a resized ring is a power of two of CQEs up to 2^24");
    lock_.lock();
    MarkInvalid(buf, cqe_cnt);
    Result<void> done = command();
    if (done) done = SwitchTo(buf, cqe_cnt);
    lock_.unlock();
    return done;
  }

  // ibv_start_poll / ibv_next_poll / ibv_end_poll.
  int StartPoll(ibv_cq_ex* cq);
  int NextPoll(ibv_cq_ex* cq);
  void EndPoll();

  // The completion StartPoll / NextPoll found, and its device timestamp (the CQE's 64 bits).
  const ibv_wc& current() const { return cur_; }
  uint64_t current_timestamp() const { return cur_ts_; }

  const std::byte* buffer() const { return buf_; }
  uint32_t consumer_index() const { return ci_.load(std::memory_order_relaxed); }
  uint32_t arm_sn() const { return arm_sn_; }
  uint32_t cqn() const { return cqn_; }

 private:
  enum class Parsed { kCompletion, kSkip, kError };

  const std::byte* NextCqe(uint32_t ci) const;  // CqeAt(ci) if Owned, else null
  // The 64-byte CQE at consumer index `index`, and whether one whose op_own byte reads `op_own`
  // there is software's.
  std::byte* CqeAt(uint32_t index) const {
    return buf_ + (std::size_t{index & (cqe_cnt_ - 1)} << cqe_shift_) + cqe_offset_;
  }
  static bool Owned(uint8_t op_own, uint32_t index, uint32_t cqe_cnt);
  int PollLocked(int num_entries, ibv_wc* wc, uint32_t ci, int n);
  Parsed Parse(const std::byte* cqe, ibv_wc* wc, uint64_t* ts);
  static void FillRequester(const prm::pod::mlx5_cqe64& cqe, SendQueue& sq, uint32_t qpn, ibv_wc* wc);
  Parsed ParseError(const std::byte* cqe, const WorkQueues& wq, ibv_wc* wc);
  static bool RetireReceive(const prm::pod::mlx5_cqe64& cqe, const WorkQueues& wq, uint64_t* wr_id);
  int PollOne(ibv_cq_ex* cq);  // consumes CQEs until one completion: 0, ENOENT or EINVAL
  void StoreCi(uint32_t ci);
  void MarkInvalid(std::byte* buf, uint32_t cqe_cnt) const;
  Result<void> SwitchTo(std::byte* buf, uint32_t cqe_cnt);  // lock held, the command done

  std::byte* buf_ = nullptr;
  uint32_t cqe_cnt_ = 0;
  uint32_t cqe_size_ = 64;
  uint32_t cqe_shift_ = 6;   // log2(cqe_size_)
  uint32_t cqe_offset_ = 0;  // 64 for 128-byte CQEs
  prm::CqDoorbellRecord* dbr_ = nullptr;
  uint32_t cqn_ = 0;
  std::byte* uar_cq_doorbell_ = nullptr;
  bus::Bus* bus_ = nullptr;
  const QpnTable* qpns_ = nullptr;
  WorkQueues orphans_;  // {xrc_srqs}: the queues of any receive into an XRC SRQ
  QueueLock lock_;
  std::atomic<uint32_t> ci_{0};  // the poller's; Arm reads it from any thread
  uint32_t arm_sn_ = 0;
  ibv_wc cur_{};
  uint64_t cur_ts_ = 0;
};

}  // namespace onchip::driver::rings
