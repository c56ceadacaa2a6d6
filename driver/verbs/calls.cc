#include "driver/verbs/calls.h"

#include <cerrno>

#include "driver/dm.h"
#include "driver/dmah.h"
#include "driver/mr.h"
#include "driver/mw.h"
#include "driver/parent_domain.h"
#include "driver/pd.h"
#include "driver/td.h"

namespace onchip::driver::verbs {
namespace {

// The verbs struct a driver object embeds first, or NULL with errno.
template <class V, class T>
V* VerbsOrErrno(Result<T*> r) {
  if (r) return &(*r)->ibv;
  errno = r.error().errno_value();
  return nullptr;
}

template <class V>
V* Errno(int e) {
  errno = e;
  return nullptr;
}

// An object created through `context` points at it (the device may serve several contexts).
template <class T>
Result<T*> Through(ibv_context* context, Result<T*> r) {
  if (r) (*r)->ibv.context = context;
  return r;
}

int AsErrno(const Result<void>& r) { return r ? 0 : r.error().errno_value(); }

std::shared_ptr<Device> DeviceOf(ibv_context* context) {
  Device* d = Device::FromVerbs(context);
  return d ? d->weak_from_this().lock() : nullptr;  // null while the device is being destroyed
}

}  // namespace

ibv_dm* alloc_dm(ibv_context* context, ibv_alloc_dm_attr* attr) {
  return dv_alloc_dm(context, attr, nullptr);
}

ibv_dm* dv_alloc_dm(ibv_context* context, ibv_alloc_dm_attr* attr, mlx5dv_alloc_dm_attr* dv_attr) {
  if (attr == nullptr) return Errno<ibv_dm>(EINVAL);
  return VerbsOrErrno<ibv_dm>(Through(context, AllocDm(DeviceOf(context), *attr, dv_attr)));
}

int free_dm(ibv_dm* dm) { return AsErrno(FreeDm(dm ? Dm::From(dm) : nullptr)); }

ibv_pd* alloc_pd(ibv_context* context) {
  return VerbsOrErrno<ibv_pd>(Through(context, AllocPd(DeviceOf(context))));
}

int dealloc_pd(ibv_pd* pd) { return AsErrno(DeallocPd(pd ? Pd::From(pd) : nullptr)); }

ibv_mr* reg_dm_mr(ibv_pd* pd, ibv_dm* dm, uint64_t dm_offset, size_t length, unsigned int access) {
  return VerbsOrErrno<ibv_mr>(RegDmMr(pd ? Pd::From(pd) : nullptr, dm ? Dm::From(dm) : nullptr,
                                      dm_offset, length, access));
}

int dereg_mr(ibv_mr* mr) { return AsErrno(DeregMr(mr ? Mr::From(mr) : nullptr)); }

int rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
  const int e = AsErrno(ReregMr(mr ? Mr::From(mr) : nullptr, flags, pd ? Pd::From(pd) : nullptr,
                                addr, length, static_cast<unsigned>(access)));
  if (e != 0) errno = e;
  return e;
}

int dv_init_dm(ibv_dm* dm, mlx5dv_dm* out) {
  if (dm == nullptr || out == nullptr) return EINVAL;
  QueryDv(*Dm::From(dm), out);
  return 0;
}

ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  return VerbsOrErrno<ibv_mr>(RegMr(pd ? Pd::From(pd) : nullptr, addr, length, iova, access));
}

ibv_mr* reg_mr_ex(ibv_pd* pd, ibv_mr_init_attr* attr) {
  if (pd == nullptr || attr == nullptr) return Errno<ibv_mr>(EINVAL);
  constexpr uint64_t kKnown = IBV_REG_MR_MASK_IOVA | IBV_REG_MR_MASK_ADDR | IBV_REG_MR_MASK_FD |
                              IBV_REG_MR_MASK_FD_OFFSET | IBV_REG_MR_MASK_DMAH |
                              IBV_REG_MR_MASK_BUF;
  const uint64_t mask = attr->comp_mask;
  if (mask & ~kKnown) return Errno<ibv_mr>(EINVAL);
  const bool by_addr = mask & IBV_REG_MR_MASK_ADDR;
  const bool by_fd = mask & IBV_REG_MR_MASK_FD;
  // rdma-core's ibv_cmd_reg_mr_ex: ADDR and FD exclusive, FD_OFFSET only with FD.
  if (by_addr == by_fd && !(mask & IBV_REG_MR_MASK_BUF)) return Errno<ibv_mr>(EINVAL);
  if (by_addr && (mask & IBV_REG_MR_MASK_FD_OFFSET)) return Errno<ibv_mr>(EINVAL);
  if (by_fd || (mask & IBV_REG_MR_MASK_BUF)) return Errno<ibv_mr>(EOPNOTSUPP);  // no dma-buf
  if ((attr->access & IBV_ACCESS_ON_DEMAND) && (mask & IBV_REG_MR_MASK_DMAH))
    return Errno<ibv_mr>(EINVAL);
  const uint64_t iova =
      (mask & IBV_REG_MR_MASK_IOVA) ? attr->iova : reinterpret_cast<uintptr_t>(attr->addr);
  Dmah* dmah = (mask & IBV_REG_MR_MASK_DMAH) && attr->dmah ? Dmah::From(attr->dmah) : nullptr;
  if ((mask & IBV_REG_MR_MASK_DMAH) && dmah == nullptr) return Errno<ibv_mr>(EINVAL);
  return VerbsOrErrno<ibv_mr>(RegMr(Pd::From(pd), attr->addr, attr->length, iova,
                                    static_cast<unsigned>(attr->access), dmah));
}

ibv_td* alloc_td(ibv_context* context, ibv_td_init_attr* attr) {
  if (attr == nullptr) return Errno<ibv_td>(EINVAL);
  return VerbsOrErrno<ibv_td>(Through(context, AllocTd(DeviceOf(context), *attr)));
}

int dealloc_td(ibv_td* td) { return AsErrno(DeallocTd(td ? Td::From(td) : nullptr)); }

ibv_pd* alloc_parent_domain(ibv_context* context, ibv_parent_domain_init_attr* attr) {
  if (attr == nullptr) return Errno<ibv_pd>(EINVAL);
  auto device = DeviceOf(context);
  if (!device) return Errno<ibv_pd>(EINVAL);
  return VerbsOrErrno<ibv_pd>(AllocParentDomain(device, *attr));
}

ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type) {
  return VerbsOrErrno<ibv_mw>(AllocMw(pd ? Pd::From(pd) : nullptr, static_cast<int>(type)));
}

int dealloc_mw(ibv_mw* mw) { return AsErrno(DeallocMw(mw ? Mw::From(mw) : nullptr)); }

ibv_dmah* alloc_dmah(ibv_context* context, ibv_dmah_init_attr* attr) {
  if (attr == nullptr) return Errno<ibv_dmah>(EINVAL);
  return VerbsOrErrno<ibv_dmah>(Through(context, AllocDmah(DeviceOf(context), *attr)));
}

int dealloc_dmah(ibv_dmah* dmah) { return AsErrno(DeallocDmah(dmah ? Dmah::From(dmah) : nullptr)); }

}  // namespace onchip::driver::verbs
