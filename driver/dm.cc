#include "driver/dm.h"

#include <cerrno>
#include <cstring>

#include "driver/copy_kernels.h"
#include "mmio/wc_copy.h"

namespace onchip::driver {
namespace {

// Every Dm answers copies through these; the type decides at allocation which pair it gets.
int RefuseToDm(ibv_dm*, uint64_t, const void*, size_t) { return EOPNOTSUPP; }
int RefuseFromDm(void*, ibv_dm*, uint64_t, size_t) { return EOPNOTSUPP; }

// mlx5_access_dm's checks: bounds against the requested length first, then 4-byte alignment.
int CheckAccess(const Dm& dm, uint64_t offset, size_t length) {
  if (offset > dm.length || length > dm.length - offset) return EFAULT;
  if ((length & 3) || (offset & 3)) return EINVAL;
  if (dm.life.released()) return EIO;
  return 0;
}

bool KnownType(int type) {
  return type == MLX5DV_DM_TYPE_MEMIC || type == MLX5DV_DM_TYPE_STEERING_SW_ICM ||
         type == MLX5DV_DM_TYPE_HEADER_MODIFY_SW_ICM ||
         type == MLX5DV_DM_TYPE_HEADER_MODIFY_PATTERN_SW_ICM || type == kDmTypeEncapSwIcm;
}

prm::SwIcmType IcmType(int type) {
  switch (type) {
    case MLX5DV_DM_TYPE_STEERING_SW_ICM: return prm::SW_ICM_TYPE_STEERING;
    case MLX5DV_DM_TYPE_HEADER_MODIFY_SW_ICM: return prm::SW_ICM_TYPE_HEADER_MODIFY;
    case MLX5DV_DM_TYPE_HEADER_MODIFY_PATTERN_SW_ICM: return prm::SW_ICM_TYPE_HEADER_MODIFY_PATTERN;
    default: return prm::SW_ICM_TYPE_SW_ENCAP;
  }
}

}  // namespace

static_assert(sizeof(mlx5dv_alloc_dm_attr::type) == sizeof(int));

int DmTypeOf(const mlx5dv_alloc_dm_attr& attr) {
  int type;
  std::memcpy(&type, &attr.type, sizeof type);
  return type;
}

void SetDmType(mlx5dv_alloc_dm_attr& attr, int type) {
  std::memcpy(&attr.type, &type, sizeof type);
}

int MemcpyToDm(ibv_dm* ibv, uint64_t dm_offset, const void* host_addr, size_t length) {
  Dm* dm = &Dm::From(ibv)->owner();
  if (int err = CheckAccess(*dm, dm_offset, length)) return err;
  if (length != 0) dm->to_device(dm->start_va + dm_offset, host_addr, length);
  return 0;
}

int MemcpyFromDm(void* host_addr, ibv_dm* ibv, uint64_t dm_offset, size_t length) {
  Dm* dm = &Dm::From(ibv)->owner();
  if (int err = CheckAccess(*dm, dm_offset, length)) return err;
  if (length != 0) mmio::CopyFromDevice(host_addr, dm->start_va + dm_offset, length);
  return 0;
}

Result<Dm*> AllocDm(const std::shared_ptr<Device>& device, const ibv_alloc_dm_attr& attr,
                    const mlx5dv_alloc_dm_attr* dv) {
  if (!device) return Fail(EINVAL, "alloc_dm: no device");
  const int type = dv ? DmTypeOf(*dv) : MLX5DV_DM_TYPE_MEMIC;
  if (!KnownType(type)) return Fail(EOPNOTSUPP, "alloc_dm: unknown DM type");
  if (attr.comp_mask != 0 || (dv && dv->comp_mask != 0))
    return Fail(EINVAL, "alloc_dm: unsupported comp_mask bits");
  if (type == MLX5DV_DM_TYPE_MEMIC && attr.length > device->max_dm_size())
    return Fail(EINVAL, "alloc_dm: length above max_dm_size");

  ONCHIP_TRY(auto op, device->registry().Begin("alloc_dm: device closed"));
  auto dm = std::make_unique<Dm>();
  dm->device = device;
  dm->type = type;
  dm->length = attr.length;
  dm->ibv.context = device->verbs();
  dm->ibv.comp_mask = IBV_DM_MASK_HANDLE;
  if (type == MLX5DV_DM_TYPE_MEMIC) {
    ONCHIP_TRY(dm->memic, device->memic().Alloc(device->commander(), attr.length, attr.log_align_req));
    auto window = device->bus().Bar0Window(dm->memic.bar_offset, dm->memic.size);
    if (!window) {
      (void)device->memic().Free(device->commander(), dm->memic);
      return std::unexpected(window.error());
    }
    dm->start_va = *window;
    dm->to_device = ChooseCopyKernels(device->bus()).dm->copy;
    dm->ibv.memcpy_to_dm = MemcpyToDm;
    dm->ibv.memcpy_from_dm = MemcpyFromDm;
  } else {
    ONCHIP_TRY(dm->icm, device->sw_icm().Alloc(device->commander(), IcmType(type), attr.length,
                                               attr.log_align_req));
    dm->remote_va = dm->icm.icm_address;
    dm->ibv.memcpy_to_dm = RefuseToDm;
    dm->ibv.memcpy_from_dm = RefuseFromDm;
  }
  dm->ibv.handle = device->NextDmHandle();
  device->registry().Publish<ObjectKind::kDm>(op, dm.get(), dm->life);
  return dm.release();
}

Result<void> ReleaseDmOnDevice(Dm& dm, Release) {
  return dm.type == MLX5DV_DM_TYPE_MEMIC
             ? dm.device->memic().Free(dm.device->commander(), dm.memic)
             : dm.device->sw_icm().Free(dm.device->commander(), dm.icm);
}

Result<void> FreeDm(Dm* dm) {
  if (dm == nullptr) return Fail(EINVAL, "free_dm: null");
  if (dm->free_face != nullptr) return dm->free_face(dm);  // this context's face only
  return Destroy<ObjectKind::kDm>(dm->device->registry(), dm, dm->life,
                                  "free_dm: memory regions still use it");
}

void QueryDv(const Dm& dm, mlx5dv_dm* out) {
  const uint64_t asked = out->comp_mask;
  out->buf = dm.start_va;
  out->length = dm.length;
  out->comp_mask = 0;
  if (asked & MLX5DV_DM_MASK_REMOTE_VA) {
    out->remote_va = dm.remote_va;
    out->comp_mask |= MLX5DV_DM_MASK_REMOTE_VA;
  }
}

Result<void> KindTraits<ObjectKind::kDm>::ReleaseOnDevice(Dm& object, Release why) {
  return ReleaseDmOnDevice(object, why);
}

}  // namespace onchip::driver
