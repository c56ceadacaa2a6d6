// Every onchip constant and layout that has a source outside onchip, checked against it:
//   - uapi/prm/umr.h and uapi/prm/cqe_syndrome.h against rdma-core's <infiniband/mlx5dv.h>
//     (where rdma-core names the value, under that name or its own), the kernel-only mkey-mask
//     bits against the PRM reference numbers (include/linux/mlx5/device.h is not installed);
//   - the send-WQE and CQE layouts of uapi/prm/wqe.h against mlx5dv.h's C structs;
//   - the MSI-X steering-tag location in uapi/vpci.h against <linux/pci_regs.h>.
// A value copied wrongly into onchip, or a layout shifted, fails here rather than on hardware.
#include <gtest/gtest.h>
#include <infiniband/mlx5dv.h>
#include <linux/pci_regs.h>

#include <cstddef>

#include "uapi/prm/cqe_syndrome.h"
#include "uapi/prm/umr.h"
#include "uapi/prm/wqe.h"
#include "uapi/vpci.h"

namespace onchip {
namespace {

TEST(OutsideConstants, UmrOpcodeAndControlFlagsAreMlx5dvs) {
  EXPECT_EQ(prm::MLX5_OPCODE_UMR, ::MLX5_OPCODE_UMR);
  EXPECT_EQ(prm::MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN, ::MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN);
  EXPECT_EQ(prm::MLX5_WQE_UMR_CTRL_FLAG_TRNSLATION_OFFSET,
            ::MLX5_WQE_UMR_CTRL_FLAG_TRNSLATION_OFFSET);
  EXPECT_EQ(prm::MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE, ::MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE);
  EXPECT_EQ(prm::MLX5_WQE_UMR_CTRL_FLAG_INLINE, ::MLX5_WQE_UMR_CTRL_FLAG_INLINE);
  // The kernel's CHECK_FREE ("fail if free") has no rdma-core name: the PRM reference value.
  EXPECT_EQ(prm::MLX5_UMR_CHECK_FREE, 0x40);
}

TEST(OutsideConstants, MkeyMaskBitsAreMlx5dvsWhereItNamesThem) {
  EXPECT_EQ(prm::MLX5_MKEY_MASK_LEN, uint64_t{::MLX5_WQE_UMR_CTRL_MKEY_MASK_LEN});
  EXPECT_EQ(prm::MLX5_MKEY_MASK_START_ADDR, uint64_t{::MLX5_WQE_UMR_CTRL_MKEY_MASK_START_ADDR});
  EXPECT_EQ(prm::MLX5_MKEY_MASK_EN_SIGERR, uint64_t{::MLX5_WQE_UMR_CTRL_MKEY_MASK_SIG_ERR});
  EXPECT_EQ(prm::MLX5_MKEY_MASK_BSF_EN, uint64_t{::MLX5_WQE_UMR_CTRL_MKEY_MASK_BSF_ENABLE});
  EXPECT_EQ(prm::MLX5_MKEY_MASK_KEY, uint64_t{::MLX5_WQE_UMR_CTRL_MKEY_MASK_MKEY});
  EXPECT_EQ(prm::MLX5_MKEY_MASK_QPN, uint64_t{::MLX5_WQE_UMR_CTRL_MKEY_MASK_QPN});
  EXPECT_EQ(prm::MLX5_MKEY_MASK_LW, uint64_t{::MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_LOCAL_WRITE});
  EXPECT_EQ(prm::MLX5_MKEY_MASK_RR, uint64_t{::MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_READ});
  EXPECT_EQ(prm::MLX5_MKEY_MASK_RW, uint64_t{::MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_WRITE});
  EXPECT_EQ(prm::MLX5_MKEY_MASK_A, uint64_t{::MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_ATOMIC});
  EXPECT_EQ(prm::MLX5_MKEY_MASK_FREE, uint64_t{::MLX5_WQE_UMR_CTRL_MKEY_MASK_FREE});
}

// Bits only the kernel's device.h names (not installed here): the PRM reference's numbers.
TEST(OutsideConstants, KernelOnlyMkeyMaskBitsAreThePrmsNumbers) {
  EXPECT_EQ(prm::MLX5_MKEY_MASK_PAGE_SIZE, uint64_t{1} << 1);
  EXPECT_EQ(prm::MLX5_MKEY_MASK_PD, uint64_t{1} << 7);
  EXPECT_EQ(prm::MLX5_MKEY_MASK_EN_RINVAL, uint64_t{1} << 8);
  EXPECT_EQ(prm::MLX5_MKEY_MASK_LR, uint64_t{1} << 17);
  EXPECT_EQ(prm::MLX5_MKEY_MASK_SMALL_FENCE, uint64_t{1} << 23);
  EXPECT_EQ(prm::MLX5_MKEY_MASK_RELAXED_ORDERING_WRITE, uint64_t{1} << 25);
  EXPECT_EQ(prm::MLX5_MKEY_MASK_RELAXED_ORDERING_READ, uint64_t{1} << 47);
}

TEST(OutsideConstants, MkeySegmentStatusAndAccessBitsAreMlx5dvs) {
  EXPECT_EQ(prm::MLX5_MKEY_STATUS_FREE, ::MLX5_WQE_MKEY_CONTEXT_FREE);
  EXPECT_EQ(prm::MLX5_PERM_LOCAL_READ, ::MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_LOCAL_READ);
  EXPECT_EQ(prm::MLX5_PERM_LOCAL_WRITE, ::MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_LOCAL_WRITE);
  EXPECT_EQ(prm::MLX5_PERM_REMOTE_READ, ::MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_READ);
  EXPECT_EQ(prm::MLX5_PERM_REMOTE_WRITE, ::MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_WRITE);
  EXPECT_EQ(prm::MLX5_PERM_ATOMIC, ::MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_ATOMIC);
  EXPECT_EQ(prm::MLX5_PERM_UMR_EN, 0x80);  // mkc.umr_en, bit 7 of the same byte (PRM)
  EXPECT_EQ(prm::MLX5_MKEY_NO_QPN, 0xffffffu);
}

TEST(OutsideConstants, UmrSizesAreMlx5dvsStructs) {
  EXPECT_EQ(prm::MLX5_SEND_WQE_DS, sizeof(mlx5_wqe_data_seg));
  EXPECT_EQ(prm::MLX5_UMR_INLINE_KLM_BYTES, static_cast<uint32_t>(::MLX5_SEND_WQE_BB));
  EXPECT_GE(prm::MLX5_UMR_INLINE_KLM_BYTES, sizeof(mlx5_wqe_umr_klm_seg));
  // mlx5dv.h: "up to 2GB" per KLM.
  EXPECT_EQ(prm::MLX5_MAX_KLM_BYTE_COUNT, uint64_t{2} << 30);
}

TEST(OutsideConstants, CqeSyndromesAreMlx5dvs) {
  EXPECT_EQ(prm::MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, ::MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
  EXPECT_EQ(prm::MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, ::MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
  EXPECT_EQ(prm::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, ::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
  EXPECT_EQ(prm::MLX5_CQE_SYNDROME_WR_FLUSH_ERR, ::MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
  EXPECT_EQ(prm::MLX5_CQE_SYNDROME_MW_BIND_ERR, ::MLX5_CQE_SYNDROME_MW_BIND_ERR);
  EXPECT_EQ(prm::MLX5_CQE_SYNDROME_BAD_RESP_ERR, ::MLX5_CQE_SYNDROME_BAD_RESP_ERR);
  EXPECT_EQ(prm::MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR, ::MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR);
  EXPECT_EQ(prm::MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR,
            ::MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
  EXPECT_EQ(prm::MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, ::MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
  EXPECT_EQ(prm::MLX5_CQE_SYNDROME_REMOTE_OP_ERR, ::MLX5_CQE_SYNDROME_REMOTE_OP_ERR);
  EXPECT_EQ(prm::MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR,
            ::MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
  EXPECT_EQ(prm::MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR, ::MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
  EXPECT_EQ(prm::MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR, ::MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR);
}

// Byte offset and size of a typed PRM field.
template <class F>
constexpr std::size_t Byte(F) {
  return F::bit_offset / 8;
}
template <class F>
constexpr std::size_t Bytes(F) {
  return F::bit_width / 8;
}
#define EXPECT_FIELD(prm_field, c_struct, c_member)                      \
  do {                                                                   \
    EXPECT_EQ(Byte(prm_field), offsetof(c_struct, c_member)) << #c_member; \
    EXPECT_EQ(Bytes(prm_field), sizeof(c_struct::c_member)) << #c_member;  \
  } while (0)

TEST(OutsideLayouts, SendSegmentsAreMlx5dvsStructs) {
  using Ctrl = prm::mlx5_wqe_ctrl_seg;
  EXPECT_EQ(Ctrl::size_bits / 8, sizeof(mlx5_wqe_ctrl_seg));
  EXPECT_FIELD(Ctrl::opmod_idx_opcode, mlx5_wqe_ctrl_seg, opmod_idx_opcode);
  EXPECT_FIELD(Ctrl::qpn_ds, mlx5_wqe_ctrl_seg, qpn_ds);
  EXPECT_FIELD(Ctrl::signature, mlx5_wqe_ctrl_seg, signature);
  EXPECT_FIELD(Ctrl::fm_ce_se, mlx5_wqe_ctrl_seg, fm_ce_se);
  EXPECT_FIELD(Ctrl::imm, mlx5_wqe_ctrl_seg, imm);

  using Data = prm::mlx5_wqe_data_seg;
  EXPECT_EQ(Data::size_bits / 8, sizeof(mlx5_wqe_data_seg));
  EXPECT_FIELD(Data::byte_count, mlx5_wqe_data_seg, byte_count);
  EXPECT_FIELD(Data::lkey, mlx5_wqe_data_seg, lkey);
  EXPECT_FIELD(Data::addr, mlx5_wqe_data_seg, addr);

  using Umr = prm::mlx5_wqe_umr_ctrl_seg;
  EXPECT_EQ(Umr::size_bits / 8, sizeof(mlx5_wqe_umr_ctrl_seg));
  EXPECT_FIELD(Umr::flags, mlx5_wqe_umr_ctrl_seg, flags);
  EXPECT_FIELD(Umr::xlt_octowords, mlx5_wqe_umr_ctrl_seg, klm_octowords);
  EXPECT_FIELD(Umr::xlt_offset, mlx5_wqe_umr_ctrl_seg, translation_offset);
  EXPECT_FIELD(Umr::bsf_octowords, mlx5_wqe_umr_ctrl_seg, bsf_octowords);
  EXPECT_FIELD(Umr::mkey_mask, mlx5_wqe_umr_ctrl_seg, mkey_mask);

  using Mkey = prm::mlx5_mkey_seg;
  EXPECT_EQ(Mkey::size_bits / 8, sizeof(mlx5_wqe_mkey_context_seg));
  EXPECT_FIELD(Mkey::status, mlx5_wqe_mkey_context_seg, free);
  EXPECT_FIELD(Mkey::flags, mlx5_wqe_mkey_context_seg, access_flags);
  EXPECT_FIELD(Mkey::version, mlx5_wqe_mkey_context_seg, sf);
  EXPECT_FIELD(Mkey::qpn_mkey7_0, mlx5_wqe_mkey_context_seg, qpn_mkey);
  EXPECT_FIELD(Mkey::flags_pd, mlx5_wqe_mkey_context_seg, flags_pd);
  EXPECT_FIELD(Mkey::start_addr, mlx5_wqe_mkey_context_seg, start_addr);
  EXPECT_FIELD(Mkey::len, mlx5_wqe_mkey_context_seg, len);
  EXPECT_FIELD(Mkey::bsfs_octo_size, mlx5_wqe_mkey_context_seg, bsf_octword_size);
  EXPECT_FIELD(Mkey::xlt_oct_size, mlx5_wqe_mkey_context_seg, translations_octword_size);
  EXPECT_FIELD(Mkey::log2_page_size, mlx5_wqe_mkey_context_seg, log_page_size);

  using Klm = prm::mlx5_klm;
  EXPECT_EQ(Klm::size_bits / 8, sizeof(mlx5_wqe_umr_klm_seg));
  EXPECT_FIELD(Klm::bcount, mlx5_wqe_umr_klm_seg, byte_count);
  EXPECT_FIELD(Klm::key, mlx5_wqe_umr_klm_seg, mkey);
  EXPECT_FIELD(Klm::va, mlx5_wqe_umr_klm_seg, address);
}

TEST(OutsideLayouts, CqesAreMlx5dvsStructs) {
  using Err = prm::mlx5_err_cqe;
  EXPECT_EQ(Err::size_bits / 8, sizeof(mlx5_err_cqe));
  EXPECT_FIELD(Err::srqn, mlx5_err_cqe, srqn);
  EXPECT_FIELD(Err::vendor_err_synd, mlx5_err_cqe, vendor_err_synd);
  EXPECT_FIELD(Err::syndrome, mlx5_err_cqe, syndrome);
  EXPECT_FIELD(Err::s_wqe_opcode_qpn, mlx5_err_cqe, s_wqe_opcode_qpn);
  EXPECT_FIELD(Err::wqe_counter, mlx5_err_cqe, wqe_counter);
  EXPECT_FIELD(Err::signature, mlx5_err_cqe, signature);
  EXPECT_FIELD(Err::op_own, mlx5_err_cqe, op_own);

  using Cqe = prm::mlx5_cqe64;
  EXPECT_EQ(Cqe::size_bits / 8, sizeof(mlx5_cqe64));
  EXPECT_FIELD(Cqe::wqe_id, mlx5_cqe64, wqe_id);
  EXPECT_FIELD(Cqe::ml_path, mlx5_cqe64, ml_path);
  EXPECT_FIELD(Cqe::slid, mlx5_cqe64, slid);
  EXPECT_FIELD(Cqe::flags_rqpn, mlx5_cqe64, flags_rqpn);
  EXPECT_FIELD(Cqe::hds_ip_ext, mlx5_cqe64, hds_ip_ext);
  EXPECT_FIELD(Cqe::l4_l3_hdr_type, mlx5_cqe64, l4_hdr_type_etc);
  EXPECT_FIELD(Cqe::vlan_info, mlx5_cqe64, vlan_info);
  EXPECT_FIELD(Cqe::srqn, mlx5_cqe64, srqn_uidx);
  EXPECT_FIELD(Cqe::immediate, mlx5_cqe64, imm_inval_pkey);
  EXPECT_FIELD(Cqe::byte_cnt, mlx5_cqe64, byte_cnt);
  EXPECT_EQ(Byte(Cqe::timestamp_h), offsetof(mlx5_cqe64, timestamp));
  EXPECT_EQ(Byte(Cqe::timestamp_l), offsetof(mlx5_cqe64, timestamp) + 4);
  EXPECT_FIELD(Cqe::sop_drop_qpn, mlx5_cqe64, sop_drop_qpn);
  EXPECT_FIELD(Cqe::wqe_counter, mlx5_cqe64, wqe_counter);
  EXPECT_FIELD(Cqe::signature, mlx5_cqe64, signature);
  EXPECT_FIELD(Cqe::op_own, mlx5_cqe64, op_own);
}

// The steering-tag table in the MSI-X table: entry size and the Vector Control dword from
// pci_regs.h; the tag's bit position from the PCIe TPH ECN (ST Lower 23:16, ST Upper 31:24),
// which newer pci_regs.h spell as PCI_MSIX_ENTRY_CTRL_ST_LOWER / _UPPER.
TEST(OutsideConstants, MsixSteeringTagLocationIsPciRegs) {
  EXPECT_EQ(vpci::kMsixEntryBytes, uint64_t{PCI_MSIX_ENTRY_SIZE});
  EXPECT_EQ(vpci::kMsixVectorControlOffset, uint64_t{PCI_MSIX_ENTRY_VECTOR_CTRL});
#ifdef PCI_MSIX_ENTRY_CTRL_ST_LOWER
  EXPECT_EQ(uint32_t{0xff} << vpci::kMsixStShift, uint32_t{PCI_MSIX_ENTRY_CTRL_ST_LOWER});
#endif
#ifdef PCI_MSIX_ENTRY_CTRL_ST_UPPER
  EXPECT_EQ(uint32_t{0xff} << (vpci::kMsixStShift + 8), uint32_t{PCI_MSIX_ENTRY_CTRL_ST_UPPER});
#endif
  EXPECT_EQ(vpci::kMsixStShift, 16u);
  // The ST table size field is 11 bits (N - 1): a table never exceeds 2048 entries, which is
  // what uint16_t st_table_size must hold.
  EXPECT_EQ((PCI_TPH_CAP_ST_MASK >> PCI_TPH_CAP_ST_SHIFT) + 1, 2048);
  EXPECT_EQ(PCI_TPH_LOC_MSIX, 0x400);  // "ST Table Location = MSI-X table", as vpci.h assumes
}

}  // namespace
}  // namespace onchip
