// A shared receive queue: WQEs linked into a free list by their first 16 bytes
// (mlx5_wqe_srq_next_seg.next_wqe_index), then scatter entries with the receive queue's
// terminator rule. Initially WQE i links to i + 1 (the last to 0), head = 0, tail = the last:
// a post fills the WQE at head and moves head along its link; a completion for WQE i links i
// after the tail and makes it the tail (libmlx5 44's immediate re-linking), so the device,
// following the chain from WQE 0, always finds the WQEs in posting order. One WQE stays unused:
// head == tail is a full queue. The doorbell record is a 16-bit running count of posted WQEs.
//
// Errors: full ENOMEM; more SGEs than max_sge EINVAL; a function that is gone EIO; bad_wr the
// first request not posted.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "driver/bus/bus.h"
#include "driver/rings/queue_lock.h"
#include "uapi/prm/doorbell_record.h"
#include "uapi/result.h"

namespace onchip::driver::rings {

struct SrqRingDesc {
  std::byte* ring = nullptr;                 // wqe_cnt << wqe_shift bytes
  uint32_t wqe_cnt = 0;                      // WQEs, a power of two (>= 2)
  uint32_t wqe_shift = 0;                    // log2 of the stride (>= 5: next segment + one entry)
  uint32_t max_sge = 0;                      // scatter entries a request may carry
  prm::SrqDoorbellRecord* dbr = nullptr;
  bus::Bus* bus = nullptr;
  bool locked = true;
};

class SrqRing {
 public:
  // Whether the bus's function is gone (bus::Bus::gone): one relaxed load.
  bool device_gone() const { return bus_ != nullptr && bus_->gone(); }
  SrqRing() = default;
  SrqRing(const SrqRing&) = delete;
  SrqRing& operator=(const SrqRing&) = delete;

  // Links the free list in the ring. EINVAL for null pointers, a count not a power of two or
  // below 2, a stride too small for max_sge; ENOMEM for the wr_id table.
  Result<void> Init(const SrqRingDesc& desc);

  // ibv_post_srq_recv.
  int PostRecv(ibv_recv_wr* wr, ibv_recv_wr** bad_wr);

  // A responder CQE for WQE `wqe_index`: returns its wr_id and gives the WQE back to the free
  // list. Called by the CQ poller.
  uint64_t Retire(uint16_t wqe_index);

  // Work requests the SRQ holds at most (wqe_cnt - 1: one WQE stays unused).
  uint32_t capacity() const { return wqe_cnt_ - 1; }
  uint32_t head() const { return head_; }
  uint32_t tail() const { return tail_; }

 private:
  std::byte* Wqe(uint32_t index) const { return ring_ + (std::size_t{index} << wqe_shift_); }

  std::byte* ring_ = nullptr;
  uint32_t wqe_cnt_ = 0;
  uint32_t wqe_shift_ = 0;
  uint32_t max_gs_ = 0;
  uint32_t max_sge_ = 0;
  prm::SrqDoorbellRecord* dbr_ = nullptr;
  bus::Bus* bus_ = nullptr;
  QueueLock lock_;
  std::unique_ptr<uint64_t[]> wrid_;
  uint32_t head_ = 0;
  uint32_t tail_ = 0;
  uint16_t counter_ = 0;
};

}  // namespace onchip::driver::rings
