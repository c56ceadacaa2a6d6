// The receive half of a QP: one WQE per work request, a list of scatter entries (zero-length
// SGEs skipped) ended by a terminator {0, MLX5_INVALID_LKEY, 0} when shorter than the stride
// allows, and no MMIO doorbell: after a store barrier the doorbell record's receive counter says
// how many WQEs exist (16 bits). The device consumes them in order, so completions retire them
// in order (libmlx5 44 takes the wr_id from the tail, not from the CQE's wqe_counter).
//
// Errors as libmlx5 gives them: a full queue ENOMEM; more SGEs than the stride holds, or any
// before INIT (SetStateMaxGs), EINVAL; a function that is gone EIO; bad_wr is the first request
// not posted.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "driver/bus/bus.h"
#include "driver/rings/queue_lock.h"
#include "uapi/prm/endian.h"
#include "uapi/result.h"

namespace onchip::driver::rings {

struct RecvQueueDesc {
  std::byte* ring = nullptr;        // wqe_cnt << wqe_shift bytes
  uint32_t wqe_cnt = 0;             // WQEs, a power of two
  uint32_t wqe_shift = 0;           // log2 of the stride (>= 4: one scatter entry)
  uint32_t max_recv_sge = 0;        // scatter entries a request may carry (<= stride / 16)
  prm::Be32* db_counter = nullptr;  // the doorbell record's rcv_counter (MLX5_RCV_DBR)
  bus::Bus* bus = nullptr;          // whose gone() the posts check
  bool locked = true;
};

class RecvQueue {
 public:
  // Whether the bus's function is gone (bus::Bus::gone): one relaxed load.
  bool device_gone() const { return bus_ != nullptr && bus_->gone(); }
  RecvQueue() = default;
  RecvQueue(const RecvQueue&) = delete;
  RecvQueue& operator=(const RecvQueue&) = delete;

  // EINVAL for a null ring/record/bus, a count not a power of two, a stride below 16 bytes or
  // too small for max_recv_sge; ENOMEM for the wr_id table.
  Result<void> Init(const RecvQueueDesc& desc);

  // ibv_post_recv: 0 or the errno, *bad_wr set on failure.
  int PostRecv(ibv_recv_wr* wr, ibv_recv_wr** bad_wr);

  // The scatter entries a request may carry in the QP's state: -1 in RESET (nothing passes),
  // max_recv_sge from INIT. Init sets max_recv_sge.
  void SetStateMaxGs(int max_gs) { state_max_gs_ = max_gs; }

  // A responder CQE: the oldest WQE is done; returns its wr_id. Called by the CQ poller.
  uint64_t Retire() {
    const uint32_t tail = tail_.load(std::memory_order_relaxed);
    const uint64_t wr_id = wrid_[tail & (wqe_cnt_ - 1)];
    tail_.store(tail + 1, std::memory_order_release);
    return wr_id;
  }

  uint32_t head() const { return head_; }
  uint32_t outstanding() const { return head_ - tail_.load(std::memory_order_acquire); }

 private:
  bool Single(const ibv_recv_wr* wr) const;
  int PostList(ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
  void Announce(uint32_t head);

  std::byte* ring_ = nullptr;
  uint32_t wqe_cnt_ = 0;
  uint32_t wqe_shift_ = 0;
  uint32_t max_gs_ = 0;  // scatter entries the stride holds
  int state_max_gs_ = 0;
  prm::Be32* db_counter_ = nullptr;
  bus::Bus* bus_ = nullptr;
  QueueLock lock_;
  std::unique_ptr<uint64_t[]> wrid_;
  uint32_t head_ = 0;
  std::atomic<uint32_t> tail_{0};
};

}  // namespace onchip::driver::rings
