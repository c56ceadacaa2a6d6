#include "driver/rings/recv_queue.h"

#include <bit>
#include <cerrno>
#include <new>

#include "driver/rings/scatter.h"
#include "mmio/barriers.h"
#include "mmio/device_word.h"
#include "uapi/prm/doorbell_record.h"

namespace onchip::driver::rings {

Result<void> RecvQueue::Init(const RecvQueueDesc& d) {
  if (d.ring == nullptr || d.db_counter == nullptr || d.bus == nullptr)
    return Fail(EINVAL, "recv queue: ring, doorbell record and bus are required");
  if (d.wqe_cnt == 0 || !std::has_single_bit(d.wqe_cnt))
    return Fail(EINVAL, "recv queue: WQE count must be a power of two");
  if (d.wqe_shift < 4 || d.wqe_shift > 16) return Fail(EINVAL, "recv queue: stride out of range");
  const uint32_t max_gs = (uint32_t{1} << d.wqe_shift) / prm::MLX5_SEND_WQE_DS;
  if (d.max_recv_sge > max_gs) return Fail(EINVAL, "recv queue: stride too small for max_recv_sge");
  wrid_.reset(new (std::nothrow) uint64_t[d.wqe_cnt]);
  if (!wrid_) return Fail(ENOMEM, "recv queue: wr_id table");
  ring_ = d.ring;
  wqe_cnt_ = d.wqe_cnt;
  wqe_shift_ = d.wqe_shift;
  max_gs_ = max_gs;
  state_max_gs_ = static_cast<int>(d.max_recv_sge);
  db_counter_ = d.db_counter;
  bus_ = d.bus;
  lock_.set_locked(d.locked);
  return {};
}

// The WQEs up to `head` exist: the record says so, after them. Nothing is rung: the device
// reads a receive queue's record when a message for it arrives (as libmlx5's mlx5_post_recv
// only stores the record), so a receive post wakes no sleeping software device either.
[[gnu::always_inline]] inline void RecvQueue::Announce(uint32_t head) {
  head_ = head;
  mmio::ToDeviceBarrier();  // the WQEs before the record that announces them
  mmio::StoreDeviceWord(*db_counter_, prm::Be32::FromHost(head & prm::kWqCounterMask));
}

// The common post, one request with one non-empty SGE, is written here with nothing else live:
// one data segment (and the terminator when the stride holds more), its wr_id, the record.
// Anything else, and any request that would fail, takes PostList, which gives the errors.
[[gnu::always_inline]] inline bool RecvQueue::Single(const ibv_recv_wr* wr) const {
  return wr->next == nullptr && wr->num_sge == 1 && state_max_gs_ >= 1 &&
         wr->sg_list[0].length != 0 && !device_gone();
}

int RecvQueue::PostRecv(ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  if (!Single(wr)) return PostList(wr, bad_wr);
  lock_.lock();
  const uint32_t head = head_;
  if (head - tail_.load(std::memory_order_acquire) >= wqe_cnt_) [[unlikely]] {
    lock_.unlock();
    return PostList(wr, bad_wr);
  }
  const uint32_t idx = head & (wqe_cnt_ - 1);
  std::byte* wqe = ring_ + (std::size_t{idx} << wqe_shift_);
  const ibv_sge& sge = wr->sg_list[0];
  StoreDataSegment(wqe, sge.lkey, sge.addr, sge.length);
  if (max_gs_ > 1) StoreScatterEnd(wqe + sizeof(prm::pod::mlx5_wqe_data_seg));
  wrid_[idx] = wr->wr_id;
  Announce(head + 1);
  lock_.unlock();
  return 0;
}

[[gnu::noinline]] int RecvQueue::PostList(ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  if (device_gone()) [[unlikely]] {
    *bad_wr = wr;
    return EIO;
  }
  lock_.lock();
  int err = 0;
  uint32_t nreq = 0;
  for (; wr != nullptr; wr = wr->next, ++nreq) {
    if (head_ + nreq - tail_.load(std::memory_order_acquire) >= wqe_cnt_) {
      err = ENOMEM;
    } else if (wr->num_sge > state_max_gs_) {
      err = EINVAL;
    }
    if (err != 0) {
      *bad_wr = wr;
      break;
    }
    const uint32_t idx = (head_ + nreq) & (wqe_cnt_ - 1);
    WriteScatter(ring_ + (std::size_t{idx} << wqe_shift_), wr->sg_list, wr->num_sge, max_gs_);
    wrid_[idx] = wr->wr_id;
  }
  if (nreq != 0) Announce(head_ + nreq);
  lock_.unlock();
  return err;
}

}  // namespace onchip::driver::rings
