#include "driver/verbs_dm.h"

#include <cerrno>

#include "driver/dm.h"
#include "driver/mr.h"
#include "driver/pd.h"

namespace onchip::driver::verbs {
namespace {

template <class T>
T* OrErrno(Result<T*> r) {
  if (r) return *r;
  errno = r.error().errno_value();
  return nullptr;
}

int AsErrno(const Result<void>& r) { return r ? 0 : r.error().errno_value(); }

std::shared_ptr<Device> DeviceOf(ibv_context* context) {
  Device* d = Device::FromVerbs(context);
  return d ? d->shared_from_this() : nullptr;
}

}  // namespace

ibv_dm* alloc_dm(ibv_context* context, ibv_alloc_dm_attr* attr) {
  return dv_alloc_dm(context, attr, nullptr);
}

ibv_dm* dv_alloc_dm(ibv_context* context, ibv_alloc_dm_attr* attr, mlx5dv_alloc_dm_attr* dv_attr) {
  if (attr == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  auto dm = AllocDm(DeviceOf(context), *attr, dv_attr);
  return dm ? &(*dm)->ibv : OrErrno<ibv_dm>(std::unexpected(dm.error()));
}

int free_dm(ibv_dm* dm) { return AsErrno(FreeDm(dm ? Dm::From(dm) : nullptr)); }

ibv_pd* alloc_pd(ibv_context* context) {
  auto pd = AllocPd(DeviceOf(context));
  return pd ? &(*pd)->ibv : OrErrno<ibv_pd>(std::unexpected(pd.error()));
}

int dealloc_pd(ibv_pd* pd) { return AsErrno(DeallocPd(pd ? Pd::From(pd) : nullptr)); }

ibv_mr* reg_dm_mr(ibv_pd* pd, ibv_dm* dm, uint64_t dm_offset, size_t length, unsigned int access) {
  auto mr = RegDmMr(pd ? Pd::From(pd) : nullptr, dm ? Dm::From(dm) : nullptr, dm_offset, length,
                    access);
  return mr ? &(*mr)->ibv : OrErrno<ibv_mr>(std::unexpected(mr.error()));
}

int dereg_mr(ibv_mr* mr) { return AsErrno(DeregMr(mr ? Mr::From(mr) : nullptr)); }

int dv_init_dm(ibv_dm* dm, mlx5dv_dm* out) {
  if (dm == nullptr || out == nullptr) return EINVAL;
  QueryDv(*Dm::From(dm), out);
  return 0;
}

}  // namespace onchip::driver::verbs
