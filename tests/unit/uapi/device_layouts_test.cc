// The device layouts the driver and the software ConnectX share (UAR page, init segment,
// doorbell records, WQE segments, CQE), checked against sources outside this tree: rdma-core's
// public <infiniband/mlx5dv.h> (sizes, offsets, constant values) and the PRM reference's byte
// offsets. The plain structs are also tied to the generated descriptors at compile time
// (uapi/prm/pod.h); here the same bytes are read through both views.
#include <infiniband/mlx5dv.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "uapi/prm/cqe.h"
#include "uapi/prm/cqe_syndrome.h"
#include "uapi/prm/doorbell_record.h"
#include "uapi/prm/endian.h"
#include "uapi/prm/field.h"
#include "uapi/prm/init_seg_access.h"
#include "uapi/prm/recv_wqe.h"
#include "uapi/prm/send_wqe.h"
#include "uapi/prm/uar_page.h"
#include "uapi/prm/umr.h"

namespace onchip::prm {
namespace {

// Values of unrelated enum types compared as integers.
template <class A, class B>
void ExpectSameValue(A ours, B theirs, const char* what) {
  EXPECT_EQ(static_cast<uint64_t>(ours), static_cast<uint64_t>(theirs)) << what;
}
#define EXPECT_SAME(ours, theirs) ExpectSameValue(ours, theirs, #ours " vs " #theirs)

// ---- Big-endian words ----

TEST(BigEndian, StoresTheDeviceByteOrder) {
  const Be32 v = Be32::FromHost(0x12345678);
  std::array<uint8_t, 4> bytes;
  std::memcpy(bytes.data(), &v, 4);
  EXPECT_EQ(bytes, (std::array<uint8_t, 4>{0x12, 0x34, 0x56, 0x78}));
  EXPECT_EQ(v.host(), 0x12345678u);
  const Be64 w = Be64::FromHost(0x0102030405060708);
  std::array<uint8_t, 8> wbytes;
  std::memcpy(wbytes.data(), &w, 8);
  EXPECT_EQ(wbytes, (std::array<uint8_t, 8>{1, 2, 3, 4, 5, 6, 7, 8}));
  const Be16 h = Be16::FromHost(0xabcd);
  EXPECT_EQ(h.raw(), htobe16(0xabcd));
  EXPECT_EQ(Be32::FromRaw(v.raw()), v);
}

// ---- UAR page ----

TEST(UarPage, OffsetsMatchMlx5dvAndThePrm) {
  EXPECT_EQ(sizeof(UarPage), 4096u);
  EXPECT_EQ(kUarPageBytes, 4096u);
  EXPECT_SAME(MLX5_CQ_DOORBELL, ::MLX5_CQ_DOORBELL);
  EXPECT_EQ(offsetof(UarPage, cq_doorbell), 0x20u);
  EXPECT_EQ(offsetof(UarPage, cq_doorbell) + offsetof(CqUarDoorbell, cqn), 0x24u);
  EXPECT_EQ(kEqDoorbellArm, 0x40u);
  EXPECT_EQ(kEqDoorbellUpdateCi, 0x48u);
  EXPECT_EQ(MLX5_BF_OFFSET, 0x800u);
  EXPECT_EQ(UarPageOffset(9), 9u * 4096);
}

TEST(UarPage, BlueFlameRegistersAndHalves) {
  EXPECT_EQ(BfregOffset(0, 512), 0x800u);
  EXPECT_EQ(BfregOffset(1, 512), 0xa00u);
  EXPECT_EQ(BfregOffset(3, 512), 0xe00u);
  EXPECT_EQ(BfregHalfBytes(512), 256u);
  EXPECT_TRUE(BfregsFit(MLX5_BFREGS_PER_UAR, 512));
  EXPECT_FALSE(BfregsFit(MLX5_BFREGS_PER_UAR + 1, 512));
  EXPECT_TRUE(BfregsFit(1, 2048));
  EXPECT_FALSE(BfregsFit(1, 4096));
  EXPECT_EQ(EqDoorbellWord(0x12, 0x1abcdef), 0x12abcdefu);
}

// ---- Doorbell records ----

TEST(DoorbellRecord, QpRecordMatchesMlx5dv) {
  EXPECT_SAME(MLX5_RCV_DBR, ::MLX5_RCV_DBR);
  EXPECT_SAME(MLX5_SND_DBR, ::MLX5_SND_DBR);
  // rdma-core indexes the record as __be32 db[2].
  QpDoorbellRecord r{};
  r.snd_counter = Be32::FromHost(7);
  r.rcv_counter = Be32::FromHost(3);
  uint32_t db[2];
  std::memcpy(db, &r, sizeof db);
  EXPECT_EQ(be32toh(db[::MLX5_SND_DBR]), 7u);
  EXPECT_EQ(be32toh(db[::MLX5_RCV_DBR]), 3u);
}

TEST(DoorbellRecord, CqRecordAndArmWord) {
  // rdma-core's private mlx5.h: MLX5_CQ_SET_CI = 0, MLX5_CQ_ARM_DB = 1 (not in mlx5dv.h).
  EXPECT_EQ(MLX5_CQ_SET_CI, 0u);
  EXPECT_EQ(MLX5_CQ_ARM_DB, 1u);
  EXPECT_EQ(sizeof(CqDoorbellRecord), 8u);
  EXPECT_SAME(MLX5_CQ_DB_REQ_NOT, ::MLX5_CQ_DB_REQ_NOT);
  EXPECT_SAME(MLX5_CQ_DB_REQ_NOT_SOL, ::MLX5_CQ_DB_REQ_NOT_SOL);
  // (sn & 3) << 28 | cmd | (ci & 0xffffff), as rdma-core providers/mlx5/cq.c mlx5_arm_cq writes it.
  const uint32_t w = CqArmWord(6, MLX5_CQ_DB_REQ_NOT_SOL, 0x1234567);
  EXPECT_EQ(w, (2u << 28) | (1u << 24) | 0x234567u);
  EXPECT_EQ(CqArmSn(w), 2u);
  EXPECT_EQ(CqArmCmd(w), MLX5_CQ_DB_REQ_NOT_SOL);
  EXPECT_EQ(CqArmCi(w), 0x234567u);
  EXPECT_EQ(CqArmCmd(CqArmWord(1, MLX5_CQ_DB_REQ_NOT, 5)), MLX5_CQ_DB_REQ_NOT);
}

// ---- Init segment ----

TEST(InitSegment, WordOffsetsMatchThePrmReference) {
  // struct mlx5_init_seg byte offsets (the kernel's include/linux/mlx5/device.h).
  EXPECT_EQ(init_seg::kFwRev, 0x000u);
  EXPECT_EQ(init_seg::kCmdifRevFwSub, 0x004u);
  EXPECT_EQ(init_seg::kCmdqAddrH, 0x010u);
  EXPECT_EQ(init_seg::kCmdqAddrLSz, 0x014u);
  EXPECT_EQ(init_seg::kCmdDbell, 0x018u);
  EXPECT_EQ(init_seg::kInitializing, 0x1fcu);
  EXPECT_EQ(init_seg::kInternalTimerH, 0x1000u);
  EXPECT_EQ(init_seg::kInternalTimerL, 0x1004u);
  EXPECT_EQ(init_seg::kHealthCounter, 0x1010u);
  EXPECT_EQ(init_seg::kBytes, 0x400cu);
  EXPECT_EQ(size_bytes<mlx5_init_seg>, 0x2010u);
}

// A register file over host-order words that records the order of writes, and can make the
// clock carry into its high word right after a read of the low word.
class FakeRegisters {
 public:
  uint32_t Read32(uint64_t offset) const {
    const uint32_t v = words_.at(offset / 4);
    if (offset == init_seg::kInternalTimerL && carry_after_low_) {
      ++words_.at(init_seg::kInternalTimerH / 4);
      words_.at(init_seg::kInternalTimerL / 4) = 0;
      carry_after_low_ = false;
    }
    return v;
  }
  void Write32(uint64_t offset, uint32_t value) {
    writes_.push_back(offset);
    words_.at(offset / 4) = value;
  }
  uint32_t Get(uint64_t offset) const { return words_.at(offset / 4); }
  void Set(uint64_t offset, uint32_t value) { words_.at(offset / 4) = value; }
  void CarryAfterNextLowRead() { carry_after_low_ = true; }

  std::vector<uint64_t> writes_;

 private:
  mutable std::vector<uint32_t> words_ = std::vector<uint32_t>(init_seg::kBytes / 4 + 1, 0);
  mutable bool carry_after_low_ = false;
};
static_assert(InitSegRegisters<FakeRegisters>);

TEST(InitSegment, ReadsTheFirmwareRevisionAndInterface) {
  FakeRegisters r;
  r.Set(0x0, 0x0023'0016);  // fw_rev: minor 0x23, major 0x16
  r.Set(0x4, 0x0005'1fe4);  // cmdif_rev 5, subminor 0x1fe4
  const init_seg::FwRevision rev = init_seg::ReadFwRevision(r);
  EXPECT_EQ(rev, (init_seg::FwRevision{0x16, 0x23, 0x1fe4}));
  EXPECT_EQ(init_seg::ReadCmdInterfaceRev(r), 5u);
}

TEST(InitSegment, CmdqGeometryAddressAndDoorbell) {
  FakeRegisters r;
  r.Set(0x14, 0x0000'0156);  // nic_interface 1, log_cmdq_size 5, log_cmdq_stride 6
  const init_seg::CmdqGeometry g = init_seg::ReadCmdqGeometry(r);
  EXPECT_EQ(g.log_cmdq_size, 5u);
  EXPECT_EQ(g.log_cmdq_stride, 6u);
  init_seg::WriteCmdqAddress(r, 0x0000'0012'3456'7000);
  // High word first; the device-owned low bits survive.
  EXPECT_EQ(r.writes_, (std::vector<uint64_t>{0x10, 0x14}));
  EXPECT_EQ(r.Get(0x10), 0x12u);
  EXPECT_EQ(r.Get(0x14), 0x3456'7156u);
  EXPECT_EQ(init_seg::ReadCmdqAddress(r), 0x0000'0012'3456'7000u);
  init_seg::RingCommandDoorbell(r, 1u << 3);
  EXPECT_EQ(r.writes_.back(), 0x18u);
  EXPECT_EQ(r.Get(0x18), 8u);
}

TEST(InitSegment, InitializingHealthAndTimer) {
  FakeRegisters r;
  r.Set(0x1fc, 0x8000'0000);
  EXPECT_TRUE(init_seg::FirmwareInitializing(r));
  r.Set(0x1fc, 0x4080'0000);  // other bits of the word: not initializing
  EXPECT_FALSE(init_seg::FirmwareInitializing(r));
  r.Set(0x1010, 0xab12'3456);  // health_syndrome 0xab, counter 0x123456
  EXPECT_EQ(init_seg::ReadHealthCounter(r), 0x123456u);
  r.Set(0x1000, 0x1);
  r.Set(0x1004, 0x2);
  EXPECT_EQ(init_seg::ReadInternalTimer(r), 0x1'0000'0002u);
  // 0x1'ffffffff carries to 0x2'00000000 right after the low word is read: the reader sees the
  // high word change and reads the low word again (pairing the old low word with the new high
  // word would report 0x2'ffffffff).
  r.Set(0x1004, 0xffffffff);
  r.CarryAfterNextLowRead();
  EXPECT_EQ(init_seg::ReadInternalTimer(r), 0x2'0000'0000u);
}

TEST(InitSegment, WordHelpersPlaceFieldsAsThePrm) {
  EXPECT_EQ(FromWord(initial_seg::fw_rev_minor, 0xaaaa'bbbb), 0xaaaau);
  EXPECT_EQ(FromWord(initial_seg::fw_rev_major, 0xaaaa'bbbb), 0xbbbbu);
  EXPECT_EQ(IntoWord(initial_seg::log_cmdq_size, 0xffff'ffff, 0), 0xffff'ff0fu);
  EXPECT_EQ(IntoWord(initial_seg::initializing, 0, 1), 0x8000'0000u);
  EXPECT_EQ(IntoWord(initial_seg::health_counter, 0xab00'0000, 0x1'000000), 0xab00'0000u)
      << "a counter increment wraps inside its 24 bits";
}

// ---- Send WQE segments ----

TEST(SendWqe, SegmentsMatchMlx5dv) {
  EXPECT_EQ(sizeof(pod::mlx5_wqe_ctrl_seg), sizeof(::mlx5_wqe_ctrl_seg));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_ctrl_seg, opmod_idx_opcode), offsetof(::mlx5_wqe_ctrl_seg, opmod_idx_opcode));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_ctrl_seg, qpn_ds), offsetof(::mlx5_wqe_ctrl_seg, qpn_ds));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_ctrl_seg, signature), offsetof(::mlx5_wqe_ctrl_seg, signature));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_ctrl_seg, rsvd), offsetof(::mlx5_wqe_ctrl_seg, dci_stream_channel_id));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_ctrl_seg, fm_ce_se), offsetof(::mlx5_wqe_ctrl_seg, fm_ce_se));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_ctrl_seg, imm), offsetof(::mlx5_wqe_ctrl_seg, imm));

  EXPECT_EQ(sizeof(pod::mlx5_wqe_raddr_seg), sizeof(::mlx5_wqe_raddr_seg));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_raddr_seg, raddr), offsetof(::mlx5_wqe_raddr_seg, raddr));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_raddr_seg, rkey), offsetof(::mlx5_wqe_raddr_seg, rkey));

  EXPECT_EQ(sizeof(pod::mlx5_wqe_data_seg), sizeof(::mlx5_wqe_data_seg));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_data_seg, byte_count), offsetof(::mlx5_wqe_data_seg, byte_count));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_data_seg, lkey), offsetof(::mlx5_wqe_data_seg, lkey));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_data_seg, addr), offsetof(::mlx5_wqe_data_seg, addr));

  EXPECT_EQ(sizeof(pod::mlx5_wqe_atomic_seg), sizeof(::mlx5_wqe_atomic_seg));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_atomic_seg, swap_add), offsetof(::mlx5_wqe_atomic_seg, swap_add));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_atomic_seg, compare), offsetof(::mlx5_wqe_atomic_seg, compare));

  EXPECT_EQ(sizeof(pod::mlx5_wqe_inline_seg), sizeof(::mlx5_wqe_inl_data_seg));

  EXPECT_EQ(sizeof(pod::mlx5_wqe_av), sizeof(::mlx5_wqe_av));
  EXPECT_EQ(sizeof(pod::mlx5_wqe_av), 48u);
  EXPECT_EQ(offsetof(pod::mlx5_wqe_av, key.qkey.qkey), offsetof(::mlx5_wqe_av, key.qkey.qkey));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_av, key.dc_key), offsetof(::mlx5_wqe_av, key.dc_key));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_av, dqp_dct), offsetof(::mlx5_wqe_av, dqp_dct));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_av, stat_rate_sl), offsetof(::mlx5_wqe_av, stat_rate_sl));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_av, fl_mlid), offsetof(::mlx5_wqe_av, fl_mlid));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_av, rlid), offsetof(::mlx5_wqe_av, rlid));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_av, rmac), offsetof(::mlx5_wqe_av, rmac));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_av, tclass), offsetof(::mlx5_wqe_av, tclass));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_av, hop_limit), offsetof(::mlx5_wqe_av, hop_limit));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_av, grh_gid_fl), offsetof(::mlx5_wqe_av, grh_gid_fl));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_av, rgid), offsetof(::mlx5_wqe_av, rgid));
  // Byte offsets of struct mlx5_wqe_av (rdma-core providers/mlx5/mlx5dv.h).
  EXPECT_EQ(offsetof(pod::mlx5_wqe_av, dqp_dct), 8u);
  EXPECT_EQ(offsetof(pod::mlx5_wqe_av, rmac), 20u);
  EXPECT_EQ(offsetof(pod::mlx5_wqe_av, grh_gid_fl), 28u);
  EXPECT_EQ(offsetof(pod::mlx5_wqe_av, rgid), 32u);

  EXPECT_EQ(sizeof(pod::mlx5_wqe_srq_next_seg), sizeof(::mlx5_wqe_srq_next_seg));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_srq_next_seg, next_wqe_index),
            offsetof(::mlx5_wqe_srq_next_seg, next_wqe_index));
  EXPECT_EQ(offsetof(pod::mlx5_wqe_srq_next_seg, signature), offsetof(::mlx5_wqe_srq_next_seg, signature));

  // The UMR WQE's segments.
  EXPECT_EQ(UmrWqe::kUmrCtrlOffset, sizeof(::mlx5_wqe_ctrl_seg));
  EXPECT_EQ(UmrWqe::kMkeySegOffset - UmrWqe::kUmrCtrlOffset, sizeof(::mlx5_wqe_umr_ctrl_seg));
  EXPECT_EQ(UmrWqe::kKlmOffset - UmrWqe::kMkeySegOffset, sizeof(::mlx5_wqe_mkey_context_seg));
  EXPECT_EQ(size_bytes<mlx5_klm>, sizeof(::mlx5_wqe_umr_klm_seg));
}

TEST(SendWqe, ConstantsMatchMlx5dv) {
  EXPECT_SAME(MLX5_OPCODE_NOP, ::MLX5_OPCODE_NOP);
  EXPECT_SAME(MLX5_OPCODE_SEND_INVAL, ::MLX5_OPCODE_SEND_INVAL);
  EXPECT_SAME(MLX5_OPCODE_RDMA_WRITE, ::MLX5_OPCODE_RDMA_WRITE);
  EXPECT_SAME(MLX5_OPCODE_RDMA_WRITE_IMM, ::MLX5_OPCODE_RDMA_WRITE_IMM);
  EXPECT_SAME(MLX5_OPCODE_SEND, ::MLX5_OPCODE_SEND);
  EXPECT_SAME(MLX5_OPCODE_SEND_IMM, ::MLX5_OPCODE_SEND_IMM);
  EXPECT_SAME(MLX5_OPCODE_TSO, ::MLX5_OPCODE_TSO);
  EXPECT_SAME(MLX5_OPCODE_RDMA_READ, ::MLX5_OPCODE_RDMA_READ);
  EXPECT_SAME(MLX5_OPCODE_ATOMIC_CS, ::MLX5_OPCODE_ATOMIC_CS);
  EXPECT_SAME(MLX5_OPCODE_ATOMIC_FA, ::MLX5_OPCODE_ATOMIC_FA);
  EXPECT_SAME(MLX5_OPCODE_ATOMIC_MASKED_CS, ::MLX5_OPCODE_ATOMIC_MASKED_CS);
  EXPECT_SAME(MLX5_OPCODE_ATOMIC_MASKED_FA, ::MLX5_OPCODE_ATOMIC_MASKED_FA);
  EXPECT_SAME(MLX5_OPCODE_LOCAL_INVAL, ::MLX5_OPCODE_LOCAL_INVAL);
  EXPECT_SAME(MLX5_OPCODE_UMR, ::MLX5_OPCODE_UMR);

  EXPECT_SAME(MLX5_WQE_CTRL_CQ_UPDATE, ::MLX5_WQE_CTRL_CQ_UPDATE);
  EXPECT_SAME(MLX5_WQE_CTRL_SOLICITED, ::MLX5_WQE_CTRL_SOLICITED);
  EXPECT_SAME(MLX5_WQE_CTRL_FENCE, ::MLX5_WQE_CTRL_FENCE);
  EXPECT_SAME(MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE, ::MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE);
  // The kernel's fence modes and CQ_UPDATE_AND_EQE (include/linux/mlx5/qp.h).
  EXPECT_EQ(MLX5_FENCE_MODE_INITIATOR_SMALL, 0x20);
  EXPECT_EQ(MLX5_FENCE_MODE_FENCE, 0x40);
  EXPECT_EQ(MLX5_FENCE_MODE_STRONG_ORDERING, 0x60);
  EXPECT_EQ(MLX5_FENCE_MODE_SMALL_AND_FENCE, 0x80);
  EXPECT_EQ(MLX5_WQE_CTRL_CQ_UPDATE_AND_EQE, 0x0c);

  EXPECT_SAME(MLX5_INLINE_SEG, ::MLX5_INLINE_SEG);
  EXPECT_SAME(MLX5_INVALID_LKEY, ::MLX5_INVALID_LKEY);
  EXPECT_SAME(MLX5_EXTENDED_UD_AV, ::MLX5_EXTENDED_UD_AV);
  EXPECT_SAME(MLX5_SEND_WQE_BB, ::MLX5_SEND_WQE_BB);
  EXPECT_SAME(MLX5_SEND_WQE_SHIFT, ::MLX5_SEND_WQE_SHIFT);
}

// What the data path writes through a plain struct reads back through the generated descriptor,
// and equals what rdma-core's own inline helper writes.
TEST(SendWqe, PlainStructAndDescriptorSeeTheSameBytes) {
  alignas(64) std::array<std::byte, 64> ours{};
  auto* ctrl = reinterpret_cast<pod::mlx5_wqe_ctrl_seg*>(ours.data());
  ctrl->opmod_idx_opcode = Be32::FromHost(OpmodIdxOpcode(0, 0x1234, MLX5_OPCODE_RDMA_WRITE_IMM));
  ctrl->qpn_ds = Be32::FromHost(QpnDs(0xabcdef, 3));
  ctrl->fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE | MLX5_WQE_CTRL_SOLICITED;
  ctrl->imm = Be32::FromHost(0xfeedf00d);
  const std::span<const std::byte> bytes(ours);
  EXPECT_EQ(Get(bytes, mlx5_wqe_ctrl_seg::opmod_idx_opcode), 0x0012'3409u);
  EXPECT_EQ(Get(bytes, mlx5_wqe_ctrl_seg::qpn_ds), 0xabcd'ef03u);
  EXPECT_EQ(Get(bytes, mlx5_wqe_ctrl_seg::fm_ce_se), 0x0au);
  EXPECT_EQ(Get(bytes, mlx5_wqe_ctrl_seg::imm), 0xfeed'f00du);

  alignas(64) std::array<std::byte, 64> theirs{};
  mlx5dv_set_ctrl_seg(reinterpret_cast<::mlx5_wqe_ctrl_seg*>(theirs.data()), 0x1234,
                      ::MLX5_OPCODE_RDMA_WRITE_IMM, 0, 0xabcdef,
                      ::MLX5_WQE_CTRL_CQ_UPDATE | ::MLX5_WQE_CTRL_SOLICITED, 3, 0, htobe32(0xfeedf00d));
  EXPECT_EQ(0, std::memcmp(ours.data(), theirs.data(), sizeof(pod::mlx5_wqe_ctrl_seg)));

  auto* data = reinterpret_cast<pod::mlx5_wqe_data_seg*>(ours.data() + 16);
  data->byte_count = Be32::FromHost(4096);
  data->lkey = Be32::FromHost(0x1100);
  data->addr = Be64::FromHost(0x7f00'1234'5678);
  using D = mlx5_wqe_data_seg_bits<16 * 8>;
  EXPECT_EQ(Get(bytes, D::byte_count), 4096u);
  EXPECT_EQ(Get(bytes, D::lkey), 0x1100u);
  EXPECT_EQ(Get(bytes, D::addr), 0x7f00'1234'5678u);
  ::mlx5_wqe_data_seg dv;
  mlx5dv_set_data_seg(&dv, 4096, 0x1100, 0x7f00'1234'5678);
  EXPECT_EQ(0, std::memcmp(data, &dv, sizeof dv));

  EXPECT_EQ(OpcodeOf(Get(bytes, mlx5_wqe_ctrl_seg::opmod_idx_opcode)), MLX5_OPCODE_RDMA_WRITE_IMM);
  EXPECT_EQ(WqeIndexOf(Get(bytes, mlx5_wqe_ctrl_seg::opmod_idx_opcode)), 0x1234u);
  EXPECT_EQ(QpnOf(Get(bytes, mlx5_wqe_ctrl_seg::qpn_ds)), 0xabcdefu);
  EXPECT_EQ(DsOf(Get(bytes, mlx5_wqe_ctrl_seg::qpn_ds)), 3u);
}

// ---- CQE ----

TEST(Cqe, LayoutsMatchMlx5dv) {
  EXPECT_EQ(sizeof(pod::mlx5_cqe64), sizeof(::mlx5_cqe64));
  EXPECT_EQ(offsetof(pod::mlx5_cqe64, wqe_id), offsetof(::mlx5_cqe64, wqe_id));
  EXPECT_EQ(offsetof(pod::mlx5_cqe64, ml_path), offsetof(::mlx5_cqe64, ml_path));
  EXPECT_EQ(offsetof(pod::mlx5_cqe64, slid), offsetof(::mlx5_cqe64, slid));
  EXPECT_EQ(offsetof(pod::mlx5_cqe64, flags_rqpn), offsetof(::mlx5_cqe64, flags_rqpn));
  EXPECT_EQ(offsetof(pod::mlx5_cqe64, hds_ip_ext), offsetof(::mlx5_cqe64, hds_ip_ext));
  EXPECT_EQ(offsetof(pod::mlx5_cqe64, l4_l3_hdr_type), offsetof(::mlx5_cqe64, l4_hdr_type_etc));
  EXPECT_EQ(offsetof(pod::mlx5_cqe64, vlan_info), offsetof(::mlx5_cqe64, vlan_info));
  EXPECT_EQ(offsetof(pod::mlx5_cqe64, srqn), offsetof(::mlx5_cqe64, srqn_uidx));
  EXPECT_EQ(offsetof(pod::mlx5_cqe64, immediate), offsetof(::mlx5_cqe64, imm_inval_pkey));
  EXPECT_EQ(offsetof(pod::mlx5_cqe64, byte_cnt), offsetof(::mlx5_cqe64, byte_cnt));
  EXPECT_EQ(offsetof(pod::mlx5_cqe64, timestamp_h), offsetof(::mlx5_cqe64, timestamp));
  EXPECT_EQ(offsetof(pod::mlx5_cqe64, sop_drop_qpn), offsetof(::mlx5_cqe64, sop_drop_qpn));
  EXPECT_EQ(offsetof(pod::mlx5_cqe64, wqe_counter), offsetof(::mlx5_cqe64, wqe_counter));
  EXPECT_EQ(offsetof(pod::mlx5_cqe64, signature), offsetof(::mlx5_cqe64, signature));
  EXPECT_EQ(offsetof(pod::mlx5_cqe64, op_own), offsetof(::mlx5_cqe64, op_own));

  EXPECT_EQ(sizeof(pod::mlx5_err_cqe), sizeof(::mlx5_err_cqe));
  EXPECT_EQ(offsetof(pod::mlx5_err_cqe, srqn), offsetof(::mlx5_err_cqe, srqn));
  EXPECT_EQ(offsetof(pod::mlx5_err_cqe, vendor_err_synd), offsetof(::mlx5_err_cqe, vendor_err_synd));
  EXPECT_EQ(offsetof(pod::mlx5_err_cqe, syndrome), offsetof(::mlx5_err_cqe, syndrome));
  EXPECT_EQ(offsetof(pod::mlx5_err_cqe, s_wqe_opcode_qpn), offsetof(::mlx5_err_cqe, s_wqe_opcode_qpn));
  EXPECT_EQ(offsetof(pod::mlx5_err_cqe, wqe_counter), offsetof(::mlx5_err_cqe, wqe_counter));
  EXPECT_EQ(offsetof(pod::mlx5_err_cqe, signature), offsetof(::mlx5_err_cqe, signature));
  EXPECT_EQ(offsetof(pod::mlx5_err_cqe, op_own), offsetof(::mlx5_err_cqe, op_own));
}

TEST(Cqe, ConstantsMatchMlx5dv) {
  EXPECT_SAME(MLX5_CQE_OWNER_MASK, ::MLX5_CQE_OWNER_MASK);
  EXPECT_SAME(MLX5_CQE_REQ, ::MLX5_CQE_REQ);
  EXPECT_SAME(MLX5_CQE_RESP_WR_IMM, ::MLX5_CQE_RESP_WR_IMM);
  EXPECT_SAME(MLX5_CQE_RESP_SEND, ::MLX5_CQE_RESP_SEND);
  EXPECT_SAME(MLX5_CQE_RESP_SEND_IMM, ::MLX5_CQE_RESP_SEND_IMM);
  EXPECT_SAME(MLX5_CQE_RESP_SEND_INV, ::MLX5_CQE_RESP_SEND_INV);
  EXPECT_SAME(MLX5_CQE_RESIZE_CQ, ::MLX5_CQE_RESIZE_CQ);
  EXPECT_SAME(MLX5_CQE_NO_PACKET, ::MLX5_CQE_NO_PACKET);
  EXPECT_SAME(MLX5_CQE_SIG_ERR, ::MLX5_CQE_SIG_ERR);
  EXPECT_SAME(MLX5_CQE_REQ_ERR, ::MLX5_CQE_REQ_ERR);
  EXPECT_SAME(MLX5_CQE_RESP_ERR, ::MLX5_CQE_RESP_ERR);
  EXPECT_SAME(MLX5_CQE_INVALID, ::MLX5_CQE_INVALID);
  EXPECT_EQ(kCqeInitialOpOwn, 0xf0);

  EXPECT_SAME(MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, ::MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
  EXPECT_SAME(MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, ::MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
  EXPECT_SAME(MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, ::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
  EXPECT_SAME(MLX5_CQE_SYNDROME_WR_FLUSH_ERR, ::MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
  EXPECT_SAME(MLX5_CQE_SYNDROME_MW_BIND_ERR, ::MLX5_CQE_SYNDROME_MW_BIND_ERR);
  EXPECT_SAME(MLX5_CQE_SYNDROME_BAD_RESP_ERR, ::MLX5_CQE_SYNDROME_BAD_RESP_ERR);
  EXPECT_SAME(MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR, ::MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR);
  EXPECT_SAME(MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, ::MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
  EXPECT_SAME(MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, ::MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
  EXPECT_SAME(MLX5_CQE_SYNDROME_REMOTE_OP_ERR, ::MLX5_CQE_SYNDROME_REMOTE_OP_ERR);
  EXPECT_SAME(MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, ::MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
  EXPECT_SAME(MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR, ::MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
  EXPECT_SAME(MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR, ::MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR);
}

TEST(Cqe, OpOwnAndOwnershipFollowMlx5dv) {
  alignas(64) std::array<std::byte, 64> raw{};
  auto* cqe = reinterpret_cast<pod::mlx5_cqe64*>(raw.data());
  cqe->op_own = CqeOpOwn(MLX5_CQE_REQ_ERR, true) | kCqeSolicitedBit | MLX5_INLINE_SCATTER_32;
  auto* dv = reinterpret_cast<::mlx5_cqe64*>(raw.data());
  EXPECT_SAME(CqeOpcodeOf(cqe->op_own), mlx5dv_get_cqe_opcode(dv));
  EXPECT_SAME(CqeOwner(cqe->op_own), mlx5dv_get_cqe_owner(dv));
  EXPECT_SAME(CqeFormatOf(cqe->op_own), mlx5dv_get_cqe_format(dv));
  EXPECT_SAME((cqe->op_own & kCqeSolicitedBit) != 0, mlx5dv_get_cqe_se(dv));
  // The owner bit flips every pass over a CQ of 8 entries.
  EXPECT_FALSE(CqeOwnerFor(3, 8));
  EXPECT_TRUE(CqeOwnerFor(11, 8));
  EXPECT_FALSE(CqeOwnerFor(19, 8));

  auto* err = reinterpret_cast<pod::mlx5_err_cqe*>(raw.data());
  err->syndrome = MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
  err->s_wqe_opcode_qpn = Be32::FromHost(uint32_t{MLX5_OPCODE_RDMA_READ} << 24 | 0x123456);
  err->wqe_counter = Be16::FromHost(0x55);
  const std::span<const std::byte> bytes(raw);
  EXPECT_EQ(Get(bytes, mlx5_err_cqe::syndrome), uint32_t{MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR});
  EXPECT_EQ(CqeQpn(Get(bytes, mlx5_err_cqe::s_wqe_opcode_qpn)), 0x123456u);
  EXPECT_EQ(CqeWqeOpcode(Get(bytes, mlx5_err_cqe::s_wqe_opcode_qpn)), MLX5_OPCODE_RDMA_READ);
  EXPECT_EQ(Get(bytes, mlx5_cqe64::wqe_counter), 0x55u);
  EXPECT_EQ(be16toh(dv->wqe_counter), 0x55u);
}

}  // namespace
}  // namespace onchip::prm
