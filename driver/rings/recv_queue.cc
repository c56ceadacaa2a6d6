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

int RecvQueue::PostRecv(ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
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
  if (nreq != 0) {
    head_ += nreq;
    mmio::ToDeviceBarrier();  // the WQEs before the record that announces them
    mmio::StoreDeviceWord(*db_counter_, prm::Be32::FromHost(head_ & prm::kWqCounterMask));
    bus_->DoorbellRung();
  }
  lock_.unlock();
  return err;
}

}  // namespace onchip::driver::rings
