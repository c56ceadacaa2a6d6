// Device memory, shaped as rdma-core's struct ibv_dm (with its memcpy_to_dm / memcpy_from_dm
// function pointers) plus the fields mlx5dv_dm reports, so a libibverbs provider can hand the
// very same object to applications.
//
// Types (mlx5dv_alloc_dm_type): MEMIC (the only type ibv_alloc_dm gives) is CPU-mapped through
// the BAR0 MEMIC window; the SW ICM types have no CPU mapping and report their ICM address as
// remote_va. Checks, in rdma-core's order (providers/mlx5/verbs.c _mlx5dv_alloc_dm, then the
// kernel): unknown type -> EOPNOTSUPP; any comp_mask bit -> EINVAL; MEMIC length > max_dm_size ->
// EINVAL; then the allocator's errors (memic.h, sw_icm.h).
//
// Copies (mlx5_access_dm): offset + length beyond the requested length -> EFAULT (an overflowing
// sum too, where rdma-core would wrap), then offset or length not a multiple of 4 -> EINVAL, then
// the copy: 64-byte write-combined stores ascending, flushed before return (mmio/wc_copy.h).
// On SW ICM the copy refuses with EOPNOTSUPP (rdma-core leaves the pointers NULL, so its callers
// crash; these pointers are never NULL).
#pragma once

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <memory>

#include "driver/device.h"
#include "driver/memic.h"
#include "driver/registry.h"
#include "driver/sw_icm.h"
#include "mmio/wc_copy.h"

namespace onchip::driver {

// MLX5DV_DM_TYPE_ENCAP_SW_ICM: newer than the rdma-core 44 headers this builds against, same value
// as the kernel's MLX5_IB_UAPI_DM_TYPE_ENCAP_SW_ICM.
inline constexpr int kDmTypeEncapSwIcm = 4;

// mlx5dv_alloc_dm_attr.type as the int a C caller stored. The rdma-core 44 enum names values 0-3
// only, so in C++ a 4 (ENCAP) or garbage is not a valid enum value: read and write the bytes.
int DmTypeOf(const mlx5dv_alloc_dm_attr& attr);
void SetDmType(mlx5dv_alloc_dm_attr& attr, int type);

struct Dm {
  ibv_dm ibv;  // first: From() converts back
  std::shared_ptr<Device> device;
  int type = MLX5DV_DM_TYPE_MEMIC;
  uint64_t length = 0;           // the requested length: bounds of copies and MRs
  std::byte* start_va = nullptr;  // MEMIC: the CPU address of byte 0
  // MEMIC: the copy kernel chosen for the window's memory (copy_kernels.h)
  mmio::CopyFn to_device = nullptr;
  uint64_t remote_va = 0;         // SW ICM: the ICM address
  MemicAllocator::Allocation memic;
  SwIcmAllocator::Allocation icm;
  Life life;  // pinned by its MRs; released: copies answer EIO
  // An imported DM (import.h): the DM whose bytes this face reaches (start_va, length and type
  // are copies of its); it owns no allocation.
  Dm* imported_from = nullptr;
  // How FreeDm frees a face: set by import.cc (UnimportDm), so the DM names no kind above it.
  Result<void> (*free_face)(Dm* face) = nullptr;

  static Dm* From(ibv_dm* dm) { return reinterpret_cast<Dm*>(dm); }
  // The DM that owns the memory: this one, or the one an imported face reaches.
  Dm& owner() { return imported_from ? *imported_from : *this; }
};

// mlx5dv_alloc_dm. `dv` may be null (ibv_alloc_dm: MEMIC).
Result<Dm*> AllocDm(const std::shared_ptr<Device>& device, const ibv_alloc_dm_attr& attr,
                    const mlx5dv_alloc_dm_attr* dv);
// EBUSY while an MR uses it (it stays usable); a firmware failure leaves it allocated and
// usable; on success the Dm is deleted.
Result<void> FreeDm(Dm* dm);
// DEALLOC_MEMIC / DESTROY_GENERAL_OBJECT only, the handle stays; how Close() releases a DM.
Result<void> ReleaseDmOnDevice(Dm& dm, Release why);

// mlx5dv_init_obj(MLX5DV_OBJ_DM): buf, length, and remote_va when asked for; comp_mask is
// overwritten with the bits filled.
void QueryDv(const Dm& dm, mlx5dv_dm* out);

// The verbs entry points stored in ibv_dm (return 0 or an errno, as rdma-core).
int MemcpyToDm(ibv_dm* dm, uint64_t dm_offset, const void* host_addr, size_t length);
int MemcpyFromDm(void* host_addr, ibv_dm* dm, uint64_t dm_offset, size_t length);

// The registry's view of the kind (registry.h KindTraits).
template <>
struct KindTraits<ObjectKind::kDm> {
  using Object = Dm;
  static Result<void> ReleaseOnDevice(Dm& object, Release why);  // dm.cc
};

}  // namespace onchip::driver
