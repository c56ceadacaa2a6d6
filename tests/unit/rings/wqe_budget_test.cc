// The WQE budget against the numbers libmlx5 computes for the same requests (rdma-core
// providers/mlx5/verbs.c: sq_overhead, calc_send_wqe and the max_inline_data it reports,
// calc_recv_wqe, mlx5_create_srq's stride) and mlx5_ib's device limits (mlx5_ib_query_device),
// each worked out from the mlx5dv.h segment sizes pinned first.
#include "driver/rings/wqe_budget.h"

#include <gtest/gtest.h>
#include <infiniband/mlx5dv.h>

namespace onchip::driver::rings {
namespace {

TEST(WqeBudget, SegmentSizesAreLibmlx5s) {
  static_assert(sizeof(::mlx5_wqe_ctrl_seg) == 16 && sizeof(::mlx5_wqe_raddr_seg) == 16);
  static_assert(sizeof(::mlx5_wqe_atomic_seg) == 16 && sizeof(::mlx5_wqe_data_seg) == 16);
  static_assert(sizeof(::mlx5_wqe_datagram_seg) == 48 && sizeof(::mlx5_wqe_eth_seg) == 32);
  static_assert(sizeof(::mlx5_wqe_umr_ctrl_seg) == 48 && sizeof(::mlx5_wqe_mkey_context_seg) == 64);
  static_assert(sizeof(::mlx5_wqe_inl_data_seg) == 4 && sizeof(::mlx5_wqe_srq_next_seg) == 16);
  // sq_overhead: ctrl + the transport's body; a window bind's body is UMR control, mkey
  // context and a 64-byte KLM block (48 + 64 + 64).
  EXPECT_EQ(SendWqeOverhead(QpTransport::kRc, false), 16u + 16 + 16);
  EXPECT_EQ(SendWqeOverhead(QpTransport::kRc, true), 16u + 176);
  EXPECT_EQ(SendWqeOverhead(QpTransport::kUc, false), 16u + 16);
  EXPECT_EQ(SendWqeOverhead(QpTransport::kUc, true), 16u + 176);
  EXPECT_EQ(SendWqeOverhead(QpTransport::kXrc, false), 16u + 16 + 16 + 16);
  EXPECT_EQ(SendWqeOverhead(QpTransport::kXrc, true), 16u + 176);
  EXPECT_EQ(SendWqeOverhead(QpTransport::kUd, false), 16u + 48);
  EXPECT_EQ(SendWqeOverhead(QpTransport::kRaw, false), 16u + 32);
  // No window binds on UD or raw packet QPs: the flag changes nothing there.
  EXPECT_EQ(SendWqeOverhead(QpTransport::kUd, true), 16u + 48);
  EXPECT_EQ(SendWqeOverhead(QpTransport::kRaw, true), 16u + 32);
}

struct SendCase {
  QpTransport transport;
  bool umr;
  uint32_t sge, inline_data;
  uint64_t wqe, max_inline;
};

TEST(WqeBudget, SendWqesPerTransport) {
  const SendCase cases[] = {
      // RC as ibv_create_qp makes it (may bind): 192 + 16 = 208 -> 256; 256 - 192 - 4 inline.
      {QpTransport::kRc, true, 1, 0, 256, 60},
      // RC created with send_ops_flags that name no bind: 48 + 16 = 64.
      {QpTransport::kRc, false, 1, 0, 64, 12},
      // The larger of the gather list (48 + 64) and the inline data (48 + align(4 + 64, 16)).
      {QpTransport::kRc, false, 4, 64, 128, 76},
      {QpTransport::kUc, true, 2, 0, 256, 60},
      {QpTransport::kXrc, true, 2, 0, 256, 60},
      {QpTransport::kXrc, false, 1, 0, 128, 60},
      // UD: 64 + 16 = 80 -> 128; perftest's inline 220: 64 + 224 = 288 -> 320.
      {QpTransport::kUd, false, 1, 0, 128, 60},
      {QpTransport::kUd, false, 1, 220, 320, 252},
      {QpTransport::kRaw, false, 1, 0, 64, 12},
      // Thirty gather entries on RC without bind: 48 + 480 = 528 -> 576.
      {QpTransport::kRc, false, 30, 0, 576, 524},
  };
  for (const SendCase& c : cases) {
    SCOPED_TRACE(testing::Message() << "transport " << int(c.transport) << " umr " << c.umr
                                    << " sge " << c.sge << " inline " << c.inline_data);
    const uint64_t wqe = SendWqeBytes(
        {.transport = c.transport, .umr = c.umr, .max_send_sge = c.sge, .max_inline_data = c.inline_data});
    EXPECT_EQ(wqe, c.wqe);
    EXPECT_EQ(SendInlineCapacity(wqe, c.transport, c.umr), c.max_inline);
  }
  // Counts no device allows still compute without overflow: the caller refuses the size.
  EXPECT_EQ(SendWqeBytes({.transport = QpTransport::kRc, .max_send_sge = 0xffffffffu}),
            (48 + 16 * uint64_t{0xffffffffu} + 63) / 64 * 64);
}

TEST(WqeBudget, ReceiveAndSrqStrides) {
  EXPECT_EQ(RecvWqeBytes(0), 16u);  // a receive WQE holds at least one entry
  EXPECT_EQ(RecvWqeBytes(1), 16u);
  EXPECT_EQ(RecvWqeBytes(3), 64u);
  EXPECT_EQ(RecvSgeCapacity(64), 4u);
  EXPECT_EQ(SrqWqeBytes(0), 32u);  // at least 32 bytes
  EXPECT_EQ(SrqWqeBytes(1), 32u);
  EXPECT_EQ(SrqWqeBytes(2), 64u);  // 16 + 32 = 48 -> 64
  EXPECT_EQ(SrqSgeCapacity(64), 3u);
  EXPECT_EQ(SrqSgeCapacity(32), 1u);
}

TEST(WqeBudget, DeviceSgeLimitsAreMlx5Ibs) {
  // max_sq_desc = min(max_wqe_sz_sq, 512); (512 - ctrl - raddr) / 16 = 30 against
  // max_wqe_sz_rq / 16.
  EXPECT_EQ(DeviceSges(1024, 512).max_sge, 30u);
  EXPECT_EQ(DeviceSges(1024, 512).max_sge_rd, 30u);
  EXPECT_EQ(DeviceSges(1024, 512).max_srq_sge, 31u);  // max_wqe_sz_rq / 16 - 1
  EXPECT_EQ(DeviceSges(1024, 0).max_srq_sge, 0u);
  EXPECT_EQ(DeviceSges(1024, 256).max_sge, 16u);
  EXPECT_EQ(DeviceSges(256, 512).max_sge, 14u);
  EXPECT_EQ(DeviceSges(16, 512).max_sge, 0u);
}

}  // namespace
}  // namespace onchip::driver::rings
