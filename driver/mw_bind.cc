#include "driver/mw_bind.h"

#include <cerrno>
#include <cstring>

#include "driver/mr.h"
#include "driver/rings/umr_wqe.h"
#include "uapi/prm/umr.h"
#include "uapi/prm/wqe.h"

namespace onchip::driver {

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
  const rings::UmrRequest request{
      .type2 = mw.ibv.type == IBV_MW_TYPE_2,
      .target_key = mw.ibv.rkey,
      .new_rkey = new_rkey,
      .mr_lkey = info.length != 0 ? info.mr->lkey : 0,
      .addr = info.addr,
      .length = info.length,
      .access = info.mw_access_flags,
      .qpn = qpn,
  };
  return rings::BuildUmrWqe(request, out);
}

}  // namespace onchip::driver
