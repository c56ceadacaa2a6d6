#include "driver/rings/umr_wqe.h"

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>

#include "uapi/prm/send_wqe.h"
#include "uapi/prm/wqe.h"

namespace onchip::driver::rings {
namespace {

using Ctrl = prm::UmrWqe::ctrl;
using UmrCtrl = prm::UmrWqe::umr_ctrl;
using Seg = prm::UmrWqe::mkey_seg;
using SegMkc = prm::UmrWqe::mkey_seg_mkc;  // the same bytes read as an mkc, as the device does
using Klm = prm::UmrWqe::klm;

uint8_t SegAccess(unsigned access) {
  uint8_t flags = 0;
  if (access & IBV_ACCESS_LOCAL_WRITE) flags |= prm::MLX5_PERM_LOCAL_WRITE;
  if (access & IBV_ACCESS_REMOTE_WRITE) flags |= prm::MLX5_PERM_REMOTE_WRITE;
  if (access & IBV_ACCESS_REMOTE_READ) flags |= prm::MLX5_PERM_REMOTE_READ;
  if (access & IBV_ACCESS_REMOTE_ATOMIC) flags |= prm::MLX5_PERM_ATOMIC;
  return flags;
}

}  // namespace

Result<std::size_t> BuildUmrWqe(const UmrRequest& r, std::span<std::byte> out) {
  const bool bind = r.length != 0;
  const std::size_t size = bind ? kUmrBindBytes : kUmrInvalidateBytes;
  if (out.size() < size) return Fail(EINVAL, "umr: WQE buffer too small");
  std::memset(out.data(), 0, size);

  uint8_t flags = prm::MLX5_WQE_UMR_CTRL_FLAG_TRNSLATION_OFFSET | prm::MLX5_WQE_UMR_CTRL_FLAG_INLINE;
  uint64_t mask = prm::MLX5_MKEY_MASK_FREE | prm::MLX5_MKEY_MASK_KEY;
  if (r.type2) {
    mask |= prm::MLX5_MKEY_MASK_QPN;
    flags |= bind ? prm::MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE : prm::MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN;
  }
  if (bind)
    mask |= prm::MLX5_MKEY_MASK_LEN | prm::MLX5_MKEY_MASK_START_ADDR | prm::MLX5_MKEY_MASK_LW |
            prm::MLX5_MKEY_MASK_RR | prm::MLX5_MKEY_MASK_RW | prm::MLX5_MKEY_MASK_A;
  // A type-1 window, and any invalidate, names no QP.
  const uint32_t bound_qpn = (!r.type2 || !bind) ? prm::MLX5_MKEY_NO_QPN : r.qpn;

  prm::Bits w(out.first(size));
  w.set(Ctrl::opmod_idx_opcode, prm::MLX5_OPCODE_UMR)
      .set(Ctrl::qpn_ds, prm::QpnDs(r.qpn, static_cast<uint32_t>(size / prm::MLX5_SEND_WQE_DS)))
      .set(Ctrl::imm, r.target_key)
      .set(UmrCtrl::flags, flags)
      .set(UmrCtrl::xlt_octowords, bind ? prm::UmrWqe::kBindXltOctowords : 0)
      .set(UmrCtrl::mkey_mask, mask)
      .set(SegMkc::qpn, bound_qpn)
      .set(SegMkc::mkey_7_0, r.new_rkey & 0xff);
  if (bind) {
    w.set(Seg::flags, SegAccess(r.access))
        .set(Seg::start_addr, r.addr)
        .set(Seg::len, r.length)
        .set(Klm::bcount, r.length)
        .set(Klm::key, r.mr_lkey)
        .set(Klm::va, r.addr);
  } else {
    w.set(Seg::status, prm::MLX5_MKEY_STATUS_FREE);
  }
  if (!w.ok()) return Fail(EINVAL, "umr: a value does not fit its WQE field");
  return size;
}

}  // namespace onchip::driver::rings
