// What the send-queue engine hands the firmware for one UMR work request, and what it gets back.
//
// The firmware executes UMR WQEs that bind a memory window to a region of a parent mkey and that
// invalidate (unbind) it: Firmware::PostUmr (firmware_umr.cc); and, posted on a REG_UMR QP (the
// kernel's own, which only uid 0 may create), UMRs that change an MR's access rights or PD in
// place, keeping its keys (the same file). The send-queue engine reads the
// WQE from the SQ, passes its bytes with the posting QP's number and PD, and turns a failure
// into an error CQE: mlx5_err_cqe.syndrome = UmrResult::syndrome, vendor_err_synd =
// UmrResult::check (the software ConnectX's name for the failed check, stable like the command
// syndromes of uapi/sim/syndrome.h). A failed UMR changes nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "uapi/prm/cqe_syndrome.h"

namespace onchip::sim {

struct UmrRequest {
  // ctrl seg (16 B) + mlx5_wqe_umr_ctrl_seg (48 B) + mlx5_mkey_seg (64 B) + the inline KLM block
  // (64 B) when the UMR carries a translation; as the driver wrote them (big-endian fields).
  std::span<const std::byte> wqe;
  uint32_t qpn = 0;  // the QP whose send queue holds the WQE
  uint32_t pd = 0;   // that QP's PD
  bool reg_umr = false;  // that QP is a REG_UMR QP: its UMRs address MRs, not windows
};

// Which check refused a UMR. The syndrome each maps to is in UmrResult (see firmware_umr.cc).
enum class UmrCheck : uint8_t {
  OK = 0,
  // The WQE itself (LOCAL_QP_OP_ERR).
  WQE_TOO_SHORT = 0x01,     // fewer bytes than ds or than the segments need
  NOT_UMR = 0x02,           // opcode is not MLX5_OPCODE_UMR
  WQE_QPN = 0x03,           // ctrl.qpn_ds names another QP
  WQE_DS = 0x04,            // ds is not 8 (no translation) or 8 + xlt_octowords (inline KLMs)
  UMR_FLAGS = 0x05,         // a flag this device does not implement, or KLMs not inline
  MKEY_MASK = 0x06,         // a mask bit a window cannot change, or FREE missing
  XLT = 0x07,               // xlt_octowords not 0 or 4, an offset, or a second KLM
  RESERVED = 0x08,          // a reserved bit of the UMR control or mkey segment is set
  // The window named by ctrl.imm (MW_BIND_ERR).
  MW_UNKNOWN = 0x10,        // no mkey at imm >> 8
  MW_KEY = 0x11,            // imm & 0xff is not the window's current key byte
  NOT_WINDOW = 0x12,        // the mkey is not a memory window (KLMS, created free with umr_en)
  MW_PD = 0x13,             // the window's PD is not the QP's PD
  MW_NOT_FREE = 0x14,       // CHECK_FREE (0x20) and the window is bound
  MW_FREE = 0x15,           // the 0x40 check and the window is free
  MW_QPN = 0x16,            // type 2 bound to another QP (bind) / CHECK_QPN by another QP;
                            // type 1 given a QP
  MW_ZERO_BASED = 0x17,     // window start_addr differs from the KLM address
  MW_LENGTH = 0x18,         // len differs from the KLM byte_count, or exceeds 2 GiB
  // The parent mkey named by the KLM.
  PARENT_UNKNOWN = 0x20,    // LOCAL_PROT_ERR: no such mkey, wrong key byte, or free
  PARENT_IS_WINDOW = 0x21,  // MW_BIND_ERR: a window (or another indirect mkey)
  PARENT_PD = 0x22,         // MW_BIND_ERR: another PD than the window's
  PARENT_NO_BIND = 0x23,    // MW_BIND_ERR: umr_en = 0 (registered without IBV_ACCESS_MW_BIND)
  PARENT_ZERO_BASED = 0x24,  // MW_BIND_ERR: start_addr 0 (registered zero-based)
  PARENT_RANGE = 0x25,      // MW_BIND_ERR: the KLM range leaves the parent
  PARENT_ACCESS = 0x26,     // MW_BIND_ERR: remote write or atomic window, parent lacks local write
  // An MR changed in place by a REG_UMR QP's UMR (LOCAL_PROT_ERR).
  MR_UNKNOWN = 0x30,        // no mkey at imm >> 8, or imm & 0xff is not its key byte
  MR_IS_WINDOW = 0x31,      // the mkey is a memory window (windows are bound, not modified)
  MR_NO_UMR = 0x32,         // the mkey was created with umr_en = 0
  MR_PD = 0x33,             // the new PD does not exist or belongs to another uid
};

struct UmrResult {
  prm::CqeSyndrome syndrome{};  // 0 on success
  UmrCheck check = UmrCheck::OK;

  bool ok() const { return check == UmrCheck::OK; }
};

std::string_view UmrCheckName(UmrCheck c);

}  // namespace onchip::sim
