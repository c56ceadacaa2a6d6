#include "driver/rings/wqe_budget.h"

#include <algorithm>
#include <bit>

#include "uapi/prm/recv_wqe.h"
#include "uapi/prm/send_wqe.h"
#include "uapi/prm/umr.h"

namespace onchip::driver::rings {
namespace {

constexpr uint64_t kBb = prm::MLX5_SEND_WQE_BB;
constexpr uint64_t kCtrl = sizeof(prm::pod::mlx5_wqe_ctrl_seg);
constexpr uint64_t kRaddr = sizeof(prm::pod::mlx5_wqe_raddr_seg);
constexpr uint64_t kAtomic = sizeof(prm::pod::mlx5_wqe_atomic_seg);
constexpr uint64_t kXrc = sizeof(prm::pod::mlx5_wqe_xrc_seg);
constexpr uint64_t kAv = sizeof(prm::pod::mlx5_wqe_av);
constexpr uint64_t kData = sizeof(prm::pod::mlx5_wqe_data_seg);
constexpr uint64_t kInlineHeader = sizeof(prm::pod::mlx5_wqe_inline_seg);
constexpr uint64_t kSrqNext = sizeof(prm::pod::mlx5_wqe_srq_next_seg);
// struct mlx5_wqe_eth_seg (rdma-core providers/mlx5/mlx5dv.h), its 16 inline L2 header bytes
// included; onchip has no layout of it, as it posts no raw packet WQE.
constexpr uint64_t kEthSeg = 32;
// A bind's body after the control segment: UMR control, mkey segment, inline KLM block.
constexpr uint64_t kUmrBody = prm::UmrWqe::kBindBytes - kCtrl;
constexpr uint64_t kMinSrqStride = 32;
// mlx5_ib plans send descriptors of at most 512 bytes (mlx5_ib_query_device).
constexpr uint64_t kMaxSqDesc = 512;

uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

uint64_t SendWqeOverhead(QpTransport transport, bool umr) {
  const uint64_t bind = umr ? kUmrBody : 0;
  switch (transport) {
    case QpTransport::kRc: return kCtrl + std::max(kRaddr + kAtomic, bind);
    case QpTransport::kXrc: return kCtrl + std::max(kXrc + kRaddr + kAtomic, bind);
    case QpTransport::kUc: return kCtrl + std::max(kRaddr, bind);
    case QpTransport::kRaw: return kCtrl + kEthSeg;
    case QpTransport::kUd: return kCtrl + kAv;
  }
  return kCtrl + kAv;
}

uint64_t SendWqeBytes(const SendWqeNeeds& needs) {
  const uint64_t overhead = SendWqeOverhead(needs.transport, needs.umr);
  const uint64_t gather = overhead + needs.max_send_sge * kData;
  const uint64_t inline_size =
      needs.max_inline_data ? overhead + AlignUp(kInlineHeader + needs.max_inline_data, kData) : 0;
  return AlignUp(std::max(gather, inline_size), kBb);
}

uint64_t SendInlineCapacity(uint64_t wqe_bytes, QpTransport transport, bool umr) {
  const uint64_t used = SendWqeOverhead(transport, umr) + kInlineHeader;
  return wqe_bytes > used ? wqe_bytes - used : 0;
}

uint64_t RecvWqeBytes(uint64_t max_recv_sge) {
  return std::bit_ceil(kData * std::max<uint64_t>(max_recv_sge, 1));
}

uint64_t RecvSgeCapacity(uint64_t stride) { return stride / kData; }

uint64_t SrqWqeBytes(uint64_t max_sge) {
  return std::bit_ceil(std::max(kMinSrqStride, kSrqNext + kData * max_sge));
}

uint64_t SrqSgeCapacity(uint64_t stride) { return stride > kSrqNext ? (stride - kSrqNext) / kData : 0; }

DeviceSgeLimits DeviceSges(uint32_t max_wqe_sz_sq, uint32_t max_wqe_sz_rq) {
  const uint64_t sq_overhead = kCtrl + kRaddr;
  const uint64_t max_sq_desc = std::min<uint64_t>(max_wqe_sz_sq, kMaxSqDesc);
  const uint64_t max_sq_sg = max_sq_desc > sq_overhead ? (max_sq_desc - sq_overhead) / kData : 0;
  const uint64_t max_rq_sg = max_wqe_sz_rq / kData;
  return {.max_sge = static_cast<uint32_t>(std::min(max_sq_sg, max_rq_sg)),
          .max_sge_rd = static_cast<uint32_t>((kMaxSqDesc - sq_overhead) / kData),
          .max_srq_sge = static_cast<uint32_t>(max_rq_sg > 0 ? max_rq_sg - 1 : 0)};
}

}  // namespace onchip::driver::rings
