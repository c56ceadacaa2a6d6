// The UMR work request BuildBindWqe writes, compared byte for byte with the layout rdma-core's
// mlx5 provider posts for the same bind: the expected bytes are assembled here from
// <infiniband/mlx5dv.h>'s own structs and constants (mlx5_wqe_ctrl_seg, mlx5_wqe_umr_ctrl_seg,
// mlx5_wqe_mkey_context_seg, mlx5_wqe_umr_klm_seg), following the facts of the PRM reference's
// UMR section, so the driver is judged by an outside layout and not only by the software
// ConnectX's parser of its own output. The send-queue index and the fence/signal byte belong
// to posting, which these WQEs have not reached yet: both are zero here.
#include <endian.h>
#include <gtest/gtest.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <span>

#include "driver/mw.h"
#include "driver/mw_bind.h"

namespace onchip {
namespace {

struct Bind {
  ibv_mw_type type;
  uint32_t old_rkey, new_rkey, qpn;
  uint64_t addr, length;
  unsigned access;
  uint32_t mr_lkey;
};

// The WQE as rdma-core's provider lays it out, from mlx5dv.h's structs.
std::array<std::byte, 192> Expected(const Bind& b, std::size_t* size) {
  const bool bind = b.length != 0;
  const bool type2 = b.type == IBV_MW_TYPE_2;
  *size = bind ? 192 : 128;  // ctrl 16 + umr ctrl 48 + mkey context 64 [+ 64-byte inline KLM]

  mlx5_wqe_ctrl_seg ctrl{};
  ctrl.opmod_idx_opcode = htobe32(MLX5_OPCODE_UMR);
  ctrl.qpn_ds = htobe32(b.qpn << 8 | static_cast<uint32_t>(*size / 16));
  ctrl.imm = htobe32(b.old_rkey);

  mlx5_wqe_umr_ctrl_seg umr{};
  umr.flags = MLX5_WQE_UMR_CTRL_FLAG_INLINE | MLX5_WQE_UMR_CTRL_FLAG_TRNSLATION_OFFSET;
  uint64_t mask = MLX5_WQE_UMR_CTRL_MKEY_MASK_FREE | MLX5_WQE_UMR_CTRL_MKEY_MASK_MKEY;
  if (type2) {
    mask |= MLX5_WQE_UMR_CTRL_MKEY_MASK_QPN;
    umr.flags |= bind ? MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE : MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN;
  }
  if (bind) {
    umr.klm_octowords = htobe16(4);  // one 16-byte KLM in a 64-byte block
    mask |= MLX5_WQE_UMR_CTRL_MKEY_MASK_LEN | MLX5_WQE_UMR_CTRL_MKEY_MASK_START_ADDR |
            MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_LOCAL_WRITE |
            MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_READ |
            MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_WRITE |
            MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_ATOMIC;
  }
  umr.mkey_mask = htobe64(mask);

  mlx5_wqe_mkey_context_seg mkey{};
  const uint32_t bound_qp = (!type2 || !bind) ? 0xffffff00u : b.qpn << 8;
  mkey.qpn_mkey = htobe32(bound_qp | (b.new_rkey & 0xff));
  if (bind) {
    uint8_t access = 0;
    if (b.access & IBV_ACCESS_LOCAL_WRITE) access |= MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_LOCAL_WRITE;
    if (b.access & IBV_ACCESS_REMOTE_READ) access |= MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_READ;
    if (b.access & IBV_ACCESS_REMOTE_WRITE)
      access |= MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_WRITE;
    if (b.access & IBV_ACCESS_REMOTE_ATOMIC) access |= MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_ATOMIC;
    mkey.access_flags = access;
    mkey.start_addr = htobe64(b.addr);
    mkey.len = htobe64(b.length);
  } else {
    mkey.free = MLX5_WQE_MKEY_CONTEXT_FREE;
  }

  mlx5_wqe_umr_klm_seg klm{};
  klm.byte_count = htobe32(static_cast<uint32_t>(b.length));
  klm.mkey = htobe32(b.mr_lkey);
  klm.address = htobe64(b.addr);

  static_assert(sizeof ctrl == 16 && sizeof umr == 48 && sizeof mkey == 64 && sizeof klm == 16);
  std::array<std::byte, 192> out{};
  std::memcpy(out.data(), &ctrl, sizeof ctrl);
  std::memcpy(out.data() + 16, &umr, sizeof umr);
  std::memcpy(out.data() + 64, &mkey, sizeof mkey);
  if (bind) std::memcpy(out.data() + 128, &klm, sizeof klm);  // the rest of the block stays 0
  return out;
}

// What the driver writes for the same bind.
std::array<std::byte, 192> Built(const Bind& b, std::size_t* size) {
  driver::Mw mw{};
  mw.ibv.type = b.type;
  mw.ibv.rkey = b.old_rkey;
  ibv_mr mr{};
  mr.lkey = mr.rkey = b.mr_lkey;
  ibv_mw_bind_info info{};
  info.mr = b.length != 0 ? &mr : nullptr;
  info.addr = b.addr;
  info.length = b.length;
  info.mw_access_flags = b.access;
  std::array<std::byte, 192> out;
  out.fill(std::byte{0xa5});  // what the driver does not write must not look like zeros
  auto n = driver::BuildBindWqe(mw, b.new_rkey, info, b.qpn, out);
  EXPECT_TRUE(n) << n.error().describe();
  *size = n ? *n : 0;
  return out;
}

void ExpectSameBytes(const Bind& b) {
  std::size_t want_size = 0, got_size = 0;
  const auto want = Expected(b, &want_size);
  const auto got = Built(b, &got_size);
  ASSERT_EQ(got_size, want_size);
  for (std::size_t i = 0; i < want_size; ++i)
    EXPECT_EQ(static_cast<unsigned>(got[i]), static_cast<unsigned>(want[i]))
        << "byte " << i << " (segment at " << (i < 16 ? 0 : i < 64 ? 16 : i < 128 ? 64 : 128)
        << ")";
  for (std::size_t i = want_size; i < got.size(); ++i)
    ASSERT_EQ(got[i], std::byte{0xa5}) << "wrote past the WQE at byte " << i;
}

constexpr unsigned kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
                          IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;

TEST(BindWqe, Type1BindIsRdmaCoresLayout) {
  ExpectSameBytes({IBV_MW_TYPE_1, 0x00123407, 0x00123408, 0x000abc, 0x00007f0012345678, 4096,
                   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, 0x00456701});
}

TEST(BindWqe, Type2BindCarriesTheQpAndChecksFree) {
  ExpectSameBytes({IBV_MW_TYPE_2, 0x000777ff, 0x00077700, 0x123456, 0x1000, uint64_t{1} << 31,
                   kAll, 0x00fedc02});
}

TEST(BindWqe, EachAccessBitLandsWhereMlx5dvSays) {
  for (ibv_access_flags bit : {IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_READ,
                               IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_ATOMIC}) {
    SCOPED_TRACE(static_cast<unsigned>(bit));
    ExpectSameBytes({IBV_MW_TYPE_1, 0x100, 0x101, 7, 0x2000, 64, static_cast<unsigned>(bit), 0x300});
  }
}

TEST(BindWqe, Type2InvalidateIsRdmaCoresLayout) {
  ExpectSameBytes({IBV_MW_TYPE_2, 0x00abcd11, 0, 0x000042, 0, 0, 0, 0});
}

TEST(BindWqe, Type1ZeroLengthUnbindIsRdmaCoresLayout) {
  ExpectSameBytes({IBV_MW_TYPE_1, 0x00abcd11, 0x00abcd12, 0x000042, 0, 0, 0, 0});
}

}  // namespace
}  // namespace onchip
