// How large a queue's WQEs are: the one answer create_qp, the send ring, create_srq and
// query_device share. libmlx5's arithmetic (rdma-core providers/mlx5/verbs.c: sq_overhead,
// calc_send_wqe, calc_recv_wqe, mlx5_create_srq) over the segment layouts of uapi/prm, and
// mlx5_ib's for the device's scatter/gather limits (the kernel's
// drivers/infiniband/hw/mlx5/main.c, mlx5_ib_query_device). Sizes are uint64_t: the counts come
// from the application and are not bounded before these are computed.
//
// A send WQE: the control segment, the transport's largest operation body (remote address and
// atomic segments, the XRC segment, the UD address vector, the raw packet Ethernet segment, or,
// on a QP that may bind windows, a UMR's body), then the larger of the gather list and the
// inline data (its 4-byte header and the bytes, in 16-byte units); rounded up to the 64-byte
// basic block. A receive WQE: its scatter entries, a power of two of 16-byte entries. An SRQ
// WQE: the next segment and its scatter entries, a power of two of at least 32 bytes.
#pragma once

#include <cstdint>

#include "driver/rings/qp_transport.h"

namespace onchip::driver::rings {

struct SendWqeNeeds {
  QpTransport transport = QpTransport::kRc;
  bool umr = false;  // the QP may bind or invalidate windows; ignored on UD and raw packet QPs
  uint64_t max_send_sge = 0;
  uint64_t max_inline_data = 0;
};

// The control segment and the largest operation body.
uint64_t SendWqeOverhead(QpTransport transport, bool umr);
// The largest WQE of a QP with these needs, a multiple of 64 bytes.
uint64_t SendWqeBytes(const SendWqeNeeds& needs);
// The inline bytes a WQE of `wqe_bytes` carries (libmlx5's max_inline_data after create).
uint64_t SendInlineCapacity(uint64_t wqe_bytes, QpTransport transport, bool umr);

// A receive WQE's stride for `max_recv_sge` entries (at least one), and the entries it holds.
uint64_t RecvWqeBytes(uint64_t max_recv_sge);
uint64_t RecvSgeCapacity(uint64_t stride);
// An SRQ WQE's stride for `max_sge` entries, and the entries it holds.
uint64_t SrqWqeBytes(uint64_t max_sge);
uint64_t SrqSgeCapacity(uint64_t stride);

// The device's scatter/gather limits from its capabilities (max_wqe_sz_sq, max_wqe_sz_rq):
// ibv_device_attr's max_sge, max_sge_rd and max_srq_sge (an SRQ WQE's next segment takes the
// place of one entry).
struct DeviceSgeLimits {
  uint32_t max_sge = 0;
  uint32_t max_sge_rd = 0;
  uint32_t max_srq_sge = 0;
};
DeviceSgeLimits DeviceSges(uint32_t max_wqe_sz_sq, uint32_t max_wqe_sz_rq);

}  // namespace onchip::driver::rings
