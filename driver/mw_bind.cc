#include "driver/mw_bind.h"

#include <cerrno>
#include <cstring>

#include "driver/mr.h"
#include "uapi/prm/umr.h"
#include "uapi/prm/wqe.h"

namespace onchip::driver {
namespace {

// The segments of a UMR WQE, at their places in it.
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

Result<void> CheckBind(const Mw& mw, const ibv_mw_bind_info& info, bool type_1_verb) {
  if (type_1_verb && mw.ibv.type != IBV_MW_TYPE_1)
    return Fail(EINVAL, "bind_mw: ibv_bind_mw binds type 1 windows only");
  if (info.mr == nullptr && (info.addr != 0 || info.length != 0))
    return Fail(EINVAL, "bind_mw: an address or length without an MR");
  if (info.mr != nullptr && info.mr->pd != mw.ibv.pd)
    return Fail(EPERM, "bind_mw: the MR is on another PD");
  if (info.mw_access_flags & IBV_ACCESS_ZERO_BASED)
    return Fail(EINVAL, "bind_mw: zero-based windows are not supported");
  if (info.mr != nullptr) {
    const Mr& mr = *Mr::From(info.mr);
    if (mr.mr_type != 0) return Fail(EOPNOTSUPP, "bind_mw: not a plain MR");
    if (mr.access & IBV_ACCESS_ZERO_BASED) return Fail(EINVAL, "bind_mw: the MR is zero-based");
  }
  if (info.length > prm::MLX5_MAX_KLM_BYTE_COUNT)
    return Fail(EOPNOTSUPP, "bind_mw: longer than one KLM (2 GiB)");
  return {};
}

Result<std::size_t> BuildBindWqe(const Mw& mw, uint32_t new_rkey, const ibv_mw_bind_info& info,
                                 uint32_t qpn, std::span<std::byte> out) {
  const bool bind = info.length != 0;
  const std::size_t size = bind ? kBindWqeBytes : kInvalidateWqeBytes;
  if (out.size() < size) return Fail(EINVAL, "bind_mw: WQE buffer too small");
  std::memset(out.data(), 0, size);
  const bool type2 = mw.ibv.type == IBV_MW_TYPE_2;

  uint8_t flags = prm::MLX5_WQE_UMR_CTRL_FLAG_TRNSLATION_OFFSET | prm::MLX5_WQE_UMR_CTRL_FLAG_INLINE;
  uint64_t mask = prm::MLX5_MKEY_MASK_FREE | prm::MLX5_MKEY_MASK_KEY;
  if (type2) {
    mask |= prm::MLX5_MKEY_MASK_QPN;
    flags |= bind ? prm::MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE : prm::MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN;
  }
  if (bind)
    mask |= prm::MLX5_MKEY_MASK_LEN | prm::MLX5_MKEY_MASK_START_ADDR | prm::MLX5_MKEY_MASK_LW |
            prm::MLX5_MKEY_MASK_RR | prm::MLX5_MKEY_MASK_RW | prm::MLX5_MKEY_MASK_A;
  const uint32_t bound_qpn = (!type2 || !bind) ? prm::MLX5_MKEY_NO_QPN : qpn;

  prm::Bits w(out.first(size));
  w.set(Ctrl::opmod_idx_opcode, prm::MLX5_OPCODE_UMR)
      .set(Ctrl::qpn_ds, prm::QpnDs(qpn, static_cast<uint32_t>(size / prm::MLX5_SEND_WQE_DS)))
      .set(Ctrl::imm, mw.ibv.rkey)
      .set(UmrCtrl::flags, flags)
      .set(UmrCtrl::xlt_octowords, bind ? prm::UmrWqe::kBindXltOctowords : 0)
      .set(UmrCtrl::mkey_mask, mask)
      .set(SegMkc::qpn, bound_qpn)
      .set(SegMkc::mkey_7_0, new_rkey & 0xff);
  if (bind) {
    w.set(Seg::flags, SegAccess(info.mw_access_flags))
        .set(Seg::start_addr, info.addr)
        .set(Seg::len, info.length)
        .set(Klm::bcount, info.length)
        .set(Klm::key, info.mr->lkey)
        .set(Klm::va, info.addr);
  } else {
    w.set(Seg::status, prm::MLX5_MKEY_STATUS_FREE);
  }
  if (!w.ok()) return Fail(EINVAL, "bind_mw: a value does not fit its WQE field");
  return size;
}

}  // namespace onchip::driver
