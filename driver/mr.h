// Memory regions, shaped as rdma-core's struct verbs_mr (ibv_mr, then mr_type and access), so a
// libibverbs provider hands out the object itself.
//
// Two kinds, both one CREATE_MKEY:
//   - device memory (ibv_reg_dm_mr). Checks, in rdma-core's then the kernel's order: access
//     outside LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC, ZERO_BASED, OPTIONAL_RANGE
//     -> EINVAL; ZERO_BASED missing -> EINVAL; offset/length not inside the DM's requested
//     length -> EINVAL; REMOTE_ATOMIC on SW ICM -> EINVAL (mlx5_ib's per-type allowed set). A
//     zero-length MR is valid. Access mode MEMIC (start_addr = BAR0 offset of the buffer +
//     offset) or SW_ICM (ICM address + offset); addr NULL.
//   - host memory (ibv_reg_mr / ibv_reg_mr_ex). Checks, in the kernel's order (ib_check_mr_access,
//     then the MR verbs): an unknown access bit -> EINVAL; REMOTE_WRITE or REMOTE_ATOMIC without
//     LOCAL_WRITE -> EINVAL; ON_DEMAND -> EOPNOTSUPP (no ODP); length 0, a wrapping range, or an
//     iova whose offset inside its 4 KiB page differs from addr's -> EINVAL. The pages under
//     [addr, addr + length) are DMA-mapped through the bus once for the region (one IOVA range)
//     and described by an MTT of the largest pages the memory allows (mkc.log_page_size): 2 MiB
//     entries for a range of 2 MiB or more on hugetlb pages whose iova agrees with addr modulo
//     2 MiB, else 4 KiB; mkc.start_addr is the iova, so work requests address the MR by iova.
//     Every host MR has mkc.umr_en (mlx5_ib's reg_create): a UMR may change it in place, and a
//     window may bind on it (MW_BIND is accepted and, as on mlx5, not enforced by the device).
//     A DMA handle (dmah.h) sets the mkey's PCIe TPH fields and is pinned by the MR.
// lkey = rkey = mkey_index << 8 | variant. Dereg: DESTROY_MKEY, then the mapping goes.
//
// Re-registration (ibv_rereg_mr) of a host MR: IBV_REREG_MR_CHANGE_TRANSLATION (new addr and
// length, addressed by addr), CHANGE_PD, CHANGE_ACCESS, in any combination; what a flag leaves
// out stays as it was. PD and access alone change in place, as mlx5_ib does: one UMR on the MR's
// mkey through the device's registration queue (umr_queue.h), so lkey and rkey stay. A new
// translation, a ZERO_BASED switch (the start address moves) or no registration queue (an
// attached function) makes a new key over the new state, then destroys the old one: lkey and
// rkey change (the kernel's re-create path); ibv_mr.handle stays. Until the old key is destroyed
// any failure leaves the MR exactly as it was; a refused destroy of the old key (a window bound
// to it: EBUSY) destroys the new key and also leaves it as it was. Checks, in the kernel's order:
// no flag or an unknown one -> EINVAL; a device-memory MR -> EINVAL; with CHANGE_ACCESS the
// access rules of registration (EINVAL, ON_DEMAND EOPNOTSUPP); with CHANGE_PD a null PD or one of
// another device -> EINVAL; with CHANGE_TRANSLATION an empty or wrapping range -> EINVAL. A PD
// change moves the MR's pin to the new PD.
#pragma once

#include <infiniband/verbs.h>

#include <memory>

#include "driver/bus/bus.h"
#include "driver/dm.h"
#include "driver/pd.h"
#include "driver/registry.h"

namespace onchip::driver {

struct Dmah;

struct Mr {
  // struct verbs_mr: what libibverbs reads after ibv_mr.
  ibv_mr ibv;  // first: From() converts back
  int mr_type = 0;  // IBV_MR_TYPE_MR (rdma-core driver.h)
  int access = 0;

  std::shared_ptr<Device> device;
  Pd* pd = nullptr;
  Dm* dm = nullptr;           // device-memory MR
  Dmah* dmah = nullptr;       // host MR registered with a DMA handle
  bus::DmaMapping mapping;    // host MR: its pages as the device sees them
  uint64_t iova = 0;              // host MR: mkc.start_addr, what work requests address
  uint32_t log_page_size = 0;     // host MR: its MTT's page size
  uint32_t mkey_index = 0;
  Life life;  // nothing pins an MR (a bound window makes the device refuse its destroy)
  Mr* imported_from = nullptr;  // an imported MR (import.h): the MR whose keys this face carries
  // How DeregMr frees a face: set by import.cc (UnimportMr), so the MR names no kind above it.
  Result<void> (*free_face)(Mr* face) = nullptr;

  static Mr* From(ibv_mr* mr) { return reinterpret_cast<Mr*>(mr); }
};

Result<Mr*> RegDmMr(Pd* pd, Dm* dm, uint64_t offset, size_t length, unsigned int access);
// ibv_reg_mr_iova2 with an optional DMA handle.
Result<Mr*> RegMr(Pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access,
                  Dmah* dmah = nullptr);
// ibv_rereg_mr's device half (see the header comment). On success ibv.lkey, rkey, pd, context,
// addr, length and `access` describe the new registration.
Result<void> ReregMr(Mr* mr, int flags, Pd* pd, void* addr, size_t length, unsigned int access);
// DESTROY_MKEY, then the Mr is deleted. A firmware failure (e.g. a window still bound to it)
// leaves it registered.
Result<void> DeregMr(Mr* mr);
// DESTROY_MKEY, then its parents are unpinned and its pages unmapped; the handle stays. How
// Close() releases an MR.
Result<void> ReleaseMrOnDevice(Mr& mr, Release why);

// The registry's view of the kind (registry.h KindTraits).
template <>
struct KindTraits<ObjectKind::kMr> {
  using Object = Mr;
  static Result<void> ReleaseOnDevice(Mr& object, Release why);  // mr.cc
};

}  // namespace onchip::driver
