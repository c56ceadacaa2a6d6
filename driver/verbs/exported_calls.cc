// The C functions libonchip-rdmav34.so exports under upstream names, for programs that link
// onchip (-lonchip-rdmav34) instead of libmlx5 or a newer libibverbs:
//   - ibv_alloc_dmah, ibv_dealloc_dmah, ibv_reg_mr_ex: libibverbs API newer than Debian's 44
//     (declared by uapi/verbs/dmah.h);
//   - mlx5dv_is_supported, mlx5dv_query_device, mlx5dv_alloc_dm, mlx5dv_init_obj (MLX5DV_OBJ_DM
//     only): libmlx5's, whose own versions refuse any device that is not libmlx5's.
// Each acts only on objects of a context onchip's provider opened (IsOnchipContext): a null
// object is EINVAL, another provider's is EOPNOTSUPP (what libmlx5 answers for a foreign device).
// In a forked child of the opening process the calls that command the device go through the
// child's own session on a device daemon's function, and are ENODEV for any other device and
// for the parent's objects (provider.cc, "the process a context serves").
// Errors follow calls.h: NULL with errno, or the errno returned.
//
// and, under libibverbs' own names and versions, ibv_create_comp_channel (IBVERBS_1.0) and
// ibv_import_device (IBVERBS_1.10): libibverbs 44 runs uverbs commands on cmd_fd for both (the
// import allocates its async fd with one), which no provider hook replaces, so the plugin
// interposes on them. `tools/onchip run` preloads the plugin (LD_PRELOAD), and a program that links
// -lonchip-rdmav34 ahead of -libverbs binds to it too. For a context that is not onchip's it
// calls libibverbs' definition (the next one in lookup order), so other providers see no change.
// (An fd that duplicates no onchip context's command fd is not onchip's.)
//
// exports.lds makes these the library's only dynamic symbols.
#include <dlfcn.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>

#include "uapi/verbs/abi34.h"
#include "driver/verbs/provider.h"
#include "driver/verbs/calls.h"
#include "uapi/verbs/dmah.h"

namespace {

using onchip::driver::verbs::IsOnchipContext;
using onchip::driver::verbs::OfThisProcess;
using onchip::driver::verbs::ServeThisProcess;

// 0 when `context` is onchip's, else the errno the exported call fails with.
int Refusal(const ibv_context* context) {
  if (context == nullptr) return EINVAL;
  return IsOnchipContext(context) ? 0 : EOPNOTSUPP;
}

// As Refusal, then whether this process may command the device (a forked child's own session).
int CommandRefusal(ibv_context* context) {
  if (int e = Refusal(context)) return e;
  return ServeThisProcess(context);
}

template <class T>
T* FailWith(int e) {
  errno = e;
  return nullptr;
}

}  // namespace

extern "C" {

ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  if (context != nullptr && IsOnchipContext(context)) {
    if (int e = CommandRefusal(context)) return FailWith<ibv_comp_channel>(e);
    return onchip::driver::verbs::create_comp_channel(context);
  }
  using Create = ibv_comp_channel* (*)(ibv_context*);
  static const auto next =
      reinterpret_cast<Create>(dlvsym(RTLD_NEXT, "ibv_create_comp_channel", "IBVERBS_1.0"));
  if (next == nullptr) return FailWith<ibv_comp_channel>(ENOSYS);
  return next(context);
}

ibv_context* ibv_import_device(int cmd_fd) {
  bool ours = false;
  if (ibv_context* imported = onchip::driver::verbs::ImportDevice(cmd_fd, &ours); ours)
    return imported;
  using Import = ibv_context* (*)(int);
  static const auto next =
      reinterpret_cast<Import>(dlvsym(RTLD_NEXT, "ibv_import_device", "IBVERBS_1.10"));
  if (next == nullptr) return FailWith<ibv_context>(ENOSYS);
  return next(cmd_fd);
}

ibv_dmah* ibv_alloc_dmah(ibv_context* context, ibv_dmah_init_attr* attr) {
  if (int e = CommandRefusal(context)) return FailWith<ibv_dmah>(e);
  return onchip::driver::verbs::alloc_dmah(context, attr);
}

int ibv_dealloc_dmah(ibv_dmah* dmah) {
  if (dmah == nullptr) return EINVAL;
  if (int e = Refusal(dmah->context)) return e;
  if (!OfThisProcess(dmah)) return ENODEV;  // the parent's: its command path is the parent's
  if (int e = CommandRefusal(dmah->context)) return e;
  return onchip::driver::verbs::dealloc_dmah(dmah);
}

// As libibverbs' ibv_reg_mr does, host memory is kept out of forked children for the MR's
// lifetime (ibv_dontfork_range): libibverbs' ibv_dereg_mr undoes it (ibv_dofork_range) for
// every plain MR without ON_DEMAND.
ibv_mr* ibv_reg_mr_ex(ibv_pd* pd, ibv_mr_init_attr* attr) {
  if (pd == nullptr || attr == nullptr) return FailWith<ibv_mr>(EINVAL);
  if (int e = Refusal(pd->context)) return FailWith<ibv_mr>(e);
  if (!OfThisProcess(pd)) return FailWith<ibv_mr>(ENODEV);
  if (int e = CommandRefusal(pd->context)) return FailWith<ibv_mr>(e);
  const bool host_pages = (attr->comp_mask & IBV_REG_MR_MASK_ADDR) &&
                          !(attr->access & IBV_ACCESS_ON_DEMAND);
  if (host_pages && ibv_dontfork_range(attr->addr, attr->length) != 0) return nullptr;
  ibv_mr* mr = onchip::driver::verbs::reg_mr_ex(pd, attr);
  if (mr == nullptr && host_pages) {
    const int e = errno;
    ibv_dofork_range(attr->addr, attr->length);
    errno = e;
  }
  return mr;
}

// rdma-core providers/mlx5/mlx5.c mlx5dv_is_supported: whether the mlx5dv_* calls serve the
// device. Here: those exported by this library serve onchip's devices only.
bool mlx5dv_is_supported(ibv_device* device) {
  return onchip::driver::verbs::IsOnchipDevice(device);
}

int mlx5dv_query_device(ibv_context* ctx_in, mlx5dv_context* attrs_out) {
  if (int e = Refusal(ctx_in)) return e;
  return onchip::driver::verbs::DvQueryDevice(ctx_in, attrs_out);
}

ibv_dm* mlx5dv_alloc_dm(ibv_context* context, ibv_alloc_dm_attr* dm_attr,
                        mlx5dv_alloc_dm_attr* mlx5_dm_attr) {
  if (int e = CommandRefusal(context)) return FailWith<ibv_dm>(e);
  return onchip::driver::verbs::dv_alloc_dm(context, dm_attr, mlx5_dm_attr);
}

// Only MLX5DV_OBJ_DM: onchip has no QP, CQ, SRQ, RWQ, AH or PD internals to expose yet.
int mlx5dv_init_obj(mlx5dv_obj* obj, uint64_t obj_type) {
  if (obj_type & ~uint64_t{MLX5DV_OBJ_DM}) return EOPNOTSUPP;
  if (obj_type == 0) return 0;
  if (obj == nullptr || obj->dm.in == nullptr || obj->dm.out == nullptr) return EINVAL;
  if (int e = Refusal(obj->dm.in->context)) return e;
  return onchip::driver::verbs::dv_init_dm(obj->dm.in, obj->dm.out);
}

}  // extern "C"
