#include "driver/rings/srq_ring.h"

#include <bit>
#include <cerrno>
#include <cstring>
#include <new>

#include "driver/rings/scatter.h"
#include "mmio/barriers.h"
#include "mmio/device_word.h"
#include "uapi/prm/recv_wqe.h"

namespace onchip::driver::rings {
namespace {

using Next = prm::pod::mlx5_wqe_srq_next_seg;

Next* NextOf(std::byte* wqe) { return reinterpret_cast<Next*>(wqe); }

}  // namespace

Result<void> SrqRing::Init(const SrqRingDesc& d) {
  if (d.ring == nullptr || d.dbr == nullptr || d.bus == nullptr)
    return Fail(EINVAL, "srq: ring, doorbell record and bus are required");
  if (d.wqe_cnt < 2 || !std::has_single_bit(d.wqe_cnt) || d.wqe_cnt > 0x10000)
    return Fail(EINVAL, "srq: WQE count must be a power of two, 2..65536");
  if (d.wqe_shift < 5 || d.wqe_shift > 16) return Fail(EINVAL, "srq: stride out of range");
  const uint32_t max_gs = ((uint32_t{1} << d.wqe_shift) - sizeof(Next)) / prm::MLX5_SEND_WQE_DS;
  if (d.max_sge > max_gs) return Fail(EINVAL, "srq: stride too small for max_sge");
  wrid_.reset(new (std::nothrow) uint64_t[d.wqe_cnt]);
  if (!wrid_) return Fail(ENOMEM, "srq: wr_id table");
  ring_ = d.ring;
  wqe_cnt_ = d.wqe_cnt;
  wqe_shift_ = d.wqe_shift;
  max_gs_ = max_gs;
  max_sge_ = d.max_sge;
  dbr_ = d.dbr;
  bus_ = d.bus;
  lock_.set_locked(d.locked);
  for (uint32_t i = 0; i < wqe_cnt_; ++i) {
    Next* next = NextOf(Wqe(i));
    std::memset(next, 0, sizeof(*next));
    next->next_wqe_index = prm::Be16::FromHost(static_cast<uint16_t>((i + 1) & (wqe_cnt_ - 1)));
  }
  head_ = 0;
  tail_ = wqe_cnt_ - 1;
  counter_ = 0;
  return {};
}

int SrqRing::PostRecv(ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  if (device_gone()) [[unlikely]] {
    *bad_wr = wr;
    return EIO;
  }
  lock_.lock();
  int err = 0;
  uint32_t nreq = 0;
  for (; wr != nullptr; wr = wr->next, ++nreq) {
    if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > max_sge_) {
      err = EINVAL;
    } else if (head_ == tail_) {
      err = ENOMEM;
    }
    if (err != 0) {
      *bad_wr = wr;
      break;
    }
    std::byte* wqe = Wqe(head_);
    WriteScatter(wqe + sizeof(Next), wr->sg_list, wr->num_sge, max_gs_);
    wrid_[head_] = wr->wr_id;
    ++counter_;
    head_ = NextOf(wqe)->next_wqe_index.host();
  }
  if (nreq != 0) {
    mmio::ToDeviceBarrier();  // the WQEs before the count that announces them
    // Read by the device when a message arrives: nothing to ring (RecvQueue::Announce).
    mmio::StoreDeviceWord(dbr_->counter, prm::Be32::FromHost(counter_));
  }
  lock_.unlock();
  return err;
}

uint64_t SrqRing::Retire(uint16_t wqe_index) {
  const uint32_t index = wqe_index & (wqe_cnt_ - 1);
  lock_.lock();
  const uint64_t wr_id = wrid_[index];
  NextOf(Wqe(tail_))->next_wqe_index = prm::Be16::FromHost(static_cast<uint16_t>(index));
  tail_ = index;
  lock_.unlock();
  return wr_id;
}

}  // namespace onchip::driver::rings
